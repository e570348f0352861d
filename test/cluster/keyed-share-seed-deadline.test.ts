// A keyed share's seed sent whole at `open` that takes the node longer to write than the relay's
// answer deadline (executor/cluster/README.md, "Keyed shares"): three real oxbow nodes on a real
// etcd at --parallelism 2, the deadline at 3 s (OXBOW_REMOTE_SHARE_TIMEOUT_MS), the seed in 4 KiB
// frames (OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES) and each piece written 300 ms late
// (OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS), so a seed of more than ten pieces takes the node
// longer than the deadline to write.
//
// - a GROUP BY and a join grouped by its key, built with shares on both standbys, hold state; the
//   leader stops cleanly and the new leader builds the fragments again with one share on the other
//   standby, each seeded whole at `open` (OXBOW_KEYED_SEED_FROM=read: a fragment's build sends no
//   seed ahead);
// - the node says how many pieces it wrote: more than the deadline's worth for at least one share
//   (the premise, from its own count, not from a clock);
// - the node keeps its shares: no share failed over on the new leader, its share_rows grow over
//   rounds of inserts, updates and deletes, and each view equals the batch SELECT of its query.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, newLeader, nodes, threeNodesWithShares, until } from './remote-share-views.js';

const TIMEOUT_MS = 3000;
const DELAY_MS = 300;

const cluster = clusterNodes('oxbow-keyed-share-seed-deadline-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
  // The new leader reads the seeds at the build and sends each whole at `open` (from the nodes'
  // checkpoints, the default, no seed crosses at all).
  OXBOW_KEYED_SEED_FROM: 'read',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: String(TIMEOUT_MS),
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '4096',
  OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: String(DELAY_MS),
});

const failed = /the keyed share on node .* failed/;

const shareRows = async (leader: pg.Client, node: string): Promise<number> =>
  Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [node])).rows[0]?.share_rows ?? 0);

describe("a keyed share's seed sent whole at open", () => {
  it('may take the node longer to write than the answer deadline: the node keeps its share', async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first);
    await first.query('insert into t select g, g % 401, g from generate_series(1, 6000) g');
    await first.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await first.query('delete from t where k % 50 = 7');
    await expectKeyedViewsEqual(first, stderr);
    await first.end();

    // A clean stop: the new leader builds the fragments from its recovered state, seeding the
    // other standby's shares whole at `open`.
    const earlier = [...b.stderr().matchAll(/a keyed share's seed is written/g)].length;
    expect([...c.stderr().matchAll(/a keyed share's seed is written/g)].length).toBe(earlier);
    await a.stop();
    const { node, client: leader } = await newLeader([b, c], stderr);
    const other = node === b ? c : b;
    // Rows at once: the fragments' first epochs ask the node for answers while it writes its seeds.
    await leader.query('insert into t select g, g % 401, g from generate_series(6001, 7500) g');
    await leader.query('update u set w = w + 1 where id % 3 = 0');
    const otherId = await until(
      'the other standby is not listed on the new leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.address === `${other.host}:${other.port}`)?.node_id,
      30_000,
      stderr,
    );
    // The standby's lines of the shares it took before (the views' creation, empty seeds) and now.
    const written = () => [...other.stderr().matchAll(/a keyed share's seed is written \((\d+) pieces?, (\d+) bytes\); its worker starts/g)].map((match) => Number(match[1]));
    const seeds = await until(
      'the other standby never wrote the seeds of both shares',
      async () => (written().length >= earlier + 2 ? written().slice(earlier) : failed.test(node.stderr()) ? [] : undefined),
      60_000,
      stderr,
    );
    expect(node.stderr()).not.toMatch(failed);
    // At least one seed took more pieces than fit in the deadline, each written DELAY_MS late.
    expect(Math.max(...seeds) * DELAY_MS, stderr()).toBeGreaterThan(2 * TIMEOUT_MS);

    await expectKeyedViewsEqual(leader, stderr);
    const before = await shareRows(leader, otherId);
    let next = 7500;
    for (let step = 0; step < 3; step++) {
      await leader.query(`insert into t select g, g % 401, g * 7 % 1000 from generate_series(${next + 1}, ${next + 1500}) g`);
      next += 1500;
      await leader.query(`update t set k = (k + 3) % 401, v = v + 2 where id % 17 = ${step}`);
      await leader.query(`delete from t where id % 31 = ${step}`);
      await leader.query(`update u set w = w + 1 where id % 5 = ${step}`);
      await expectKeyedViewsEqual(leader, stderr);
    }
    expect(await shareRows(leader, otherId)).toBeGreaterThan(before);
    expect(node.stderr()).not.toMatch(failed);
    await leader.end();
  }, 240_000);
});
