// A running view's keyed fragment follows the cluster's membership (--remote-shares on): real oxbow
// nodes on a real etcd at --parallelism 2 (--cores 8, so the view runs in parallel on any machine).
// A GROUP BY view is built and fed while the leader is alone: its owners are the 2 threads.
//
// - a node joins: at the next safe point the fragment cuts its owners again (2 threads and that
//   node, which owns the vnodes v with v mod 3 = 2): the node's share_rows grow for the running
//   view, and its share_seed_rows equals a recomputation over the table: the groups (distinct k)
//   whose vnode (parallel/vnode.ts over k) is 2 mod 3; the seed crosses in frames of 2 KiB (as a
//   seed over the 512 MiB frame bound does in frames of 64 MiB);
// - rounds of inserts, updates and deletes: the view equals the batch SELECT of its query, so each
//   group the node owns went on from its seeded state and each group the threads kept from theirs;
// - the node is drained (SIGTERM) while writes go on: the fragment cuts its owners again, back to
//   the 2 threads, the leader logs that the node handed its vnodes back and no share failed over,
//   and the view still equals its recomputation.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vnodeOf } from '../../executor/stream/parallel/vnode.js';
import { type as scalar } from '../../sql/types.js';
import { clusterNodes } from './nodes.js';
import { groupsOf, nodes, until, type Group } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-rescale-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  // The seeds cross in many frames (remote-share-link.ts' openFrames), as one over 512 MiB would.
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '2048',
});

/** Groups of k: 401 (every one present from the first insert on, until the rounds delete some). */
const GROUPS = 401;

async function explain(leader: pg.Client): Promise<string> {
  return (await leader.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
}

/** Waits until the view counted every row of the table, then checks it equals the recomputation. */
async function expectEqual(leader: pg.Client, stderr: () => string): Promise<void> {
  const compare = async () => {
    const rows = (
      await leader.query<Group & { src: string }>(
        `select 'v' as src, k, n, s from kv union all select 'b' as src, k, count(*) as n, sum(v) as s from t group by k`,
      )
    ).rows;
    return { view: groupsOf(rows, 'v'), batch: groupsOf(rows, 'b') };
  };
  const settled = await until(
    'the view never equalled its recomputation',
    async () => {
      const { view, batch } = await compare();
      return JSON.stringify(view) === JSON.stringify(batch) ? { view, batch } : undefined;
    },
    60_000,
    stderr,
  );
  expect(settled.view).toEqual(settled.batch);
  expect(settled.view.length).toBeGreaterThan(0);
}

describe('keyed shares of a running view', () => {
  it('a node that joins takes its vnodes with their state, and hands them back when drained', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await leader.query('create table t (id int8 primary key, k int, v int8)');
    await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    await leader.query(`insert into t select g, g % ${GROUPS}, g from generate_series(1, 6000) g`);
    expect(await explain(leader)).toMatch(/StreamExchange dist by \(k\) to 2 workers, /);

    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const bId = await until(
      'node b never listed its share address on the leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.share_address !== null)?.node_id,
      30_000,
      stderr,
    );
    const shareOf = async () =>
      (await leader.query<{ share_rows: string | null; share_seed_rows: string | null }>('select share_rows, share_seed_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0];
    // Writes that keep the set of groups (every k is present already): the seed's groups are known
    // whichever epoch the owners are cut at.
    let next = 6000;
    await until(
      'node b processed no rows of the running view',
      async () => {
        await leader.query(`insert into t select g, g % ${GROUPS}, g * 3 % 1000 from generate_series(${next + 1}, ${next + 200}) g`);
        next += 200;
        return Number((await shareOf())?.share_rows ?? 0) > 0 ? true : undefined;
      },
      60_000,
      stderr,
    );
    expect(await explain(leader)).toMatch(/to 2 workers and 1 other node, vnodes cut again 1 time/);
    expect(a.stderr()).toMatch(new RegExp(`node ${bId} took vnodes`));

    // The recomputation: the groups whose vnode is the node's (owner 2 of 3).
    const int4 = scalar('int4');
    const keys = (await leader.query<{ k: number }>('select distinct k from t')).rows.map((row) => Number(row.k));
    expect(keys.length).toBe(GROUPS);
    const owned = keys.filter((k) => vnodeOf([k], [int4]) % 3 === 2).length;
    expect(owned).toBeGreaterThan(0);
    expect(owned).toBeLessThan(GROUPS);
    const seeded = (await leader.query<{ share_seed_rows: string; share_seed_bytes: string }>('select share_seed_rows, share_seed_bytes from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]!;
    expect(Number(seeded.share_seed_rows)).toBe(owned);
    // More than one frame's worth.
    expect(Number(seeded.share_seed_bytes)).toBeGreaterThan(2048);
    await expectEqual(leader, stderr);

    for (let step = 0; step < 4; step++) {
      await leader.query(`insert into t select g, g % ${GROUPS}, g * 7 % 1000 from generate_series(${next + 1}, ${next + 1500}) g`);
      next += 1500;
      await leader.query(`update t set k = (k + 3) % ${GROUPS}, v = v + 2 where id % 17 = ${step}`);
      await leader.query(`delete from t where id % 31 = ${step} or k % 97 = ${step}`);
      await expectEqual(leader, stderr);
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
      await until('the fragment kept a share on the drained node', async () => (/to 2 workers, vnodes cut again 2 times/.test(await explain(leader)) ? true : undefined), 30_000, stderr);
      const atDrain = writes;
      await until('no writes after the drain', async () => (writes > atDrain + 5 ? true : undefined), 30_000, stderr);
    } finally {
      writing = false;
      await writer;
    }
    await expectEqual(leader, stderr);
    expect(a.stderr()).toMatch(new RegExp(`node ${bId} handed its vnodes back`));
    expect(a.stderr()).not.toMatch(/the keyed share on node .* failed/);
    expect(a.stderr()).not.toMatch(/failed over before/);
    await leader.end();
  }, 240_000);
});
