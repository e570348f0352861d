// A worker thread's end of its channel to the main thread (the worker side of worker-handle.ts),
// shared by the parallel fragments' worker (fragment-runner.ts) and the source fragments' worker
// (executor/connectors/source-fragment-worker.ts): answers are posted on the port, then the signal
// word is bumped and notified; the exit word is set however the thread ends. The messages both
// workers handle alike (`WorkerControl`: commit, durable, failed, abort, budget, close) are handled
// here (`control`), after each worker did its own part of an abort or a close. And the epoch handoff:
// the worker's store (storage/handoff-backend.ts) hands each sealed epoch's batch to the main
// thread as an answer to its `commit` request, and the Promise it gets settles when the main thread
// says that epoch is durable (`durable`, oldest first) or failed (`failed`, every one handed over).
// A worker runs either as its own thread (the script's top level builds the port from workerData)
// or as one job of a pooled thread (executor/batch/worker-pool.ts and pool-worker.ts: the job's
// data carries the port and signal, and `end` gives the thread back to the pool when the job closes).

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { MvccStateStore } from '../../../storage/mvcc-state-store.js';
import type { RocksDatabase } from '../../../storage/rocksdb.js';
import type { JobEnd, WorkerChannel } from '../../batch/pool-worker.js';
import type { Dataflow } from '../dataflow.js';
import type { WorkerMemoryMeter } from './worker-memory.js';

/** Tests: milliseconds a worker sleeps before handing each epoch batch over (a worker that stops answering). */
const HANDOFF_DELAY_MS = Number(process.env['OXBOW_TEST_HANDOFF_DELAY_MS'] ?? 0);

/** The messages from the main thread every worker's protocol has (protocol.ts, source-protocol.ts). */
export type WorkerControl =
  /** Seal the open epoch as `epoch`: answered with `batch`. */
  | { readonly t: 'commit'; readonly epoch: string }
  /** The oldest epoch handed over and not yet acknowledged is durable, or every one failed. */
  | { readonly t: 'durable' }
  | { readonly t: 'failed'; readonly message: string }
  /** The open epoch was aborted. */
  | { readonly t: 'abort' }
  /** The caches' share of their maxima (the memory manager's budget): applied at once. Not answered. */
  | { readonly t: 'budget'; readonly share: number }
  | { readonly t: 'close' };

/** What a running worker's control messages act on. */
export interface WorkerParts {
  /** Its wrapper over the shared RocksDB (closed with the worker). */
  readonly database: RocksDatabase;
  readonly store: MvccStateStore;
  readonly dataflow: Dataflow;
  readonly memory: WorkerMemoryMeter;
}

export class WorkerPort<Answer> {
  readonly port: MessagePort;
  private readonly signal: Int32Array;
  /** Epochs handed to the main thread and not yet acknowledged, oldest first. */
  private readonly handedOver: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    channel: WorkerChannel = workerData as WorkerChannel,
    private readonly end: JobEnd | undefined = undefined,
  ) {
    this.port = channel.port;
    this.signal = new Int32Array(channel.signal);
    // However the thread ends, the main thread stops waiting for it (a pooled thread sets its
    // current job's exit word itself: ../../batch/pool-worker.ts).
    if (end === undefined) {
      process.on('exit', () => {
        Atomics.store(this.signal, 1, 1);
        Atomics.notify(this.signal, 0);
      });
    }
  }

  answer(message: Answer, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(message, transfer);
    Atomics.add(this.signal, 0, 1);
    Atomics.notify(this.signal, 0);
  }

  /** Answers a `commit` with its epoch's batch; the Promise settles once the main thread wrote it or failed. */
  handOver(message: Answer, transfer: ArrayBuffer[]): Promise<void> {
    if (HANDOFF_DELAY_MS > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, HANDOFF_DELAY_MS);
    this.answer(message, transfer);
    return new Promise<void>((resolve, reject) => this.handedOver.push({ resolve, reject }));
  }

  /**
   * A control message, once the worker did its own part (an abort: its own buffers of the open
   * epoch cleared; a close: its own ports and timers closed): `commit` seals the store's open
   * epoch, `durable` and `failed` settle the epochs handed over, `abort` discards the dataflow's and
   * the store's open epoch, `budget` sets the caches' share, `close` stops the memory meter,
   * disposes the dataflow and closes the channel once the database wrapper closed.
   */
  control(message: WorkerControl, worker: WorkerParts): void {
    switch (message.t) {
      case 'commit':
        this.commit(worker.store, message.epoch);
        return;
      case 'durable':
        this.durable();
        return;
      case 'failed':
        this.failed(message.message);
        return;
      case 'abort':
        worker.dataflow.discard();
        worker.store.abort();
        return;
      case 'budget':
        worker.memory.setShare(message.share);
        return;
      case 'close':
        worker.memory.stop();
        worker.dataflow.dispose();
        this.close(worker.database.close());
        return;
    }
  }

  /** Seals the store's open epoch as `epoch`; its handoff answers the request synchronously. */
  commit(store: MvccStateStore, epoch: string): void {
    void store.commitAsync(BigInt(epoch)).catch(() => undefined);
  }

  /** The oldest epoch handed over is durable. */
  durable(): void {
    this.handedOver.shift()?.resolve();
  }

  /** Every epoch handed over failed. */
  failed(message: string): void {
    const error = new SqlError(SqlState.ioError, message);
    for (const pending of this.handedOver.splice(0)) pending.reject(error);
  }

  /**
   * The view is gone: epochs handed over fail, and once `closing` (the database's close) settles
   * the channel closes and the thread ends, or a pooled thread goes back to its pool.
   */
  close(closing?: Promise<unknown>): void {
    for (const pending of this.handedOver.splice(0)) pending.reject(new SqlError(SqlState.adminShutdown, 'the view is gone'));
    const end = (): void => {
      this.port.close();
      if (this.end !== undefined) this.end();
      else parentPort?.close();
    };
    if (closing === undefined) end();
    else void closing.finally(end);
  }
}
