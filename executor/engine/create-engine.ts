// The server's engine: recovers `<dataDir>/state` (the local directory when intact, else the
// newest complete checkpoint in the object store), opens the RocksDB state store there and the
// engine over it (parser, catalog), then starts checkpoints to --checkpoint-url every
// --checkpoint-interval-ms (executor/engine/). bin/cli.ts calls createEngine with its options.

import type { VnodeMapSink } from '../stream/parallel/vnode-map.js';
import type { RemoteShareSource } from '../stream/parallel/source-fragment.js';
import type { EngineMetrics } from '../metrics/engine-metrics.js';
import { join } from 'node:path';
import { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import { finishLocalRecovery, recoverStateDir } from '../../storage/checkpoint/recover.js';
import { openObjectStore } from '../../storage/object-store/open-object-store.js';
import { DEFAULT_OBJECT_STORE_TIMEOUT_MS, DEFAULT_RETRY_POLICY } from '../../storage/object-store/retry.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import { startCheckpointing } from './start-checkpointing.js';
import type { Engine } from './engine.js';
import { DEFAULT_HEAP_GROWING_PERCENT, setHeapGrowingPercent } from './heap-growth.js';
import { planMemory } from './memory-manager.js';
import { openEngine, type OxbowEngine } from './open-engine.js';
import type { ReadOnlyMode } from './read-only.js';
import type { SourceStatus } from '../connectors/source-status.js';
import type { EngineTuning } from './engine-core.js';
import type { ConnectorFaults } from '../connectors/connector-host.js';
import type { ManifestGuard } from '../../storage/checkpoint/checkpointer.js';
import type { ClusterNodeRow } from '../system/nodes-relation.js';

export interface EngineOptions {
  readonly dataDir: string;
  readonly checkpointUrl: string;
  readonly barrierIntervalMs: number;
  readonly checkpointIntervalMs: number;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
  /** 'local' (default): DML returns once committed on the local disk; 'remote': once in the object store. */
  readonly durability?: 'local' | 'remote';
  /** Complete checkpoints kept in the object store besides those within the time-travel window (default 3). */
  readonly keepCheckpoints?: number;
  /** The process-wide checkpoint metrics (system table, Prometheus); created when omitted. */
  readonly checkpointMetrics?: CheckpointMetrics;
  /** Kafka source status for /metrics (executor/connectors/); created when omitted. */
  readonly sourceStatus?: SourceStatus;
  /** Engine metrics and the status API for /metrics and /api/status (executor/metrics/); created when omitted. */
  readonly metrics?: EngineMetrics;
  /** How far V8's heap may grow past the live heap before a full collection (heap-growth.ts; 0: V8's own choice). */
  readonly heapGrowingPercent?: number;
  /** Background checkpoint failures (the CLI prints them to stderr). */
  readonly onCheckpointError?: (error: unknown) => void;
  /** Deadline of each object-store request, retried after it (default 60 s, storage/object-store/retry.ts). */
  readonly objectStoreTimeoutMs?: number;
  /** The bound on close(): a running checkpoint is abandoned after half of it (default: waited for). */
  readonly shutdownTimeoutMs?: number;
  /** Each phase of each checkpoint as it starts (the CLI traces them on stderr when asked). */
  readonly onCheckpointPhase?: (phase: string, epoch: bigint) => void;
  /** Tuning and diagnostics of sources, sinks and streaming operators. */
  readonly tuning?: EngineTuning;
  /** Faults injected for crash tests. */
  readonly faults?: ConnectorFaults;
  /** The server accepts TLS connections (--tls-cert): `SHOW ssl` is on. */
  readonly ssl?: boolean;
  /** A cluster's fence on manifest writes (executor/cluster/): only the leader completes checkpoints. */
  readonly manifestGuard?: ManifestGuard;
  /** The cluster's nodes for oxbow_catalog.nodes (executor/cluster/). */
  readonly clusterNodes?: () => readonly ClusterNodeRow[];
  /** Shares of source fragments on other nodes (a cluster's leader under --remote-shares on; executor/cluster/remote-shares.ts). */
  readonly remoteShares?: RemoteShareSource;
  /** Where a cluster leader's keyed fragments' vnode maps go (etcd), and its node id. */
  readonly vnodeMaps?: VnodeMapSink;
  /** close() takes a last checkpoint within this bound once the writers stopped (a cluster leader's clean handover). */
  readonly finalCheckpointWithinMs?: number;
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  const heapGrowingPercent = options.heapGrowingPercent ?? DEFAULT_HEAP_GROWING_PERCENT;
  setHeapGrowingPercent(heapGrowingPercent);
  const plan = planMemory(options.memoryLimitBytes, heapGrowingPercent);
  const stateDir = join(options.dataDir, 'state');
  const metrics = options.checkpointMetrics ?? new CheckpointMetrics();
  // Probed before anything else: a checkpoint URL that cannot be written stops the start.
  const objectStore = await openObjectStore(options.checkpointUrl, {
    retry: { ...DEFAULT_RETRY_POLICY, timeoutMs: options.objectStoreTimeoutMs ?? DEFAULT_OBJECT_STORE_TIMEOUT_MS, ...metrics.retryHooks() },
    probe: true,
  });
  const recoveryStarted = performance.now();
  try {
    await recoverStateDir({ stateDir, objectStore, metrics });
  } catch (error) {
    objectStore.close();
    throw error;
  }
  const store = openRocksStateStore({
    dir: stateDir,
    retentionMs: options.timeTravelRetentionMs,
    // --memory-limit's parts (memory-manager.ts): the row caches' share, RocksDB's block cache with
    // the memtables charged to it.
    memoryLimitBytes: plan.rowCacheBytes,
    rocksdb: { blockCacheBytes: plan.rocksdbCacheBytes, memtableBudgetBytes: plan.rocksdbMemtableBytes, writeBufferBytes: plan.rocksdbWriteBufferBytes },
  });
  let engine;
  try {
    engine = await openEngine(store, {
      dataDir: options.dataDir,
      timeTravelRetentionMs: options.timeTravelRetentionMs,
      memoryLimitBytes: options.memoryLimitBytes,
      heapGrowingPercent,
      manageMemory: true,
      checkpointMetrics: metrics,
      barrierIntervalMs: options.barrierIntervalMs,
      ...(options.sourceStatus === undefined ? {} : { sourceStatus: options.sourceStatus }),
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(options.tuning === undefined ? {} : { tuning: options.tuning }),
      ...(options.faults === undefined ? {} : { faults: options.faults }),
      ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
      ...(options.clusterNodes === undefined ? {} : { clusterNodes: options.clusterNodes }),
      ...(options.remoteShares === undefined ? {} : { remoteShares: options.remoteShares }),
      ...(options.vnodeMaps === undefined ? {} : { vnodeMaps: options.vnodeMaps }),
    });
  } catch (error) {
    await store.close();
    objectStore.close();
    throw error;
  }
  finishLocalRecovery(metrics, recoveryStarted, store.committedEpoch);
  return startCheckpointing({
    engine,
    store,
    objectStore,
    metrics,
    dataDir: options.dataDir,
    stateDir,
    checkpointIntervalMs: options.checkpointIntervalMs,
    durability: options.durability ?? 'local',
    keepCheckpoints: options.keepCheckpoints ?? 3,
    keepWithinMs: options.timeTravelRetentionMs,
    onError: options.onCheckpointError,
    ...(options.shutdownTimeoutMs === undefined ? {} : { checkpointStopTimeoutMs: Math.floor(options.shutdownTimeoutMs / 2) }),
    ...(options.onCheckpointPhase === undefined ? {} : { onPhase: options.onCheckpointPhase }),
    ...(options.manifestGuard === undefined ? {} : { guard: options.manifestGuard }),
    ...(options.finalCheckpointWithinMs === undefined ? {} : { finalCheckpointWithinMs: options.finalCheckpointWithinMs }),
    ...(options.remoteShares?.useCheckpoints === undefined ? {} : { onCheckpoints: (after: (epoch: bigint) => Promise<bigint>) => options.remoteShares!.useCheckpoints!(after) }),
  });
}

export interface ReadOnlyEngineOptions {
  /** A RocksDB state directory of its own (a materialized checkpoint): opened, never committed to. */
  readonly stateDir: string;
  readonly dataDir: string;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
  readonly readOnly: ReadOnlyMode;
  readonly ssl?: boolean;
  readonly clusterNodes?: () => readonly ClusterNodeRow[];
  readonly metrics?: EngineMetrics;
}

/**
 * An engine that reads one checkpoint (a cluster's standby, executor/cluster/): the store opened
 * over `stateDir`, the catalog loaded, no dataflows, sources, sinks, checkpoints or memory manager;
 * writing statements get 25006 (read-only.ts). close() closes the store.
 */
export async function openReadOnlyEngine(options: ReadOnlyEngineOptions): Promise<OxbowEngine> {
  const plan = planMemory(options.memoryLimitBytes, DEFAULT_HEAP_GROWING_PERCENT);
  const store = openRocksStateStore({
    dir: options.stateDir,
    retentionMs: options.timeTravelRetentionMs,
    memoryLimitBytes: plan.rowCacheBytes,
    rocksdb: { blockCacheBytes: plan.rocksdbCacheBytes, memtableBudgetBytes: plan.rocksdbMemtableBytes, writeBufferBytes: plan.rocksdbWriteBufferBytes },
  });
  try {
    return await openEngine(store, {
      dataDir: options.dataDir,
      timeTravelRetentionMs: options.timeTravelRetentionMs,
      memoryLimitBytes: options.memoryLimitBytes,
      readOnly: options.readOnly,
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
      ...(options.clusterNodes === undefined ? {} : { clusterNodes: options.clusterNodes }),
    });
  } catch (error) {
    await store.close();
    throw error;
  }
}
