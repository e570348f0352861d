// What every streaming operator of one dataflow sees: the state store (operators reach storage only
// through state tables), the evaluation context views run with (fixed: UTC, ISO, no session
// settings, so a view's contents do not depend on who wrote), the error recorder of the view, and
// a batch-executor Runtime for evaluating expressions and running batch templates.

import type { VnodeMapRow } from '../system/vnodes-relation.js';
import type { Row } from '../../sql/value.js';
import type { RelationDef } from '../../sql/catalog.js';
import { lastEpochAtMillis, type Epoch } from '../../sql/epoch.js';
import type { EvalContext } from '../../sql/functions.js';
import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import type { RowVersion, StateStore, StateTable } from '../../storage/state-table.js';
import type { StateTableDeclaration, StreamPlan } from '../../planner/stream/stream-plan.js';
import type { StreamNode } from './stream-node.js';
import type { TableAccess } from '../batch/index.js';
import type { Runtime } from '../batch/runtime.js';
import { runPlan } from '../batch/operator.js';
import { GroupCacheBudget } from './join-cache.js';
import type { ChangeCounter } from './change-log.js';

/** A secondary index on the view (CREATE INDEX): its state table and the entry of a view row. */
export interface ViewIndex {
  readonly table: StateTable;
  entry(row: Row): Row;
}

export interface StreamErrorSink {
  /** A row-level error inside a running view: counted and recorded, never thrown. */
  record(viewId: number, message: string): void;
}

const NEVER_ABORTED = new AbortController().signal;

/** The evaluation context of every view: independent of any session's settings. */
export function streamEvalContext(): EvalContext {
  return { statementTimeMicros: Date.now() * 1000, timeZone: 'UTC', dateStyle: 'ISO, MDY', intervalStyle: 'postgres', extraFloatDigits: 1 };
}

/**
 * TableAccess for batch templates: the placeholder relation of input i (id -1 - i) reads the rows
 * handed in; nothing else is reachable (templates never scan real tables).
 */
class TemplateInputs implements TableAccess {
  inputs: readonly Row[][] = [];
  scan(relation: RelationDef): Iterable<Row> {
    return this.inputs[-1 - relation.id] ?? [];
  }
  versions(): Iterable<RowVersion> {
    return [];
  }
  get(): Row | undefined {
    return undefined;
  }
  insert(relation: RelationDef): void {
    throw new SqlError(SqlState.internalError, `a streaming template tried to write "${relation.name}"`);
  }
  delete(relation: RelationDef): void {
    this.insert(relation);
  }
  nextRowId(): bigint {
    return 0n;
  }
  epochAt(timestampMicros: number): Epoch {
    return lastEpochAtMillis(Math.floor(timestampMicros / 1000));
  }
}

/** Tuning of the streaming operators, passed down from the composition root (bin/). */
export interface StreamTuning {
  /** Dirty groups a hash aggregate holds within an epoch before it emits (default `aggregateCombine.maxGroups`; 0: every batch). */
  readonly aggregateCombineGroups?: number;
  /** Worker threads per parallel operator (`--parallelism`; 1: every dataflow on the main thread). */
  readonly parallelism?: number;
  /**
   * Cores oxbow may use (`--cores`; default os.availableParallelism()): a view's source fragment
   * takes min(parallelism, cores - 1) workers, and below 2 runs as at parallelism 1
   * (planner/stream/parallel-source.ts `sourceFragmentWorkers`).
   */
  readonly cores?: number;
  /** Keyed fragments' workers generate their replayed generator sources' rows (`--keyed-source-workers`; default false: the main thread's exchange). */
  readonly keyedSourceWorkers?: boolean;
  /** Units of generated sources a keyed fragment's workers hold not yet taken before the source waits (default 32,768). */
  readonly keyedSourceCredit?: number;
  /** Entries a keyed fragment's seed read routes per step on the main thread (OXBOW_KEYED_SEED_SLICE_ENTRIES; default: steps of about 10 ms). */
  readonly keyedSeedSliceEntries?: number;
  /** Milliseconds a keyed fragment's cut waits after its seeds were sent ahead to their nodes (OXBOW_KEYED_SEED_CUT_HOLD_MS; tests: a node killed in between; default 0). */
  readonly keyedSeedCutHoldMs?: number;
  /** How long a worker's seal waits for every peer's rows of the epoch (default 60,000 ms). */
  readonly peerTimeoutMs?: number;
}

