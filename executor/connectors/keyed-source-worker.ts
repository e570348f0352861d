// The entry of a parallel fragment's worker thread when some input of the fragment is a replayed
// generator source that the workers generate themselves (executor/stream/PARALLEL.md, "Sources in
// keyed fragments"): the fragment's runner (executor/stream/parallel/fragment-runner.ts) with the
// source's producer, which only this layer knows how to build (each split's rows a function of
// its offsets, replayed rows carrying their unit numbers as row ids).

import { runFragmentWorker } from '../stream/parallel/fragment-runner.js';
import { replayProducer } from './source-replay.js';

runFragmentWorker(replayProducer);
