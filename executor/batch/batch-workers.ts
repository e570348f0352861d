// The worker threads that batch queries share at --parallelism N > 1 on RocksDB (one pool per
// engine, started on first use): each takes one key range of a table scan at a time (a `range`
// request: the range, the committed epoch, the plan of filters and projections over the scan and
// the partial aggregate calls, as data) and answers its partial aggregates or its SqlError.
// batch-worker.ts is the worker's end; parallel-aggregate.ts splits the scan and merges.
//
// Requests to one worker are answered in order, one at a time; answers are matched by id. A
// worker whose thread ends fails its pending requests with XX000 and is started afresh on the
// next request. Cancellation and statement_timeout reach a running range through a shared flag
// (the `cancel` word, checked every batch) and the deadline. Workers are unref'd: they never keep
// the process alive, and close() ends them.

import { Worker } from 'node:worker_threads';
import { compiledWorkerScript } from './worker-script.js';
import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState, type SqlStateCode } from '../../sql/errors.js';
import type { RocksDatabase } from '../../storage/rocksdb.js';
import { tableApproximateBytes } from '../../storage/key-ranges.js';

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
export type RangeAnswer = { readonly id: number; readonly partials: unknown; readonly rows: number } | { readonly id: number; readonly error: WorkerError };

export interface RangeMessage extends RangeRequest {
  readonly id: number;
  readonly token: number;
  readonly path: string;
  /** Int32Array over a SharedArrayBuffer: non-zero stops the range (57014 or the deadline). */
  readonly cancel: SharedArrayBuffer;
}

interface Slot {
  worker: Worker | undefined;
  readonly pending: Map<number, (answer: RangeAnswer) => void>;
}

/** Default size at which a scan pays to split (`OXBOW_PARALLEL_SCAN_MIN_BYTES`), see parallel-aggregate.ts. */
export const DEFAULT_PARALLEL_SCAN_MIN_BYTES = 8 * 1024 * 1024;

export class BatchWorkers {
  private readonly slots: Slot[];
  private token: number | undefined;
  private nextId = 1;
  private closed = false;

  constructor(
    readonly database: RocksDatabase,
    /** Worker threads (--parallelism). */
    readonly size: number,
    /** Bytes (RocksDB's estimate) from which a scan runs in the workers. */
    readonly minBytes: number = DEFAULT_PARALLEL_SCAN_MIN_BYTES,
  ) {
    this.slots = Array.from({ length: size }, () => ({ worker: undefined, pending: new Map() }));
  }

  /** Workers that a scan of table `tableId` would use: the pool's size when it pays, else 0. */
  workersFor(tableId: number): number {
    if (this.closed || this.size < 2) return 0;
    return tableApproximateBytes(this.database, tableId) >= this.minBytes ? this.size : 0;
  }

  private start(slot: Slot): Worker {
    const worker = new Worker(compiledWorkerScript(import.meta.url, './batch-worker.js'));
    worker.unref();
    const fail = (why: string): void => {
      if (slot.worker !== worker) return;
      slot.worker = undefined;
      const error: WorkerError = { code: SqlState.internalError, message: `a batch scan worker ended: ${why}` };
      for (const [id, resolve] of slot.pending) resolve({ id, error });
      slot.pending.clear();
    };
    worker.on('message', (answer: RangeAnswer) => {
      const resolve = slot.pending.get(answer.id);
      if (resolve === undefined) return;
      slot.pending.delete(answer.id);
      resolve(answer);
    });
    worker.on('error', (error) => fail(error.message));
    worker.on('exit', (code) => fail(`exit code ${code}`));
    slot.worker = worker;
    return worker;
  }

  /** Runs range `i` of `requests` on worker `i`: one Promise per range, each resolving to its answer (an error answers as one). */
  run(requests: readonly RangeRequest[], cancel: SharedArrayBuffer): Promise<RangeAnswer>[] {
    if (this.closed) throw new SqlError(SqlState.adminShutdown, 'terminating connection due to administrator command');
    this.token ??= this.database.share();
    const token = this.token;
    return requests.map((request, index) => {
      const slot = this.slots[index % this.slots.length]!;
      const worker = slot.worker ?? this.start(slot);
      const id = this.nextId++;
      return new Promise<RangeAnswer>((resolve) => {
        slot.pending.set(id, resolve);
        const message: RangeMessage = { ...request, id, token, path: this.database.path, cancel };
        worker.postMessage(message);
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const ending = this.slots.map((slot) => {
      const worker = slot.worker;
      slot.worker = undefined;
      for (const [id, resolve] of slot.pending) resolve({ id, error: { code: SqlState.adminShutdown, message: 'terminating connection due to administrator command' } });
      slot.pending.clear();
      return worker?.terminate();
    });
    await Promise.all(ending);
    if (this.token !== undefined) this.database.unshare(this.token);
    this.token = undefined;
  }
}
