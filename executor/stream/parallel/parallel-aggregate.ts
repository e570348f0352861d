// A hash aggregate run by N worker threads (PARALLEL.md): the main thread's node is the hash
// exchange in front of it. Each input change goes to the worker owning its group key's vnode
// (vnode.ts), encoded into that worker's buffer; the workers fold them into their groups while the
// main thread goes on (a chunk pushed while holding is not waited for), and the seal, or an
// unheld batch, collects every worker's output. The dataflow stays synchronous: the main thread
// blocks on the workers' signal words (Atomics.wait) for answers. The workers' state writes of an
// epoch reach the main store's batch through the runtime's commit participant (parallel-runtime.ts).

import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Epoch } from '../../../sql/epoch.js';
import { SqlError, SqlState, type SqlStateCode } from '../../../sql/errors.js';
import type { HashAggregatePlan } from '../../../planner/stream/parallel.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import type { WriteBatchBuilder } from '../../../storage/write-batch.js';
import { appendChanges, emptyChanges, type ChangeBatch } from '../change-batch.js';
import type { StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import { decodeChanges, encodeChange, takeEncoded } from './batch-codec.js';
import type { AggregateWorkerData, MainToWorker, WorkerToMain } from './protocol.js';
import { ownerOf, VnodeHasher } from './vnode.js';


/** How long the main thread waits for a worker's answer before failing the epoch. */
const ANSWER_TIMEOUT_MS = 120_000;

/** The compiled worker script (under vitest this module runs from TypeScript: the build's copy in dist/). */
function workerScript(): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL('./aggregate-worker.js', import.meta.url);
  const marker = '/executor/stream/parallel/';
  const root = here.slice(0, here.lastIndexOf(marker));
  const built = `${root}/dist${marker}aggregate-worker.js`;
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build first`);
  return new URL(`file://${built}`);
}

/** One worker thread and the main thread's end of its channel. */
export class AggregateWorker {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal: Int32Array;
  readonly exited: Promise<void>;
  private gone: string | undefined;
  /** Changes posted since the last commit (the worker has writes to hand over). */
  dirty = false;
  /** Rows posted while holding since the last seal (the worker has output to hand over). */
  holdingRows = false;
  /** Epochs whose batch the worker handed over and that are not yet durable, oldest first. */
  readonly awaitingDurable: Epoch[] = [];
  /** Milliseconds the main thread spent blocked on this worker's answers (EXPLAIN ANALYZE). */
  waitedMs = 0;

  constructor(data: Omit<AggregateWorkerData, 'signal'>) {
    const channel = new MessageChannel();
    const signal = new SharedArrayBuffer(8);
    this.signal = new Int32Array(signal);
    this.port = channel.port1;
    this.worker = new Worker(workerScript(), { workerData: { ...data, signal, port: channel.port2 }, transferList: [channel.port2] });
    this.worker.unref();
    this.worker.on('error', (error) => {
      this.gone = error instanceof Error ? error.message : String(error);
    });
    this.exited = new Promise((resolve) => this.worker.on('exit', () => resolve()));
  }

  post(message: MainToWorker, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(message, transfer);
  }

  /** The worker's next answer; blocks the thread until it comes. An `error` answer is thrown. */
  receive(): WorkerToMain {
    const deadline = Date.now() + ANSWER_TIMEOUT_MS;
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      const received = receiveMessageOnPort(this.port);
      if (received !== undefined) {
        const message = received.message as WorkerToMain;
        if (message.t === 'error') throw new SqlError(message.code as SqlStateCode, message.message);
        return message;
      }
      if (this.gone !== undefined || Atomics.load(this.signal, 1) === 1) {
        throw new SqlError(SqlState.internalError, `a parallel aggregate's worker ended: ${this.gone ?? 'its thread exited'}`);
      }
      if (Date.now() > deadline) throw new SqlError(SqlState.internalError, "a parallel aggregate's worker did not answer");
      const start = performance.now();
      Atomics.wait(this.signal, 0, seen, 100);
      this.waitedMs += performance.now() - start;
    }
  }

  receiveOutput(): Extract<WorkerToMain, { t: 'output' }> {
    const message = this.receive();
    if (message.t !== 'output') throw new SqlError(SqlState.internalError, `a parallel aggregate's worker answered ${message.t}, not output`);
    return message;
  }

  receiveBatch(): Extract<WorkerToMain, { t: 'batch' }> {
    const message = this.receive();
    if (message.t !== 'batch') throw new SqlError(SqlState.internalError, `a parallel aggregate's worker answered ${message.t}, not batch`);
    return message;
  }

  close(): Promise<void> {
    this.post({ t: 'close' });
    const timeout = setTimeout(() => void this.worker.terminate(), 10_000);
    return this.exited.finally(() => clearTimeout(timeout));
  }
}

/** What the runtime gives an aggregate to start its workers with. */
export interface WorkerSettings {
  readonly token: number;
  readonly path: string;
  readonly parallelism: number;
  readonly retentionMs: number;
  readonly rowCacheBytes: number;
  readonly groupCacheBytes: number;
  /** The exchange's key as EXPLAIN ANALYZE names it: the group key's input columns. */
  readonly distribution: string;
}

/** The main thread's node of a parallel hash aggregate: the hash exchange and the workers' answers. */
export class ParallelAggregateNode implements StreamNode {
  readonly workers: AggregateWorker[] = [];
  private readonly writers: ByteWriter[] = [];
  private readonly counts: number[] = [];
  private readonly keyColumns: readonly number[];
  private readonly hasher: VnodeHasher;
  private holding = false;
  private disposed = false;
  private readonly distribution: string;

