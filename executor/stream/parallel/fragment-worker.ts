// The entry of a parallel fragment's worker whose inputs all come from the main thread's exchange
// (PARALLEL.md): fragment-runner.ts runs it, as a job of a pooled thread (`runJob`: ../../batch/worker-pool.ts)
// or, started as a thread's own script, at once. A fragment whose workers generate a source's rows
// runs executor/connectors/keyed-source-worker.ts instead, which hands the runner the connectors'
// producers.

import { workerData } from 'node:worker_threads';
import { runFragmentWorker } from './fragment-runner.js';
import type { FragmentWorkerData } from './protocol.js';
import type { RunJob } from '../../batch/pool-worker.js';
import { pooledThread } from '../../batch/worker-pool.js';

export const runJob: RunJob = (data, end) => runFragmentWorker(undefined, data as FragmentWorkerData, end);

if (!pooledThread()) runFragmentWorker(undefined, workerData as FragmentWorkerData);
