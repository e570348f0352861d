// What the join and aggregate caches charge to the group-cache budget against what they hold on
// V8's heap, measured here: the heap used (plus array buffers: a big group's index keeps its
// Int32Arrays outside the heap) after full collections, before and after filling a cache, over
// the budget's charge. Shapes are q4's and q5's: a join side stored by row id (bigint key, rows of
// two bigints and a timestamp, 1-6 rows a key, the probe's key a bigint of its own), a side of 40
// rows a key with its index, aggregates keyed by one bigint, by (auction, category) (one inner Map
// a first value) and by (window, auction) (many). Each cache runs at its budget (evicting), as it
// does late in a run. Within 15% either way: the charge follows V8's layout (join-cache.ts,
// agg-cache.ts, storage/row-cache.ts rowBytes); a charge per group that missed the group arrays'
// capacity or the inner Maps was off by a factor of 2-4 and fails.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type as scalar } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import { emptyGroup, GroupCacheBudget, JoinSideCache } from '../join-cache.js';
import { AggregateGroupCache } from '../agg-cache.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapBytes(): number {
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** Heap bytes the caches built by `fill` hold (`fill` returns them, kept alive until measured), and their charge. */
function measure(fill: (budget: GroupCacheBudget) => unknown, limitBytes: number): { heap: number; charged: number } {
  const before = heapBytes();
  const budget = new GroupCacheBudget(limitBytes);
  const kept = fill(budget);
  const heap = heapBytes() - before;
  if (process.env["CACHE_HEAP_DEBUG"]) console.log(`heap ${heap} charged ${budget.usedBytes} ratio ${(budget.usedBytes / heap).toFixed(3)}`);
  expect(kept).toBeDefined();
  return { heap, charged: budget.usedBytes };
}

const int8 = scalar('int8');
const timestamp = scalar('timestamp');
/** A timestamp in microseconds (a heap number, as the Nexmark source's are). */
const micros = (i: number): number => 1_700_000_000_000_000 + i * 1_000;

describe('the group caches charge what they hold on the heap', () => {
  it('a join side stored by row id (q4: bigint keys, 1-6 rows a key)', () => {
    const { heap, charged } = measure((budget) => {
      const cache = new JoinSideCache(budget, [int8, int8, timestamp], 1, true);
      let id = 0n;
      for (let k = 0; k < 60_000; k++) {
        const group = emptyGroup();
        // The probe's key: a bigint of its own, not the cached rows'.
        cache.put(cache.mapKey([BigInt(k) * 7n]), group);
        for (let r = 0; r < 1 + (k % 6); r++) cache.append(group, [BigInt(k) * 7n, BigInt(r * 1_000 + k), micros(k + r)], 1, 0, id++);
      }
      return cache;
    }, 24 << 20);
    expect(charged).toBeGreaterThan(20 << 20); // at its budget
    expect(Math.abs(heap - charged) / heap).toBeLessThan(0.15);
  });

  it('a side of 40 rows a key, found by its index', () => {
    const { heap, charged } = measure((budget) => {
      const cache = new JoinSideCache(budget, [int8, int8], 1);
      for (let k = 0; k < 4_000; k++) {
        const group = emptyGroup();
        cache.put(cache.mapKey([BigInt(k)]), group);
        for (let r = 0; r < 40; r++) cache.append(group, [BigInt(k), BigInt(r)], 1, 0);
        cache.find(group, [BigInt(k), 3n]);
      }
      return cache;
    }, 12 << 20);
    expect(charged).toBeGreaterThan(10 << 20);
    expect(Math.abs(heap - charged) / heap).toBeLessThan(0.15);
  });

  /** An aggregate's state row as hash-aggregate.ts encodes it: key ++ row count ++ accumulators, at its exact length (a copy). */
  function stateRow(key: readonly Value[], accumulators: readonly Value[]): Row {
    return [...key, BigInt(key.length + 2), ...accumulators].slice();
  }

  it('an aggregate keyed by one bigint (max(price) per auction), rows rewritten', () => {
    const { heap, charged } = measure((budget) => {
      const cache = new AggregateGroupCache(budget, 1);
      for (let round = 0; round < 2; round++) {
        for (let k = 0; k < 80_000; k++) {
          const key = [BigInt(k)];
          cache.set(key, stateRow(key, [BigInt(k * 10 + round)]));
        }
      }
      return cache;
    }, 8 << 20);
    expect(charged).toBeGreaterThan(6 << 20);
    expect(Math.abs(heap - charged) / heap).toBeLessThan(0.15);
  });

  it('an aggregate keyed by (auction, category): an inner Map per auction', () => {
    const { heap, charged } = measure((budget) => {
      const cache = new AggregateGroupCache(budget, 2);
      for (let k = 0; k < 60_000; k++) {
        const key = [BigInt(k), BigInt(k % 10)];
        cache.set(key, stateRow(key, [BigInt(k * 10)]));
      }
      return cache;
    }, 12 << 20);
    expect(charged).toBeGreaterThan(10 << 20);
    expect(Math.abs(heap - charged) / heap).toBeLessThan(0.15);
  });

  it('an aggregate keyed by (window, auction): many groups a window', () => {
    const { heap, charged } = measure((budget) => {
      const cache = new AggregateGroupCache(budget, 2);
      for (let w = 0; w < 40; w++) {
        for (let a = 0; a < 3_000; a++) {
          // Each group's window start its own heap number, as HOP's output rows carry them.
          const key = [micros(w * 10_000), BigInt(a)];
          cache.set(key, stateRow(key, [BigInt(a)]));
        }
      }
      return cache;
    }, 16 << 20);
    expect(charged).toBeGreaterThan(14 << 20);
    expect(Math.abs(heap - charged) / heap).toBeLessThan(0.15);
  });
});
