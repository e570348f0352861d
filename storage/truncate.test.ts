// StateTable.truncate(end): the open epoch's commit deletes every row keyed below `end`, with its
// history (one range delete, no tombstone versions), on both stores, committed synchronously and
// asynchronously; rows at and above the bound, and the same epoch's new rows, stay; an aborted
// epoch truncates nothing; the truncation survives a reopen.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { createMemoryStateStore } from './memory-state-store.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateStore, StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
const log: StateTableSchema = { tableId: 7, columnTypes: [type('int8'), type('text')], primaryKey: [0] };
const other: StateTableSchema = { tableId: 8, columnTypes: [type('int8'), type('text')], primaryKey: [0] };

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});
function directory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-truncate-'));
  directories.push(dir);
  return dir;
}

const implementations: [string, (dir?: string) => StateStore][] = [
  ['rocksdb', (dir) => openRocksStateStore({ dir: dir ?? directory(), retentionMs: 60_000 })],
  ['memory', () => createMemoryStateStore({ retentionMs: 60_000 })],
];

/** Every key of `schema` with any version in [from, to]. */
function keys(store: StateStore, schema: StateTableSchema, from: number, to: number): bigint[] {
  return [...store.table(schema).versions(epochAt(from), epochAt(to))].map((version) => version.row[0] as bigint);
}

describe.each(implementations)('truncate on %s', (_name, open) => {
  it('deletes the keys below the bound with their history, in the epoch it commits with', async () => {
    const store = open();
    const table = store.table(log);
    const neighbour = store.table(other);
    for (let key = 1n; key <= 10n; key++) {
      if (key % 2n === 0n && table.append !== undefined) table.append([key, `row ${key}`]);
      else table.insert([key, `row ${key}`]);
    }
    neighbour.insert([1n, 'kept']);
    store.commit(epochAt(1));
    table.insert([3n, 'three again']);
    store.commit(epochAt(2));
    // Aborted: nothing goes.
    table.truncate!([5n]);
    store.abort();
    store.commit(epochAt(3));
    expect(keys(store, log, 1, 3)).toEqual([1n, 2n, 3n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
    table.truncate!([5n]);
    table.truncate!([4n]); // a lower bound adds nothing
    table.insert([11n, 'new']);
    store.commit(epochAt(4));
    expect(keys(store, log, 1, 4)).toEqual([5n, 6n, 7n, 8n, 9n, 10n, 11n]);
    expect(keys(store, other, 1, 4)).toEqual([1n]);
    // Asynchronously committed too.
    table.truncate!([8n]);
    await store.commitAsync(epochAt(5));
    expect(keys(store, log, 1, 5)).toEqual([8n, 9n, 10n, 11n]);
    expect([...table.scan({ epoch: epochAt(5) })].map((row) => row[0])).toEqual([8n, 9n, 10n, 11n]);
    await store.close();
  });
});

describe('truncate on rocksdb across a reopen', () => {
  it('keeps the truncation', async () => {
    const dir = directory();
    let store = implementations[0]![1](dir);
    const table = store.table(log);
    for (let key = 1n; key <= 4n; key++) table.insert([key, 'x']);
    store.commit(epochAt(1));
    table.truncate!([3n]);
    store.commit(epochAt(2));
    await store.close();
    store = implementations[0]![1](dir);
    expect(keys(store, log, 1, 2)).toEqual([3n, 4n]);
    await store.close();
  });
});