/** Builds the nodes that run in parallel (parallel/parallel-runtime.ts); undefined for any other. */
export interface ParallelBuilder {
  readonly parallelism: number;
  /** The engine's cores (`StreamTuning.cores`, resolved). */
  readonly cores: number;
  /** `shared`: the dataflow's shared subtrees (StreamShared sources), which stay where the dataflow places them. */
  build(plan: StreamPlan, context: StreamContext, shared?: ReadonlySet<StreamPlan>): StreamNode | undefined;
  /** The views that run as source fragments (parallel/source-fragment.ts). */
  readonly sourceFragments?: SourceFragmentHost;
  /**
   * True while a keyed fragment's cut (or its seed read's start) waits for a safe point
   * (ParallelFragmentNode.waitsForSafePoint): the sources then let each epoch become durable
   * before they write the next one's rows, so a pipelined source leaves the gap the cut needs.
   */
  safePointWanted?(): boolean;
  /** Every keyed fragment's vnode map now (parallel/vnode-map.ts; oxbow_catalog.vnodes). */
  vnodeMaps?(): readonly VnodeMapRow[];
  /** The process's worker threads (batch/worker-pool.ts): started, idle, busy, lost (ended running a job). */
  readonly pool?: { readonly started: number; readonly idle: number; readonly busy: number; readonly lost: number; readonly jobs: number };
}

/** Units [from, to) of one split of a replayed generator source, written into the open epoch. */
export interface SplitRange {
  readonly split: number;
  readonly from: number;
  readonly to: number;
}

/**
 * One partition's decoded rows of a replayed Kafka source, packed in storage's row codec (the Kafka
 * worker's batch, connectors/kafka/decoded-batch.ts, with their row ids set): `count` rows, all
 * inserts. The buffer is transferred to the worker that stores them.
 */
export interface PackedPartitionRows {
  readonly partition: number;
  /** Rows (`rows`) or messages (`raw`). */
  readonly count: number;
  readonly rows?: Uint8Array;
  /** The partition's messages undecoded (connectors/kafka/raw-batch.ts): the worker decodes them. */
  readonly raw?: RawMessages;
  /** No message: the offsets [from, to) of the partition, which the fragment's owner fetches itself (`count` offsets). */
  readonly range?: { readonly from: bigint; readonly to: bigint };
}

/** One partition's messages: offsets, timestamps, key and value lengths (-1: null), the keys and values back to back. */
export interface RawMessages {
  readonly offsets: BigInt64Array;
  readonly timestamps: Float64Array;
  readonly keyLengths: Int32Array;
  readonly valueLengths: Int32Array;
  readonly bytes: Uint8Array;
}

/** A view run by workers that generate its source's rows from split ranges (PARALLEL.md, "Source fragments"). */
export interface SourceFragmentReader {
  /** False while the view needs source `relationId`'s rows on the main thread (a secondary index, a scan outside the workers). */
  takesRanges(relationId?: number): boolean;
  /** Source `relationId`'s units of the open epoch: the workers generate, transform and store (or exchange) their rows. */
  take(ranges: readonly SplitRange[], relationId?: number): void;
  /** A replayed Kafka source's decoded batches of the open epoch (a Kafka source fragment): the workers transform and store their rows. */
  takeRows?(batches: readonly PackedPartitionRows[], relationId: number): void;
  /** Whether it takes a Kafka source's offset ranges (`range` batches) and has them fetched by its owners. */
  takesFetchRanges?(): boolean;
  /** While the workers hold too many units taken and not yet processed: a Promise that settles when they catch up (the source waits). */
  held?(): Promise<void> | undefined;
}

