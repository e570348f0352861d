// History holds (StateStore.holdHistory): a held table's versions from the hold's epoch on stay
// readable past the retention, through the compaction filter too, and the window moves on once
// the hold moves or is released.
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
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);
const table: StateTableSchema = { tableId: 3, columnTypes: [type('int4'), type('int4')], primaryKey: [0] };
const other: StateTableSchema = { tableId: 4, columnTypes: [type('int4'), type('int4')], primaryKey: [0] };

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const implementations: [string, () => StateStore & { compact?: () => Promise<void> }][] = [
  [
    'rocksdb',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'oxbow-hold-'));
      directories.push(dir);
      return openRocksStateStore({ dir, retentionMs: 2000 });
    },
  ],
  ['memory', () => createMemoryStateStore({ retentionMs: 2000 })],
];

describe.each(implementations)('history holds on %s', (_name, open) => {
  it('keeps the versions from the hold on past the retention, then lets the window move', async () => {
    const store = open();
    const held = store.table(table);
    const free = store.table(other);
    held.insert([1, 0]);
    free.insert([1, 0]);
    store.commit(epochAt(1));
    store.holdHistory('sink/9', table.tableId, epochAt(1));
    store.holdHistory('sink/10', table.tableId, epochAt(5));
    for (let second = 2; second <= 20; second++) {
      held.insert([1, second]);
      free.insert([1, second]);
      store.commit(epochAt(second));
    }
    await store.compact?.();
    // Retention 2 s: the free table's window starts at 18 s; the held one's at the lowest hold.
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(18));
    expect(store.readableWindow(table.tableId).oldest).toBeLessThanOrEqual(epochAt(1));
    const changes = [...held.versions(epochAt(1), epochAt(20))].map((version) => version.row[1]);
    expect(changes).toEqual([0, ...Array.from({ length: 19 }, (_, index) => index + 2)]);
    expect(held.get([1], epochAt(3))).toEqual([1, 3]);

    // The lowest hold moves up: the window follows it, not past it.
    store.holdHistory('sink/9', table.tableId, undefined);
    held.insert([1, 21]);
    store.commit(epochAt(21));
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(5));
    expect(held.get([1], epochAt(5))).toEqual([1, 5]);
    store.holdHistory('sink/10', table.tableId, undefined);
    held.insert([1, 22]);
    store.commit(epochAt(22));
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(20));
    await store.close();
  });
});
