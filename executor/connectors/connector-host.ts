// What the source and sink managers are given of the engine core (engine/engine-core.ts
// implements it): the store, the catalog, the row ids, the dataflows their rows run through, the
// write lock and the commits of their epochs.

import type { Epoch } from '../../sql/epoch.js';
import type { StateStore } from '../../storage/state-table.js';
import type { RowIdAllocator } from '../batch/table-access.js';
import type { Catalog } from '../catalog/catalog.js';
import type { StreamManager } from '../stream/stream-manager.js';
import type { SourceStatus } from './source-status.js';

/** The engine's write lock (engine/engine-core.ts's WriteLock). */
export interface SectionLock {
  /** Seals what the sources wrote since their last barrier; the source manager sets it. */
  drain: (() => Promise<void>) | undefined;
  run<T>(section: () => Promise<T> | T): Promise<T>;
  /** For the sources: their chunks and barriers (no drain, no wait for epochs in flight). */
  runPipelined<T>(section: () => Promise<T> | T): Promise<T>;
}

/** Tuning and diagnostics of the connectors, passed down from the composition root (bin/). */
export interface ConnectorTuning {
  /** Rows a source pushes through the views between barriers (default `sourceChunks.rows`; 0: at the barrier). */
  readonly sourceChunkRows?: number;
  /** One stderr line per source barrier (rows, apply, wait for writes in flight, seal, write). */
  readonly sourceTrace?: boolean;
  /** FORMAT PLAIN ENCODE JSON through the fast packer (json-row-packer.ts); default true. */
  readonly kafkaFastJson?: boolean;
  /** A Kafka source fragment's workers decode its messages (posted raw) rather than the source's Kafka worker; default true. */
  readonly kafkaFragmentDecode?: boolean;
}

/** Faults injected for crash tests (bin/ sets them). */
export interface ConnectorFaults {
  /** Called right after a sink's transaction committed to Kafka, before its offsets commit with the epoch. */
  readonly afterSinkCommit?: () => void;
}

export interface ConnectorHost {
  readonly store: StateStore;
  readonly catalog: Catalog;
  readonly rowIds: RowIdAllocator;
  readonly streams: StreamManager;
  readonly sourceStatus: SourceStatus;
  readonly settings: {
    readonly memoryLimitBytes: number;
    readonly timeTravelRetentionMs: number;
    readonly tuning?: ConnectorTuning;
    readonly faults?: ConnectorFaults;
  };
  /** Rows read per source, for /metrics. */
  readonly metrics: { readonly sourceRows: Map<number, number> };
  readonly writeLock: SectionLock;
  /** Commits the open epoch on the main thread (inside the write lock). */
  commit(): Epoch;
  /**
   * `--durability remote` or a cluster's leader: the epoch the last complete checkpoint in the
   * object store holds (a cluster's: recorded in etcd). A source that confirms what it read
   * upstream (postgres-cdc's replication slot) confirms only offsets of epochs at or below it, and
   * sinks deliver only epochs at or below it (`deliverableEpoch`), so what a restore or a failover
   * rebuilds from that checkpoint is never sent twice nor skipped. Undefined with local durability
   * on a single node.
   */
  readonly remoteCheckpointEpoch?: (() => Epoch) | undefined;
  /** Seals the open epoch and returns it with the Promise of its write. */
  seal(): Promise<{ readonly epoch: Epoch; readonly durable: Promise<void> }>;
}
