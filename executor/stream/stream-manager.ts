// The streaming engine of one process: every materialized view's dataflow, the changes of the open
// epoch, and their propagation. Writers (DML, COPY) record each change of a relation that some view
// reads (`record`); just before the epoch commits, `flush` pushes them through the dataflows in
// view id order (a view is created after everything it reads, so a view's changes are ready before
// any view on it runs) and the state and view writes land in the same open epoch as the table
// writes: one atomic commit (executor/stream/DESIGN.md). An aborted epoch drops the changes too.

import type { ChangeCapture } from '../batch/table-access.js';
import type { Row } from '../../sql/value.js';
import type { StateStore } from '../../storage/state-table.js';
import { appendChanges, emptyChanges, isEmpty, signsFor, type ChangeBatch } from './change-batch.js';
import type { Dataflow } from './dataflow.js';
import { StreamContext, type ParallelBuilder, type SinkOutput, type SourceFragmentReader, type StreamTuning, type ViewIndex } from './stream-context.js';
import { VIEW_ERRORS_META_KEY, ViewErrors } from './view-errors.js';
import { BackfillProgress } from '../system/backfill-progress.js';
import { streamInputs, type StreamPlan } from '../../planner/stream/stream-plan.js';
import { Dataflow as DataflowClass } from './dataflow.js';
import { GroupCacheBudget } from './join-cache.js';
import { DirectChanges } from './change-log.js';

/**
 * True when a view's plan must see an epoch's changes at once, at flush: a temporal filter (its
 * bound moves with the epoch time, taken at flush), a watermark filter (rows are late against the
 * watermark before their batch, so batch boundaries would decide which rows are dropped) and EMIT
 * ON WINDOW CLOSE (it emits closed windows after every push).
 */
export function needsWholeEpoch(plan: StreamPlan): boolean {
  if (plan.kind === 'StreamWatermarkFilter' || plan.kind === 'StreamEmitOnWindowClose') return true;
  if (plan.kind === 'StreamDynamicFilter' && plan.now !== undefined) return true;
  return streamInputs(plan).some(needsWholeEpoch);
}

export type { ChangeCapture };

export class StreamManager implements ChangeCapture {
  /** Dataflows by view id, kept in id order. */
  private dataflows: Dataflow[] = [];
  /** The direct sinks' changes by view id (`directChanges`), from the build of their dataflow until it is dropped or aborted before its install. */
  private readonly direct = new Map<number, DirectChanges>();
  private readonly read = new Map<number, number>();
  private pending = new Map<number, ChangeBatch>();
  /** Views that take the whole epoch at once (`needsWholeEpoch`), and the relations they read. */
  private readonly wholeEpoch = new Set<number>();
  private readonly heldRead = new Set<number>();
  /**
   * Relations one dataflow reads by one scan that passes their rows straight to its view
   * (Dataflow.passesRowsThrough), and no view holds for the seal: their owned batches are marked so.
   */
  private readonly ownedReads = new Set<number>();
  /** Relations whose pending batch holds only rows recorded as owned (`recordInserts` with `owned`). */
  private readonly ownedPending = new Set<number>();
  /** Changes of the open epoch already pushed through the other views, held for those views until flush. */
  private held = new Map<number, ChangeBatch>();
  readonly errors = new ViewErrors();
  /** Backfills of new views, running and recently finished (oxbow_catalog.backfill_progress). */
  readonly backfills = new BackfillProgress();
  /** The epoch time temporal filters see (milliseconds); tests set a clock of their own. */
  clock: () => number = () => Date.now();
  /** Changes of each relation views read, pushed into the dataflows since start (/metrics throughput). */
  readonly inputChanges = new Map<number, number>();
  /** The join and aggregate caches' budget: their share of --memory-limit (executor/engine/memory-manager.ts, planMemory). */
  readonly groupCaches: GroupCacheBudget;
  /** The parallel runtime at --parallelism > 1 on RocksDB (parallel/parallel-runtime.ts; the engine sets it). */
  parallel: ParallelBuilder | undefined = undefined;

