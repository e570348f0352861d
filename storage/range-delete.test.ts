// StateTable.deleteBelow: a range delete per closed window, versioned like every write. Reads of
// the latest state and AS OF the cleaning epoch or later see none of the rows below the end; AS OF
// an earlier epoch still reads them until the table's GC watermark passes the cleaning, when one
// DeleteRange removes them from the backend. Run against both stores; restarts on RocksDB.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { createMemoryStateStore } from './memory-state-store.js';
import type { MvccStateStore } from './mvcc-state-store.js';
import { tableLowerBound, tableUpperBound } from './mvcc-key.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);

/** Windowed state: keyed by (window start, id), the window first. */
const windows: StateTableSchema = {
  tableId: 11,
  columnTypes: [type('int8'), type('int4'), type('int8')],
  primaryKey: [0, 1],
};
const other: StateTableSchema = { tableId: 12, columnTypes: [type('int4')], primaryKey: [0] };

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-range-delete-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

/** Both stores compact (version GC): RocksDB through its compaction filter, the memory backend by the same rule. */
type Open = (options: { retentionMs: number; dir?: string }) => MvccStateStore & { compact(): Promise<void> };
const implementations: [string, Open][] = [
  ['rocksdb', (options) => openRocksStateStore({ dir: options.dir ?? freshDirectory(), retentionMs: options.retentionMs }) as unknown as ReturnType<Open>],
  ['memory', (options) => createMemoryStateStore({ retentionMs: options.retentionMs }) as unknown as ReturnType<Open>],
];

const keys = (rows: Iterable<Row>) => [...rows].map((row) => `${row[0]}/${row[1]}`);

/** Every entry (any version, tombstones too) the backend holds for a table. */
function backendEntries(store: MvccStateStore, tableId: number): number {
  const iterator = store.backend.scan({ lowerBound: tableLowerBound(tableId), upperBound: tableUpperBound(tableId) });
  let count = 0;
  try {
    for (let packed = iterator.nextPacked(256); packed !== null; packed = iterator.nextPacked(256)) {
      for (let offset = 0; offset < packed.length; count++) {
        const keyLength = packed.readUInt32LE(offset);
        offset += 4 + keyLength;
        offset += 4 + packed.readUInt32LE(offset);
      }
    }
  } finally {
    iterator.close();
  }
  return count;
}

/** Windows 0, 10, 20, 30, each with ids 1..3 (value window + id), committed at second 1. */
function fill(store: MvccStateStore): void {
  const table = store.table(windows);
  for (const window of [0n, 10n, 20n, 30n]) for (const id of [1, 2, 3]) table.insert([window, id, window + BigInt(id)]);
  store.commit(epochAt(1));
}

