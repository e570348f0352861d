// A running view's keyed fragment follows the cluster's membership (--remote-shares on): real oxbow
// nodes on a real etcd at --parallelism 2 (--cores 8, so the view runs in parallel on any machine).
// A GROUP BY view and a join view (t join u on k, grouped by k: one fragment) are built and fed
// while the leader is alone: their owners are the 2 threads.
//
// - a node joins while no writes come: at the leader's next poll of etcd each fragment, idle, cuts
//   its owners again (2 threads and that node); oxbow_catalog.vnodes lists 256 vnodes per fragment,
//   each owned, 86/85/85 per owner, and only the 85 the node took changed owner (the threads keep
//   theirs: the map rebalanced, not vnode mod 3); the node's vnodes in oxbow_catalog.nodes are its
//   rows there, and the leader's etcd record of each map (read with etcd3) is the relation's; the
//   node's share_seed_rows equals a recomputation over the tables: the groups of kv (distinct k)
//   whose vnode (parallel/vnode.ts over k) the relation gives the node, and for ju the rows of t
//   and of u and the groups whose k has such a vnode (each join side keeps a row per input row); the seed crosses
//   in frames of 2 KiB (as a seed over the 512 MiB frame bound does in frames of 64 MiB); after
//   writes the node's share_rows grow for the running views; the threads only lost vnodes: the cut
//   kept them running (their workers in oxbow_catalog.dataflow_workers the same, no batch since);
// - rounds of inserts, updates and deletes: each view equals the batch SELECT of its query, so
//   each group the node owns went on from its seeded state and each group the threads kept from theirs;
// - a third node joins: the threads and node b's share only lose vnodes and are kept (b's
//   share_seed_rows and share_ready_ms unchanged: its share was not opened again), node c alone
//   starts, seeded with its 64 vnodes' rows only; the views equal their recomputation after writes;
// - node b is drained (SIGTERM) while writes go on: the survivors take its vnodes, the map giving
//   each to an owner that never held it (a thread takes those the other thread gave b), so every
//   survivor runs on (node c's share gets their seed written into its store: its share_seed_rows
//   grow, its share_ready_ms stays), as the test works out from the maps it read at each step; the leader logs that b handed its vnodes back and no share failed over, only b's
//   64 vnodes changed owner (86/85/85), the etcd record follows, and the view still equals its
//   recomputation; a dropped view's etcd record goes.

import { Etcd3 } from 'etcd3';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vnodeOf } from '../../executor/stream/parallel/vnode.js';
import { type as scalar } from '../../sql/types.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, explain, keyedViews, until } from './remote-share-views.js';
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

interface VnodeRow {
  view_name: string;
  view_id: number;
  fragment: number;
  vnode: number;
  node_id: string | null;
  thread: number | null;
}

/** Each keyed view's owner of each vnode ("node" or "node/thread"), as oxbow_catalog.vnodes lists it. */
async function vnodeOwners(leader: pg.Client): Promise<Map<string, string[]>> {
  const rows = (await leader.query<VnodeRow>('select view_name, view_id, fragment, vnode, node_id, thread from oxbow_catalog.vnodes order by view_id, fragment, vnode')).rows;
  const maps = new Map<string, string[]>();
  for (const row of rows) {
    expect(row.fragment).toBe(0);
    let map = maps.get(row.view_name);
    if (map === undefined) maps.set(row.view_name, (map = []));
    expect(row.vnode).toBe(map.length);
    expect(row.node_id).not.toBeNull();
    map.push(row.thread === null ? row.node_id! : `${row.node_id!}/${row.thread}`);
  }
  return maps;
}

/** The leader's etcd records of the maps, in the same words, by view id. */
async function recordedOwners(etcd: Etcd3): Promise<Map<number, string[]>> {
  const records = await etcd.getAll().prefix('/oxbow/fragments/').strings();
  const out = new Map<number, string[]>();
  for (const [key, text] of Object.entries(records)) {
    const match = /^\/oxbow\/fragments\/(\d+)\/0$/.exec(key);
    expect(match, key).not.toBeNull();
    const record = JSON.parse(text) as { vnodes: number[]; owners: { node: string; thread: number | null }[] };
    expect(record.vnodes.length).toBe(256);
    out.set(Number(match![1]), record.vnodes.map((index) => {
      const owner = record.owners[index]!;
      return owner.thread === null ? owner.node : `${owner.node}/${owner.thread}`;
    }));
  }
  return out;
}

