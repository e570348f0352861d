// The process's parallel dataflows (PARALLEL.md): at `parallelism` N > 1, each fragment of a view's
// plan that can run in parallel (planner/stream/parallel.ts `fragmentAt`: keyed aggregates and
// joins with the linear operators around them) runs as N worker threads over the state store's
// shared RocksDB, and this runtime is the store's commit participant for all of them: the workers'
// writes of each epoch join the main thread's batch, so one atomic write commits every thread's
// epoch. Any other plan node runs on the main thread as at parallelism 1; which nodes run in
// parallel is the planner's decision, so EXPLAIN shows it.

import type { Epoch } from '../../../sql/epoch.js';
import type { RocksStateStore } from '../../../storage/rocks-state-store.js';
import { tableLowerBound, tableUpperBound } from '../../../storage/mvcc-key.js';
import type { CommitParticipant, PendingWrites } from '../../../storage/mvcc-state-store.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { insertsOnly } from '../../../planner/stream/unique-key.js';
import type { StreamContext } from '../stream-context.js';
import type { StreamNode } from '../stream-node.js';
import { fragmentWorkerScript, ParallelFragmentNode, workerLimits, type GeneratedSource, type KeyedOwners } from './parallel-fragment.js';
import { WorkerPool } from '../../batch/worker-pool.js';
import { allWrites } from './worker-handle.js';
import { distributionText, fragmentAt, inputNeedsRowIds, workerPlan, type Fragment } from '../../../planner/stream/parallel.js';
import { toTransfer } from '../../../planner/stream/plan-transfer.js';
import { keyedSourceScan, workerGeneratedSources } from '../../../planner/stream/parallel-source.js';
import { SourceFragments, type KeyedSeedStaging, type RemoteShareTarget } from './source-fragment.js';
import { keyedByVnode, keyedSeeds, KeyedSeedRead, type KeyedSeed } from './keyed-seed.js';
import type { VnodeMap, VnodeMapRecord, VnodeMapSink } from './vnode-map.js';
import type { WorkerMemory, WorkerMemoryHost, WorkerMemorySource, WorkerStatus } from './worker-memory.js';
import type { GainedVnodes } from './protocol.js';

/**
 * Fragments running in workers at most, per process: each takes N threads of the pool (a V8 isolate
 * each, busy while the fragment runs), so a catalog of many join views (TPC-H's) would hold hundreds of them; beyond
 * this a fragment runs on the main thread, as at parallelism 1 (same state, same results), and
 * EXPLAIN ANALYZE shows no exchange for it.
 */
const MAX_FRAGMENTS = 16;

/** The memory plan's figures a runtime sizes its workers by (executor/engine/memory-manager.ts). */
export interface ParallelMemoryPlan {
  /** The group caches' budget of the process. */
  readonly groupCacheBytes: number;
  /** V8's bound on each worker's old generation (0: V8's default). */
  readonly workerOldGenerationBytes: number;
}

export class ParallelRuntime implements CommitParticipant, WorkerMemoryHost, WorkerMemorySource {
  private readonly nodes = new Set<ParallelFragmentNode>();
  private token: number | undefined;
  private closed = false;
  /** Removes the runtime's listener on the cluster's membership, once one is set. */
  private unlisten: (() => void) | undefined;
  /** Each view's root plan (a keyed fragment's source reader counts the view's scans of its sources). */
  private readonly roots = new WeakMap<StreamContext, StreamPlan>();
  /** Per view plan, the sources its fragments' workers generate (the planner's `workerGeneratedSources`). */
  private readonly generatedSources = new WeakMap<StreamPlan, Set<number>>();
  /** Per view, the keyed fragments built for it so far (each one's number within its view). */
  private readonly fragmentsBuilt = new WeakMap<StreamContext, number>();
  /** Where the keyed fragments' vnode maps are recorded, and the node id the threads are named by (a cluster's leader; the engine sets it). */
  vnodeSink: VnodeMapSink | undefined;
  /** Views run as source fragments (source-fragment.ts): their own commit participant. */
  readonly sourceFragments: SourceFragments;
  /** The caches' share of their maxima the memory manager set last (every worker's). */
  cacheShare = 1;
  readonly oldGenerationBytes: number;
  /** Called with each worker's memory report (the memory manager's feedback; the engine sets it). */
  onMemory: ((memory: WorkerMemory, previous: WorkerMemory | undefined) => void) | undefined;
  private readonly groupCacheBytes: number;
  /** The process's worker threads, which every fragment's workers, keyed and source, and the batch aggregates' ranges run on (../../batch/worker-pool.ts): each starts at a job that finds none idle, none with the engine. */
  readonly pool: WorkerPool;

