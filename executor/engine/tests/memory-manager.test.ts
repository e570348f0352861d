// The memory manager as a unit (executor/engine/memory-manager.ts): planMemory's split of --memory-limit
// checked against figures computed by hand, the feedback fed readings of the live heap (injected:
// this file tests the one module) against fake budgets that record what they are set to, and the
// two real budgets it moves (storage/row-cache.ts MemoryBudget, stream/join-cache.ts
// GroupCacheBudget) evicting from their largest caches first.

import { describe, expect, it } from 'vitest';
import { MemoryManager, planMemory, type AdjustableBudget } from '../memory-manager.js';
import { MemoryBudget, RowCache } from '../../../storage/row-cache.js';
import { GroupCacheBudget, type BudgetedCache } from '../../stream/join-cache.js';
import type { WorkerMemory, WorkerMemorySource } from '../../stream/parallel/worker-memory.js';

const MIB = 1024 * 1024;

describe('planMemory', () => {
  it('splits 1 GiB: RocksDB an eighth, the heap the rest, the caches half the heap (4/5 rows, 1/5 groups)', () => {
    const plan = planMemory(1024 * MIB);
    expect(plan.rocksdbCacheBytes).toBe(128 * MIB);
    expect(plan.rocksdbMemtableBytes).toBe(64 * MIB);
    expect(plan.rocksdbWriteBufferBytes).toBe(32 * MIB);
    expect(plan.heapBytes).toBe(896 * MIB);
    expect(plan.cacheBytes).toBe(448 * MIB);
    expect(plan.rowCacheBytes).toBe(Math.floor(448 * MIB * 0.8));
    expect(plan.rowCacheBytes + plan.groupCacheBytes).toBe(448 * MIB);
    // A worker's old generation: the heap part, at least 1 GiB (under it V8 shrinks its heap growth).
    expect(plan.workerOldGenerationBytes).toBe(1024 * MIB);
    expect(planMemory(4096 * MIB).workerOldGenerationBytes).toBe((4096 - 256) * MIB);
  });

  it('keeps RocksDB within 16-256 MiB and the heap at least half of a small limit', () => {
    expect(planMemory(256 * MIB)).toMatchObject({ rocksdbCacheBytes: 32 * MIB, rocksdbWriteBufferBytes: 8 * MIB, heapBytes: 224 * MIB, cacheBytes: 112 * MIB });
    // 64 MiB: an eighth (8) is under the floor: RocksDB 16, the heap 48, the caches 24.
    expect(planMemory(64 * MIB)).toMatchObject({ rocksdbCacheBytes: 16 * MIB, heapBytes: 48 * MIB, cacheBytes: 24 * MIB });
    // 16 MiB: the floor is all of it; the heap keeps half (8), the caches 4.
    expect(planMemory(16 * MIB)).toMatchObject({ rocksdbCacheBytes: 16 * MIB, heapBytes: 8 * MIB, cacheBytes: 4 * MIB });
    expect(planMemory(16 * 1024 * MIB)).toMatchObject({ rocksdbCacheBytes: 256 * MIB, rocksdbWriteBufferBytes: 64 * MIB, heapBytes: 16 * 1024 * MIB - 256 * MIB });
    expect(planMemory(0)).toMatchObject({ cacheBytes: 0, rowCacheBytes: 0, groupCacheBytes: 0 });
  });

  it('gives the caches heap / (1 + growth): a smaller growth leaves them more', () => {
    expect(planMemory(1024 * MIB, 50).cacheBytes).toBe(Math.floor((896 * MIB) / 1.5));
    // V8's own growth (0) is planned as 100%.
    expect(planMemory(1024 * MIB, 0).cacheBytes).toBe(448 * MIB);
  });
});

/** A budget that records the limits it is set to (and evicts nothing). */
class RecordingBudget implements AdjustableBudget {
  usedBytes = 0;
  readonly limits: number[] = [];
  constructor(public limitBytes: number) {}
  setLimit(limitBytes: number): number {
    this.limits.push(limitBytes);
    const evicted = Math.max(0, this.usedBytes - limitBytes);
    this.usedBytes -= evicted;
    this.limitBytes = limitBytes;
    return evicted;
  }
}