  /** A keyed fragment's cut waits for a safe point (ParallelBuilder.safePointWanted): the sources leave a gap between epochs. */
  safePointWanted(): boolean {
    return this.parallel?.safePointWanted?.() === true;
  }

  constructor(
    private readonly store: StateStore,
    /** A view's time-travel retention from the catalog (undefined: the server default). */
    private readonly retentionOf: (viewId: number) => number | undefined = () => undefined,
    /** A view's secondary indexes from the catalog (CREATE INDEX on a materialized view). */
    private readonly indexesOf: (viewId: number) => readonly ViewIndex[] = () => [],
    /** The join and aggregate caches' budget (the engine passes planMemory's share; tests pass their own). */
    groupCacheBytes = 64 * 1024 * 1024,
    /** Tuning of the streaming operators (stream-context.ts). */
    private readonly tuning: StreamTuning = {},
  ) {
    this.groupCaches = new GroupCacheBudget(groupCacheBytes);
    const errors = store.getMeta(VIEW_ERRORS_META_KEY);
    if (errors !== undefined) this.errors.restore(errors);
  }

  /**
   * Builds a view's dataflow over the store (not yet installed). `retentionMs` is the view's own
   * retention when it is not in the catalog yet (CREATE MATERIALIZED VIEW); else the catalog's.
   * `output`: where a sink AS query's output goes (its change log, or its target directly).
   */
  build(viewId: number, plan: StreamPlan, retentionMs?: number, output?: SinkOutput): Dataflow {
    const retention = retentionMs ?? this.retentionOf(viewId);
    const context = new StreamContext(this.store, viewId, this.errors, retention);
    context.clock = () => this.clock();
    context.viewIndexes = () => this.indexesOf(viewId);
    context.groupCaches = this.groupCaches;
    context.tuning = this.tuning;
    context.parallel = this.parallel;
    context.sinkOutput = output;
    if (output?.kind === 'direct') {
      const direct = new DirectChanges(this.store);
      context.directChanges = direct;
      this.direct.set(viewId, direct);
    } else this.direct.delete(viewId);
    return new DataflowClass(viewId, plan, context);
  }

  install(dataflow: Dataflow): void {
    for (const existing of this.dataflows) if (existing.viewId === dataflow.viewId && existing !== dataflow) existing.dispose();
    this.dataflows = [...this.dataflows.filter((existing) => existing.viewId !== dataflow.viewId), dataflow].sort((a, b) => a.viewId - b.viewId);
    this.recount();
  }

  /** The changes of a direct sink's dataflow (change-log.ts, DirectChanges), its sink delivers from; undefined for any other. */
  directChanges(viewId: number): DirectChanges | undefined {
    return this.direct.get(viewId);
  }

  /** Removes the dataflows of views that no longer exist (after DROP). */
  retain(exists: (viewId: number) => boolean): void {
    for (const viewId of this.direct.keys()) if (!exists(viewId)) this.direct.delete(viewId);
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
    this.wholeEpoch.clear();
    this.heldRead.clear();
    for (const dataflow of this.dataflows) {
      for (const source of dataflow.sources()) this.read.set(source, (this.read.get(source) ?? 0) + 1);
      if (!needsWholeEpoch(dataflow.plan)) continue;
      this.wholeEpoch.add(dataflow.viewId);
      for (const source of dataflow.sources()) this.heldRead.add(source);
    }
    this.ownedReads.clear();
    for (const dataflow of this.dataflows) {
      for (const source of dataflow.sources()) if (this.read.get(source) === 1 && !this.heldRead.has(source) && dataflow.passesRowsThrough(source)) this.ownedReads.add(source);
    }
  }

  captures(relationId: number): boolean {
    return this.read.has(relationId);
  }

  /**
   * The source fragments that take the split ranges of replayed source `relationId` instead of its
   * rows (parallel/source-fragment.ts): every dataflow reading it is one, no view reads theirs and
   * none needs the whole epoch. Undefined when some dataflow needs the rows on the main thread
   * (the source manager then generates them there, and the fragments take them as rows too).
   */
  rangeReaders(relationId: number): SourceFragmentReader[] | undefined {
    const host = this.parallel?.sourceFragments;
    if (host === undefined || !this.read.has(relationId)) return undefined;
    const readers: SourceFragmentReader[] = [];
    for (const dataflow of this.dataflows) {
      if (!dataflow.sources().includes(relationId)) continue;
      const fragment = host.reader(dataflow.viewId);
      if (fragment === undefined || this.read.has(dataflow.viewId) || this.wholeEpoch.has(dataflow.viewId) || !fragment.takesRanges(relationId)) return undefined;
      readers.push(fragment);
    }
    return readers.length > 0 ? readers : undefined;
  }

