// A joining node's keyed share made from the checkpoint the node follows (executor/cluster/README.md,
// "Keyed shares"): real oxbow nodes on a real etcd at --parallelism 2, checkpoints to a folder.
//
// - A GROUP BY view and a join view hold state for thousands of keys; inserts, updates and deletes
//   over every key go on while node b (a warm standby) joins. The leader reads no seed: it asks for a
//   checkpoint taken after the fragment's safe point, b makes each share's store from the checkpoint
//   it follows (hard links) and the cut routes only the writes of the epochs after that checkpoint
//   (the cut is held 1.5 s after b's stores are made, so such epochs are there). A checkpoint taken
//   with a gap before the kept epochs, or the kept writes after it dropped, leaves b's vnodes with
//   wrong counts or sums: each view must equal the batch SELECT of its query, and b processed rows.
//   b's stores hold the fragment's state tables only, and of them b's vnodes only (copied out of
//   the checkpoint as SST files of their key ranges).
// - Node c, a cold standby (OXBOW_CLUSTER_COLD_STANDBY=1: it follows no checkpoint), joins while the
//   writes go on: it refuses the store from a checkpoint, so the leader copies c's vnodes out of its
//   own database at the read's start into SST files and sends them (no seed read entry by entry),
//   c ingests them into a fresh store, while b, which only loses vnodes, keeps its share running (no
//   store, no seed); the views equal their recomputation.
// - c is drained (SIGTERM) while the writes go on: the threads and b take its vnodes (the map gives
//   each to an owner that never held it) and all run on; ahead of the cut b makes a store from its
//   checkpoint and copies the vnodes it takes out of it into SST files (the leader reads nothing),
//   and at the cut ingests them into its running share's store, then writes the writes after that
//   checkpoint; the views equal their recomputation.

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, explain, keyedViews, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';

