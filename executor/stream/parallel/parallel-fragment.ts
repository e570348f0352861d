// A fragment of a view's dataflow run by N worker threads (PARALLEL.md): the main thread's node is
// the hash exchange in front of it. Each change of each of the fragment's inputs goes to the
// worker owning its key's vnode (vnode.ts), encoded into that worker's buffer; the workers run
// the fragment's operators over their share while the main thread goes on (a chunk pushed while
// holding is not waited for), and the seal, or an unheld batch, collects every worker's output.
// The dataflow stays synchronous: the main thread blocks for those outputs (worker-handle.ts). The
// workers' state writes of an epoch reach the main store's batch through the runtime's commit
// participant (parallel-runtime.ts) without blocking: the store writes the epoch when they come.

import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { compiledWorkerScript } from '../../batch/worker-script.js';
import type { Epoch } from '../../../sql/epoch.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import type { PendingWrites } from '../../../storage/mvcc-state-store.js';
import { appendChanges, emptyChanges, isEmpty, type ChangeBatch } from '../change-batch.js';
import type { DataType } from '../../../sql/types.js';
import type { SplitRange, StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import { decodeChanges, encodeChange, encodeChangeWithId, takeEncoded } from './batch-codec.js';
import type { EncodedChanges, FragmentWorkerData, GainedVnodes, MainToWorker, SourceInput, WorkerToMain } from './protocol.js';
import { splitShares, VNODE_COUNT, VnodeHasher } from './vnode.js';
import { balancedMap, ownerMoves, rebalanceMap, type VnodeMap, type VnodeMapRecord, type VnodeOwner } from './vnode-map.js';
import { workerWrites, WorkerHandle, type Answer } from './worker-handle.js';
import type { WorkerMemory, WorkerStatus } from './worker-memory.js';
import type { WorkerPool } from '../../batch/worker-pool.js';
import type { KeyedSeedStaging, RemoteShareTarget } from './source-fragment.js';
import { DEFAULT_SEED_STEP_ENTRIES, type KeyedSeed, type KeyedSeedRead } from './keyed-seed.js';


/**
 * Units of generated sources posted to a fragment's workers and not yet taken by all of them, above
 * which the source manager's reader waits (`held`): the workers' pace bounds the epochs, as the
 * main thread's own work bounds them when it makes the rows. The engine's `keyedSourceCredit` sets it.
 */
export const DEFAULT_KEYED_SOURCE_CREDIT = 32_768;

/** Atomics.waitAsync (Node 20; not in the ES2022 lib's types). */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number, timeout: number): { async: boolean; value: Promise<string> | string };
}).waitAsync;

/** The compiled fragment-worker.js (worker-script.ts: the build's copy under vitest). */
export function fragmentWorkerScript(): URL {
  return compiledWorkerScript(import.meta.url, './fragment-worker.js');
}

type Output = Extract<WorkerToMain, { t: 'output' }>;
type Batch = Extract<WorkerToMain, { t: 'batch' }>;

/** One worker thread of a fragment: its handle and what the main thread tracks of it. */
export class FragmentWorker {
  readonly handle: WorkerHandle<MainToWorker, WorkerToMain>;
  /** Changes posted since the last commit (the worker has writes to hand over). */
  dirty = false;
  /** Rows posted while holding since the last seal (the worker has output to hand over). */
  holdingRows = false;
  /** Epochs whose batch the worker was asked for and that are not yet durable, oldest first. */
  readonly awaitingDurable: Epoch[] = [];

  constructor(script: URL, data: Omit<FragmentWorkerData, 'signal'>, transfer: readonly MessagePort[], settings: WorkerSettings) {
    this.handle = new WorkerHandle(script, data, "a parallel fragment's worker", transfer, workerLimits(settings.oldGenerationBytes), settings.onMemory, settings.pool);
  }

