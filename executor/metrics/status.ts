// The in-process status API: plain objects describing the engine right now (objects, dataflows
// with their per-operator counters, state sizes, epochs, sessions, latency histograms, cache and
// process figures). The oxbow_catalog system tables, EXPLAIN ANALYZE, the Prometheus text of
// /metrics and the JSON of /api/status all read these functions, so they agree with each other.

import { shownOptions } from '../connectors/postgres/postgres-options.js';
import { epochToMillis, nextEpoch, type Epoch } from '../../sql/epoch.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { DataType } from '../../sql/types.js';
import { getHeapStatistics } from 'node:v8';
import type { StateStore, StateTable } from '../../storage/state-table.js';
import type { MemoryPart } from '../../storage/mvcc-backend.js';
import { mallocInfo } from '../../storage/rocksdb.js';
import type { Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import type { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import type { StreamManager } from '../stream/stream-manager.js';
import type { ViewErrorRecord } from '../stream/view-errors.js';
import type { SourceStatus } from '../connectors/source-status.js';
import type { EngineMetrics, SessionActivity } from './engine-metrics.js';
import type { HistogramSnapshot } from './histogram.js';

/** What the operator sees (oxbow_catalog.memory, oxbow_memory_manager_* on /metrics). */
export interface MemoryManagerStatus {
  /** The caches' effective budget now (row + group caches, the main thread's and every worker's). */
  readonly cacheBudgetBytes: number;
  /** The caches' budget at most (planMemory's, plus each worker's maximum). */
  readonly cacheMaxBytes: number;
  /** The live heaps after their last full collection, the main thread's and every worker's (0 before the first). */
  readonly liveHeapBytes: number;
  /** The heap part of --memory-limit: live heap x (1 + growth) is kept under it. */
  readonly heapTargetBytes: number;
  /** V8's heap growth now, in percent. */
  readonly heapGrowingPercent: number;
  /** Full collections observed (the main thread's, and the workers' taken under the current budget). */
  readonly readings: number;
  /** Times the budget was lowered / raised, the growth lowered / raised. */
  readonly budgetLowered: number;
  readonly budgetRaised: number;
  readonly growthLowered: number;
  readonly growthRaised: number;
  /** Bytes the caches evicted because the manager lowered their budget. */
  readonly evictedBytes: number;
  /** malloc_trim calls (C heap free chunks given back) and the milliseconds they took. */
  readonly trims: number;
  readonly trimMs: number;
  /** Of `readings`, the workers' full collections (reported with their epoch batches) that moved a step. */
  readonly workerReadings: number;
}

export interface ObjectInfo {
  readonly id: number;
  readonly schema: string;
  readonly name: string;
  /** 'table', 'source', 'view', 'materialized view', 'sink' or 'index'. */
  readonly kind: string;
  readonly definition: string | null;
  readonly dependsOn: readonly number[];
  /** Creation time (milliseconds); null for objects created before creation times were kept. */
  readonly createdAtMillis: number | null;
}

export interface OperatorInfo {
  readonly operatorId: number;
  readonly parentId: number | null;
  /** The streaming plan node kind (StreamHashAggregate, StreamMaterialize ...). */
  readonly kind: string;
  readonly stateful: boolean;
  readonly stateTableIds: readonly number[];
  /** The relation a StreamTableScan reads (null for other operators): the dashboard's input edges. */
  readonly relationId: number | null;
  readonly rowsIn: number;
  readonly rowsOut: number;
  readonly batches: number;
  readonly seconds: number;
}

export interface DataflowInfo {
  readonly viewId: number;
  readonly schema: string;
  readonly name: string;
  readonly operators: readonly OperatorInfo[];
}

export interface StateTableInfo {
  readonly tableId: number;
  /** The table or materialized view the state belongs to. */
  readonly objectId: number;
  readonly schema: string;
  readonly name: string;
  readonly kind: string;
  /** The dataflow operator keeping it (null for a table's own rows). */
  readonly operatorId: number | null;
  readonly operatorKind: string | null;
  readonly purpose: string;
  readonly bytes: number;
  readonly keys: number;
  /** Its keys carry their vnode (a keyed fragment's state in a view of plan version 11 or later: storage/DESIGN.md, section 2). */
  readonly keyedByVnode: boolean;
}

export interface EpochInfo {
  /** The last durable epoch: what statements and AS OF reads see. */
  readonly committedEpoch: Epoch;
  readonly committedAtMillis: number;
  /** The last sealed epoch: committedEpoch, or later while epochs are written off the main thread. */
  readonly sealedEpoch: Epoch;
  readonly sealedAtMillis: number;
  /** Sealed epochs not yet durable (their write in flight or waiting for the one running). */
  readonly epochsInFlight: number;
  /** The epoch a commit made now would get (the open epoch's number): after the last sealed one. */
  readonly openEpoch: Epoch;
  readonly epochsCommitted: number;
  readonly epochsSealed: number;
}

export interface ThroughputInfo {
  /** Per source: rows its connector (Kafka, a generator) wrote into epochs, whether or not a view reads it. */
  readonly sources: readonly { readonly sourceId: number; readonly schema: string; readonly name: string; readonly rows: number }[];
  /** Per relation read by some view (table, source, view): changes pushed into dataflows. */
  readonly inputs: readonly { readonly relationId: number; readonly schema: string; readonly name: string; readonly kind: string; readonly rows: number }[];
  /** Per materialized view: changes into its Materialize operator and rows written to the view. */
  readonly views: readonly { readonly viewId: number; readonly schema: string; readonly name: string; readonly rowsIn: number; readonly rowsOut: number; readonly seconds: number }[];
}

export interface CacheInfo {
  readonly hits: number;
  readonly misses: number;
  readonly hitRate: number;
  readonly cachedRows: number;
  readonly usedBytes: number;
  readonly limitBytes: number;
  readonly evictions: number;
}

export interface ProcessInfo {
  readonly residentBytes: number;
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  readonly externalBytes: number;
  readonly uptimeSeconds: number;
  readonly eventLoopDelay: { readonly meanSeconds: number; readonly p99Seconds: number; readonly maxSeconds: number };
}

/** One worker thread of a parallel dataflow (oxbow_catalog.memory's worker_heap rows, oxbow_catalog.dataflow_workers). */
export interface WorkerInfo {
  readonly viewId: number;
  readonly schema: string;
  readonly name: string;
  /** The operator the workers run under (oxbow_catalog.dataflow's operator_id): a fragment's root, a source fragment's materialize. */
  readonly operatorId: number;
  /** 'fragment' or 'source fragment'. */
  readonly kind: string;
  readonly worker: number;
  /** The thread it runs on (the process's pooled threads run one worker after another). */
  readonly threadId: number;
  /** At its last epoch batch (0 until its first). */
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  readonly liveHeapBytes: number;
  readonly fullCollections: number;
  readonly rowCacheBytes: number;
  readonly rowCacheLimitBytes: number;
  readonly groupCacheBytes: number;
  readonly groupCacheLimitBytes: number;
  readonly evictedBytes: number;
  /** V8's bound on its old generation (null: V8's default). */
  readonly oldGenerationLimitBytes: number | null;
  readonly batches: number;
  readonly waitedMs: number;
}

/** One part of the process's memory (oxbow_catalog.memory, oxbow_memory_bytes). */
export interface MemoryInfo {
  readonly component: string;
  readonly bytes: number;
  /** The bound it is kept under, where there is one. */
  readonly limitBytes: number | null;
  /** What it is and which other component it is part of. */
  readonly description: string;
}

/** What a worker_heap row of oxbow_catalog.memory is. */
export const WORKER_HEAP_DESCRIPTION =
  "one worker thread's V8 heap in use at its last epoch batch (view_name, operator_id, worker say which; cache_bytes: its row and group caches, part of bytes; limit: the bound on its old generation)";

const MEMORY_DESCRIPTIONS: Readonly<Record<string, string>> = {
  rss: 'resident set of the process: everything below that is in memory',
  js_heap_used: "the main thread's V8 heap in use, garbage not yet collected included (part of js_heap_total)",
  js_heap_total: "the main thread's V8 heap reserved (limit: V8's heap size limit)",
  worker_heaps: "the parallel dataflows' worker threads' V8 heaps in use at their last epoch batch, summed (the worker_heap rows; cache_bytes: their caches)",
  js_heap_used_all_threads: "V8 heaps in use, the main thread's and every worker's: js_heap_used + worker_heaps (limit: the heap part of --memory-limit)",
  caches_all_threads: "the caches of every thread: row_cache + group_caches + the workers' (limit: cache_budget's effective budget)",
  external: 'C++ memory bound to JavaScript objects: Buffers and typed arrays (part of malloc_in_use)',
  array_buffers: 'backing stores of ArrayBuffers and Buffers (part of external)',
  row_cache: "decoded rows of state tables cached on the V8 heap (part of js_heap_used; limit: its share of cache_budget)",
  group_caches: "join sides' and aggregates' cached groups on the V8 heap (part of js_heap_used; limit: its share of cache_budget)",
  cache_budget: "the caches' effective budget (row_cache + group_caches, and every worker's) the memory manager sets from the live heaps (limit: the most --memory-limit gives them)",
  live_heap: "V8 heaps in use just after their last full collection, the main thread's and every worker's (limit: what keeps the heaps, live heap times V8's growth, in their part of --memory-limit)",
  cache_evicted_by_manager: 'bytes the caches evicted since start because the memory manager lowered cache_budget (a count, not memory held)',
  write_batches: 'packed write batches of sealed epochs in flight and spare ones kept for the next (part of array_buffers)',
  rocksdb_block_cache: "RocksDB's block cache: data, index and filter blocks, and the memtables charged to it (part of malloc_in_use; limit: an eighth of --memory-limit, 16-256 MiB)",
  rocksdb_block_cache_pinned: 'of the block cache, entries pinned by readers and the pinned top-level index and filter partitions',
  rocksdb_memtables: "RocksDB's memtables: the active one, those waiting for a flush, flushed ones still pinned by an iterator (part of malloc_in_use)",
  rocksdb_table_readers: "RocksDB's open SST files' readers outside the block cache (part of malloc_in_use)",
  malloc_in_use: 'C heap handed out by malloc (glibc mallinfo2, every arena): RocksDB, Buffers, the addon, Node itself',
  malloc_free: "C heap free inside malloc's arenas, not given back to the system (fragmentation; resident where touched)",
  unattributed: 'rss minus js_heap_total, malloc_in_use and malloc_free: code, thread stacks, V8 pages not yet committed or returned',
};

export interface StatusSnapshot {
  readonly epochs: EpochInfo;
  readonly barrierLatency: HistogramSnapshot;
  readonly commitLatency: HistogramSnapshot;
  readonly statements: { readonly total: number; readonly errors: number };
  readonly objects: readonly ObjectInfo[];
  readonly dataflows: readonly DataflowInfo[];
  readonly stateTables: readonly StateTableInfo[];
  readonly throughput: ThroughputInfo;
  readonly cache: CacheInfo | null;
  readonly process: ProcessInfo;
  readonly sessions: readonly SessionActivity[];
}

export interface StatusInputs {
  readonly catalog: () => CatalogSnapshot;
  readonly store: StateStore;
  /** The row cache's figures (the MVCC store's memoryStats), when the store has them. */
  readonly memoryStats?: () => { usedBytes: number; limitBytes: number; cachedRows: number; hits: number; misses: number; evictions: number };
  /** The store's memory by component (row cache, write batches, RocksDB's): MvccStateStore.memoryUsage. */
  readonly memoryUsage?: () => readonly MemoryPart[];
  readonly streams: StreamManager;
  /** The memory manager's budget and actions (executor/engine/memory-manager.ts). */
  readonly memoryManager?: { status(): MemoryManagerStatus };
  readonly metrics: EngineMetrics;
  readonly sourceStatus?: SourceStatus;
  readonly checkpoints?: CheckpointMetrics;
}

export function kindWord(relation: RelationDef): string {
  return relation.kind === 'materialized_view' ? 'materialized view' : relation.kind;
}

function definitionOf(relation: RelationDef, catalog: CatalogSnapshot): string | null {
  if (relation.definition !== undefined) return relation.definition;
  if (relation.indexOn !== undefined) {
    const on = catalog.relationById(relation.indexOn.relationId);
    const columns = relation.indexOn.columns.map((index) => on?.columns[index]?.name ?? '?');
    return `ON ${on === undefined ? '?' : `${on.schema}.${on.name}`} (${columns.join(', ')})`;
  }
  if (relation.options !== undefined) {
    const options = Object.entries(shownOptions(relation.options)).map(([key, value]) => `${key} = '${value.replace(/'/g, "''")}'`);
    const format = relation.format === undefined ? '' : ` FORMAT ${relation.format}${relation.encode === undefined ? '' : ` ENCODE ${relation.encode}`}`;
    return `WITH (${options.join(', ')})${format}`;
  }
  return null;
}

/** Rows a state table's size is counted from when RocksDB estimates 0 bytes for it. */
export const COUNTED_SIZE_ROW_LIMIT = 1000;
/** Bytes an MVCC key adds to the key columns: table id, vnode, epoch. */
const VERSION_KEY_OVERHEAD = 14;

/** An encoded value's approximate size in bytes (the store's encodings: fixed-width numbers, UTF-8 text). */
function valueBytes(value: Value): number {
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'number' || typeof value === 'bigint') return 8;
  if (typeof value === 'string') return Buffer.byteLength(value) + 1;
  if (value instanceof Uint8Array) return value.length + 4;
  return Buffer.byteLength(String(value)) + 1;
}

/**
 * RocksDB estimates 0 bytes for a key range that sits in the memtable in a few entries (its skip
 * list sampling rounds small ranges to nothing) or in one small block. Such a table is small, so
 * count its rows at the committed epoch (at most COUNTED_SIZE_ROW_LIMIT; a lower bound beyond)
 * and add up their values' encoded sizes plus the version key's overhead.
 */
function countedSize(table: StateTable, epoch: Epoch): { bytes: number; keys: number } {
  let keys = 0;
  let bytes = 0;
  for (const row of table.scan({ epoch, limit: COUNTED_SIZE_ROW_LIMIT })) {
    keys++;
    bytes += VERSION_KEY_OVERHEAD;
    for (const value of row) bytes += valueBytes(value);
    for (const index of table.schema.primaryKey) bytes += valueBytes(row[index]!);
  }
  return { bytes, keys };
}

function operatorKind(plan: StreamPlan): string {
  return plan.kind;
}

export class EngineStatus {
  constructor(private readonly inputs: StatusInputs) {}

  get metrics(): EngineMetrics {
    return this.inputs.metrics;
  }

  objects(): ObjectInfo[] {
    const catalog = this.inputs.catalog();
    return catalog
      .relations()
      .filter((relation) => relation.kind !== 'system')
      .sort((a, b) => a.id - b.id)
      .map((relation) => ({ id: relation.id, schema: relation.schema, name: relation.name, kind: kindWord(relation), definition: definitionOf(relation, catalog), dependsOn: relation.dependsOn, createdAtMillis: relation.createdAtMillis ?? null }));
  }

  dataflows(): DataflowInfo[] {
    const catalog = this.inputs.catalog();
    const out: DataflowInfo[] = [];
    for (const dataflow of this.inputs.streams.all) {
      const view = catalog.relationById(dataflow.viewId);
      if (view === undefined) continue;
      out.push({
        viewId: dataflow.viewId,
        schema: view.schema,
        name: view.name,
        operators: dataflow.operators().map((operator) => ({
          operatorId: operator.id,
          parentId: operator.parentId,
          kind: operatorKind(operator.plan),
          stateful: operator.plan.property === 'stateful',
          stateTableIds: operator.plan.stateTables.map((table) => table.tableId),
          relationId: operator.plan.kind === 'StreamTableScan' ? operator.plan.relation.id : null,
          rowsIn: operator.stats.rowsIn,
          rowsOut: operator.stats.rowsOut,
          batches: operator.stats.batches,
          seconds: operator.stats.seconds,
        })),
      });
    }
    return out;
  }

  /** Every state table: each table's rows, and every dataflow operator's state (a view's rows included, a sink's dataflow too). */
  stateTables(): StateTableInfo[] {
    const catalog = this.inputs.catalog();
    const out: StateTableInfo[] = [];
    // Opened with the schema (retention included) their owners open them with: opening a table
    // with another retention would change its version GC record.
    const committed = this.inputs.store.committedEpoch;
    const sizeOf = (tableId: number, columnTypes: readonly DataType[], primaryKey: readonly number[], retentionMs: number | undefined, vnodeColumns?: readonly number[]): { bytes: number; keys: number } => {
      const table = this.inputs.store.table({ tableId, columnTypes, primaryKey, ...(retentionMs === undefined ? {} : { retentionMs }), ...(vnodeColumns === undefined ? {} : { vnodeColumns }) });
      const estimate = table.stats();
      return estimate.bytes > 0 ? estimate : countedSize(table, committed);
    };
    const dataflows = new Map(this.inputs.streams.all.map((dataflow) => [dataflow.viewId, dataflow]));
    for (const relation of [...catalog.relations()].sort((a, b) => a.id - b.id)) {
      if (relation.kind === 'table' || relation.kind === 'source') {
        const size = sizeOf(relation.id, relation.columns.map((column) => column.type), relation.primaryKey, relation.retentionMs);
        out.push({ tableId: relation.id, objectId: relation.id, schema: relation.schema, name: relation.name, kind: relation.kind, operatorId: null, operatorKind: null, purpose: relation.kind === 'table' ? 'table rows' : relation.replayed === true ? 'source positions' : 'source rows', ...size, keyedByVnode: false });
      } else {
        // A materialized view's dataflow, or a sink's (CREATE SINK ... AS SELECT owns one).
        const dataflow = dataflows.get(relation.id);
        if (dataflow === undefined) continue;
        for (const operator of dataflow.operators()) {
          for (const declaration of operator.plan.stateTables) {
            const size = sizeOf(declaration.tableId, declaration.columnTypes, declaration.primaryKey, declaration.tableId === relation.id ? relation.retentionMs : undefined, declaration.vnodeColumns);
            out.push({
              tableId: declaration.tableId,
              objectId: relation.id,
              schema: relation.schema,
              name: relation.name,
              kind: kindWord(relation),
              operatorId: operator.id,
              operatorKind: operatorKind(operator.plan),
              purpose: declaration.purpose,
              ...size,
              keyedByVnode: declaration.vnodeColumns !== undefined,
            });
          }
        }
      }
    }
    return out;
  }

  epochs(): EpochInfo {
    const store = this.inputs.store;
    const metrics = this.inputs.metrics;
    // Read in one synchronous turn, so committed <= sealed (a write resolves in a later turn).
    const sealed = store.latestEpoch;
    const committed = store.committedEpoch;
    return {
      committedEpoch: committed,
      committedAtMillis: epochToMillis(committed),
      sealedEpoch: sealed,
      sealedAtMillis: epochToMillis(sealed),
      epochsInFlight: metrics.epochsInFlight,
      openEpoch: nextEpoch(sealed, Date.now()),
      epochsCommitted: metrics.epochsCommitted,
      epochsSealed: metrics.epochsSealed,
    };
  }

  throughput(): ThroughputInfo {
    const catalog = this.inputs.catalog();
    const inputs = [...this.inputs.streams.inputChanges]
      .sort((a, b) => a[0] - b[0])
      .map(([relationId, rows]) => {
        const relation = catalog.relationById(relationId);
        return { relationId, schema: relation?.schema ?? '', name: relation?.name ?? String(relationId), kind: relation === undefined ? 'dropped' : kindWord(relation), rows };
      });
    const views = this.dataflows().map((dataflow) => {
      const root = dataflow.operators[0]!;
      const seconds = dataflow.operators.reduce((sum, operator) => sum + operator.seconds, 0);
      return { viewId: dataflow.viewId, schema: dataflow.schema, name: dataflow.name, rowsIn: root.rowsIn, rowsOut: root.rowsOut, seconds };
    });
    const sources = [...this.inputs.metrics.sourceRows]
      .sort((a, b) => a[0] - b[0])
      .map(([sourceId, rows]) => {
        const relation = catalog.relationById(sourceId);
        return { sourceId, schema: relation?.schema ?? '', name: relation?.name ?? String(sourceId), rows };
      });
    return { sources, inputs, views };
  }

  cache(): CacheInfo | null {
    const stats = this.inputs.memoryStats?.();
    if (stats === undefined) return null;
    const lookups = stats.hits + stats.misses;
    return { ...stats, hitRate: lookups === 0 ? 0 : stats.hits / lookups };
  }

  process(): ProcessInfo {
    const memory = process.memoryUsage();
    return {
      residentBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      uptimeSeconds: process.uptime(),
      eventLoopDelay: this.inputs.metrics.eventLoopDelay(),
    };
  }

  /**
   * Where the process's memory is, by component: the process's figures (RSS, V8's heap, external
   * memory), the engine's caches with their limits, the store's write batches and RocksDB's
   * memory, and the C heap (in use, free inside the arenas). Components overlap (each description
   * says which it is part of); `unattributed` is the RSS none of the top-level ones explains.
   */
  memory(): MemoryInfo[] {
    const usage = process.memoryUsage();
    const heapLimit = getHeapStatistics().heap_size_limit;
    const groupCaches = this.inputs.streams.groupCaches;
    const malloc = mallocInfo();
    const parts: { component: string; bytes: number; limitBytes: number | null }[] = [
      { component: 'rss', bytes: usage.rss, limitBytes: null },
      { component: 'js_heap_used', bytes: usage.heapUsed, limitBytes: null },
      { component: 'js_heap_total', bytes: usage.heapTotal, limitBytes: heapLimit },
      { component: 'external', bytes: usage.external, limitBytes: null },
      { component: 'array_buffers', bytes: usage.arrayBuffers, limitBytes: null },
    ];
    const store = this.inputs.memoryUsage?.() ?? [];
    const rowCache = store.find((part) => part.component === 'row_cache');
    if (rowCache !== undefined) parts.push(rowCache);
    parts.push({ component: 'group_caches', bytes: groupCaches.usedBytes, limitBytes: groupCaches.limitBytes });
    const manager = this.inputs.memoryManager?.status();
    const workers = this.workers();
    if (workers.length > 0) {
      let heaps = 0;
      let caches = 0;
      for (const worker of workers) {
        heaps += worker.heapUsedBytes;
        caches += worker.rowCacheBytes + worker.groupCacheBytes;
      }
      parts.push({ component: 'worker_heaps', bytes: heaps, limitBytes: null });
      parts.push({ component: 'js_heap_used_all_threads', bytes: usage.heapUsed + heaps, limitBytes: manager?.heapTargetBytes ?? null });
      parts.push({ component: 'caches_all_threads', bytes: (rowCache?.bytes ?? 0) + groupCaches.usedBytes + caches, limitBytes: manager?.cacheBudgetBytes ?? null });
    }
    if (manager !== undefined) {
      parts.push({ component: 'cache_budget', bytes: manager.cacheBudgetBytes, limitBytes: manager.cacheMaxBytes });
      parts.push({ component: 'live_heap', bytes: manager.liveHeapBytes, limitBytes: Math.floor(manager.heapTargetBytes / (1 + manager.heapGrowingPercent / 100)) });
      parts.push({ component: 'cache_evicted_by_manager', bytes: manager.evictedBytes, limitBytes: null });
    }
    for (const part of store) if (part !== rowCache) parts.push(part);
    parts.push({ component: 'malloc_in_use', bytes: malloc.inUseBytes, limitBytes: null });
    parts.push({ component: 'malloc_free', bytes: malloc.freeBytes, limitBytes: null });
    parts.push({ component: 'unattributed', bytes: Math.max(0, usage.rss - usage.heapTotal - malloc.inUseBytes - malloc.freeBytes), limitBytes: null });
    return parts.map((part) => ({ ...part, description: MEMORY_DESCRIPTIONS[part.component] ?? '' }));
  }

  /** Every worker thread of every running dataflow, with its memory at its last epoch batch. */
  workers(): WorkerInfo[] {
    const catalog = this.inputs.catalog();
    const out: WorkerInfo[] = [];
    for (const dataflow of this.inputs.streams.all) {
      const view = catalog.relationById(dataflow.viewId);
      if (view === undefined) continue;
      for (const operator of dataflow.workerOperators()) {
        for (const worker of operator.workers) {
          const memory = worker.memory;
          out.push({
            viewId: dataflow.viewId,
            schema: view.schema,
            name: view.name,
            operatorId: operator.id,
            kind: worker.kind,
            worker: worker.worker,
            threadId: worker.threadId,
            heapUsedBytes: memory?.heapUsedBytes ?? 0,
            heapTotalBytes: memory?.heapTotalBytes ?? 0,
            liveHeapBytes: memory?.liveHeapBytes ?? 0,
            fullCollections: memory?.fullCollections ?? 0,
            rowCacheBytes: memory?.rowCacheBytes ?? 0,
            rowCacheLimitBytes: memory?.rowCacheLimitBytes ?? worker.rowCacheMaxBytes,
            groupCacheBytes: memory?.groupCacheBytes ?? 0,
            groupCacheLimitBytes: memory?.groupCacheLimitBytes ?? worker.groupCacheMaxBytes,
            evictedBytes: memory?.evictedBytes ?? 0,
            oldGenerationLimitBytes: worker.oldGenerationBytes > 0 ? worker.oldGenerationBytes : null,
            batches: worker.batches,
            waitedMs: worker.waitedMs,
          });
        }
      }
    }
    return out;
  }

  /** The process's worker threads (executor/batch/worker-pool.ts; null at --parallelism 1). */
  workerPool(): { readonly started: number; readonly idle: number; readonly busy: number; readonly lost: number; readonly jobs: number } | null {
    return this.inputs.streams.parallel?.pool ?? null;
  }

  /** The memory manager's budget, growth and actions (null when the engine has none). */
  memoryManager(): MemoryManagerStatus | null {
    return this.inputs.memoryManager?.status() ?? null;
  }

  sessions(): SessionActivity[] {
    return this.inputs.metrics.activities();
  }

  /** Errors inside running views (what oxbow_catalog.view_errors shows), for the dashboard. */
  viewErrors(): ViewErrorRecord[] {
    return this.inputs.streams.errors.records();
  }

  get checkpoints(): CheckpointMetrics | undefined {
    return this.inputs.checkpoints;
  }

  get sourceStatus(): SourceStatus | undefined {
    return this.inputs.sourceStatus;
  }

  snapshot(): StatusSnapshot {
    const metrics = this.inputs.metrics;
    return {
      epochs: this.epochs(),
      barrierLatency: metrics.barrierLatency.snapshot(),
      commitLatency: metrics.commitLatency.snapshot(),
      statements: { total: metrics.statementsTotal, errors: metrics.statementErrorsTotal },
      objects: this.objects(),
      dataflows: this.dataflows(),
      stateTables: this.stateTables(),
      throughput: this.throughput(),
      cache: this.cache(),
      process: this.process(),
      sessions: this.sessions(),
    };
  }
}

/** The snapshot as JSON text (epochs as decimal strings), for /api/status. */
export function statusJson(snapshot: StatusSnapshot): string {
  return JSON.stringify(snapshot, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

