// executor/engine/heap-growth.ts refuses percentages V8 would misread. Its effect (the heap kept within
// the factor of the live heap) is measured at full size by bench/nexmark.ts (rss_*_quarter,
// --memory-trace; BENCHMARKS.md "Memory under `--memory-limit`"), not here: V8's collection schedule is
// a heuristic a short test cannot pin down.
import { describe, expect, it } from 'vitest';
import { DEFAULT_HEAP_GROWING_PERCENT, setHeapGrowingPercent } from '../heap-growth.js';

describe('setHeapGrowingPercent', () => {
  it('refuses percentages that are not integers from 0 to 1000 and takes the default', () => {
    for (const bad of [-1, 1.5, 1001, Number.NaN]) expect(() => setHeapGrowingPercent(bad)).toThrow(RangeError);
    expect(() => setHeapGrowingPercent(DEFAULT_HEAP_GROWING_PERCENT)).not.toThrow();
    expect(() => setHeapGrowingPercent(0)).not.toThrow();
  });
});