  /** Milliseconds the main thread spent blocked on this worker's answers (EXPLAIN ANALYZE). */
  get waitedMs(): number {
    return this.handle.waitedMs;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The answer of a request, checked to be of the kind asked for. */
function expect<K extends WorkerToMain['t']>(message: WorkerToMain, kind: K): Extract<WorkerToMain, { t: K }> {
  if (message.t !== kind) throw new SqlError(SqlState.internalError, `a parallel fragment's worker answered ${message.t}, not ${kind}`);
  return message as Extract<WorkerToMain, { t: K }>;
}

/** What the runtime gives a fragment to start its workers with. */
export interface WorkerSettings {
  readonly token: number;
  readonly path: string;
  readonly parallelism: number;
  readonly retentionMs: number;
  readonly rowCacheBytes: number;
  readonly groupCacheBytes: number;
  /** The share of those budgets in force now (the memory manager's), and V8's bound on each worker's old generation (0: none). */
  readonly cacheShare: number;
  readonly oldGenerationBytes: number;
  /** Each worker's memory report as it comes (the memory manager's feedback). */
  readonly onMemory: (memory: WorkerMemory, previous: WorkerMemory | undefined) => void;
  /** The worker script: fragmentWorkerScript(), or the connectors' keyed-source-worker.js when the workers generate an input. */
  readonly script: URL;
  /** The process's worker threads the workers run on (../../batch/worker-pool.ts; without it each starts a thread of its own). */
  readonly pool?: WorkerPool;
}

/** V8's resource limits for a worker whose old generation is bounded by `oldGenerationBytes` (0: V8's default). */
export function workerLimits(oldGenerationBytes: number): { maxOldGenerationSizeMb?: number } {
  return oldGenerationBytes > 0 ? { maxOldGenerationSizeMb: Math.max(1, Math.floor(oldGenerationBytes / (1024 * 1024))) } : {};
}

/** An input the workers generate: its source (the relation the source manager's ranges name) and what the workers need of it. */
export interface GeneratedSource {
  readonly relationId: number;
  readonly input: SourceInput;
}

/** One input of the fragment as the exchange sees it. */
export interface ExchangeInput {
  /** The columns hashed for a row's owner, and their types. */
  readonly key: readonly number[];
  readonly types: readonly DataType[];
  /** The rows carry source row ids (`ChangeBatch.ids`), which travel after the row's columns. */
  readonly rowIds: boolean;
  /** The key in words (EXPLAIN ANALYZE). */
  readonly text: string;
}

/** Per input, the exchange's buffers for each owner of vnodes (the threads, then the remote shares). */
interface Exchange {
  readonly input: ExchangeInput;
  readonly hasher: VnodeHasher;
  writers: ByteWriter[];
  counts: number[];
}

/**
 * How a keyed fragment follows the cluster's membership (executor/cluster/README.md, "Keyed
 * shares"): the runtime's view of the nodes that take shares, the read of their seeds (their vnodes'
 * committed state), and the shares of the nodes listed now.
 */
export interface KeyedOwners {
  /** Changes whenever the set of nodes that take shares does. */
  generation(): number;
  /** The node ids of the shares `remotes` would make now, in owner order after the threads. */
  nodes(): readonly string[];
  /** The keys of those nodes' shares (a node and its share address: a node started again is another run), in the same order. */
  keys(): readonly string[];
  /** Starts reading the seeds of one share per node listed now (keyed-seed.ts), each owning its vnodes in `map` (owner N + i: node i), or undefined when none is listed (no seed to read). */
  readSeeds(map: VnodeMap): KeyedSeedRead | undefined;
  /**
   * One share per node listed now (owners after the threads, in order) but those whose keys are in
   * `keep` (a cut keeps them running), seeded with `seeds` (one per node), or read at once by the
   * balanced map when not given (the fragment's build); a share whose seed `staging` sent ahead is
   * opened with what goes after it.
   */
  remotes(seeds?: readonly KeyedSeed[], staging?: KeyedSeedStaging, keep?: ReadonlySet<string>): RemoteShareTarget[];
  /** Sends the nodes listed now but those in `keep` their seeds as of the read's start (`bases`) ahead of the cut (a node whose store `ahead` made from a checkpoint keeps it), or undefined when sending ahead is not there. */
  stageSeeds?(bases: readonly Uint8Array[], ahead?: KeyedSeedStaging, keep?: ReadonlySet<string>): KeyedSeedStaging | undefined;
  /**
   * Before the read: has each node listed now but those in `keep` make its share's store from a
   * checkpoint at or past epoch `after` (the read's start), or undefined when that is not there;
   * a node whose key is in `gains` (a kept share) reads the vnodes flagged there out of that store
   * for its running share instead, and one whose key is in `owns` (a started share) keeps in it the
   * vnodes flagged there only.
   */
  stageFromCheckpoint?(after: Epoch, keep?: ReadonlySet<string>, gains?: ReadonlyMap<string, Uint8Array>, owns?: ReadonlyMap<string, Uint8Array>): KeyedSeedStaging | undefined;
  /**
   * Once the stores made from checkpoints settled (`ahead`, undefined when none was asked): has each
   * node whose share the cut starts (its key in `owns`, the vnodes flagged there) and whose store no
   * checkpoint made get one of SST files `read` exports at its start, and each kept share that gains
   * vnodes (`gains`; those not in `keep`) those vnodes as such files; the staging returned (`ahead`
   * or a new one) counts those at the read's epoch once `settled`. Undefined when none gets any.
   */
  stageFromFiles?(read: KeyedSeedRead, ahead: KeyedSeedStaging | undefined, keep: ReadonlySet<string>, owns: ReadonlyMap<string, Uint8Array>, gains: ReadonlyMap<string, Uint8Array>): { staging: KeyedSeedStaging; settled: Promise<void> } | undefined;
  /** The vnodes flagged (1 each of 256) with how a state row's vnode is found: what a kept share's node deletes from its store (`remap`'s `drop`). */
  vnodesOf(vnodes: Uint8Array): GainedVnodes;
}

/** A read of the seeds going on while the old owners run (ParallelFragmentNode.followMembership). */
interface SeedReading {
  readonly read: KeyedSeedRead;
  /** The membership's generation it was started for. */
  readonly generation: number;
  readonly startedAt: number;
  /** When the last table was read (0: not yet). */
  readMs: number;
  timer: NodeJS.Immediate | undefined;
  /** The seeds sent ahead to their nodes, once the read is done. */
  staging: KeyedSeedStaging | undefined;
  /** The shares' stores made from checkpoints or of SST files before the read (undefined: every seed is read), and when that settled (ms after the start). */
  checkpoint: KeyedSeedStaging | undefined;
  checkpointMs: number;
  /** The started shares' vnodes and the kept shares' gained ones (by node key), the kept shares that gain none, and whether stores of SST files were asked for (after the checkpoints'). */
  readonly owns: ReadonlyMap<string, Uint8Array>;
  readonly gains: ReadonlyMap<string, Uint8Array>;
  readonly keepStores: ReadonlySet<string>;
  filesAsked: boolean;
  /** Every seed sent ahead is written on its node or failed to be (and the test hold passed): the cut may come. */
  staged: boolean;
  hold: NodeJS.Timeout | undefined;
  /** The vnode map of the owners the cut will start (the rebalance of the one running), which the seeds were read by. */
  readonly map: VnodeMap;
  readonly owners: readonly VnodeOwner[];
  /** Per owner of `map`: the index of the owner running now that the cut keeps (it gains no vnode it held before), or -1 (started). */
  readonly kept: Int32Array;
  /** The keys of the nodes whose shares the cut keeps: no seed is sent ahead or made for them, only the vnodes they gain are read (and go at the cut). */
  readonly keep: ReadonlySet<string>;
}

/** What a kept share that gains vnodes gets at the cut: their seed, and the name of its node's store from a checkpoint whose gained vnodes' entries the node read ahead (the seed then holds the writes after that checkpoint). */
interface Add {
  readonly seed: KeyedSeed;
  readonly store?: string;
}

/** The main thread's node of a parallel fragment: the hash exchange of its inputs and the workers' answers. */
export class ParallelFragmentNode implements StreamNode {
  readonly workers: FragmentWorker[] = [];
  private readonly exchanges: Exchange[];
  private holding = false;
  private disposed = false;
  /** Per input: the source its workers generate, if they do (PARALLEL.md, "Sources in keyed fragments"). */
  readonly generated: readonly (GeneratedSource | null)[];
  /** Per generated input: the worker the next range's first share goes to (shares of short ranges rotate). */
  private readonly nextShare: number[];
  /** Units posted to the workers to generate (EXPLAIN ANALYZE). */
  private units = 0;
  /** Per worker, the `ranges` messages it is done with (fragment-runner.ts stores them), when generating. */
  private readonly progress: Int32Array | undefined;
  /** `ranges` messages posted to each worker (every worker gets every one). */
  private rangesPosted = 0;
  /** The messages not yet done with by every worker: their number (1-based, as `progress` counts) and units. */
  private readonly inFlight: { readonly index: number; readonly units: number }[] = [];
  private inFlightUnits = 0;
  /** Times the source's reader waited for the workers (EXPLAIN ANALYZE). */
  private holds = 0;
  private readonly settings: WorkerSettings;
  /** Units the workers may hold not yet taken before the source waits (the engine's `keyedSourceCredit`). */
  private readonly credit: number;
  /** The node of each remote share, after the worker threads (EXPLAIN ANALYZE). */
  readonly remoteNodes: string[] = [];
  /** The remote shares running now, in owner order after the threads. */
  private remoteTargets: readonly RemoteShareTarget[] = [];
  /** Looks at the membership again while shares are being handed back (handingBack). */
  private handBackTimer: NodeJS.Timeout | undefined;
  /** The membership's generation the owners were cut for, and whether a newer one waits for a safe point. */
  private ownersGeneration = 0;
  private rescaleDue = false;
  /** Times the owners were cut again for a changed membership, and the owners those cuts kept running and started (EXPLAIN ANALYZE). */
  private rescales = 0;
  private ownersKept = 0;
  private ownersStarted = 0;
  /** The seeds being read for the next cut, while the owners run on. */
  private reading: SeedReading | undefined;
  /** The owners replaced at a re-cut, closing. */
  private readonly retiring = new Set<Promise<void>>();
  /** The memory manager's share of the caches' budgets, for workers started later. */
  private cacheShare: number;
  /**
   * The open epoch's rows are kept in the exchange's buffers, not posted: a cut (or the start of
   * its seed read) waits for a safe point and only the last epoch's durability is missing
   * (`holdForSafePoint`). Times rows were held so (EXPLAIN ANALYZE).
   */
  private heldForSafePoint = false;
  private safePointHolds = 0;
  /** The owner of each vnode (vnode-map.ts) and who each owner is: the exchange routes by it. */
  private vnodeMap: VnodeMap;
  private vnodeOwners: VnodeOwner[] = [];
  /**
   * Per running owner (as `workers`), 1 for each vnode whose rows its caches or store may hold: the
   * vnodes it owned since it started or last took vnodes back (a share's store, made from a seed or
   * from a checkpoint, holds its own vnodes only). An owner that gains one of them takes it back
   * (`regained`).
   */
  private heldVnodes: Uint8Array[] = [];
  /** Owners kept at cuts that took vnodes they never held (EXPLAIN ANALYZE). */
  private ownersGained = 0;
  /** Told of the map at each cut (the runtime records it). */
  onVnodeMap: (() => void) | undefined;
  /** Each worker's data, by its owner index and the owners' number. */
  private readonly dataOf: (worker: number, owners: number) => Omit<FragmentWorkerData, 'signal'>;

  constructor(
    /** The fragment's nodes on the main thread's plan (their state tables) and the workers' copy. */
    nodes: readonly StreamPlan[],
    /** The fragment as its workers get it (planner/stream/plan-transfer.ts). */
    workerPlan: unknown,
    /** The plan nodes feeding the exchange (the dataflow places them as this node's inputs). */
    readonly inputs: readonly StreamPlan[],
    exchangeInputs: readonly ExchangeInput[],
    private readonly context: StreamContext,
    settings: WorkerSettings,
    private readonly onDispose: (node: ParallelFragmentNode) => void,
    generated: readonly (GeneratedSource | null)[] = [],
    /** Shares on other nodes, after the worker threads (never for a fragment whose workers generate an input). */
    remotes: readonly RemoteShareTarget[] = [],
    /** The membership the shares follow, re-cut at safe points (a keyed fragment under --remote-shares on). */
    private readonly owners?: KeyedOwners,
    /** The membership's generation `remotes` were cut for. */
    generation = 0,
    /** The node id the threads are named by (null: a server without --cluster). */
    private readonly selfNode: string | null = null,
    /** The fragment's number within its view (oxbow_catalog.vnodes). */
    readonly fragment = 0,
  ) {
    this.generated = generated;
    this.settings = settings;
    this.cacheShare = settings.cacheShare;
    this.ownersGeneration = generation;
    this.credit = context.tuning.keyedSourceCredit ?? DEFAULT_KEYED_SOURCE_CREDIT;
    this.nextShare = generated.map(() => 0);
    // A channel per pair of workers when they generate some input: rows go straight to their key's owner.
    const generating = generated.some((source) => source !== null);
    const peers: (MessagePort | null)[][] = Array.from({ length: settings.parallelism }, () => new Array<MessagePort | null>(settings.parallelism).fill(null));
    if (generating) {
      for (let a = 0; a < settings.parallelism; a++) {
        for (let b = a + 1; b < settings.parallelism; b++) {
          const pair = new MessageChannel();
          peers[a]![b] = pair.port1;
          peers[b]![a] = pair.port2;
        }
      }
    }
    // The main store keeps the tables' windows and garbage collection; the workers write their rows.
    for (const node of nodes) for (const declaration of node.stateTables) context.stateTable(declaration);
    this.progress = generating ? new Int32Array(new SharedArrayBuffer(4 * settings.parallelism)) : undefined;
    this.exchanges = exchangeInputs.map((input) => ({ input, hasher: new VnodeHasher(input.types), writers: [], counts: [] }));
    this.dataOf = (worker, owners) => ({
      token: settings.token,
      path: settings.path,
      plan: workerPlan,
      rowIds: exchangeInputs.map((input) => input.rowIds),
      viewId: context.viewId,
      worker,
      parallelism: owners,
      vnodes: this.vnodeMap,
      retentionMs: settings.retentionMs,
      viewRetentionMs: context.viewRetentionMs,
      rowCacheBytes: settings.rowCacheBytes,
      groupCacheBytes: settings.groupCacheBytes,
      cacheShare: this.cacheShare,
      tuning: context.tuning,
      sources: generating ? generated.map((source) => source?.input ?? null) : undefined,
      peers: generating ? peers[worker]! : undefined,
      progress: this.progress?.buffer as SharedArrayBuffer | undefined,
    });
    // A fragment built fresh: the balanced map over its threads and the nodes' shares.
    this.vnodeMap = balancedMap(settings.parallelism + remotes.length);
    this.vnodeOwners = this.ownersOf(remotes.map((remote) => remote.node));
    this.start(remotes, peers);
  }

  /** The owners: this node's threads, then the shares of nodes `nodes`. */
  private ownersOf(nodes: readonly string[]): VnodeOwner[] {
    const owners: VnodeOwner[] = [];
    for (let thread = 0; thread < this.settings.parallelism; thread++) owners.push({ node: this.selfNode, thread });
    for (const node of nodes) owners.push({ node, thread: null });
    return owners;
  }

  /**
   * The map for the shares of nodes `nodes` rebalanced from the one running: the threads keep
   * their indexes, a node gone gives its vnodes away, one come takes some, each moved vnode to an
   * owner that never held it where one can take it (so the owner is kept: keepPlan).
   */
  private rebalanceFor(nodes: readonly string[]): { map: VnodeMap; owners: VnodeOwner[] } {
    const owners = this.ownersOf(nodes);
    const moves = ownerMoves(this.vnodeOwners, owners);
    const from = new Int32Array(owners.length).fill(-1);
    moves.forEach((to, old) => {
      if (to >= 0) from[to] = old;
    });
    const held = (owner: number, vnode: number): boolean => from[owner]! >= 0 && this.heldVnodes[from[owner]!]?.[vnode] === 1;
    return { map: rebalanceMap(this.vnodeMap, moves, owners.length, held), owners };
  }

  /** The fragment's map now (oxbow_catalog.vnodes, the leader's record in etcd). */
  vnodes(): VnodeMapRecord {
    return { viewId: this.context.viewId, fragment: this.fragment, map: this.vnodeMap, owners: this.vnodeOwners };
  }

  /**
   * Starts the owners of the fragment's vnodes: the N threads over the shared database, then one
   * share per other node (`remotes`), each owning its vnodes in the map.
   */
  private start(
    remotes: readonly RemoteShareTarget[],
    peers?: readonly (readonly (MessagePort | null)[])[],
    /**
     * At a cut: per owner, the index of the running owner it keeps (-1: started), those workers,
     * per owner whether it gains vnodes, and per kept share that gains, the seed of those vnodes.
     */
    keeping?: { readonly kept: Int32Array; readonly old: readonly FragmentWorker[]; readonly gained: Uint8Array; readonly regained: Uint8Array; readonly adds: readonly (Add | undefined)[]; readonly drops: readonly (GainedVnodes | undefined)[] },
  ): void {
    const settings = this.settings;
    const total = settings.parallelism + remotes.length;
    for (const exchange of this.exchanges) {
      exchange.writers = Array.from({ length: total }, () => new ByteWriter(64 * 1024));
      exchange.counts = new Array<number>(total).fill(0);
    }
    /** A worker the cut keeps: at this epoch boundary it takes the new map and its index in it. */
    const kept = (owner: number): FragmentWorker | undefined => {
      const from = keeping?.kept[owner] ?? -1;
      if (from < 0) return undefined;
      const worker = keeping!.old[from]!;
      const gained = keeping!.gained[owner] === 1;
      const regained = keeping!.regained[owner] === 1;
      const added = keeping!.adds[owner];
      const seed = added?.seed;
      const add = seed === undefined ? undefined : seed.base === undefined ? [seed.bytes] : [seed.base, seed.bytes];
      const drop = keeping!.drops[owner];
      worker.handle.post({ t: 'remap', vnodes: this.vnodeMap, worker: owner, parallelism: total, ...(gained ? { gained } : {}), ...(regained ? { regained } : {}), ...(drop === undefined ? {} : { drop }), ...(add === undefined ? {} : { add }), ...(added?.store === undefined ? {} : { addStore: added.store }) });
      return worker;
    };
    for (let worker = 0; worker < settings.parallelism; worker++) {
      const ports = peers?.[worker]!.filter((port): port is MessagePort => port !== null) ?? [];
      this.workers.push(kept(worker) ?? new FragmentWorker(settings.script, this.dataOf(worker, total), ports, settings));
    }
    // Shares on other nodes (a cluster's leader under --remote-shares on): one more owner of vnodes
    // each, its relay thread answering as a worker does (executor/cluster/keyed-share-worker.ts).
    remotes.forEach((remote, index) => {
      const owner = settings.parallelism + index;
      const data = { ...this.dataOf(owner, total), ...remote.data } as Omit<FragmentWorkerData, 'signal'>;
      this.workers.push(kept(owner) ?? new FragmentWorker(remote.script, data, [], { ...settings, pool: undefined, onMemory: () => undefined }));
      this.remoteNodes.push(remote.node);
    });
    this.remoteTargets = remotes;
    // What each owner held: a kept one's vnodes before and now, a started one's or one whose caches
    // were emptied (an owner that took back vnodes: a share's node dropped every vnode it held and
    // does not own) now.
    const before = this.heldVnodes;
    this.heldVnodes = this.workers.map((_, owner) => {
      const from = keeping?.kept[owner] ?? -1;
      const held = from >= 0 && before[from] !== undefined && keeping!.regained[owner] !== 1 ? new Uint8Array(before[from]!) : new Uint8Array(VNODE_COUNT);
      for (let vnode = 0; vnode < this.vnodeMap.length; vnode++) if (this.vnodeMap[vnode] === owner) held[vnode] = 1;
      return held;
    });
  }

  /**
   * Which owners of `next` a cut keeps running (per new owner, the index of the owner running now,
   * or -1: started): every thread, and the share of the same run of a node (its key) that did not
   * fail over. Its caches and its node's store hold its vnodes as of the cut, and the entries of
   * vnodes it loses are never read while it does not own them. An owner that gains vnodes it never
   * held has nothing of them: a thread reads them in the leader's database, a share gets them
   * written into its node's store at the cut (`remap` with `add`, and `addStore` when its node read
   * them out of its checkpoint ahead), and its tables forget their key bounds and its caches their
   * completeness (a share's store holds its own vnodes only: one made from a checkpoint dropped the
   * others when it was made). One that gets back a vnode it held may hold that vnode's rows of then
   * (a key the leader has deleted and dropped since): its caches are emptied (`regained`), and a
   * share's node first deletes from its store the entries of every vnode it held and does not own (`drop`).
   * So every owner running is kept, on a join and on a leave alike. A fragment whose workers
   * generate an input starts all (its workers are peers).
   */
  private keepPlan(next: { readonly map: VnodeMap; readonly owners: readonly VnodeOwner[] }, keys: readonly string[]): Int32Array {
    const threads = this.settings.parallelism;
    const kept = new Int32Array(next.owners.length).fill(-1);
    if (this.generating) return kept;
    const moves = ownerMoves(this.vnodeOwners, next.owners);
    moves.forEach((to, from) => {
      if (to < 0) return;
      if (from >= threads) {
        const target = this.remoteTargets[from - threads];
        if (target === undefined || target.failed?.() === true || (target.key ?? target.node) !== keys[to - threads]) return;
      }
      kept[to] = from;
    });
    return kept;
  }

  /**
   * Whether shares whose nodes keep their state (executor/cluster/keyed-share-worker.ts,
   * OXBOW_KEYED_NODE_STATE) that the cut to `next` does not keep whole are still out: at a safe
   * point before a cut each share the cut stops (`kept`) or takes vnodes from is asked back (its
   * vnodes made whole in the leader's database, where the cut reads them, and its share run here
   * until the cut), and the cut waits until every one runs here; a timer looks again meanwhile, so
   * an idle view gets its cut too. A share the cut keeps with all its vnodes stays out (with any it
   * gains: their state is in the leader's database, where the cut reads them for its node): its
   * node keeps its state across the cut.
   */
  private handingBack(next: { readonly map: VnodeMap }, kept: Int32Array): boolean {
    const threads = this.settings.parallelism;
    let out = false;
    this.remoteTargets.forEach((target, index) => {
      if ((target.data as { nodeState?: boolean }).nodeState !== true || target.failed?.() === true) return;
      const from = threads + index;
      const to = kept.indexOf(from);
      if (to >= 0 && this.vnodeMap.every((owner, vnode) => owner !== from || next.map[vnode] === to)) return;
      out = true;
      this.workers[from]!.handle.post({ t: 'hand-back' });
    });
    if (out && this.handBackTimer === undefined) {
      this.handBackTimer = setTimeout(() => {
        this.handBackTimer = undefined;
        this.followMembership();
      }, 50);
      this.handBackTimer.unref();
    }
    return out;
  }

  /**
   * Follows the membership (once per epoch, at its durability, when the runtime hears it changed,
   * and when a seed read ends): when the nodes that take shares changed, at a safe point of the
   * fragment (no worker has rows, output or writes of an open epoch, every epoch it wrote is
   * durable) a read of the new shares' seeds starts (keyed-seed.ts: its iterators see the database
   * as of then) and goes on in steps between statements and epochs while the owners run on; the
   * writes they hand over meanwhile are kept. At the first safe point after the read is done, the
   * owners are cut again: the threads and shares stop, each node listed now gets a share seeded
   * with its vnodes' state as read and the kept epochs' writes after it, and the threads start over
   * on the database, so the vnodes of a node that joined go to it with their state and those of a
   * node that left (drained) go back to the others, with nothing to replay. A membership that
   * changes again during the read abandons it (the next safe point starts another).
   */
  followMembership(): void {
    const owners = this.owners;
    if (owners === undefined || this.disposed) return;
    const generation = owners.generation();
    if (this.reading !== undefined && this.reading.generation !== generation) this.abandonRead();
    if (generation === this.ownersGeneration) {
      this.rescaleDue = false;
      return;
    }
    if (this.reading !== undefined && (this.reading.readMs === 0 || !this.reading.staged)) return;
    for (const worker of this.workers) {
      if (worker.dirty || worker.holdingRows || worker.awaitingDurable.length > 0) {
        this.rescaleDue = true;
        return;
      }
    }
    this.rescaleDue = false;
    if (this.reading === undefined) {
      let read: KeyedSeedRead | undefined;
      const startedAt = performance.now();
      let next: { map: VnodeMap; owners: VnodeOwner[] };
      let kept: Int32Array;
      const keep = new Set<string>();
      /** The kept shares but those that gain vnodes: those get a store from a checkpoint too, their nodes reading the gained vnodes (`gains`) out of it. */
      const keepStores = new Set<string>();
      const gains = new Map<string, Uint8Array>();
      /** The started shares' vnodes: a store made from a checkpoint keeps these only. */
      const owns = new Map<string, Uint8Array>();
      try {
        next = this.rebalanceFor(owners.nodes());
        const keys = owners.keys();
        kept = this.keepPlan(next, keys);
        // The shares whose nodes keep their state that this cut does not keep whole come back first.
        if (this.handingBack(next, kept)) {
          this.rescaleDue = true;
          return;
        }
        // The seeds are read by the new map, but the vnodes a kept share keeps go to no seed (as a
        // thread's): its seed holds only the vnodes it gains.
        const seedMap = new Uint16Array(next.map);
        const threads = this.settings.parallelism;
        const previous = this.vnodeMap;
        for (let owner = threads; owner < kept.length; owner++) if (kept[owner]! >= 0) keep.add(keys[owner - threads]!);
        for (const name of keep) keepStores.add(name);
        for (let vnode = 0; vnode < seedMap.length; vnode++) {
          const owner = seedMap[vnode]!;
          if (owner < threads) continue;
          if (kept[owner]! < 0) {
            const key = keys[owner - threads]!;
            let flags = owns.get(key);
            if (flags === undefined) owns.set(key, (flags = new Uint8Array(seedMap.length)));
            flags[vnode] = 1;
            continue;
          }
          if (kept[owner] === previous[vnode]) {
            seedMap[vnode] = 0;
            continue;
          }
          const key = keys[owner - threads]!;
          keepStores.delete(key);
          let flags = gains.get(key);
          if (flags === undefined) gains.set(key, (flags = new Uint8Array(seedMap.length)));
          flags[vnode] = 1;
        }
        read = owners.readSeeds(seedMap);
      } catch (error) {
        this.ownersGeneration = generation;
        this.cannotSeed(error);
        return;
      }
      if (read !== undefined) {
        const reading: SeedReading = { read, generation, startedAt, readMs: 0, timer: undefined, staging: undefined, checkpoint: undefined, checkpointMs: 0, owns, gains, keepStores, filesAsked: false, staged: false, hold: undefined, map: next.map, owners: next.owners, kept, keep };
        this.reading = reading;
        // The nodes make their stores from a checkpoint taken after this safe point first; only the seeds of those that cannot are read.
        try {
          reading.checkpoint = owners.stageFromCheckpoint?.(read.epoch, keepStores, gains, owns);
        } catch (error) {
          this.abandonRead();
          this.cannotSeed(error);
          this.rescaleDue = true;
          return;
        }
        if (reading.checkpoint !== undefined) {
          void reading.checkpoint.settled.then(() => this.checkpointStaged(reading));
          return;
        }
        this.checkpointStaged(reading);
        return;
      }
      // No node to seed (the last one left): the threads take every vnode at once.
    }
    const reading = this.reading;
    if (reading?.staging?.lost?.() === true || reading?.checkpoint?.lost?.() === true) {
      // A node's store made from a checkpoint went before the cut (no seed of it was read): start over at the next safe point.
      process.stderr.write(`oxbow: view ${this.context.viewId}'s keyed fragment reads its shares' seeds again: ${(reading.staging ?? reading.checkpoint)!.describe()}\n`);
      this.abandonRead();
      this.rescaleDue = true;
      return;
    }
    this.reading = undefined;
    this.ownersGeneration = generation;
    // The seeds are made before anything stops: a failure leaves the owners as they are.
    let remotes: RemoteShareTarget[];
    let seeds: KeyedSeed[] = [];
    let next: { map: VnodeMap; owners: readonly VnodeOwner[] };
    const before = this.remoteTargets;
    const threads = this.settings.parallelism;
    let kept: Int32Array | undefined;
    /** Per kept share that gains: the name under which its node keeps the gained vnodes' entries it read out of a store from its checkpoint. */
    const stores: (string | undefined)[] = [];
    try {
      seeds = reading === undefined ? [] : reading.read.finish();
      // A kept share whose seed of the vnodes it gains starts at its node's checkpoint: the entries its node read out of it, handed to it.
      seeds.forEach((seed, share) => {
        if (seed.checkpoint === undefined || reading?.keep.has(owners.keys()[share] ?? '') !== true) return;
        const id = reading.checkpoint?.handOffStore?.(share);
        if (id === undefined) throw new Error(`node ${owners.nodes()[share]}'s store made from checkpoint ${seed.checkpoint} is gone`);
        stores[share] = id;
      });
      const started = owners.remotes(seeds, reading?.staging, reading?.keep);
      // The owners after the threads: the kept shares as they run, the started ones in between, in order.
      kept = reading?.kept;
      remotes = started;
      if (kept !== undefined && reading!.keep.size > 0) {
        let next = 0;
        remotes = [];
        for (let owner = threads; owner < kept.length; owner++) remotes.push(kept[owner]! >= 0 ? before[kept[owner]! - threads]! : started[next++]!);
        if (next !== started.length || remotes.some((remote) => remote === undefined)) throw new Error(`${started.length} shares started, not the ${kept.length - threads - reading!.keep.size} the cut needs`);
      }
      // The seeds were split by the map the read started with, for the nodes listed then.
      next = reading === undefined ? this.rebalanceFor(remotes.map((remote) => remote.node)) : reading;
      // No seed read (no node listed): the threads that gain no vnode are kept (no share is: none runs on).
      kept ??= this.keepPlan(next, []);
      const names = remotes.map((remote) => remote.node).join(' ');
      const read = next.owners.slice(this.settings.parallelism).map((owner) => owner.node).join(' ');
      if (names !== read) throw new Error(`nodes ${names || 'none'} take shares now, not the nodes ${read || 'none'} whose seeds were read`);
    } catch (error) {
      reading?.read.close();
      reading?.staging?.close();
      reading?.checkpoint?.close();
      this.cannotSeed(error);
      return;
    }
    // Stores made from checkpoints that no share took (their nodes' links close: the nodes remove them).
    reading?.checkpoint?.close();
    const held = this.takeHeld();
    const old = this.workers.splice(0);
    this.remoteNodes.length = 0;
    const keeps = new Set<number>();
    if (kept !== undefined) for (const from of kept) if (from >= 0) keeps.add(from);
    old.forEach((worker, index) => {
      if (keeps.has(index)) return;
      const closing = worker.close().catch(() => undefined);
      this.retiring.add(closing);
      void closing.finally(() => this.retiring.delete(closing));
    });
    before.forEach((remote, index) => {
      if (!keeps.has(threads + index)) remote.retire?.();
    });
    const previous = this.vnodeMap;
    const moves = ownerMoves(this.vnodeOwners, next.owners);
    let moved = 0;
    for (let vnode = 0; vnode < previous.length; vnode++) if (moves[previous[vnode]!] !== next.map[vnode]) moved++;
    // The kept owners that gain vnodes, and a kept share's seed of them.
    const gained = new Uint8Array(next.owners.length);
    /** Kept owners that take back vnodes they held (their caches are emptied). */
    const regained = new Uint8Array(next.owners.length);
    for (let vnode = 0; vnode < previous.length; vnode++) {
      const owner = next.map[vnode]!;
      if (kept === undefined || kept[owner]! < 0 || kept[owner] === previous[vnode]) continue;
      gained[owner] = 1;
      if ((this.heldVnodes[kept[owner]!]?.[vnode] ?? 1) === 1) regained[owner] = 1;
    }
    const regainedOwners = regained.reduce((sum, flag) => sum + flag, 0);
    // A kept share that takes back vnodes: its node deletes the entries of every vnode it held and
    // does not own (the ones it takes back among them) before the seed of those it gains is written.
    const drops = new Array<GainedVnodes | undefined>(next.owners.length).fill(undefined);
    let dropShares = 0;
    let droppedVnodes = 0;
    regained.forEach((flag, owner) => {
      if (flag === 0 || owner < threads) return;
      const from = kept![owner]!;
      const held = this.heldVnodes[from];
      const vnodes = new Uint8Array(VNODE_COUNT);
      for (let vnode = 0; vnode < VNODE_COUNT; vnode++) {
        if (previous[vnode] === from || (held !== undefined && held[vnode] !== 1)) continue;
        vnodes[vnode] = 1;
        droppedVnodes++;
      }
      drops[owner] = owners.vnodesOf(vnodes);
      dropShares++;
    });
    const adds = new Array<Add | undefined>(next.owners.length).fill(undefined);
    let gainedOwners = 0;
    gained.forEach((gains, owner) => {
      if (gains === 0) return;
      gainedOwners++;
      if (owner < threads) return;
      const seed = seeds[owner - threads];
      if (seed === undefined) return;
      const store = stores[owner - threads];
      adds[owner] = { seed, ...(store === undefined ? {} : { store }) };
      remotes[owner - threads]!.added?.(seed.rows, (seed.base?.length ?? 0) + seed.bytes.length + (reading?.checkpoint?.filesBytes?.(owner - threads) ?? 0));
    });
    this.ownersGained += gainedOwners;
    this.vnodeMap = next.map;
    this.vnodeOwners = [...next.owners];
    this.start(remotes, undefined, keeps.size > 0 ? { kept: kept!, old, gained, regained, adds, drops } : undefined);
    this.routeHeld(held);
    this.rescales++;
    const keptThreads = [...keeps].filter((index) => index < threads).length;
    const keptNodes = keeps.size - keptThreads;
    const startedOwners = this.workers.length - keeps.size;
    this.ownersKept += keeps.size;
    this.ownersStarted += startedOwners;
    const now = new Set(remotes.map((remote) => remote.key ?? remote.node));
    const took = remotes.filter((remote) => !before.some((earlier) => (earlier.key ?? earlier.node) === (remote.key ?? remote.node))).map((remote) => remote.node);
    const gave = before.filter((remote) => !now.has(remote.key ?? remote.node)).map((remote) => (remote.failed?.() === true ? `${remote.node} (failed over before)` : remote.node));
    // A kept share that gains nothing has no seed; one that gains has the read's seed of those vnodes.
    const keptKey = (index: number): boolean => reading?.keep.has(remotes[index]?.key ?? '') === true && adds[threads + index] === undefined;
    const allFromCheckpoints = seeds.some((seed) => seed.checkpoint !== undefined) && seeds.every((seed, index) => seed.checkpoint !== undefined || keptKey(index));
    const sources = remotes
      .map((remote, index) => {
        const seed = seeds[index];
        if (seed === undefined) return undefined;
        const bytes = (seed.base?.length ?? 0) + seed.bytes.length;
        if (keptKey(index)) return undefined;
        const from = seed.checkpoint === undefined ? 'from the read' : (reading?.checkpoint?.filesBytes?.(index) ?? 0) > 0 ? `as SST files of epoch ${seed.checkpoint}` : `from its checkpoint ${seed.checkpoint}`;
        if (adds[threads + index] !== undefined) return `node ${remote.node} ${from}, ${bytes} bytes sent to its running share`;
        return `node ${remote.node} ${from}, ${bytes} bytes sent`;
      })
      .filter((text) => text !== undefined);
    const read =
      reading === undefined
        ? 'no seed to read'
        : `${allFromCheckpoints ? `no seed read, stores made ${seeds.some((_seed, index) => (reading.checkpoint?.filesBytes?.(index) ?? 0) > 0) ? 'from checkpoints or SST files' : 'from checkpoints'} in ${reading.checkpointMs.toFixed(0)} ms` : `seeds read in ${reading.readMs.toFixed(0)} ms`} while the owners ran, ${reading.staging?.describe() ?? 'none sent ahead'}, then ${reading.read.keptEpochs} epoch${reading.read.keptEpochs === 1 ? '' : 's'}' writes added (${reading.read.keptEntries} entries), cut ${(performance.now() - reading.startedAt).toFixed(0)} ms after the read began; seeds: ${sources.join('; ')}`;
    process.stderr.write(
      `oxbow: view ${this.context.viewId}'s keyed fragment cut its vnodes again for ${this.settings.parallelism} threads and ${remotes.length} other node${remotes.length === 1 ? '' : 's'}, ${moved} vnode${moved === 1 ? '' : 's'} changing owner` +
        `; kept ${keeps.size} owner${keeps.size === 1 ? '' : 's'} running (${keptThreads} thread${keptThreads === 1 ? '' : 's'}, ${keptNodes === 1 ? "1 node's share" : `${keptNodes} nodes' shares`}${gainedOwners > 0 ? `; ${gainedOwners} of them took vnodes` : ''}${regainedOwners > 0 ? `, ${regainedOwners} of those some they held before (caches emptied${dropShares > 0 ? `; ${dropShares === 1 ? "1 node's store" : `${dropShares} nodes' stores`} rid of ${droppedVnodes} vnode${droppedVnodes === 1 ? '' : 's'} not owned` : ''})` : ''}), started ${startedOwners}` +
        `${took.length > 0 ? `; node ${took.join(', ')} took vnodes` : ''}${gave.length > 0 ? `; node ${gave.join(', ')} handed its vnodes back` : ''}` +
        ` (${read})\n`,
    );
    this.onVnodeMap?.();
  }

  private cannotSeed(error: unknown): void {
    process.stderr.write(`oxbow: view ${this.context.viewId}'s keyed fragment keeps its owners: its shares could not be seeded: ${error instanceof Error ? error.message : String(error)}\n`);
  }

  /** One step of the seed read (a bounded number of entries, or about 10 ms), then the next after whatever waits on the event loop. */
  private readStep(): void {
    const reading = this.reading;
    if (reading === undefined) return;
    reading.timer = undefined;
    const bound = this.context.tuning.keyedSeedSliceEntries;
    let done: boolean;
    try {
      if (bound !== undefined) {
        done = reading.read.step(bound);
      } else {
        const began = performance.now();
        do done = reading.read.step(DEFAULT_SEED_STEP_ENTRIES);
        while (!done && performance.now() - began < 10);
      }
    } catch (error) {
      // A failed read (or the database closed under it): the owners stay; the next safe point reads again.
      this.abandonRead();
      if (!this.disposed) this.cannotSeed(error);
      return;
    }
    if (!done) {
      reading.timer = setImmediate(() => this.readStep());
      return;
    }
    reading.readMs = performance.now() - reading.startedAt;
    // The seeds go to their nodes now, while the owners run on; the cut waits for them (each link has a deadline).
    try {
      reading.staging = this.owners?.stageSeeds?.(reading.read.takeBases(), reading.checkpoint, reading.keep);
    } catch (error) {
      this.abandonRead();
      if (!this.disposed) this.cannotSeed(error);
      return;
    }
    if (reading.staging === undefined) return this.staged(reading);
    void reading.staging.settled.then(() => this.staged(reading));
  }

  /** Once every table is read: a slice (about 10 ms) of the look-ups at E of keys kept since, then the next after whatever waits on the event loop. */
  private settleStep(): void {
    const reading = this.reading;
    if (reading === undefined) return;
    reading.timer = undefined;
    const began = performance.now();
    try {
      while (reading.read.settleWithin(16) > 0 && performance.now() - began < 10);
    } catch (error) {
      this.abandonRead();
      if (!this.disposed) this.cannotSeed(error);
      return;
    }
    if (!reading.read.settled) reading.timer = setImmediate(() => this.settleStep());
  }

  /**
   * The nodes answered whether they made their stores from a checkpoint (none was asked when
   * `reading.checkpoint` is undefined): the started shares of the others get stores of SST files
   * exported at the read's start where they can, and the kept shares that gain vnodes those vnodes
   * so, then the seeds of the rest are read (none when all have them).
   */
  private checkpointStaged(reading: SeedReading): void {
    if (this.reading !== reading || this.disposed) return;
    if (!reading.filesAsked) {
      reading.filesAsked = true;
      let filed: { staging: KeyedSeedStaging; settled: Promise<void> } | undefined;
      try {
        filed = reading.owns.size === 0 && reading.gains.size === 0 ? undefined : this.owners?.stageFromFiles?.(reading.read, reading.checkpoint, reading.keepStores, reading.owns, reading.gains);
      } catch (error) {
        this.abandonRead();
        this.cannotSeed(error);
        this.rescaleDue = true;
        return;
      }
      if (filed !== undefined) {
        reading.checkpoint = filed.staging;
        void filed.settled.then(() => this.checkpointStaged(reading));
        return;
      }
    }
    if (reading.checkpoint === undefined) return this.readStep();
    reading.checkpointMs = performance.now() - reading.startedAt;
    try {
      reading.read.fromCheckpoints(reading.checkpoint?.checkpoints?.() ?? []);
    } catch (error) {
      this.abandonRead();
      this.cannotSeed(error);
      this.rescaleDue = true;
      return;
    }
    this.readStep();
  }

  /** The seeds are on their nodes (or go whole at the cut): cut now if the fragment is at a safe point, else at the next one. */
  private staged(reading: SeedReading): void {
    if (this.reading !== reading) return;
    const hold = this.context.tuning.keyedSeedCutHoldMs;
    if (hold !== undefined && hold > 0 && reading.hold === undefined) {
      reading.hold = setTimeout(() => {
        reading.hold = undefined;
        if (this.reading !== reading) return;
        reading.staged = true;
        this.followMembership();
      }, hold);
      return;
    }
    reading.staged = true;
    this.followMembership();
  }

  /** Drops the seed read under way: its iterators close, the kept writes go. */
  private abandonRead(): void {
    const reading = this.reading;
    if (reading === undefined) return;
    this.reading = undefined;
    if (reading.timer !== undefined) clearImmediate(reading.timer);
    if (reading.hold !== undefined) clearTimeout(reading.hold);
    reading.read.close();
    // The nodes remove the seeds sent ahead (and the stores made from checkpoints) when their links close.
    reading.staging?.close();
    reading.checkpoint?.close();
  }

  initial(): ChangeBatch {
    // A fragment's operators are keyed and linear: no rows before their inputs have some.
    return emptyChanges();
  }

  describe(): string {
    const waited = this.workers.reduce((sum, worker) => sum + worker.waitedMs, 0);
    const keys = this.exchanges.map((exchange) => `(${exchange.input.text})`).join(', ');
    const generating = this.generated.some((source) => source !== null) ? `, ${this.units} source units generated in the workers, the source held ${this.holds} times` : '';
    const remotes = this.remoteNodes.length;
    const nodes = remotes === 0 ? '' : ` and ${remotes} other node${remotes === 1 ? '' : 's'}`;
    const cut = this.rescales === 0 ? '' : `, vnodes cut again ${this.rescales} time${this.rescales === 1 ? '' : 's'} (${this.ownersKept} owner${this.ownersKept === 1 ? '' : 's'} kept${this.ownersGained > 0 ? `, ${this.ownersGained} of them taking vnodes` : ''}, ${this.ownersStarted} started)`;
    const holds = this.safePointHolds === 0 ? '' : `, an epoch's rows held for a safe point ${this.safePointHolds} time${this.safePointHolds === 1 ? '' : 's'}`;
    return `StreamExchange dist by ${keys} to ${this.workers.length - remotes} workers${nodes}${generating}${cut}${holds}, waited ${waited.toFixed(3)} ms`;
  }

  /** Each worker's memory and waits (oxbow_catalog.memory, oxbow_catalog.dataflow_workers). */
  workerStatus(): WorkerStatus[] {
    return this.workers.map((worker, index) => ({
      kind: 'fragment',
      worker: index,
      threadId: worker.handle.threadId,
      memory: worker.handle.memory,
      batches: worker.handle.reports,
      rowCacheMaxBytes: this.settings.rowCacheBytes,
      groupCacheMaxBytes: this.settings.groupCacheBytes,
      oldGenerationBytes: this.settings.oldGenerationBytes,
      waitedMs: worker.waitedMs,
    }));
  }

  /** The caches' share of their maxima for every worker (the memory manager's budget). */
  setCacheShare(share: number): void {
    this.cacheShare = share;
    for (const worker of this.workers) worker.handle.post({ t: 'budget', share });
  }

  /** True when some input of the fragment is generated by its workers. */
  get generating(): boolean {
    return this.generated.some((source) => source !== null);
  }

  /**
   * Units of source `relationId` of the open epoch: each input the workers generate from it is cut
   * into N contiguous shares per range, one per worker, which generates, filters and projects its
   * share and sends each row to its key's owner.
   */
  take(relationId: number, ranges: readonly SplitRange[]): void {
    const parallelism = this.workers.length;
    this.generated.forEach((source, slot) => {
      if (source === null || source.relationId !== relationId) return;
      const order = this.nextShare[slot]!;
      const { shares, next } = splitShares(ranges, parallelism, order);
      let units = 0;
      for (const { from, to } of ranges) if (to > from) units += to - from;
      this.nextShare[slot] = next;
      this.units += units;
      this.inFlight.push({ index: ++this.rangesPosted, units });
      this.inFlightUnits += units;
      // Every worker gets every message, its share possibly empty: each takes the shares' rows in order.
      shares.forEach((share, index) => this.workers[index]!.handle.post({ t: 'ranges', slot, ranges: share, order }));
      // Any worker may get rows from the others: every one has writes and output of the epoch.
      for (const worker of this.workers) {
        worker.dirty = true;
        worker.holdingRows = true;
      }
    });
  }

  /** Units posted to the workers that some worker has not taken yet. */
  private outstanding(): number {
    const progress = this.progress;
    if (progress === undefined || this.inFlight.length === 0) return 0;
    let done = Atomics.load(progress, 0);
    for (let worker = 1; worker < progress.length; worker++) done = Math.min(done, Atomics.load(progress, worker));
    let taken = 0;
    while (taken < this.inFlight.length && this.inFlight[taken]!.index <= done) this.inFlightUnits -= this.inFlight[taken++]!.units;
    if (taken > 0) this.inFlight.splice(0, taken);
    return this.inFlightUnits;
  }

  /**
   * Undefined while the workers hold at most `keyedSourceCredit` units not yet taken; else a Promise that
   * settles once they do (or the epoch was discarded, or the node disposed): the source waits.
   */
  held(): Promise<void> | undefined {
    if (this.outstanding() <= this.credit) return undefined;
    this.holds++;
    return this.whenTaken();
  }

  private async whenTaken(): Promise<void> {
    const progress = this.progress!;
    while (!this.disposed && this.outstanding() > this.credit) {
      // The slowest worker's word; the timeout covers a worker that ends or an epoch discarded.
      let slowest = 0;
      for (let worker = 1; worker < progress.length; worker++) if (Atomics.load(progress, worker) < Atomics.load(progress, slowest)) slowest = worker;
      const waited = waitAsync(progress, slowest, Atomics.load(progress, slowest), 50);
      if (waited.async) await waited.value;
    }
  }

  setHolding(on: boolean): void {
    this.holding = on;
  }

  /** Encodes each change of input `slot` into its owner's buffer. */
  private route(slot: number, changes: ChangeBatch): void {
    const exchange = this.exchanges[slot]!;
    const map = this.vnodeMap;
    const key = exchange.input.key;
    const hasher = exchange.hasher;
    const writers = exchange.writers;
    const counts = exchange.counts;
    const ids = exchange.input.rowIds ? changes.ids : undefined;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const owner = map[hasher.ofColumns(row, key)]!;
      if (ids === undefined) encodeChange(writers[owner]!, row, changes.signs[i]!);
      else encodeChangeWithId(writers[owner]!, row, changes.signs[i]!, ids[i]!);
      counts[owner]!++;
    }
  }

  /** Posts every worker's routed changes; the answers of an unheld batch. */
  private post(): ChangeBatch {
    const waiting: [FragmentWorker, Answer<WorkerToMain>][] = [];
    for (let owner = 0; owner < this.workers.length; owner++) {
      let inputs: (EncodedChanges | null)[] | undefined;
      const transfer: ArrayBuffer[] = [];
      for (let slot = 0; slot < this.exchanges.length; slot++) {
        const exchange = this.exchanges[slot]!;
        const count = exchange.counts[owner]!;
        if (count === 0) continue;
        const writer = exchange.writers[owner]!;
        const encoded = takeEncoded(writer, count);
        writer.reset();
        exchange.counts[owner] = 0;
        inputs ??= new Array<EncodedChanges | null>(this.exchanges.length).fill(null);
        inputs[slot] = encoded;
        transfer.push(encoded.bytes);
      }
      if (inputs === undefined) continue;
      const worker = this.workers[owner]!;
      const message: MainToWorker = { t: 'rows', holding: this.holding, inputs };
      worker.dirty = true;
      if (this.holding) {
        worker.handle.post(message, transfer);
        worker.holdingRows = true;
      } else {
        waiting.push([worker, worker.handle.request(message, 'its output', transfer)]);
      }
    }
    return this.collect(waiting);
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.rescaleDue) this.followMembership();
    if (!this.holding) this.releaseHeld();
    this.route(slot, changes);
    if (this.holdForSafePoint()) return emptyChanges();
    return this.post();
  }

  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    if (this.rescaleDue) this.followMembership();
    if (!this.holding) this.releaseHeld();
    changesPerSlot.forEach((changes, slot) => {
      if (changes !== undefined && !isEmpty(changes)) this.route(slot, changes);
    });
    if (this.holdForSafePoint()) return emptyChanges();
    return this.post();
  }

  /**
   * A safe point made rather than waited for (executor/cluster/README.md, "Keyed shares"): a
   * source whose barriers are pipelined (a Kafka topic read behind, a generator at full speed)
   * routes each epoch's first rows before the previous epoch is durable, so the fragment is never
   * at an epoch boundary with nothing in flight and a cut for a changed membership would wait
   * until the source idles. While a cut or its seed read's start waits, the open epoch's first
   * chunk pushed while holding (its output is due at the seal anyway) stays in the exchange's
   * buffers, and so does every chunk after it, until the last epoch is durable (`durable`: the
   * safe point; the cut re-routes the held rows for its owners) or the seal comes first (posted
   * to the owners as they are; the next epoch tries again). Bounded by one epoch's rows.
   */
  private holdForSafePoint(): boolean {
    if (this.heldForSafePoint) return true;
    if (!this.holding || !this.waitsForSafePoint()) return false;
    let inFlight = false;
    for (const worker of this.workers) {
      if (worker.dirty || worker.holdingRows) return false;
      if (worker.awaitingDurable.length > 0) inFlight = true;
    }
    if (!inFlight) return false;
    this.heldForSafePoint = true;
    this.safePointHolds++;
    return true;
  }

  /** A cut for a changed membership, or its seed read's start, waits for a safe point (followMembership's condition before its check of the workers). */
  waitsForSafePoint(): boolean {
    const owners = this.owners;
    if (owners === undefined || this.disposed) return false;
    const generation = owners.generation();
    if (generation === this.ownersGeneration) return false;
    const reading = this.reading;
    return reading === undefined || reading.generation !== generation || (reading.readMs > 0 && reading.staged);
  }

  /** The held rows go to the owners running now, to be answered at the seal. */
  private releaseHeld(): void {
    if (!this.heldForSafePoint) return;
    this.heldForSafePoint = false;
    const holding = this.holding;
    this.holding = true;
    try {
      this.post();
    } finally {
      this.holding = holding;
    }
  }

  /** The held rows out of the exchange's buffers, decoded, before a cut restarts them for new owners (`routeHeld` after). */
  private takeHeld(): (ChangeBatch | undefined)[] | undefined {
    if (!this.heldForSafePoint) return undefined;
    return this.exchanges.map((exchange) => {
      let changes: ChangeBatch | undefined;
      exchange.writers.forEach((writer, owner) => {
        const count = exchange.counts[owner]!;
        if (count === 0) return;
        const decoded = decodeChanges(takeEncoded(writer, count), exchange.input.rowIds);
        if (changes === undefined) changes = decoded;
        else appendChanges(changes, decoded);
      });
      return changes;
    });
  }

  /** The held rows routed for the owners the cut started and posted to them. */
  private routeHeld(held: readonly (ChangeBatch | undefined)[] | undefined): void {
    if (held === undefined) return;
    held.forEach((changes, slot) => {
      if (changes !== undefined) this.route(slot, changes);
    });
    this.releaseHeld();
  }

  seal(): ChangeBatch {
    // The last epoch is not durable yet and this one ends: its held rows go to the owners as they are.
    this.releaseHeld();
    const waiting: [FragmentWorker, Answer<WorkerToMain>][] = [];
    // Workers that exchange rows among themselves seal together: each waits for every peer's `end`.
    const all = this.generating && this.workers.some((worker) => worker.holdingRows);
    for (const worker of this.workers) {
      if (!worker.holdingRows && !all) continue;
      worker.holdingRows = false;
      waiting.push([worker, worker.handle.request({ t: 'seal' }, 'its output at the seal')]);
    }
    return this.collect(waiting);
  }

  private collect(waiting: readonly [FragmentWorker, Answer<WorkerToMain>][]): ChangeBatch {
    if (waiting.length === 0) return emptyChanges();
    let out: ChangeBatch | undefined;
    const answers = waitAll(waiting, (worker, answer): Output => expect(worker.handle.wait(answer), 'output'));
    for (const answer of answers) {
      for (const message of answer.errors) this.context.recordError(new SqlError(SqlState.dataException, message));
      if (answer.changes.count === 0) continue;
      const changes = decodeChanges(answer.changes);
      if (out === undefined) out = changes;
      else appendChanges(out, changes);
    }
    return out ?? emptyChanges();
  }

  discard(): void {
    // The workers drop the aborted epoch's ranges (counted done as they abort): no credit waits for them.
    this.heldForSafePoint = false;
    this.inFlight.length = 0;
    this.inFlightUnits = 0;
    for (const exchange of this.exchanges) {
      exchange.counts.fill(0);
      for (const writer of exchange.writers) writer.reset();
    }
    for (const worker of this.workers) {
      worker.handle.post({ t: 'abort' });
      worker.dirty = false;
      worker.holdingRows = false;
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.handBackTimer !== undefined) clearTimeout(this.handBackTimer);
    this.abandonRead();
    this.onDispose(this);
  }

  /**
   * Asks the workers that received changes for their writes of the open epoch, sealed as `epoch`:
   * the main store appends them to its batch when they come, and goes on meanwhile.
   */
  contribute(epoch: Epoch): PendingWrites | undefined {
    const asked: [WorkerHandle<MainToWorker, WorkerToMain>, Answer<WorkerToMain>][] = [];
    for (const worker of this.workers) {
      if (!worker.dirty) continue;
      worker.dirty = false;
      asked.push([worker.handle, worker.handle.request({ t: 'commit', epoch: epoch.toString() }, `its batch of epoch ${epoch}`)]);
      // Before the answers: a failure of one fails the epoch every asked worker sealed.
      worker.awaitingDurable.push(epoch);
    }
    const writes = workerWrites(asked, (message) => {
      const handed: Batch = expect(message, 'batch');
      return new Uint8Array(handed.bytes, 0, handed.length);
    });
    const read = this.reading?.read;
    if (writes === undefined || read === undefined) return writes;
    // A seed read is under way: the epoch's writes go after the seeds it reads (keyed-seed.ts).
    let kept = false;
    const keep = (batches: readonly Uint8Array[]): readonly Uint8Array[] => {
      if (!kept) read.keep(batches, epoch);
      kept = true;
      // Keys kept after the read passed them are looked up at E in slices, not at the cut.
      const reading = this.reading;
      if (reading?.read === read && read.done && !read.settled && reading.timer === undefined) reading.timer = setImmediate(() => this.settleStep());
      return batches;
    };
    return { wait: () => keep(writes.wait()), whenReady: async () => keep(await writes.whenReady()) };
  }

  durable(epoch: Epoch): void {
    for (const worker of this.workers) {
      while (worker.awaitingDurable.length > 0 && worker.awaitingDurable[0]! <= epoch) {
        worker.awaitingDurable.shift();
        worker.handle.post({ t: 'durable' });
      }
    }
    // An epoch boundary: the owners follow the membership here once nothing is in flight.
    if (this.owners !== undefined) this.followMembership();
    // Rows held for the safe point go on once it passed (a cut, a seed read started) or is no longer wanted.
    if (this.heldForSafePoint && !this.waitsForSafePoint()) this.releaseHeld();
  }

  failed(error: unknown): void {
    // Writes kept for the seeds may be of the failed epochs: the read starts over.
    if (this.reading !== undefined) {
      this.abandonRead();
      this.rescaleDue = true;
    }
    const message = error instanceof Error ? error.message : String(error);
    for (const worker of this.workers) {
      if (worker.awaitingDurable.length === 0) continue;
      worker.awaitingDurable.length = 0;
      worker.handle.post({ t: 'failed', message });
    }
  }

  async close(): Promise<void> {
    this.abandonRead();
    await Promise.all([...this.workers.map((worker) => worker.close()), ...this.retiring]);
  }
}

/** Every worker's answer; the first failure is thrown after all have answered (no answer is left unread). */
function waitAll<T>(asked: readonly [FragmentWorker, Answer<WorkerToMain>][], take: (worker: FragmentWorker, answer: Answer<WorkerToMain>) => T): T[] {
  const answers: T[] = [];
  let failure: unknown;
  for (const [worker, answer] of asked) {
    try {
      answers.push(take(worker, answer));
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
  return answers;
}
