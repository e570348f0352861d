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
import { KeyMap } from '../expr/row-hash.js';
import { LargestFirstBudget, MAP_SLOT_BYTES, rowBytes, valueBytes } from '../../storage/row-cache.js';

/**
 * A side's rows of one join key, in **one** array: per row `stride` slots, the row (`JOIN_ROW`), its
 * count (`JOIN_COUNT`), its degree (`JOIN_DEGREE`) and, on a side stored by (key, row id)
 * (`HashJoinOperator.rowIds`), its source row id (`JOIN_ID`). A row whose count is 0 was deleted
 * (kept until compaction). One array instead of five (rows, counts, degrees, dirty flags, ids):
 * each of those had V8's 17-slot first growth, so a one-row group took about 1,000 bytes of arrays
 * (q4 at 3M events: 430 MiB of join cache charged 230; `BENCHMARKS.md`, "Nexmark").
 */
export interface JoinGroup {
  readonly slots: unknown[];
  /** The slots array's capacity as V8 grows it (`pushRow`), charged while the group is cached. */
  capacity: number;
  /** Rows by value (their position), built once the group is larger than INDEX_FROM_ROWS. */
  index: KeyMap<number> | undefined;
  /** Rows with count 0. */
  deleted: number;
  /** Bytes charged to the budget while the group is cached (0 when it is not). */
  bytes: number;
  cached: boolean;
  /** The group's value of the key column its state is cleaned by (`JoinSideCache.dropClosed`), or null. */
  closesAt: Value;
}

/** Slot offsets of a row within a group's slots. */
export const JOIN_ROW = 0;
export const JOIN_COUNT = 1;
export const JOIN_DEGREE = 2;
export const JOIN_ID = 3;

/** Slots per row: row, count, degree, and the source row id on a side stored by row id. */
export function joinStride(rowIds: boolean): number {
  return rowIds ? 4 : 3;
}

/** Groups this large are found by hash, smaller ones by a linear scan. */
const INDEX_FROM_ROWS = 16;

// What a cached group takes on the V8 heap (Node 20 x64, 8-byte slots), checked against heap
// deltas by join-cache.test.ts: the JoinGroup object (header 24 + 6 fields), its slots' JSArray
// (32) and the groups Map's entry (storage/row-cache.ts's MAP_SLOT_BYTES, under eviction).
const GROUP_BYTES = 72 + 32 + MAP_SLOT_BYTES;
/** A group's index (KeyMap: its key and value arrays, a HashIndex of three Int32Arrays), measured 1.4-28 KiB for 17-1000 rows. */
const INDEX_BYTES = 800;
const INDEX_ROW_BYTES = 28;

/** The slots' backing store: a FixedArray of `capacity` slots (none while empty). */
function slotsBytes(capacity: number): number {
  return capacity === 0 ? 0 : 16 + 8 * capacity;
}

/**
 * Appends a row's slots (the id only on a side stored by row id) and keeps `capacity` as V8 grows
 * the array: a push past the end makes room for the new length + half + 16.
 */
export function pushRow(group: JoinGroup, row: Row, count: number, degree: number, id: Value | undefined): void {
  const slots = group.slots;
  if (id === undefined) slots.push(row, count, degree);
  else slots.push(row, count, degree, id);
  const length = slots.length;
  if (length > group.capacity) group.capacity = length + (length >> 1) + 16;
}

const CACHEABLE = new Set(['int2', 'int4', 'int8', 'date', 'timestamp', 'timestamptz', 'text', 'varchar', 'bool']);

/** True when values of these types are equal exactly when === says so and their state keys are equal. */
export function cacheableTypes(types: readonly DataType[]): boolean {
  return types.every((type) => CACHEABLE.has(type.name));
}

export function emptyGroup(): JoinGroup {
  return { slots: [], capacity: 0, index: undefined, deleted: 0, bytes: 0, cached: false, closesAt: null };
}

/** A cache drawing on a GroupCacheBudget: a join side's (JoinSideCache) or an aggregate's (agg-cache.ts). */
export interface BudgetedCache {
  /** Bytes it holds, charged to the budget. */
  readonly bytes: number;
  /** Drops its oldest groups until the budget's `usedBytes` is at most its `limitBytes`. */
  evictOldest(budget: GroupCacheBudget): void;
  /** Its state table got rows of keys it never saw (GroupCacheBudget.rowsAddedElsewhere): a cache that holds every group must no longer say so. */
  rowsAddedElsewhere?(): void;
  /** Empties the cache and forgets that its table was loaded (GroupCacheBudget.forgetAll). */
  reset?(): void;
}

/**
 * One budget for the join and aggregate caches of a process. Over it, the **largest** cache evicts
 * first (down to the next largest, then those two, ...; storage/row-cache.ts's LargestFirstBudget),
 * never the growing one for being the one that grows: a small, fully cached join side keeps its
 * groups (and stays complete) while a large one gives back. The memory manager
 * (executor/engine/memory-manager.ts) moves the limit at run time.
 */
