// The in-memory cache of StreamHashAggregate's group state rows (RisingWave's aggregation cache):
// per aggregate, the state rows (`key ++ row count ++ accumulators`) of recently read or written
// groups, exactly as in the group state table, so a change to a cached group needs no point read.
// The aggregate keeps each cached row equal to its state by updating the cache with every write it
// makes (it is the only writer of its group table).
//
// **Complete**: when every group of the table is in the cache, a key it does not hold is a new
// group with no read at all (Nexmark q5: most (window, auction) groups are new, and each missed the
// row cache and read RocksDB to find nothing). The table is loaded whole at the first change the
// aggregate sees when it holds at most `completeLoadRows` rows (a new view's is empty, so it starts
// complete); the cache stops being complete when it loses a group to eviction, and from then on
// holds the groups read or written since, oldest first out.
//
// Memory: one GroupCacheBudget (join-cache.ts) for the join and aggregate caches of the process
// (a fifth of the caches' budget, which executor/engine/memory-manager.ts plans from --memory-limit and
// moves with the measured heap); an aborted epoch empties the cache (its writes are gone from the
// state); a restart starts cold. Only group keys of integer, date, timestamp, text and bool types
// are cached (their values make exact Map keys; `cacheableTypes`).

import type { Row, Value } from '../../sql/value.js';
import { MAP_SLOT_BYTES, rowBytes, valueBytes } from '../../storage/row-cache.js';
import type { GroupCacheBudget, BudgetedCache } from './join-cache.js';

// What a cached group takes on the V8 heap (Node 20 x64), checked against heap deltas by
// cache-heap.test.ts: its state row by its layout (storage/row-cache.ts rowBytes: the array, its
// bigints, numerics, strings; the key's values are the row's own) and the Map entry (MAP_SLOT_BYTES,
// under eviction). With two key columns, each first value's inner Map: the JSMap and its first
// table (32 + 152, measured 184, its first entry in it) and its other entries (filled, rarely
// deleted: 40 an entry). A text key
// adds the string (flattened from the cons string that built it). A flat 120 + 24 a column saw
// neither the inner Maps nor the rows' bigints: q4's (auction, category) groups, one inner Map each,
// held twice their charge.
const INNER_MAP_BYTES = 184;
const INNER_ENTRY_BYTES = 40;
const TEXT_KEY_BYTES = 32;

export class AggregateGroupCache implements BudgetedCache {
  /**
   * By key width: one column, the value itself is the Map key (bigint, number, string and boolean
   * compare by value); two, a Map per first value (the second when state cleaning deletes by it: the
   * window first either way; no key built: q5's (window, auction)); more, a text of the values.
   */
  private readonly single: Map<Value, Row> | undefined;
  private readonly pairs: Map<Value, Map<Value, Row>> | undefined;
  private readonly texts: Map<string, Row> | undefined;
  private count = 0;
  /** Where eviction stopped: the oldest cached group (`evictOldest`, join-cache.ts's hand). */
  private hand: Iterator<[unknown, Row | Map<Value, Row>]> | undefined;
  /** Every group of the table is cached: a key not here has no state row. */
  complete = false;
  /** The whole table was tried (loaded, or found too large) since the last reset. */
  loaded = false;
  bytes = 0;
  hits = 0;
  misses = 0;

  /** With two key columns: which one keys the outer Map (the column cleaned by watermark, so a closed window's groups go together). */
  private readonly outer: number;
  private readonly inner: number;

  constructor(
    private readonly budget: GroupCacheBudget,
    private readonly keyWidth: number,
    /** The key column state cleaning deletes by (`deleteClosed`), or -1. */
    private readonly cleanedColumn = -1,
  ) {
    this.outer = keyWidth === 2 && cleanedColumn === 1 ? 1 : 0;
    this.inner = 1 - this.outer;
    if (keyWidth === 1) this.single = new Map();
    else if (keyWidth === 2) this.pairs = new Map();
    else this.texts = new Map();
    budget.register(this);
  }

  get size(): number {
    return this.count;
  }

  private static text(key: readonly Value[]): string {
    let text = '';
    for (let i = 0; i < key.length; i++) {
      const value = key[i];
      text += value === null ? '\u0001' : typeof value === 'string' ? `s${value}\u0000` : `${String(value)}\u0000`;
    }
    return text;
  }

  /** Every cached state row (when `complete`: every group's), in no particular order. */
  *rows(): Iterable<Row> {
    if (this.single !== undefined) yield* this.single.values();
    else if (this.pairs !== undefined) for (const inner of this.pairs.values()) yield* inner.values();
    else yield* this.texts!.values();
  }

  /** The cached state row of the group `key`; undefined when not cached (no state row at all when `complete`). */
  get(key: readonly Value[]): Row | undefined {
    let row: Row | undefined;
    if (this.single !== undefined) row = this.single.get(key[0]!);
    else if (this.pairs !== undefined) row = this.pairs.get(key[this.outer]!)?.get(key[this.inner]!);
    else row = this.texts!.get(AggregateGroupCache.text(key));
    if (row === undefined) this.misses++;
    else this.hits++;
    return row;
  }

