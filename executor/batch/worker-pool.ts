// The process's worker threads (executor/stream/PARALLEL.md, "One worker pool per process"): no
// thread starts with the pool; a thread starts at the first job that finds none idle (a view's
// fragment, a batch aggregate's range), loads its job's script then, and runs one job at a time: a
// worker of any fragment of any view, keyed or source, or one key range of a batch aggregate's scan
// (batch-workers.ts). A fragment's worker handle (executor/stream/parallel/worker-handle.ts) or the
// batch workers take a thread with `run` (an idle one, else a new one), and the thread comes back
// when the job ends (a worker closes, a range is answered): the job releases everything it held
// (its store's database wrapper, caches, timers, ports) and tells the pool it is free
// (pool-worker.ts). A thread that ended otherwise (an uncaught error, a worker killed at its
// deadline, process.exit) is dropped and a later `run` starts a new one: a thread is reused only
// after a clean end. At most `maxIdle` threads wait idle (the parallelism: what one fragment or one
// batch aggregate takes at once); a thread freed beyond them ends, so a pool that once ran many
// fragments holds no idle isolates for them. Every thread of a pool has the same V8 resource limits
// (the memory plan's bound on a worker's old generation), so any thread suits any job.
//
// The API is small on purpose, for any kind of job whose data holds a port and a signal word
// (pool-worker.ts's WorkerChannel): `run(script, data, transfer, onError)`, whose script exports
// `runJob` (pool-worker.ts's RunJob), `warm(script)` (a thread started and the script loaded ahead
// of a job known to come: `run` takes a thread that loaded its script first), the counters (`started`, `idle`, `busy`, `jobs`, `lost`, `forced`), and
// `close` (at once for a pool that never started a thread). A thread with no job left ends by
// itself (`end`: asked, terminated only past a deadline).

import { Worker, workerData, type ResourceLimits, type TransferListItem } from 'node:worker_threads';
import type { FromPoolWorker, ToPoolWorker, WorkerChannel } from './pool-worker.js';
import { compiledWorkerScript } from './worker-script.js';

/** True in a pooled thread (pool-worker.ts): a worker script then waits for its jobs instead of running at once. */
export function pooledThread(): boolean {
  return (workerData as { pooled?: unknown } | null)?.pooled === true;
}

/** How long `close` waits for a thread to stop. */
const CLOSE_TIMEOUT_MS = 10_000;
/** How long a thread asked to end may take before it is terminated. */
const END_TIMEOUT_MS = 2_000;

/** A job running on a pooled thread, as its worker handle sees it. */
export interface PooledJob {
  /** The thread (a handle terminates it when the job misses its deadline: the pool drops it). */
  readonly worker: Worker;
  readonly threadId: number;
  /** Settles when the job ended: it closed and freed the thread, or the thread ended. */
  readonly ended: Promise<void>;
}

interface PooledThread {
  readonly worker: Worker;
  /** The scripts whose modules the thread loaded (or was asked to): a job of one of them starts without loading it. */
  readonly loaded: Set<string>;
  readonly exited: Promise<void>;
  /** The running job's end and error callbacks and its signal words ([1]: the exit word). */
  job: { readonly end: () => void; readonly onError: (error: unknown) => void; readonly signal: Int32Array } | undefined;
  alive: boolean;
}

export class WorkerPool {
  private readonly idleThreads: PooledThread[] = [];
  private readonly busyThreads = new Set<PooledThread>();
  private readonly threads = new Set<PooledThread>();
  private closed = false;
  /** Threads started since the pool was made (a thread that ended and was replaced counts again). */
  started = 0;
  /** Jobs run: on a new thread or on an idle one. */
  jobs = 0;
  /** Threads that ended while running a job (failed or killed) rather than closing it. */
  lost = 0;
  /** Threads asked to end that did not within END_TIMEOUT_MS, and were terminated. */
  forced = 0;

  constructor(
    private readonly resourceLimits: ResourceLimits = {},
    /** Threads kept idle at most (the parallelism); a thread freed beyond them ends. */
    private readonly maxIdle: number = Number.POSITIVE_INFINITY,
  ) {}

  /** Threads waiting for a job, and running one. */
  get idle(): number {
    return this.idleThreads.length;
  }

  get busy(): number {
    return this.busyThreads.size;
  }

