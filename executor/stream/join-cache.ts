// The in-memory cache of StreamHashJoin's key groups (RisingWave's join-side cache): per join side,
// the side's rows of recently used join keys, exactly as in the state table (rows with counts and
// degrees), so a probe of a cached key reads no state and a change to a cached key's own row needs
// no point read. The join keeps each cached group equal to its state rows by updating it in place
// with every write it makes (the join is the only writer of its state tables).
//
// A side is **complete** when every one of its groups is in the cache: a probe of a key it does not
// hold is then an empty group with no read at all (q7's bids probing the few window maxima by
// price: almost every probe finds nothing). A side becomes complete when its whole state table
// (at most `completeLoadRows` rows) is loaded at the first change the join sees (a new view's sides
// are empty, so they start complete), and stops being complete when it loses a group to eviction;
// from then on it holds the keys probed or written since, oldest evicted first.
//
// Memory: every cache of the process draws on one GroupCacheBudget (a share of --memory-limit);
// over it, the largest cache drops its oldest groups first (insertion order), then the next largest.
// An aborted epoch empties every cache (its writes are gone from the state); a restart starts cold.
//
// Only keys and rows whose types compare equal exactly when their state-key encodings are equal
// (integers, dates, timestamps, text, bool: all primitives compared with ===) are cached; a join
// over other types keeps reading its state.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { KeyMap } from '../batch/row-hash.js';
import { rowBytes } from '../../storage/row-cache.js';

/** A side's rows of one join key: parallel arrays; a row whose count is 0 was deleted (kept until compaction). */
export interface JoinGroup {
  readonly rows: Row[];
  readonly counts: number[];
  readonly degrees: number[];
  readonly dirty: boolean[];
  /** Each row's source row id, on a side stored by (key, row id) (`HashJoinOperator.rowIds`); empty on other sides. */
  readonly ids: Value[];
  /** Rows by value, built once the group is larger than INDEX_FROM_ROWS. */
  index: KeyMap<number> | undefined;
  /** Rows with count 0. */
  deleted: number;
  /** Bytes charged to the budget while the group is cached (0 when it is not). */
  bytes: number;
  cached: boolean;
}

/** Groups this large are found by hash, smaller ones by a linear scan. */
const INDEX_FROM_ROWS = 16;
const GROUP_OVERHEAD_BYTES = 160;

const CACHEABLE = new Set(['int2', 'int4', 'int8', 'date', 'timestamp', 'timestamptz', 'text', 'varchar', 'bool']);

/** True when values of these types are equal exactly when === says so and their state keys are equal. */
export function cacheableTypes(types: readonly DataType[]): boolean {
  return types.every((type) => CACHEABLE.has(type.name));
}

export function emptyGroup(): JoinGroup {
  return { rows: [], counts: [], degrees: [], dirty: [], ids: [], index: undefined, deleted: 0, bytes: 0, cached: false };
}

/** A cache drawing on a GroupCacheBudget: a join side's (JoinSideCache) or an aggregate's (agg-cache.ts). */
export interface BudgetedCache {
  /** Bytes it holds, charged to the budget. */
  readonly bytes: number;
  /** Drops its oldest groups until the budget's `usedBytes` is at most its `limitBytes`. */
  evictOldest(budget: GroupCacheBudget): void;
}

/** A reclaim step evicts at least this much from the largest cache when caches tie in size. */
const RECLAIM_STEP_BYTES = 64 * 1024;

/**
 * One budget for the join and aggregate caches of a process. Over it, the **largest** cache evicts
 * first (down to the next largest, then those two, ...), never the growing one for being the one
 * that grows: a small, fully cached join side keeps its groups (and stays complete) while a large
 * one gives back. The memory manager (executor/memory-manager.ts) moves the limit at run time.
 */
