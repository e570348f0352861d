// A worker thread's memory as the main thread's memory manager sees it (PARALLEL.md, "Memory"):
// each worker measures its own V8 heap (used, reserved, and the live heap after its last full
// collection, which a PerformanceObserver in the worker records) and its caches, and reports them
// with each epoch batch it hands over (the `memory` field of `batch`), so no timer or message of
// its own is needed. The main thread answers with the caches' share of their maxima (`budget`),
// which the worker applies to its row cache and group caches at once, the largest evicting first.

import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** One worker's memory at its last report (protocol: the `memory` field of a worker's `batch`). */
export interface WorkerMemory {
  /** V8's heap of the worker: in use (garbage included) and reserved. */
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  /** In use just after the worker's last full collection (0 before the first) and what V8 reserved then. */
  readonly liveHeapBytes: number;
  readonly liveHeapTotalBytes: number;
  /** Full collections of the worker's heap since it started. */
  readonly fullCollections: number;
  /** The caches' share (0-1] in force at the last full collection: its live heap reflects that budget. */
  readonly liveHeapShare: number;
  /** The worker's row cache and join and aggregate caches: bytes held and their limits now. */
  readonly rowCacheBytes: number;
  readonly rowCacheLimitBytes: number;
  readonly groupCacheBytes: number;
  readonly groupCacheLimitBytes: number;
  /** Bytes the caches evicted because their budget was lowered (the memory manager's share) since start. */
  readonly evictedBytes: number;
}

/** A cache budget the meter moves: the worker store's MemoryBudget, its GroupCacheBudget. */
export interface WorkerBudget {
  readonly usedBytes: number;
  readonly limitBytes: number;
  setLimit(limitBytes: number): number;
}

export class WorkerMemoryMeter {
  private share = 1;
  private liveHeap = 0;
  private liveHeapTotal = 0;
  private liveShare = 1;
  private collections = 0;
  private evicted = 0;
  private readonly observer: PerformanceObserver;

  constructor(
    private readonly rowCache: WorkerBudget | undefined,
    private readonly groupCaches: WorkerBudget | undefined,
    /** The budgets' maxima (what the worker was started with): the share scales them. */
    private readonly rowCacheMaxBytes: number,
    private readonly groupCacheMaxBytes: number,
  ) {
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
        const heap = getHeapStatistics();
        this.liveHeap = heap.used_heap_size;
        this.liveHeapTotal = heap.total_heap_size;
        this.liveShare = this.share;
        this.collections++;
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** The main thread's share of the caches' maxima: the caches evict down to it now. */
  setShare(share: number): void {
    if (!(share > 0 && share <= 1)) return;
    this.share = share;
    if (this.rowCache !== undefined && this.rowCacheMaxBytes > 0) this.evicted += this.rowCache.setLimit(Math.max(1, Math.floor(this.rowCacheMaxBytes * share)));
    if (this.groupCaches !== undefined && this.groupCacheMaxBytes > 0) this.evicted += this.groupCaches.setLimit(Math.floor(this.groupCacheMaxBytes * share));
  }

  report(): WorkerMemory {
    const heap = getHeapStatistics();
    return {
      heapUsedBytes: heap.used_heap_size,
      heapTotalBytes: heap.total_heap_size,
      liveHeapBytes: this.liveHeap,
      liveHeapTotalBytes: this.liveHeapTotal,
      fullCollections: this.collections,
      liveHeapShare: this.liveShare,
      rowCacheBytes: this.rowCache?.usedBytes ?? 0,
      rowCacheLimitBytes: this.rowCache?.limitBytes ?? 0,
      groupCacheBytes: this.groupCaches?.usedBytes ?? 0,
      groupCacheLimitBytes: this.groupCaches?.limitBytes ?? 0,
      evictedBytes: this.evicted,
    };
  }

  stop(): void {
    this.observer.disconnect();
  }
}

/** One worker as the main thread lists it (oxbow_catalog.memory, oxbow_catalog.dataflow_workers). */
export interface WorkerStatus {
  /** 'fragment' (a keyed fragment's worker) or 'source fragment'. */
  readonly kind: string;
  readonly worker: number;
  /** The thread it runs on (a pooled thread runs other workers before and after it: ../../batch/worker-pool.ts). */
  readonly threadId: number;
  /** Its last report; undefined until it handed a batch over. */
  readonly memory: WorkerMemory | undefined;
  /** Epoch batches it handed over. */
  readonly batches: number;
  /** Its caches' budgets at most (the share scales them) and V8's bound on its old generation (0: none). */
  readonly rowCacheMaxBytes: number;
  readonly groupCacheMaxBytes: number;
  readonly oldGenerationBytes: number;
  /** Milliseconds the main thread spent blocked on its answers. */
  readonly waitedMs: number;
}

/** What a parallel runtime gives the memory manager: every worker's last report, and the caches' share to apply. */
export interface WorkerMemorySource {
  reports(): readonly WorkerMemory[];
  /** The caches' share of their maxima for every worker, now and for workers started later. */
  setCacheShare(share: number): void;
  /** The workers' caches' budgets at most, summed. */
  readonly cacheMaxBytes: number;
}

/** What a fragment starts its workers with and reports their memory to (the parallel runtime). */
export interface WorkerMemoryHost {
  /** The caches' share of their maxima now. */
  readonly cacheShare: number;
  /** V8's bound on each worker's old generation (0: V8's default). */
  readonly oldGenerationBytes: number;
  /** A worker's memory report as the main thread takes it, with that worker's report before it. */
  report(memory: WorkerMemory, previous: WorkerMemory | undefined): void;
}
