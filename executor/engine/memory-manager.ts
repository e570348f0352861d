// --memory-limit as one number for the whole process (RisingWave's memory manager, Flink's
// taskmanager.memory.process.size): `planMemory(L)` sizes the parts from L, and the MemoryManager
// keeps the V8 heap inside its part by feedback from the live heap V8 measures at each full
// collection.
//
// The parts of L (BENCHMARKS.md, "Memory under `--memory-limit`"):
// - RocksDB: a block cache of L/8 (16 MiB to 256 MiB) that the memtables are charged to (a write
//   buffer manager of half of it), so RocksDB's memory is one figure;
// - the V8 heap: the rest, L minus RocksDB's part. V8 lets its heap grow past the live heap by the
//   heap growth (heap-growth.ts, 100%: twice the live heap) before a full collection, so the live
//   heap must stay under heap / 2 for the heap to stay under its part;
// - the caches: the row caches (4/5) and the join and aggregate caches (1/5) share one budget, at
//   most what the live heap may be (heap part / (1 + growth)); the rest of the live heap (parser,
//   catalog, an epoch's batches) is what the feedback makes room for.
// Outside L (a fixed cost, measured): libpg-query's WebAssembly memory (128 MiB), V8's young
// generation and code, the C heap's free chunks, Node itself.
//
// The feedback (`observe`, one call per full collection: no per-row work): the heap V8 will grow
// to before its next full collection is the live heap times (1 + growth), or what V8's heap took
// when the collection ran, when that is more (its young generation, large objects and free space in
// pages: q4 at 256 MiB had a heap of 2.2-2.6x its live heap at 100% growth). Above the heap part, the
// caches' effective budget is lowered by the excess (at most a quarter a step), the largest caches evicting
// first; at the budget's floor, the heap growth is lowered instead (down to 50%). Under 85% of the
// heap part (hysteresis), the growth is raised back first, then the budget, in smaller steps.
// Worker threads (--parallelism N, executor/stream/PARALLEL.md "Memory"): each reports its heap
// and caches with its epoch batches (`observeWorker`); the live heaps of every thread are summed
// against the heap part, a worker's full collection taken under the current budget is a reading
// like the main thread's, and every cache, each worker's too, gets the same share of its maximum,
// the workers' maxima fitted with the main thread's into the caches' part (`ceilingBytes`).
// The C heap: glibc keeps freed chunks in its arenas (RocksDB's flushed memtables, Buffers freed by
// the libuv threads): 0.1-0.2 GiB of RSS at Nexmark sizes. After a full collection, when more than
// 32 MiB is free there (and at most every 5 s), malloc_trim gives the free pages back.

import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { mallocInfo, mallocTrim } from '../../storage/rocksdb.js';
import { DEFAULT_HEAP_GROWING_PERCENT, setHeapGrowingPercent } from './heap-growth.js';
import type { MemoryManagerStatus } from '../metrics/status.js';
import type { WorkerMemory, WorkerMemorySource } from '../stream/parallel/worker-memory.js';

export type { MemoryManagerStatus };

const MIB = 1024 * 1024;
/** RocksDB's block cache (memtables charged to it) is L / 8, within these bounds. */
const ROCKSDB_MIN_BYTES = 16 * MIB;
const ROCKSDB_MAX_BYTES = 256 * MIB;
/** The row caches' share of the caches' budget (the join and aggregate caches have the rest). */
const ROW_CACHE_SHARE = 0.8;

export interface MemoryPlan {
  /** --memory-limit. */
  readonly limitBytes: number;
  /** RocksDB's block cache capacity, the memtables charged inside it. */
  readonly rocksdbCacheBytes: number;
  /** The write buffer manager's bound on the memtables (half the block cache). */
  readonly rocksdbMemtableBytes: number;
  /** One memtable's size (a quarter of the block cache, at most 64 MiB). */
  readonly rocksdbWriteBufferBytes: number;
  /** What the V8 heap (live heap and garbage) is kept under. */
  readonly heapBytes: number;
  /** V8's heap growth past the live heap before a full collection, in percent. */
  readonly heapGrowingPercent: number;
  /** The caches' budget at most: row caches plus join and aggregate caches. */
  readonly cacheBytes: number;
  readonly rowCacheBytes: number;
  readonly groupCacheBytes: number;
  /** V8's bound on each worker thread's old generation (--parallelism; see WORKER_OLD_GENERATION_FLOOR_BYTES). */
  readonly workerOldGenerationBytes: number;
}

