// Blob files (values of at least 256 bytes live in RocksDB blob files, storage/native/src/options.h)
// in checkpoints: uploaded once under sst/<incarnation>/ like SST files, reused by later
// checkpoints while RocksDB keeps them, restored and verified (a damaged blob file makes the
// restore fall back), deleted remotely once no kept manifest names them; and version GC with
// blob files: shadowed versions whose values are in blob files are dropped (FilterBlobByKey) and a
// full compaction gives their space back. Expected rows come from a Map kept beside the store.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import { restoreFromObjectStore } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import type { StateTableSchema } from '../../storage/state-table.js';
import { committedRows } from './support/committed-rows.js';
import { openTestCheckpointer } from './support/test-checkpointer.js';

const schema: StateTableSchema = { tableId: 21000, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const work = mkdtempSync(join(tmpdir(), 'oxbow-blob-checkpoint-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, index) => from + index);
/** About 600 bytes of incompressible text: above the 256-byte blob threshold. */
const bigValue = (tag: string, key: number): string => `${tag}-${key}-${randomBytes(450).toString('base64')}`;
const blobNames = (dir: string): string[] => readdirSync(dir).filter((name) => name.endsWith('.blob'));
const bytesOf = (dir: string, suffixes: string[]): number =>
  readdirSync(dir)
    .filter((name) => suffixes.some((suffix) => name.endsWith(suffix)))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);

function sortedRows(model: Map<number, string>): Row[] {
  return [...model.entries()].sort((left, right) => left[0] - right[0]).map(([key, value]) => [key, value]);
}

function rowsOf(stateDir: string): Promise<{ epoch: Epoch; rows: Row[] }> {
  return committedRows(stateDir, schema);
}

describe('blob files in checkpoints', () => {
  it('are uploaded once, reused by later checkpoints, restored and verified, and collected once unnamed', async () => {
    const dir = mkdtempSync(join(work, 'data-'));
    const stateDir = join(dir, 'state');
    const store = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0, rocksdb: { writeBufferBytes: 1 << 20 } });
    const table = store.table(schema);
    const remote = new FileObjectStore(mkdtempSync(join(work, 'remote-')));
    const checkpointer = openTestCheckpointer({ store, stateDir, stagingDir: join(dir, 'staging'), objectStore: remote, keepLast: 2 });
    const model = new Map<number, string>();
    let clockMs = Date.now();
    const write = (keys: number[], tag: string): Epoch => {
      for (const key of keys) {
        const value = bigValue(tag, key);
        table.insert([key, value]);
        model.set(key, value);
      }
      const epoch = epochFromMillis((clockMs += 1000));
      store.commit(epoch);
      return epoch;
    };
    const namesOf = async (epoch: Epoch): Promise<{ name: string; key: string }[]> => {
      const body = JSON.parse(Buffer.from(await remote.getBytes(`manifests/${epoch.toString().padStart(20, '0')}.json`)).toString('utf8')) as {
        manifest: { files: { name: string; key: string }[] };
      };
      return body.manifest.files;
    };

    write(range(0, 4000), 'a');
    const first = (await checkpointer.checkpoint())!;
    const firstFiles = await namesOf(first.epoch);
    const firstBlobs = firstFiles.filter((file) => file.name.endsWith('.blob'));
    // The values went to blob files, and those are shared data files, not per-checkpoint copies.
    expect(firstBlobs.length).toBeGreaterThan(0);
    for (const file of firstBlobs) expect(file.key).toBe(`sst/${checkpointer.incarnation}/${file.name}`);
    const blobBytes = bytesOf(stateDir, ['.blob']);
    expect(blobBytes).toBeGreaterThan(4000 * 450);
    expect(blobBytes).toBeGreaterThan(bytesOf(stateDir, ['.sst']) * 5);

    // 1% of the keys change: the new values go to a new blob file; the old blob files are named
    // again by their remote keys, not uploaded again.
    const secondEpoch = write(range(0, 40), 'b');
    const second = (await checkpointer.checkpoint())!;
    expect(second.epoch).toBe(secondEpoch);
    const secondFiles = await namesOf(second.epoch);
    const secondBlobs = secondFiles.filter((file) => file.name.endsWith('.blob'));
    for (const file of firstBlobs) expect(secondBlobs).toContainEqual(expect.objectContaining({ name: file.name, key: file.key }));
    expect(secondBlobs.length).toBeGreaterThan(firstBlobs.length);
    expect(second.bytesUploaded).toBeLessThan(second.bytesReferenced * 0.1);

    // A restore brings the blob files back, verified, and the rows are exactly the model's.
    const restoredDir = join(dir, 'restored');
    const restored = await restoreFromObjectStore({ objectStore: remote, stateDir: restoredDir });
    expect(restored.manifest!.epoch).toBe(second.epoch.toString());
    expect(blobNames(restoredDir).sort()).toEqual(secondBlobs.map((file) => file.name).sort());
    const back = await rowsOf(restoredDir);
    expect(back.epoch).toBe(second.epoch);
    expect(back.rows).toEqual(sortedRows(model));

    // A corrupted blob file only the newest checkpoint names: the restore refuses that checkpoint
    // (SHA-256) and falls back to the previous one, whose rows are the model before the change.
    const newest = secondBlobs.find((file) => !firstBlobs.some((old) => old.name === file.name))!;
    const bytes = Buffer.from(await remote.getBytes(newest.key));
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    await remote.putBytes(newest.key, bytes);
    const fallbackDir = join(dir, 'fallback');
    const fallback = await restoreFromObjectStore({ objectStore: remote, stateDir: fallbackDir });
    expect(fallback.manifest!.epoch).toBe(first.epoch.toString());
    expect(fallback.skipped).toHaveLength(1);
    expect(fallback.skipped[0]).toMatch(/SHA-256/);
    const before = new Map(model);
    for (const key of range(0, 40)) before.delete(key);
    const fallbackRows = (await rowsOf(fallbackDir)).rows.filter((row) => (row[0] as number) >= 40);
    expect(fallbackRows).toEqual(sortedRows(before));
    await remote.putBytes(newest.key, Buffer.from(bytes.map((byte, index) => (index === Math.floor(bytes.length / 2) ? byte ^ 0xff : byte))));

    // A full compaction rewrites every blob file (garbage collection of all of them); after two
    // more checkpoints (keepLast 2) no kept manifest names the first blob files, so they are gone
    // remotely, and every remote data file is named by a kept manifest.
    await store.compact();
    write(range(40, 80), 'c');
    await checkpointer.checkpoint();
    write(range(80, 120), 'd');
    const last = (await checkpointer.checkpoint())!;
    const remoteKeys = new Set((await remote.list('sst/')).map((object) => object.key));
    for (const file of firstBlobs) expect(remoteKeys.has(file.key)).toBe(false);
    const kept = new Set<string>();
    for (const object of await remote.list('manifests/')) {
      for (const file of await namesOf(BigInt(object.key.slice('manifests/'.length, -'.json'.length)))) kept.add(file.key);
    }
    for (const key of remoteKeys) expect(kept.has(key)).toBe(true);
    const lastDir = join(dir, 'last');
    await restoreFromObjectStore({ objectStore: remote, stateDir: lastDir });
    expect(await rowsOf(lastDir)).toEqual({ epoch: last.epoch, rows: sortedRows(model) });
    await store.close();
    remote.close();
  });
});

