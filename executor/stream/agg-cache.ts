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
  private readonly groups = new Map<unknown, Row>();
  /** Every group of the table is cached: a key not here has no state row. */
  complete = false;
  /** The whole table was tried (loaded, or found too large) since the last reset. */
  loaded = false;
  bytes = 0;
  hits = 0;
  misses = 0;
  private readonly entryBytes: number;
  /** One key column: the value itself is the Map key (bigint, number, string and boolean compare by value). */
  private readonly single: boolean;

  constructor(
    private readonly budget: GroupCacheBudget,
    keyWidth: number,
    rowWidth: number,
  ) {
    this.entryBytes = ENTRY_BYTES + COLUMN_BYTES * rowWidth + (keyWidth > 1 ? 16 + 24 * keyWidth : 0);
    this.single = keyWidth === 1;
    budget.register(this);
  }

  get size(): number {
    return this.groups.size;
  }

  mapKey(key: readonly Value[]): unknown {
    if (this.single) return key[0];
    let text = '';
    for (let i = 0; i < key.length; i++) {
      const value = key[i];
      text += value === null ? '\u0001' : typeof value === 'string' ? `s${value}\u0000` : `${String(value)}\u0000`;
    }
    return text;
  }

  /** The cached state row; undefined when not cached (no state row at all when `complete`). */
  get(mapKey: unknown): Row | undefined {
    const row = this.groups.get(mapKey);
    if (row === undefined) this.misses++;
    else this.hits++;
    return row;
  }

  /** The group's state row after a write (or as read from the state). */
  set(mapKey: unknown, row: Row): void {
    const size = this.groups.size;
    this.groups.set(mapKey, row);
    if (this.groups.size === size) return;
    this.bytes += this.entryBytes;
    this.budget.usedBytes += this.entryBytes;
    if (this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }

  /** The group's state row was deleted (its last row went). */
  delete(mapKey: unknown): void {
    if (!this.groups.delete(mapKey)) return;
    this.bytes -= this.entryBytes;
    this.budget.usedBytes -= this.entryBytes;
  }

  clear(): void {
    this.groups.clear();
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

  /** Drops groups in insertion order until the budget is met (the cache is no longer complete). */
  evictOldest(budget: GroupCacheBudget): void {
    if (budget.usedBytes <= budget.limitBytes || this.groups.size === 0) return;
    this.complete = false;
    for (const mapKey of this.groups.keys()) {
      if (budget.usedBytes <= budget.limitBytes) return;
      this.groups.delete(mapKey);
      this.bytes -= this.entryBytes;
      budget.usedBytes -= this.entryBytes;
    }
  }
}