export class GroupCacheBudget extends LargestFirstBudget<BudgetedCache> {
  /** A side (an aggregate) whose state table holds at most this many rows is loaded whole at the first change. */
  completeLoadRows = 10_000;
  /** Bytes evicted to meet the budget since start (reclaims and lowered limits). */
  evictedBytes = 0;

  constructor(limitBytes: number) {
    super(Math.max(0, limitBytes));
  }

  /** The budget itself (the memory manager's share for the group caches). */
  get budget(): number {
    return this.budgetBytes;
  }

  /** Moves the budget; when lowered below what is cached, evicts from the largest caches first. Returns the bytes evicted. */
  setLimit(limitBytes: number): number {
    this.budgetBytes = Math.max(0, Math.floor(limitBytes));
    return this.reclaimed();
  }

  /** Called by a cache that grew past the budget: evicts from the largest caches first until within it. */
  reclaim(_growing: BudgetedCache): void {
    this.reclaimed();
  }

  /**
   * The state tables of the caches drawing on this budget got rows of keys they never saw (a
   * keyed fragment's owner taking vnodes it never held, parallel/parallel-fragment.ts): no cache is
   * complete any more (a key it does not hold may have rows); each loads its table whole again at
   * its next change if the table is small enough.
   */
  rowsAddedElsewhere(): void {
    for (const cache of this.caches) cache.rowsAddedElsewhere?.();
  }

  /**
   * Keys the caches of this budget held may have been written by another writer since (a keyed
   * fragment's thread taking back vnodes it gave away): every cache is emptied and loads again.
   */
  forgetAll(): void {
    for (const cache of this.caches) cache.reset?.();
  }

  protected evictDown(cache: BudgetedCache): void {
    cache.evictOldest(this);
  }

  private reclaimed(): number {
    const evicted = this.evictLargestFirst();
    this.evictedBytes += evicted;
    return evicted;
  }
}

export class JoinSideCache implements BudgetedCache {
  private readonly groups = new Map<unknown, JoinGroup>();
  /** Where eviction stopped: the oldest cached group (`evictOldest`). */
  private hand: Iterator<[unknown, JoinGroup]> | undefined;
  /** Every group of the side is cached: a key not here has no rows. */
  complete = false;
  /** The whole side was tried (loaded, or found too large) since the last clear. */
  loaded = false;
  rows = 0;
  bytes = 0;
  hits = 0;
  misses = 0;
  /** Probes (the other side's changes) that found their group here. */
  probeHits = 0;
  /** Groups cached by this side's own writes to a key new to its state table (`StreamHashJoinNode.cachedGroup`). */
  groupsByWrite = 0;
  /** Slots per row in this side's groups (`joinStride`). */
  readonly stride: number;
  /** One key column: the value itself is the Map key (bigint, number, string and boolean compare by value). */
  private readonly single: boolean;

