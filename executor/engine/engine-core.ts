// What every session of one engine shares: the state store, the catalog, the hidden row-id
// allocator, and the write lock. The state store has one open epoch for the whole process, so
// statements that write (DML, DDL, COPY) take the write lock, buffer their writes, and commit (or
// abort) their epoch before the next writer starts; readers never wait, they read the last
// committed epoch.

import type { VnodeMapSink } from '../stream/parallel/vnode-map.js';
import { BatchWorkers } from '../batch/batch-workers.js';
import { availableParallelism } from 'node:os';
import { RocksStateStore } from '../../storage/rocks-state-store.js';
import { ParallelRuntime } from '../stream/parallel/parallel-runtime.js';
import type { RemoteShareSource } from '../stream/parallel/source-fragment.js';
import { sourceFragmentWorkerScript } from '../connectors/source-fragment-worker-script.js';
import type { ClusterNodeRow } from '../system/nodes-relation.js';
import { nextEpoch, type Epoch } from '../../sql/epoch.js';
import type { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import type { StateStore } from '../../storage/state-table.js';
import type { Catalog } from '../catalog/catalog.js';
import { RowIdAllocator } from '../batch/table-access.js';
import { sourceReplays } from '../connectors/replay-reader.js';
import type { ConnectorFaults, ConnectorTuning } from '../connectors/connector-host.js';
import type { StreamTuning } from '../stream/stream-context.js';
import { StreamManager } from '../stream/stream-manager.js';
import { AbortHookStore } from '../stream/abort-hook-store.js';
import { SourceStatus } from '../connectors/source-status.js';
import { EngineMetrics } from '../metrics/engine-metrics.js';
import { EngineStatus } from '../metrics/status.js';
import { indexEntry, indexStateTable } from '../catalog/secondary-index.js';
import type { Row } from '../../sql/value.js';
import type { MemoryPart } from '../../storage/mvcc-backend.js';
import { MemoryManager, planMemory, type AdjustableBudget } from './memory-manager.js';
import type { WorkerMemory } from '../stream/parallel/worker-memory.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { subscriptionHolds } from '../ddl/create-subscription.js';
import { SequenceRuntime } from '../catalog/sequence-runtime.js';
import { readOnlyError, type ReadOnlyMode } from './read-only.js';

type EngineStatusMemory = () => { usedBytes: number; limitBytes: number; cachedRows: number; hits: number; misses: number; evictions: number };

/**
 * A FIFO mutex over async sections. A section run by run() starts once the epochs sealed before it
 * are durable (`settle`), so its snapshot (the committed epoch) holds every earlier write; only a
 * source barrier, which reads nothing but the latest state, enters with runPipelined() and leaves
 * its epoch's write in flight behind it.
 */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();
  /**
   * Seals what sources wrote into the open epoch since their last barrier (the source manager sets
   * it): `run` calls it first, so every other writer starts on an open epoch holding nothing but
   * its own writes (its abort drops only those, its snapshot holds the sources' rows).
   */
  drain: (() => Promise<void>) | undefined;

  constructor(private readonly settle: () => Promise<void> = () => Promise.resolve()) {}

  run<T>(section: () => Promise<T> | T): Promise<T> {
    return this.enter(section, true);
  }

  /** For the sources: their chunks and barriers (no drain, no wait for epochs in flight). */
  runPipelined<T>(section: () => Promise<T> | T): Promise<T> {
    return this.enter(section, false);
  }

  private async enter<T>(section: () => Promise<T> | T, settled: boolean): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    try {
      if (settled && this.drain !== undefined) await this.drain();
      if (settled) await this.settle().catch(() => undefined);
      return await section();
    } finally {
      release();
    }
  }
}