/** One sample of a Prometheus text (a metric name with its labels, as printed), or undefined. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

const cluster = clusterNodes('oxbow-keyed-share-checkpoint-seed-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_KEYED_SEED_CUT_HOLD_MS: '1500',
});

const GROUPS = 2003;

const cutsOf = (log: string, node: string): string[] => [...log.matchAll(new RegExp(`cut its vnodes again[^\\n]*node ${node} took vnodes[^\\n]*`, 'g'))].map((match) => match[0]);

describe("a keyed share made from the node's followed checkpoint", () => {
  it("takes the vnodes with their state from the checkpoint and the writes after it; a cold standby gets its store as SST files of the leader's", async () => {
    const a = await cluster.startNode('a', { OXBOW_METRICS_PORT: '0' });
    const leader = await connectWhenServing(a);
    await keyedViews(leader, { groups: GROUPS, t: 20000, u: 3000 });
    await expectKeyedViewsEqual(leader, () => a.stderr());

    let next = 20000;
    let nextU = 3000;
    let writes = 0;
    const startWriter = (): { stop: () => Promise<void> } => {
      let writing = true;
      const done = (async () => {
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
      return {
        stop: async () => {
          writing = false;
          await done;
        },
      };
    };

    // b, a warm standby, joins while the writes go on.
    let writer = startWriter();
    const b = await cluster.startNode('b', { OXBOW_METRICS_PORT: '0' });
    let c: Awaited<ReturnType<typeof cluster.startNode>> | undefined;
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}${c === undefined ? '' : `\n--- c ---\n${c.stderr()}`}`;
    let bId: string;
    try {
      bId = await shareAddressListed(leader, b, stderr);
      await until('the views never took shares on node b', async () => (cutsOf(a.stderr(), bId).length >= 2 ? true : undefined), 90_000, stderr);
    } finally {
      await writer.stop();
    }
    const bCuts = cutsOf(a.stderr(), bId);
    expect(bCuts.length, stderr()).toBe(2);
    for (const cut of bCuts) {
      // No seed read: b's store came from its checkpoint F, and only the writes of the epochs after F crossed.
      const made = /no seed read, stores made from checkpoints in \d+ ms while the owners ran, 1 of 1 seed sent ahead \(node (\S+)'s from its checkpoint (\d+)\), then (\d+) epochs?' writes added \((\d+) entries\)/.exec(cut);
      expect(made, cut).not.toBeNull();
      expect(made![1]).toBe(bId);
      expect(Number(made![3])).toBeGreaterThan(0);
      expect(Number(made![4]), cut).toBeGreaterThan(0);
      expect(cut).toContain(`seeds: node ${bId} from its checkpoint ${made![2]}, `);
    }
    expect(b.stderr()).toMatch(/a keyed share's store is made from checkpoint \d+/);
    // b's stores hold the fragments' state tables only, and of them b's vnodes only: a view made by
    // this build keys its state by vnode, so b's node copies those key ranges (and the store's
    // records) out of its checkpoint into SST files and ingests them into a fresh store; nothing
    // of the other vnodes or tables is in it.
    const copied = [...b.stderr().matchAll(/a keyed share's store is made from checkpoint \d+ \([^)]*, (\d+) state tables? copied; the (\d+) vnodes? it owns copied into ([1-9]\d*) SST files? \(([1-9]\d*) entries, ([1-9]\d*) bytes\) in \d+ ms, the others left out\)/g)].map((line) => ({ tables: Number(line[1]), vnodes: Number(line[2]), entries: Number(line[4]), bytes: Number(line[5]) }));
    expect(copied.length, stderr()).toBe(2);
    for (const line of copied) expect(line.tables).toBeGreaterThan(0);
    expect(b.stderr()).not.toMatch(/it does not own deleted|the others dropped by/);
    const bVnodes = (await leader.query<{ vnodes: number }>('select vnodes from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]!.vnodes;
    expect(copied.reduce((sum, line) => sum + line.vnodes, 0)).toBe(bVnodes);
    for (const view of ['kv', 'ju']) expect(await explain(leader, view)).toMatch(/to 2 workers and 1 other node, vnodes cut again \d+ times?/);
    // After the cut: changes over every group, which b's vnodes' state must carry.
    await leader.query('update t set v = v + 5');
    await leader.query('delete from t where id % 7 = 3');
    await leader.query('update u set w = w + 1');
    await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 3000}) g`);
    next += 3000;
    await expectKeyedViewsEqual(leader, stderr);
    const bRows = (await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]?.share_rows;
    expect(Number(bRows ?? 0)).toBeGreaterThan(0);
    // The operator's view: the leader's /metrics says it leads two nodes and what b did for it;
    // b's says it runs the two views' shares' stores, copied (and ingested) out of its checkpoint.
    const leaderMetrics = (await httpGet(metricsPortOf(a), '/metrics')).body;
    expect(sample(leaderMetrics, 'oxbow_cluster_leader'), leaderMetrics).toBe(1);
    // The engine's figures too: the leader opened its engine after its metrics port.
    expect(sample(leaderMetrics, 'oxbow_epochs_committed_total')).toBeGreaterThan(0);
    expect(sample(leaderMetrics, 'oxbow_cluster_nodes')).toBe(2);
    expect(sample(leaderMetrics, 'oxbow_keyed_share_stores')).toBe(0);
    const bRowsMetric = sample(leaderMetrics, `oxbow_cluster_node_share_rows_total{node="${bId}"}`);
    expect(bRowsMetric, leaderMetrics).toBeGreaterThan(0);
    expect(bRowsMetric).toBeLessThanOrEqual(Number((await leader.query<{ share_rows: string }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]!.share_rows));
    const bMetrics = (await httpGet(metricsPortOf(b), '/metrics')).body;
    expect(sample(bMetrics, 'oxbow_cluster_leader'), bMetrics).toBe(0);
    // A standby has no engine of the leader's: its cluster figures only, and no status yet.
    expect(sample(bMetrics, 'oxbow_epochs_committed_total')).toBeUndefined();
    expect((await httpGet(metricsPortOf(b), '/api/status')).status).toBe(503);
    expect(sample(bMetrics, 'oxbow_keyed_share_stores')).toBe(2);
    expect(sample(bMetrics, 'oxbow_keyed_share_store_bytes')).toBeGreaterThan(0);
    const copiedAtJoin = sample(bMetrics, 'oxbow_keyed_share_copied_bytes_total')!;
    expect(copiedAtJoin).toBe(copied.reduce((sum, line) => sum + line.bytes, 0));
    expect(sample(bMetrics, 'oxbow_keyed_share_ingested_bytes_total')).toBe(copiedAtJoin);

    // c, a cold standby, joins while the writes go on: it refuses, the leader reads and sends its seed.
    writer = startWriter();
    let cId: string;
    try {
      c = await cluster.startNode('c', { OXBOW_CLUSTER_COLD_STANDBY: '1' });
      cId = await shareAddressListed(leader, c, stderr);
      await until('the views never took shares on node c', async () => (cutsOf(a.stderr(), cId).length >= 2 ? true : undefined), 90_000, stderr);
    } finally {
      await writer.stop();
    }
    const cCuts = cutsOf(a.stderr(), cId);
    expect(cCuts.length, stderr()).toBe(2);
    for (const cut of cCuts) {
      // b only loses vnodes: its share runs on (no store made, no seed read for it), as do the threads.
      expect(cut).toMatch(/kept 3 owners running \(2 threads, 1 node's share\), started 1/);
      // c's store is made of SST files the leader copied out of its database at the read's start: nothing is read entry by entry.
      expect(cut).toMatch(new RegExp(`no seed read, stores made from checkpoints or SST files in \\d+ ms while the owners ran, 1 of 1 seed sent ahead \\(node ${cId}'s as SST files of epoch \\d+\\)`));
      expect(cut).toContain(`node ${cId}'s store from a checkpoint: refused: this node does not follow checkpoints`);
      expect(cut).toMatch(new RegExp(`node ${cId} as SST files of epoch \\d+, \\d+ bytes sent`));
      expect(cut).not.toContain(`node ${bId} from`);
    }
    expect(c.stderr()).not.toMatch(/a keyed share's store is made from checkpoint/);
    const filed = [...c.stderr().matchAll(/a keyed share's store is made of (\d+) SST files? the leader copied out of its database at epoch \d+ \([^;]*; ([1-9]\d*) bytes received/g)];
    expect(filed.length, c.stderr()).toBe(2);
    // What crossed for c's shares counts the files' bytes.
    const seedBytes = (await leader.query<{ share_seed_bytes: string }>('select share_seed_bytes from oxbow_catalog.nodes where node_id = $1', [cId])).rows[0]!.share_seed_bytes;
    expect(Number(seedBytes)).toBeGreaterThan(filed.reduce((sum, match) => sum + Number(match[2]), 0));
    // The leader's copies go once sent.
    expect(readdirSync(join(cluster.work, 'a', 'keyed-seed-files'))).toEqual([]);
    await leader.query('update t set v = v + 7');
    await leader.query('delete from t where id % 11 = 4');
    await leader.query('update u set w = w + 3');
    await expectKeyedViewsEqual(leader, stderr);
    for (const node of [bId, cId]) {
      const rows = (await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [node])).rows[0]?.share_rows;
      expect(Number(rows ?? 0), node).toBeGreaterThan(0);
    }

    // c is drained while the writes go on: the threads and b take its vnodes, the map giving each
    // to an owner that never held it, so all run on; b, whose node follows checkpoints, makes a
    // store from one and copies the vnodes it takes from it into its running share's store, and
    // only the writes after that checkpoint cross.
    writer = startWriter();
    try {
      await c!.kill('SIGTERM');
      await until('the views never cut their owners without node c', async () => (a.stderr().split(`node ${cId} handed its vnodes back`).length > 2 ? true : undefined), 90_000, stderr);
    } finally {
      await writer.stop();
    }
    const drains = a.stderr().split('\n').filter((line) => line.includes(`node ${cId} handed its vnodes back`));
    expect(drains.length, stderr()).toBe(2);
    for (const cut of drains) {
      expect(cut).toMatch(/kept 3 owners running \(2 threads, 1 node's share; 3 of them took vnodes\), started 0/);
      expect(cut).toMatch(new RegExp(`no seed read, stores made from checkpoints in \\d+ ms while the owners ran[^;]*; seeds: node ${bId} from its checkpoint \\d+, \\d+ bytes sent to its running share`));
    }
    // The views' state tables are keyed by vnode: b copies the gained vnodes' key ranges into SST
    // files and ingests them into the running share's store (nothing read into memory).
    expect(b.stderr().match(/a keyed share's gained vnodes are copied out of checkpoint \d+ into 1 SST file \([1-9]\d* entries, [1-9]\d* bytes, in \d+ ms\); they wait for its share/g)?.length).toBe(2);
    expect(b.stderr().match(/a keyed share took vnodes it never held \(\d+ bytes of their seed written to its store, [1-9]\d* bytes of SST files ingested\)/g)?.length).toBe(2);
    expect(b.stderr()).not.toMatch(/gained vnodes are read out of checkpoint/);
    const gainedBytes = [...b.stderr().matchAll(/a keyed share's gained vnodes are copied out of checkpoint \d+ into 1 SST file \([1-9]\d* entries, ([1-9]\d*) bytes/g)].reduce((sum, line) => sum + Number(line[1]), 0);
    const bAfter = (await httpGet(metricsPortOf(b), '/metrics')).body;
    expect(sample(bAfter, 'oxbow_keyed_share_copied_bytes_total'), bAfter).toBe(copiedAtJoin + gainedBytes);
    expect(sample(bAfter, 'oxbow_keyed_share_ingested_bytes_total')).toBe(copiedAtJoin + gainedBytes);
    await leader.query('update t set v = v + 5');
    await leader.query('delete from t where id % 13 = 6');
    await leader.query('update u set w = w + 1');
    await expectKeyedViewsEqual(leader, stderr);
    expect(a.stderr()).not.toMatch(/could not be seeded|reads its shares' seeds again/);
    expect(a.stderr()).not.toMatch(/the keyed share on node \S+ \(\S+\) failed/);
    await leader.end();
  }, 300_000);
});