  /** Ranges of `relationId` went to the workers (`rangeReaders`): views whose fragments exchange their rows seal at flush. */
  rangesTaken(relationId: number): void {
    for (const dataflow of this.dataflows) if (dataflow.sources().includes(relationId)) dataflow.expectSeal();
  }

  record(relationId: number, row: Row, sign: number): void {
    this.ownedPending.delete(relationId);
    let batch = this.pending.get(relationId);
    if (batch === undefined) this.pending.set(relationId, (batch = emptyChanges()));
    batch.rows.push(row);
    batch.signs.push(sign);
  }

  /**
   * Inserts rows[from, to) of `relationId` (as `record(relationId, row, 1)` for each), its pending
   * batch found once. `owned`: the caller keeps no reference to these rows and nothing else holds
   * them (a replayed generator source's new rows), so a scan passing them straight to its view may
   * narrow them in place (ChangeBatch.rowsOwned).
   */
  recordInserts(relationId: number, rows: readonly Row[], from: number, to: number, owned = false): void {
    let batch = this.pending.get(relationId);
    if (!owned) this.ownedPending.delete(relationId);
    if (batch === undefined) {
      if (owned) this.ownedPending.add(relationId);
      // A source's chunk into an empty batch (the usual case): arrays of the chunk's exact length,
      // not grown a push at a time (each growth copies the array and leaves the old one as garbage).
      this.pending.set(relationId, { rows: rows.slice(from, to), signs: signsFor(to - from, 1) });
      return;
    }
    const target = batch.rows;
    const signs = batch.signs;
    for (let i = from; i < to; i++) {
      target.push(rows[i]!);
      signs.push(1);
    }
  }

  /** True when some view has a temporal filter: every barrier must commit an epoch, changes or not. */
  get ticking(): boolean {
    return this.dataflows.some((dataflow) => dataflow.temporalFilters);
  }

  /** Rows recorded and not yet pushed (a source pushes a chunk once it has enough). */
  get pendingRows(): number {
    let rows = 0;
    for (const batch of this.pending.values()) rows += batch.rows.length;
    return rows;
  }

  /**
   * Pushes the changes recorded so far through the dataflows now, inside the open epoch (call
   * inside the write lock): a source pushes each chunk as it arrives, so the epoch's intermediate
   * rows die young and the seal has little left to do. Views that need the whole epoch at once
   * (`wholeEpoch`: temporal filters, watermarks, EMIT ON WINDOW CLOSE) get their inputs held until
   * `flush`. Every other operator gives the same result for an epoch's changes in one batch or in
   * many (executor/stream/DESIGN.md, "Chunks within an epoch").
   */
  push(): void {
    if (this.pending.size === 0) return;
    const changes = this.pending;
    this.pending = new Map();
    for (const relationId of this.ownedPending) {
      const batch = changes.get(relationId);
      if (batch !== undefined && this.ownedReads.has(relationId)) changes.set(relationId, { rows: batch.rows, signs: batch.signs, rowsOwned: true });
    }
    this.ownedPending.clear();
    for (const [relationId, batch] of changes) this.inputChanges.set(relationId, (this.inputChanges.get(relationId) ?? 0) + batch.rows.length);
    for (const dataflow of this.dataflows) {
      if (this.wholeEpoch.has(dataflow.viewId)) continue;
      const inputs = this.inputsOf(dataflow, changes, undefined);
      if (inputs.size === 0) continue;
      // Aggregates hold their output until flush (Dataflow.pushChunk): one net change per group and epoch.
      const out = dataflow.pushChunk(inputs);
      if (!isEmpty(out) && this.read.has(dataflow.viewId)) changes.set(dataflow.viewId, out);
    }
    if (this.wholeEpoch.size === 0) return;
    // What the held views read: the relations' changes and the outputs of the views just run.
    for (const [relationId, batch] of changes) {
      if (!this.heldRead.has(relationId)) continue;
      let held = this.held.get(relationId);
      if (held === undefined) this.held.set(relationId, (held = emptyChanges()));
      appendChanges(held, batch);
    }
  }