export class GroupCacheBudget {
  usedBytes = 0;
  /** A side (an aggregate) whose state table holds at most this many rows is loaded whole at the first change. */
  completeLoadRows = 10_000;
  /** Bytes evicted to meet the budget since start (reclaims and lowered limits). */
  evictedBytes = 0;
  private readonly caches = new Set<BudgetedCache>();
  private budgetBytes: number;
  /** While one reclaim step runs: what the evicting cache brings `usedBytes` down to. */
  private stepTargetBytes: number | undefined;

  constructor(limitBytes: number) {
    this.budgetBytes = Math.max(0, limitBytes);
  }

  /** What the caches evict down to: the budget, or during a reclaim step that step's target (below it). */
  get limitBytes(): number {
    return this.stepTargetBytes ?? this.budgetBytes;
  }

  /** The budget itself (the memory manager's share for the group caches). */
  get budget(): number {
    return this.budgetBytes;
  }

  register(cache: BudgetedCache): void {
    this.caches.add(cache);
  }

  unregister(cache: BudgetedCache): void {
    this.caches.delete(cache);
  }

  /** Moves the budget; when lowered below what is cached, evicts from the largest caches first. Returns the bytes evicted. */
  setLimit(limitBytes: number): number {
    this.budgetBytes = Math.max(0, Math.floor(limitBytes));
    return this.evictLargestFirst();
  }

  /** Called by a cache that grew past the budget: evicts from the largest caches first until within it. */
  reclaim(_growing: BudgetedCache): void {
    this.evictLargestFirst();
  }

  private evictLargestFirst(): number {
    const before = this.usedBytes;
    while (this.usedBytes > this.budgetBytes) {
      let largest: BudgetedCache | undefined;
      let second = 0;
      for (const cache of this.caches) {
        if (largest === undefined || cache.bytes > largest.bytes) {
          if (largest !== undefined) second = largest.bytes;
          largest = cache;
        } else if (cache.bytes > second) second = cache.bytes;
      }
      if (largest === undefined || largest.bytes <= 0) break;
      const over = this.usedBytes - this.budgetBytes;
      const step = Math.min(over, Math.max(largest.bytes - second, RECLAIM_STEP_BYTES));
      const used = this.usedBytes;
      this.stepTargetBytes = used - step;
      try {
        largest.evictOldest(this);
      } finally {
        this.stepTargetBytes = undefined;
      }
      if (this.usedBytes >= used) break; // nothing evictable left in it
    }
    const evicted = Math.max(0, before - this.usedBytes);
    this.evictedBytes += evicted;
    return evicted;
  }
}

export class JoinSideCache implements BudgetedCache {
  private readonly groups = new Map<unknown, JoinGroup>();
  /** Every group of the side is cached: a key not here has no rows. */
  complete = false;
  /** The whole side was tried (loaded, or found too large) since the last clear. */
  loaded = false;
  rows = 0;
  bytes = 0;
  hits = 0;
  misses = 0;
  /** A cached row's charge besides the row itself: its slots in counts, degrees, dirty (and ids). */
  private readonly rowSlotBytes: number;
  /** One key column: the value itself is the Map key (bigint, number, string and boolean compare by value). */
  private readonly single: boolean;

