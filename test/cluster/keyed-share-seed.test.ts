// A keyed share's seed holds its vnodes' rows only (--remote-shares on): three real oxbow nodes on a
// real etcd at --parallelism 2. A GROUP BY over a table is built while both standbys are listed,
// rows go through it, and the leader is stopped cleanly (its last checkpoint holds every group).
// The standby that takes over rebuilds the fragment with recovered state and one share, on the
// other standby: owners are its 2 threads and that node, which owns the vnodes v with v mod 3 = 2.
//
// - share_seed_rows of that node on the new leader equals a recomputation over the tables: the
//   groups of kv (distinct k) whose vnode (parallel/vnode.ts over k) is 2 mod 3, and for the join
//   view ju (t join u on k, grouped by k, one fragment) the rows of t and of u and the groups whose
//   k has such a vnode (each join side keeps a row per input row); fewer than all of them;
// - rounds of inserts, updates and deletes after the promotion: each view equals the batch SELECT
//   of its query in one snapshot, so every group the node owns went on from its seeded state (a
//   group seeded to no one or to the wrong owner would count from zero);
// - share_ready_ms is set once the node answered its first batch.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vnodeOf } from '../../executor/stream/parallel/vnode.js';
import { type as scalar } from '../../sql/types.js';
import { clusterNodes } from './nodes.js';
import { groupsOf, JOIN_BATCH, keyedViews, newLeader, nodes, threeNodesWithShares, type Group, until } from './remote-share-views.js';

const cluster = clusterNodes('oxbow-keyed-share-seed-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  // The new leader reads and sends the seed at the fragment's build (a promoted leader's nodes otherwise make their stores from their checkpoints: keyed-share-promoted-checkpoint.test.ts).
  OXBOW_KEYED_SEED_FROM: 'read',
});

async function compare(leader: pg.Client): Promise<{ view: Group[]; batch: Group[] }> {
  const rows = (
    await leader.query<Group & { src: string }>(
      `select 'v' as src, k, n, s from kv union all select 'b' as src, k, count(*) as n, sum(v) as s from t group by k
       union all select 'jv' as src, k + 100000, n, s from ju union all select 'jb' as src, k + 100000, n, s from (${JOIN_BATCH}) as b`,
    )
  ).rows;
  const pick = (src: string) => groupsOf(rows, src);
  return { view: [...pick('v'), ...pick('jv')], batch: [...pick('b'), ...pick('jb')] };
}

/** Waits until the view counted every row of the table, then checks it equals the recomputation. */
async function expectEqual(leader: pg.Client, stderr: () => string): Promise<void> {
  const rows = Number((await leader.query<{ n: string }>('select count(*) as n from t')).rows[0]!.n);
  const settled = await until(
    `the view never counted ${rows} rows`,
    async () => {
      const { view, batch } = await compare(leader);
      const counted = view.filter((group) => group.k < 100000).reduce((sum, group) => sum + Number(group.n), 0);
      return counted === rows && JSON.stringify(view) === JSON.stringify(batch) ? { view, batch } : undefined;
    },
    60_000,
    stderr,
  );
  expect(settled.view).toEqual(settled.batch);
}

describe('the seed of a keyed share', () => {
  it("holds only the rows of the node's vnodes, and the node's groups go on from it", async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first);
    expect((await first.query({ text: 'explain analyze ju', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n')).toMatch(/to 2 workers and 2 other nodes/);
    const analyzed = (await first.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    expect(analyzed).toMatch(/StreamExchange dist by \(k\) to 2 workers and 2 other nodes/);
    // v unique per row (the update below keeps it so): each join side's state has a row per input row.
    await first.query('insert into t select g, g % 401, g from generate_series(1, 6000) g');
    await first.query('update t set k = (k + 5) % 401, v = v + 1 where id % 13 = 3');
    // Some groups emptied: their state rows end in tombstones.
    await first.query('delete from t where k % 50 = 7');
    await first.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await first.query('delete from u where id % 7 = 1');
    await expectEqual(first, stderr);
    await first.end();

    // A clean stop: the last checkpoint holds every group; the lease goes at once.
    await a.stop();
    const { node, client: leader } = await newLeader([b, c], stderr);
    const other = node === b ? c : b;
    const otherId = await until(
      'the other standby is not listed on the new leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.address === `${other.host}:${other.port}`)?.node_id,
      30_000,
      stderr,
    );
    const seed = async () =>
      (await leader.query<{ share_seed_rows: string | null; share_seed_bytes: string | null; share_ready_ms: string | null }>(
        'select share_seed_rows, share_seed_bytes, share_ready_ms from oxbow_catalog.nodes where node_id = $1',
        [otherId],
      )).rows[0];
    const seeded = await until('the other standby got no keyed share', async () => ((await seed())?.share_seed_rows ?? null) !== null ? (await seed())! : undefined, 30_000, stderr);

    // The recomputation: groups of the table whose vnode is the node's (owner 2 of 3).
    const int4 = scalar('int4');
    const mine = (k: number) => vnodeOf([k], [int4]) % 3 === 2;
    const column = async (sql: string) => (await leader.query<{ k: number }>(sql)).rows.map((row) => Number(row.k));
    const groups = await column('select distinct k from t');
    const all = [groups, await column('select k from t'), await column('select k from u'), await column('select distinct t.k from t join u on t.k = u.k')];
    const owned = all.reduce((sum, keys) => sum + keys.filter(mine).length, 0);
    const total = all.reduce((sum, keys) => sum + keys.length, 0);
    expect(owned).toBeGreaterThan(0);
    expect(owned).toBeLessThan(total);
    expect(Number(seeded.share_seed_rows)).toBe(owned);
    expect(Number(seeded.share_seed_bytes)).toBeGreaterThan(0);
    expect(new RegExp(`StreamExchange dist by \\(k\\) to 2 workers and 1 other node`).test((await leader.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n'))).toBe(true);

    // The node's groups go on from its seed.
    await expectEqual(leader, stderr);
    let next = 6000;
    for (let step = 0; step < 4; step++) {
      await leader.query(`insert into t select g, g % 401, g * 7 % 1000 from generate_series(${next + 1}, ${next + 1500}) g`);
      next += 1500;
      await leader.query(`update t set k = (k + 3) % 401, v = v + 2 where id % 17 = ${step}`);
      await leader.query(`delete from t where id % 31 = ${step}`);
      await leader.query(`insert into u select g, g % 211, g from generate_series(${1000 + step * 100}, ${1099 + step * 100}) g`);
      await leader.query(`update u set k = (k + 1) % 211 where id % 11 = ${step}`);
      await expectEqual(leader, stderr);
    }
    const shareRows = Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [otherId])).rows[0]?.share_rows ?? 0);
    expect(shareRows).toBeGreaterThan(0);
    expect(Number((await seed())!.share_ready_ms)).toBeGreaterThan(0);
    expect(node.stderr()).not.toMatch(/the keyed share on node .* failed/);
    await leader.end();
  }, 240_000);
});
