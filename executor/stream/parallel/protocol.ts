// Messages between the main thread and the workers of a parallel fragment (PARALLEL.md). The main
// thread posts on its port; each request below that is answered gets exactly one answer, in order
// (worker-handle.ts takes outputs blocking, the dataflow being synchronous, and batches as Promises).
// Changes travel encoded (batch-codec.ts) in transferred ArrayBuffers.

import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import type { StreamTuning } from '../stream-context.js';

/** What a worker starts with (workerData). */
export interface FragmentWorkerData {
  /** RocksDatabase.share()'s token and the database's directory. */
  readonly token: number;
  readonly path: string;
  /** The fragment, its inputs replaced by placeholder scans (planner/stream/parallel.ts `workerPlan`), as `toTransfer` made it data. */
  readonly plan: unknown;
  /** Per input: its changes carry source row ids (after each row's columns). */
  readonly rowIds: readonly boolean[];
  readonly viewId: number;
  readonly worker: number;
  readonly parallelism: number;
  /** The store's default retention and the view's own. */
  readonly retentionMs: number;
  readonly viewRetentionMs: number | undefined;
  /** Budgets of this worker's row cache and group caches. */
  readonly rowCacheBytes: number;
  readonly groupCacheBytes: number;
  readonly tuning: StreamTuning;
  /** Two Int32s: [0] bumped after every answer is posted, [1] set to 1 when the thread exits. */
  readonly signal: SharedArrayBuffer;
}

/** An encoded batch of changes: `count` changes in `bytes[0, length)`. */
export interface EncodedChanges {
  readonly bytes: ArrayBuffer;
  readonly length: number;
  readonly count: number;
}

export type MainToWorker =
  /** Changes of the fragment's inputs (index: input) owned by this worker; answered with `output` unless holding. */
  | { readonly t: 'rows'; readonly holding: boolean; readonly inputs: readonly (EncodedChanges | null)[] }
  /** The end of the epoch's pushes: answered with `output` (the held groups' net changes). */
  | { readonly t: 'seal' }
  /** Seal the open epoch as `epoch`: answered with `batch`. */
  | { readonly t: 'commit'; readonly epoch: string }
  /** The oldest epoch handed over and not yet acknowledged is durable, or every one failed. */
  | { readonly t: 'durable' }
  | { readonly t: 'failed'; readonly message: string }
  /** The open epoch was aborted. */
  | { readonly t: 'abort' }
  | { readonly t: 'close' };

export type WorkerToMain =
  | { readonly t: 'output'; readonly changes: EncodedChanges; readonly errors: readonly string[] }
  | { readonly t: 'batch'; readonly bytes: ArrayBuffer; readonly length: number }
  | { readonly t: 'error'; readonly code: string; readonly message: string };
