// Keyed shares whose nodes keep their state (executor/cluster/README.md, "Each node owning its
// vnodes' state", step 3; OXBOW_KEYED_NODE_STATE=on): three real oxbow nodes on a real etcd at
// --parallelism 2, checkpoints to a folder.
//
// A GROUP BY view and a join view are built with shares on both standbys, then rows go through them.
// - The leader's database gets none of the nodes' state writes: in a checkpoint that names the
//   four stores, the leader's own files hold no entry of the parts' vnodes in their tables, while
//   the parts hold thousands.
// - Node c is SIGKILLed while writes go on: the leader restores each of c's shares from its part
//   of the last recorded checkpoint and the batches it kept since (its log says so), runs them,
//   and the views equal their recomputation.
// - c's lease expires, a change of membership: b's shares only gain c's vnodes, so the cut keeps
//   them running with their state on b, and the views equal their recomputation after more writes.
// - c restarted: its join takes vnodes from b's shares, so before that cut they come back to the
//   leader the same way (from their parts and kept batches), and both nodes get new shares.
// - The leader is SIGKILLed: the node promoted takes the nodes' vnodes from the parts of the
//   checkpoint it restores; the other node's new shares, whose stores its first cut makes from
//   that checkpoint, take them too; the views equal their recomputation after more writes.

import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ManifestFile } from '../../storage/checkpoint/manifest.js';
import { partRanges } from '../../storage/checkpoint/parts.js';
import { restorePart } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { forEachPacked, RocksDatabase } from '../../storage/rocksdb.js';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';
import { manifests } from './manifests.js';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, newLeader, nodes, threeNodesWithShares, until } from './remote-share-views.js';
import type pg from 'pg';

const cluster = clusterNodes('oxbow-node-state-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_KEYED_NODE_STATE: 'on',
  OXBOW_METRICS_PORT: '0',
});

const GROUPS = 2003;

/** Entries (every version) in `ranges` of `database`. */
function entriesIn(database: RocksDatabase, ranges: readonly { lower: Buffer; upper: Buffer }[]): number {
  let entries = 0;
  for (const range of ranges) {
    const iterator = database.iterator({ lowerBound: range.lower, upperBound: range.upper });
    iterator.seek(range.lower);
    for (let packed = iterator.nextPacked(); packed !== null; packed = iterator.nextPacked()) forEachPacked(packed, () => void entries++);
    iterator.close();
  }
  return entries;
}

