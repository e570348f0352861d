// The batch aggregates' scan workers at --parallelism N > 1 on RocksDB: each key range of a table
// scan is one job on the process's worker pool (worker-pool.ts, the threads the dataflows' workers
// run on: the first aggregate that runs in the workers starts them, later ones reuse them): a `range` job
// (the range, the committed epoch, the plan of filters and projections over the scan and the
// partial aggregate calls, as data) answers its partial aggregates or its SqlError on the job's
// own port, then gives the thread back. batch-worker.ts is the job's end; parallel-aggregate.ts
// splits the scan and merges.
//
// A range whose thread ends before it answers fails with XX000 (the pool replaces the thread).
// Cancellation and statement_timeout reach a running range through a shared flag (the `cancel`
// word, checked every batch) and the deadline. close() fails the ranges still running with
// 57P01, raises their cancel words and waits for their jobs to end (terminating a thread still
// running one after CLOSE_TIMEOUT_MS); the engine closes the pool itself later.

import { MessageChannel, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState, type SqlStateCode } from '../../sql/errors.js';
import type { RocksDatabase } from '../../storage/rocksdb.js';
import { tableApproximateBytes } from '../../storage/key-ranges.js';
import type { WorkerChannel } from './pool-worker.js';
import type { PooledJob, WorkerPool } from './worker-pool.js';
import { compiledWorkerScript } from './worker-script.js';

/** One key range of a scan, for one worker. */
export interface RangeRequest {
  readonly lower: Uint8Array;
  readonly upper: Uint8Array;
  readonly epoch: Epoch;
  /** The relation's column count (rows written before ADD COLUMN are padded to it). */
  readonly width: number;
  /** plan-transfer.ts's copy of the aggregate's input (its Scan without systemTime). */
  readonly input: unknown;
  /** plan-transfer.ts's copy of the partial AggregateCalls. */
  readonly calls: unknown;
  /** The session's evaluation settings (plain fields of EvalContext). */
  readonly evalContext: Readonly<Record<string, string | number>>;
  /** Date.now() after which the range fails with statement_timeout; absent: none. */
  readonly deadlineMillis?: number;
}

export interface WorkerError {
  readonly code: SqlStateCode;
  readonly message: string;
  readonly detail?: string;
  readonly hint?: string;
  readonly position?: number;
}

/** A worker's answer to a range: plan-transfer.ts's copy of the partial results, or the error. */
export type RangeAnswer = { readonly partials: unknown; readonly rows: number } | { readonly error: WorkerError };

export interface RangeMessage extends RangeRequest {
  /** The share token of the main thread's RocksDB (RocksDatabase.attach). */
  readonly token: number;
  readonly path: string;
  /** Int32Array over a SharedArrayBuffer: non-zero stops the range (57014 or the deadline). */
  readonly cancel: SharedArrayBuffer;
}

/** A range job's data: the pool's channel (its answer is posted on the port) and the range. */
export interface RangeJob extends WorkerChannel {
  readonly range: RangeMessage;
}

/** The compiled batch-worker.js: a pooled thread loads it at its first range job. */
export function batchWorkerScript(): URL {
  return compiledWorkerScript(import.meta.url, './batch-worker.js');
}

/** How long close() waits for the running ranges to stop before it terminates their threads. */
const CLOSE_TIMEOUT_MS = 10_000;

/** A range running on a pooled thread. */
interface Running {
  readonly worker: Worker;
  readonly ended: Promise<void>;
  readonly cancel: SharedArrayBuffer;
  readonly settle: (answer: RangeAnswer) => void;
}

const SHUTDOWN: WorkerError = { code: SqlState.adminShutdown, message: 'terminating connection due to administrator command' };

/** Default size at which a scan pays to split (`OXBOW_PARALLEL_SCAN_MIN_BYTES`), see parallel-aggregate.ts. */
export const DEFAULT_PARALLEL_SCAN_MIN_BYTES = 8 * 1024 * 1024;

export class BatchWorkers {
  private readonly running = new Set<Running>();
  private token: number | undefined;
  private closed = false;

  constructor(
    readonly database: RocksDatabase,
    /** Ranges a scan is cut into (--parallelism: the pool's threads). */
    readonly size: number,
    /** The process's worker threads (the parallel runtime's). */
    private readonly pool: WorkerPool,
    /** Bytes (RocksDB's estimate) from which a scan runs in the workers. */
    readonly minBytes: number = DEFAULT_PARALLEL_SCAN_MIN_BYTES,
  ) {}

  /** Workers that a scan of table `tableId` would use: the pool's size when it pays, else 0. */
  workersFor(tableId: number): number {
    if (this.closed || this.size < 2) return 0;
    return tableApproximateBytes(this.database, tableId) >= this.minBytes ? this.size : 0;
  }

  /** Runs each range of `requests` as a job on the pool: one Promise per range, each resolving to its answer (an error answers as one). */
  run(requests: readonly RangeRequest[], cancel: SharedArrayBuffer): Promise<RangeAnswer>[] {
    if (this.closed) throw new SqlError(SqlState.adminShutdown, 'terminating connection due to administrator command');
    this.token ??= this.database.share();
    const script = batchWorkerScript();
    return requests.map((request) => this.runRange(script, { ...request, token: this.token!, path: this.database.path, cancel }));
  }

  private runRange(script: URL, range: RangeMessage): Promise<RangeAnswer> {
    return new Promise<RangeAnswer>((resolve) => {
      const channel = new MessageChannel();
      let settled = false;
      const settle = (answer: RangeAnswer): void => {
        if (settled) return;
        settled = true;
        resolve(answer);
      };
      let why = 'its thread exited';
      const data: RangeJob = { port: channel.port2, signal: new SharedArrayBuffer(8), range };
      let job: PooledJob;
      try {
        job = this.pool.run(script, data, [channel.port2], (error) => (why = error instanceof Error ? error.message : String(error)));
      } catch {
        channel.port1.close();
        settle({ error: SHUTDOWN });
        return;
      }
      const running: Running = { worker: job.worker, ended: job.ended, cancel: range.cancel, settle };
      this.running.add(running);
      // The answer is posted before the job frees its thread, so it is on the port when the job ended.
      void job.ended.then(() => {
        this.running.delete(running);
        const received = receiveMessageOnPort(channel.port1);
        channel.port1.close();
        settle(received === undefined ? { error: { code: SqlState.internalError, message: `a batch scan worker ended: ${why}` } } : (received.message as RangeAnswer));
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const running = [...this.running];
    for (const range of running) {
      Atomics.store(new Int32Array(range.cancel), 0, 1);
      range.settle({ error: SHUTDOWN });
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
    await Promise.race([Promise.all(running.map((range) => range.ended)), deadline]);
    clearTimeout(timer);
    await Promise.all(running.filter((range) => this.running.has(range)).map((range) => range.worker.terminate()));
    if (this.token !== undefined) this.database.unshare(this.token);
    this.token = undefined;
  }
}
