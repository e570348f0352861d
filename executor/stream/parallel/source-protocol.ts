// Messages between the main thread and the workers of a source fragment (source-fragment.ts,
// PARALLEL.md "Source fragments"). The main thread posts split ranges as the source advances and,
// at the commit, asks each worker that got some for its epoch batch, which the store appends to the
// epoch's write when it comes (worker-handle.ts; the main thread goes on meanwhile).

import type { RawMessages, StreamTuning } from '../stream-context.js';
import type { WorkerMemory } from './worker-memory.js';
import type { WorkerControl } from './worker-port.js';

/** A message a Kafka source fragment's worker could not decode: for the source's errors (`source_errors`), as if rejected on the main thread. */
export interface WorkerReject {
  readonly partition: number;
  readonly offset: bigint;
  readonly error: string;
  /** The payload's first bytes (null: no value). */
  readonly payload: Uint8Array | null;
}

/** A direct sink's rows inserted and deleted in one epoch by one worker. */
export interface DirectCounts {
  readonly inserts: number;
  readonly deletes: number;
}

/** What a source worker starts with (workerData). */
export interface SourceWorkerData {
  /** RocksDatabase.share()'s token and the database's directory. */
  readonly token: number;
  readonly path: string;
  /** The view's whole plan (materialize, filters and projections, the source scan) as plain data (planner/stream/plan-transfer.ts). */
  readonly plan: unknown;
  readonly viewId: number;
  readonly worker: number;
  /** The store's default retention and the view's own. */
  readonly retentionMs: number;
  readonly viewRetentionMs: number | undefined;
  /** Budget of this worker's row cache at most, and the share of it in force at the start (worker-memory.ts). */
  readonly rowCacheBytes: number;
  readonly cacheShare: number;
  readonly tuning: StreamTuning;
  /**
   * The plan is a direct sink's (a blackhole AS the query: connectors/sink-target.ts): no rows are
   * stored, the worker counts its materialize's output per epoch and hands the counts over with
   * its batch (`changes`) for the sink's DirectChanges (change-log.ts).
   */
  readonly directSink?: boolean;
  /** Two Int32s: [0] bumped after every answer is posted, [1] set to 1 when the thread exits. */
  readonly signal: SharedArrayBuffer;
}

/**
 * The messages of the Kafka offset ranges (`ranges` to a Kafka source fragment's worker) fetched
 * in one epoch: pairs (partition, messages), each message decoded or rejected counted once,
 * control records and aborted transactions' messages (dropped by kafkajs at the fetch) not. The
 * source's message counters count these, not the offsets handed out (executor/cluster/README.md,
 * "Kafka partitions fetched by the nodes"). Share protocol version 3 on.
 */
export type FetchedMessages = readonly number[];

export type MainToSourceWorker =
  /** Units to generate into the open epoch: triples (split, from, to). Not answered. */
  | { readonly t: 'ranges'; readonly ranges: readonly number[] }
  /** A replayed Kafka source's decoded rows of one partition (row ids set, all inserts), buffer transferred: into the open epoch. Not answered. */
  | { readonly t: 'rows'; readonly partition: number; readonly count: number; readonly rows: Uint8Array }
  /** A replayed Kafka source's messages of one partition undecoded (connectors/kafka/raw-batch.ts), buffers transferred: decoded into the open epoch. Not answered. */
  | { readonly t: 'raw'; readonly partition: number; readonly raw: RawMessages }
  /** Commit, durable, failed, abort, budget (the row cache's share), close: as every worker's (worker-port.ts). */
  | WorkerControl;

/** What a remote share's failover worker made an epoch's batch of (SourceWorkerToMain's `batch`). */
export interface FailedOverUnits {
  /** Units given to the failover worker for the epoch. */
  readonly units: number;
  /** Of these, units that had been sent to the node, which never answered them. */
  readonly again: number;
}

export type SourceWorkerToMain =
  /**
   * The sealed epoch's writes (without store records), the view rows written, the row errors met,
   * the messages a Kafka fragment's worker could not decode, the messages of the Kafka offset
   * ranges it fetched itself (`fetched`), a direct sink's changes counted in the epoch
   * (`directSink`) and the worker's memory. `failedOver`: set by a remote share's relay
   * (executor/cluster/remote-share-worker.ts) on a batch its failover worker made on this node after
   * the node failed: the units (a Kafka fragment's offsets) it was given for the epoch, and how
   * many of them had been sent to the node, unanswered, and were given again here.
   */
  | { readonly t: 'batch'; readonly bytes: ArrayBuffer; readonly length: number; readonly rows: number; readonly errors: readonly string[]; readonly rejects?: readonly WorkerReject[]; readonly fetched?: FetchedMessages; readonly changes?: DirectCounts; readonly memory: WorkerMemory; readonly failedOver?: FailedOverUnits }
  | { readonly t: 'error'; readonly code: string; readonly message: string };
