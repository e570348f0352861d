// How far V8 lets its heap grow past the live heap before the next full collection. By default V8
// picks a factor between 1.1 and 4 from its GC and mutator speeds; a streaming engine allocates
// fast (every batch's rows, keys and changes), so V8 picks near the top: at 10M Nexmark events q5's
// live heap was about 1.5 GiB (the 1 GiB row caches, the join and aggregate caches) and its heap
// 2.8 GiB, half of the 3.3 GiB RSS that --memory-limit did not explain (BENCHMARKS.md, "Memory under `--memory-limit`"). A fixed factor keeps the garbage in proportion to the live heap: RSS then follows
// the caches, which --memory-limit bounds, at the cost of more frequent full collections. 100%
// (twice the live heap) is the default: 50% cut q4's peak RSS further (1,765 MiB) but its wall
// rate by a third (38k events/s: its full collections of a 1 GiB heap on the main thread), while
// 100% kept q4 at 49k (2,080 MiB; 50k and 2,869 MiB with V8's choice) and q5 at 113k (2,782 MiB;
// 3,323 MiB before). BENCHMARKS.md, "Memory under `--memory-limit`".
// `--heap-growing-percent` is read by V8 at every collection, so setting it once the process runs
// takes effect at the next one; the flag is process-wide (the last engine opened sets it). The
// memory manager (memory-manager.ts) lowers it, 10 points a step down to 50%, only while the caches
// are at their floor and the heap is still over its part of --memory-limit, and raises it back first.

import { setFlagsFromString } from 'node:v8';

/** The heap may grow this much past the live heap before a full collection (0: V8's own choice). */
export const DEFAULT_HEAP_GROWING_PERCENT = 100;

export function setHeapGrowingPercent(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0 || percent > 1000) throw new RangeError(`heap growing percent must be an integer from 0 to 1000, not ${String(percent)}`);
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
