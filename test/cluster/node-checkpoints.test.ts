// Each node's keyed share stores in the leader's checkpoints (executor/cluster/README.md, "Each
// node owning its vnodes' state", step 4; OXBOW_KEYED_NODE_CHECKPOINTS=on): real oxbow nodes on a
// real etcd at --parallelism 2, checkpoints to a folder.
//
// A GROUP BY view and a join view run with shares on node b while updates, deletes and inserts go
// on. Every checkpoint of the leader then names b's parts: each running share's store cut once
// every batch of the share's epochs up to the checkpoint's was written, uploaded by b under nodes/<b>/. The parts are checked against the
// leader's own files of the same checkpoint, which still hold every vnode: opened from the
// checkpoint folder, each part's store read at the checkpoint's epoch holds exactly the leader's
// entries of the part's vnodes, in every state table of the part (a store whose compactions
// dropped versions the epoch needs, or a part cut before its last batch up to the epoch, differs). Retention deletes
// b's files once no kept manifest names them. b killed, the leader's checkpoints complete again
// without its parts (its shares run on the leader), and the views lose nothing.

import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CheckpointManifest, ManifestFile } from '../../storage/checkpoint/manifest.js';
import { restorePart } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { epochSuffix, SYSTEM_TABLE_ID, tableLowerBound, vnodeRunRanges } from '../../storage/mvcc-key.js';
import { forEachPacked, RocksDatabase } from '../../storage/rocksdb.js';
import { manifests } from './manifests.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';

const cluster = clusterNodes('oxbow-node-checkpoints-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_KEYED_NODE_CHECKPOINTS: 'on',
  // Old versions and checkpoints go within seconds: the nodes' stores drop versions as soon as
  // their cap lets them, and retention expires manifests (and their parts' files) as the test runs.
  OXBOW_TIME_TRAVEL_RETENTION: '1s',
  OXBOW_KEEP_CHECKPOINTS: '2',
});

const GROUPS = 2003;

/** Every file under `dir`, as keys relative to `root`. */
function keysUnder(root: string, dir: string): string[] {
  const path = join(root, dir);
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? keysUnder(root, `${dir}/${entry.name}`) : [`${dir}/${entry.name}`]));
}

/** A RocksDB directory of `files` copied out of the checkpoint folder, opened read-only. */
function openFiles(folder: string, files: readonly ManifestFile[], scratch: string): RocksDatabase {
  mkdirSync(scratch, { recursive: true });
  for (const file of files) copyFileSync(join(folder, file.key), join(scratch, file.name));
  return RocksDatabase.open(scratch, { readOnly: true });
}

/** The entries of `ranges` visible at `epoch` (the newest version at or before it, tombstones skipped), as hex key to hex value. */
function visibleAt(database: RocksDatabase, ranges: readonly { lower: Buffer; upper: Buffer }[], epoch: bigint): Map<string, string> {
  const entries = new Map<string, string>();
  for (const range of ranges) {
    const iterator = database.iterator({ lowerBound: range.lower, upperBound: range.upper, epochSuffix: epochSuffix(epoch) });
    iterator.seek(range.lower);
    for (let packed = iterator.nextPacked(); packed !== null; packed = iterator.nextPacked()) {
      forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
        entries.set(buffer.subarray(keyStart, keyEnd).toString('hex'), buffer.subarray(valueStart, valueEnd).toString('hex'));
      });
    }
    iterator.close();
  }
  return entries;
}

/** The table ids whose keys `database`'s default family holds (not the store's own records). */
function tablesOf(database: RocksDatabase): number[] {
  const tables: number[] = [];
  for (let next = 0; next < 0xffffffff; ) {
    const iterator = database.iterator({ lowerBound: tableLowerBound(next) });
    iterator.seek(tableLowerBound(next));
    const packed = iterator.nextPacked(1);
    iterator.close();
    if (packed === null) break;
    let tableId = -1;
    forEachPacked(packed, (buffer, keyStart) => (tableId = buffer.readUInt32BE(keyStart)));
    if (tableId === SYSTEM_TABLE_ID) break;
    tables.push(tableId);
    next = tableId + 1;
  }
  return tables;
}