function manager(limitBytes: number) {
  const plan = planMemory(limitBytes);
  const rows = new RecordingBudget(plan.rowCacheBytes);
  const groups = new RecordingBudget(plan.groupCacheBytes);
  const growth: number[] = [];
  const memory = new MemoryManager({ plan, rowCaches: rows, groupCaches: groups, setHeapGrowth: (percent) => growth.push(percent) });
  return { plan, rows, groups, growth, memory };
}

describe('MemoryManager', () => {
  it('leaves the budget alone while the live heap times two is within the heap part, or within the hysteresis band', () => {
    const { memory, rows, groups, growth } = manager(1024 * MIB);
    memory.observe(400 * MIB); // 800 projected against 896: within, and over 85% (761.6)
    memory.observe(448 * MIB); // exactly at the heap part
    expect(rows.limits).toEqual([]);
    expect(groups.limits).toEqual([]);
    expect(growth).toEqual([]);
    expect(memory.status()).toMatchObject({ cacheBudgetBytes: 448 * MIB, liveHeapBytes: 448 * MIB, readings: 2, budgetLowered: 0, budgetRaised: 0 });
  });

  it('lowers the budget by the live heap over heap / 2, at most a quarter of it a step, both caches by their share', () => {
    const { memory, rows, groups } = manager(1024 * MIB);
    rows.usedBytes = rows.limitBytes;
    groups.usedBytes = groups.limitBytes;
    // 470 MiB live: 22 MiB over the 448 the heap part allows.
    memory.observe(470 * MIB);
    expect(memory.status().cacheBudgetBytes).toBe(426 * MIB);
    const rowMax = Math.floor(448 * MIB * 0.8);
    expect(rows.limits).toEqual([Math.floor(rowMax * (426 / 448))]);
    expect(groups.limits).toEqual([Math.floor((448 * MIB - rowMax) * (426 / 448))]);
    // The bytes the caches gave back are the manager's evictions.
    expect(memory.status().evictedBytes).toBe(448 * MIB - rows.usedBytes - groups.usedBytes);
    // 1000 MiB live: 552 over, a step is at most 448 / 4 = 112 MiB.
    memory.observe(1000 * MIB);
    expect(memory.status().cacheBudgetBytes).toBe(314 * MIB);
    expect(memory.status().budgetLowered).toBe(2);
  });

  it('reads the heap V8 held at the collection when it is more than twice the live heap', () => {
    const { memory } = manager(1024 * MIB);
    // 400 MiB live projects 800 (within 896), but the heap held 1,008 MiB: 112 over; the caches are
    // lowered by the live heap's share of that (400 / 1008 of 112 MiB = 44.4 MiB; a step is at most 112).
    memory.observe(400 * MIB, 1008 * MIB);
    expect(memory.status().cacheBudgetBytes).toBe(448 * MIB - Math.ceil((112 * MIB * 400) / 1008));
    // A heap within its part changes nothing, whatever it is below.
    memory.observe(400 * MIB, 880 * MIB);
    expect(memory.status().budgetLowered).toBe(1);
  });

  it('at the floor (1/16 of the budget) lowers V8 heap growth instead, down to 50%, then holds', () => {
    const { memory, growth } = manager(256 * MIB);
    for (let reading = 0; reading < 40; reading++) memory.observe(600 * MIB);
    const status = memory.status();
    expect(status.cacheBudgetBytes).toBe(Math.floor((112 * MIB) / 16));
    expect(growth).toEqual([90, 80, 70, 60, 50]);
    expect(status.heapGrowingPercent).toBe(50);
    expect(status.growthLowered).toBe(5);
  });

  it('raises the growth back first, then the budget by 1/32 a step, never above its maximum', () => {
    const { memory, growth, rows } = manager(256 * MIB);
    for (let reading = 0; reading < 40; reading++) memory.observe(600 * MIB);
    const floor = memory.status().cacheBudgetBytes;
    growth.length = 0;
    const lowered = rows.limits.length;
    // 10 MiB live: far under 85% of 224 MiB at any growth.
    memory.observe(10 * MIB);
    memory.observe(10 * MIB);
    expect(growth).toEqual([60, 70]);
    expect(memory.status().cacheBudgetBytes).toBe(floor);
    for (let reading = 0; reading < 3; reading++) memory.observe(10 * MIB);
    expect(growth).toEqual([60, 70, 80, 90, 100]);
    memory.observe(10 * MIB);
    expect(memory.status().cacheBudgetBytes).toBe(floor + Math.ceil((112 * MIB) / 32));
    for (let reading = 0; reading < 40; reading++) memory.observe(10 * MIB);
    expect(memory.status().cacheBudgetBytes).toBe(112 * MIB);
    expect(rows.limits.at(-1)).toBe(Math.floor(112 * MIB * 0.8));
    expect(rows.limits.length).toBeGreaterThan(lowered);
    expect(memory.status().budgetRaised).toBe(rows.limits.length - lowered);
  });
});

