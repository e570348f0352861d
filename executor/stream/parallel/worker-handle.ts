// The main thread's handle on one worker thread of a parallel dataflow (PARALLEL.md): a parallel
// fragment's (parallel-fragment.ts) or a source fragment's (source-fragment.ts). Requests are posted
// on a MessagePort; the worker answers each request that wants an answer exactly once, in order,
// posting it and then bumping and notifying its signal word (worker-port.ts). So the handle matches
// answers to requests first in, first out, and a caller takes its answer either blocking
// (`wait`: Atomics.wait on the signal word, receiveMessageOnPort: the synchronous dataflow's path)
// or as a Promise (`answered`: Atomics.waitAsync: the commit's path, so the main thread goes on
// while the worker seals its epoch). Every wait ends: at the answer, when the thread ends (its exit
// word), or at the deadline, after which the worker is terminated and every later request fails
// (a late answer would otherwise be taken for the next request's). The worker runs on a thread of
// the process's pool (../../batch/worker-pool.ts) when the handle is given one, which it goes back to when the
// worker closes, else on a thread of its own (a remote share's relay).

import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort, type ResourceLimits, type TransferListItem } from 'node:worker_threads';
import { SqlError, SqlState, type SqlStateCode } from '../../../sql/errors.js';
import type { PendingWrites } from '../../../storage/mvcc-state-store.js';
import type { WorkerMemory } from './worker-memory.js';
import type { WorkerPool } from '../../batch/worker-pool.js';

/** How long a request waits for its answer before failing (and the worker is given up). */
let answerTimeoutMs = 120_000;

/**
 * Called at least every 100 ms while a thread blocks in `WorkerHandle.wait` for a worker's answer
 * (the lease keeper's heartbeat, executor/cluster/lease-keeper.ts): a main thread waiting on its
 * workers is busy, not stuck; the answer's deadline bounds the wait.
 */
let blockedWaitBeat: (() => void) | undefined;

/** Sets (or, with undefined, clears) what `WorkerHandle.wait` calls while it blocks. */
export function setBlockedWaitBeat(beat: (() => void) | undefined): void {
  blockedWaitBeat = beat;
}

/** Sets the answer deadline of every request made from now on (tests: a worker that stops answering). */
export function setAnswerTimeout(ms: number): void {
  answerTimeoutMs = ms;
}

/** An error answer, as every worker script sends it. */
export interface ErrorAnswer {
  readonly t: 'error';
  readonly code: string;
  readonly message: string;
}

/** One request's answer to come. */
export class Answer<T> {
  settled = false;
  value: T | undefined;
  error: unknown;
  readonly timeoutMs = answerTimeoutMs;
  readonly deadline = Date.now() + this.timeoutMs;
  private waiters: { resolve: (value: T) => void; reject: (error: unknown) => void }[] = [];

  /** What the request waits for, in words (its error when the deadline passes). */
  constructor(readonly what: string) {}

  settle(value: T | undefined, error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.value = value;
    this.error = error;
    for (const waiter of this.waiters.splice(0)) {
      if (error !== undefined) waiter.reject(error);
      else waiter.resolve(value as T);
    }
  }

  promise(): Promise<T> {
    if (this.settled) return this.error !== undefined ? Promise.reject(this.error) : Promise.resolve(this.value as T);
    return new Promise<T>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }
}

/** Atomics.waitAsync (Node 20; not in the ES2022 lib's types). */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number, timeout: number): { async: boolean; value: Promise<string> | string };
}).waitAsync;

export class WorkerHandle<In, Out extends { readonly t: string }> {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal: Int32Array;
  /** Settles when the worker ended: its thread exited, or its pooled job closed and freed the thread. */
  readonly exited: Promise<void>;
  /** The thread the worker runs on (a pooled thread runs other workers before and after it). */
  readonly threadId: number;
  /** Why the worker is gone (its thread ended, it failed, it missed a deadline), if it is. */
  private gone: string | undefined;
  /** Requests posted and not yet answered, oldest first. */
  private readonly queue: Answer<Out>[] = [];
  private polling = false;
  private closing = false;
  /** Milliseconds the main thread spent blocked on this worker's answers (EXPLAIN ANALYZE). */
  waitedMs = 0;
  /** The worker's memory as its last epoch batch reported it (worker-memory.ts), until it hands one over. */
  memory: WorkerMemory | undefined;
  /** Batches handed over (answers carrying a memory report). */
  reports = 0;

  constructor(
    script: URL,
    data: object,
    /** The worker in words, for errors: "a parallel fragment's worker". */
    private readonly name: string,
    /** Ports inside `data` that move to the worker (the fragment's channels between its workers). */
    transfer: readonly TransferListItem[] = [],
    /** V8's bounds on the worker's heap (its old generation: the memory plan's share for a worker). */
    readonly resourceLimits: ResourceLimits = {},
    /** Called with each memory report as it is taken (the memory manager's feedback). */
    private readonly onMemory: (memory: WorkerMemory, previous: WorkerMemory | undefined) => void = () => undefined,
    /** The process's threads to run on (the script then exports `runJob`: ../../batch/pool-worker.ts); `resourceLimits` are the pool's. */
    pool?: WorkerPool,
  ) {
    const channel = new MessageChannel();
    const signal = new SharedArrayBuffer(8);
    this.signal = new Int32Array(signal);
    this.port = channel.port1;
    const failed = (error: unknown): void => {
      this.gone ??= `${name} ended: ${error instanceof Error ? error.message : String(error)}`;
    };
    if (pool !== undefined) {
      const job = pool.run(script, { ...data, signal, port: channel.port2 }, [channel.port2, ...transfer], failed);
      this.worker = job.worker;
      this.exited = job.ended;
    } else {
      this.worker = new Worker(script, { workerData: { ...data, signal, port: channel.port2 }, transferList: [channel.port2, ...transfer], resourceLimits });
      this.worker.unref();
      this.worker.on('error', failed);
      this.exited = new Promise((resolve) => this.worker.on('exit', () => resolve()));
    }
    this.threadId = this.worker.threadId;
  }

