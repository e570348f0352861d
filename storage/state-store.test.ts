// The StateStore contract, run against both implementations: RocksDB and in-memory.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqlError } from '../sql/errors.js';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { createMemoryStateStore } from './memory-state-store.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateStore, StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);

const people: StateTableSchema = {
  tableId: 7,
  columnTypes: [type('int4'), type('text'), type('int8')],
  primaryKey: [0],
};

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-store-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const implementations: [string, (options?: { retentionMs?: number; memoryLimitBytes?: number; dir?: string }) => StateStore][] = [
  ['rocksdb', (options = {}) => openRocksStateStore({ dir: options.dir ?? freshDirectory(), ...options })],
  ['memory', (options = {}) => createMemoryStateStore(options)],
];

const rows = (iterable: Iterable<Row>) => [...iterable];

describe.each(implementations)('StateStore on %s', (_name, open) => {
  it('reads its own uncommitted writes, commits atomically, deletes', async () => {
    const store = open();
    const table = store.table(people);
    table.insert([1, 'ann', 10n]);
    table.insert([2, 'bob', 20n]);
    expect(table.get([1])).toEqual([1, 'ann', 10n]);
    expect(store.committedEpoch).toBe(0n);
    store.commit(epochAt(1));
    expect(store.committedEpoch).toBe(epochAt(1));
    expect(table.get([2])).toEqual([2, 'bob', 20n]);
    table.delete([1, null, null]);
    expect(table.get([1])).toBeUndefined();
    expect(table.get([1], epochAt(1))).toEqual([1, 'ann', 10n]);
    store.commit(epochAt(2));
    expect(table.get([1])).toBeUndefined();
    expect(table.get([1], epochAt(1))).toEqual([1, 'ann', 10n]);
    expect(table.get([1], epochAt(2))).toBeUndefined();
    expect(table.get([3])).toBeUndefined();
    await store.close();
  });

  it('scans in key order, with bounds, reverse, limit, merging uncommitted writes', async () => {
    const store = open();
    const table = store.table(people);
    for (const id of [5, 1, 9, 3, 7]) table.insert([id, `n${id}`, BigInt(id)]);
    store.commit(epochAt(1));
    table.insert([4, 'n4', 4n]);
    table.delete([5]);
    table.insert([9, 'nine', 9n]);
    expect(rows(table.scan()).map((row) => row[0])).toEqual([1, 3, 4, 7, 9]);
    expect(rows(table.scan()).find((row) => row[0] === 9)?.[1]).toBe('nine');
    expect(rows(table.scan({ reverse: true })).map((row) => row[0])).toEqual([9, 7, 4, 3, 1]);
    expect(rows(table.scan({ start: [3], end: [8] })).map((row) => row[0])).toEqual([3, 4, 7]);
    expect(rows(table.scan({ limit: 2 })).map((row) => row[0])).toEqual([1, 3]);
    expect(rows(table.scan({ epoch: epochAt(1) })).map((row) => row[0])).toEqual([1, 3, 5, 7, 9]);
    expect(rows(table.scan({ epoch: epochAt(1), reverse: true, limit: 2 })).map((row) => row[0])).toEqual([9, 7]);
    store.commit(epochAt(2));
    expect(rows(table.scan()).map((row) => row[0])).toEqual([1, 3, 4, 7, 9]);
    expect(rows(table.scan({ epoch: epochAt(1) })).map((row) => row[1])).toEqual(['n1', 'n3', 'n5', 'n7', 'n9']);
    await store.close();
  });

  it('a scan is a snapshot: writes made while it runs do not change what it returns', async () => {
    const store = open();
    const table = store.table(people);
    for (const id of [1, 2, 3, 4]) table.insert([id, `c${id}`, 0n]);
    store.commit(epochAt(1));
    table.insert([2, 'pending', 1n]);
    const seen: Row[] = [];
    for (const row of table.scan()) {
      seen.push(row);
      // An UPDATE that rewrites each row it reads, and inserts ahead of the scan.
      table.insert([row[0], 'rewritten', 2n]);
      table.insert([(row[0] as number) + 10, 'new', 3n]);
      table.delete([3]);
    }
    expect(seen).toEqual([
      [1, 'c1', 0n],
      [2, 'pending', 1n],
      [3, 'c3', 0n],
      [4, 'c4', 0n],
    ]);
    expect(table.get([2])).toEqual([2, 'rewritten', 2n]);
    expect(table.get([3])).toBeUndefined();
    await store.close();
  });

  it('scans by a prefix of a composite key', async () => {
    const store = open();
    const schema: StateTableSchema = { tableId: 8, columnTypes: [type('text'), type('int4'), type('float8')], primaryKey: [0, 1] };
    const table = store.table(schema);
    for (const group of ['a', 'b', 'c']) for (const n of [3, 1, 2]) table.insert([group, n, n / 2]);
    store.commit(epochAt(1));
    expect(rows(table.scan({ start: ['b'], end: ['c'] }))).toEqual([
      ['b', 1, 0.5],
      ['b', 2, 1],
      ['b', 3, 1.5],
    ]);
    expect(table.get(['c', 2])).toEqual(['c', 2, 1]);
    await store.close();
  });

  it('lists every version valid between two epochs', async () => {
    const store = open();
    const table = store.table(people);
    table.insert([1, 'v1', 1n]);
    table.insert([2, 'only', 0n]);
    store.commit(epochAt(1));
    table.insert([1, 'v2', 2n]);
    store.commit(epochAt(2));
    table.delete([1]);
    store.commit(epochAt(3));
    table.insert([1, 'v4', 4n]);
    store.commit(epochAt(4));
    const all = rows(table.versions(epochAt(0), epochAt(10)) as Iterable<never>) as unknown as { row: Row; validFrom: bigint; validTo: bigint | null }[];
    expect(all).toEqual([
      { row: [1, 'v1', 1n], validFrom: epochAt(1), validTo: epochAt(2) },
      { row: [1, 'v2', 2n], validFrom: epochAt(2), validTo: epochAt(3) },
      { row: [1, 'v4', 4n], validFrom: epochAt(4), validTo: null },
      { row: [2, 'only', 0n], validFrom: epochAt(1), validTo: null },
    ]);
    const middle = [...table.versions(epochAt(2), epochAt(3))];
    expect(middle.map((version) => version.row[1])).toEqual(['v2', 'only']);
    const reversed = [...table.versions(epochAt(0), epochAt(10), { reverse: true })];
    expect(reversed.map((version) => version.row[1])).toEqual(['only', 'v1', 'v2', 'v4']);
    await store.close();
  });

  it('refuses reads outside the readable window with SQLSTATE 72000', async () => {
    const store = open({ retentionMs: 5000 });
    const table = store.table(people);
    for (let second = 1; second <= 20; second++) {
      table.insert([1, `at ${second}`, BigInt(second)]);
      store.commit(epochAt(second));
    }
    const window = store.readableWindow(people.tableId);
    expect(window.latest).toBe(epochAt(20));
    expect(window.oldest).toBe(epochAt(15));
    expect(table.get([1], epochAt(16))).toEqual([1, 'at 16', 16n]);
    expect(table.get([1], epochAt(15))).toEqual([1, 'at 15', 15n]);
    let caught: unknown;
    try {
      table.get([1], epochAt(10));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SqlError);
    expect((caught as SqlError).code).toBe('72000');
    expect((caught as SqlError).message).toContain('2026-01-01 00:00:15');
    expect((caught as SqlError).message).toContain('2026-01-01 00:00:20');
    expect(() => rows(table.scan({ epoch: epochAt(3) }))).toThrow(/outside the readable window/);
    expect(() => [...table.versions(epochAt(3), epochAt(20))]).toThrow(/outside the readable window/);
    // After the last commit: the latest committed state.
    expect(table.get([1], epochAt(100))).toEqual([1, 'at 20', 20n]);
    await store.close();
  });

  it('keeps metadata with the epoch; abort drops the open epoch', async () => {
    const store = open();
    const table = store.table(people);
    store.putMeta('catalog', new Uint8Array([1, 2, 3]));
    table.insert([1, 'a', 1n]);
    expect(store.getMeta('catalog')).toEqual(new Uint8Array([1, 2, 3]));
    store.abort();
    expect(store.getMeta('catalog')).toBeUndefined();
    expect(table.get([1])).toBeUndefined();
    store.putMeta('catalog', new Uint8Array([4]));
    store.commit(epochAt(1));
    expect(store.getMeta('catalog')).toEqual(new Uint8Array([4]));
    await store.close();
  });

  it('drops a table at the next commit', async () => {
    const store = open();
    const table = store.table(people);
    table.insert([1, 'a', 1n]);
    const other = store.table({ ...people, tableId: 9 });
    other.insert([1, 'kept', 1n]);
    store.commit(epochAt(1));
    store.dropTable(people.tableId);
    store.commit(epochAt(2));
    const again = store.table(people);
    expect(again.get([1])).toBeUndefined();
    expect(rows(again.scan())).toEqual([]);
    expect(other.get([1])).toEqual([1, 'kept', 1n]);
    await store.close();
  });

  it('undoes a drop on abort, keeping the table object and its history', async () => {
    const store = open();
    const table = store.table(people);
    table.insert([1, 'a', 1n]);
    store.commit(epochAt(1));
    table.insert([1, 'b', 2n]);
    store.commit(epochAt(2));
    store.dropTable(people.tableId);
    const recreated = store.table({ ...people, columnTypes: [type('int4'), type('text'), type('int8')] });
    recreated.insert([9, 'new', 9n]);
    store.abort();
    expect(store.table(people)).toBe(table);
    expect(table.get([1])).toEqual([1, 'b', 2n]);
    expect(table.get([1], epochAt(1))).toEqual([1, 'a', 1n]);
    expect(store.readableWindow(people.tableId).oldest).toBe(epochAt(1));
    table.insert([2, 'c', 3n]);
    store.commit(epochAt(3));
    expect(rows(table.scan()).map((row) => row[0])).toEqual([1, 2]);
    await store.close();
  });

  it('accepts a new schema for a table (ALTER), rejects a different key', async () => {
    const store = open();
    const table = store.table(people);
    table.insert([1, 'a', 1n]);
    store.commit(epochAt(1));
    const widened = store.table({ ...people, columnTypes: [...people.columnTypes, type('bool')], retentionMs: 1000 });
    expect(widened).toBe(table);
    expect(widened.schema.columnTypes.length).toBe(4);
    widened.insert([2, 'b', 2n, true]);
    store.commit(epochAt(2));
    expect(rows(widened.scan())).toEqual([
      [1, 'a', 1n],
      [2, 'b', 2n, true],
    ]);
    expect(() => store.table({ ...people, primaryKey: [1] })).toThrow(/different primary key/);
    await store.close();
  });

  it('keeps working with state far larger than the memory limit', async () => {
    const store = open({ memoryLimitBytes: 64 * 1024 });
    const table = store.table(people);
    const count = 5000;
    for (let id = 0; id < count; id++) table.insert([id, 'x'.repeat(100) + id, BigInt(id)]);
    store.commit(epochAt(1));
    for (let id = 0; id < count; id += 7) expect(table.get([id])?.[1]).toBe('x'.repeat(100) + id);
    for (let id = 0; id < count; id += 3) table.insert([id, 'y' + id, BigInt(-id)]);
    store.commit(epochAt(2));
    let seen = 0;
    for (const row of table.scan()) {
      const id = row[0] as number;
      expect(row[1]).toBe(id % 3 === 0 ? 'y' + id : 'x'.repeat(100) + id);
      seen++;
    }
    expect(seen).toBe(count);
    const memory = (store as unknown as { memoryStats(): { usedBytes: number; limitBytes: number; evictions: number } }).memoryStats();
    expect(memory.usedBytes).toBeLessThanOrEqual(memory.limitBytes);
    expect(memory.evictions).toBeGreaterThan(0);
    await store.close();
  });

  it('reports approximate bytes and keys per table', async () => {
    const store = open();
    const table = store.table(people);
    const other = store.table({ ...people, tableId: 9 });
    expect(table.stats()).toEqual({ bytes: 0, keys: 0 });
    // Incompressible values, measured in SST files: RocksDB's estimate of a memtable range samples
    // its skip list (random node heights), so before a flush the byte count varies from run to run.
    for (let id = 0; id < 300; id++) table.insert([id, randomBytes(64).toString('base64'), BigInt(id)]);
    other.insert([1, 'y', 1n]);
    store.commit(epochAt(1));
    await (store as { compact?: () => Promise<void> }).compact?.();
    const stats = table.stats();
    expect(stats.bytes).toBeGreaterThan(300 * 50);
    expect(stats.keys).toBeGreaterThan(100);
    expect(stats.keys).toBeLessThan(1000);
    expect(other.stats().bytes).toBeLessThan(stats.bytes);
    await store.close();
  });

  it('serves repeated reads of committed rows from the memory tier', async () => {
    const store = open({ memoryLimitBytes: 1 << 20 });
    const table = store.table(people);
    table.insert([1, 'a', 1n]);
    store.commit(epochAt(1));
    const stats = () => (store as unknown as { memoryStats(): { hits: number; misses: number; cachedRows: number } }).memoryStats();
    // The commit wrote its rows through to the cache.
    expect(stats().cachedRows).toBe(1);
    expect(table.get([1])).toEqual([1, 'a', 1n]);
    // An absent key below the table's largest (above it, no read at all: key-bound.test.ts).
    expect(table.get([0])).toBeUndefined();
    expect(table.get([0])).toBeUndefined();
    expect(stats().hits).toBe(2);
    expect(stats().misses).toBe(1);
    // AS OF reads go to storage, not the cache.
    expect(table.get([1], epochAt(1))).toEqual([1, 'a', 1n]);
    expect(stats().hits + stats().misses).toBe(3);
    await store.close();
  });

  it('scans one key group by prefix: committed and buffered rows, text and NULL groups', async () => {
    const store = open();
    const groups = store.table({ tableId: 11, columnTypes: [type('text'), type('int4'), type('int8')], primaryKey: [0, 1] });
    const names = ['a', 'ab', 'b', null];
    for (const name of names) for (let id = 0; id < 5; id++) groups.insert([name, id, BigInt(id)]);
    store.commit(epochAt(1));
    groups.insert(['a', 9, 9n]);
    groups.delete(['a', 0, null]);
    groups.insert(['ab', 9, 9n]);
    expect(rows(groups.scan({ prefix: ['a'] })).map((row) => row[1])).toEqual([1, 2, 3, 4, 9]);
    expect(rows(groups.scan({ prefix: ['ab'] })).map((row) => row[1])).toEqual([0, 1, 2, 3, 4, 9]);
    expect(rows(groups.scan({ prefix: [null] })).map((row) => row[0])).toEqual([null, null, null, null, null]);
    expect(rows(groups.scan({ prefix: ['a', 3] }))).toEqual([['a', 3, 3n]]);
    expect(rows(groups.scan({ prefix: ['c'] }))).toEqual([]);
    expect(rows(groups.scan({ prefix: ['a'], epoch: epochAt(1) })).map((row) => row[1])).toEqual([0, 1, 2, 3, 4]);
    expect(rows(groups.scan({ prefix: ['b'], reverse: true })).map((row) => row[1])).toEqual([4, 3, 2, 1, 0]);
    await store.close();
  });

  it('a table dropped and created again in one epoch starts empty, and keeps its rows once committed', async () => {
    const store = open();
    const schema: StateTableSchema = { tableId: 12, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
    store.table(schema).insert([1, 'old']);
    store.commit(epochAt(1));
    store.dropTable(12);
    const again = store.table(schema);
    expect(again.get([1])).toBeUndefined();
    expect(rows(again.scan())).toEqual([]);
    again.insert([2, 'new']);
    expect(rows(again.scan())).toEqual([[2, 'new']]);
    expect(again.get([2])).toEqual([2, 'new']);
    expect(again.get([1])).toBeUndefined();
    store.commit(epochAt(2));
    expect(again.get([2])).toEqual([2, 'new']);
    expect(again.get([1])).toBeUndefined();
    again.insert([3, 'third']);
    store.commit(epochAt(3));
    expect(rows(again.scan()).map((row) => row[0])).toEqual([2, 3]);
    await store.close();
  });

  it('rejects a commit epoch that does not advance', async () => {
    const store = open();
    store.commit(epochAt(2));
    expect(() => store.commit(epochAt(2))).toThrow(/greater/);
    await store.close();
  });
});

describe('RocksDB state store durability', () => {
  it('reopens with every committed epoch, metadata and window', async () => {
    const dir = freshDirectory();
    const store = openRocksStateStore({ dir, retentionMs: 3000 });
    const table = store.table(people);
    for (let second = 1; second <= 6; second++) {
      table.insert([second, `row ${second}`, BigInt(second)]);
      store.putMeta('offsets', new Uint8Array([second]));
      store.commit(epochAt(second));
    }
    table.insert([99, 'uncommitted', 0n]);
    await store.close();
    const reopened = openRocksStateStore({ dir, retentionMs: 3000 });
    expect(reopened.committedEpoch).toBe(epochAt(6));
    expect(reopened.getMeta('offsets')).toEqual(new Uint8Array([6]));
    expect(reopened.readableWindow(people.tableId)).toEqual({ oldest: epochAt(3), latest: epochAt(6) });
    const again = reopened.table(people);
    expect(rows(again.scan()).map((row) => row[0])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows(again.scan({ epoch: epochAt(4) })).map((row) => row[0])).toEqual([1, 2, 3, 4]);
    expect(again.get([99])).toBeUndefined();
    await reopened.close();
  });
});

describe('RocksDB state store checkpoints', () => {
  it('takes a checkpoint whose epoch is exactly what a store opened on it reads, while commits go on', async () => {
    const dir = freshDirectory();
    const store = openRocksStateStore({ dir: join(dir, 'live') });
    const table = store.table(people);
    for (let second = 1; second <= 5; second++) {
      table.insert([second, `row ${second}`, BigInt(second)]);
      store.commit(epochAt(second));
    }
    const pending = store.checkpoint(join(dir, 'checkpoint'));
    // Commits continue while the checkpoint is taken on a worker thread.
    for (let second = 6; second <= 8; second++) {
      table.insert([second, `row ${second}`, BigInt(second)]);
      store.commit(epochAt(second));
    }
    const checkpoint = await pending;
    expect(checkpoint.epoch).toBeGreaterThanOrEqual(epochAt(5));
    expect(checkpoint.epoch).toBeLessThanOrEqual(epochAt(8));
    expect(checkpoint.files.length).toBeGreaterThan(0);
    expect(checkpoint.files.every((file) => file.sizeBytes > 0 && file.name.endsWith('.sst'))).toBe(true);
    await store.close();
    const restored = openRocksStateStore({ dir: join(dir, 'checkpoint') });
    expect(restored.committedEpoch).toBe(checkpoint.epoch);
    const count = Number((checkpoint.epoch - epochAt(0)) / (epochAt(1) - epochAt(0)));
    expect(rows(restored.table(people).scan()).map((row) => row[0])).toEqual(Array.from({ length: count }, (_unused, index) => index + 1));
    await restored.close();
    const again = openRocksStateStore({ dir: join(dir, 'live') });
    await expect(again.checkpoint(join(dir, 'checkpoint'))).rejects.toThrow(SqlError);
    await again.close();
  });
});
