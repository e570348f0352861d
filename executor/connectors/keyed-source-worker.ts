// The entry of a parallel fragment's worker when some input of the fragment is a replayed
// generator source that the workers generate themselves (executor/stream/PARALLEL.md, "Sources in
// keyed fragments"): the fragment's runner (executor/stream/parallel/fragment-runner.ts) with the
// source's producer, which only this layer knows how to build (each split's rows a function of
// its offsets, replayed rows carrying their unit numbers as row ids). It runs as a job of a pooled
// thread (`runJob`: executor/batch/worker-pool.ts) or, as a thread's own script, at once.

import { workerData } from 'node:worker_threads';
import { runFragmentWorker } from '../stream/parallel/fragment-runner.js';
import type { FragmentWorkerData } from '../stream/parallel/protocol.js';
import type { RunJob } from '../batch/pool-worker.js';
import { pooledThread } from '../batch/worker-pool.js';
import { replayProducer } from './source-replay.js';

export const runJob: RunJob = (data, end) => runFragmentWorker(replayProducer, data as FragmentWorkerData, end);

if (!pooledThread()) runFragmentWorker(replayProducer, workerData as FragmentWorkerData);