  /** Posts a message that gets no answer. */
  post(message: In, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(message, transfer);
  }

  /** Posts a request; its answer is the next one not yet taken by an earlier request. */
  request(message: In, what: string, transfer: ArrayBuffer[] = []): Answer<Out> {
    const answer = new Answer<Out>(what);
    if (this.gone !== undefined || this.closing) {
      answer.settle(undefined, new SqlError(SqlState.internalError, this.gone ?? `${this.name} was closed`));
      return answer;
    }
    this.queue.push(answer);
    this.port.postMessage(message, transfer);
    return answer;
  }

  /** The answer, blocking the thread until it comes. An `error` answer is thrown. */
  wait(answer: Answer<Out>): Out {
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      this.take();
      if (answer.settled) break;
      const start = performance.now();
      Atomics.wait(this.signal, 0, seen, Math.max(1, Math.min(100, answer.deadline - Date.now())));
      this.waitedMs += performance.now() - start;
      blockedWaitBeat?.();
    }
    if (answer.error !== undefined) throw answer.error;
    return answer.value!;
  }

  /** The answer as a Promise: the thread goes on meanwhile. An `error` answer rejects it. */
  answered(answer: Answer<Out>): Promise<Out> {
    const promise = answer.promise();
    if (!answer.settled) void this.poll();
    return promise;
  }

  /** Takes every answer already posted; then fails the waiting requests if the worker is gone or late. */
  private take(): void {
    for (;;) {
      const received = receiveMessageOnPort(this.port);
      if (received === undefined) break;
      const message = received.message as Out | ErrorAnswer;
      const memory = (message as { memory?: WorkerMemory }).memory;
      if (memory !== undefined) {
        const previous = this.memory;
        this.memory = memory;
        this.reports++;
        this.onMemory(memory, previous);
      }
      const answer = this.queue.shift();
      if (answer === undefined) continue;
      if (message.t === 'error') {
        const error = message as ErrorAnswer;
        answer.settle(undefined, new SqlError(error.code as SqlStateCode, error.message));
      } else {
        answer.settle(message as Out, undefined);
      }
    }
    if (this.queue.length === 0) return;
    if (this.gone === undefined && Atomics.load(this.signal, 1) === 1) this.gone = `${this.name} ended: its thread exited`;
    const first = this.queue[0]!;
    if (this.gone === undefined && Date.now() > first.deadline) {
      this.gone = `${this.name} did not answer within ${first.timeoutMs / 1000} s (${first.what}): it is stopped`;
      void this.worker.terminate();
    }
    if (this.gone !== undefined) this.failAll(new SqlError(SqlState.internalError, this.gone));
  }

  private failAll(error: unknown): void {
    for (const answer of this.queue.splice(0)) answer.settle(undefined, error);
  }

  /** Waits without blocking while some request is unanswered. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      while (this.queue.length > 0) {
        const seen = Atomics.load(this.signal, 0);
        this.take();
        if (this.queue.length === 0) break;
        const first = this.queue[0]!;
        const result = waitAsync(this.signal, 0, seen, Math.max(1, Math.min(100, first.deadline - Date.now())));
        if (result.async) await result.value;
      }
    } finally {
      this.polling = false;
    }
  }

  /**
   * Asks the worker to close (it answers the requests before it first) and terminates its thread if
   * it has not ended 10 s later (a pooled thread is then replaced); a request made after this fails.
   */
  close(): Promise<void> {
    this.post({ t: 'close' } as In);
    this.closing = true;
    const timeout = setTimeout(() => void this.worker.terminate(), 10_000);
    return this.exited.finally(() => clearTimeout(timeout));
  }
}

/** Pending writes of several parts as one: every part is waited for, then the first failure is thrown. */
export function allWrites(parts: readonly PendingWrites[]): PendingWrites | undefined {
  if (parts.length <= 1) return parts[0];
  return {
    wait: () => {
      const out: Uint8Array[] = [];
      let failure: unknown;
      for (const part of parts) {
        try {
          out.push(...part.wait());
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
      return out;
    },
    whenReady: async () => {
      const settled = await Promise.allSettled(parts.map((part) => part.whenReady()));
      const out: Uint8Array[] = [];
      for (const result of settled) {
        if (result.status === 'rejected') throw result.reason;
        out.push(...result.value);
      }
      return out;
    },
  };
}

/** The writes of the workers asked for an epoch's batch: `take` reads each answer. */
export function workerWrites<In, Out extends { readonly t: string }>(
  asked: readonly [WorkerHandle<In, Out>, Answer<Out>][],
  take: (message: Out, handle: WorkerHandle<In, Out>) => Uint8Array,
): PendingWrites | undefined {
  return allWrites(
    asked.map(([handle, answer]) => ({
      wait: () => [take(handle.wait(answer), handle)],
      whenReady: async () => [take(await handle.answered(answer), handle)],
    })),
  );
}