describe.each(implementations)('deleteBelow on %s', (_name, open) => {
  it('hides the rows below its end from its epoch on; AS OF an earlier epoch still reads them', async () => {
    const store = open({ retentionMs: 3_600_000 });
    fill(store);
    const table = store.table(windows);
    table.insert([20n, 4, 99n]);
    table.insert([10n, 4, 99n]); // written and cleaned in the same epoch: gone with the range
    table.deleteBelow!([20n]);
    // The open epoch: gone at once, for point reads, scans (forward, reverse, bounded, by prefix).
    expect(table.get([0n, 1])).toBeUndefined();
    expect(table.get([10n, 4])).toBeUndefined();
    expect(table.get([20n, 1])).toEqual([20n, 1, 21n]);
    expect(keys(table.scan())).toEqual(['20/1', '20/2', '20/3', '20/4', '30/1', '30/2', '30/3']);
    expect(keys(table.scan({ reverse: true, limit: 2 }))).toEqual(['30/3', '30/2']);
    expect(keys(table.scan({ prefix: [10n] }))).toEqual([]);
    expect(keys(table.scan({ start: [0n], end: [20n] }))).toEqual([]);
    expect(keys(table.scan({ start: [10n], end: [30n] }))).toEqual(['20/1', '20/2', '20/3', '20/4']);
    store.commit(epochAt(2));
    expect(table.get([10n, 2])).toBeUndefined();
    expect(table.get([10n, 2], epochAt(1))).toEqual([10n, 2, 12n]);
    expect(table.get([10n, 2], epochAt(2))).toBeUndefined();
    expect(keys(table.scan({ epoch: epochAt(1) }))).toEqual(['0/1', '0/2', '0/3', '10/1', '10/2', '10/3', '20/1', '20/2', '20/3', '30/1', '30/2', '30/3']);
    expect(keys(table.scan({ epoch: epochAt(2) }))).toEqual(['20/1', '20/2', '20/3', '20/4', '30/1', '30/2', '30/3']);
    expect(keys(table.scan({ epoch: epochAt(2), prefix: [0n] }))).toEqual([]);
    // History: the cleaned rows were valid until the cleaning's epoch.
    const history = [...table.versions(epochAt(1), epochAt(2), { prefix: [0n] })];
    expect(history.map((version) => [version.row[1], version.validFrom, version.validTo])).toEqual([
      [1, epochAt(1), epochAt(2)],
      [2, epochAt(1), epochAt(2)],
      [3, epochAt(1), epochAt(2)],
    ]);
    expect([...table.versions(epochAt(2), epochAt(2), { prefix: [0n] })]).toEqual([]);
    // A later, larger range; a smaller one deletes nothing more.
    table.deleteBelow!([30n]);
    table.deleteBelow!([10n]);
    store.commit(epochAt(3));
    expect(keys(table.scan())).toEqual(['30/1', '30/2', '30/3']);
    expect(keys(table.scan({ epoch: epochAt(2) }))).toEqual(['20/1', '20/2', '20/3', '20/4', '30/1', '30/2', '30/3']);
    // Nothing is written below a range delete again.
    expect(() => table.insert([20n, 9, 0n])).toThrow(/below its range delete/);
    table.insert([30n, 9, 0n]);
    store.commit(epochAt(4));
    expect(keys(table.scan())).toEqual(['30/1', '30/2', '30/3', '30/9']);
    await store.close();
  });

  it('keeps no cache entry for the deleted keys, and an abort undoes the range delete', async () => {
    const store = open({ retentionMs: 3_600_000 });
    fill(store);
    const table = store.table(windows);
    for (const window of [0n, 10n, 20n, 30n]) for (const id of [1, 2, 3]) table.get([window, id]);
    const cached = store.memoryStats().cachedRows;
    table.deleteBelow!([20n]);
    expect(store.memoryStats().cachedRows).toBe(cached - 6);
    store.abort();
    expect(table.get([10n, 1])).toEqual([10n, 1, 11n]);
    expect(keys(table.scan())).toHaveLength(12);
    table.insert([0n, 5, 5n]);
    store.commit(epochAt(2));
    expect(keys(table.scan({ prefix: [0n] }))).toEqual(['0/1', '0/2', '0/3', '0/5']);
    await store.close();
  });

  it('through sealed epochs: commitAsync layers below a later range delete stay hidden', async () => {
    const store = open({ retentionMs: 3_600_000 });
    fill(store);
    const table = store.table(windows);
    table.insert([10n, 7, 7n]);
    const first = store.commitAsync(epochAt(2));
    table.deleteBelow!([20n]);
    expect(table.get([10n, 7])).toBeUndefined();
    expect(keys(table.scan({ end: [30n] }))).toEqual(['20/1', '20/2', '20/3']);
    const second = store.commitAsync(epochAt(3));
    expect(table.get([10n, 7])).toBeUndefined();
    await first;
    await second;
    expect(table.get([10n, 7])).toBeUndefined();
    expect(table.get([10n, 7], epochAt(2))).toEqual([10n, 7, 7n]);
    expect(keys(table.scan({ epoch: epochAt(3) }))).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3']);
    await store.close();
  });

  it('made again after an abort that followed a sealed epoch settling, through GC and compaction', async () => {
    const store = open({ retentionMs: 4000 });
    fill(store);
    const table = store.table(windows);
    table.insert([30n, 4, 34n]);
    const sealed = store.commitAsync(epochAt(2));
    // Open while the sealed epoch settles, then aborted: the rows are back in the latest state.
    table.deleteBelow!([20n]);
    await sealed;
    store.abort();
    expect(table.get([10n, 1])).toEqual([10n, 1, 11n]);
    // The same range deleted again deletes it: no row below its end, no write below it.
    table.deleteBelow!([20n]);
    expect(table.get([10n, 1])).toBeUndefined();
    expect(() => table.insert([10n, 5, 15n])).toThrow(/below its range delete/);
    store.commit(epochAt(3));
    await store.compact();
    expect(table.get([10n, 1])).toBeUndefined();
    expect(table.get([10n, 1], epochAt(2))).toEqual([10n, 1, 11n]);
    expect(table.get([10n, 1], epochAt(3))).toBeUndefined();
    expect(keys(table.scan({ epoch: epochAt(3) }))).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3', '30/4']);
    // Past the retention: the DeleteRange applied, the rows above the end kept, nothing below back.
    store.commit(epochAt(8));
    store.commit(epochAt(9));
    await store.compact();
    expect(backendEntries(store, windows.tableId)).toBe(7);
    expect(table.get([10n, 1], epochAt(8))).toBeUndefined();
    expect(keys(table.scan())).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3', '30/4']);
    await store.close();
  });

  it('leaves the backend once the GC watermark passes it, with the window refusing older reads', async () => {
    const store = open({ retentionMs: 10_000 });
    fill(store);
    const table = store.table(windows);
    const neighbour = store.table(other);
    neighbour.insert([1]);
    table.deleteBelow!([20n]);
    store.commit(epochAt(2));
    expect(backendEntries(store, windows.tableId)).toBe(12);
    // The watermark reaches the cleaning (second 2) at the commit of second 12; the commit after
    // that (the durable window past it) applies the DeleteRange.
    table.insert([30n, 4, 34n]);
    store.commit(epochAt(12));
    expect(table.get([0n, 1], epochAt(2))).toBeUndefined();
    store.commit(epochAt(13));
    expect(backendEntries(store, windows.tableId)).toBe(7);
    expect(() => table.get([0n, 1], epochAt(1))).toThrow(/outside the readable window/);
    expect(keys(table.scan())).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3', '30/4']);
    expect(keys(table.scan({ epoch: epochAt(12) }))).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3', '30/4']);
    expect(neighbour.get([1])).toEqual([1]);
    await store.close();
  });

  it('drops the range deletes with their table', async () => {
    const store = open({ retentionMs: 3_600_000 });
    fill(store);
    store.table(windows).deleteBelow!([20n]);
    store.commit(epochAt(2));
    store.dropTable(windows.tableId);
    store.commit(epochAt(3));
    const again = store.table(windows);
    again.insert([0n, 1, 1n]);
    store.commit(epochAt(4));
    expect(keys(again.scan())).toEqual(['0/1']);
    expect(keys(again.scan({ epoch: epochAt(4) }))).toEqual(['0/1']);
    await store.close();
  });
});