  constructor(
    private readonly store: RocksStateStore,
    readonly parallelism: number,
    memory: ParallelMemoryPlan,
    /** Cores oxbow may use (--cores): bounds a view's source fragment (source-fragment.ts). */
    readonly cores: number = Number.POSITIVE_INFINITY,
  ) {
    this.groupCacheBytes = memory.groupCacheBytes;
    this.oldGenerationBytes = memory.workerOldGenerationBytes;
    this.pool = new WorkerPool(workerLimits(this.oldGenerationBytes), parallelism);
    store.addParticipant(this);
    this.sourceFragments = new SourceFragments(store, parallelism, this, this.pool, cores);
  }

  report(memory: WorkerMemory, previous: WorkerMemory | undefined): void {
    this.onMemory?.(memory, previous);
  }

  /** Every worker's last memory report (workers that handed nothing over yet are left out). */
  reports(): WorkerMemory[] {
    const out: WorkerMemory[] = [];
    for (const worker of this.workerStatus()) if (worker.memory !== undefined) out.push(worker.memory);
    return out;
  }

  /** Every worker of every fragment, keyed and source. */
  workerStatus(): WorkerStatus[] {
    const out: WorkerStatus[] = [];
    for (const node of this.nodes) out.push(...node.workerStatus());
    out.push(...this.sourceFragments.workerStatus());
    return out;
  }

  /** The workers' caches' budgets at most, summed over every worker running. */
  get cacheMaxBytes(): number {
    let bytes = 0;
    for (const worker of this.workerStatus()) bytes += worker.rowCacheMaxBytes + worker.groupCacheMaxBytes;
    return bytes;
  }

  setCacheShare(share: number): void {
    if (share === this.cacheShare) return;
    this.cacheShare = share;
    for (const node of this.nodes) node.setCacheShare(share);
    this.sourceFragments.setCacheShare(share);
  }

