// A running view's keyed fragment follows the cluster's membership (--remote-shares on): real oxbow
// nodes on a real etcd at --parallelism 2 (--cores 8, so the view runs in parallel on any machine).
// A GROUP BY view and a join view (t join u on k, grouped by k: one fragment) are built and fed
// while the leader is alone: their owners are the 2 threads.
//
// - a node joins while no writes come: at the leader's next poll of etcd each fragment, idle, cuts
//   its owners again (2 threads and that node, which owns the vnodes v with v mod 3 = 2); the
//   node's share_seed_rows equals a recomputation over the tables: the groups of kv (distinct k)
//   whose vnode (parallel/vnode.ts over k) is 2 mod 3, and for ju the rows of t and of u and the
//   groups whose k has such a vnode (each join side keeps a row per input row); the seed crosses
//   in frames of 2 KiB (as a seed over the 512 MiB frame bound does in frames of 64 MiB); after
//   writes the node's share_rows grow for the running views;
// - rounds of inserts, updates and deletes: each view equals the batch SELECT of its query, so
//   each group the node owns went on from its seeded state and each group the threads kept from theirs;
// - the node is drained (SIGTERM) while writes go on: the fragment cuts its owners again, back to
//   the 2 threads, the leader logs that the node handed its vnodes back and no share failed over,
//   and the view still equals its recomputation.

import { describe, expect, it } from 'vitest';
import { vnodeOf } from '../../executor/stream/parallel/vnode.js';
import { type as scalar } from '../../sql/types.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, explain, JOIN_BATCH, nodes, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-rescale-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  // The leader reads and sends the seeds (the path a node that makes no store from a checkpoint takes).
  OXBOW_KEYED_SEED_FROM: 'read',
  // The seeds cross in many frames (remote-share-link.ts' openFrames), as one over 512 MiB would.
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '2048',
});

/** Groups of k in t: 401 (every one present from the first insert on, until the rounds delete some). */
const GROUPS = 401;

describe('keyed shares of a running view', () => {
  it('a node that joins takes its vnodes with their state, and hands them back when drained', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await leader.query('create table t (id int8 primary key, k int, v int8)');
    await leader.query('create table u (id int8 primary key, k int, w int8)');
    await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    await leader.query(`create materialized view ju as ${JOIN_BATCH}`);
    // v unique per row (the updates keep it so): each join side's state has a row per input row.
    await leader.query(`insert into t select g, g % ${GROUPS}, g from generate_series(1, 6000) g`);
    await leader.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await leader.query('delete from u where id % 7 = 1');
    expect(await explain(leader)).toMatch(/StreamExchange dist by \(k\) to 2 workers, /);
    expect(await explain(leader, 'ju')).toMatch(/to 2 workers, /);
    await expectKeyedViewsEqual(leader, () => a.stderr());

    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const bId = await shareAddressListed(leader, b, stderr);
    const shareOf = async () =>
      (await leader.query<{ share_rows: string | null; share_seed_rows: string | null }>('select share_rows, share_seed_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0];
    // No writes: the idle fragments cut their owners at the leader's poll of etcd.
    for (const view of ['kv', 'ju']) {
      await until(`${view} never took a share on node b`, async () => (/to 2 workers and 1 other node, vnodes cut again 1 time/.test(await explain(leader, view)) ? true : undefined), 30_000, stderr);
    }
    expect(a.stderr()).toMatch(new RegExp(`node ${bId} took vnodes`));

    // The recomputation: the rows whose vnode is the node's (owner 2 of 3).
    const int4 = scalar('int4');
    const mine = (k: number) => vnodeOf([k], [int4]) % 3 === 2;
    const column = async (sql: string) => (await leader.query<{ k: number }>(sql)).rows.map((row) => Number(row.k));
    const groups = await column('select distinct k from t');
    expect(groups.length).toBe(GROUPS);
    const all = [groups, await column('select k from t'), await column('select k from u'), await column('select distinct t.k from t join u on t.k = u.k')];
    const owned = all.reduce((sum, keys) => sum + keys.filter(mine).length, 0);
    const total = all.reduce((sum, keys) => sum + keys.length, 0);
    expect(owned).toBeGreaterThan(0);
    expect(owned).toBeLessThan(total);
    const seeded = (await leader.query<{ share_seed_rows: string; share_seed_bytes: string }>('select share_seed_rows, share_seed_bytes from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]!;
    expect(Number(seeded.share_seed_rows)).toBe(owned);
    // More than one frame's worth.
    expect(Number(seeded.share_seed_bytes)).toBeGreaterThan(2048);
    expect(Number((await shareOf())?.share_rows ?? 0)).toBe(0);
    let next = 6000;
    await leader.query(`insert into t select g, g % ${GROUPS}, g * 3 % 1000 + g * 1000 from generate_series(${next + 1}, ${next + 600}) g`);
    next += 600;
    await leader.query('insert into u select g, g % 211, g from generate_series(901, 1000) g');
    await until('node b processed no rows of the running views', async () => (Number((await shareOf())?.share_rows ?? 0) > 0 ? true : undefined), 30_000, stderr);
    await expectKeyedViewsEqual(leader, stderr);

    for (let step = 0; step < 4; step++) {
      await leader.query(`insert into t select g, g % ${GROUPS}, g * 7 % 1000 from generate_series(${next + 1}, ${next + 1500}) g`);
      next += 1500;
      await leader.query(`update t set k = (k + 3) % ${GROUPS}, v = v + 2 where id % 17 = ${step}`);
      await leader.query(`delete from t where id % 31 = ${step} or k % 97 = ${step}`);
      await leader.query(`insert into u select g, g % 211, g from generate_series(${2000 + step * 100}, ${2099 + step * 100}) g`);
      await leader.query(`update u set k = (k + 1) % 211 where id % 11 = ${step}`);
      await expectKeyedViewsEqual(leader, stderr);
    }
    const rowsBefore = Number((await shareOf())!.share_rows);
    expect(rowsBefore).toBeGreaterThan(0);

    // Drained while writes go on: its vnodes go back to the threads at a safe point.
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 100}) g`);
        next += 100;
        await leader.query(`update t set v = v + 1 where id % 29 = ${writes % 29}`);
        writes++;
      }
    })();
    try {
      await b.kill('SIGTERM');
      expect(b.process.exitCode).toBe(0);
      for (const view of ['kv', 'ju']) {
        await until(`${view} kept a share on the drained node`, async () => (/to 2 workers, vnodes cut again 2 times/.test(await explain(leader, view)) ? true : undefined), 30_000, stderr);
      }
      const atDrain = writes;
      await until('no writes after the drain', async () => (writes > atDrain + 5 ? true : undefined), 30_000, stderr);
    } finally {
      writing = false;
      await writer;
    }
    await expectKeyedViewsEqual(leader, stderr);
    expect(a.stderr()).toMatch(new RegExp(`node ${bId} handed its vnodes back`));
    expect(a.stderr()).not.toMatch(/the keyed share on node .* failed/);
    expect(a.stderr()).not.toMatch(/failed over before/);
    await leader.end();
  }, 240_000);
});
