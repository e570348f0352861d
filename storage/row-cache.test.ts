// The memory tier: byte accounting under one budget shared by every table's cache, CLOCK eviction
// (entries hit since the last pass survive it), and reclaiming from other caches.
import { describe, expect, it } from 'vitest';
import { MemoryBudget, RowCache } from './row-cache.js';
import { estimateRowBytes } from './row-codec.js';

const row = (id: number) => [id, `payload ${id}`.padEnd(100, '.')];

describe('row cache', () => {
  it('stays within the budget and counts bytes exactly back to zero', () => {
    const budget = new MemoryBudget(20_000);
    const cache = new RowCache(budget);
    for (let id = 0; id < 1000; id++) cache.set(`k${id}`, row(id));
    expect(budget.usedBytes).toBeLessThanOrEqual(budget.limitBytes);
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size).toBeLessThan(1000);
    expect(cache.evictions).toBe(1000 - cache.size);
    // Each entry's cost: fixed overhead + key chars + the row estimate.
    const perEntry = 80 + 'k999'.length * 2 + estimateRowBytes(row(999));
    expect(cache.bytes).toBeLessThanOrEqual(cache.size * perEntry);
    cache.clear();
    expect(budget.usedBytes).toBe(0);
    expect(cache.bytes).toBe(0);
  });

  it('keeps recently hit entries over cold ones (second chance)', () => {
    const budget = new MemoryBudget(10 * (80 + 'k10'.length * 2 + estimateRowBytes(row(10))));
    const cache = new RowCache(budget);
    for (let id = 10; id < 20; id++) cache.set(`k${id}`, row(id));
    expect(cache.size).toBe(10);
    cache.get('k10');
    cache.get('k11');
    for (let id = 20; id < 25; id++) cache.set(`k${id}`, row(id));
    expect(cache.get('k10')).toEqual(row(10));
    expect(cache.get('k11')).toEqual(row(11));
    expect(cache.get('k12')).toBeUndefined();
    expect(cache.get('k24')).toEqual(row(24));
  });

  it('reclaims from other tables when one grows, and caches "absent" as null', () => {
    const budget = new MemoryBudget(30_000);
    const first = new RowCache(budget);
    const second = new RowCache(budget);
    for (let id = 0; id < 100; id++) first.set(`a${id}`, row(id));
    const firstBefore = first.size;
    for (let id = 0; id < 1000; id++) second.set(`b${id}`, id % 2 === 0 ? row(id) : null);
    expect(budget.usedBytes).toBeLessThanOrEqual(budget.limitBytes);
    expect(first.size).toBeLessThanOrEqual(firstBefore);
    expect(first.bytes + second.bytes).toBe(budget.usedBytes);
    second.set('known absent', null);
    expect(second.get('known absent')).toBeNull();
    expect(second.get('never seen')).toBeUndefined();
    second.dispose();
    expect(budget.usedBytes).toBe(first.bytes);
  });

  it('is off at a zero budget', () => {
    const budget = new MemoryBudget(0);
    const cache = new RowCache(budget);
    cache.set('k', row(1));
    expect(cache.get('k')).toBeUndefined();
    expect(budget.usedBytes).toBe(0);
  });
});
