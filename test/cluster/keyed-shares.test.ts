// A keyed fragment's share on another node (--remote-shares on): two real oxbow nodes on a real etcd
// at --parallelism 2. The leader's GROUP BY aggregate over a table runs as a fragment of three
// owners of vnodes: its two worker threads and the standby, whose worker keeps the state of its
// vnodes in a store of its own and hands each epoch's writes back to the leader.
//
// - EXPLAIN ANALYZE shows the exchange to 2 workers and 1 other node; the standby's share_rows in
//   the leader's oxbow_catalog.nodes grow: the other process aggregated rows;
// - after each round of inserts the view equals the same query run as a batch SELECT over the table
//   in the same statement (one snapshot): nothing lost, nothing doubled;
// - the standby SIGKILLed while rows keep coming: the leader runs its share from the epochs the
//   node had not made durable on, and the view still equals its recomputation, round after round;
// - once its lease expired the fragment cuts its owners again: the threads take its vnodes, never
//   theirs before, and run on (kept, nothing started), and the view equals its recomputation after
//   each later round (the threads' caches, which held every group of theirs, miss none of b's).

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { groupsOf, until, type Group } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-shares-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

/** The view's rows and the batch recomputation's, read in one statement (one snapshot). */
async function compare(leader: pg.Client): Promise<{ view: Group[]; batch: Group[] }> {
  const rows = (
    await leader.query<Group & { src: string }>(
      `select 'v' as src, k, n, s from kv union all select 'b' as src, k, count(*) as n, sum(v) as s from t group by k`,
    )
  ).rows;
  const pick = (src: string) => groupsOf(rows, src);
  return { view: pick('v'), batch: pick('b') };
}

/** Waits until the view caught up with the table (a barrier every 100 ms), then checks it equals the recomputation. */
async function expectEqual(leader: pg.Client, rows: number, stderr: () => string): Promise<void> {
  const settled = await until(
    `the view never counted ${rows} rows`,
    async () => {
      const { view, batch } = await compare(leader);
      const counted = view.reduce((sum, group) => sum + Number(group.n), 0);
      return counted === rows ? { view, batch } : undefined;
    },
    60_000,
    stderr,
  );
  expect(settled.batch.reduce((sum, group) => sum + Number(group.n), 0)).toBe(rows);
  expect(settled.view).toEqual(settled.batch);
}

describe('remote shares of keyed fragments', () => {
  it("a standby aggregates its vnodes of the leader's GROUP BY; SIGKILLed mid-run, the leader takes its share: nothing lost or doubled", async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const standby = await until(
      'the standby never listed its share address on the leader',
      async () => (await leader.query<{ node_id: string; role: string; share_address: string | null }>('select node_id, role, share_address from oxbow_catalog.nodes')).rows.find(
        (row) => row.role === 'standby' && row.share_address !== null,
      ),
      30_000,
      stderr,
    );
    const rowsOf = async () =>
      Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [standby.node_id])).rows[0]?.share_rows ?? 0);

    await leader.query('create table t (id int8 primary key, k int, v int8)');
    // Rows before the view: its backfill runs through the fragment too.
    await leader.query('insert into t select g, g % 61, g * 7 % 1000 from generate_series(1, 2000) g');
    await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    const analyzed = (await leader.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    expect(analyzed).toMatch(/StreamExchange dist by \(k\) to 2 workers and 1 other node/);

    let inserted = 2000;
    const round = async (size: number, update: boolean): Promise<void> => {
      await leader.query(`insert into t select g, g % 61, g * 7 % 1000 from generate_series(${inserted + 1}, ${inserted + size}) g`);
      inserted += size;
      // Updates and deletes move rows between groups and retract them.
      if (update) {
        await leader.query(`update t set k = (k + 5) % 61, v = v + 1 where id % 13 = ${inserted % 13}`);
        await leader.query(`delete from t where id % 29 = ${inserted % 29}`);
      }
    };
    const count = async () => Number((await leader.query<{ n: string }>('select count(*) as n from t')).rows[0]!.n);

    for (let step = 0; step < 5; step++) await round(1500, step % 2 === 1);
    await expectEqual(leader, await count(), stderr);
    await until('the standby processed no rows', async () => ((await rowsOf()) > 0 ? true : undefined), 30_000, stderr);
    const before = await rowsOf();
    expect(before).toBeGreaterThan(0);

    // Rows keep coming while the node dies: some epochs are in flight on it.
    const writes = (async () => {
      for (let step = 0; step < 8; step++) await round(1000, step % 3 === 0);
    })();
    await new Promise((resolve) => setTimeout(resolve, 150));
    await b.kill('SIGKILL');
    await writes;
    await until(
      'the leader never took the share over',
      async () => (new RegExp(`the keyed share on node ${standby.node_id} \\(127\\.0\\.0\\.1:\\d+\\) failed: .*; its share runs on this node from now on`).test(a.stderr()) ? true : undefined),
      30_000,
      stderr,
    );
    await expectEqual(leader, await count(), stderr);
    // Once b's lease is gone the fragment cuts its owners again: b's vnodes (v mod 3 = 2 since the
    // build) go to the threads, which never held them, so both run on, their caches (every group
    // of theirs, loaded whole) no longer taken as holding every group.
    await until(
      'the fragment never cut its owners again without node b',
      async () => (/to 2 workers, vnodes cut again 1 time \(2 owners kept, 2 of them taking vnodes, 0 started\)/.test((await leader.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n')) ? true : undefined),
      30_000,
      stderr,
    );
    expect(a.stderr()).toMatch(/kept 2 owners running \(2 threads, 0 nodes' shares; 2 of them took vnodes\), started 0/);
    for (let step = 0; step < 3; step++) {
      await round(1000, true);
      await expectEqual(leader, await count(), stderr);
    }
    await leader.end();
  }, 240_000);
});
