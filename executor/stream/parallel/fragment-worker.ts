// The entry of a parallel fragment's worker thread whose inputs all come from the main thread's
// exchange (PARALLEL.md): fragment-runner.ts runs it. A fragment whose workers generate a source's
// rows starts executor/connectors/keyed-source-worker.ts instead, which hands the runner the
// connectors' producers.

import { runFragmentWorker } from './fragment-runner.js';

runFragmentWorker(undefined);