export interface EngineSettings {
  readonly dataDir: string;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
  /** Checkpoint and recovery figures for oxbow_catalog.checkpoints (the server sets it). */
  readonly checkpointMetrics?: CheckpointMetrics;
  /** How often sources commit what they read (--barrier-interval-ms; default 1000). */
  readonly barrierIntervalMs?: number;
  /** Source status shared with the server's /metrics (created when omitted). */
  readonly sourceStatus?: SourceStatus;
  /** Latency histograms, sessions, statement counts shared with the server's /metrics (created when omitted). */
  readonly metrics?: EngineMetrics;
  /** V8's heap growth the engine runs with (heap-growth.ts; the memory plan assumes it). */
  readonly heapGrowingPercent?: number;
  /** Start the memory manager (feedback from the live heap; the server does, tests opt in). */
  readonly manageMemory?: boolean;
  /** Tuning and diagnostics of sources, sinks and streaming operators (bin/ reads them from the environment). */
  readonly tuning?: EngineTuning;
  /** Faults injected for crash tests (bin/ sets them). */
  readonly faults?: ConnectorFaults;
  /** The server accepts TLS connections (--tls-cert): `SHOW ssl` is on. */
  readonly ssl?: boolean;
  /** The cluster's nodes for oxbow_catalog.nodes (executor/cluster/); absent without --cluster. */
  readonly clusterNodes?: () => readonly ClusterNodeRow[];
  /** Shares of source fragments on other nodes (executor/cluster/remote-shares.ts). */
  readonly remoteShares?: RemoteShareSource;
  /** Where a cluster leader's keyed fragments' vnode maps go (etcd), and its node id. */
  readonly vnodeMaps?: VnodeMapSink;
  /**
   * A read-only engine (a cluster's standby, executor/cluster/): no dataflows, sources, sinks or
   * ticker run; writing statements get 25006 (read-only.ts) and nothing commits.
   */
  readonly readOnly?: ReadOnlyMode;
}

export type EngineTuning = ConnectorTuning &
  StreamTuning & {
    /** Bytes (RocksDB's estimate) from which a batch aggregate's scan runs in the batch workers (executor/batch/batch-workers.ts). */
    readonly parallelScanMinBytes?: number;
  };

export class EngineCore {
  readonly rowIds = new RowIdAllocator();
  /** Cores oxbow may use (`tuning.cores`, --cores; default os.availableParallelism()). */
  readonly cores: number;
  /** `--durability remote`: the epoch of the last complete remote checkpoint (set by start-checkpointing.ts). */
  remoteCheckpointEpoch: (() => Epoch) | undefined = undefined;
  /** How the batch executor reads sources that store no rows (connectors/replay-reader.ts). */
  readonly sourceReplays = sourceReplays;
  readonly writeLock = new WriteLock(() => this.store.settled());
  /** Materialized views' dataflows (executor/stream/); the store drops their changes on abort. */
  readonly streams: StreamManager;
  readonly store: StateStore;
  /** Rejected messages, connection trouble and partition offsets of the sources (executor/connectors/). */
  readonly sourceStatus: SourceStatus;
  readonly metrics: EngineMetrics;
  /** The status API (executor/metrics/): system tables, EXPLAIN ANALYZE and /metrics read it. */
  readonly status: EngineStatus;
  /** --memory-limit's parts and the feedback that keeps the heap in its part (memory-manager.ts). */
  readonly memory: MemoryManager;
  /** The batch aggregates' scan ranges at --parallelism > 1 on RocksDB, run on the parallel runtime's pool (executor/batch/batch-workers.ts). */
  readonly batchWorkers: BatchWorkers | undefined;
  /** The values of sequences (nextval's durable reserved ranges): catalog/sequence-runtime.ts. */
  readonly sequences: SequenceRuntime;
  /** Called after each epoch is durable (SUBSCRIBE waits on it: subscribe.ts); must not throw. */
  readonly committedListeners = new Set<() => void>();
  /** The catalog whose subscriptions' history holds the store has, and those holds' tables by holder (holdSubscribedHistory()). */
  private heldCatalog: CatalogSnapshot | undefined;
  private subscriptionHolds = new Map<string, number>();

