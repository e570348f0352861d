// Remote shares follow the cluster's membership (--remote-shares on): real oxbow nodes on a real
// etcd at --parallelism 2, the view built while the leader is alone.
//
// - a node that joins takes a share of the running view between two chunks: its share_units grow
//   and the fragment's unit count goes on from where it was (the view was not rebuilt);
// - that node drained (SIGTERM): its record goes, the leader gives it no more ranges and closes
//   its share once every commit it was sent is answered: no share fails, no epoch fails;
// - the node started again (another share port): it takes a share again;
// - throughout, the view holds every number of the datagen sequence once, and its rows equal those
//   of a second source of the same definition aggregated on the leader's main thread.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { checkView, GEN, nodes, until, viewMax } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-share-membership-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  // A view over the source runs as a source fragment (its shares on other nodes) at 2 workers on any machine.
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
});

/** The fragment's units and the other nodes it runs shares on, from EXPLAIN ANALYZE. */
async function fragment(leader: pg.Client): Promise<{ units: number; others: number }> {
  const text = (await leader.query({ text: 'explain analyze v', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
  const match = /StreamSourceFragment gen split across 2 workers(?: and (\d+) other nodes?)?: (\d+) units/.exec(text);
  expect(match, text).not.toBeNull();
  return { units: Number(match![2]), others: Number(match![1] ?? 0) };
}

describe('remote shares follow the membership', () => {
  it('a node that joins takes a share of a running view, hands it back when drained, and takes one again when it returns', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await leader.query(GEN('gen'));
    await leader.query(GEN('gen_check'));
    await leader.query('create materialized view v as select id, v, id * 3 + 1 as w from gen');
    await leader.query('create materialized view v_check as select id, v, count(*) as n from gen_check group by id, v');
    // Read before b starts: b's record, with its share address, is in etcd before its ready line,
    // and the leader may give it a share before a read after startNode.
    const alone = await until('the fragment generated no units on the leader alone', async () => {
      const read = await fragment(leader);
      return read.units >= 2000 ? read : undefined;
    }, 30_000, () => `--- a ---\n${a.stderr()}`);
    expect(alone.others).toBe(0);
    let b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;

    const bId = await shareAddressListed(leader, b, stderr);
    const unitsOf = async () => Number((await nodes(leader)).find((row) => row.node_id === bId)?.share_units ?? 0);
    await until('node b generated no units', async () => ((await unitsOf()) >= 1500 ? true : undefined), 60_000, stderr);
    const joined = await fragment(leader);
    expect(joined.others).toBe(1);
    // The same fragment: its units went on from where they were.
    expect(joined.units).toBeGreaterThan(alone.units);
    const withB = await checkView(leader);

    // Drained: the leader's share of b closes once answered; nothing fails.
    await b.kill('SIGTERM');
    expect(b.process.exitCode).toBe(0);
    const drained = await until(
      'the leader kept a share on the drained node',
      async () => ((await fragment(leader)).others === 0 ? await unitsOf() : undefined),
      30_000,
      stderr,
    );
    const afterDrain = await checkView(leader);
    expect(afterDrain.max).toBeGreaterThanOrEqual(withB.max);
    await until('the view did not grow after the drain', async () => ((await viewMax(leader)) > afterDrain.max + 4000 ? true : undefined), 60_000, stderr);
    expect(await unitsOf()).toBe(drained);

    // Back: another run of the node (a new share port) takes a share again.
    b = await cluster.startNode('b');
    await until('node b took no share again', async () => ((await unitsOf()) >= drained + 1500 ? true : undefined), 60_000, stderr);
    await until('the fragment does not list node b again', async () => ((await fragment(leader)).others === 1 ? true : undefined), 30_000, stderr);
    const end = await checkView(leader);
    expect(end.count).toBe(end.max);
    expect(end.max).toBeGreaterThan(afterDrain.max + 4000);

    // No share was given up; an epoch whose write failed would have stopped the store's commits,
    // and the view grew after the drain and after the return.
    expect(a.stderr()).not.toMatch(/the remote share on node .* failed/);
    await leader.end();
  }, 240_000);
});
