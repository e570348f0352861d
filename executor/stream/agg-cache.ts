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
// (a quarter of --memory-limit); an aborted epoch empties the cache (its writes are gone from the
// state); a restart starts cold. Only group keys of integer, date, timestamp, text and bool types
// are cached (their values make exact Map keys; `cacheableTypes`).

import type { Row, Value } from '../../sql/value.js';
import type { GroupCacheBudget, BudgetedCache } from './join-cache.js';

/** Heap bytes charged per cached group besides its row's columns: the Map's entry, the key, the row array. */
const ENTRY_BYTES = 120;
/** Per column of a cached row: a slot and, for int8 / numeric, the heap object it points to. */
const COLUMN_BYTES = 24;

export class AggregateGroupCache implements BudgetedCache {
  /**
   * By key width: one column, the value itself is the Map key (bigint, number, string and boolean
   * compare by value); two, a Map per first value (no key built: q5's (window, auction)); more, a
   * text of the values.
   */
  private readonly single: Map<Value, Row> | undefined;
  private readonly pairs: Map<Value, Map<Value, Row>> | undefined;
  private readonly texts: Map<string, Row> | undefined;
  private count = 0;
  /** Every group of the table is cached: a key not here has no state row. */
  complete = false;
  /** The whole table was tried (loaded, or found too large) since the last reset. */
  loaded = false;
  bytes = 0;
  hits = 0;
  misses = 0;
  private readonly entryBytes: number;

  constructor(
    private readonly budget: GroupCacheBudget,
    keyWidth: number,
    rowWidth: number,
  ) {
    this.entryBytes = ENTRY_BYTES + COLUMN_BYTES * rowWidth + (keyWidth > 2 ? 16 + 24 * keyWidth : 0);
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

  /** The cached state row of the group `key`; undefined when not cached (no state row at all when `complete`). */
  get(key: readonly Value[]): Row | undefined {
    let row: Row | undefined;
    if (this.single !== undefined) row = this.single.get(key[0]!);
    else if (this.pairs !== undefined) row = this.pairs.get(key[0]!)?.get(key[1]!);
    else row = this.texts!.get(AggregateGroupCache.text(key));
    if (row === undefined) this.misses++;
    else this.hits++;
    return row;
  }

  /** The group's state row after a write (or as read from the state). */
  set(key: readonly Value[], row: Row): void {
    let added: boolean;
    if (this.single !== undefined) {
      const size = this.single.size;
      added = this.single.set(key[0]!, row).size !== size;
    } else if (this.pairs !== undefined) {
      let inner = this.pairs.get(key[0]!);
      if (inner === undefined) this.pairs.set(key[0]!, (inner = new Map()));
      const size = inner.size;
      added = inner.set(key[1]!, row).size !== size;
    } else {
      const size = this.texts!.size;
      added = this.texts!.set(AggregateGroupCache.text(key), row).size !== size;
    }
    if (!added) return;
    this.count++;
    this.bytes += this.entryBytes;
    this.budget.usedBytes += this.entryBytes;
    if (this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }

  /** The group's state row was deleted (its last row went). */
  delete(key: readonly Value[]): void {
    let deleted: boolean;
    if (this.single !== undefined) deleted = this.single.delete(key[0]!);
    else if (this.pairs !== undefined) {
      const inner = this.pairs.get(key[0]!);
      deleted = inner !== undefined && inner.delete(key[1]!);
      if (deleted && inner!.size === 0) this.pairs.delete(key[0]!);
    } else deleted = this.texts!.delete(AggregateGroupCache.text(key));
    if (!deleted) return;
    this.count--;
    this.bytes -= this.entryBytes;
    this.budget.usedBytes -= this.entryBytes;
  }

  clear(): void {
    this.single?.clear();
    this.pairs?.clear();
    this.texts?.clear();
    this.count = 0;
    this.budget.usedBytes -= this.bytes;
    this.bytes = 0;
    this.complete = false;
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
   * two key columns, every group of the oldest first value at once (q5: the oldest window).
   */
  evictOldest(budget: GroupCacheBudget): void {
    if (budget.usedBytes <= budget.limitBytes || this.count === 0) return;
    this.complete = false;
    const map: Map<unknown, unknown> = this.single ?? this.pairs ?? this.texts!;
    for (const [mapKey, value] of map) {
      if (budget.usedBytes <= budget.limitBytes) return;
      map.delete(mapKey);
      const groups = value instanceof Map ? value.size : 1;
      this.count -= groups;
      this.bytes -= groups * this.entryBytes;
      budget.usedBytes -= groups * this.entryBytes;
    }
  }
}