/** A budgeted cache of fixed-size groups, oldest first, like the join and aggregate caches. */
class GroupsCache implements BudgetedCache {
  bytes = 0;
  groups: number[] = [];
  constructor(
    private readonly budget: GroupCacheBudget,
    private readonly groupBytes: number,
  ) {
    budget.register(this);
  }
  add(count: number): void {
    for (let index = 0; index < count; index++) {
      this.groups.push(this.groupBytes);
      this.bytes += this.groupBytes;
      this.budget.usedBytes += this.groupBytes;
      if (this.budget.usedBytes > this.budget.limitBytes) this.budget.reclaim(this);
    }
  }
  evictOldest(budget: GroupCacheBudget): void {
    while (budget.usedBytes > budget.limitBytes && this.groups.length > 0) {
      const bytes = this.groups.shift()!;
      this.bytes -= bytes;
      budget.usedBytes -= bytes;
    }
  }
}

describe('the budgets evict from their largest caches first', () => {
  it('GroupCacheBudget: a small cache that grows past the budget keeps its groups; the large one gives back', () => {
    const budget = new GroupCacheBudget(100_000);
    const large = new GroupsCache(budget, 1_000);
    const small = new GroupsCache(budget, 1_000);
    large.add(90);
    small.add(5);
    // 95,000 used; 10 more groups of the small one go 5,000 over: the large one evicts them.
    small.add(10);
    expect(small.bytes).toBe(15_000);
    expect(large.bytes).toBe(85_000);
    expect(budget.usedBytes).toBe(100_000);
    // Lowered to 40,000: only the large one evicts (60,000 of its 85,000).
    expect(budget.setLimit(40_000)).toBe(60_000);
    expect([large.bytes, small.bytes]).toEqual([25_000, 15_000]);
    // Lowered to 20,000: the large one down to the small one's size, then both in turns.
    expect(budget.setLimit(20_000)).toBe(20_000);
    expect([large.bytes, small.bytes]).toEqual([10_000, 10_000]);
    expect(budget.usedBytes).toBe(20_000);
    expect(budget.evictedBytes).toBe(85_000);
    expect(budget.limitBytes).toBe(20_000);
  });

  it('MemoryBudget.setLimit: the largest row cache evicts down to the next, and a disabled budget stays disabled', () => {
    const budget = new MemoryBudget(10 * MIB);
    const large = new RowCache(budget);
    const small = new RowCache(budget);
    const row = ['x'.repeat(200)];
    for (let key = 0; key < 20_000; key++) large.set(`large-${key}`, row);
    for (let key = 0; key < 2_000; key++) small.set(`small-${key}`, row);
    const smallBefore = small.bytes;
    expect(budget.usedBytes).toBe(large.bytes + smallBefore);
    // Lowered to the large one's size less 1 MiB: only the large one evicts.
    const evicted = budget.setLimit(budget.usedBytes - MIB);
    expect(evicted).toBeGreaterThanOrEqual(MIB);
    expect(small.bytes).toBe(smallBefore);
    expect(budget.usedBytes).toBeLessThanOrEqual(budget.limitBytes);
    expect(budget.loweredEvictedBytes).toBe(evicted);
    const disabled = new MemoryBudget(0);
    expect(disabled.setLimit(MIB)).toBe(0);
    expect(disabled.limitBytes).toBe(0);
  });
});

/** Workers as the parallel runtime shows them to the manager: their last reports, their maxima, the shares they were sent. */
class FakeWorkers implements WorkerMemorySource {
  readonly shares: number[] = [];
  reportsNow: WorkerMemory[] = [];
  constructor(public cacheMaxBytes: number) {}
  reports(): readonly WorkerMemory[] {
    return this.reportsNow;
  }
  setCacheShare(share: number): void {
    this.shares.push(share);
  }
}