/**
 * A worker's old generation is bounded by the heap part of L (what every thread's heaps together
 * are kept under), and never under 1 GiB. The bound is a backstop against one runaway thread (a
 * worker that reaches it ends, and its view's epochs fail until a restart); the feedback on the
 * heaps' sum is what keeps them inside --memory-limit. Not lower, because V8 derives its heap
 * growth from the bound: under 1 GiB it caps the growth below the 100% oxbow sets (heap-growth.ts)
 * and lets the old generation reach only half the bound before its first full collection, so the
 * workers collect more often: Nexmark q4 at parallelism 2 made 97.8-99.4k events per CPU-second
 * with a bound of 448 MiB against 96-105k without one (executor/stream/PARALLEL.md, "Measured").
 */
const WORKER_OLD_GENERATION_FLOOR_BYTES = 1024 * MIB;

/** The parts of --memory-limit `limitBytes` (see the file's comment). */
export function planMemory(limitBytes: number, heapGrowingPercent = DEFAULT_HEAP_GROWING_PERCENT): MemoryPlan {
  const limit = Math.max(0, Math.floor(limitBytes));
  const rocksdbCacheBytes = Math.min(ROCKSDB_MAX_BYTES, Math.max(ROCKSDB_MIN_BYTES, Math.floor(limit / 8)));
  const rocksdbMemtableBytes = Math.floor(rocksdbCacheBytes / 2);
  const rocksdbWriteBufferBytes = Math.min(64 * MIB, Math.floor(rocksdbCacheBytes / 4));
  // Under 128 MiB RocksDB's floor is more than an eighth of L: the heap keeps at least half of L.
  const heapBytes = Math.max(limit - rocksdbCacheBytes, Math.floor(limit / 2));
  // V8's own growth (0) reaches 2-4x; plan with 100% then.
  const growth = heapGrowingPercent > 0 ? heapGrowingPercent : 100;
  const cacheBytes = Math.floor(heapBytes / (1 + growth / 100));
  const rowCacheBytes = Math.floor(cacheBytes * ROW_CACHE_SHARE);
  return {
    limitBytes: limit,
    rocksdbCacheBytes,
    rocksdbMemtableBytes,
    rocksdbWriteBufferBytes,
    heapBytes,
    heapGrowingPercent,
    cacheBytes,
    rowCacheBytes,
    groupCacheBytes: cacheBytes - rowCacheBytes,
    workerOldGenerationBytes: Math.max(WORKER_OLD_GENERATION_FLOOR_BYTES, heapBytes),
  };
}

/** A cache budget the manager moves: the row caches' (storage/row-cache.ts) or the group caches' (stream/join-cache.ts). */
export interface AdjustableBudget {
  readonly usedBytes: number;
  readonly limitBytes: number;
  /** Moves the limit, evicting (largest caches first) when lowered below what is cached; returns the bytes evicted. */
  setLimit(limitBytes: number): number;
}

export interface MemoryManagerOptions {
  readonly plan: MemoryPlan;
  /** The row caches' budget; its limit at construction is its share of the caches' budget. */
  readonly rowCaches?: AdjustableBudget;
  /** The join and aggregate caches' budget; likewise. */
  readonly groupCaches: AdjustableBudget;
  /** Sets V8's heap growth (heap-growth.ts); tests pass a recorder. */
  readonly setHeapGrowth?: (percent: number) => void;
  /** The worker threads of the parallel dataflows (--parallelism): their heaps count, their caches follow the budget. */
  readonly workers?: WorkerMemorySource;
}

/** The budget never goes under this share of its maximum (caches of nothing read everything from RocksDB). */
const FLOOR_SHARE = 1 / 16;
/**
 * A lowering takes at most this share of the maximum budget at once, a raise this share. Full
 * collections of a 1 GiB heap come minutes apart under load: at 1/8 a step, q5 at 1 GiB took 20
 * minutes to come down from 448 to 392 MiB while its heap peaked at 1,125 MiB (its part: 896).
 */
const LOWER_STEP_SHARE = 1 / 4;
const RAISE_STEP_SHARE = 1 / 32;
/** The budget (then growth) is raised only while the projected heap is under this share of the heap part. */
const RAISE_BELOW = 0.85;
const MIN_HEAP_GROWING_PERCENT = 50;
/** The C heap is trimmed after a full collection when this much is free in its arenas, at most every TRIM_EVERY_MS. */
const TRIM_ABOVE_BYTES = 32 * 1024 * 1024;
const TRIM_EVERY_MS = 5000;
const GROWTH_STEP_PERCENT = 10;

