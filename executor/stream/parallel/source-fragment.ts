// Source fragments (PARALLEL.md, "Source fragments"): at --parallelism N > 1, a view whose whole plan
// is a replayed generator source's scan, filters and projections and a blind-insert materialize
// (planner/stream/parallel-source.ts) runs in N worker threads. The source manager still decides
// which units each split advances by in an epoch and commits the splits' positions, but the main
// thread generates no rows for them: it hands the ranges to the view's fragment (`take`), which
// cuts each range into N contiguous shares, one per worker; each worker generates its share's rows
// and runs the view's ordinary dataflow over them into its own store's open epoch
// (executor/connectors/source-fragment-worker.ts). A Kafka source that stores no rows runs the same
// way with its partitions' batches instead of ranges (`takeRows`): each partition's to worker
// `partition mod N`, which decodes it (PARALLEL.md, "Kafka sources"); the messages it rejects come
// back with its epoch batch for the source's errors (`onRejects`). On a cluster's leader whose
// fragment has shares on other nodes, its source hands out offset ranges instead, which the
// owners fetch from the broker themselves (`takesFetchRanges`; executor/cluster/README.md, "Kafka
// partitions fetched by the nodes"); the messages each owner fetched come back with its epoch
// batch for the source's message counters (`onFetched`).
// At the commit the fragments are commit participants: each asked worker seals its epoch (while the
// main thread goes on) and hands the batch over, appended to the main store's WriteBatch beside the
// positions, so rows and offsets commit in one atomic write (exactly once). Nothing is kept per worker: a restart at another N
// cuts the ranges from the committed positions in N' shares.
//
// Rows that do reach the main thread (a backfill, or the source's rows when some other dataflow
// needs them: StreamManager.rangeReaders) go through the ordinary chain built on the main thread
// under this node, which materializes them there (`local`): blind inserts keyed by row id, so which
// thread stores a row does not matter.
//
// A direct sink AS such a query (a blackhole: connectors/sink-target.ts, `deliversDirectly`) runs
// the same way: its workers store no rows and write no log, they count their materialize's output
// per epoch and hand the counts over with their batches, which join the sink's DirectChanges
// (change-log.ts) under the epoch they were sealed as. No row crosses threads for it. A sink whose
// target needs its change log (PostgreSQL, Kafka) stays on the main thread.

