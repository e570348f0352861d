// The memory tier: per-table caches of decoded committed rows (the latest version of each key,
// or "known absent"), with byte accounting against one store-wide budget (--memory-limit).
// Eviction is CLOCK (second chance): a hit only sets a flag, so a cache hit costs one Map lookup;
// when the budget is exceeded, a hand moving through the entries in insertion order drops those not
// hit since it last passed, first in the cache that is growing, then in the others. Evicted state
// is read back from the backend.

import type { Row, Value } from '../sql/value.js';

interface CacheEntry {
  row: Row | null;
  bytes: number;
  referenced: boolean;
}

// What an entry takes on the V8 heap (Node 20 x64: no pointer compression, 8-byte slots, objects
// 8-aligned), measured by bench/row-cache.ts (heapUsed after a full GC over 100k entries; the table
// is in storage/DESIGN.md). The charge follows V8's layout so it is honest for every row shape:
/**
 * The Map's share: a slot is 28 bytes (key, value, chain, half a bucket). The table has a power of
 * two of slots and keeps evicted entries' slots until it fills and rehashes, growing when half or
 * more are live: under steady eviction (a cache at its budget) it holds 2 to 4 slots per live
 * entry (measured 3.8 at 34k entries), while only filling 1 to 2. Charged at 3 slots.
 */
export const MAP_SLOT_BYTES = 84;
/** The { row, bytes, referenced } object: header 24 + 3 fields. */
const ENTRY_OBJECT_BYTES = 48;
/** The row array: JSArray 32 + its elements' header 16 (+ 8 per element). */
const ROW_ARRAY_BYTES = 48;
const HEAP_NUMBER_BYTES = 16;
const BIGINT_64_BYTES = 24;
/** A Uint8Array's JSTypedArray + JSArrayBuffer objects (measured 216 with a 10-byte store). */
const BYTES_OBJECT_BYTES = 208;
/** Numeric (object 48 + its unscaled BigInt 24); Interval is 48 + a heap number; others flat. */
const OBJECT_VALUE_BYTES = 72;

/** A sequential one-byte string of `length` chars: header 16 + chars, 8-aligned. */
function flatStringBytes(length: number): number {
  return (16 + length + 7) & ~7;
}

/**
 * The bytes the cache charges for `key` -> `row` (null: known absent): the Map slot, the entry
 * object, the key string and the row with its values. No allocation; one pass over the row.
 * Strings are charged as one byte per char (decoded ASCII/latin1 text; non-latin1 text takes two).
 */
export function entryBytes(key: string, row: Row | null): number {
  // ByteWriter.latin1 returns a flat string for every length.
  const bytes = MAP_SLOT_BYTES + ENTRY_OBJECT_BYTES + flatStringBytes(key.length);
  return row === null ? bytes : bytes + rowBytes(row);
}

/**
 * What a row array with its values takes on the V8 heap (an exact-length array: one built by push
 * keeps spare capacity this does not see). The join cache (executor/stream/join-cache.ts) charges its rows with it.
 */
export function rowBytes(row: Row): number {
  let bytes = ROW_ARRAY_BYTES + 8 * row.length;
  for (let index = 0; index < row.length; index++) bytes += valueBytes(row[index]!);
  return bytes;
}

/** What a value takes on the V8 heap besides the slot that points to it (0 for small integers, booleans and NULL). */
export function valueBytes(value: Value): number {
  switch (typeof value) {
    case 'number':
      return (value | 0) !== value ? HEAP_NUMBER_BYTES : 0; // not a small integer: a heap number
    case 'string':
      return value.length > 0 ? flatStringBytes(value.length) : 0;
    case 'bigint':
      return BIGINT_64_BYTES;
    case 'object':
      if (value instanceof Uint8Array) return BYTES_OBJECT_BYTES + value.length;
      return value !== null ? OBJECT_VALUE_BYTES : 0;
    default:
      return 0; // booleans and NULL are shared constants
  }
}

/** When the largest caches tie in size, each takes a turn of at most this many bytes. */
const TIE_STEP_BYTES = 64 * 1024;

/**
 * A byte budget shared by caches that evicts from the **largest** cache first (down to the next
 * largest, then those two, ...), never the growing one for being the one that grows: the row
 * caches' MemoryBudget and the join and aggregate caches' GroupCacheBudget (stream/join-cache.ts).
 * A cache evicts down to `limitBytes`, which during one step of `evictLargestFirst` is that step's
 * target instead of the budget.
 */
export abstract class LargestFirstBudget<C extends { readonly bytes: number }> {
  usedBytes = 0;
  protected readonly caches = new Set<C>();
  protected budgetBytes: number;
  /** While one step runs: what the evicting cache brings `usedBytes` down to. */
  private stepTargetBytes: number | undefined;

  constructor(limitBytes: number) {
    this.budgetBytes = limitBytes;
  }

  /** What the caches evict down to: the budget, or during an eviction step that step's target (below it). */
  get limitBytes(): number {
    return this.stepTargetBytes ?? this.budgetBytes;
  }

  register(cache: C): void {
    this.caches.add(cache);
  }

  unregister(cache: C): void {
    this.caches.delete(cache);
  }

  /** Has `cache` drop its oldest entries until `usedBytes` is at most `limitBytes`. */
  protected abstract evictDown(cache: C): void;