export class MemoryManager {
  private readonly plan: MemoryPlan;
  private readonly rowCaches: AdjustableBudget | undefined;
  private readonly groupCaches: AdjustableBudget;
  private readonly setHeapGrowth: (percent: number) => void;
  private readonly workers: WorkerMemorySource | undefined;
  /** The main thread's last reading: its live heap and what V8 reserved then. */
  private mainLiveHeap = 0;
  private mainHeapTotal = 0;
  private mainReadings = 0;
  /** Workers' readings taken (full collections at the current budget that triggered a step). */
  private workerReadings = 0;
  private readonly rowMaxBytes: number;
  private readonly groupMaxBytes: number;
  private readonly maxGrowth: number;
  private budgetBytes: number;
  private growth: number;
  private liveHeap = 0;
  private readings = 0;
  private lowered = 0;
  private raised = 0;
  private growthLowered = 0;
  private growthRaised = 0;
  private evicted = 0;
  private trims = 0;
  private trimMs = 0;
  private lastTrimAt = Number.NEGATIVE_INFINITY;
  private observer: PerformanceObserver | undefined;

  constructor(options: MemoryManagerOptions) {
    this.plan = options.plan;
    this.rowCaches = options.rowCaches;
    this.groupCaches = options.groupCaches;
    this.setHeapGrowth = options.setHeapGrowth ?? setHeapGrowingPercent;
    this.workers = options.workers;
    this.rowMaxBytes = Math.max(0, options.rowCaches?.limitBytes ?? 0);
    this.groupMaxBytes = Math.max(0, options.groupCaches.limitBytes);
    this.budgetBytes = this.maxBytes;
    // V8's own growth (0) cannot be stepped; the manager then leaves it alone.
    this.maxGrowth = options.plan.heapGrowingPercent;
    this.growth = this.maxGrowth;
  }

  private get maxBytes(): number {
    return this.rowMaxBytes + this.groupMaxBytes;
  }

