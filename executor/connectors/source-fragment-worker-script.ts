// Where the source fragments' worker script (source-fragment-worker.ts) is, for the engine to hand to the
// parallel runtime (executor/stream/parallel/source-fragment.ts): the worker generates a source's
// rows, which only this layer knows how to do.

import { compiledWorkerScript } from '../batch/worker-script.js';

/** The compiled source-fragment-worker.js (worker-script.ts: the build's copy under vitest). */
export function sourceFragmentWorkerScript(): URL {
  return compiledWorkerScript(import.meta.url, './source-fragment-worker.js');
}
