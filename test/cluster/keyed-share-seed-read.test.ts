// A node joins a running view while writes go on, and its share's seed is read in steps
// (executor/cluster/README.md, "Keyed shares": OXBOW_KEYED_SEED_SLICE_ENTRIES=1, one entry per
// step, so the read spans epochs): real oxbow nodes on a real etcd at --parallelism 2.
//
// - A GROUP BY view and a join view (t join u on k, grouped by k) hold state for thousands of keys;
//   inserts, updates and deletes over every key (the node's vnodes' among them) go on while node b
//   joins: the leader's log of the cuts says a read kept the writes of at least one epoch
//   (entries > 0) and added them after the seed;
// - after the cut more updates and deletes touch every group: a group whose state the node missed
//   (a change during the read not carried over) gives a wrong count or sum, so each view must equal
//   the batch SELECT of its query over the same tables, and the node processed rows (share_rows).

import { describe, expect, it } from 'vitest';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, explain, keyedViews, nodes, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-seed-read-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  // The leader reads and sends the seeds (the path a node that makes no store from a checkpoint takes).
  OXBOW_KEYED_SEED_FROM: 'read',
  OXBOW_KEYED_SEED_SLICE_ENTRIES: '1',
});

const GROUPS = 2003;

describe('a keyed share seeded while the view runs', () => {
  it('carries the writes of the epochs its seed read spanned over to the node', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await keyedViews(leader, { groups: GROUPS, t: 20000, u: 3000 });
    await expectKeyedViewsEqual(leader, () => a.stderr());

    // Writes over every key, all along the join: updates, deletes and inserts.
    let next = 20000;
    let nextU = 3000;
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        const step = writes++;
        await leader.query(`update t set v = v + 1 where id % 13 = ${step % 13}`);
        await leader.query(`delete from t where id % 97 = ${step % 97}`);
        await leader.query(`insert into t select g, g % ${GROUPS}, g * 3 % 1000 from generate_series(${next + 1}, ${next + 50}) g`);
        next += 50;
        await leader.query(`update u set w = w + 2, k = (k + 1) % ${GROUPS} where id % 17 = ${step % 17}`);
        await leader.query(`delete from u where id % 89 = ${step % 89}`);
        await leader.query(`insert into u select g, g % ${GROUPS}, g from generate_series(${nextU + 1}, ${nextU + 10}) g`);
        nextU += 10;
      }
    })();
    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    try {
      await shareAddressListed(leader, b, stderr);
      for (const view of ['kv', 'ju']) {
        await until(`${view} never took a share on node b`, async () => (/to 2 workers and 1 other node, vnodes cut again 1 time/.test(await explain(leader, view)) ? true : undefined), 60_000, stderr);
      }
      const atCut = writes;
      await until('no writes after the cut', async () => (writes > atCut + 3 ? true : undefined), 30_000, stderr);
    } finally {
      writing = false;
      await writer;
    }

    // Each fragment's cut: the read ran over epochs whose writes were added after the seed.
    // The seed as of the read's start went to the node ahead of the cut; the cut sent the kept writes after it.
    const cuts = [...a.stderr().matchAll(/took vnodes \(seeds read in \d+ ms while the owners ran, (\d+) of 1 seed sent ahead, then (\d+) epochs?' writes added \((\d+) entries\)/g)];
    // (The join's state, a row per input row of each side, takes thousands of steps: its read spans
    // epochs on any machine; the GROUP BY's, one row per group, may end within one.)
    expect(cuts.length).toBe(2);
    expect(cuts.map((cut) => cut[1])).toEqual(['1', '1']);
    expect(cuts.some((cut) => Number(cut[2]) > 0 && Number(cut[3]) > 0)).toBe(true);

    // After the cut: changes to every group, then each view equals its recomputation.
    await leader.query('update t set v = v + 5');
    await leader.query(`delete from t where id % 7 = 3`);
    await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 2000}) g`);
    await leader.query('update u set w = w + 1');
    await leader.query(`delete from u where id % 5 = 2`);
    await expectKeyedViewsEqual(leader, stderr);
    const bId = (await nodes(leader)).find((row) => row.role === 'standby')!.node_id;
    const shareRows = (await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]?.share_rows;
    expect(Number(shareRows ?? 0)).toBeGreaterThan(0);
    expect(a.stderr()).not.toMatch(/the keyed share on node .* failed/);
    expect(a.stderr()).not.toMatch(/could not be seeded/);
    await leader.end();
  }, 240_000);
});