describe('deleteBelow across a restart (RocksDB)', () => {
  it('keeps the range delete durable with its epoch, and its rows for AS OF until GC', async () => {
    const dir = freshDirectory();
    let store = openRocksStateStore({ dir, retentionMs: 10_000 }) as unknown as MvccStateStore;
    fill(store);
    store.table(windows).deleteBelow!([20n]);
    await store.commitAsync(epochAt(2));
    await store.close();

    store = openRocksStateStore({ dir, retentionMs: 10_000 }) as unknown as MvccStateStore;
    let table = store.table(windows);
    expect(table.get([10n, 1])).toBeUndefined();
    expect(table.get([10n, 1], epochAt(1))).toEqual([10n, 1, 11n]);
    expect(keys(table.scan())).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3']);
    expect(keys(table.scan({ epoch: epochAt(1), end: [20n] }))).toEqual(['0/1', '0/2', '0/3', '10/1', '10/2', '10/3']);
    expect(() => table.insert([10n, 9, 0n])).toThrow(/below its range delete/);
    store.commit(epochAt(12));
    store.commit(epochAt(13));
    expect(backendEntries(store, windows.tableId)).toBe(6);
    await store.close();

    store = openRocksStateStore({ dir, retentionMs: 10_000 }) as unknown as MvccStateStore;
    table = store.table(windows);
    expect(keys(table.scan())).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3']);
    expect(keys(table.scan({ epoch: epochAt(13) }))).toEqual(['20/1', '20/2', '20/3', '30/1', '30/2', '30/3']);
    expect(backendEntries(store, windows.tableId)).toBe(6);
    await store.close();
  });
});