  /**
   * Pushes the open epoch's changes through every dataflow (call inside the write lock, before
   * commit): what no chunk pushed yet, then the views that take the whole epoch (in view id order,
   * with the chunks' changes held for them, and the views reading them); a view with a temporal
   * filter first takes the epoch time, even without changes.
   */
  flush(): void {
    this.push();
    this.seal();
    // View errors counted since the last commit go into this epoch (oxbow_catalog.view_errors survives a restart).
    if (this.errors.dirty) this.store.putMeta(VIEW_ERRORS_META_KEY, this.errors.encode());
  }

  /**
   * The end of the epoch's pushes, in view id order: each view's held aggregate changes
   * (Dataflow.seal), and the views that take the whole epoch with their held inputs; the changes of
   * every view run here reach the later views reading it.
   */
  private seal(): void {
    const ticking = this.wholeEpoch.size > 0 && this.ticking;
    const now = ticking ? this.clock() : 0;
    const held = this.held;
    this.held = new Map();
    // Changes of views run here: every later view reading them gets them (the others saw `held` already).
    const fresh = new Map<number, ChangeBatch>();
    for (const dataflow of this.dataflows) {
      const whole = this.wholeEpoch.has(dataflow.viewId);
      const inputs = fresh.size === 0 && !whole ? fresh : this.inputsOf(dataflow, fresh, whole ? held : undefined);
      const ticked = whole && dataflow.temporalFilters ? dataflow.tick(now) : emptyChanges();
      if (inputs.size === 0 && isEmpty(ticked) && !dataflow.holding) continue;
      // The time's changes first, then the writes' (evaluated against the new bound), then what the aggregates held.
      let out = ticked;
      if (inputs.size > 0) {
        const pushed = dataflow.pushAll(inputs);
        // No time changes (a view without a temporal filter): the view's changes as they are, no copy.
        if (isEmpty(out)) out = pushed;
        else appendChanges(out, pushed);
      }
      const sealed = dataflow.seal();
      if (!isEmpty(sealed)) {
        if (isEmpty(out)) out = sealed;
        else appendChanges(out, sealed);
      }
      if (!isEmpty(out) && this.read.has(dataflow.viewId)) fresh.set(dataflow.viewId, out);
    }
  }

  /** The non-empty changes of the relations a dataflow reads: `changes`, after those of `first` when given. */
  private inputsOf(dataflow: Dataflow, changes: ReadonlyMap<number, ChangeBatch>, first: ReadonlyMap<number, ChangeBatch> | undefined): Map<number, ChangeBatch> {
    const inputs = new Map<number, ChangeBatch>();
    for (const source of dataflow.sources()) {
      const batch = changes.get(source);
      const before = first?.get(source);
      let input: ChangeBatch | undefined;
      if (before === undefined || isEmpty(before)) input = batch;
      else if (batch === undefined || isEmpty(batch)) input = before;
      else {
        input = emptyChanges();
        appendChanges(input, before);
        appendChanges(input, batch);
      }
      if (input !== undefined && !isEmpty(input)) inputs.set(source, input);
    }
    return inputs;
  }

  /** Drops the open epoch's recorded changes (the epoch was aborted). */
  discard(): void {
    this.pending = new Map();
    this.ownedPending.clear();
    this.held = new Map();
    for (const dataflow of this.dataflows) dataflow.discard();
    // A dataflow being built (a sink's backfill, never installed once aborted) goes with its
    // changes: its relation id may be given to another relation.
    for (const [viewId, changes] of this.direct) {
      if (this.dataflows.some((dataflow) => dataflow.viewId === viewId)) changes.discard();
      else this.direct.delete(viewId);
    }
    // The aborted epoch's metadata write is gone: write the error records again with the next one.
    this.errors.dirty = true;
  }
}