describe('keyed shares whose nodes keep their state', () => {
  it("keep it out of the leader's database, and come back from the parts and kept batches", async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first);
    await first.query(`insert into t select g, g % ${GROUPS}, g from generate_series(1, 20000) g`);
    await first.query(`insert into u select g, g % ${GROUPS}, g from generate_series(1, 3000) g`);
    const folder = join(cluster.work, 'checkpoints');
    let next = 20000;
    const round = async (client: pg.Client, step: number): Promise<void> => {
      await client.query(`update t set v = v + 1 where id % 13 = ${step % 13}`);
      await client.query(`delete from t where id % 89 = ${step % 89}`);
      await client.query(`insert into t select g, g % ${GROUPS}, g * 7 % 1000 from generate_series(${next + 1}, ${next + 200}) g`);
      next += 200;
      await client.query(`update u set w = w + 2, k = (k + 3) % ${GROUPS} where id % 19 = ${step % 19}`);
    };
    let step = 0;
    const full = () => manifests(folder).filter((manifest) => new Set((manifest.parts ?? []).map((part) => part.node)).size === 2 && manifest.parts!.length === 4);
    const firstNamed = await until("no checkpoint named both standbys' two stores", async () => {
      await round(first, step++);
      return full().at(-1);
    }, 90_000, stderr);
    await expectKeyedViewsEqual(first, stderr);
    // A checkpoint after every row so far went through the views.
    await round(first, step++);
    const named = await until('no later checkpoint named the four stores', async () => full().find((manifest) => BigInt(manifest.epoch) > BigInt(firstNamed.epoch)), 60_000, stderr);

    // The leader's own files hold nothing of the parts' vnodes; the parts hold their state.
    const scratch = mkdtempSync(join(tmpdir(), 'oxbow-node-state-'));
    const store = new FileObjectStore(folder);
    try {
      const leaderDir = join(scratch, 'leader');
      mkdirSync(leaderDir);
      for (const file of named.files as readonly ManifestFile[]) copyFileSync(join(folder, file.key), join(leaderDir, file.name));
      const leaderDb = RocksDatabase.open(leaderDir, { readOnly: true });
      try {
        for (const [index, part] of named.parts!.entries()) {
          expect(part.share, 'a part names its share').toMatch(/^[0-9a-f]+$/);
          expect(part.tables?.length).toBeGreaterThan(0);
          expect(entriesIn(leaderDb, partRanges(part)), `view ${part.view}'s vnodes on node ${part.node} in the leader's files`).toBe(0);
          const partDir = join(scratch, `part-${index}`);
          await restorePart(store, part, partDir);
          const partDb = RocksDatabase.open(partDir, { readOnly: true });
          try {
            expect(entriesIn(partDb, partRanges(part))).toBeGreaterThan(500);
          } finally {
            await partDb.close();
          }
        }
      } finally {
        await leaderDb.close();
      }
    } finally {
      store.close();
      rmSync(scratch, { recursive: true, force: true });
    }

    // The leader's /metrics say what it keeps of each node's writes until a checkpoint holds them.
    const cId = (await nodes(first)).find((row) => row.address === `${c.host}:${c.port}`)!.node_id;
    const kept = await until('the leader never kept bytes of c\'s writes', async () => {
      await round(first, step++);
      const body = (await httpGet(metricsPortOf(a), '/metrics')).body;
      const sample = new RegExp(`^oxbow_cluster_node_share_kept_bytes\\{node="${cId}"\\} (\\d+)$`, 'm').exec(body);
      return sample !== null && Number(sample[1]) > 0 ? Number(sample[1]) : undefined;
    }, 30_000, stderr);
    expect(kept).toBeLessThan(64 << 20);

    // c killed while writes go on: its shares are restored on the leader from part and kept batches.
    const bId = (await nodes(first)).find((row) => row.address === `${b.host}:${b.port}`)!.node_id;
    const cuts = () => a.stderr().match(new RegExp(`cut its vnodes again[^\\n]*node ${cId} \\(failed over before\\) handed its vnodes back[^\\n]*seeds: node ${bId}[^\\n]*`, 'g')) ?? [];
    const cutsBefore = cuts().length;
    for (let more = 0; more < 5; more++) await round(first, step++);
    await c.kill('SIGKILL');
    for (let more = 0; more < 5; more++) await round(first, step++);
    const restored = await until("the leader never restored c's shares", async () => {
      const lines = a.stderr().match(new RegExp(`the keyed share on node ${cId} is restored on this node from [^\\n]*`, 'g')) ?? [];
      return lines.length >= 2 ? lines : undefined;
    }, 60_000, stderr);
    for (const line of restored) expect(line).toMatch(/from its part of checkpoint \d+ \(\d+ vnode ranges, \d+ entries, \d+ bytes\) and \d+ batches kept since/);
    await expectKeyedViewsEqual(first, stderr);

    // c's lease expires: the cut gives c's vnodes to the threads and b's running shares.
    await until('the views never cut their owners again without c', async () => {
      await round(first, step++);
      return cuts().length >= cutsBefore + 2 ? true : undefined;
    }, 90_000, stderr);
    // b's shares only gain c's vnodes: the cut keeps them running, their state on b.
    for (const line of cuts().slice(cutsBefore)) expect(line).toMatch(/kept 3 owners running \(2 threads, 1 node's share; 3 of them took vnodes\), started 0/);
    expect(a.stderr()).not.toMatch(new RegExp(`the keyed share on node ${bId} \\([^)]*\\) comes back to this node`));
    for (let more = 0; more < 5; more++) await round(first, step++);
    await expectKeyedViewsEqual(first, stderr);
    // Once a checkpoint names b's new stores, the leader is killed: b takes the parts at promotion.
    const afterCut = (await until('no checkpoint named the new stores of b', async () => {
      const found = manifests(folder).filter((manifest) => (manifest.parts ?? []).length === 2 && manifest.parts!.every((part) => part.node === bId)).at(-1);
      return found;
    }, 60_000, stderr)).epoch;
    expect(BigInt(afterCut)).toBeGreaterThan(BigInt(named.epoch));

    // c again, on its data directory: the cut for it takes b's shares back and gives both nodes new ones.
    const c2 = await cluster.startNode('c');
    const stderrAll = () => `${stderr()}\n--- c again ---\n${c2.stderr()}`;
    const c2Id = await until('c never came back with a share address', async () => (await nodes(first)).find((row) => row.address === `${c2.host}:${c2.port}` && row.share_address !== null)?.node_id, 60_000, stderrAll);
    const both = await until('no checkpoint named the new stores of b and c', async () => {
      await round(first, step++);
      return manifests(folder).find((manifest) => BigInt(manifest.epoch) > BigInt(afterCut) && (manifest.parts ?? []).filter((part) => part.node === bId).length === 2 && manifest.parts!.filter((part) => part.node === c2Id).length === 2);
    }, 90_000, stderrAll);
    expect(both.parts).toHaveLength(4);
    // c's join takes vnodes from b's shares: they came back to the leader before that cut.
    expect(a.stderr()).toMatch(new RegExp(`the keyed share on node ${bId} \\([^)]*\\) comes back to this node`));
    expect(a.stderr()).toMatch(new RegExp(`the keyed share on node ${bId} is restored on this node from its part of checkpoint`));
    await first.end();
    await a.kill('SIGKILL');
    // The new leader takes the four parts of the checkpoint it restores; its first cut gives the
    // other node a share whose store is made from that checkpoint, whose leader's files do not hold
    // the nodes' vnodes: that store takes the parts too.
    const { node, client: leader } = await newLeader([b, c2], stderrAll);
    const other = node === b ? c2 : b;
    const line = await until('the new leader never said what it restored', async () => /is the leader \(checkpoint (\d+) restored, [^\n]*/.exec(node.stderr()) ?? undefined, 60_000, stderrAll);
    expect(line[0]).toMatch(/, 4 node parts taken \(\d+ vnode ranges, \d+ entries, \d+ bytes\);/);
    await expectKeyedViewsEqual(leader, stderrAll);
    const madeFrom = await until("the other node's shares never took the parts", async () => new RegExp(`a keyed share's store made from checkpoint ${line[1]} took [1-4] node parts? [^\n]*`).exec(other.stderr()) ?? undefined, 60_000, stderrAll);
    expect(madeFrom[0]).toMatch(/\(\d+ vnode ranges, [1-9]\d* entries/);
    for (let more = 0; more < 5; more++) await round(leader, step++);
    await expectKeyedViewsEqual(leader, stderrAll);
    await leader.end();
  }, 400_000);
});