  /** Observes V8's full collections (the live heap right after each) until stop(). */
  start(): void {
    if (this.observer !== undefined) return;
    this.observer = new PerformanceObserver((list) => {
      let major = false;
      for (const entry of list.getEntries()) {
        if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major = true;
      }
      if (!major) return;
      const heap = getHeapStatistics();
      this.observe(heap.used_heap_size, heap.total_heap_size);
      this.trimCHeap();
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = undefined;
  }

  /**
   * One reading of the main thread's heap: the live heap just after a full collection, and the heap
   * V8 held then (0: unknown). Moves the budget or the growth by at most one step.
   */
  observe(liveHeapBytes: number, heapTotalBytes = 0): void {
    this.mainLiveHeap = liveHeapBytes;
    this.mainHeapTotal = heapTotalBytes;
    this.mainReadings++;
    this.readings++;
    this.step();
  }

  /**
   * A worker's report (worker-memory.ts). The caches' budget first fits the workers running (their
   * maxima with the main thread's stay within the plan's); then, when the report carries a full
   * collection taken under the current budget (so its live heap shows what the budget left it),
   * one step as for the main thread's reading. Call outside the dataflow's work (either evicts
   * from the main thread's caches).
   */
  observeWorker(report: WorkerMemory, previous: WorkerMemory | undefined): void {
    // What the worker evicted for a lowered budget since its report before is the manager's doing too.
    this.evicted += Math.max(0, report.evictedBytes - (previous?.evictedBytes ?? 0));
    if (this.fit()) return;
    if (report.fullCollections <= (previous?.fullCollections ?? 0)) return;
    if (Math.abs(report.liveHeapShare - this.share) > 1e-9) return;
    this.workerReadings++;
    this.readings++;
    this.step();
  }

  /**
   * The most the main thread's caches may have: every cache gets the same share of its maximum,
   * and the maxima of the main thread's and the workers' caches together get at most the plan's
   * caches' part (a fragment's workers started take their part from the main thread's).
   */
  private get ceilingBytes(): number {
    const max = this.maxBytes;
    const totalMax = max + (this.workers?.cacheMaxBytes ?? 0);
    return totalMax <= max ? max : Math.floor((max * max) / totalMax);
  }

  /** Lowers the budget to the ceiling when workers started since (true when it did). */
  private fit(): boolean {
    const ceiling = this.ceilingBytes;
    if (this.budgetBytes <= ceiling) return false;
    this.apply(ceiling);
    this.lowered++;
    return true;
  }

  /** The caches' share of their maxima now (every thread's caches get it). */
  private get share(): number {
    const max = this.maxBytes;
    return max <= 0 ? 1 : this.budgetBytes / max;
  }

  /** The live heaps of every thread (the workers' at their last reading) and the heap they will grow to, summed. */
  private heaps(): { live: number; projected: number } {
    const growth = 1 + this.effectiveGrowth() / 100;
    // Before the main thread's first full collection (a worker's reading came first): what it uses.
    const mainLive = this.mainReadings > 0 ? this.mainLiveHeap : getHeapStatistics().used_heap_size;
    let live = mainLive;
    let projected = Math.max(mainLive * growth, this.mainHeapTotal);
    for (const report of this.workers?.reports() ?? []) {
      // Before its first full collection a worker's live heap is unknown: what it uses counts.
      const workerLive = report.fullCollections > 0 ? report.liveHeapBytes : report.heapUsedBytes;
      live += workerLive;
      projected += report.fullCollections > 0 ? Math.max(workerLive * growth, report.liveHeapTotalBytes) : report.heapTotalBytes;
    }
    return { live, projected };
  }

  /** Moves the budget or the growth by at most one step, from every thread's heap. */
  private step(): void {
    const { live: liveHeapBytes, projected } = this.heaps();
    this.liveHeap = liveHeapBytes;
    const max = this.maxBytes;
    if (max <= 0) return;
    if (this.fit()) return;
    const target = this.plan.heapBytes;
    // Every cache (the main thread's and each worker's) moves by the same share of its maximum.
    const totalMax = max + (this.workers?.cacheMaxBytes ?? 0);
    if (projected > target) {
      const floor = Math.floor(max * FLOOR_SHARE);
      if (this.budgetBytes > floor) {
        // The live heap the target allows, against the live heap now: lower the caches by the
        // difference, the main thread's caches by their part of it.
        let excess = ((projected - target) * liveHeapBytes) / Math.max(1, projected);
        if (totalMax > max) excess = (excess * max) / totalMax;
        const step = Math.min(Math.ceil(max * LOWER_STEP_SHARE), Math.max(Math.ceil(excess), Math.ceil(max / 64)));
        this.apply(Math.max(floor, this.budgetBytes - step));
        this.lowered++;
      } else if (this.maxGrowth > 0 && this.growth > MIN_HEAP_GROWING_PERCENT) {
        this.growth = Math.max(MIN_HEAP_GROWING_PERCENT, this.growth - GROWTH_STEP_PERCENT);
        this.setHeapGrowth(this.growth);
        this.growthLowered++;
      }
      return;
    }
    if (projected >= target * RAISE_BELOW) return;
    if (this.maxGrowth > 0 && this.growth < this.maxGrowth) {
      this.growth = Math.min(this.maxGrowth, this.growth + GROWTH_STEP_PERCENT);
      this.setHeapGrowth(this.growth);
      this.growthRaised++;
    } else if (this.budgetBytes < this.ceilingBytes) {
      this.apply(Math.min(this.ceilingBytes, this.budgetBytes + Math.ceil(max * RAISE_STEP_SHARE)));
      this.raised++;
    }
  }

  /** malloc_trim when the C heap's arenas hold more than TRIM_ABOVE_BYTES free (at most every TRIM_EVERY_MS). */
  private trimCHeap(): void {
    const now = performance.now();
    if (now - this.lastTrimAt < TRIM_EVERY_MS) return;
    if (mallocInfo().freeBytes < TRIM_ABOVE_BYTES) return;
    this.lastTrimAt = now;
    mallocTrim();
    this.trims++;
    this.trimMs += performance.now() - now;
  }

  status(): MemoryManagerStatus {
    const workersMax = this.workers?.cacheMaxBytes ?? 0;
    return {
      cacheBudgetBytes: this.budgetBytes + Math.floor(workersMax * this.share),
      cacheMaxBytes: this.maxBytes,
      liveHeapBytes: this.liveHeap,
      heapTargetBytes: this.plan.heapBytes,
      heapGrowingPercent: this.effectiveGrowth(),
      readings: this.readings,
      budgetLowered: this.lowered,
      budgetRaised: this.raised,
      growthLowered: this.growthLowered,
      growthRaised: this.growthRaised,
      evictedBytes: this.evicted,
      trims: this.trims,
      trimMs: this.trimMs,
      workerReadings: this.workerReadings,
    };
  }

  private effectiveGrowth(): number {
    return this.maxGrowth > 0 ? this.growth : 100;
  }

  /** The budget `bytes`, split between the row and group caches in their maxima's proportion. */
  private apply(bytes: number): void {
    this.budgetBytes = bytes;
    const share = bytes / this.maxBytes;
    if (this.rowCaches !== undefined && this.rowMaxBytes > 0) this.evicted += this.rowCaches.setLimit(Math.floor(this.rowMaxBytes * share));
    if (this.groupMaxBytes > 0) this.evicted += this.groupCaches.setLimit(Math.floor(this.groupMaxBytes * share));
    // The workers evict as the message reaches them; their reports count it (WorkerMemory.evictedBytes).
    this.workers?.setCacheShare(share);
  }
}
