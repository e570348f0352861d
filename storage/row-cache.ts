// The memory tier: per-table caches of decoded committed rows (the latest version of each key,
// or "known absent"), with byte accounting against one store-wide budget (--memory-limit).
// Eviction is CLOCK (second chance): a hit only sets a flag, so a cache hit costs one Map lookup;
// when the budget is exceeded, a hand moving through the entries in insertion order drops those not
// hit since it last passed, first in the cache that is growing, then in the others. Evicted state
// is read back from the backend.

import type { Row } from '../sql/value.js';
import { estimateRowBytes } from './row-codec.js';

interface CacheEntry {
  row: Row | null;
  bytes: number;
  referenced: boolean;
}

const ENTRY_OVERHEAD_BYTES = 80;

export class MemoryBudget {
  readonly limitBytes: number;
  usedBytes = 0;
  private readonly caches = new Set<RowCache>();

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  register(cache: RowCache): void {
    this.caches.add(cache);
  }

  unregister(cache: RowCache): void {
    this.caches.delete(cache);
  }

  /** Evicts from every cache but `except` until under the limit. */
  reclaimFromOthers(except: RowCache): void {
    for (const cache of this.caches) {
      if (this.usedBytes <= this.limitBytes) return;
      if (cache !== except) cache.evictUntilWithinBudget();
    }
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
    const bytes = ENTRY_OVERHEAD_BYTES + key.length * 2 + (row === null ? 0 : estimateRowBytes(row));
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
