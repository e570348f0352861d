// The last change per key (lastChangesBetween, what upsert sinks write), against a model that
// replays the writes themselves: what each epoch left of a key (its last write in the epoch); the
// last row a key held by `to` is an upsert if it began after `from` and still holds, a delete if
// a later epoch by `to` (and after `from`) deleted it. Random inserts,
// updates, deletes and re-inserts over many epochs, on a one-column and a two-column key, read
// over every window of epochs, both through the stored key and through collapseByKey.
import { describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../../../sql/epoch.js';
import { type } from '../../../sql/types.js';
import type { Row } from '../../../sql/value.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { changesBetween, collapseByKey, lastChangesBetween } from '../sink-changes.js';

const T0 = Date.UTC(2026, 0, 1);

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Write {
  readonly epoch: Epoch;
  /** The row written, or null for a delete. */
  readonly row: Row | null;
}

function run(keyColumns: number, seed: number): void {
  const next = random(seed);
  const store = createMemoryStateStore({ retentionMs: 3_600_000 });
  const key = keyColumns === 1 ? [0] : [0, 1];
  const columnTypes = keyColumns === 1 ? [type('int8'), type('text'), type('float8')] : [type('int4'), type('text'), type('float8')];
  const table = store.table({ tableId: 1, columnTypes, primaryKey: key });
  const keyTypes = key.map((position) => columnTypes[position]!);
  const live = new Map<string, Row>();
  const writes = new Map<string, Write[]>();
  const epochs: Epoch[] = [];
  const keyOf = (index: number): Row => (keyColumns === 1 ? [BigInt(index)] : [index % 5, `k${Math.floor(index / 5)}`]);
  for (let step = 1; step <= 12; step++) {
    const epoch = epochFromMillis(T0 + step * 1000);
    for (let change = 0; change < 25; change++) {
      const keyValues = keyOf(Math.floor(next() * 30));
      const name = JSON.stringify(keyValues, (_unused, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value));
      const before = live.get(name);
      let write: Write;
      if (before !== undefined && next() < 0.35) {
        table.delete(before);
        live.delete(name);
        write = { epoch, row: null };
      } else {
        const row = keyColumns === 1 ? [keyValues[0]!, `v${step}.${change}`, next()] : [keyValues[0]!, keyValues[1]!, next()];
        table.insert(row);
        live.set(name, row);
        write = { epoch, row };
      }
      const list = writes.get(name) ?? [];
      list.push(write);
      writes.set(name, list);
    }
    store.commit(epoch);
    epochs.push(epoch);
  }
  const canonical = (rows: readonly Row[]) => rows.map((row) => JSON.stringify(row, (_unused, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))).sort();
  for (let low = 0; low < epochs.length; low++) {
    for (let high = low + 1; high < epochs.length; high++) {
      const from = epochs[low]!;
      const to = epochs[high]!;
      const upserts: Row[] = [];
      const deletes: Row[] = [];
      for (const list of writes.values()) {
        // What each epoch left of the key: its last write in that epoch.
        const left = new Map<Epoch, Row | null>();
        for (const write of list) if (write.epoch <= to) left.set(write.epoch, write.row);
        const written = [...left.keys()];
        // The last row the key held by `to` (a version), and the epoch that ended it, if any.
        let lastRow = written.length - 1;
        while (lastRow >= 0 && left.get(written[lastRow]!) === null) lastRow--;
        if (lastRow < 0) continue;
        const began = written[lastRow]!;
        const ended = written[lastRow + 1];
        if (ended !== undefined) {
          if (ended > from) deletes.push(left.get(began)!);
        } else if (began > from) {
          upserts.push(left.get(began)!);
        }
      }
      const stored = lastChangesBetween(table, from, to, key, keyTypes);
      expect(canonical(stored.upserts)).toEqual(canonical(upserts));
      expect(canonical(stored.deletes)).toEqual(canonical(deletes));
      const collapsed = collapseByKey(changesBetween(table, from, to), key, keyTypes);
      expect(canonical(collapsed.upserts)).toEqual(canonical(upserts));
      expect(canonical(collapsed.deletes)).toEqual(canonical(deletes));
    }
  }
}

describe('lastChangesBetween', () => {
  it('leaves per key what the writes left, on a one-column key', () => {
    for (let seed = 1; seed <= 5; seed++) run(1, seed);
  });

  it('leaves per key what the writes left, on a two-column key', () => {
    for (let seed = 11; seed <= 15; seed++) run(2, seed);
  });
});