export interface SourceFragmentHost {
  /** What takes the ranges of view `viewId`'s sources: its source fragment, or its keyed fragments generating their inputs. */
  reader(viewId: number): SourceFragmentReader | undefined;
}

/**
 * Where a sink AS query's StreamMaterialize sends its output: to its change-log table (`log`:
 * change-log.ts, the catalog's `stream.changeLog`), which its deliveries read, or straight to its
 * target with no log (`direct`: a blackhole; the changes are counted into the context's
 * `directChanges`). `rowsKept` false: the view stores no rows of its own (an append-only sink:
 * they are in the log only, or nowhere). `paused`: nothing is written or counted (the backfill of
 * a sink that keeps its rows, whose first delivery reads them; cleared when it ends).
 */
export type SinkOutput =
  | { readonly kind: 'log'; readonly tableId: number; readonly rowsKept: boolean; paused?: boolean }
  | { readonly kind: 'direct'; readonly rowsKept: boolean; paused?: boolean };

export class StreamContext {
  private readonly templateInputs = new TemplateInputs();
  readonly runtime: Runtime;
  /** The epoch time in milliseconds (the stream manager's clock; a temporal filter's first bound). */
  clock: () => number = () => Date.now();
  /** The view's secondary indexes in the current catalog, which StreamMaterialize keeps in step. */
  viewIndexes: () => readonly ViewIndex[] = () => [];
  /** The budget of the join caches (join-cache.ts): the stream manager's, shared by every view. */
  groupCaches = new GroupCacheBudget(64 * 1024 * 1024);
  /** The engine's tuning of the streaming operators (the stream manager's). */
  tuning: StreamTuning = {};
  /** The parallel runtime at `--parallelism` > 1 (the stream manager's). */
  parallel: ParallelBuilder | undefined = undefined;
  /** Where a sink AS query's StreamMaterialize sends its output (`SinkOutput`); undefined for a view. */
  sinkOutput: SinkOutput | undefined = undefined;
  /**
   * A direct sink's changes (`sinkOutput.kind` 'direct'): StreamMaterialize counts them there
   * instead of writing a log. The stream manager's DirectChanges; in a source fragment's worker,
   * its counts of the open epoch (connectors/source-fragment-worker.ts).
   */
  directChanges: ChangeCounter | undefined = undefined;

  constructor(
    readonly store: StateStore,
    readonly viewId: number,
    private readonly errors: StreamErrorSink,
    /** The view's own rows keep versions this long (its `retention`); undefined: the server default. */
    readonly viewRetentionMs?: number,
  ) {
    this.runtime = {
      tables: this.templateInputs,
      parameters: [],
      evalContext: streamEvalContext(),
      signal: NEVER_ABORTED,
      outer: [],
      subqueryCache: new Map(),
      runPlan,
      workTables: new Map(),
    };
  }

  stateTable(declaration: StateTableDeclaration): StateTable {
    const retention = declaration.tableId === this.viewId && this.viewRetentionMs !== undefined ? { retentionMs: this.viewRetentionMs } : {};
    return this.store.table({ tableId: declaration.tableId, columnTypes: declaration.columnTypes, primaryKey: declaration.primaryKey, ...retention, ...(declaration.vnodeColumns === undefined ? {} : { vnodeColumns: declaration.vnodeColumns }) });
  }

  /** Sets the rows batch templates read as their inputs. */
  setTemplateInputs(inputs: readonly Row[][]): Runtime {
    this.templateInputs.inputs = inputs;
    return this.runtime;
  }

  recordError(error: unknown): void {
    this.errors.record(this.viewId, toSqlError(error).message);
  }
}
