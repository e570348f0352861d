// StateTable.writeAround() on the MVCC store over RocksDB: rows published after it are not added to
// the row cache (the write-through a view's blind inserts paid for nothing), an entry cached before
// for a key written again is dropped rather than left stale, and every read still answers the
// latest rows (from the sealed layer while the write is in flight, from RocksDB after). The oracle
// is the rows written, kept here in a Map.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { MvccStateTable } from './mvcc-state-table.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number): Epoch => epochFromMillis(T0 + second * 1000);
const schema: StateTableSchema = { tableId: 7, columnTypes: [type('int8'), type('text')], primaryKey: [0] };

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('writeAround', () => {
  it('publishes without caching, drops a stale entry, and reads stay exact (commit and commitAsync)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'oxbow-write-around-'));
    directories.push(directory);
    const store = openRocksStateStore({ dir: directory, memoryLimitBytes: 64 << 20 });
    const table = store.table(schema) as MvccStateTable;
    const expected = new Map<bigint, Row>();
    // Before: written through, so a read of key 1 is a cache hit.
    for (let key = 0n; key < 10n; key++) {
      const row: Row = [key, `before ${key}`];
      table.insert(row);
      expected.set(key, row);
    }
    store.commit(epochAt(1));
    expect(table.cache.size).toBe(10);
    table.writeAround();
    // Synchronous commit: new keys are not cached; key 1 is rewritten and its old entry dropped.
    for (let key = 10n; key < 1010n; key++) {
      const row: Row = [key, `sync ${key}`];
      table.insert(row);
      expected.set(key, row);
    }
    table.insert([1n, 'rewritten']);
    expected.set(1n, [1n, 'rewritten']);
    table.delete([2n, null]);
    expected.delete(2n);
    store.commit(epochAt(2));
    expect(table.cache.size).toBe(8);
    // Asynchronous commit: readable from the sealed layer at once, from RocksDB once durable.
    for (let key = 1010n; key < 3010n; key++) {
      const row: Row = [key, `async ${key}`];
      table.insert(row);
      expected.set(key, row);
    }
    table.insert([3n, 'rewritten async']);
    expected.set(3n, [3n, 'rewritten async']);
    const durable = store.commitAsync(epochAt(3));
    expect(table.get([2000n])).toEqual([2000n, 'async 2000']);
    await durable;
    expect(table.cache.size).toBe(7);
    for (const key of [0n, 1n, 2n, 3n, 4n, 500n, 1009n, 1010n, 2999n, 3009n, 3010n]) expect(table.get([key]), String(key)).toEqual(expected.get(key));
    // A read caches what it read (reads are not what writeAround changes).
    expect(table.cache.size).toBeGreaterThan(7);
    expect([...table.scan()]).toEqual([...expected.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, row]) => row));
    await store.close();
  });
});
