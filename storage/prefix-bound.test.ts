// Key groups above a state table's key bound (mvcc-state-table.ts `keyBound`): a join keeps a side
// by (join key, row id) and probes it with `scan({ prefix })`; a key group above every key the
// table holds or held has no rows, so the scan opens no backend iterator and `prefixIsNew` says so
// without a read (StreamHashJoin then caches the new key's group: q4's auctions, ids ascending).
// Backend scans are counted on the in-memory backend (spied on); the answers are checked against
// the rows written, with groups buffered or sealed above the committed keys when the bound is
// first read, a deleted group, and reads as of an epoch (which the bound never answers).
import { describe, expect, it, vi } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { createMemoryStateStore } from './memory-state-store.js';
import type { StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);
/** (join key, row id, value): groups by the first column, as a join side stored by row id. */
const schema: StateTableSchema = { tableId: 21, columnTypes: [type('int8'), type('int8'), type('text')], primaryKey: [0, 1] };
const row = (key: number, id: number): Row => [BigInt(key), BigInt(id), `${key}/${id}`];
const group = (rows: Iterable<Row>) => [...rows].map((r) => r[2]);

describe('a state table scan of a key group above its key bound', () => {
  it('opens no backend iterator, answers prefixIsNew, and still reads every group below the bound', async () => {
    const store = createMemoryStateStore();
    const table = store.table(schema);
    for (let key = 1; key <= 5; key++) for (let id = 0; id < 3; id++) table.insert(row(key, key * 10 + id));
    store.commit(epochAt(1));
    const scans = vi.spyOn(store.memory, 'scan');
    // The bound's first read is one reverse seek.
    expect(group(table.scan({ prefix: [6n] }))).toEqual([]);
    expect(scans).toHaveBeenCalledTimes(1);
    scans.mockClear();
    // Ascending new keys, each probed then written (a new auction, then its first bids), one epoch each.
    for (let key = 6; key <= 30; key++) {
      expect(table.prefixIsNew!([BigInt(key)])).toBe(true);
      expect(group(table.scan({ prefix: [BigInt(key)] }))).toEqual([]);
      table.insert(row(key, key * 10));
      expect(table.prefixIsNew!([BigInt(key)])).toBe(false);
      if (key % 2 === 0) store.commit(epochAt(key));
      else await store.commitAsync(epochAt(key));
    }
    expect(scans).toHaveBeenCalledTimes(0);
    // Below the bound a group is read: committed, written since, deleted.
    expect(table.prefixIsNew!([3n])).toBe(false);
    expect(group(table.scan({ prefix: [3n] }))).toEqual(['3/30', '3/31', '3/32']);
    expect(scans).toHaveBeenCalledTimes(1);
    table.delete(row(4, 41));
    store.commit(epochAt(31));
    expect(group(table.scan({ prefix: [4n] }))).toEqual(['4/40', '4/42']);
    expect(group(table.scan({ prefix: [30n] }))).toEqual(['30/300']);
    // A group whose keys were all deleted stays below the bound: read, not assumed new.
    table.delete(row(30, 300));
    store.commit(epochAt(32));
    expect(table.prefixIsNew!([30n])).toBe(false);
    expect(group(table.scan({ prefix: [30n] }))).toEqual([]);
    // As of an epoch the bound is not consulted.
    expect(group(table.scan({ prefix: [30n], epoch: epochAt(31) }))).toEqual(['30/300']);
    await store.close();
  });

  it('counts groups buffered or sealed above the committed keys when it is first read', async () => {
    const store = createMemoryStateStore();
    const buffered = store.table(schema);
    const sealed = store.table({ ...schema, tableId: 22 });
    for (const table of [buffered, sealed]) table.insert(row(1, 10));
    store.commit(epochAt(1));
    sealed.insert(row(9, 90));
    const inFlight = store.commitAsync(epochAt(2));
    buffered.insert(row(9, 90));
    for (const table of [buffered, sealed]) {
      // First read of the bound: the backend's largest key is (1, 10); 9's row is in the buffers.
      expect(table.prefixIsNew!([5n])).toBe(false);
      expect(group(table.scan({ prefix: [9n] }))).toEqual(['9/90']);
      expect(table.prefixIsNew!([10n])).toBe(true);
    }
    await inFlight;
    store.commit(epochAt(3));
    for (const table of [buffered, sealed]) expect(group(table.scan({ prefix: [9n] }))).toEqual(['9/90']);
    await store.close();
  });
});