  constructor(
    private readonly budget: GroupCacheBudget,
    private readonly rowTypes: readonly DataType[],
    keyWidth: number,
    /** The side is stored by (key, source row id): each cached row also holds its id. */
    rowIds = false,
    /** The key column the side's state is cleaned by (its value kept per group for `dropClosed`), or -1. */
    private readonly cleanedColumn = -1,
  ) {
    this.stride = joinStride(rowIds);
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

  /** Caches a group read from the state (or a new one of a complete side); `key` its key values. */
  put(mapKey: unknown, group: JoinGroup, key?: readonly Value[]): void {
    this.groups.set(mapKey, group);
    if (this.cleanedColumn >= 0 && key !== undefined) group.closesAt = key[this.cleanedColumn]!;
    group.cached = true;
    group.bytes = 0;
    const slots = group.slots;
    const stride = this.stride;
    this.rows += slots.length / stride;
    // The key: a text of several columns (a cons string flattened when hashed), or one value that
    // is often not the cached rows' own (a probe's key comes from the other side's row).
    let bytes = GROUP_BYTES + slotsBytes(group.capacity) + (this.single ? valueBytes(mapKey as Value) : valueBytes(mapKey as string) + 32);
    for (let at = 0; at < slots.length; at += stride) bytes += this.slotBytes(slots, at);
    if (group.index !== undefined) bytes += INDEX_BYTES + INDEX_ROW_BYTES * group.index.size;
    this.account(group, bytes);
  }

  /** A row's own bytes (the row with its values, and its id): its slots are in the slots array's capacity. */
  private slotBytes(slots: readonly unknown[], at: number): number {
    const bytes = rowBytes(slots[at + JOIN_ROW] as Row);
    return this.stride === 4 ? bytes + valueBytes(slots[at + JOIN_ID] as Value) : bytes;
  }

  /** Appends a row (with its source row id on a side stored by row id) to a cached group. */
  append(group: JoinGroup, row: Row, count: number, degree: number, id?: Value): void {
    const position = group.slots.length / this.stride;
    const capacity = group.capacity;
    pushRow(group, row, count, degree, id);
    if (group.index !== undefined) group.index.add(row, position);
    if (!group.cached) return;
    this.rows++;
    let bytes = slotsBytes(group.capacity) - slotsBytes(capacity) + rowBytes(row) + (id === undefined ? 0 : valueBytes(id));
    if (group.index !== undefined) bytes += INDEX_ROW_BYTES;
    this.account(group, bytes);
  }

  /** A row's position in the group (its slots start at position * stride), or -1. */
  find(group: JoinGroup, row: Row): number {
    const slots = group.slots;
    const stride = this.stride;
    const size = slots.length / stride;
    if (size > INDEX_FROM_ROWS) {
      if (group.index === undefined) {
        const index = new KeyMap<number>(this.rowTypes);
        for (let j = 0; j < size; j++) index.add(slots[j * stride + JOIN_ROW] as Row, j);
        group.index = index;
        if (group.cached) this.account(group, INDEX_BYTES + INDEX_ROW_BYTES * size);
      }
      const at = group.index.get(row);
      return at ?? -1;
    }
    const width = row.length;
    outer: for (let j = 0; j < size; j++) {
      const candidate = slots[j * stride + JOIN_ROW] as Row;
      for (let c = 0; c < width; c++) if (candidate[c] !== row[c]) continue outer;
      return j;
    }
    return -1;
  }

  /** Drops the rows deleted from a group when they are more than the rows left. */
  compact(group: JoinGroup): void {
    const slots = group.slots;
    const stride = this.stride;
    const size = slots.length / stride;
    if (group.deleted <= INDEX_FROM_ROWS || group.deleted * 2 <= size) return;
    let kept = 0;
    let removedBytes = 0;
    for (let at = 0; at < slots.length; at += stride) {
      if ((slots[at + JOIN_COUNT] as number) <= 0) {
        if (group.cached) removedBytes += this.slotBytes(slots, at);
        continue;
      }
      for (let s = 0; s < stride; s++) slots[kept + s] = slots[at + s];
      kept += stride;
    }
    const removed = size - kept / stride;
    slots.length = kept;
    // V8 gives back the tail of a backing store that is more than half empty (and 16 slots over).
    const capacity = group.capacity;
    if (kept === 0) group.capacity = 0;
    else if (2 * kept + 16 <= capacity) group.capacity = kept;
    if (group.cached) {
      removedBytes += slotsBytes(capacity) - slotsBytes(group.capacity);
      if (group.index !== undefined) removedBytes += INDEX_BYTES + INDEX_ROW_BYTES * group.index.size;
    }
    group.index = undefined;
    group.deleted = 0;
    if (!group.cached) return;
    this.rows -= removed;
    this.account(group, -removedBytes);
  }

  /** Drops every group whose cleaned key column's value `closed` says closed (a range delete of the side's state). */
  dropClosed(closed: (value: Value) => boolean): void {
    for (const [mapKey, group] of this.groups) if (closed(group.closesAt)) this.drop(mapKey);
  }

  /** The key's state rows were deleted (its window closed): its group leaves the cache, which stays complete. */
  drop(mapKey: unknown): void {
    const group = this.groups.get(mapKey);
    if (group === undefined) return;
    this.groups.delete(mapKey);
    group.cached = false;
    this.bytes -= group.bytes;
    this.budget.usedBytes -= group.bytes;
    this.rows -= group.slots.length / this.stride;
  }

  clear(): void {
    for (const group of this.groups.values()) group.cached = false;
    this.groups.clear();
    this.hand = undefined;
    this.budget.usedBytes -= this.bytes;
    this.bytes = 0;
    this.rows = 0;
    this.complete = false;
  }

  rowsAddedElsewhere(): void {
    this.complete = false;
    this.loaded = false;
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

  /**
   * Drops groups in insertion order until the budget is met (the side is no longer complete). The
   * hand is a live Map iterator kept between calls, as the row cache's clock hand is: a new
   * iterator from the front walks every evicted group's slot still in the Map's table (V8 keeps
   * them until it rehashes), which made each eviction cost O(groups) once a cache was at its budget.
   */
  evictOldest(budget: GroupCacheBudget): void {
    if (budget.usedBytes <= budget.limitBytes || this.groups.size === 0) return;
    this.complete = false;
    for (;;) {
      if (budget.usedBytes <= budget.limitBytes) return;
      if (this.hand === undefined) {
        if (this.groups.size === 0) return;
        this.hand = this.groups.entries();
      }
      const step = this.hand.next();
      if (step.done === true) {
        this.hand = undefined;
        continue;
      }
      const [mapKey, group] = step.value;
      this.groups.delete(mapKey);
      group.cached = false;
      this.bytes -= group.bytes;
      budget.usedBytes -= group.bytes;
      this.rows -= group.slots.length / this.stride;
    }
  }

  private account(group: JoinGroup, delta: number): void {
    group.bytes += delta;
    this.bytes += delta;
    this.budget.usedBytes += delta;
    if (delta > 0 && this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
  }
}
