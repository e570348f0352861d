// One materialized view's dataflow: the streaming plan (planner/stream/) turned into a tree of
// operator nodes, fed by the changes of the relations it reads. `push` runs a batch of changes of
// one relation from every scan of it up to the view (a self-join's two scans one after the other,
// so each sees the other side's state before or after, never half); `pushAll` runs several
// relations' changes bottom-up at once (an epoch's changes, a backfill). The return value is the
// view's own changes. Everything is synchronous: the dataflow runs inside the writer's epoch.
//
// A plan whose repeated subtree was shared (planner/stream/share.ts) is a DAG here: the subtree is
// placed once, and each StreamShared leaf naming it takes its output as the leaf's input. `pushAll`
// keeps the shared subtree's output of the push (it is evaluated first: it comes first in pre-order)
// and hands it to the leaves; `push` and the other bottom-up paths carry a shared node's output up
// its own parent chain to the root first, then up each leaf's (as a self-join's two scans did).
//
// Inside an epoch a source's chunks come through `pushChunk`: the hash aggregates hold (they
// combine each group's changes and emit nothing), and `seal` at the barrier emits their net
// changes bottom-up (post-order: an aggregate over another gets the lower one's output before it
// seals). `pushAll` and `push` emit everything at once. A view that takes the whole
// epoch (temporal or watermark filter, EMIT ON WINDOW CLOSE) never holds.

