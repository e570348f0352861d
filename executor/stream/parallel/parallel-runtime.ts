// The process's parallel dataflows (PARALLEL.md): at `parallelism` N > 1, each hash aggregate that
// can run in parallel (`parallelAggregate`) runs as N worker threads over the state store's shared
// RocksDB, and this runtime is the store's commit participant for all of them: the workers' writes
// of each epoch join the main thread's batch, so one atomic write commits every thread's epoch.
// Any other plan node runs on the main thread as at parallelism 1; which nodes run in parallel is
// the planner's decision (planner/stream/parallel.ts), so EXPLAIN shows it.

import type { Epoch } from '../../../sql/epoch.js';
import type { RocksStateStore } from '../../../storage/rocks-state-store.js';
import type { CommitParticipant } from '../../../storage/mvcc-state-store.js';
import type { WriteBatchBuilder } from '../../../storage/write-batch.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { appendOnly } from '../hash-aggregate.js';
import type { StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import { ParallelAggregateNode } from './parallel-aggregate.js';
import { distributionText, serialReason, workerPlan } from '../../../planner/stream/parallel.js';
import { SourceFragments } from './source-fragment.js';

export class ParallelRuntime implements CommitParticipant {
  private readonly nodes = new Set<ParallelAggregateNode>();
  private token: number | undefined;
  private closed = false;
  /** Views run as source fragments (source-fragment.ts): their own commit participant. */
  readonly sourceFragments: SourceFragments;

  constructor(
    private readonly store: RocksStateStore,
    readonly parallelism: number,
    /** The group caches' budget of the process, shared by every worker. */
    private readonly groupCacheBytes: number,
  ) {
    store.addParticipant(this);
    this.sourceFragments = new SourceFragments(store, parallelism);
  }

  /** The node of a plan node that runs in parallel, else undefined (the caller builds it as usual). */
  build(plan: StreamPlan, context: StreamContext): StreamNode | undefined {
    if (plan.kind === 'StreamMaterialize') return this.closed ? undefined : this.sourceFragments.build(plan, context);
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
        distribution: distributionText(plan),
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
    await this.sourceFragments.close();
    const nodes = [...this.nodes];
    this.nodes.clear();
    await Promise.all(nodes.map((node) => node.close()));
    if (this.token !== undefined) this.store.database.unshare(this.token);
    this.store.removeParticipant(this);
  }
}