describe("each node's keyed share stores in the leader's checkpoints", () => {
  it("names b's stores, equal at each checkpoint's epoch to the leader's entries of b's vnodes", async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await keyedViews(leader, { groups: GROUPS, t: 20000, u: 3000 });

    const b = await cluster.startNode('b', { OXBOW_METRICS_PORT: '0' });
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const bId = await shareAddressListed(leader, b, stderr);
    await until('the views never took shares on node b', async () => ((a.stderr().match(new RegExp(`cut its vnodes again[^\\n]*node ${bId} took vnodes`, 'g')) ?? []).length >= 2 ? true : undefined), 90_000, stderr);

    const folder = join(cluster.work, 'checkpoints');
    const withParts = (): CheckpointManifest[] => manifests(folder).filter((manifest) => (manifest.parts ?? []).length === 2);
    // A checkpoint comes once an epoch commits after the cut.
    await leader.query(`update t set v = v + 1 where id % 101 = 0`);
    await leader.query(`update u set w = w + 1 where id % 101 = 0`);
    const first = await until("no checkpoint named b's two stores", async () => withParts()[0], 60_000, stderr);
    // The first parts' own small files (CURRENT, MANIFEST, OPTIONS), named by that checkpoint only.
    const firstSmallFiles = first.parts!.flatMap((part) => part.files.map((file) => file.key)).filter((key) => key.includes('/files/'));
    expect(firstSmallFiles.length).toBeGreaterThanOrEqual(4);

    // Writes over every key, checkpoints going on: b's stores flush, compact and drop versions.
    let next = 20000;
    for (let step = 0; step < 40; step++) {
      await leader.query(`update t set v = v + 1 where id % 13 = ${step % 13}`);
      await leader.query(`delete from t where id % 97 = ${step % 97}`);
      await leader.query(`insert into t select g, g % ${GROUPS}, g * 3 % 1000 from generate_series(${next + 1}, ${next + 200}) g`);
      next += 200;
      await leader.query(`update u set w = w + 2, k = (k + 1) % ${GROUPS} where id % 17 = ${step % 17}`);
      if (step % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 400));
    }
    await expectKeyedViewsEqual(leader, stderr);
    const last = await until('no checkpoint after the writes named both stores', async () => {
      const found = withParts().at(-1);
      return found !== undefined && BigInt(found.epoch) > BigInt(first.epoch) ? found : undefined;
    }, 60_000, stderr);

    // b's parts: its two running shares and its vnodes.
    const bVnodes = (await leader.query<{ vnodes: number }>('select vnodes from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]!.vnodes;
    const parts = last.parts!;
    expect(parts.every((part) => part.node === bId)).toBe(true);
    expect(new Set(parts.map((part) => part.view)).size).toBe(2);
    expect(parts.reduce((sum, part) => sum + part.vnodes.length, 0)).toBe(bVnodes);
    expect(b.stderr()).toMatch(/2 keyed share stores checkpointed at epoch \d+ \(\d+ bytes named, \d+ files? of \d+ bytes sent/);
    // b's /metrics: the stores it cut and what it sent (at least the parts of the manifests seen).
    const bMetrics = (await httpGet(metricsPortOf(b), '/metrics')).body;
    const sample = (name: string): number => Number(/^(\S+) (\S+)$/m.exec(bMetrics.split('\n').find((line) => line.startsWith(`${name} `)) ?? '')?.[2] ?? NaN);
    expect(sample('oxbow_keyed_share_checkpoints_total'), bMetrics).toBeGreaterThanOrEqual(2 * withParts().length);
    expect(sample('oxbow_keyed_share_checkpoint_uploaded_bytes_total')).toBeGreaterThanOrEqual(parts.reduce((sum, part) => sum + part.totalBytes, 0));

    // The leader's files of that checkpoint hold every vnode (b's writes come back into its
    // WriteBatch): each part's store, read at the checkpoint's epoch, equals them on its vnodes.
    const scratch = mkdtempSync(join(tmpdir(), 'oxbow-node-parts-'));
    const store = new FileObjectStore(folder);
    try {
      const leaderDb = openFiles(folder, last.files, join(scratch, 'leader'));
      let compared = 0;
      try {
        for (const [index, part] of parts.entries()) {
          // A part restores as a store opens: its files downloaded and checked (storage/checkpoint/restore.ts).
          const partDir = join(scratch, `part-${index}`);
          expect(await restorePart(store, part, partDir)).toBe(part.totalBytes);
          const partDb = RocksDatabase.open(partDir, { readOnly: true });
          try {
            const flags = new Uint8Array(256);
            for (const vnode of part.vnodes) flags[vnode] = 1;
            const tables = tablesOf(partDb);
            expect(tables.length).toBeGreaterThan(0);
            for (const tableId of tables) {
              const ranges = vnodeRunRanges(tableId, flags);
              const fromPart = visibleAt(partDb, ranges, BigInt(last.epoch));
              const fromLeader = visibleAt(leaderDb, ranges, BigInt(last.epoch));
              expect(fromPart.size, `table ${tableId} of view ${part.view}'s part`).toBe(fromLeader.size);
              expect(fromPart).toEqual(fromLeader);
              compared += fromPart.size;
            }
            // The part's store holds nothing of the vnodes it does not own (tables keyed by vnode).
            const others = new Uint8Array(256).map((_, vnode) => (flags[vnode] === 1 ? 0 : 1));
            for (const tableId of tables) expect(visibleAt(partDb, vnodeRunRanges(tableId, others), BigInt(last.epoch)).size).toBe(0);
          } finally {
            await partDb.close();
          }
        }
      } finally {
        await leaderDb.close();
      }
      expect(compared).toBeGreaterThan(1000);
      // A part whose file is damaged is refused, and nothing of it is left.
      const damaged = { ...parts[0]!, files: parts[0]!.files.map((file, at) => (at === 0 ? { ...file, sha256: '0'.repeat(64) } : file)) };
      await expect(restorePart(store, damaged, join(scratch, 'damaged'))).rejects.toThrow();
      expect(existsSync(join(scratch, 'damaged')) || existsSync(join(scratch, 'damaged.restoring'))).toBe(false);
    } finally {
      store.close();
      rmSync(scratch, { recursive: true, force: true });
    }

    // Retention: once the first checkpoint expired, its parts' own files are gone, and every file a
    // kept manifest names is there.
    await until("the first parts' files were never deleted", async () => (firstSmallFiles.every((key) => !existsSync(join(folder, key))) ? true : undefined), 30_000, stderr);
    expect(manifests(folder).some((manifest) => manifest.epoch === first.epoch)).toBe(false);
    for (const manifest of manifests(folder)) for (const part of manifest.parts ?? []) for (const file of part.files) expect(existsSync(join(folder, file.key)), file.key).toBe(true);
    expect(keysUnder(folder, `nodes/${bId}/sst`).length).toBeGreaterThan(0);

    // b is killed while the writes go on: its shares run on the leader (its link closed), which
    // asks b for no part any more, and checkpoints complete again without b's parts; the views lose nothing.
    const killedAt = BigInt(withParts().at(-1)!.epoch);
    await b.kill('SIGKILL');
    for (let step = 0; step < 10; step++) {
      await leader.query(`update t set v = v + 3 where id % 11 = ${step}`);
      await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 100}) g`);
      next += 100;
    }
    await until('no checkpoint completed after b was killed', async () => (manifests(folder).some((manifest) => BigInt(manifest.epoch) > killedAt && manifest.parts === undefined) ? true : undefined), 60_000, stderr);
    await expectKeyedViewsEqual(leader, stderr);
  }, 300_000);
});
