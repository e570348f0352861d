// History holds (StateStore.holdHistory), both kinds: `{ fromEpoch }` (a sink's undelivered
// changes) keeps a table's versions from that epoch on, `{ retentionMs }` (a subscription) keeps
// at least that much history back from each commit. Held versions stay readable past the table's
// own retention, through the compaction filter too; the window moves on once a hold moves or is
// released. Holds live in memory: a reopened store has none until its owners hold again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { createMemoryStateStore } from './memory-state-store.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateStore, StateTable, StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);
const table: StateTableSchema = { tableId: 3, columnTypes: [type('int4'), type('int4')], primaryKey: [0] };
const other: StateTableSchema = { tableId: 4, columnTypes: [type('int4'), type('int4')], primaryKey: [0] };
/** The store's default retention: 2 s of epoch time. */
const RETENTION_MS = 2000;

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function rocksDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-hold-'));
  directories.push(dir);
  return dir;
}

const implementations: [string, () => StateStore & { compact?: () => Promise<void> }][] = [
  ['rocksdb', () => openRocksStateStore({ dir: rocksDirectory(), retentionMs: RETENTION_MS })],
  ['memory', () => createMemoryStateStore({ retentionMs: RETENTION_MS })],
];

/** Writes value `second` to key 1 of each table and commits at that second, for each second in [from, to]. */
function commitSeconds(store: StateStore, tables: StateTable[], from: number, to: number): void {
  for (let second = from; second <= to; second++) {
    for (const written of tables) written.insert([1, second]);
    store.commit(epochAt(second));
  }
}

/** The values key 1 of `held` had from `from` to `to` (seconds), oldest first. */
function history(held: StateTable, from: number, to: number): unknown[] {
  return [...held.versions(epochAt(from), epochAt(to))].map((version) => version.row[1]);
}

describe.each(implementations)('history holds on %s', (_name, open) => {
  it('a fromEpoch hold keeps the versions from its epoch on past the retention, then lets the window move', async () => {
    const store = open();
    const held = store.table(table);
    const free = store.table(other);
    held.insert([1, 0]);
    free.insert([1, 0]);
    store.commit(epochAt(1));
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(1) });
    store.holdHistory('sink/10', table.tableId, { fromEpoch: epochAt(5) });
    commitSeconds(store, [held, free], 2, 20);
    await store.compact?.();
    // Retention 2 s: the free table's window starts at 18 s; the held one's at the lowest hold.
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(18));
    expect(store.readableWindow(table.tableId).oldest).toBeLessThanOrEqual(epochAt(1));
    expect(history(held, 1, 20)).toEqual([0, ...Array.from({ length: 19 }, (_, index) => index + 2)]);
    expect(held.get([1], epochAt(3))).toEqual([1, 3]);

    // The lowest hold released: the window follows the next one, not past it.
    store.holdHistory('sink/9', table.tableId, undefined);
    commitSeconds(store, [held], 21, 21);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(5));
    expect(held.get([1], epochAt(5))).toEqual([1, 5]);
    store.holdHistory('sink/10', table.tableId, undefined);
    commitSeconds(store, [held], 22, 22);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(20));
    await store.close();
  });

  it('a retentionMs hold keeps that much history back from each commit, then lets it go once released', async () => {
    const store = open();
    const pinned = store.table(table);
    const plain = store.table(other);
    store.holdHistory('subscription/7', table.tableId, { retentionMs: 60_000 });
    commitSeconds(store, [pinned, plain], 1, 20);
    await store.compact?.();
    // Retention 2 s: the plain table's window starts at 18 s; the held one still reads 1 s.
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(18));
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(1));
    expect(pinned.get([1], epochAt(1))).toEqual([1, 1]);
    expect(history(pinned, 1, 20)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    expect(() => plain.get([1], epochAt(1))).toThrow(expect.objectContaining({ code: '72000' }));
    // Released: the next commit moves the window to the table's own retention.
    store.holdHistory('subscription/7', table.tableId, undefined);
    store.commit(epochAt(21));
    await store.compact?.();
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(19));
    expect(() => pinned.get([1], epochAt(1))).toThrow(expect.objectContaining({ code: '72000' }));
    expect(pinned.get([1], epochAt(21))).toEqual([1, 20]);
    await store.close();
  });

  it('a sink hold and a subscription retention on one table: the window keeps what either needs', async () => {
    const store = open();
    const held = store.table(table);
    commitSeconds(store, [held], 1, 4);
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(4) });
    store.holdHistory('subscription/7', table.tableId, { retentionMs: 10_000 });
    store.holdHistory('subscription/8', table.tableId, { retentionMs: 5_000 });
    commitSeconds(store, [held], 5, 30);
    await store.compact?.();
    // The sink is furthest behind: its epoch bounds the window.
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(4));
    expect(history(held, 4, 30)).toEqual(Array.from({ length: 27 }, (_, index) => index + 4));

    // The sink caught up past the longest retention's reach: that retention (10 s) bounds it.
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(29) });
    commitSeconds(store, [held], 31, 31);
    await store.compact?.();
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(21));
    expect(held.get([1], epochAt(21))).toEqual([1, 21]);
    expect(() => held.get([1], epochAt(20))).toThrow(expect.objectContaining({ code: '72000' }));

    // The longer subscription dropped: the other one's 5 s.
    store.holdHistory('subscription/7', table.tableId, undefined);
    commitSeconds(store, [held], 32, 32);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(27));

    // The sink behind again (a hold may move down; collected history does not come back).
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(28) });
    commitSeconds(store, [held], 33, 40);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(28));

    // Every hold released: the table's own 2 s.
    store.holdHistory('sink/9', table.tableId, undefined);
    store.holdHistory('subscription/8', table.tableId, undefined);
    commitSeconds(store, [held], 41, 41);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(39));
    await store.close();
  });
});

describe('history holds across a restart (rocksdb)', () => {
  it('are not kept by the store: the window stays where it was, and moves on at the first commit unless held again', async () => {
    const dir = rocksDirectory();
    let store = openRocksStateStore({ dir, retentionMs: RETENTION_MS });
    commitSeconds(store, [store.table(table), store.table(other)], 1, 2);
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(2) });
    store.holdHistory('subscription/7', other.tableId, { retentionMs: 60_000 });
    commitSeconds(store, [store.table(table), store.table(other)], 3, 20);
    await store.close();

    // Reopened and held again before anything commits (as sinks and subscriptions do at start).
    store = openRocksStateStore({ dir, retentionMs: RETENTION_MS });
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(2));
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(1));
    store.holdHistory('sink/9', table.tableId, { fromEpoch: epochAt(2) });
    store.holdHistory('subscription/7', other.tableId, { retentionMs: 60_000 });
    commitSeconds(store, [store.table(table), store.table(other)], 21, 22);
    await store.compact();
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(2));
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(1));
    expect(history(store.table(table), 2, 22)).toEqual(Array.from({ length: 21 }, (_, index) => index + 2));
    await store.close();

    // Reopened without holding again: the first commit moves both windows to the retention.
    store = openRocksStateStore({ dir, retentionMs: RETENTION_MS });
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(2));
    commitSeconds(store, [store.table(table), store.table(other)], 23, 23);
    expect(store.readableWindow(table.tableId).oldest).toBe(epochAt(21));
    expect(store.readableWindow(other.tableId).oldest).toBe(epochAt(21));
    await store.close();
  });
});