  /** Evicts from the largest caches first until within the budget; returns the bytes evicted. */
  protected evictLargestFirst(): number {
    const before = this.usedBytes;
    while (this.usedBytes > this.budgetBytes) {
      let largest: C | undefined;
      let second = 0;
      for (const cache of this.caches) {
        if (largest === undefined || cache.bytes > largest.bytes) {
          if (largest !== undefined) second = largest.bytes;
          largest = cache;
        } else if (cache.bytes > second) second = cache.bytes;
      }
      if (largest === undefined || largest.bytes <= 0) break;
      const over = this.usedBytes - this.budgetBytes;
      // Down to the next largest; caches of one size take turns in steps of at most half the excess.
      const gap = largest.bytes - second;
      const used = this.usedBytes;
      this.stepTargetBytes = used - Math.min(over, gap > 0 ? gap : Math.min(TIE_STEP_BYTES, Math.ceil(over / 2)));
      try {
        this.evictDown(largest);
      } finally {
        this.stepTargetBytes = undefined;
      }
      if (this.usedBytes >= used) break; // nothing evictable left in it
    }
    return Math.max(0, before - this.usedBytes);
  }
}

export class MemoryBudget extends LargestFirstBudget<RowCache> {
  /** Bytes evicted because the limit was lowered (setLimit) since start. */
  loweredEvictedBytes = 0;

  /** Evicts from every cache but `except` until under the limit. */
  reclaimFromOthers(except: RowCache): void {
    for (const cache of this.caches) {
      if (this.usedBytes <= this.limitBytes) return;
      if (cache !== except) cache.evictUntilWithinBudget();
    }
  }

  /**
   * Moves the limit at run time (the engine's memory manager). A limit of 0 stays what it was at
   * construction (the memory tier disabled), so a positive limit is never lowered to 0 here. When
   * lowered below what is cached, the largest caches evict first (down to the next largest, then
   * both, ...). Returns the bytes evicted.
   */
  setLimit(limitBytes: number): number {
    if (this.budgetBytes <= 0) return 0;
    this.budgetBytes = Math.max(1, Math.floor(limitBytes));
    const evicted = this.evictLargestFirst();
    this.loweredEvictedBytes += evicted;
    return evicted;
  }

  protected evictDown(cache: RowCache): void {
    cache.evictUntilWithinBudget();
  }
}

export class RowCache {
  private readonly entries = new Map<string, CacheEntry>();
  private hand: Iterator<[string, CacheEntry]> | undefined;
  private readonly budget: MemoryBudget;
  bytes = 0;
  hits = 0;
  misses = 0;
  evictions = 0;

  constructor(budget: MemoryBudget) {
    this.budget = budget;
    budget.register(this);
  }

  /** The cached row, null for "known absent", undefined when not cached. */
  get(key: string): Row | null | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    entry.referenced = true;
    return entry.row;
  }

  set(key: string, row: Row | null): void {
    if (this.budget.limitBytes <= 0) return; // memory tier disabled: every read goes to the backend
    const bytes = entryBytes(key, row);
    const existing = this.entries.get(key);
    if (existing !== undefined) {
      this.adjust(bytes - existing.bytes);
      existing.row = row;
      existing.bytes = bytes;
      existing.referenced = true;
    } else {
      this.entries.set(key, { row, bytes, referenced: false });
      this.adjust(bytes);
    }
    if (this.budget.usedBytes > this.budget.limitBytes) {
      this.evictUntilWithinBudget();
      if (this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaimFromOthers(this);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.adjust(-entry.bytes);
  }

  /** Drops every entry whose key sorts below `end` (a range delete's: the keys are gone, not cached as absent). */
  deleteBelow(end: string): void {
    let freed = 0;
    for (const [key, entry] of this.entries) {
      if (key < end) {
        this.entries.delete(key);
        freed += entry.bytes;
      }
    }
    if (freed > 0) this.adjust(-freed);
  }

  clear(): void {
    this.entries.clear();
    this.hand = undefined;
    this.adjust(-this.bytes);
  }

  dispose(): void {
    this.clear();
    this.budget.unregister(this);
  }

  get size(): number {
    return this.entries.size;
  }

  evictUntilWithinBudget(): void {
    const budget = this.budget;
    // The clock hand is a live Map iterator kept between calls: it resumes where it stopped, so the
    // slots of entries evicted behind it are never walked again (restarting from the front walked
    // every deleted slot still in the Map's table on each call: O(n) per insert once over budget,
    // 150 s in a 1M-row CREATE INDEX). A hit entry it passes loses its flag and stays in place.
    let budgetSteps = this.entries.size * 2;
    while (budget.usedBytes > budget.limitBytes && budgetSteps-- > 0) {
      if (this.hand === undefined) this.hand = this.entries.entries();
      const step = this.hand.next();
      if (step.done === true) {
        this.hand = undefined;
        continue;
      }
      const [key, entry] = step.value;
      if (entry.referenced) {
        entry.referenced = false;
        continue;
      }
      this.entries.delete(key);
      this.adjust(-entry.bytes);
      this.evictions++;
    }
  }

  private adjust(delta: number): void {
    this.bytes += delta;
    this.budget.usedBytes += delta;
  }
}