  /** The group's state row after a write (or as read from the state). */
  set(key: readonly Value[], row: Row): void {
    let previous: Row | undefined;
    let bytes = rowBytes(row);
    if (this.single !== undefined) {
      previous = this.single.get(key[0]!);
      this.single.set(key[0]!, row);
      if (previous === undefined) bytes += MAP_SLOT_BYTES;
    } else if (this.pairs !== undefined) {
      let inner = this.pairs.get(key[this.outer]!);
      if (inner === undefined) {
        // The first entry is in the new Map's first table.
        this.pairs.set(key[this.outer]!, (inner = new Map()));
        bytes += MAP_SLOT_BYTES + INNER_MAP_BYTES;
      } else {
        previous = inner.get(key[this.inner]!);
        if (previous === undefined) bytes += INNER_ENTRY_BYTES;
      }
      inner.set(key[this.inner]!, row);
    } else {
      const text = AggregateGroupCache.text(key);
      previous = this.texts!.get(text);
      this.texts!.set(text, row);
      if (previous === undefined) bytes += MAP_SLOT_BYTES + valueBytes(text) + TEXT_KEY_BYTES;
    }
    if (previous === undefined) this.count++;
    else bytes -= rowBytes(previous);
    this.bytes += bytes;
    this.budget.usedBytes += bytes;
    if (bytes > 0 && this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }

  /** The group's state row was deleted (its last row went). */
  delete(key: readonly Value[]): void {
    let bytes = 0;
    if (this.single !== undefined) {
      const row = this.single.get(key[0]!);
      if (row === undefined) return;
      this.single.delete(key[0]!);
      bytes = MAP_SLOT_BYTES + rowBytes(row);
    } else if (this.pairs !== undefined) {
      const inner = this.pairs.get(key[this.outer]!);
      const row = inner?.get(key[this.inner]!);
      if (row === undefined) return;
      inner!.delete(key[this.inner]!);
      bytes = rowBytes(row);
      if (inner!.size > 0) bytes += INNER_ENTRY_BYTES;
      else {
        this.pairs.delete(key[this.outer]!);
        bytes += MAP_SLOT_BYTES + INNER_MAP_BYTES;
      }
    } else {
      const text = AggregateGroupCache.text(key);
      const row = this.texts!.get(text);
      if (row === undefined) return;
      this.texts!.delete(text);
      bytes = MAP_SLOT_BYTES + valueBytes(text) + TEXT_KEY_BYTES + rowBytes(row);
    }
    this.count--;
    this.bytes -= bytes;
    this.budget.usedBytes -= bytes;
  }

  /**
   * Drops every group whose cleaned key column's value `closed` says closed (a range delete of the
   * group table). With two key columns the cleaned one keys the outer Map: only the closed windows'
   * groups are visited, not every group.
   */
  deleteClosed(closed: (value: Value) => boolean): void {
    const column = this.cleanedColumn;
    if (column < 0) return;
    // A Map's entries deleted while it is iterated are skipped, never revisited.
    const key: Value[] = [null, null];
    if (this.single !== undefined) {
      for (const value of this.single.keys()) {
        if (!closed(value)) continue;
        key[0] = value;
        this.delete(key);
      }
    } else if (this.pairs !== undefined) {
      for (const [value, inner] of this.pairs) {
        if (!closed(value)) continue;
        key[this.outer] = value;
        for (const other of inner.keys()) {
          key[this.inner] = other;
          this.delete(key);
        }
      }
    } else {
      for (const row of this.texts!.values()) if (closed(row[column] ?? null)) this.delete(row.slice(0, this.keyWidth));
    }
  }

  clear(): void {
    this.single?.clear();
    this.pairs?.clear();
    this.texts?.clear();
    this.hand = undefined;
    this.count = 0;
    this.budget.usedBytes -= this.bytes;
    this.bytes = 0;
    this.complete = false;
  }

  /** Rows of groups it never saw were added to its table (GroupCacheBudget.rowsAddedElsewhere): not complete, loaded again at the next change. */
  rowsAddedElsewhere(): void {
    this.complete = false;
    this.loaded = false;
  }

  /** Empties the cache and forgets that the table was loaded (an aborted epoch). */
  reset(): void {
    this.clear();
    this.loaded = false;
  }

  dispose(): void {
    this.reset();
    this.budget.unregister(this);
  }

  /**
   * Drops groups in insertion order until the budget is met (the cache is no longer complete); with
   * two key columns, every group of the oldest outer value at once (the first key column, or the
   * one cleaned by watermark: q5's oldest window).
   */
  evictOldest(budget: GroupCacheBudget): void {
    if (budget.usedBytes <= budget.limitBytes || this.count === 0) return;
    this.complete = false;
    const map: Map<unknown, Row | Map<Value, Row>> = this.single ?? this.pairs ?? this.texts!;
    for (;;) {
      if (budget.usedBytes <= budget.limitBytes) return;
      if (this.hand === undefined) {
        if (map.size === 0) return;
        this.hand = map.entries();
      }
      const step = this.hand.next();
      if (step.done === true) {
        this.hand = undefined;
        continue;
      }
      const [mapKey, value] = step.value;
      map.delete(mapKey);
      let bytes = MAP_SLOT_BYTES;
      if (value instanceof Map) {
        bytes += INNER_MAP_BYTES + INNER_ENTRY_BYTES * (value.size - 1);
        for (const row of value.values()) bytes += rowBytes(row);
        this.count -= value.size;
      } else {
        bytes += rowBytes(value);
        if (this.texts !== undefined) bytes += valueBytes(mapKey as string) + TEXT_KEY_BYTES;
        this.count--;
      }
      this.bytes -= bytes;
      budget.usedBytes -= bytes;
    }
  }
}
