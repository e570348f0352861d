// Messages between the main thread and the workers of a parallel fragment (PARALLEL.md). The main
// thread posts on its port; each request below that is answered gets exactly one answer, in order
// (worker-handle.ts takes outputs blocking, the dataflow being synchronous, and batches as Promises).
// Changes travel encoded (batch-codec.ts) in transferred ArrayBuffers.

import type { StateTableDeclaration } from '../../../planner/stream/stream-plan.js';
import type { MessagePort } from 'node:worker_threads';
import type { DataType } from '../../../sql/types.js';
import type { StreamTuning } from '../stream-context.js';
import type { WorkerMemory } from './worker-memory.js';
import type { WorkerControl } from './worker-port.js';

/** What a worker starts with (workerData). */
export interface FragmentWorkerData {
  /** RocksDatabase.share()'s token and the database's directory. */
  readonly token: number;
  readonly path: string;
  /** The fragment, its inputs replaced by placeholder scans (planner/stream/parallel.ts `workerPlan`), as `toTransfer` made it data. */
  readonly plan: unknown;
  /** Per input: its changes carry source row ids (after each row's columns). */
  readonly rowIds: readonly boolean[];
  /**
   * Per input: null when its rows come from the main thread's exchange; else the input's chain
   * (filters and projections over a replayed generator source's scan) as data, which this worker
   * runs over the units it generates, sending each row to its key's owner (PARALLEL.md, "Sources
   * in keyed fragments").
   */
  readonly sources: readonly (SourceInput | null)[] | undefined;
  /** Per worker: this worker's port to that worker (null for itself), when some input is generated in the workers. */
  readonly peers: readonly (MessagePort | null)[] | undefined;
  /**
   * When some input is generated in the workers: one Int32 per worker, the `ranges` messages it
   * received and is done with (their rows pushed, or dropped by an abort), stored and notified as
   * it goes: the main thread's credit (ParallelFragmentNode.held).
   */
  readonly progress: SharedArrayBuffer | undefined;
  readonly viewId: number;
  readonly worker: number;
  /** The fragment's owners of vnodes (threads, then other nodes' shares). */
  readonly parallelism: number;
  /** The owner index of each vnode (vnode-map.ts): where a row this worker routes goes (its peers when it generates an input). */
  readonly vnodes: Uint16Array;
  /** The store's default retention and the view's own. */
  readonly retentionMs: number;
  readonly viewRetentionMs: number | undefined;
  /** Budgets of this worker's row cache and group caches at most, and the share of them in force at the start (worker-memory.ts). */
  readonly rowCacheBytes: number;
  readonly groupCacheBytes: number;
  readonly cacheShare: number;
  readonly tuning: StreamTuning;
  /**
   * A worker taking over a remote share (executor/cluster/keyed-share-worker.ts): its store starts as
   * of epoch `base` and reads no newer versions of the backend until epoch `until` is durable here
   * (MvccStateStore.startAt), decimal strings.
   */
  readonly base?: { readonly epoch: string; readonly until: string };
  /** Two Int32s: [0] bumped after every answer is posted, [1] set to 1 when the thread exits. */
  readonly signal: SharedArrayBuffer;
}