  /** The node of a plan node that roots a parallel fragment, else undefined (the caller builds it as usual). */
  build(plan: StreamPlan, context: StreamContext, shared: ReadonlySet<StreamPlan> = new Set()): StreamNode | undefined {
    // A view over a generator source run whole by the workers (source-fragment.ts).
    if (plan.kind === 'StreamMaterialize' && !this.closed) {
      const node = this.sourceFragments.build(plan, context);
      if (node !== undefined) return node;
    }
    // The first node asked for a view is its root (the dataflow places it first).
    if (!this.roots.has(context)) this.roots.set(context, plan);
    if (this.closed || this.parallelism <= 1 || this.nodes.size >= MAX_FRAGMENTS) return undefined;
    const fragment = fragmentAt(plan, shared);
    if (fragment === undefined) return undefined;
    this.token ??= this.store.database.share();
    // Inputs the workers generate (a replayed generator source through filters and projections),
    // when the connectors gave the script that can (PARALLEL.md, "Sources in keyed fragments").
    const sourceScript = this.sourceFragments.workerScript;
    const root = this.roots.get(context)!;
    let inWorkers = this.generatedSources.get(root);
    if (inWorkers === undefined) this.generatedSources.set(root, (inWorkers = workerGeneratedSources(root, context.tuning.keyedSourceWorkers === true, shared)));
    const generated = fragment.inputs.map((input): GeneratedSource | null => {
      const scan = sourceScript === undefined ? undefined : keyedSourceScan(input.plan);
      if (scan === undefined || !inWorkers.has(scan.relation.id)) return null;
      return { relationId: scan.relation.id, input: { chain: toTransfer(input.plan), key: input.key, types: input.key.map((column) => input.plan.columns[column]!.type) } };
    });
    const generating = generated.some((source) => source !== null);
    // Under --remote-shares on a keyed fragment's owners follow the membership (KeyedOwners).
    const shares = this.sourceFragments.remoteShares;
    // The vnodes flagged with the fragment's state tables and their vnode columns (protocol.ts' GainedVnodes).
    const stateTables = fragment.nodes.flatMap((node) => node.stateTables);
    const vnodesOf = (vnodes: Uint8Array): GainedVnodes => ({ vnodes, tables: stateTables, stateVnodes: fragment.stateVnodes });
    const owners: KeyedOwners | undefined =
      generating || shares?.keyedTargets === undefined
        ? undefined
        : {
            generation: () => shares.generation(),
            nodes: () => (shares.keys().size === 0 ? [] : (shares.keyedNodes?.() ?? [])),
            keys: () => [...shares.keys()],
            readSeeds: (map) => this.readSeeds(fragment, map),
            remotes: (seeds, staging, keep) => this.keyedRemotes(fragment, seeds, staging, keep),
            stageSeeds: (bases, ahead, keep) => shares.stageKeyedSeeds?.(bases, ahead, keep),
            stageFromCheckpoint: (after, keep, gains, owns) => {
              // A kept share's node reads the vnodes it gains out of its store, and a started share's
              // drops the vnodes it does not own from its, by the tables' vnode columns.
              const layout = (flags?: ReadonlyMap<string, Uint8Array>) => (flags === undefined ? undefined : new Map([...flags].map(([key, vnodes]) => [key, vnodesOf(vnodes)])));
              return shares.stageKeyedCheckpoint?.(
                after,
                stateTables.map((table) => table.tableId),
                keep,
                layout(gains),
                layout(owns),
              );
            },
            stageFromFiles: (read, ahead, keep, owns, gains) =>
              shares.stageKeyedFiles?.(
                read,
                ahead,
                stateTables.map((table) => table.tableId),
                keep,
                new Map([...owns].map(([key, vnodes]) => [key, vnodesOf(vnodes)])),
                new Map([...gains].map(([key, vnodes]) => [key, vnodesOf(vnodes)])),
              ),
            vnodesOf,
          };
    // A fragment built with state (a promoted leader's, from the checkpoint its nodes followed too)
    // starts on its threads and takes its shares at its first cut, where each node makes its store
    // from its checkpoint, rather than reading and sending every seed now.
    const deferred = owners !== undefined && shares?.seedsFromCheckpoints?.() === true && this.holdsState(fragment);
    const generation = deferred ? -1 : (owners?.generation() ?? 0);
    const remotes = owners === undefined || deferred ? [] : this.keyedRemotes(fragment);
    if (owners !== undefined && this.unlisten === undefined && shares?.onChange !== undefined) this.unlisten = shares.onChange(() => this.followMembership());
    const number = this.fragmentsBuilt.get(context) ?? 0;
    this.fragmentsBuilt.set(context, number + 1);
    const sink = this.vnodeSink;
    const node = new ParallelFragmentNode(
      fragment.nodes,
      toTransfer(workerPlan(fragment, fragment.inputs.map((input) => insertsOnly(input.plan)))),
      fragment.inputs.map((input) => input.plan),
      fragment.inputs.map((input, slot) => ({
        key: input.key,
        types: input.key.map((column) => input.plan.columns[column]!.type),
        rowIds: inputNeedsRowIds(fragment, slot),
        text: distributionText(input),
      })),
      context,
      {
        token: this.token,
        path: this.store.database.path,
        parallelism: this.parallelism,
        retentionMs: this.store.options.retentionMs,
        rowCacheBytes: Math.max(1 << 20, Math.floor(this.store.options.memoryLimitBytes / (2 * this.parallelism))),
        groupCacheBytes: Math.max(1 << 20, Math.floor(this.groupCacheBytes / (2 * this.parallelism))),
        cacheShare: this.cacheShare,
        oldGenerationBytes: this.oldGenerationBytes,
        onMemory: (memory, previous) => this.report(memory, previous),
        script: generating ? new URL('./keyed-source-worker.js', sourceScript!()) : fragmentWorkerScript(),
        pool: this.pool,
      },
      (disposed) => {
        this.nodes.delete(disposed);
        sink?.drop(context.viewId, number);
        this.sourceFragments.removeKeyed(context.viewId, disposed);
        void disposed.close();
      },
      generated,
      remotes,
      owners,
      generation,
      sink?.nodeId ?? null,
      number,
    );
    this.nodes.add(node);
    if (sink !== undefined) {
      node.onVnodeMap = () => sink.record(node.vnodes());
      sink.record(node.vnodes());
    }
    if (generating) this.sourceFragments.addKeyed(context.viewId, root, node);
    return node;
  }

