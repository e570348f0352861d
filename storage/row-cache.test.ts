// The memory tier: byte accounting under one budget shared by every table's cache, CLOCK eviction
// (entries hit since the last pass survive it), and reclaiming from other caches.
import { describe, expect, it } from 'vitest';
import { Numeric } from '../sql/numeric.js';
import { entryBytes, MemoryBudget, RowCache } from './row-cache.js';

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
    // Each entry's cost: the charge of the largest key and row.
    const perEntry = entryBytes('k999', row(999));
    expect(cache.bytes).toBeLessThanOrEqual(cache.size * perEntry);
    cache.clear();
    expect(budget.usedBytes).toBe(0);
    expect(cache.bytes).toBe(0);
  });

  it('keeps recently hit entries over cold ones (second chance)', () => {
    const budget = new MemoryBudget(10 * entryBytes('k10', row(10)));
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
    const budget = new MemoryBudget(60_000);
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

  // The charge against sizes computed by hand from V8's x64 layout (8-byte slots, 8-aligned
  // objects; storage/DESIGN.md): Map share 84, entry object 48, key string 16 + chars (8-aligned;
  // 13..24 chars: a 12-char head of 32 + a 32-byte ConsString per further char), row array 48 + 8
  // per element, a string value 16 + chars, a heap number 16, an int8 BigInt 24, a Numeric 72, a
  // Uint8Array 208 + its bytes; small integers, booleans and NULL nothing.
  it('charges each entry its heap layout, computed by hand', () => {
    expect(entryBytes('k1', null)).toBe(84 + 48 + 24);
    expect(entryBytes('k1', [1, 'abc', null, true])).toBe(84 + 48 + 24 + (48 + 4 * 8) + 24);
    expect(entryBytes('x'.repeat(12), null)).toBe(84 + 48 + 32);
    expect(entryBytes('x'.repeat(14), null)).toBe(84 + 48 + 32);
    expect(entryBytes('x'.repeat(24), null)).toBe(84 + 48 + 40);
    expect(entryBytes('x'.repeat(30), null)).toBe(84 + 48 + 48);
    const mixed = [1.5, 2 ** 40, 7n, new Uint8Array(10), new Numeric(12345n, 2), '', 'x'.repeat(100)];
    expect(entryBytes('k1', mixed)).toBe(84 + 48 + 24 + (48 + 7 * 8) + 16 + 16 + 24 + (208 + 10) + 72 + 0 + 120);
  });

  it('evicts so the charged bytes stay under a budget of a known number of entries', () => {
    const perEntry = 84 + 48 + 24 + (48 + 4 * 8) + 24; // key of 2 chars, row [small int, 'abc', null, true]
    const budget = new MemoryBudget(10 * perEntry + perEntry - 1); // room for 10 entries, not 11
    const cache = new RowCache(budget);
    for (let id = 0; id < 50; id++) {
      cache.set(`${String.fromCharCode(97 + (id % 26))}${id % 10}`, [id, 'abc', null, true]);
      expect(budget.usedBytes).toBeLessThanOrEqual(budget.limitBytes);
    }
    expect(cache.size).toBe(10);
    expect(cache.bytes).toBe(10 * perEntry);
    expect(cache.evictions).toBe(40);
  });

  it('is off at a zero budget', () => {
    const budget = new MemoryBudget(0);
    const cache = new RowCache(budget);
    cache.set('k', row(1));
    expect(cache.get('k')).toBeUndefined();
    expect(budget.usedBytes).toBe(0);
  });
});
