// A keyed fragment's share on another node fed by a stream (--remote-shares on): two real oxbow
// nodes on a real etcd at --parallelism 2, a datagen source read on the leader's main thread and
// grouped in a keyed fragment whose third owner of vnodes is the standby. Epochs come every 100 ms
// with up to three in flight, so when the standby is SIGKILLed some of its epochs' batches are
// handed over and not yet written: the leader's replay of them must read the database as of the
// epoch before them (MvccStateStore.startAt) or it would count their rows twice.
//
// The model: datagen's ids in any committed epoch are exactly 1..M (test/cluster/remote-shares.test.ts
// checks it row by row), so the groups together count M rows whose ids sum to M(M+1)/2, before
// and after the kill.

import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { GEN, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-stream-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

describe('remote shares of keyed fragments over a stream', () => {
  it('a datagen stream grouped with a share on a node SIGKILLed while epochs are in flight: every id counted once', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const c = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${c.stderr()}`;
    const standby = await until(
      'the new standby never listed its share address on the leader',
      async () => (await leader.query<{ node_id: string; role: string; share_address: string | null; address: string }>('select node_id, role, share_address, address from oxbow_catalog.nodes')).rows.find(
        (row) => row.role === 'standby' && row.share_address !== null && row.address === `${c.host}:${c.port}`,
      ),
      30_000,
      stderr,
    );
    // Epochs every 100 ms, up to three in flight: the node dies with batches of some handed over
    // and not yet written, which the leader's replay must not count twice.
    await leader.query(GEN('gen'));
    await leader.query('create materialized view gv as select k, count(*) as n, sum(id) as s, max(id) as m from (select id, v % 53 as k from gen) as g group by k');
    /** The model: datagen's ids at any epoch are exactly 1..M, so the groups count M rows summing to M(M+1)/2. */
    const check = async (): Promise<bigint> => {
      const row = (await leader.query<{ n: string | null; s: string | null; m: string | null }>('select sum(n) as n, sum(s) as s, max(m) as m from gv')).rows[0]!;
      const [n, sum, max] = [BigInt(row.n ?? 0), BigInt(row.s ?? 0), BigInt(row.m ?? 0)];
      expect({ n, sum }).toEqual({ n: max, sum: (max * (max + 1n)) / 2n });
      return n;
    };
    const shareRows = async () =>
      Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [standby.node_id])).rows[0]?.share_rows ?? 0);
    await until('the node processed no rows of the stream', async () => ((await shareRows()) >= 2000 ? true : undefined), 60_000, stderr);
    expect(await check()).toBeGreaterThan(0n);
    await c.kill('SIGKILL');
    await until(
      'the leader never took the share over',
      async () => (new RegExp(`the keyed share on node ${standby.node_id} \\(127\\.0\\.0\\.1:\\d+\\) failed: `).test(a.stderr()) ? true : undefined),
      30_000,
      stderr,
    );
    const killedAt = await check();
    await until('the view did not grow after the node was killed', async () => ((await check()) > killedAt + 8000n ? true : undefined), 60_000, stderr);
    await check();
    await leader.end();
  }, 240_000);
});