function workerReport(liveHeapBytes: number, fullCollections: number, liveHeapShare: number): WorkerMemory {
  return {
    heapUsedBytes: liveHeapBytes,
    heapTotalBytes: liveHeapBytes,
    liveHeapBytes,
    liveHeapTotalBytes: 0,
    fullCollections,
    liveHeapShare,
    rowCacheBytes: 0,
    rowCacheLimitBytes: 0,
    groupCacheBytes: 0,
    groupCacheLimitBytes: 0,
    evictedBytes: 0,
  };
}

describe('MemoryManager with worker threads', () => {
  function withWorkers(workersMax: number) {
    const plan = planMemory(1024 * MIB);
    const rows = new RecordingBudget(plan.rowCacheBytes);
    const groups = new RecordingBudget(plan.groupCacheBytes);
    const workers = new FakeWorkers(workersMax);
    const memory = new MemoryManager({ plan, rowCaches: rows, groupCaches: groups, setHeapGrowth: () => undefined, workers });
    return { plan, rows, groups, workers, memory };
  }

  it("fits every thread's caches into the plan's part: the workers' maxima take their share from the main thread's", () => {
    // 448 MiB of caches on the main thread, 448 more in the workers: every cache gets half its maximum.
    const { memory, rows, workers } = withWorkers(448 * MIB);
    memory.observeWorker(workerReport(10 * MIB, 0, 1), undefined);
    expect(workers.shares).toEqual([0.5]);
    expect(rows.limits).toEqual([Math.floor(Math.floor(448 * MIB * 0.8) * 0.5)]);
    expect(memory.status()).toMatchObject({ cacheBudgetBytes: 448 * MIB, cacheMaxBytes: 448 * MIB, budgetLowered: 1 });
  });

  it("counts the workers' live heaps with the main thread's and lowers every thread's caches", () => {
    const { memory, workers } = withWorkers(448 * MIB);
    memory.observeWorker(workerReport(10 * MIB, 0, 1), undefined);
    // The main thread 200 MiB live, two workers 150 each: 500 live, 1000 projected against 896.
    workers.reportsNow = [workerReport(150 * MIB, 1, 0.5), workerReport(150 * MIB, 1, 0.5)];
    memory.observe(200 * MIB);
    // 104 MiB over: the live heap's share of it (500 / 1000) is 52 MiB of caches, of which the
    // main thread's maxima are half (26 MiB of its 224 MiB).
    expect(memory.status().liveHeapBytes).toBe(500 * MIB);
    const budget = 224 * MIB - Math.ceil((104 * MIB * 500) / 1000 / 2);
    expect(workers.shares.at(-1)).toBeCloseTo(budget / (448 * MIB), 12);
    expect(memory.status().cacheBudgetBytes).toBe(budget + Math.floor(448 * MIB * (budget / (448 * MIB))));
  });

  it("steps on a worker's full collection only when it was taken under the current budget", () => {
    const { memory, workers } = withWorkers(448 * MIB);
    memory.observeWorker(workerReport(10 * MIB, 0, 1), undefined);
    const before = memory.status();
    workers.reportsNow = [workerReport(800 * MIB, 1, 1)];
    // Taken before the budget was halved: no step.
    memory.observeWorker(workers.reportsNow[0]!, workerReport(10 * MIB, 0, 1));
    expect(memory.status()).toMatchObject({ cacheBudgetBytes: before.cacheBudgetBytes, workerReadings: 0 });
    // The same collection seen again: no step either.
    workers.reportsNow = [workerReport(800 * MIB, 1, 0.5)];
    memory.observeWorker(workers.reportsNow[0]!, workers.reportsNow[0]!);
    expect(memory.status().workerReadings).toBe(0);
    // A new one under the current budget: the heaps (800 MiB live and the main thread's) are over, the caches are lowered.
    workers.reportsNow = [workerReport(800 * MIB, 2, 0.5)];
    memory.observeWorker(workers.reportsNow[0]!, workerReport(800 * MIB, 1, 0.5));
    expect(memory.status().workerReadings).toBe(1);
    expect(memory.status().cacheBudgetBytes).toBeLessThan(before.cacheBudgetBytes);
    expect(workers.shares.at(-1)!).toBeLessThan(0.5);
  });
});