import type { StreamPlan, StreamPlanKind } from '../../planner/stream/stream-plan.js';
import { streamInputs } from '../../planner/stream/stream-plan.js';
import { appendChanges, emptyChanges, isEmpty, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { WorkerStatus } from './parallel/worker-memory.js';
import type { StreamNode } from './stream-node.js';
import { StreamScanNode } from './scan.js';
import { StreamValuesNode } from './values.js';
import { StreamFilterNode } from './filter.js';
import { StreamProjectNode } from './project.js';
import { StreamUnionNode } from './union.js';
import { StreamLateralNode } from './lateral.js';
import { StreamSharedNode } from './shared.js';
import { KeyedOperatorNode } from './keyed-operator.js';
import { StreamAppendOnlyGroupTopNNode } from './group-top-n.js';
import { StreamAppendOnlyOverWindowNode } from './over-window.js';
import { StreamHashJoinNode } from './hash-join.js';
import { StreamTemporalJoinNode } from './temporal-join.js';
import { StreamHashAggregateNode } from './hash-aggregate.js';
import { StreamMaterializeNode } from './materialize.js';
import { StreamDynamicFilterNode, TEMPORAL_TICK_SLOT } from './dynamic-filter.js';
import { StreamWatermarkFilterNode } from './watermark-filter.js';
import { EMIT_SLOT, StreamEmitOnWindowCloseNode } from './eowc.js';
import { instrumentNode, OperatorStats } from './operator-stats.js';

type Builders = { [K in StreamPlanKind]: (plan: Extract<StreamPlan, { kind: K }>, context: StreamContext) => StreamNode };

/** One builder per streaming node kind: a new kind does not compile until it has one. */
const BUILDERS: Builders = {
  StreamTableScan: (plan, context) => new StreamScanNode(plan, context),
  StreamValues: (plan, context) => new StreamValuesNode(plan, context),
  StreamFilter: (plan, context) => new StreamFilterNode(plan, context),
  StreamProject: (plan, context) => new StreamProjectNode(plan, context),
  StreamUnion: () => new StreamUnionNode(),
  StreamLateral: (plan, context) => new StreamLateralNode(plan, context),
  StreamHashAggregate: (plan, context) => new StreamHashAggregateNode(plan, context),
  StreamRecomputeAggregate: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamRecomputeJoin: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamHashJoin: (plan, context) => new StreamHashJoinNode(plan, context),
  StreamTemporalJoin: (plan, context) => new StreamTemporalJoinNode(plan, context),
  StreamNestedLoopJoin: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamDistinct: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamTopN: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamOverWindow: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamSetOperation: (plan, context) => new KeyedOperatorNode(plan, context),
  StreamAppendOnlyGroupTopN: (plan, context) => new StreamAppendOnlyGroupTopNNode(plan, context),
  StreamAppendOnlyOverWindow: (plan, context) => new StreamAppendOnlyOverWindowNode(plan, context),
  StreamMaterialize: (plan, context) => new StreamMaterializeNode(plan, context),
  StreamDynamicFilter: (plan, context) => new StreamDynamicFilterNode(plan, context),
  StreamWatermarkFilter: (plan, context) => new StreamWatermarkFilterNode(plan, context),
  StreamEmitOnWindowClose: (plan, context) => new StreamEmitOnWindowCloseNode(plan, context),
  StreamShared: (plan) => new StreamSharedNode(plan),
};

interface Placed {
  /** Operator id within the dataflow: 1 for the root, then depth-first (EXPLAIN ANALYZE, oxbow_catalog.dataflow). */
  readonly id: number;
  readonly stats: OperatorStats;
  readonly node: StreamNode;
  readonly plan: StreamPlan;
  readonly parent: Placed | undefined;
  /** Which input of the parent this node is. */
  readonly slot: number;
  readonly children: Placed[];
  /** StreamShared leaves fed by this node's output (a shared subtree's root). */
  readonly sharers: Placed[];
  /** A StreamShared leaf: the placed subtree it reads. */
  readonly source: Placed | undefined;
  /** A shared subtree's root: its output in the running pushAll / initialize. */
  last: ChangeBatch | undefined;
}

export class Dataflow {
  private readonly root: Placed;
  /** Scan nodes by the relation they read. */
  private readonly scans = new Map<number, Placed[]>();
  /** Temporal filters: they take the epoch time on every flush. */
  private readonly temporal: Placed[] = [];
  /** EMIT ON WINDOW CLOSE nodes: they emit closed windows after every push (the watermark may move without their input changing). */
  private readonly windowClose: Placed[] = [];
  private readonly placed: Placed[] = [];
  /** Placed nodes by plan node (a StreamShared leaf finds its source here). */
  private readonly byPlan = new Map<StreamPlan, Placed>();
  /** Roots of shared subtrees (their `last` is cleared after each pushAll). */
  private readonly shared: Placed[] = [];
  /** Plan nodes some StreamShared leaf reads. */
  private readonly sharedSources = new Set<StreamPlan>();
  /** Scans whose output rows are new arrays (built as StreamScanNode, not a fragment's placeholder). */
  private readonly newRowScans = new Set<StreamPlan>();
  /** LATERALs whose parent projection passes rows through: the columns they emit. */
  private readonly projectedLaterals = new Map<StreamPlan, Int32Array>();
  /** Nodes that can hold changes within an epoch (hash aggregates), children before parents. */
  private readonly holders: Placed[] = [];
  /** True when some holder may hold changes (a pushChunk since the last seal). */
  private held = false;

  constructor(
    readonly viewId: number,
    readonly plan: StreamPlan,
    private readonly context: StreamContext,
  ) {
    const findShared = (node: StreamPlan): void => {
      if (node.kind === 'StreamShared') this.sharedSources.add(node.source);
      for (const input of streamInputs(node)) findShared(input);
    };
    findShared(plan);
    this.root = this.place(plan, undefined, 0);
    // The views that take the whole epoch at once are pushed once per epoch: nothing to combine.
    const watermarked = this.placed.some((placed) => placed.plan.kind === 'StreamWatermarkFilter');
    if (this.temporal.length > 0 || this.windowClose.length > 0 || watermarked) this.holders.length = 0;
  }

  /**
   * The node of a plan node. A projection of plain columns over a LATERAL that nothing else reads
   * (not a shared subtree's root) passes its rows through, and the LATERAL emits them projected
   * (HOP's five rows per event built once, not joined and then copied).
   */
  private build(plan: StreamPlan): StreamNode {
    if (plan.kind === 'StreamProject' && plan.input.kind === 'StreamLateral' && plan.expressions.every((expression) => expression.kind === 'Column') && !this.sharedSources.has(plan.input)) {
      this.projectedLaterals.set(plan.input, Int32Array.from(plan.expressions, (expression) => (expression.kind === 'Column' ? expression.index : -1)));
      return { apply: (_slot, changes) => changes, initial: emptyChanges };
    }
    const output = plan.kind === 'StreamLateral' ? this.projectedLaterals.get(plan) : undefined;
    if (plan.kind === 'StreamLateral' && output !== undefined) return new StreamLateralNode(plan, this.context, output);
    // At --parallelism > 1 a node may run in worker threads (parallel/, PARALLEL.md).
    const parallel = this.context.parallel?.build(plan, this.context, this.sharedSources);
    if (parallel !== undefined) return parallel;
    return (BUILDERS[plan.kind] as (plan: StreamPlan, context: StreamContext) => StreamNode)(plan, this.context);
  }

  private place(plan: StreamPlan, parent: Placed | undefined, slot: number): Placed {
    const stats = new OperatorStats();
    const built = this.build(plan);
    const node = instrumentNode(built, stats);
    // A shared subtree comes before its StreamShared leaves in pre-order, so it is placed already.
    const source = plan.kind === 'StreamShared' ? this.byPlan.get(plan.source) : undefined;
    if (plan.kind === 'StreamShared' && source === undefined) throw new Error('a StreamShared node before the subtree it shares');
    const placed: Placed = { id: this.placed.length + 1, stats, node, plan, parent, slot, children: [], sharers: [], source, last: undefined };
    this.placed.push(placed);
    this.byPlan.set(plan, placed);
    if (source !== undefined) {
      if (source.sharers.length === 0) this.shared.push(source);
      source.sharers.push(placed);
    }
    (built.inputs ?? streamInputs(plan)).forEach((input, index) => placed.children.push(this.place(input, placed, index)));
    // A projection over a scan that nothing else reads rewrites the scan's new rows in place.
    if (built instanceof StreamProjectNode && plan.kind === 'StreamProject' && plan.input.kind === 'StreamTableScan' && this.newRowScans.has(plan.input) && !this.sharedSources.has(plan.input)) {
      built.takeInputRows(plan.input.projection.length);
    }
    if (built instanceof StreamScanNode && built.newRows) this.newRowScans.add(plan);
    // After its inputs: post-order.
    if (node.seal !== undefined && node.setHolding !== undefined) this.holders.push(placed);
    if (plan.kind === 'StreamDynamicFilter' && plan.now !== undefined) this.temporal.push(placed);
    if (plan.kind === 'StreamEmitOnWindowClose') this.windowClose.push(placed);
    if (plan.kind === 'StreamTableScan') {
      const list = this.scans.get(plan.relation.id) ?? [];
      list.push(placed);
      this.scans.set(plan.relation.id, list);
    }
    return placed;
  }

  /** Every operator, root first (depth-first): its plan, parent and counters. */
  operators(): { readonly id: number; readonly parentId: number | null; readonly plan: StreamPlan; readonly stats: OperatorStats; readonly detail?: string }[] {
    return this.placed.map((placed) => {
      const detail = placed.node.describe?.();
      return { id: placed.id, parentId: placed.parent?.id ?? null, plan: placed.plan, stats: placed.stats, ...(detail === undefined ? {} : { detail }) };
    });
  }

  /** The operators run by worker threads (a parallel fragment's root, a source fragment's materialize), with their workers. */
  workerOperators(): { readonly id: number; readonly workers: readonly WorkerStatus[] }[] {
    const out: { id: number; workers: readonly WorkerStatus[] }[] = [];
    for (const placed of this.placed) {
      const workers = placed.node.workerStatus?.();
      if (workers !== undefined) out.push({ id: placed.id, workers });
    }
    return out;
  }

  /** Worker threads per parallel fragment (1: the whole dataflow runs on this thread). */
  get parallelism(): number {
    return this.context.parallel?.parallelism ?? 1;
  }

  /** The engine's --cores (a view's source fragment takes at most cores - 1 workers). */
  get cores(): number {
    return this.context.parallel?.cores ?? Number.POSITIVE_INFINITY;
  }

  /** A sink AS query's dataflow (its output goes to the sink, not to a view's rows). */
  get isSink(): boolean {
    return this.context.sinkOutput !== undefined;
  }

  /** The engine's --keyed-source-workers: its keyed fragments' workers generate their sources' rows. */
  get keyedSourceWorkers(): boolean {
    return this.context.tuning.keyedSourceWorkers === true;
  }

  /**
   * Whether this dataflow reads `relationId` by one scan whose rows go only through filters and
   * projections to the view's materialize at the root (which stores them at once: no operator
   * keeps them), so a batch of rows nothing else holds may be narrowed in place (ChangeBatch.rowsOwned).
   */
  passesRowsThrough(relationId: number): boolean {
    const scans = this.scans.get(relationId);
    if (scans === undefined || scans.length !== 1) return false;
    for (let at = scans[0]!.parent; at !== undefined; at = at.parent) {
      if (at.plan.kind === 'StreamMaterialize') return at.parent === undefined;
      if (at.plan.kind !== 'StreamFilter' && at.plan.kind !== 'StreamProject') return false;
    }
    return false;
  }

  /** Relation ids whose changes this dataflow reads. */
  sources(): number[] {
    return [...this.scans.keys()];
  }

  /** Runs one relation's changes through the dataflow; returns the view's changes. */
  push(relationId: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    for (const scan of this.scans.get(relationId) ?? []) appendChanges(out, this.bubble(scan, scan.node.apply(0, changes)));
    return out;
  }

  /**
   * Runs the changes of several relations (one epoch's, or a backfill's snapshot) through the
   * dataflow at once, bottom-up: a node sees all its inputs' changes together, so a join whose
   * both sides changed reads and writes each key group once. Returns the view's changes.
   */
  pushAll(changes: ReadonlyMap<number, ChangeBatch>): ChangeBatch {
    try {
      const out = this.evaluate(this.root, changes);
      for (const placed of this.windowClose) appendChanges(out, this.bubble(placed, placed.node.apply(EMIT_SLOT, emptyChanges())));
      return out;
    } finally {
      for (const placed of this.shared) placed.last = undefined;
    }
  }

  /**
   * A chunk of the open epoch's changes (StreamManager.push): as `pushAll`, but the hash aggregates
   * hold their output until `seal` (each group's changes over the epoch's chunks net to one).
   */
  pushChunk(changes: ReadonlyMap<number, ChangeBatch>): ChangeBatch {
    if (this.holders.length === 0) return this.pushAll(changes);
    this.held = true;
    this.setHolding(true);
    try {
      return this.pushAll(changes);
    } finally {
      this.setHolding(false);
    }
  }

  /** Rows entered the dataflow's nodes other than through a push (a fragment's workers generated them): a `seal` is due. */
  expectSeal(): void {
    if (this.holders.length > 0) this.held = true;
  }

  /** True when a `pushChunk` may have left changes held (a `seal` is due before the commit). */
  get holding(): boolean {
    return this.held;
  }

  /**
   * The held changes (before the epoch commits): each holder's net changes carried up to the
   * root, lower holders first, every holder holding meanwhile so that each emits once.
   */
  seal(): ChangeBatch {
    const out = emptyChanges();
    if (!this.held) return out;
    this.held = false;
    this.setHolding(true);
    try {
      for (const placed of this.holders) {
        const start = process.hrtime.bigint();
        const sealed = placed.node.seal!();
        placed.stats.nanos += process.hrtime.bigint() - start;
        placed.stats.rowsOut += sealed.rows.length;
        if (!isEmpty(sealed)) appendChanges(out, this.bubble(placed, sealed));
      }
    } finally {
      this.setHolding(false);
    }
    return out;
  }

  private setHolding(on: boolean): void {
    for (const placed of this.holders) placed.node.setHolding!(on);
  }

  private evaluate(placed: Placed, changes: ReadonlyMap<number, ChangeBatch>): ChangeBatch {
    const out = this.evaluateNode(placed, changes);
    if (placed.sharers.length > 0) placed.last = out;
    return out;
  }

  private evaluateNode(placed: Placed, changes: ReadonlyMap<number, ChangeBatch>): ChangeBatch {
    if (placed.source !== undefined) {
      const shared = placed.source.last;
      return shared === undefined || isEmpty(shared) ? emptyChanges() : placed.node.apply(0, shared);
    }
    if (placed.plan.kind === 'StreamTableScan') {
      const batch = changes.get(placed.plan.relation.id);
      return batch === undefined || isEmpty(batch) ? emptyChanges() : placed.node.apply(0, batch);
    }
    const inputs = placed.children.map((child) => this.evaluate(child, changes));
    if (inputs.every(isEmpty)) return emptyChanges();
    if (placed.node.applyAll !== undefined) return placed.node.applyAll(inputs);
    // One input: the node's own output batch, not a copy (it keeps row ids, change-batch.ts).
    if (inputs.length === 1) return placed.node.apply(0, inputs[0]!);
    const out = emptyChanges();
    inputs.forEach((input, slot) => {
      if (!isEmpty(input)) appendChanges(out, placed.node.apply(slot, input));
    });
    return out;
  }

  /** True when the view has a temporal filter (its contents change as time passes). */
  get temporalFilters(): boolean {
    return this.temporal.length > 0;
  }

  /** Hands the epoch time to every temporal filter; returns the view's changes (rows the window gained or lost). */
  tick(epochMillis: number): ChangeBatch {
    const out = emptyChanges();
    for (const placed of this.temporal) appendChanges(out, this.bubble(placed, placed.node.apply(TEMPORAL_TICK_SLOT, { rows: [[epochMillis]], signs: [1] })));
    return out;
  }

  /** The open epoch was aborted: nodes drop their in-memory copies of state (join caches). */
  discard(): void {
    this.held = false;
    for (const placed of this.placed) placed.node.discard?.();
  }

  /** The view was dropped. */
  dispose(): void {
    for (const placed of this.placed) placed.node.dispose?.();
  }

  /** The view's changes at creation (before the snapshot of its inputs is pushed). */
  initialize(): ChangeBatch {
    try {
      return this.initializeNode(this.root);
    } finally {
      for (const placed of this.shared) placed.last = undefined;
    }
  }

  private initializeNode(placed: Placed): ChangeBatch {
    const out = placed.node.initial();
    if (placed.source !== undefined) {
      const shared = placed.source.last;
      if (shared !== undefined && !isEmpty(shared)) appendChanges(out, placed.node.apply(0, shared));
    }
    for (const child of placed.children) {
      const childOut = this.initializeNode(child);
      if (!isEmpty(childOut)) appendChanges(out, placed.node.apply(child.slot, childOut));
    }
    if (placed.sharers.length > 0) placed.last = out;
    return out;
  }

  /**
   * Carries a node's output up to the root; a shared subtree's root's output then goes up from each
   * StreamShared leaf of it too, after its own parent chain's.
   */
  private bubble(from: Placed, changes: ChangeBatch): ChangeBatch {
    let current = from;
    let out = changes;
    let forks: { readonly leaf: Placed; readonly changes: ChangeBatch }[] | undefined;
    for (;;) {
      if (isEmpty(out)) break;
      for (const leaf of current.sharers) (forks ??= []).push({ leaf, changes: out });
      const parent = current.parent;
      if (parent === undefined) break;
      out = parent.node.apply(current.slot, out);
      current = parent;
    }
    // Reached the root (or stopped with no changes left: then `out` is empty).
    if (forks === undefined) return out;
    const result = emptyChanges();
    appendChanges(result, out);
    for (const fork of forks) appendChanges(result, this.bubble(fork.leaf, fork.leaf.node.apply(0, fork.changes)));
    return result;
  }
}