  constructor(
    plan: HashAggregatePlan,
    insertsOnly: boolean,
    private readonly context: StreamContext,
    settings: WorkerSettings,
    private readonly onDispose: (node: ParallelAggregateNode) => void,
  ) {
    // The main store keeps the tables' windows and garbage collection; the workers write their rows.
    for (const declaration of plan.stateTables) context.stateTable(declaration);
    this.distribution = settings.distribution;
    this.keyColumns = plan.groupKeys.map((key) => (key.kind === 'Column' ? key.index : -1));
    this.hasher = new VnodeHasher(plan.groupKeys.map((key) => key.type));
    for (let worker = 0; worker < settings.parallelism; worker++) {
      this.workers.push(
        new AggregateWorker({
          token: settings.token,
          path: settings.path,
          plan,
          insertsOnly,
          viewId: context.viewId,
          worker,
          parallelism: settings.parallelism,
          retentionMs: settings.retentionMs,
          viewRetentionMs: context.viewRetentionMs,
          rowCacheBytes: settings.rowCacheBytes,
          groupCacheBytes: settings.groupCacheBytes,
          tuning: context.tuning,
        }),
      );
      this.writers.push(new ByteWriter(64 * 1024));
      this.counts.push(0);
    }
  }

  initial(): ChangeBatch {
    // A keyed aggregate has no rows before its input has (only keyed ones run in parallel).
    return emptyChanges();
  }

  describe(): string {
    const waited = this.workers.reduce((sum, worker) => sum + worker.waitedMs, 0);
    return `StreamExchange dist by (${this.distribution}) to ${this.workers.length} workers, waited ${waited.toFixed(3)} ms`;
  }

  setHolding(on: boolean): void {
    this.holding = on;
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const parallelism = this.workers.length;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const owner = ownerOf(this.hasher.ofColumns(row, this.keyColumns), parallelism);
      encodeChange(this.writers[owner]!, row, changes.signs[i]!);
      this.counts[owner]!++;
    }
    const waiting: AggregateWorker[] = [];
    for (let owner = 0; owner < parallelism; owner++) {
      const worker = this.workers[owner]!;
      const writer = this.writers[owner]!;
      if (this.counts[owner] === 0) continue;
      const encoded = takeEncoded(writer, this.counts[owner]!);
      writer.reset();
      this.counts[owner] = 0;
      worker.post({ t: 'rows', holding: this.holding, changes: encoded }, [encoded.bytes]);
      worker.dirty = true;
      if (this.holding) worker.holdingRows = true;
      else waiting.push(worker);
    }
    return this.collect(waiting);
  }

  seal(): ChangeBatch {
    const waiting = this.workers.filter((worker) => worker.holdingRows);
    for (const worker of waiting) {
      worker.post({ t: 'seal' });
      worker.holdingRows = false;
    }
    return this.collect(waiting);
  }

  private collect(waiting: readonly AggregateWorker[]): ChangeBatch {
    if (waiting.length === 0) return emptyChanges();
    let out: ChangeBatch | undefined;
    const answers = receiveAll(waiting, (worker) => worker.receiveOutput());
    for (const answer of answers) {
      for (const message of answer.errors) this.context.recordError(new SqlError(SqlState.dataException, message));
      if (answer.changes.count === 0) continue;
      const changes = decodeChanges(answer.changes);
      if (out === undefined) out = changes;
      else appendChanges(out, changes);
    }
    return out ?? emptyChanges();
  }

  discard(): void {
    for (const worker of this.workers) {
      worker.post({ t: 'abort' });
      worker.dirty = false;
      worker.holdingRows = false;
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose(this);
  }

  /** Hands the workers' writes of the open epoch, sealed as `epoch`, into the main store's batch. */
  contribute(batch: WriteBatchBuilder, epoch: Epoch): void {
    const asked = this.workers.filter((worker) => worker.dirty);
    for (const worker of asked) {
      worker.post({ t: 'commit', epoch: epoch.toString() });
      worker.dirty = false;
    }
    // Before the answers: a failure of one fails the epoch every asked worker sealed.
    for (const worker of asked) worker.awaitingDurable.push(epoch);
    const answers = receiveAll(asked, (worker) => worker.receiveBatch());
    for (const handed of answers) {
      if (handed.length > 0) batch.writer.bytes(new Uint8Array(handed.bytes, 0, handed.length));
    }
  }

  durable(epoch: Epoch): void {
    for (const worker of this.workers) {
      while (worker.awaitingDurable.length > 0 && worker.awaitingDurable[0]! <= epoch) {
        worker.awaitingDurable.shift();
        worker.post({ t: 'durable' });
      }
    }
  }

  failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    for (const worker of this.workers) {
      if (worker.awaitingDurable.length === 0) continue;
      worker.awaitingDurable.length = 0;
      worker.post({ t: 'failed', message });
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}

/** Every worker's answer; the first failure is thrown after all have answered (no answer is left unread). */
function receiveAll<T>(workers: readonly AggregateWorker[], receive: (worker: AggregateWorker) => T): T[] {
  const answers: T[] = [];
  let failure: unknown;
  for (const worker of workers) {
    try {
      answers.push(receive(worker));
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
  return answers;
}