  /**
   * The shares of a keyed fragment on other nodes (a cluster's leader under --remote-shares on),
   * each seeded with the committed entries of its vnodes' rows in the fragment's state tables and
   * their records (keyed-seed.ts): `seeds` as a read started by readSeeds made them (the owners
   * are cut again: ParallelFragmentNode.followMembership), or read at once when the fragment is
   * being built (no epoch of it in flight: a safe point).
   */
  private keyedRemotes(fragment: Fragment, seeds?: readonly KeyedSeed[], staging?: KeyedSeedStaging, keep?: ReadonlySet<string>): RemoteShareTarget[] {
    const source = this.sourceFragments.remoteShares;
    // No node to share with: no seed to read.
    if (source?.keyedTargets === undefined || source.keys().size === 0) {
      staging?.close();
      return [];
    }
    const tables = fragment.nodes.flatMap((node) => node.stateTables);
    return source.keyedTargets(fragmentWorkerScript(), (shares) => {
      if (seeds === undefined) return keyedSeeds(this.store.database, tables, fragment.stateVnodes, this.parallelism, this.parallelism + shares);
      if (seeds.length !== shares) throw new Error(`${shares} nodes take shares now, not the ${seeds.length} whose seeds were read`);
      return seeds;
    }, staging, keep, { keyed: tables.filter((table) => keyedByVnode(table, fragment.stateVnodes)).map((table) => table.tableId).sort((a, b) => a - b), all: tables.every((table) => keyedByVnode(table, fragment.stateVnodes)) });
  }

  /** Whether some state table of the fragment holds an entry (a view just created holds none). */
  private holdsState(fragment: Fragment): boolean {
    for (const node of fragment.nodes) {
      for (const table of node.stateTables) {
        const iterator = this.store.database.iterator({ lowerBound: tableLowerBound(table.tableId), upperBound: tableUpperBound(table.tableId) });
        try {
          if (iterator.nextPacked(1) !== null) return true;
        } finally {
          iterator.close();
        }
      }
    }
    return false;
  }

  /** Starts reading the seeds of a keyed fragment's shares, one per node listed now (undefined: none is). */
  private readSeeds(fragment: Fragment, map: VnodeMap): KeyedSeedRead | undefined {
    const source = this.sourceFragments.remoteShares;
    const shares = source?.keyedTargets === undefined ? 0 : source.keys().size;
    if (shares === 0) return undefined;
    const tables = fragment.nodes.flatMap((node) => node.stateTables);
    return new KeyedSeedRead(this.store.database, tables, fragment.stateVnodes, this.parallelism, this.parallelism + shares, this.store.committedEpoch, map);
  }

  /** Every keyed fragment's vnode map now (oxbow_catalog.vnodes). */
  vnodeMaps(): VnodeMapRecord[] {
    return [...this.nodes].map((node) => node.vnodes());
  }

  /** The membership changed (the cluster read the nodes again): each keyed fragment at a safe point cuts its owners again. */
  private followMembership(): void {
    if (this.closed) return;
    for (const node of this.nodes) node.followMembership();
  }

  /** A keyed fragment waits for a safe point to cut its owners (the sources then leave a gap between epochs). */
  safePointWanted(): boolean {
    for (const node of this.nodes) if (node.waitsForSafePoint()) return true;
    return false;
  }

  /** Worker threads running (every parallel fragment's). */
  get workers(): number {
    let count = 0;
    for (const node of this.nodes) count += node.workers.length;
    return count;
  }

  contribute(epoch: Epoch): PendingWrites | undefined {
    const parts: PendingWrites[] = [];
    for (const node of this.nodes) {
      const writes = node.contribute(epoch);
      if (writes !== undefined) parts.push(writes);
    }
    return allWrites(parts);
  }

  durable(epoch: Epoch): void {
    for (const node of this.nodes) node.durable(epoch);
  }

  failed(error: unknown): void {
    for (const node of this.nodes) node.failed(error);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unlisten?.();
    await this.sourceFragments.close();
    const nodes = [...this.nodes];
    this.nodes.clear();
    await Promise.all(nodes.map((node) => node.close()));
    await this.pool.close();
    if (this.token !== undefined) this.store.database.unshare(this.token);
    this.store.removeParticipant(this);
  }
}