function counts(map: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const owner of map) out.set(owner, (out.get(owner) ?? 0) + 1);
  return out;
}

function changed(before: readonly string[], after: readonly string[]): number {
  return before.filter((owner, vnode) => owner !== after[vnode]).length;
}

/** Groups of k in t: 401 (every one present from the first insert on, until the rounds delete some). */
const GROUPS = 401;

describe('keyed shares of a running view', () => {
  it('a node that joins takes its vnodes with their state, and hands them back when drained', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await keyedViews(leader);
    // v unique per row (the updates keep it so): each join side's state has a row per input row.
    await leader.query(`insert into t select g, g % ${GROUPS}, g from generate_series(1, 6000) g`);
    await leader.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await leader.query('delete from u where id % 7 = 1');
    expect(await explain(leader)).toMatch(/StreamExchange dist by \(k\) to 2 workers, /);
    expect(await explain(leader, 'ju')).toMatch(/to 2 workers, /);
    await expectKeyedViewsEqual(leader, () => a.stderr());
    const etcd = new Etcd3({ hosts: [cluster.etcdEndpoint] });
    const viewIds = new Map((await leader.query<{ name: string; id: number }>("select name, id from oxbow_catalog.objects where name in ('kv', 'ju')")).rows.map((row) => [row.name, Number(row.id)]));
    const expectRecorded = async (maps: Map<string, string[]>, stderr: () => string) =>
      await until(
        'the etcd records of the vnode maps differ from oxbow_catalog.vnodes',
        async () => {
          const recorded = await recordedOwners(etcd);
          return [...maps].every(([view, map]) => JSON.stringify(recorded.get(viewIds.get(view)!)) === JSON.stringify(map)) && recorded.size === maps.size ? true : undefined;
        },
        10_000,
        stderr,
      );
    const alone = await vnodeOwners(leader);
    expect([...alone.keys()].sort()).toEqual(['ju', 'kv']);
    for (const map of alone.values()) expect([...counts(map).values()]).toEqual([128, 128]);
    await expectRecorded(alone, () => a.stderr());

    // The threads' workers as they run: a cut that keeps them leaves them (their caches) as they are.
    const threadWorkers = async () =>
      (await leader.query<{ view_name: string; worker: number; thread_id: number; batches: string }>("select view_name, worker, thread_id, batches from oxbow_catalog.dataflow_workers where view_name in ('kv', 'ju') and kind = 'fragment' and worker < 2 order by view_name, worker")).rows.map(
        (row) => `${row.view_name}/${row.worker}: thread ${row.thread_id}, ${row.batches} batches`,
      );
    const threadsAlone = await threadWorkers();
    expect(threadsAlone.length).toBe(4);
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
    // Both threads only lost vnodes: kept running (no batch since: no writes came), the node's share started.
    expect(await explain(leader)).toMatch(/vnodes cut again 1 time \(2 owners kept, 1 started\)/);
    expect(a.stderr()).toMatch(/kept 2 owners running \(2 threads, 0 nodes' shares\), started 1/);
    expect(await threadWorkers()).toEqual(threadsAlone);

    // The maps: balanced, the node took 85 vnodes and nothing else moved.
    const joined = await vnodeOwners(leader);
    for (const [view, map] of joined) {
      expect(map.length).toBe(256);
      const perOwner = counts(map);
      expect([...perOwner.values()].sort()).toEqual([85, 85, 86]);
      expect(perOwner.get(bId)).toBe(85);
      expect(changed(alone.get(view)!, map)).toBe(85);
    }
    const nodeVnodes = async (id: string) => (await leader.query<{ vnodes: number | null }>('select vnodes from oxbow_catalog.nodes where node_id = $1', [id])).rows[0]?.vnodes ?? null;
    expect(await nodeVnodes(bId)).toBe(170);
    await expectRecorded(joined, stderr);

    // The recomputation: the rows whose vnode the map gives the node.
    const int4 = scalar('int4');
    const ownedBy = (view: string) => (k: number) => joined.get(view)![vnodeOf([k], [int4])] === bId;
    const mineKv = ownedBy('kv');
    const mineJu = ownedBy('ju');
    const column = async (sql: string) => (await leader.query<{ k: number }>(sql)).rows.map((row) => Number(row.k));
    const groups = await column('select distinct k from t');
    expect(groups.length).toBe(GROUPS);
    const all = [groups, await column('select k from t'), await column('select k from u'), await column('select distinct t.k from t join u on t.k = u.k')];
    const owned = all.reduce((sum, keys, index) => sum + keys.filter(index === 0 ? mineKv : mineJu).length, 0);
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

    // A third node joins: every owner running (the threads and node b's share) only loses vnodes
    // and is kept; node c alone starts, seeded with its vnodes only.
    const nodeShare = async (id: string) =>
      (await leader.query<{ share_seed_rows: string | null; share_ready_ms: string | null; vnodes: number | null }>('select share_seed_rows, share_ready_ms, vnodes from oxbow_catalog.nodes where node_id = $1', [id])).rows[0];
    const bBefore = await nodeShare(bId);
    expect(Number(bBefore?.share_ready_ms ?? -1)).toBeGreaterThanOrEqual(0);
    const threadsBefore = await threadWorkers();
    const c = await cluster.startNode('c');
    const stderr3 = () => `${stderr()}\n--- c ---\n${c.stderr()}`;
    const cId = await shareAddressListed(leader, c, stderr3);
    for (const view of ['kv', 'ju']) {
      await until(`${view} never took a share on node c`, async () => (/to 2 workers and 2 other nodes, vnodes cut again 2 times \(5 owners kept, 2 started\)/.test(await explain(leader, view)) ? true : undefined), 30_000, stderr3);
    }
    expect(a.stderr()).toMatch(/kept 3 owners running \(2 threads, 1 node's share\), started 1/);
    expect(await threadWorkers()).toEqual(threadsBefore);
    // Node b's share was not opened again: the seed and readiness of its one share are the same.
    const bAfter = await nodeShare(bId);
    expect([bAfter?.share_seed_rows, bAfter?.share_ready_ms]).toEqual([bBefore?.share_seed_rows, bBefore?.share_ready_ms]);
    const three = await vnodeOwners(leader);
    for (const [view, map] of three) {
      const perOwner = counts(map);
      expect([...perOwner.values()]).toEqual([64, 64, 64, 64]);
      expect(changed(joined.get(view)!, map)).toBe(64);
    }
    expect(bAfter?.vnodes).toBe(128);
    expect((await nodeShare(cId))?.vnodes).toBe(128);
    await expectRecorded(three, stderr3);
    // Node c's seed: the rows of its vnodes only.
    const ownedByC = (view: string) => (k: number) => three.get(view)![vnodeOf([k], [int4])] === cId;
    // A join side keeps a row per distinct (k, value) it projects (the rounds made values repeat).
    const now = [await column('select distinct k from t'), await column('select k from (select distinct k, v from t) s'), await column('select k from (select distinct k, w from u) s'), await column('select distinct t.k from t join u on t.k = u.k')];
    const ownedC = now.reduce((sum, keys, index) => sum + keys.filter(ownedByC(index === 0 ? 'kv' : 'ju')).length, 0);
    expect(Number((await nodeShare(cId))?.share_seed_rows)).toBe(ownedC);
    for (let step = 0; step < 2; step++) {
      await leader.query(`insert into t select g, g % ${GROUPS}, g * 5 % 1000 from generate_series(${next + 1}, ${next + 800}) g`);
      next += 800;
      await leader.query(`update t set k = (k + 5) % ${GROUPS} where id % 13 = ${step}`);
      await leader.query(`delete from u where id % 19 = ${step}`);
      await expectKeyedViewsEqual(leader, stderr3);
    }

    // Drained while writes go on: its vnodes go to the survivors at a safe point.
    const cBefore = await nodeShare(cId);
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
        await until(`${view} kept a share on the drained node`, async () => (/to 2 workers and 1 other node, vnodes cut again 3 times/.test(await explain(leader, view)) ? true : undefined), 30_000, stderr3);
      }
      const atDrain = writes;
      await until('no writes after the drain', async () => (writes > atDrain + 5 ? true : undefined), 30_000, stderr3);
    } finally {
      writing = false;
      await writer;
    }
    await expectKeyedViewsEqual(leader, stderr3);
    expect(a.stderr()).toMatch(new RegExp(`node ${bId} handed its vnodes back`));
    expect(a.stderr()).not.toMatch(/the keyed share on node .* failed/);
    expect(a.stderr()).not.toMatch(/failed over before/);
    // The drained node's vnodes went to the survivors, nothing else moved.
    const drained = await vnodeOwners(leader);
    for (const [view, map] of drained) {
      expect([...counts(map).values()].sort()).toEqual([85, 85, 86]);
      expect(changed(three.get(view)!, map)).toBe(64);
    }
    // Each survivor that takes only vnodes it never held runs on (a thread, kept through both joins,
    // held its vnodes of every map so far; node c's share those of the map it started with); one
    // that gets back a vnode it held starts again.
    let cKeptEverywhere = true;
    let cGained = false;
    for (const [view, map] of drained) {
      const before = three.get(view)!;
      let kept = 0;
      let keptThreads = 0;
      let gaining = 0;
      for (const owner of new Set(map)) {
        const held = new Set<number>();
        const history = owner === cId ? [before] : [alone.get(view)!, joined.get(view)!, before];
        for (const earlier of history) earlier.forEach((holder, vnode) => holder === owner && held.add(vnode));
        const gains = map.flatMap((holder, vnode) => (holder === owner && before[vnode] !== owner ? [vnode] : []));
        const keeps = !gains.some((vnode) => held.has(vnode));
        if (owner === cId) {
          cKeptEverywhere &&= keeps;
          cGained ||= keeps && gains.length > 0;
        }
        if (!keeps) continue;
        kept++;
        if (owner !== cId) keptThreads++;
        if (gains.length > 0) gaining++;
      }
      // The map gives b's vnodes to owners that never held them (a thread takes those the other
      // thread gave b, node c any): every survivor runs on.
      expect(kept).toBe(3);
      const started = 3 - kept;
      const keptNodes = kept - keptThreads;
      const line = `kept ${kept} owner${kept === 1 ? '' : 's'} running \\(${keptThreads} thread${keptThreads === 1 ? '' : 's'}, ${keptNodes === 1 ? "1 node's share" : `${keptNodes} nodes' shares`}${gaining > 0 ? `; ${gaining} of them took vnodes` : ''}\\), started ${started}`;
      expect(a.stderr()).toMatch(new RegExp(`view ${viewIds.get(view)}'s keyed fragment cut its vnodes again for 2 threads and 1 other node, 64 vnodes changing owner; ${line}`));
      expect(await explain(leader, view)).toMatch(new RegExp(`vnodes cut again 3 times \\(${5 + kept} owners kept${gaining > 0 ? `, ${gaining} of them taking vnodes` : ''}, ${2 + started} started\\)`));
    }
    // Node c never held any of b's vnodes and takes some (the map keeps owners within one vnode of
    // each other): its share ran on, with the seed of the vnodes it took added to its store.
    expect(cKeptEverywhere).toBe(true);
    expect(cGained).toBe(true);
    const cAfter = await nodeShare(cId);
    expect(cAfter?.share_ready_ms).toBe(cBefore?.share_ready_ms);
    expect(Number(cAfter?.share_seed_rows)).toBeGreaterThan(Number(cBefore?.share_seed_rows));
    expect(c.stderr()).toMatch(/a keyed share took vnodes it never held \([1-9][0-9]* bytes of their seed written to its store\)/);
    await expectRecorded(drained, stderr3);
    // A dropped view's record goes.
    await leader.query('drop materialized view ju');
    drained.delete('ju');
    await expectRecorded(drained, stderr3);
    etcd.close();
    await leader.end();
  }, 240_000);
});