/** An input the workers generate. */
export interface SourceInput {
  /** The chain (planner/stream/plan-transfer.ts data) from the exchange down to the source scan. */
  readonly chain: unknown;
  /** The columns the exchange hashes and their types. */
  readonly key: readonly number[];
  readonly types: readonly DataType[];
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
  /**
   * Units of input `slot`'s source for this worker to generate into the open epoch: triples (split,
   * from, to), possibly none (every worker gets every message); `order`: the worker holding the
   * first share of the first range (the shares' rows are taken in unit order). Not answered.
   */
  | { readonly t: 'ranges'; readonly slot: number; readonly ranges: readonly number[]; readonly order: number }
  /**
   * To a keyed share's relay whose node keeps the share's state (executor/cluster/keyed-share-worker.ts),
   * at a safe point before a cut of the owners: the share comes back to this process, its vnodes'
   * state made whole in the leader's database first. Not answered; the relay's `failed()` says when
   * it is done. Never sent to a thread.
   */
  | { readonly t: 'hand-back' }
  /**
   * At a cut for a changed membership that keeps this owner (parallel-fragment.ts'
   * followMembership), at the epoch boundary before the next rows: the new map, this owner's index
   * in it and the owners' number. Not answered. Its caches keep their entries of the vnodes it gave
   * away until evicted (never read again: an owner that gets back a vnode it held is told so,
   * `regained`). `gained`: it takes vnodes it did not own, whose rows are in its store now
   * (the leader's database, or its node's store after the relay's `add`): its tables forget their
   * key bounds (MvccStateStore.rowsAddedElsewhere), its caches hold no key of those vnodes.
   * `regained`: some of those vnodes it held before, so its caches may hold their rows of then:
   * its tables' caches and its group caches are emptied (MvccStateStore.committedElsewhere,
   * GroupCacheBudget.forgetAll). `drop`, to a remote share's relay only, with `regained`: the
   * vnodes the share held but does not own now, whose entries of then its node's store still holds
   * (a key the leader deleted and dropped since): the node deletes them before it writes the seed.
   * `add`, to a remote share's relay only (executor/cluster/keyed-share-worker.ts): those vnodes'
   * seed (packed entries, keyed-seed.ts), which its node writes into the share's store first;
   * with `addStore`, that seed holds only the writes after the checkpoint of the node's store so
   * named, from which the node read the gained vnodes' entries ahead of the cut (GainedVnodes),
   * and it writes those first.
   */
  | { readonly t: 'remap'; readonly vnodes: Uint16Array; readonly worker: number; readonly parallelism: number; readonly gained?: boolean; readonly regained?: boolean; readonly drop?: GainedVnodes; readonly add?: readonly Uint8Array[]; readonly addStore?: string }
  /** Commit, durable, failed, abort, budget, close: as every worker's (worker-port.ts). */
  | WorkerControl;

/**
 * The vnodes a kept keyed share gains at a cut (1 each, 256 flags), and how a row's vnode is found
 * (keyed-seed.ts): the fragment's state tables and each one's vnode columns (`Fragment.stateVnodes`).
 * Its node reads their entries out of the store it makes from its checkpoint ahead of the cut
 * (executor/cluster/keyed-share-stage.ts' `stage-checkpoint` with `gain`). The same shape names
 * the vnodes whose entries a kept share's node deletes from its store (`remap`'s `drop`).
 */
export interface GainedVnodes {
  readonly vnodes: Uint8Array;
  readonly tables: readonly StateTableDeclaration[];
  readonly stateVnodes: ReadonlyMap<number, readonly number[]>;
}

export type WorkerToMain =
  | { readonly t: 'output'; readonly changes: EncodedChanges; readonly errors: readonly string[] }
  /** The sealed epoch's writes, and the worker's memory as it hands them over. */
  | { readonly t: 'batch'; readonly bytes: ArrayBuffer; readonly length: number; readonly memory: WorkerMemory }
  | { readonly t: 'error'; readonly code: string; readonly message: string };

/**
 * Between the workers of a fragment whose inputs they generate, on a MessageChannel per pair: the
 * sender's rows of an input for the receiver's keys, then, at each seal, `end` (every row of the
 * epoch sent: the receiver seals once it has every peer's), and at each abort `abort` (rows before
 * it belong to the aborted epoch).
 */
export type PeerMessage =
  | { readonly t: 'rows'; readonly slot: number; readonly changes: EncodedChanges }
  /** The sender's share of the current `ranges` message is all sent (every worker sends one per message). */
  | { readonly t: 'share' }
  | { readonly t: 'end' }
  | { readonly t: 'abort' };
