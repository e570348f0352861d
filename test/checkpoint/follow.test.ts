// Following checkpoints for a warm standby (storage/checkpoint/follow.ts) and the manifest guard
// of a cluster's leader (checkpointer.ts), over real RocksDB and the folder object store:
// - following a newer checkpoint downloads exactly the files its manifest names that the
//   previous one did not (what the checkpointer uploaded in between), and forgets the rest;
// - the followed checkpoint, materialized into a state directory, opens with exactly the
//   checkpointed rows and epoch, and a checkpointer on it uploads no restored file again;
// - a keyed share's store made from the followed checkpoint (materializeAtLeast) waits for a follow
//   at or past the epoch asked, holds that checkpoint's rows with its SST files hard-linked, and
//   gives up at its deadline or when withdrawn;
// - such a store made from a checkpoint of several views' tables, with the other tables dropped
//   (storage/key-ranges.ts' dropTablesOutside, as a node's remote-share-server.ts does), holds no
//   key of them (raw RocksDB reads) and the kept tables' rows and the committed epoch intact, and
//   compacting the dropped ranges shrinks its live SST files;
// - a refused guard leaves no manifest and no complete checkpoint; a guard that fails before the
//   write leaves none either;
// - a guard's parts (other nodes' stores, executor/cluster/share-store-checkpoint.ts) are named by
//   the manifest, a rejected one fails the checkpoint, retention deletes their files once no kept
//   manifest names them, a new lineage's sweep deletes the files under nodes/ that none names, and
//   a manifest whose part names a file outside its node's folder is refused; a follower downloads
//   the parts' files too, makes a part a directory of its own (materializePart; a store made from
//   the followed checkpoint makes its parts before a follow asked meanwhile moves on), and forgets
//   a part's files once the followed manifest no longer names them.

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { ManifestGuard } from '../../storage/checkpoint/checkpointer.js';
import { CheckpointFollower } from '../../storage/checkpoint/follow.js';
import { decodeManifest, encodeManifest, manifestKey, ManifestError, type ManifestPart } from '../../storage/checkpoint/manifest.js';
import { listCheckpointEpochs } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { dropTablesOutside, rangesOutsideTables } from '../../storage/key-ranges.js';
import { tableLowerBound, tableUpperBound } from '../../storage/mvcc-key.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import type { StateTableSchema } from '../../storage/state-table.js';
import { committedRows } from './support/committed-rows.js';
import { openTestCheckpointer } from './support/test-checkpointer.js';

const schema: StateTableSchema = { tableId: 20000, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const work = mkdtempSync(join(tmpdir(), 'oxbow-follow-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function leader(name: string, guard?: ManifestGuard) {
  const dir = join(work, name);
  const stateDir = join(dir, 'state');
  const store = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0, rocksdb: { writeBufferBytes: 1 << 20 } });
  const remote = new FileObjectStore(join(dir, 'remote'));
  const model = new Map<number, string>();
  let clockMs = Date.now();
  const checkpointer = openTestCheckpointer({ store, stateDir, stagingDir: join(dir, 'staging'), objectStore: remote, keepLast: 3, ...(guard === undefined ? {} : { guard }) });
  return {
    dir,
    store,
    remote,
    checkpointer,
    model,
    write(from: number, to: number, tag: string): Epoch {
      const table = store.table(schema);
      for (let key = from; key < to; key++) {
        const value = `${tag}-${key}-${'x'.repeat(100)}`;
        table.insert([key, value]);
        model.set(key, value);
      }
      clockMs += 1000;
      const epoch = epochFromMillis(clockMs);
      store.commit(epoch);
      return epoch;
    },
  };
}

const sorted = (model: Map<number, string>): Row[] => [...model.entries()].sort((left, right) => left[0] - right[0]).map(([key, value]) => [key, value]);

