// The key bound of a state table (mvcc-state-table.ts `keyBound`): a latest read of a key above
// every key the table holds or held is answered absent without a cache lookup or a backend seek
// (an INSERT of ascending keys checks its primary key without reading RocksDB), and every other
// read still reads. Counted on the in-memory backend (its point reads spied on); the answers
// checked on both stores, with the bound first read while writes above the committed keys are
// buffered or sealed and in flight (those keys must raise it, or their rows would read as absent
// once out of the buffers), and read again after a restart over a deleted largest key, and once
// another writer committed keys above it (rowsAddedElsewhere).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { MemoryBackend } from './memory-backend.js';
import { createMemoryStateStore, MemoryStateStore } from './memory-state-store.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateStore, StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);
const schema: StateTableSchema = { tableId: 12, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const row = (id: number) => [id, `row ${id}`];

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});
function directory(): string {
  const made = mkdtempSync(join(tmpdir(), 'oxbow-key-bound-'));
  directories.push(made);
  return made;
}

describe('a state table key bound', () => {
  it('answers ascending absent keys with no backend read, and reads below the bound', async () => {
    const store = createMemoryStateStore();
    const table = store.table(schema);
    for (const id of [1, 2, 3]) table.insert(row(id));
    store.commit(epochAt(1));
    const reads = vi.spyOn(store.memory, 'getLatestVersion');
    // An INSERT's check then write, one epoch each, ascending: no point read at all.
    for (let id = 4; id <= 40; id++) {
      expect(table.get([id])).toBeUndefined();
      table.insert(row(id));
      if (id % 2 === 0) store.commit(epochAt(id));
      else await store.commitAsync(epochAt(id));
    }
    expect(reads).toHaveBeenCalledTimes(0);
    // Below the bound the backend answers: an absent key (0), a key deleted and committed (20).
    expect(table.get([0])).toBeUndefined();
    expect(reads).toHaveBeenCalledTimes(1);
    table.delete([20]);
    store.commit(epochAt(41));
    expect(table.get([20])).toBeUndefined();
    expect(table.get([40])).toEqual(row(40));
    // The deleted key stays below the bound: a new 20 is checked against the backend, not assumed absent.
    table.insert(row(20));
    store.commit(epochAt(42));
    expect(table.get([20])).toEqual(row(20));
    // Rows read as of an epoch are untouched by the bound.
    expect(table.get([20], epochAt(41))).toBeUndefined();
    expect(table.get([40], epochAt(40))).toEqual(row(40));
    await store.close();
  });

  describe.each([
    ['memory', () => createMemoryStateStore()],
    ['rocksdb', () => openRocksStateStore({ dir: directory() })],
  ] as [string, () => StateStore][])('on %s', (_name, open) => {
    it('counts keys buffered or sealed above the committed ones when it is first read', async () => {
      const store = open();
      // Two tables: 200 written above the committed keys and still buffered in one, sealed and in flight in the other.
      const buffered = store.table(schema);
      const sealed = store.table({ ...schema, tableId: 13 });
      for (const table of [buffered, sealed]) {
        // Published rows are not cached: the later read of 200 must reach the backend.
        table.writeAround!();
        for (const id of [1, 2, 3]) table.insert(row(id));
      }
      store.commit(epochAt(1));
      sealed.insert(row(200));
      const inFlight = store.commitAsync(epochAt(2));
      buffered.insert(row(200));
      // Each bound's first read: the backend's largest key is 3.
      for (const table of [buffered, sealed]) expect(table.get([50])).toBeUndefined();
      await inFlight;
      store.commit(epochAt(3));
      for (const table of [buffered, sealed]) {
        expect(table.get([200])).toEqual(row(200));
        expect(table.get([150])).toBeUndefined();
        expect(table.get([201])).toBeUndefined();
      }
      await store.close();
    });
  });

  it('is read again once rows of keys it never read were committed by another writer', async () => {
    // Two stores over one backend: the second commits keys above the first's bound (a keyed
    // fragment's owner taking vnodes another owner wrote, executor/stream/parallel/parallel-fragment.ts).
    const backend = new MemoryBackend();
    const options = { retentionMs: 10 * 60 * 1000, memoryLimitBytes: 64 * 1024 * 1024 };
    const mine = new MemoryStateStore(backend, options);
    const other = new MemoryStateStore(backend, options);
    const table = mine.table(schema);
    for (const id of [1, 2, 3]) table.insert(row(id));
    mine.commit(epochAt(1));
    // The bound is read (3): a larger key reads as absent with no backend read.
    expect(table.get([50])).toBeUndefined();
    const theirs = other.table(schema);
    for (const id of [100, 101]) theirs.insert(row(id));
    other.commit(epochAt(2));
    expect(table.get([100])).toBeUndefined();
    mine.rowsAddedElsewhere();
    expect(table.get([100])).toEqual(row(100));
    expect(table.get([101])).toEqual(row(101));
    expect(table.get([102])).toBeUndefined();
    expect(table.get([2])).toEqual(row(2));
    await mine.close();
    await other.close();
  });

  it('is read again after a restart, a deleted largest key included', async () => {
    const dir = directory();
    let store = openRocksStateStore({ dir });
    let table = store.table(schema);
    for (let id = 1; id <= 10; id++) table.insert(row(id));
    store.commit(epochAt(1));
    table.delete([10]);
    store.commit(epochAt(2));
    await store.close();
    store = openRocksStateStore({ dir });
    table = store.table(schema);
    table.writeAround!();
    expect(table.get([10])).toBeUndefined();
    expect(table.get([9])).toEqual(row(9));
    expect(table.get([11])).toBeUndefined();
    table.insert(row(11));
    store.commit(epochAt(3));
    table.insert(row(10));
    store.commit(epochAt(4));
    expect(table.get([11])).toEqual(row(11));
    expect(table.get([10])).toEqual(row(10));
    expect(table.get([12])).toBeUndefined();
    await store.close();
  });
});
