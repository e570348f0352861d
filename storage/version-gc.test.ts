// Version garbage collection: history older than a table's retention is dropped by the compaction
// filter, the disk space comes back, and every read inside the readable window is unchanged.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { openRocksStateStore } from './rocks-state-store.js';
import { epochSuffix, tableLowerBound, tableUpperBound } from './mvcc-key.js';
import { forEachPacked } from './rocksdb.js';

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function sstBytes(directory: string): number {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.sst') || name.endsWith('.blob'))
    .reduce((sum, name) => sum + statSync(join(directory, name)).size, 0);
}

describe('version GC by the compaction filter', () => {
  it('gives disk space back after compaction and keeps the readable window intact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-gc-'));
    directories.push(dir);
    const T0 = Date.UTC(2026, 0, 1);
    const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
    const keys = 200;
    const versions = 30;
    const store = openRocksStateStore({ dir, retentionMs: 2000 });
    const long = store.table({ tableId: 1, columnTypes: [type('int4'), type('text')], primaryKey: [0], retentionMs: 3_600_000 });
    const short = store.table({ tableId: 2, columnTypes: [type('int4'), type('text')], primaryKey: [0] });
    const payload = (key: number, second: number) => `${key}@${second}:${randomBytes(400).toString('base64')}`;
    const expected = new Map<string, string>();
    for (let second = 1; second <= versions; second++) {
      for (let key = 0; key < keys; key++) {
        const value = payload(key, second);
        short.insert([key, value]);
        expected.set(`${key}@${second}`, value);
        if (second === 1) long.insert([key, value]);
      }
      store.commit(epochAt(second));
    }
    await store.database.flush();
    // Point reads before the compaction: their cached iterator must not pin the replaced files.
    for (let key = 0; key < keys; key += 50) short.get([key], epochAt(versions));
    const before = sstBytes(dir);
    // 30 versions of 200 keys of ~560 bytes each, compressed a little: several megabytes.
    expect(before).toBeGreaterThan(keys * versions * 400);
    await store.compact();
    const after = sstBytes(dir);
    if (process.env.OXBOW_PRINT_GC) console.log(JSON.stringify({ before, after }));
    // The window is [28 s, 30 s]: versions 28, 29 and 30 remain of 30 (the one at the watermark
    // shadows everything older). 3/30 of the bytes, plus table 1's single versions.
    expect(after).toBeLessThan(before * 0.2);
    const window = store.readableWindow(2);
    expect(window).toEqual({ oldest: epochAt(28), latest: epochAt(30) });
    for (let key = 0; key < keys; key += 13) {
      for (const second of [28, 29, 30]) expect(short.get([key], epochAt(second))).toEqual([key, expected.get(`${key}@${second}`)]);
      expect(() => short.get([key], epochAt(27))).toThrow(expect.objectContaining({ code: '72000' }));
      // The table with a one-hour retention keeps its history.
      expect(long.get([key], epochAt(1))).toEqual([key, expected.get(`${key}@1`)]);
    }
    const history = [...short.versions(epochAt(28), epochAt(30), { start: [5], end: [6] })];
    expect(history.map((version) => version.validFrom)).toEqual([epochAt(28), epochAt(29), epochAt(30)]);
    await store.close();
  });

  it('keeps every version a read at the cap or later needs, whatever the tables set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-gc-'));
    directories.push(dir);
    const T0 = Date.UTC(2026, 0, 1);
    const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
    const store = openRocksStateStore({ dir, retentionMs: 1000 });
    const table = store.table({ tableId: 3, columnTypes: [type('int4'), type('text')], primaryKey: [0] });
    // Key k is written at every second but skips second 10 when k is odd: a read at 10 must find
    // the version of 9 for those, which a watermark of 29 would drop.
    store.database.capRetentionWatermarks(epochAt(10));
    for (let second = 1; second <= 30; second++) {
      for (let key = 0; key < 100; key++) if (second !== 10 || key % 2 === 0) table.insert([key, `${key}@${second}`]);
      store.commit(epochAt(second));
    }
    await store.database.flush();
    await store.compact();
    // Table 3's entries: every version, or (with `at`) the newest at or before it of each key,
    // read from RocksDB directly (the store's own reads refuse epochs below its watermark).
    const raw = (at?: number): number => {
      let entries = 0;
      const lower = tableLowerBound(3);
      const iterator = store.database.iterator({ lowerBound: lower, upperBound: tableUpperBound(3), ...(at === undefined ? {} : { epochSuffix: epochSuffix(epochAt(at)) }) });
      iterator.seek(lower);
      for (let packed = iterator.nextPacked(); packed !== null; packed = iterator.nextPacked()) forEachPacked(packed, () => entries++);
      iterator.close();
      return entries;
    };
    // A read at 10 finds every key (the odd ones' version of 9), and so does one at every later second.
    for (const second of [10, 11, 20, 30]) expect(raw(second)).toBe(100);
    // Versions 10..30 of the even keys and 9, 11..30 of the odd ones: 21 each.
    expect(raw()).toBe(100 * 21);
    store.database.capRetentionWatermarks(null);
    await store.compact();
    // The tables' own watermark (29 s) rules again: versions 29 and 30 remain.
    expect(raw()).toBe(100 * 2);
    await store.close();
  });

  it('drops deleted keys entirely (tombstone and history) once a full compaction sees every file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-gc-'));
    directories.push(dir);
    const T0 = Date.UTC(2026, 0, 1);
    const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
    const store = openRocksStateStore({ dir, retentionMs: 2000 });
    const table = store.table({ tableId: 4, columnTypes: [type('int4'), type('text')], primaryKey: [0] });
    for (let key = 0; key < 500; key++) table.insert([key, `value ${key}`]);
    store.commit(epochAt(1));
    for (let key = 0; key < 500; key++) table.insert([key, `second ${key}`]);
    store.commit(epochAt(2));
    for (let key = 0; key < 500; key += 2) table.delete([key]);
    store.commit(epochAt(3));
    for (let second = 4; second <= 8; second++) store.commit(epochAt(second));
    await store.compact();
    await store.compact();
    const entries = store.database.liveFiles().reduce((sum, file) => sum + file.entries, 0);
    // Left: the 250 kept keys' newest versions, and the store's own records; no tombstones.
    expect(entries).toBeLessThan(260);
    expect(entries).toBeGreaterThanOrEqual(250);
    expect([...table.scan()].map((row) => row[0])).toEqual(Array.from({ length: 250 }, (_unused, index) => index * 2 + 1));
    expect(table.get([0], epochAt(6))).toBeUndefined();
    expect(table.get([1], epochAt(6))).toEqual([1, 'second 1']);
    expect(() => table.get([0], epochAt(5))).toThrow(expect.objectContaining({ code: '72000' }));
    await store.close();
  });
});