  /**
   * Runs `script`'s `runJob` with `data` (which holds the job's port and signal word: pool-worker.ts)
   * on an idle thread, or on a new one when none is idle; `transfer` moves ports to it. `onError`
   * gets an error that ends the thread while the job runs.
   */
  run(script: URL, data: WorkerChannel, transfer: readonly TransferListItem[], onError: (error: unknown) => void): PooledJob {
    if (this.closed) throw new Error('the worker pool is closed');
    // An idle thread that loaded the script first (a warmed one), else any idle one, else a new one.
    const loaded = this.idleThreads.findIndex((idle) => idle.loaded.has(script.href));
    const thread = loaded >= 0 ? this.idleThreads.splice(loaded, 1)[0]! : (this.idleThreads.pop() ?? this.start());
    thread.loaded.add(script.href);
    this.busyThreads.add(thread);
    this.jobs++;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    thread.job = { end, onError, signal: new Int32Array(data.signal) };
    thread.worker.postMessage({ t: 'job', script: script.href, data } satisfies ToPoolWorker, [...transfer]);
    return { worker: thread.worker, threadId: thread.worker.threadId, ended };
  }

  /**
   * Starts a thread that loads `script`'s module and waits idle for its job (a job known to come
   * soon: a remote keyed share whose seed is being sent), unless `maxIdle` threads are idle
   * already or the pool is closed. The job's `run` takes it first.
   */
  warm(script: URL): void {
    if (this.closed || this.idleThreads.length >= this.maxIdle) return;
    const thread = this.start();
    thread.loaded.add(script.href);
    this.idleThreads.push(thread);
    thread.worker.postMessage({ t: 'load', script: script.href } satisfies ToPoolWorker);
  }

  private start(): PooledThread {
    const worker = new Worker(compiledWorkerScript(import.meta.url, './pool-worker.js'), { workerData: { pooled: true }, resourceLimits: this.resourceLimits });
    worker.unref();
    this.started++;
    const thread: PooledThread = { worker, loaded: new Set(), exited: new Promise((resolve) => worker.on('exit', () => resolve())), job: undefined, alive: true };
    this.threads.add(thread);
    worker.on('message', (message: FromPoolWorker) => {
      if (message.t !== 'free' || thread.job === undefined) return;
      const job = thread.job;
      thread.job = undefined;
      this.busyThreads.delete(thread);
      if (this.closed || !thread.alive || this.idleThreads.length >= this.maxIdle) this.end(thread);
      else this.idleThreads.push(thread);
      job.end();
    });
    worker.on('error', (error) => thread.job?.onError(error));
    void thread.exited.then(() => {
      thread.alive = false;
      this.threads.delete(thread);
      this.busyThreads.delete(thread);
      const at = this.idleThreads.indexOf(thread);
      if (at >= 0) this.idleThreads.splice(at, 1);
      const job = thread.job;
      thread.job = undefined;
      if (job === undefined) return;
      if (!this.closed) this.lost++;
      // A thread terminated from outside runs no exit handler of its own: its job's waits end here.
      Atomics.store(job.signal, 1, 1);
      Atomics.notify(job.signal, 0);
      job.end();
    });
    return thread;
  }

  /**
   * Ends a thread with no job: asked to end by itself (`exit`: it closes its port and its event loop
   * runs out), terminated only if it has not ended within END_TIMEOUT_MS. A thread that ends by
   * itself lets V8 finish its background work for the thread's isolate (a concurrent compile) before
   * the isolate goes; Node.js 20 aborted the process once (`NodePlatform::ForIsolate`, "Assertion
   * failed: (data.first) != nullptr") when a terminate came during such work.
   */
  private end(thread: PooledThread): void {
    thread.worker.postMessage({ t: 'exit' } satisfies ToPoolWorker);
    const timer = setTimeout(() => {
      this.forced++;
      void thread.worker.terminate();
    }, END_TIMEOUT_MS);
    timer.unref();
    void thread.exited.then(() => clearTimeout(timer));
  }

  /**
   * Ends every thread: the idle ones at once, a busy one when its job closes (its handle's close
   * terminates it if the job does not end in time); a thread still running at the deadline is
   * terminated.
   */
  async close(): Promise<void> {
    this.closed = true;
    // A pool that never started a thread (or whose threads all ended) has nothing to wait for.
    if (this.threads.size === 0) return;
    for (const thread of this.idleThreads.splice(0)) this.end(thread);
    const threads = [...this.threads];
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const thread of threads) void thread.worker.terminate();
        resolve();
      }, CLOSE_TIMEOUT_MS);
    });
    await Promise.race([Promise.all(threads.map((thread) => thread.exited)), deadline]);
    clearTimeout(timer);
    await Promise.race([Promise.all(threads.map((thread) => thread.exited)), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  }
}
