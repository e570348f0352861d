// The process's parallel dataflows (PARALLEL.md): at `parallelism` N > 1, each hash aggregate that
// can run in parallel (`parallelAggregate`) runs as N worker threads over the state store's shared
// RocksDB, and this runtime is the store's commit participant for all of them: the workers' writes
// of each epoch join the main thread's batch, so one atomic write commits every thread's epoch.
// Any other plan node runs on the main thread as at parallelism 1.

import type { Epoch } from '../../../sql/epoch.js';
import type { RocksStateStore } from '../../../storage/rocks-state-store.js';
import type { CommitParticipant } from '../../../storage/mvcc-state-store.js';
import type { WriteBatchBuilder } from '../../../storage/write-batch.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { appendOnly } from '../hash-aggregate.js';
import type { StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import { ParallelAggregateNode, type HashAggregatePlan } from './parallel-aggregate.js';

/**
 * Why a plan node does not run in parallel, or undefined when it does: a hash aggregate with a
 * group key of plain input columns (its exchange hashes them), whose expressions and types are
 * plain data (they are copied to the workers).
 */
export function serialReason(plan: StreamPlan): string | undefined {
  if (plan.kind !== 'StreamHashAggregate') return 'not a hash aggregate';
  if (plan.groupKeys.length === 0) return 'no group key';
  if (!plan.groupKeys.every((key) => key.kind === 'Column')) return 'a group key is not an input column';
  if (!isPlainData(workerPlan(plan))) return 'a constant the workers cannot receive';
  return undefined;
}

/** The aggregate as its workers get it: no input subtree or batch template (EXPLAIN's), plain data only. */
export function workerPlan(plan: HashAggregatePlan): HashAggregatePlan {
  return { ...plan, inputs: [], template: undefined as unknown as HashAggregatePlan['template'] };
}

/** True when `value` survives a structured clone unchanged: primitives, plain objects and arrays. */
function isPlainData(value: unknown, seen = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return typeof value !== 'function' && typeof value !== 'symbol';
  if (seen.has(value)) return true;
  seen.add(value);
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (Array.isArray(value)) return value.every((item) => isPlainData(item, seen));
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => isPlainData(item, seen));
}

export class ParallelRuntime implements CommitParticipant {
  private readonly nodes = new Set<ParallelAggregateNode>();
  private token: number | undefined;
  private closed = false;

  constructor(
    private readonly store: RocksStateStore,
    readonly parallelism: number,
    /** The group caches' budget of the process, shared by every worker. */
    private readonly groupCacheBytes: number,
  ) {
    store.addParticipant(this);
  }

  /** The node of a plan node that runs in parallel, else undefined (the caller builds it as usual). */
  build(plan: StreamPlan, context: StreamContext): StreamNode | undefined {
    if (this.closed || this.parallelism <= 1 || plan.kind !== 'StreamHashAggregate' || serialReason(plan) !== undefined) return undefined;
    this.token ??= this.store.database.share();
    const node = new ParallelAggregateNode(
      workerPlan(plan),
      appendOnly(plan.inputs[0]!),
      context,
      {
        token: this.token,
        path: this.store.database.path,
        parallelism: this.parallelism,
        retentionMs: this.store.options.retentionMs,
        rowCacheBytes: Math.max(1 << 20, Math.floor(this.store.options.memoryLimitBytes / (4 * this.parallelism))),
        groupCacheBytes: Math.max(1 << 20, Math.floor(this.groupCacheBytes / (4 * this.parallelism))),
        distribution: plan.groupKeys.map((key) => (key.kind === 'Column' ? (plan.inputs[0]!.columns[key.index]?.name ?? `#${key.index}`) : '?')).join(', '),
      },
      (disposed) => {
        this.nodes.delete(disposed);
        void disposed.close();
      },
    );
    this.nodes.add(node);
    return node;
  }

  /** Worker threads running (every parallel aggregate's). */
  get workers(): number {
    let count = 0;
    for (const node of this.nodes) count += node.workers.length;
    return count;
  }

  contribute(batch: WriteBatchBuilder, epoch: Epoch): void {
    for (const node of this.nodes) node.contribute(batch, epoch);
  }

  durable(epoch: Epoch): void {
    for (const node of this.nodes) node.durable(epoch);
  }

  failed(error: unknown): void {
    for (const node of this.nodes) node.failed(error);
  }

  async close(): Promise<void> {
    this.closed = true;
    const nodes = [...this.nodes];
    this.nodes.clear();
    await Promise.all(nodes.map((node) => node.close()));
    if (this.token !== undefined) this.store.database.unshare(this.token);
    this.store.removeParticipant(this);
  }
}
