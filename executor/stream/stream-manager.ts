// The streaming engine of one process: every materialized view's dataflow, the changes of the open
// epoch, and their propagation. Writers (DML, COPY) record each change of a relation that some view
// reads (`record`); just before the epoch commits, `flush` pushes them through the dataflows in
// view id order (a view is created after everything it reads, so a view's changes are ready before
// any view on it runs) and the state and view writes land in the same open epoch as the table
// writes: one atomic commit (executor/stream/DESIGN.md). An aborted epoch drops the changes too.

import type { Row } from '../../sql/value.js';
import type { StateStore } from '../../storage/state-table.js';
import { appendChanges, emptyChanges, isEmpty, type ChangeBatch } from './change-batch.js';
import type { Dataflow } from './dataflow.js';
import { StreamContext, type ViewIndex } from './stream-context.js';
import { VIEW_ERRORS_META_KEY, ViewErrors } from './view-errors.js';
import { BackfillProgress } from '../system/backfill-progress.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { Dataflow as DataflowClass } from './dataflow.js';
import { GroupCacheBudget } from './join-cache.js';

export interface ChangeCapture {
  /** True when some view reads the relation (so its changes must be recorded). */
  captures(relationId: number): boolean;
  record(relationId: number, row: Row, sign: number): void;
}

export class StreamManager implements ChangeCapture {
  /** Dataflows by view id, kept in id order. */
  private dataflows: Dataflow[] = [];
  private readonly read = new Map<number, number>();
  private pending = new Map<number, ChangeBatch>();
  readonly errors = new ViewErrors();
  /** Backfills of new views, running and recently finished (oxbow_catalog.backfill_progress). */
  readonly backfills = new BackfillProgress();
  /** The epoch time temporal filters see (milliseconds); tests set a clock of their own. */
  clock: () => number = () => Date.now();
  /** Changes of each relation views read, pushed into the dataflows since start (/metrics throughput). */
  readonly inputChanges = new Map<number, number>();
  /** The join caches' budget: a quarter of --memory-limit (the row cache of the store has the limit itself). */
  readonly groupCaches: GroupCacheBudget;

  constructor(
    private readonly store: StateStore,
    /** A view's time-travel retention from the catalog (undefined: the server default). */
    private readonly retentionOf: (viewId: number) => number | undefined = () => undefined,
    /** A view's secondary indexes from the catalog (CREATE INDEX on a materialized view). */
    private readonly indexesOf: (viewId: number) => readonly ViewIndex[] = () => [],
    memoryLimitBytes = 256 * 1024 * 1024,
  ) {
    this.groupCaches = new GroupCacheBudget(Math.floor(memoryLimitBytes / 4));
    const errors = store.getMeta(VIEW_ERRORS_META_KEY);
    if (errors !== undefined) this.errors.restore(errors);
  }

  /**
   * Builds a view's dataflow over the store (not yet installed). `retentionMs` is the view's own
   * retention when it is not in the catalog yet (CREATE MATERIALIZED VIEW); else the catalog's.
   */
  build(viewId: number, plan: StreamPlan, retentionMs?: number): Dataflow {
    const retention = retentionMs ?? this.retentionOf(viewId);
    const context = new StreamContext(this.store, viewId, this.errors, retention);
    context.clock = () => this.clock();
    context.viewIndexes = () => this.indexesOf(viewId);
    context.groupCaches = this.groupCaches;
    return new DataflowClass(viewId, plan, context);
  }

  install(dataflow: Dataflow): void {
    for (const existing of this.dataflows) if (existing.viewId === dataflow.viewId && existing !== dataflow) existing.dispose();
    this.dataflows = [...this.dataflows.filter((existing) => existing.viewId !== dataflow.viewId), dataflow].sort((a, b) => a.viewId - b.viewId);
    this.recount();
  }

  /** Removes the dataflows of views that no longer exist (after DROP). */
  retain(exists: (viewId: number) => boolean): void {
    const kept = this.dataflows.filter((dataflow) => exists(dataflow.viewId));
    for (const dataflow of this.dataflows) {
      if (kept.includes(dataflow)) continue;
      this.errors.forget(dataflow.viewId);
      dataflow.dispose();
    }
    this.dataflows = kept;
    this.recount();
  }

  /** The installed dataflows in view id order (system tables, EXPLAIN ANALYZE, /metrics). */
  get all(): readonly Dataflow[] {
    return this.dataflows;
  }

  get viewIds(): number[] {
    return this.dataflows.map((dataflow) => dataflow.viewId);
  }

  private recount(): void {
    this.read.clear();
    for (const dataflow of this.dataflows) for (const source of dataflow.sources()) this.read.set(source, (this.read.get(source) ?? 0) + 1);
  }

  captures(relationId: number): boolean {
    return this.read.has(relationId);
  }

  record(relationId: number, row: Row, sign: number): void {
    let batch = this.pending.get(relationId);
    if (batch === undefined) this.pending.set(relationId, (batch = emptyChanges()));
    batch.rows.push(row);
    batch.signs.push(sign);
  }

  /** True when some view has a temporal filter: every barrier must commit an epoch, changes or not. */
  get ticking(): boolean {
    return this.dataflows.some((dataflow) => dataflow.temporalFilters);
  }

  /**
   * Pushes the open epoch's changes through every dataflow (call inside the write lock, before
   * commit); a view with a temporal filter first takes the epoch time, even without changes.
   */
  flush(): void {
    this.pushChanges();
    // View errors counted since the last commit go into this epoch (oxbow_catalog.view_errors survives a restart).
    if (this.errors.dirty) this.store.putMeta(VIEW_ERRORS_META_KEY, this.errors.encode());
  }

  private pushChanges(): void {
    const ticking = this.ticking;
    if (this.pending.size === 0 && !ticking) return;
    const now = ticking ? this.clock() : 0;
    const changes = this.pending;
    this.pending = new Map();
    for (const [relationId, batch] of changes) this.inputChanges.set(relationId, (this.inputChanges.get(relationId) ?? 0) + batch.rows.length);
    for (const dataflow of this.dataflows) {
      const inputs = new Map<number, ChangeBatch>();
      for (const source of dataflow.sources()) {
        const batch = changes.get(source);
        if (batch !== undefined && !isEmpty(batch)) inputs.set(source, batch);
      }
      const ticked = dataflow.temporalFilters ? dataflow.tick(now) : emptyChanges();
      if (inputs.size === 0 && isEmpty(ticked)) continue;
      // The time's changes first, then the writes' (evaluated against the new bound).
      let out = ticked;
      if (inputs.size > 0) {
        const pushed = dataflow.pushAll(inputs);
        // No time changes (a view without a temporal filter): the view's changes as they are, no copy.
        if (isEmpty(out)) out = pushed;
        else appendChanges(out, pushed);
      }
      if (!isEmpty(out) && this.read.has(dataflow.viewId)) changes.set(dataflow.viewId, out);
    }
  }

  /** Drops the open epoch's recorded changes (the epoch was aborted). */
  discard(): void {
    this.pending = new Map();
    for (const dataflow of this.dataflows) dataflow.discard();
    // The aborted epoch's metadata write is gone: write the error records again with the next one.
    this.errors.dirty = true;
  }
}