  constructor(
    store: StateStore,
    readonly catalog: Catalog,
    readonly settings: EngineSettings,
  ) {
    this.store = new AbortHookStore(store, () => this.streams.discard());
    const readOnly = settings.readOnly;
    this.sequences = new SequenceRuntime(
      this.store,
      readOnly === undefined
        ? undefined
        : (command) => {
            throw readOnlyError(readOnly, command);
          },
    );
    this.sourceStatus = settings.sourceStatus ?? new SourceStatus();
    this.streams = new StreamManager(
      this.store,
      (viewId) => this.catalog.snapshot.relationById(viewId)?.retentionMs,
      (viewId) => {
        const snapshot = this.catalog.snapshot;
        const view = snapshot.relationById(viewId);
        if (view === undefined) return [];
        return snapshot.indexesOf(viewId).map((index) => ({ table: indexStateTable(this.store, view, index), entry: (row: Row) => indexEntry(view, index, row) }));
      },
      planMemory(settings.memoryLimitBytes, settings.heapGrowingPercent).groupCacheBytes,
      settings.tuning ?? {},
    );
    const plan = planMemory(settings.memoryLimitBytes, settings.heapGrowingPercent);
    const parallelism = settings.tuning?.parallelism ?? 1;
    this.cores = settings.tuning?.cores ?? availableParallelism();
    let runtime: ParallelRuntime | undefined;
    if (parallelism > 1 && store instanceof RocksStateStore) {
      runtime = new ParallelRuntime(store, parallelism, { groupCacheBytes: plan.groupCacheBytes, workerOldGenerationBytes: plan.workerOldGenerationBytes }, this.cores);
      runtime.sourceFragments.workerScript = sourceFragmentWorkerScript;
      runtime.sourceFragments.remoteShares = settings.remoteShares;
      runtime.vnodeSink = settings.vnodeMaps;
      // Messages a Kafka source fragment's workers could not decode: the source's errors, as on the main thread.
      runtime.sourceFragments.onRejects = (sourceId, rejects) => {
        for (const { partition, offset, error, payload } of rejects) this.sourceStatus.reject(sourceId, partition, offset, error, payload === null ? null : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
      };
      // Messages of the Kafka offset ranges the owners fetched themselves: the source's message counters.
      runtime.sourceFragments.onFetched = (sourceId, fetched) => this.sourceStatus.fetched(sourceId, fetched);
      this.streams.parallel = runtime;
      // Batch aggregates' ranges run on the same threads as the views' workers.
      this.batchWorkers = new BatchWorkers(store.database, parallelism, runtime.pool, settings.tuning?.parallelScanMinBytes);
      // No worker thread starts here: the pool starts one at a job that finds none idle (a view's
      // fragment, a batch aggregate's range), so an engine whose plans use none pays for none.
    }
    const rowCaches = (store as Partial<{ budget: AdjustableBudget }>).budget;
    this.memory = new MemoryManager({
      plan,
      ...(rowCaches === undefined ? {} : { rowCaches }),
      groupCaches: this.streams.groupCaches,
      ...(runtime === undefined ? {} : { workers: runtime }),
    });
    if (runtime !== undefined && settings.manageMemory === true) this.watchWorkers(runtime);
    this.metrics = settings.metrics ?? new EngineMetrics();
    const memoryStats = (store as Partial<{ memoryStats: EngineStatusMemory }>).memoryStats;
    const memoryUsage = (store as Partial<{ memoryUsage: () => readonly MemoryPart[] }>).memoryUsage;
    this.status = new EngineStatus({
      catalog: () => this.catalog.snapshot,
      store: this.store,
      ...(memoryStats === undefined ? {} : { memoryStats: memoryStats.bind(store) }),
      ...(memoryUsage === undefined ? {} : { memoryUsage: memoryUsage.bind(store) }),
      streams: this.streams,
      memoryManager: this.memory,
      metrics: this.metrics,
      sourceStatus: this.sourceStatus,
      ...(settings.checkpointMetrics === undefined ? {} : { checkpoints: settings.checkpointMetrics }),
    });
    this.metrics.status = this.status;
  }

  /**
   * The workers' memory reports feed the memory manager (MemoryManager.observeWorker), outside the
   * dataflow's work: a report is taken while the dataflow waits for a worker's answer, and the
   * manager's step may evict from the main thread's caches.
   */
  private watchWorkers(runtime: ParallelRuntime): void {
    let pending: { report: WorkerMemory; previous: WorkerMemory | undefined }[] = [];
    runtime.onMemory = (report, previous) => {
      pending.push({ report, previous });
      if (pending.length > 1) return;
      setImmediate(() => {
        const readings = pending;
        pending = [];
        for (const { report: reading, previous: before } of readings) this.memory.observeWorker(reading, before);
      });
    };
  }

  /**
   * Tells the store the history subscriptions hold (ddl/create-subscription.ts) when the catalog
   * changed since the last commit: before each commit, so the first commit after a start holds
   * them too.
   */
  private holdSubscribedHistory(): void {
    const snapshot = this.catalog.snapshot;
    if (snapshot === this.heldCatalog) return;
    this.heldCatalog = snapshot;
    const holds = subscriptionHolds(snapshot);
    for (const [holder, tableId] of this.subscriptionHolds) if (holds.get(holder)?.tableId !== tableId) this.store.holdHistory(holder, tableId, undefined);
    const tables = new Map<string, number>();
    for (const [holder, { tableId, retentionMs }] of holds) {
      this.store.holdHistory(holder, tableId, { retentionMs });
      tables.set(holder, tableId);
    }
    this.subscriptionHolds = tables;
  }

  /** A read-only engine never commits: whatever a statement wrote is aborted with 25006. */
  private refuseInReadOnly(): void {
    if (this.settings.readOnly !== undefined) throw readOnlyError(this.settings.readOnly, 'a write');
  }

  /**
   * Commits the open epoch at the next epoch number on the main thread; call only inside the write
   * lock. The epoch's changes first run through every materialized view's dataflow, so view and
   * table writes commit in one atomic write (read-your-writes). For the rare commits (DDL); the
   * frequent ones (DML, COPY, source barriers) use commitDurable().
   */
  commit(): Epoch {
    this.refuseInReadOnly();
    this.holdSubscribedHistory();
    const started = performance.now();
    this.streams.flush();
    const epoch = nextEpoch(this.store.latestEpoch, Date.now());
    const writing = performance.now();
    this.store.commit(epoch);
    this.metrics.epochsSealed++;
    const done = performance.now();
    this.metrics.commitLatency.observe((done - writing) / 1000);
    this.metrics.barrierLatency.observe((done - started) / 1000);
    this.metrics.epochsCommitted++;
    for (const listener of this.committedListeners) listener();
    return epoch;
  }

  /**
   * As commit(), but the epoch's write (RocksDB memtable inserts and the WAL fsync) runs off the
   * main thread: the epoch is sealed, the event loop is free while it is written (sources keep
   * reading, sessions keep answering), and the Promise resolves once it is durable. Call inside the
   * write lock and keep the lock until it resolves, so every later writer's snapshot (the
   * committed epoch) holds it. A failed write rejects with its SqlError; the store then refuses
   * further commits.
   */
  async commitDurable(): Promise<Epoch> {
    const { epoch, durable } = await this.seal();
    await durable;
    return epoch;
  }

  /**
   * Seals the open epoch (after its changes ran through the dataflows) and returns it with the
   * Promise of its write, without waiting for it: for a source barrier inside runPipelined(), so
   * the next barrier's dataflow work overlaps this epoch's write. At most a few epochs are in
   * flight (the store's back-pressure).
   */
  async seal(): Promise<{ readonly epoch: Epoch; readonly durable: Promise<void> }> {
    this.refuseInReadOnly();
    await this.store.whenWritable();
    this.holdSubscribedHistory();
    const started = performance.now();
    this.streams.flush();
    const epoch = nextEpoch(this.store.latestEpoch, Date.now());
    const writing = performance.now();
    const durable = this.store.commitAsync(epoch).then(() => {
      const done = performance.now();
      this.metrics.commitLatency.observe((done - writing) / 1000);
      this.metrics.barrierLatency.observe((done - started) / 1000);
      this.metrics.epochsCommitted++;
      for (const listener of this.committedListeners) listener();
    });
    this.metrics.epochsSealed++;
    // Handled here as well (a caller that stops waiting must not leave an unhandled rejection),
    // and counted: a failed write is no longer in flight.
    durable.catch(() => void this.metrics.epochsFailed++);
    return { epoch, durable };
  }
}