describe('version GC with values in blob files', () => {
  it('drops shadowed versions by key alone and a full compaction gives their blob space back; the window reads the same', async () => {
    const dir = mkdtempSync(join(work, 'gc-'));
    const T0 = Date.UTC(2026, 0, 1);
    const epochAt = (second: number): Epoch => epochFromMillis(T0 + second * 1000);
    const store = openRocksStateStore({ dir, retentionMs: 2000, memoryLimitBytes: 0, rocksdb: { writeBufferBytes: 1 << 20 } });
    const table = store.table(schema);
    const keys = 300;
    const versions = 12;
    const expected = new Map<string, string>();
    for (let second = 1; second <= versions; second++) {
      for (let key = 0; key < keys; key++) {
        const value = bigValue(`v${second}`, key);
        table.insert([key, value]);
        expected.set(`${key}@${second}`, value);
      }
      store.commit(epochAt(second));
    }
    await store.database.flush();
    const before = bytesOf(dir, ['.blob', '.sst']);
    expect(bytesOf(dir, ['.blob'])).toBeGreaterThan(keys * versions * 450);
    await store.compact();
    const after = bytesOf(dir, ['.blob', '.sst']);
    // The window is [10 s, 12 s]: 3 of 12 versions stay (the one at the watermark shadows the older).
    expect(after).toBeLessThan(before * (4 / versions));
    expect(bytesOf(dir, ['.blob'])).toBeGreaterThan(keys * 3 * 450);
    expect(store.readableWindow(schema.tableId)).toEqual({ oldest: epochAt(10), latest: epochAt(12) });
    for (let key = 0; key < keys; key += 7) {
      for (const second of [10, 11, 12]) expect(table.get([key], epochAt(second))).toEqual([key, expected.get(`${key}@${second}`)]);
      expect(() => table.get([key], epochAt(9))).toThrow(expect.objectContaining({ code: '72000' }));
    }
    const history = [...table.versions(epochAt(10), epochAt(12), { start: [5], end: [6] })];
    expect(history.map((version) => version.validFrom)).toEqual([epochAt(10), epochAt(11), epochAt(12)]);
    await store.close();
  });
});