describe('following checkpoints', () => {
  it('downloads only the new files of each manifest and materializes the checkpoint exactly', async () => {
    const node = leader('a');
    node.write(0, 20_000, 'a');
    const first = (await node.checkpointer.checkpoint())!.epoch;
    const atFirst = sorted(node.model);
    const follower = new CheckpointFollower(node.remote, join(node.dir, 'follow'));
    const firstManifest = decodeManifest(manifestKey(first), await node.remote.getBytes(manifestKey(first)));
    const followedFirst = await follower.follow(first);
    expect(followedFirst.filesDownloaded).toBe(firstManifest.files.length);
    expect(followedFirst.bytesDownloaded).toBe(firstManifest.totalBytes);

    node.write(0, 200, 'b');
    const second = (await node.checkpointer.checkpoint())!.epoch;
    const secondManifest = decodeManifest(manifestKey(second), await node.remote.getBytes(manifestKey(second)));
    const firstKeys = new Set(firstManifest.files.map((file) => file.key));
    const fresh = secondManifest.files.filter((file) => !firstKeys.has(file.key));
    const followedSecond = await follower.follow(second);
    expect(followedSecond.filesDownloaded).toBe(fresh.length);
    expect(followedSecond.bytesDownloaded).toBe(fresh.reduce((sum, file) => sum + file.sizeBytes, 0));
    expect(followedSecond.bytesDownloaded).toBeLessThan(secondManifest.totalBytes / 2);
    // Files only the first checkpoint named are gone from the folder; following again is free.
    for (const file of firstManifest.files) if (!secondManifest.files.some((other) => other.key === file.key)) expect(existsSync(join(node.dir, 'follow', ...file.key.split('/')))).toBe(false);
    expect((await follower.follow(second)).filesDownloaded).toBe(0);
    await node.store.close();

    // A restarted follower reads what it followed from its folder.
    const restarted = new CheckpointFollower(node.remote, join(node.dir, 'follow'));
    const stateDir = join(work, 'promoted', 'state');
    const manifest = await restarted.materialize(stateDir);
    expect(manifest?.epoch).toBe(second.toString());
    const restored = await committedRows(stateDir, schema);
    expect(restored.epoch).toBe(second);
    expect(restored.rows).toEqual(sorted(node.model));
    expect(restored.rows).not.toEqual(atFirst);

    // The promoted directory's checkpoints name the followed files, not copies of them.
    const promoted = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0 });
    const checkpointer = openTestCheckpointer({ store: promoted, stateDir, stagingDir: join(work, 'promoted', 'staging'), objectStore: node.remote, keepLast: 3 });
    const table = promoted.table(schema);
    table.insert([1, 'after promotion']);
    promoted.commit(epochFromMillis(Date.now() + 60_000));
    const record = (await checkpointer.checkpoint())!;
    expect(record.bytesUploaded).toBeLessThan(secondManifest.totalBytes / 2);
    await promoted.close();
  });

  it("makes a keyed share's store from a followed checkpoint at or past an epoch, within a deadline", async () => {
    const node = leader('m');
    node.write(0, 5_000, 'a');
    const first = (await node.checkpointer.checkpoint())!.epoch;
    const follower = new CheckpointFollower(node.remote, join(node.dir, 'follow'));
    await follower.follow(first);
    node.write(0, 300, 'b');
    const second = (await node.checkpointer.checkpoint())!.epoch;
    const atSecond = sorted(node.model);
    // Not followed yet: refused at the deadline, and no directory is left.
    await expect(follower.materializeAtLeast(second, join(node.dir, 'share-1'), 100)).rejects.toThrow(/not yet checkpoint/);
    await expect(follower.materializeAtLeast(second, join(node.dir, 'share-1'), 10_000, () => true)).rejects.toThrow(/withdrawn/);
    expect(existsSync(join(node.dir, 'share-1'))).toBe(false);
    // Followed while it waits: the store holds the second checkpoint's rows, its SST files linked to the followed ones.
    const made = follower.materializeAtLeast(second, join(node.dir, 'share-2'), 10_000);
    await follower.follow(second);
    expect(await made).toBe(second);
    const sst = readdirSync(join(node.dir, 'share-2')).filter((name) => name.endsWith('.sst'));
    expect(sst.length).toBeGreaterThan(0);
    for (const name of sst) expect(statSync(join(node.dir, 'share-2', name)).nlink).toBeGreaterThan(1);
    await node.store.close();
    const restored = await committedRows(join(node.dir, 'share-2'), schema);
    expect(restored.epoch).toBe(second);
    expect(restored.rows).toEqual(atSecond);
    // Asked for the first, a follower past it makes the store of the one it follows.
    expect(await follower.materializeAtLeast(first, join(node.dir, 'share-3'), 0)).toBe(second);
  });

  it("keeps only the share's tables in a store made from a checkpoint of two views' tables", async () => {
    // The share's fragment owns tables 30001 and 30003; another view's tables sit below, between and above them.
    const tables = [30000, 30001, 30002, 30003, 30004].map((tableId): StateTableSchema => ({ tableId, columnTypes: [type('int4'), type('text')], primaryKey: [0] }));
    const kept = [30003, 30001];
    const dir = join(work, 'trim');
    const stateDir = join(dir, 'state');
    const store = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0, rocksdb: { writeBufferBytes: 1 << 20 } });
    const remote = new FileObjectStore(join(dir, 'remote'));
    const checkpointer = openTestCheckpointer({ store, stateDir, stagingDir: join(dir, 'staging'), objectStore: remote, keepLast: 3 });
    const models = new Map<number, Map<number, string>>(tables.map((schema) => [schema.tableId, new Map()]));
    let clockMs = Date.now();
    // Several epochs, each table's keys written, updated and deleted, over several flushed files.
    for (let round = 0; round < 4; round++) {
      for (const schema of tables) {
        const table = store.table(schema);
        const model = models.get(schema.tableId)!;
        for (let key = round * 1000; key < round * 1000 + 3000; key++) {
          if (key % 7 === round) {
            table.delete([key]);
            model.delete(key);
          } else {
            const value = `${schema.tableId}-${round}-${key}-${'y'.repeat(200)}`;
            table.insert([key, value]);
            model.set(key, value);
          }
        }
      }
      clockMs += 1000;
      store.commit(epochFromMillis(clockMs));
    }
    const epoch = (await checkpointer.checkpoint())!.epoch;
    await store.close();
    const follower = new CheckpointFollower(remote, join(dir, 'follow'));
    await follower.follow(epoch);
    const shareDir = join(dir, 'share');
    expect(await follower.materializeAtLeast(epoch, shareDir, 0)).toBe(epoch);

    const database = RocksDatabase.open(shareDir);
    const rawKeys = (tableId: number): number => {
      const iterator = database.iterator({ lowerBound: tableLowerBound(tableId), upperBound: tableUpperBound(tableId) });
      try {
        let count = 0;
        for (let packed = iterator.nextPacked(1000); packed !== null; packed = iterator.nextPacked(1000)) {
          for (let at = 0; at < packed.length; count++) {
            const keyLength = packed.readUInt32LE(at);
            at += 4 + keyLength;
            at += 4 + packed.readUInt32LE(at);
          }
        }
        return count;
      } finally {
        iterator.close();
      }
    };
    // Before: the store holds every table (the checkpoint's whole database).
    for (const schema of tables) expect(rawKeys(schema.tableId)).toBeGreaterThan(0);
    const ranges = dropTablesOutside(database, kept);
    expect(ranges.map((range) => [range.lower.readUInt32BE(0), range.upper.readUInt32BE(0)])).toEqual([
      [0, 30001],
      [30002, 30003],
      [30004, 0xffffffff],
    ]);
    for (const schema of tables) {
      if (kept.includes(schema.tableId)) expect(rawKeys(schema.tableId)).toBeGreaterThan(0);
      else expect(rawKeys(schema.tableId)).toBe(0);
    }
    const liveBefore = Number(database.getProperty('rocksdb.live-sst-files-size'));
    for (const range of ranges) await database.compactRange(range.lower, range.upper);
    const liveAfter = Number(database.getProperty('rocksdb.live-sst-files-size'));
    // Three of the five tables' bytes go (the tables are about the same size).
    expect(liveAfter).toBeLessThan(liveBefore * 0.6);
    for (const schema of tables) if (!kept.includes(schema.tableId)) expect(rawKeys(schema.tableId)).toBe(0);
    await database.close();

    // The kept tables' rows and the committed epoch, read through the store, are the model's.
    for (const tableId of kept) {
      const restored = await committedRows(shareDir, tables.find((schema) => schema.tableId === tableId)!);
      expect(restored.epoch).toBe(epoch);
      expect(restored.rows).toEqual(sorted(models.get(tableId)!));
      expect(restored.rows.length).toBeGreaterThan(2000);
    }
    // The followed checkpoint's files are untouched: a store made from them again holds every table.
    const again = join(dir, 'share-again');
    await follower.materializeAtLeast(epoch, again, 0);
    expect((await committedRows(again, tables[2]!)).rows).toEqual(sorted(models.get(30002)!));
  });

  it('cuts the ranges outside the kept tables', () => {
    const bounds = (keep: number[]) => rangesOutsideTables(keep).map((range) => [range.lower.readUInt32BE(0), range.upper.readUInt32BE(0)]);
    expect(bounds([])).toEqual([[0, 0xffffffff]]);
    expect(bounds([0])).toEqual([[1, 0xffffffff]]);
    expect(bounds([5, 6, 6, 9])).toEqual([[0, 5], [7, 9], [10, 0xffffffff]]);
    expect(bounds([0xfffffffe])).toEqual([[0, 0xfffffffe]]);
    expect(() => rangesOutsideTables([0xffffffff])).toThrow(/not a table id/);
    expect(() => rangesOutsideTables([1.5])).toThrow(/not a table id/);
  });

  it('a refused guard leaves no manifest and no complete checkpoint', async () => {
    let allow = true;
    const committed: Epoch[] = [];
    const node = leader('b', {
      check: async () => undefined,
      commit: async (epoch) => {
        if (allow) committed.push(epoch);
        return allow;
      },
    });
    node.write(0, 1000, 'a');
    const first = (await node.checkpointer.checkpoint())!.epoch;
    expect(committed).toEqual([first]);
    allow = false;
    node.write(0, 10, 'b');
    await expect(node.checkpointer.checkpoint()).rejects.toThrow(/refused: this node is no longer the leader/);
    expect(node.checkpointer.lastEpoch).toBe(first);
    expect(await listCheckpointEpochs(node.remote)).toEqual([first]);
    await node.store.close();
  });

  it('a guard that fails its check writes no manifest', async () => {
    const node = leader('c', {
      check: async () => {
        throw new Error('this node is no longer the leader');
      },
      commit: async () => true,
    });
    node.write(0, 1000, 'a');
    await expect(node.checkpointer.checkpoint()).rejects.toThrow(/no longer the leader/);
    expect(await listCheckpointEpochs(node.remote)).toEqual([]);
    expect(node.checkpointer.lastEpoch).toBe(0n);
    await node.store.close();
  });

  it("names a guard's parts, fails without them, and collects their files with retention", async () => {
    let round = 0;
    let reject = false;
    const remote = () => node.remote;
    /** A part of node n1 whose files are made now (their bytes do not matter to the leader). */
    const parts = async (epoch: Epoch): Promise<ManifestPart[]> => {
      if (reject) throw new Error('node n1 gave no part');
      round++;
      const files = [];
      for (const name of ['000009.sst', 'CURRENT']) {
        const key = name.endsWith('.sst') ? `nodes/n1/sst/i${round}/${name}` : `nodes/n1/files/${epoch}/i${round}/${name}`;
        const digest = await remote().putBytes(key, new TextEncoder().encode(`${key} ${'y'.repeat(round)}`));
        files.push({ name, key, sizeBytes: digest.sizeBytes, sha256: digest.sha256 });
      }
      return [{ node: 'n1', incarnation: `i${round}`, view: 16400, owner: 2, vnodes: [1, 4], epoch: epoch.toString(), files, totalBytes: files.reduce((sum, file) => sum + file.sizeBytes, 0) }];
    };
    const node = leader('p', { check: async () => undefined, commit: async () => true, parts });
    node.write(0, 1000, 'a');
    const first = (await node.checkpointer.checkpoint())!.epoch;
    const firstManifest = decodeManifest(manifestKey(first), await node.remote.getBytes(manifestKey(first)));
    expect(firstManifest.parts?.map((part) => part.files.map((file) => file.key))).toEqual([[`nodes/n1/sst/i1/000009.sst`, `nodes/n1/files/${first}/i1/CURRENT`]]);

    reject = true;
    node.write(0, 10, 'b');
    await expect(node.checkpointer.checkpoint()).rejects.toThrow(/node n1 gave no part/);
    expect(await listCheckpointEpochs(node.remote)).toEqual([first]);
    reject = false;

    // keepLast 3: after four more, the first checkpoint and its part's files are gone.
    for (let more = 0; more < 4; more++) {
      node.write(more * 10, more * 10 + 10, `c${more}`);
      await node.checkpointer.checkpoint();
    }
    const keys = new Set((await node.remote.list('nodes/')).map((object) => object.key));
    for (const file of firstManifest.parts![0]!.files) expect(keys.has(file.key)).toBe(false);
    const kept = await listCheckpointEpochs(node.remote);
    expect(kept.length).toBe(3);
    const named = new Set<string>();
    for (const epoch of kept) for (const file of decodeManifest(manifestKey(epoch), await node.remote.getBytes(manifestKey(epoch))).parts![0]!.files) named.add(file.key);
    // The rejected attempt sent nothing (its part failed before any file): what is there is what the kept manifests name.
    expect(keys).toEqual(named);

    // A leftover no manifest names (an upload for a checkpoint that failed) goes with the next
    // checkpoint's retention, and with a new lineage's sweep.
    await node.remote.putBytes('nodes/n1/sst/i99/000001.sst', new Uint8Array([1, 2, 3]));
    node.write(0, 10, 'd');
    const next = (await node.checkpointer.checkpoint())!.epoch;
    const keptNow = new Set<string>();
    for (const epoch of await listCheckpointEpochs(node.remote)) for (const file of decodeManifest(manifestKey(epoch), await node.remote.getBytes(manifestKey(epoch))).parts![0]!.files) keptNow.add(file.key);
    expect(keptNow.size).toBeGreaterThan(0);
    expect(new Set((await node.remote.list('nodes/')).map((object) => object.key))).toEqual(keptNow);
    expect([...keptNow].some((key) => key.includes(`files/${next}/`))).toBe(true);
    await node.remote.putBytes('nodes/n1/sst/i98/000001.sst', new Uint8Array([1, 2, 3]));
    const sweeper = openTestCheckpointer({ store: node.store, stateDir: join(node.dir, 'state'), stagingDir: join(node.dir, 'staging-2'), objectStore: node.remote, keepLast: 3 });
    await sweeper.sweep();
    expect(new Set((await node.remote.list('nodes/')).map((object) => object.key))).toEqual(keptNow);

    // A part naming a file outside its node's folder is refused.
    const newest = decodeManifest(manifestKey(kept[0]!), await node.remote.getBytes(manifestKey(kept[0]!)));
    const foreign = { ...newest, parts: [{ ...newest.parts![0]!, files: newest.parts![0]!.files.map((file) => ({ ...file, key: file.key.replace('nodes/n1/', 'nodes/n2/') })) }] };
    expect(() => decodeManifest(manifestKey(kept[0]!), encodeManifest(foreign))).toThrow(ManifestError);

    // A follower downloads the parts' files with the leader's and makes a part a directory of its own.
    const follower = new CheckpointFollower(node.remote, join(node.dir, 'follow'));
    const followed = await follower.follow(next);
    const part = follower.followed!.parts![0]!;
    expect(followed.filesDownloaded).toBe(follower.followed!.files.length + part.files.length);
    for (const file of part.files) expect(existsSync(join(node.dir, 'follow', ...file.key.split('/')))).toBe(true);
    const partDir = join(node.dir, 'part');
    await follower.materializePart(part, partDir);
    expect(readdirSync(partDir).sort()).toEqual(part.files.map((file) => file.name).sort());
    const current = part.files.find((file) => file.name === 'CURRENT')!;
    expect(readFileSync(join(partDir, 'CURRENT'), 'utf8')).toBe(`${current.key} ${'y'.repeat(round)}`);
    await expect(follower.materializePart(part, partDir)).rejects.toThrow(/exists/);
    await expect(follower.materializePart({ ...part }, join(node.dir, 'other-part'))).rejects.toThrow(/not of the followed checkpoint/);
    // A store made from the followed checkpoint takes its parts before a newer one is followed.
    node.write(0, 10, 'e');
    const after = (await node.checkpointer.checkpoint())!.epoch;
    let following: Promise<unknown> | undefined;
    const made = await follower.materializeAtLeast(next, join(node.dir, 'share-store'), 0, undefined, async (manifest, materialize) => {
      expect(manifest.epoch).toBe(next.toString());
      following = follower.follow(after);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      await materialize(manifest.parts![0]!, join(node.dir, 'share-part'));
    });
    expect(made).toBe(next);
    expect(readdirSync(join(node.dir, 'share-part')).sort()).toEqual(part.files.map((file) => file.name).sort());
    await following;
    // The next follow forgets the part files its manifest no longer names.
    expect(follower.followed!.epoch).toBe(after.toString());
    const nowNamed = new Set(follower.followed!.parts![0]!.files.map((file) => file.key));
    for (const file of part.files) expect(existsSync(join(node.dir, 'follow', ...file.key.split('/')))).toBe(nowNamed.has(file.key));
    await node.store.close();
  });
});