  constructor(
    private readonly budget: GroupCacheBudget,
    private readonly rowTypes: readonly DataType[],
    keyWidth: number,
    /** The side is stored by (key, source row id): each cached row also holds its id. */
    rowIds = false,
  ) {
    // The row itself is charged by rowBytes (its array and values, strings by their length): a flat
    // 16 bytes a column saw none of q4's auction and bid texts, whose cache then held about twice
    // its budget (a live heap of 0.93-1.0 GiB against 0.44 GiB charged at 10M events).
    this.rowSlotBytes = 24 + (rowIds ? 16 : 0);
    this.single = keyWidth === 1;
    budget.register(this);
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

  get(mapKey: unknown): JoinGroup | undefined {
    const group = this.groups.get(mapKey);
    if (group === undefined) this.misses++;
    else this.hits++;
    return group;
  }

  /** Caches a group read from the state (or a new one of a complete side). */
  put(mapKey: unknown, group: JoinGroup): void {
    this.groups.set(mapKey, group);
    group.cached = true;
    group.bytes = 0;
    this.rows += group.rows.length;
    let bytes = GROUP_OVERHEAD_BYTES + group.rows.length * this.rowSlotBytes;
    for (let j = 0; j < group.rows.length; j++) bytes += rowBytes(group.rows[j]!);
    this.account(group, bytes);
  }

  /** Appends a row (with its source row id on a side stored by row id) to a cached group. */
  append(group: JoinGroup, row: Row, count: number, degree: number, id?: Value): void {
    const position = group.rows.length;
    group.rows.push(row);
    group.counts.push(count);
    group.degrees.push(degree);
    group.dirty.push(false);
    if (id !== undefined) group.ids.push(id);
    if (group.index !== undefined) group.index.add(row, position);
    if (!group.cached) return;
    this.rows++;
    this.account(group, this.rowSlotBytes + rowBytes(row));
  }

  /** A row's position in the group, or -1. */
  find(group: JoinGroup, row: Row): number {
    const rows = group.rows;
    if (rows.length > INDEX_FROM_ROWS) {
      if (group.index === undefined) {
        const index = new KeyMap<number>(this.rowTypes);
        for (let j = 0; j < rows.length; j++) index.add(rows[j]!, j);
        group.index = index;
      }
      const at = group.index.get(row);
      return at ?? -1;
    }
    const width = row.length;
    outer: for (let j = 0; j < rows.length; j++) {
      const candidate = rows[j]!;
      for (let c = 0; c < width; c++) if (candidate[c] !== row[c]) continue outer;
      return j;
    }
    return -1;
  }

  /** Drops the rows deleted from a group when they are more than the rows left. */
  compact(group: JoinGroup): void {
    if (group.deleted <= INDEX_FROM_ROWS || group.deleted * 2 <= group.rows.length) return;
    const withIds = group.ids.length > 0;
    let kept = 0;
    let removedBytes = 0;
    for (let j = 0; j < group.rows.length; j++) {
      if (group.counts[j]! <= 0) {
        if (group.cached) removedBytes += this.rowSlotBytes + rowBytes(group.rows[j]!);
        continue;
      }
      group.rows[kept] = group.rows[j]!;
      group.counts[kept] = group.counts[j]!;
      group.degrees[kept] = group.degrees[j]!;
      group.dirty[kept] = false;
      if (withIds) group.ids[kept] = group.ids[j]!;
      kept++;
    }
    const removed = group.rows.length - kept;
    group.rows.length = kept;
    group.counts.length = kept;
    group.degrees.length = kept;
    group.dirty.length = kept;
    if (withIds) group.ids.length = kept;
    group.index = undefined;
    group.deleted = 0;
    if (!group.cached) return;
    this.rows -= removed;
    this.account(group, -removedBytes);
  }

  clear(): void {
    for (const group of this.groups.values()) group.cached = false;
    this.groups.clear();
    this.budget.usedBytes -= this.bytes;
    this.bytes = 0;
    this.rows = 0;
    this.complete = false;
  }

  /** Empties the cache and forgets that the side was loaded (an aborted epoch). */
  reset(): void {
    this.clear();
    this.loaded = false;
  }

  dispose(): void {
    this.reset();
    this.budget.unregister(this);
  }

  /** Drops groups in insertion order until the budget is met (the side is no longer complete). */
  evictOldest(budget: GroupCacheBudget): void {
    if (budget.usedBytes <= budget.limitBytes || this.groups.size === 0) return;
    this.complete = false;
    for (const [mapKey, group] of this.groups) {
      if (budget.usedBytes <= budget.limitBytes) return;
      this.groups.delete(mapKey);
      group.cached = false;
      this.bytes -= group.bytes;
      budget.usedBytes -= group.bytes;
      this.rows -= group.rows.length;
    }
  }

  private account(group: JoinGroup, delta: number): void {
    group.bytes += delta;
    this.bytes += delta;
    this.budget.usedBytes += delta;
    if (delta > 0 && this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }
}
