// The entry of a pooled worker thread (worker-pool.ts): a thread that runs one job at a time, each
// a worker script's `runJob` with the job's data, its port and signal word among it: a dataflow's
// worker (executor/stream/parallel/fragment-worker.ts, executor/connectors/source-fragment-worker.ts,
// executor/connectors/keyed-source-worker.ts), which holds the thread until its view is gone, or a
// batch aggregate's range (batch-worker.ts), which gives it back once answered. A script's module
// is imported on the thread's first job of its kind and stays loaded, so a later job starts
// without loading the engine's modules again. When a job ends it calls the job's end, which tells
// the pool the thread is free; whatever ends the thread instead (an uncaught error, process.exit,
// a terminate) sets the current job's exit word, so the main thread stops waiting for it, and the
// pool replaces the thread. A `load` imports a script's module with no job (`WorkerPool.warm`: a
// job known to come soon then starts without loading it).

import { parentPort, type MessagePort } from 'node:worker_threads';

/** A job's channel to the main thread: its port and signal word (executor/stream/parallel/worker-handle.ts makes both for a dataflow's worker). */
export interface WorkerChannel {
  readonly port: MessagePort;
  /** Int32s: [0] bumped after every answer is posted, [1] set to 1 when the thread ends. */
  readonly signal: SharedArrayBuffer;
}

/**
 * Ends a pooled job: the thread goes back to the pool. Without it a worker is its own thread,
 * which ends when its channel closes.
 */
export type JobEnd = () => void;

/** What a worker script exports to run as a pooled job. */
export type RunJob = (data: unknown, end: JobEnd) => void;

/** From the pool: run a job (the script's URL and its data), load a script's module ahead of its job (`WorkerPool.warm`), or end the thread. */
export type ToPoolWorker =
  | { readonly t: 'job'; readonly script: string; readonly data: WorkerChannel }
  | { readonly t: 'load'; readonly script: string }
  | { readonly t: 'exit' };
/** To the pool: the job ended and the thread is free. */
export type FromPoolWorker = { readonly t: 'free' };

const pool = parentPort!;
/** The running job's signal words ([1]: the exit word). */
let current: Int32Array | undefined;

process.on('exit', () => {
  if (current === undefined) return;
  Atomics.store(current, 1, 1);
  Atomics.notify(current, 0);
});

pool.on('message', (message: ToPoolWorker) => {
  if (message.t === 'exit') {
    pool.close();
    return;
  }
  if (message.t === 'load') {
    // Only the module: its job comes later (a script that cannot load ends the thread, which the pool drops).
    import(message.script).catch((error: unknown) =>
      setImmediate(() => {
        throw error;
      }),
    );
    return;
  }
  const signal = new Int32Array(message.data.signal);
  current = signal;
  const end: JobEnd = () => {
    if (current !== signal) return;
    current = undefined;
    pool.postMessage({ t: 'free' } satisfies FromPoolWorker);
  };
  import(message.script).then(
    (module: { runJob: RunJob }) => module.runJob(message.data, end),
    (error: unknown) => {
      // A script that cannot load ends the thread: its job's requests fail, the pool replaces it.
      setImmediate(() => {
        throw error;
      });
    },
  );
});