import type { Epoch } from '../../../sql/epoch.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import { fragmentSource, isKafkaSource, sourceFragmentText, sourceFragmentWorkers, sourceSerialReason, type MaterializePlan } from '../../../planner/stream/parallel-source.js';
import { streamInputs, type StreamPlan } from '../../../planner/stream/stream-plan.js';
import { toTransfer } from '../../../planner/stream/plan-transfer.js';
import type { CommitParticipant, PendingWrites } from '../../../storage/mvcc-state-store.js';
import type { RocksStateStore } from '../../../storage/rocks-state-store.js';
import type { StateTable } from '../../../storage/state-table.js';
import type { GainedVnodes } from './protocol.js';
import { emptyChanges, type ChangeBatch } from '../change-batch.js';
import { DirectChanges } from '../change-log.js';
import { StreamMaterializeNode } from '../materialize.js';
import type { PackedPartitionRows, SourceFragmentHost, SourceFragmentReader, SplitRange, StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import type { FetchedMessages, MainToSourceWorker, SourceWorkerData, SourceWorkerToMain, WorkerReject } from './source-protocol.js';
import { allWrites, workerWrites, WorkerHandle, type Answer } from './worker-handle.js';
import { splitShares } from './vnode.js';
import type { KeyedSeed, KeyedSeedRead } from './keyed-seed.js';
import { workerLimits, type ParallelFragmentNode } from './parallel-fragment.js';
import type { WorkerMemory, WorkerMemoryHost, WorkerStatus } from './worker-memory.js';
import type { WorkerPool } from '../../batch/worker-pool.js';

type Batch = Extract<SourceWorkerToMain, { t: 'batch' }>;

/** How long a fragment waits before it gives a node whose share failed, and that is still listed, a share again. */
const REMOTE_RETRY_MS = 30_000;

/**
 * A share that runs elsewhere than in a worker thread of this process (another node of a cluster:
 * executor/cluster/remote-shares.ts): the script of a thread that answers the workers' protocol for
 * it, and what that thread gets besides a worker's data.
 */
/** A keyed fragment's state tables whose keys carry their vnode (ascending ids), and whether every one of its state tables does. */
export interface KeyedTables {
  readonly keyed: readonly number[];
  readonly all: boolean;
}

export interface RemoteShareTarget {
  readonly node: string;
  readonly script: URL;
  readonly data: object;
  /** The run of the node it speaks to (its share address): a node that comes back is another run. */
  readonly key?: string;
  /** True once the node failed and the share runs in this process instead. */
  readonly failed?: () => boolean;
  /** A keyed share closed at a re-cut of its fragment's owners: its node handed its vnodes back. */
  readonly retire?: () => void;
  /** A keyed share kept at a cut took vnodes it never held, with a seed of that many rows and bytes (its node's share_seed_rows). */
  readonly added?: (rows: number, bytes: number) => void;
}

/**
 * The nodes that take shares, as the cluster's membership changes (executor/cluster/remote-shares.ts):
 * a fragment looks at it before each chunk's ranges are cut, adds a share for a node that joined and
 * retires the share of a node that left or failed.
 */
export interface RemoteShareSource {
  /** Changes whenever the set of nodes that take shares does. */
  generation(): number;
  /** The keys of the nodes that take shares now. */
  keys(): ReadonlySet<string>;
  /** The node ids of the keyed shares `keyedTargets` would make now, in its order. */
  keyedNodes?(): readonly string[];
  /** A target for each node that takes shares and whose key is not in `skip`. */
  targets(script: URL, skip: ReadonlySet<string>): RemoteShareTarget[];
  /**
   * A target per node that takes shares, for a keyed fragment being built (parallel-fragment.ts):
   * `script` is the fragment's worker script (run on this node when the share fails over), `seeds`
   * gives, for that many shares (owners after the threads, in order), each one's seed: its vnodes'
   * entries of the fragment's state tables and their records (keyed-seed.ts), which the node's
   * store starts from. `keep`: the keys of nodes whose shares a cut keeps running (parallel-fragment.ts):
   * they get no target, no seed sent and no store made (the same for the two below). `tables`: the
   * fragment's state tables keyed by vnode, which a node's checkpoint parts name.
   */
  keyedTargets?(script: URL, seeds: (shares: number) => readonly KeyedSeed[], staging?: KeyedSeedStaging, keep?: ReadonlySet<string>, tables?: KeyedTables): RemoteShareTarget[];
  /**
   * Sends each node listed now its share's seed as of the read's start (`bases`, in the order of
   * the shares) ahead of the cut, while the old owners run; `keyedTargets` given the staging then
   * opens each staged share with only what goes after it (the seed goes whole to any other).
   */
  stageKeyedSeeds?(bases: readonly Uint8Array[], ahead?: KeyedSeedStaging, keep?: ReadonlySet<string>): KeyedSeedStaging;
  /**
   * Before any seed is read: asks for a checkpoint whose epoch is at least `after` (the fragment's
   * safe point) and has each node listed now make its share's store from the checkpoint it follows,
   * at or past that one (its `checkpoints` then say which did; `stageKeyedSeeds` given it sends the
   * read seeds of the others only). Undefined when this leader takes no checkpoints for it.
   * `tables`: the fragment's state tables, the only ones each node's store keeps.
   */
  stageKeyedCheckpoint?(after: Epoch, tables?: readonly number[], keep?: ReadonlySet<string>, gains?: ReadonlyMap<string, GainedVnodes>, owns?: ReadonlyMap<string, GainedVnodes>): KeyedSeedStaging | undefined;
  /**
   * After stageKeyedCheckpoint (`ahead`, when it asked): each node listed now whose share a cut
   * starts (its key in `owns`, every table keyed by vnode) and whose store no checkpoint made gets a
   * store of SST files `read` exports at its start (its `checkpoints` then count those at the read's
   * epoch), and each kept share that gains vnodes (`gains`) their ranges as such files; `settled`
   * once each is made or failed. Undefined when none gets one.
   */
  stageKeyedFiles?(read: KeyedSeedRead, ahead: KeyedSeedStaging | undefined, tables: readonly number[], keep?: ReadonlySet<string>, owns?: ReadonlyMap<string, GainedVnodes>, gains?: ReadonlyMap<string, GainedVnodes>): { staging: KeyedSeedStaging; settled: Promise<void> } | undefined;
  /** The engine's checkpoints, for stageKeyedCheckpoint: `after(epoch)` asks for one now and resolves to the epoch of the first complete one at or past `epoch`. */
  useCheckpoints?(after: (epoch: Epoch) => Promise<Epoch>): void;
  /** Whether the nodes listed now make their keyed shares' stores from their checkpoints (stageKeyedCheckpoint), when asked. */
  seedsFromCheckpoints?(): boolean;
  /** Calls `listener` whenever the nodes that take shares change (as the cluster reads them); returns its removal. */
  onChange?(listener: () => void): () => void;
  /**
   * Whether a Kafka source fragment gets shares on the nodes, which fetch the offset ranges the
   * leader fixes (executor/cluster/README.md, "Kafka partitions fetched by the nodes"): the nodes
   * alone (`nodes`) or in turn with this process's threads (`all`); undefined: no shares.
   */
  fetchesKafka?(): 'all' | 'nodes' | undefined;
}

/** Seeds sent to their nodes ahead of a cut (executor/cluster/keyed-share-stage.ts). */
export interface KeyedSeedStaging {
  /** Resolves once every seed is written on its node or failed to be (each link has a deadline). */
  readonly settled: Promise<void>;
  /** How many were sent ahead and why any was not, for the cut's log line. */
  describe(): string;
  /** Closes every link not handed to a share: the nodes remove those seeds. */
  close(): void;
  /** Per share, the epoch of the checkpoint its node's store was made from (or of the SST files it was made of: no seed read for it), or undefined. */
  checkpoints?(): readonly (Epoch | undefined)[];
  /** The bytes of the SST files the leader exported for share `share`'s store (or its gained vnodes), counted in its `share_seed_bytes`; 0 when it got none (its store is from its node's checkpoint, or read). */
  filesBytes?(share: number): number;
  /** A share's store made from a checkpoint is gone before the cut (its link closed): no seed of it was read, so the cut must not come. */
  lost?(): boolean;
  /** The node's name for share `share`'s store made from a checkpoint, handed to the kept share that copies the vnodes it gains from it (the link stays until the node takes it), or undefined. */
  handOffStore?(share: number): string | undefined;
}

/** What SourceFragments gives a source fragment to start its workers with. */
interface SourceWorkerSettings {
  readonly script: URL;
  readonly token: number;
  readonly path: string;
  readonly parallelism: number;
  readonly retentionMs: number;
  readonly rowCacheBytes: number;
  readonly cacheShare: number;
  readonly oldGenerationBytes: number;
  readonly onMemory: (memory: WorkerMemory, previous: WorkerMemory | undefined) => void;
  /** Shares on other nodes, after the worker threads'. */
  readonly remotes?: RemoteShareSource;
  /** A Kafka source fragment whose owners fetch offset ranges while it has shares on other nodes (`takesFetchRanges`): the threads and the shares in turn, or the shares only. */
  readonly kafkaRanges?: 'all' | 'nodes';
  /** A direct sink's changes (change-log.ts): the workers count theirs and hand the counts over with each batch. */
  readonly direct?: DirectChanges;
  /** The process's worker threads the workers run on (../../batch/worker-pool.ts; without it each starts a thread of its own). */
  readonly pool?: WorkerPool;
}

/** One worker thread of a source fragment: its handle and what the main thread tracks of it. */
class SourceWorker {
  readonly handle: WorkerHandle<MainToSourceWorker, SourceWorkerToMain>;
  /** Ranges posted since the last commit (the worker has writes to hand over). */
  dirty = false;
  /** Epochs whose batch the worker was asked for and that are not yet durable, oldest first. */
  readonly awaitingDurable: Epoch[] = [];
  /** Units posted, view rows written (committed or not). */
  units = 0;
  rows = 0;
  /** The node a remote share speaks to; `retiring` once it takes no more ranges (closed when nothing of it is in flight). */
  remote: RemoteShareTarget | undefined;
  retiring = false;

  /** A worker thread of this process with its heap bound and memory reports, or a remote share's relay thread (`limits` undefined). */
  constructor(script: URL, data: Omit<SourceWorkerData, 'signal'>, limits?: { oldGenerationBytes: number; onMemory: (memory: WorkerMemory, previous: WorkerMemory | undefined) => void; pool?: WorkerPool | undefined }, what = "a source fragment's worker") {
    this.handle = limits === undefined
      ? new WorkerHandle(script, data, what)
      : new WorkerHandle(script, data, what, [], workerLimits(limits.oldGenerationBytes), limits.onMemory, limits.pool);
  }

  /** Milliseconds the main thread spent blocked on this worker's answers (EXPLAIN ANALYZE). */
  get waitedMs(): number {
    return this.handle.waitedMs;
  }

  post(message: MainToSourceWorker): void {
    this.handle.post(message);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The main thread's node of a source fragment: the view's root, its workers and its local chain's materialize. */
export class SourceFragmentNode implements StreamNode, SourceFragmentReader {
  readonly workers: SourceWorker[] = [];
  private readonly local: StreamMaterializeNode;
  private readonly table: StateTable;
  private readonly sourceText: string;
  /** The worker the next range's first share goes to (shares of short ranges rotate over the workers). */
  private next = 0;
  /** Epochs in flight whose batch held worker rows of the view (the main table's latest-read state is refreshed once durable). */
  private readonly written: Epoch[] = [];
  private disposed = false;
  /** The membership generation the remote shares follow, and the keys of nodes whose share failed with when they may be tried again. */
  private remoteGeneration = -1;
  private readonly failedRemotes = new Map<string, number>();
  private readonly sourceId: number;
  private readonly plan: MaterializePlan;
  /**
   * Offsets of Kafka ranges fetched by this process's threads (a remote share's failover worker
   * included) and sent to other nodes, and those sent to a node that failed before answering them,
   * fetched again here (EXPLAIN ANALYZE): here + nodes - again is every offset handed out.
   */
  private rangeOffsetsHere = 0;
  private rangeOffsetsNodes = 0;
  private rangeOffsetsAgain = 0;
  /** Units, rows and waits of the workers closed (a node's share retired), which EXPLAIN ANALYZE still counts. */
  private closedUnits = 0;
  private closedRows = 0;
  private closedWaitedMs = 0;

  constructor(
    plan: MaterializePlan,
    private readonly context: StreamContext,
    private readonly settings: SourceWorkerSettings,
    private readonly onDispose: (node: SourceFragmentNode) => void,
    private readonly onRejects?: (sourceId: number, rejects: readonly WorkerReject[]) => void,
    private readonly onFetched?: (sourceId: number, fetched: FetchedMessages) => void,
  ) {
    // The main store keeps the view table's window and garbage collection, and stores the rows
    // that come through the main thread.
    this.local = new StreamMaterializeNode(plan, context);
    this.plan = plan;
    this.table = context.stateTable(plan.stateTables[0]!);
    const source = fragmentSource(plan);
    this.sourceId = source?.id ?? -1;
    this.sourceText = source === undefined ? 'StreamSourceFragment ?' : sourceFragmentText(source, settings.parallelism);
    for (let worker = 0; worker < settings.parallelism; worker++) {
      this.workers.push(
        new SourceWorker(settings.script, {
          token: settings.token,
          path: settings.path,
          plan: toTransfer(plan),
          viewId: context.viewId,
          worker,
          retentionMs: settings.retentionMs,
          viewRetentionMs: context.viewRetentionMs,
          rowCacheBytes: settings.rowCacheBytes,
          cacheShare: settings.cacheShare,
          tuning: context.tuning,
          ...(settings.direct === undefined ? {} : { directSink: true }),
        }, { oldGenerationBytes: settings.oldGenerationBytes, onMemory: settings.onMemory, pool: settings.pool }),
      );
    }
    this.followMembership();
  }

  /** Shares on other nodes that take ranges. */
  private get remotes(): number {
    let count = 0;
    for (const worker of this.workers) if (worker.remote !== undefined && !worker.retiring) count++;
    return count;
  }

  /**
   * Between two chunks: a share for each node that joined (or came back), and the share of each node
   * that left or failed retired (it takes no more ranges; closed once nothing of it is in flight, so
   * every range handed out is answered once).
   */
  private followMembership(): void {
    const source = this.settings.remotes;
    if (source === undefined || this.disposed) return;
    const generation = source.generation();
    let failed = false;
    for (const worker of this.workers) {
      const remote = worker.remote;
      if (remote === undefined || worker.retiring || remote.failed?.() !== true) continue;
      this.failedRemotes.set(remote.key ?? remote.node, Date.now() + REMOTE_RETRY_MS);
      failed = true;
    }
    // A node given up (no answer within the deadline: a busy node is not a dead one) is tried again
    // after a while if it is still listed; one that left and comes back is another run, tried at once.
    const now = Date.now();
    let retry = false;
    for (const [key, at] of this.failedRemotes) {
      if (at > now) continue;
      this.failedRemotes.delete(key);
      retry = true;
    }
    if (generation === this.remoteGeneration && !failed && !retry) return;
    this.remoteGeneration = generation;
    const keys = source.keys();
    for (const key of this.failedRemotes.keys()) if (!keys.has(key)) this.failedRemotes.delete(key);
    const skip = new Set(this.failedRemotes.keys());
    for (const worker of this.workers) {
      const remote = worker.remote;
      if (remote === undefined || worker.retiring) continue;
      const key = remote.key ?? remote.node;
      if (!keys.has(key) || this.failedRemotes.has(key)) worker.retiring = true;
      else skip.add(key);
    }
    for (const remote of source.targets(this.settings.script, skip)) {
      const { settings, context } = this;
      const data = { token: settings.token, path: settings.path, plan: toTransfer(this.plan), viewId: context.viewId, worker: this.workers.length, retentionMs: settings.retentionMs, viewRetentionMs: context.viewRetentionMs, rowCacheBytes: settings.rowCacheBytes, cacheShare: settings.cacheShare, tuning: context.tuning };
      const worker = new SourceWorker(remote.script, { ...data, ...remote.data }, undefined, `the share of node ${remote.node}`);
      worker.remote = remote;
      this.workers.push(worker);
    }
    this.closeRetired();
  }

  /** Retired shares with no ranges of an open epoch and no epoch in flight close. */
  private closeRetired(): void {
    for (let index = this.workers.length - 1; index >= 0; index--) {
      const worker = this.workers[index]!;
      if (!worker.retiring || worker.dirty || worker.awaitingDurable.length > 0) continue;
      this.workers.splice(index, 1);
      this.closedUnits += worker.units;
      this.closedRows += worker.rows;
      this.closedWaitedMs += worker.waitedMs;
      void worker.close();
    }
  }

  get viewId(): number {
    return this.context.viewId;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  /** Rows through the main thread (the chain under this node): stored here. */
  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    return this.local.apply(slot, changes);
  }

  describe(): string {
    // Every worker the fragment had, the shares of nodes that left or failed included.
    const waited = this.workers.reduce((sum, worker) => sum + worker.waitedMs, this.closedWaitedMs);
    const units = this.workers.reduce((sum, worker) => sum + worker.units, this.closedUnits);
    const rows = this.workers.reduce((sum, worker) => sum + worker.rows, this.closedRows);
    const ranges = this.rangeOffsetsHere + this.rangeOffsetsNodes > 0
      ? `, Kafka offsets fetched ${this.rangeOffsetsHere} by this node's threads and ${this.rangeOffsetsNodes} by other nodes, ${this.rangeOffsetsAgain} of those again here after a node failed`
      : '';
    return `${this.sourceText}${this.remotes > 0 ? ` and ${this.remotes} other node${this.remotes === 1 ? '' : 's'}` : ''}: ${units} units, ${rows} rows${ranges}, waited ${waited.toFixed(3)} ms`;
  }

  /** Each worker's memory and waits (oxbow_catalog.memory, oxbow_catalog.dataflow_workers). */
  workerStatus(): WorkerStatus[] {
    return this.workers.map((worker, index) => ({
      kind: 'source fragment',
      worker: index,
      threadId: worker.handle.threadId,
      memory: worker.handle.memory,
      batches: worker.handle.reports,
      rowCacheMaxBytes: this.settings.rowCacheBytes,
      groupCacheMaxBytes: 0,
      oldGenerationBytes: this.settings.oldGenerationBytes,
      waitedMs: worker.waitedMs,
    }));
  }

  /** The row caches' share of their maxima for every worker (the memory manager's budget). */
  setCacheShare(share: number): void {
    for (const worker of this.workers) worker.post({ t: 'budget', share });
  }

  takesRanges(): boolean {
    // A secondary index on the view is kept by the main thread's materialize only.
    return !this.disposed && this.context.viewIndexes().length === 0;
  }

  take(ranges: readonly SplitRange[]): void {
    this.followMembership();
    const taking = this.workers.filter((worker) => !worker.retiring);
    const { shares, next } = splitShares(ranges, taking.length, this.next % taking.length);
    this.next = next;
    shares.forEach((share, index) => {
      if (share.length === 0) return;
      const worker = taking[index]!;
      for (let at = 0; at < share.length; at += 3) worker.units += share[at + 2]! - share[at + 1]!;
      worker.post({ t: 'ranges', ranges: share });
      worker.dirty = true;
    });
  }

  /**
   * Whether the Kafka source's offset ranges come here for the owners to fetch: while a share on
   * another node takes them (with none, the leader's Kafka worker reads the topic as before).
   */
  takesFetchRanges(): boolean {
    if (this.disposed || this.settings.kafkaRanges === undefined) return false;
    this.followMembership();
    return this.remotes > 0;
  }

  /**
   * A Kafka source fragment's decoded batches: each partition's to worker `partition mod N` (a fixed
   * rule; nothing is kept per worker, so a restart at another N needs none), its buffer transferred.
   * Offset ranges (`range`) go to the owners in turn, the nodes' shares (or the threads then the
   * shares: `all`), so a topic of fewer partitions than owners still reaches every node over the
   * chunks; each owner fetches its ranges.
   */
  takeRows(batches: readonly PackedPartitionRows[]): void {
    let taking: SourceWorker[] | undefined;
    let given: Map<SourceWorker, number[]> | undefined;
    for (const { partition, count, rows, raw, range } of batches) {
      if (range !== undefined) {
        if (taking === undefined) {
          this.followMembership();
          taking = this.workers.filter((worker) => !worker.retiring && (this.settings.kafkaRanges !== 'nodes' || worker.remote !== undefined));
          // No share left (a node failed since the mode was chosen): the threads fetch.
          if (taking.length === 0) taking = this.workers.filter((worker) => !worker.retiring);
          given = new Map();
        }
        const worker = taking[this.next++ % taking.length]!;
        let list = given!.get(worker);
        if (list === undefined) given!.set(worker, (list = []));
        list.push(partition, Number(range.from), Number(range.to));
        const offsets = Number(range.to - range.from);
        worker.units += offsets;
        if (worker.remote === undefined) this.rangeOffsetsHere += offsets;
        else this.rangeOffsetsNodes += offsets;
        continue;
      }
      const worker = this.workers[partition % this.settings.parallelism]!;
      worker.units += count;
      if (raw !== undefined) worker.handle.post({ t: 'raw', partition, raw }, [raw.offsets.buffer, raw.timestamps.buffer, raw.keyLengths.buffer, raw.valueLengths.buffer, raw.bytes.buffer] as ArrayBuffer[]);
      else if (rows !== undefined) worker.handle.post({ t: 'rows', partition, count, rows }, [rows.buffer as ArrayBuffer]);
      worker.dirty = true;
    }
    if (given === undefined) return;
    this.next %= taking!.length;
    for (const [worker, ranges] of given) {
      worker.post({ t: 'ranges', ranges });
      worker.dirty = true;
    }
  }

  discard(): void {
    for (const worker of this.workers) {
      worker.post({ t: 'abort' });
      worker.dirty = false;
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose(this);
  }

  /**
   * Asks the workers that received ranges for their writes of the open epoch, sealed as `epoch`: the
   * main store appends them to its batch when they come, and goes on meanwhile.
   */
  contribute(epoch: Epoch): PendingWrites | undefined {
    const asked: [WorkerHandle<MainToSourceWorker, SourceWorkerToMain>, Answer<SourceWorkerToMain>][] = [];
    const byHandle = new Map<WorkerHandle<MainToSourceWorker, SourceWorkerToMain>, SourceWorker>();
    for (const worker of this.workers) {
      if (!worker.dirty) continue;
      worker.dirty = false;
      asked.push([worker.handle, worker.handle.request({ t: 'commit', epoch: epoch.toString() }, `its batch of epoch ${epoch}`)]);
      byHandle.set(worker.handle, worker);
      // Before the answers: a failure of one fails the epoch every asked worker sealed.
      worker.awaitingDurable.push(epoch);
    }
    if (asked.length === 0) return undefined;
    this.written.push(epoch);
    return workerWrites(asked, (message, handle) => {
      if (message.t !== 'batch') throw new SqlError(SqlState.internalError, `a source fragment's worker answered ${message.t}, not batch`);
      const handed: Batch = message;
      byHandle.get(handle)!.rows += handed.rows;
      // A node's share that failed over: what its failover worker fetched was fetched here, and
      // what the node had been sent of it, unanswered, was fetched twice.
      if (handed.failedOver !== undefined && this.settings.kafkaRanges !== undefined) {
        const { units, again } = handed.failedOver;
        this.rangeOffsetsHere += units;
        this.rangeOffsetsNodes -= units - again;
        this.rangeOffsetsAgain += again;
      }
      if (handed.changes !== undefined) this.settings.direct?.counted(epoch, handed.changes.inserts, handed.changes.deletes);
      for (const error of handed.errors) this.context.recordError(new SqlError(SqlState.dataException, error));
      if (handed.rejects !== undefined && handed.rejects.length > 0) this.onRejects?.(this.sourceId, handed.rejects);
      if (handed.fetched !== undefined && handed.fetched.length > 0) this.onFetched?.(this.sourceId, handed.fetched);
      return new Uint8Array(handed.bytes, 0, handed.length);
    });
  }

  durable(epoch: Epoch): void {
    for (const worker of this.workers) {
      while (worker.awaitingDurable.length > 0 && worker.awaitingDurable[0]! <= epoch) {
        worker.awaitingDurable.shift();
        worker.post({ t: 'durable' });
      }
    }
    let refreshed = false;
    while (this.written.length > 0 && this.written[0]! <= epoch) {
      this.written.shift();
      refreshed = true;
    }
    // Rows the main store did not write are committed: its latest reads of the table must look again.
    if (refreshed) this.table.committedElsewhere?.();
    this.closeRetired();
  }

  failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.written.length = 0;
    for (const worker of this.workers) {
      if (worker.awaitingDurable.length === 0) continue;
      worker.awaitingDurable.length = 0;
      worker.post({ t: 'failed', message });
    }
    this.closeRetired();
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}

/** A direct sink's DirectChanges when its dataflow can count its changes in the workers (it keeps no rows and has no paused log), else undefined. */
function directSinkChanges(context: StreamContext): DirectChanges | undefined {
  const output = context.sinkOutput;
  if (output?.kind !== 'direct' || output.rowsKept || output.paused === true) return undefined;
  return context.directChanges instanceof DirectChanges ? context.directChanges : undefined;
}

/** A plan's scans of relation `relationId` (a StreamShared leaf reads its subtree's output). */
function scansOf(plan: StreamPlan, relationId: number): number {
  let count = plan.kind === 'StreamTableScan' && plan.relation.id === relationId ? 1 : 0;
  for (const input of streamInputs(plan)) count += scansOf(input, relationId);
  return count;
}

/**
 * A view's keyed fragments whose workers generate some of their inputs (parallel-fragment.ts,
 * PARALLEL.md "Sources in keyed fragments"): the source manager's ranges of such a source go to
 * them, as long as every scan of the source in the view is such an input (else the view needs the
 * source's rows on the main thread, which then come through the exchanges as usual).
 */
class KeyedSourceReader implements SourceFragmentReader {
  readonly nodes = new Set<ParallelFragmentNode>();

  constructor(readonly root: StreamPlan) {}

  takesRanges(relationId?: number): boolean {
    if (relationId === undefined) return false;
    let generated = 0;
    for (const node of this.nodes) for (const source of node.generated) if (source !== null && source.relationId === relationId) generated++;
    return generated > 0 && generated === scansOf(this.root, relationId);
  }

  take(ranges: readonly SplitRange[], relationId?: number): void {
    if (relationId === undefined) return;
    for (const node of this.nodes) node.take(relationId, ranges);
  }

  held(): Promise<void> | undefined {
    const waits: Promise<void>[] = [];
    for (const node of this.nodes) {
      const wait = node.held();
      if (wait !== undefined) waits.push(wait);
    }
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }
}

/** Every source fragment of the process: builds them, finds them by view, and joins their writes to each epoch's commit. */
export class SourceFragments implements CommitParticipant, SourceFragmentHost {
  private readonly nodes = new Map<number, SourceFragmentNode>();
  /** Views whose keyed fragments generate some inputs in their workers. */
  private readonly keyed = new Map<number, KeyedSourceReader>();
  private token: number | undefined;
  private closed = false;
  /**
   * The worker script (executor/connectors/source-fragment-worker.ts: generating a source's rows
   * is the connectors' business), set by the engine; without it no view runs as a source fragment.
   */
  workerScript: (() => URL) | undefined;
  /** Shares on other nodes for each fragment built (a cluster's leader under --remote-shares on). */
  remoteShares: RemoteShareSource | undefined;
  /** Where messages a Kafka source fragment's workers could not decode go (the source's errors), set by the engine. */
  onRejects: ((sourceId: number, rejects: readonly WorkerReject[]) => void) | undefined;
  /**
   * Where the messages of the Kafka offset ranges the owners fetched go, per partition (the
   * source's message counters: the source hands out ranges uncounted), set by the engine.
   */
  onFetched: ((sourceId: number, fetched: FetchedMessages) => void) | undefined;

  constructor(
    private readonly store: RocksStateStore,
    readonly parallelism: number,
    /** The workers' memory plan and feedback (parallel-runtime.ts). */
    private readonly memory: WorkerMemoryHost,
    /** The process's worker threads (../../batch/worker-pool.ts). */
    private readonly pool?: WorkerPool,
    /** Cores oxbow may use (--cores): a view that stores its rows takes min(N, cores - 1) workers (`sourceFragmentWorkers`). */
    readonly cores: number = Number.POSITIVE_INFINITY,
  ) {
    store.addParticipant(this);
  }

  /** The node of a view that runs as a source fragment, else undefined (the caller builds it as usual). */
  build(plan: StreamPlan, context: StreamContext): StreamNode | undefined {
    const script = this.workerScript;
    if (script === undefined || this.closed || this.parallelism <= 1 || plan.kind !== 'StreamMaterialize' || sourceSerialReason(plan) !== undefined) return undefined;
    // A sink's changes go to its change log from the main thread's materialize, unless its target
    // takes them directly (a blackhole) and it keeps no rows: then the workers count them.
    const direct = directSinkChanges(context);
    if (context.sinkOutput !== undefined && direct === undefined) return undefined;
    // The planner's choice, which EXPLAIN prints: a view that stores its rows takes at most
    // cores - 1 workers, and runs on the main thread (as at parallelism 1) below 2.
    const workers = sourceFragmentWorkers(this.parallelism, this.cores, direct === undefined);
    if (workers < 2) return undefined;
    this.token ??= this.store.database.share();
    const workerScript = script();
    // Other nodes generate shares of a generator source's ranges. A Kafka source fragment gets
    // them while the nodes fetch their own offset ranges (`fetchesKafka`: executor/cluster/README.md,
    // "Kafka partitions fetched by the nodes"); otherwise its partition batches are fetched here and
    // go to this process's workers only (sending them to a node costs this process about what
    // decoding and storing them does). A direct sink's counts come from this process's workers only.
    const source = fragmentSource(plan);
    const kafkaRanges = source !== undefined && isKafkaSource(source) && direct === undefined ? this.remoteShares?.fetchesKafka?.() : undefined;
    const remotes = source !== undefined && (!isKafkaSource(source) || kafkaRanges !== undefined) && direct === undefined ? this.remoteShares : undefined;
    const node = new SourceFragmentNode(
      plan,
      context,
      {
        script: workerScript,
        ...(remotes === undefined ? {} : { remotes }),
        ...(kafkaRanges === undefined ? {} : { kafkaRanges }),
        ...(direct === undefined ? {} : { direct }),
        token: this.token,
        path: this.store.database.path,
        parallelism: workers,
        retentionMs: this.store.options.retentionMs,
        rowCacheBytes: Math.max(1 << 20, Math.floor(this.store.options.memoryLimitBytes / (16 * workers))),
        cacheShare: this.memory.cacheShare,
        oldGenerationBytes: this.memory.oldGenerationBytes,
        onMemory: (report, previous) => this.memory.report(report, previous),
        ...(this.pool === undefined ? {} : { pool: this.pool }),
      },
      (disposed) => {
        if (this.nodes.get(disposed.viewId) === disposed) this.nodes.delete(disposed.viewId);
        void disposed.close();
      },
      (sourceId, rejects) => this.onRejects?.(sourceId, rejects),
      (sourceId, fetched) => this.onFetched?.(sourceId, fetched),
    );
    this.nodes.set(context.viewId, node);
    return node;
  }

  fragment(viewId: number): SourceFragmentNode | undefined {
    return this.nodes.get(viewId);
  }

  reader(viewId: number): SourceFragmentReader | undefined {
    return this.nodes.get(viewId) ?? this.keyed.get(viewId);
  }

  /** A keyed fragment of view `viewId` (whose plan is `root`) generating some inputs in its workers. */
  addKeyed(viewId: number, root: StreamPlan, node: ParallelFragmentNode): void {
    let reader = this.keyed.get(viewId);
    // A view's dataflow built again (a restart of its dataflow) has a new plan: a new reader.
    if (reader === undefined || reader.root !== root) this.keyed.set(viewId, (reader = new KeyedSourceReader(root)));
    reader.nodes.add(node);
  }

  removeKeyed(viewId: number, node: ParallelFragmentNode): void {
    const reader = this.keyed.get(viewId);
    if (reader === undefined || !reader.nodes.delete(node)) return;
    if (reader.nodes.size === 0) this.keyed.delete(viewId);
  }

  get workers(): number {
    let count = 0;
    for (const node of this.nodes.values()) count += node.workers.length;
    return count;
  }

  /** Every source fragment's workers as they report themselves. */
  workerStatus(): WorkerStatus[] {
    const out: WorkerStatus[] = [];
    for (const node of this.nodes.values()) out.push(...node.workerStatus());
    return out;
  }

  setCacheShare(share: number): void {
    for (const node of this.nodes.values()) node.setCacheShare(share);
  }

  contribute(epoch: Epoch): PendingWrites | undefined {
    const parts: PendingWrites[] = [];
    for (const node of this.nodes.values()) {
      const writes = node.contribute(epoch);
      if (writes !== undefined) parts.push(writes);
    }
    return allWrites(parts);
  }

  durable(epoch: Epoch): void {
    for (const node of this.nodes.values()) node.durable(epoch);
  }

  failed(error: unknown): void {
    for (const node of this.nodes.values()) node.failed(error);
  }

  async close(): Promise<void> {
    this.closed = true;
    const nodes = [...this.nodes.values()];
    this.nodes.clear();
    await Promise.all(nodes.map((node) => node.close()));
    if (this.token !== undefined) this.store.database.unshare(this.token);
    this.store.removeParticipant(this);
  }
}
