// The leader's side of remote shares (`--remote-shares on`; docs/design.md section 7): which nodes
// get a share of each source fragment (every other node whose etcd record has a share address, as
// the leader last read the records: a fragment follows them between chunks), the data of the thread that
// speaks to each (remote-share-worker.ts), and the units each node generated for this leader
// (oxbow_catalog.nodes' share_units).

import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compiledWorkerScript } from '../batch/worker-script.js';
import { keyedByVnode, type KeyedSeed, type KeyedSeedRead } from '../stream/parallel/keyed-seed.js';
import type { KeyedSeedStaging, KeyedTables, RemoteShareSource, RemoteShareTarget } from '../stream/parallel/source-fragment.js';
import type { GainedVnodes } from '../stream/parallel/protocol.js';
import type { Epoch } from '../../sql/epoch.js';
import type { ManifestPart } from '../../storage/checkpoint/manifest.js';
import { StoreStaging, SeedStage, SeedStaging } from './keyed-share-stage.js';
import { gainedRanges, ownStoreRanges } from './remote-share-link.js';
import { askNodeParts } from './share-store-checkpoint.js';

/**
 * Where a joining node's keyed share's store comes from: the checkpoint it follows, else SST files
 * the leader exports out of its database, else the seed the leader reads (`checkpoint`, the
 * default); the files, else the read (`files`); the read always (`read`).
 */
export type KeyedSeedFrom = 'checkpoint' | 'files' | 'read';

/** How long a cut waits for the checkpoint it asked for before it reads every seed instead. */
const CHECKPOINT_WITHIN_MS = 60_000;

/** What remote-share-worker.ts gets besides a source worker's data. */
export interface RemoteShareData {
  /** The node's share address (host:port) and id. */
  readonly address: string;
  readonly node: string;
  /** The cluster's node-to-node key (hex). */
  readonly key: string;
  /** BigInt64Array over it: [0] units the node generated and handed over, [1] 1 once the share runs on the leader. */
  readonly stats: SharedArrayBuffer;
  /** The source fragments' worker script, run on the leader when the node fails. */
  readonly fallbackScript: string;
  /** The deadline of the handshake and of each epoch's batch. */
  readonly timeoutMs: number;
}

/** What keyed-share-worker.ts gets besides a fragment worker's data. */
export interface KeyedShareData extends RemoteShareData {
  readonly kind: 'keyed';
  /** The share's vnodes' committed entries of the fragment's state tables and their records (packed), which the node's store starts from; with `staged`, what goes after the seed sent ahead. */
  readonly seed: Uint8Array;
  /** The node's name for the seed sent to it ahead of the cut (keyed-share-stage.ts), whose store the share takes. */
  readonly staged?: string;
  /** When the share started (Date.now(): before its seed's read when the fragment is built, at the cut after it when the owners are cut again): [2] of the stats is the time from then to the node's first batch. */
  readonly startedAt: number;
  /** The fragment's state tables whose keys carry their vnode, ascending (none: a view older than plan version 11): the node's checkpoint parts name them. */
  readonly vnodeTables?: readonly number[];
  /** This share's name in the node's checkpoint parts (random, for the share's life). */
  readonly shareId: string;
  /**
   * The node keeps the share's state writes (every state table keyed by vnode, OXBOW_KEYED_NODE_STATE):
   * the leader's database gets none of them; the relay keeps them until a checkpoint holds the
   * node's part, and writes them (over the part) into the leader's database when the share comes back.
   */
  readonly nodeState?: boolean;
}

/** One keyed share's figures, for oxbow_catalog.nodes. */
interface KeyedShareStats {
  /** [0] rows of the epochs the node handed over, [1] 1 once the share runs on the leader, [2] ms from the share's start to the node's first batch (0 until then), [3] bytes of its state writes kept until a checkpoint holds its node's part (node state), [4] 1 once it kept one (its node then holds state the leader's database lacks). */
  readonly counters: BigInt64Array;
  /** Rows and bytes it was seeded with: at its start, and for the vnodes it gained at cuts that kept it. */
  seedRows: number;
  seedBytes: number;
  /** Closed at a re-cut of its fragment's owners (its seed no longer counts). */
  retired: boolean;
  /** The share's id when its node keeps its state (OXBOW_KEYED_NODE_STATE). */
  readonly nodeState?: string;
}

export interface SharePeer {
  readonly nodeId: string;
  readonly shareAddress: string;
}

export class RemoteShares implements RemoteShareSource {
  private readonly stats = new Map<string, BigInt64Array[]>();
  /** Per node, the figures of its keyed shares. */
  private readonly keyedStats = new Map<string, KeyedShareStats[]>();
  /** The peers' keys as last read, and how many times they changed. */
  private seen = '';
  private changes = 0;
  /** Called when the peers change (keyed fragments cut their owners again at a safe point). */
  private readonly listeners = new Set<() => void>();
  private notified = 0;

  /**
   * Kafka source fragments get shares whose nodes fetch the offset ranges the leader fixes
   * (README.md, "Kafka partitions fetched by the nodes"): the nodes' shares only
   * (OXBOW_KAFKA_NODE_FETCH=nodes, the default) or in turn with the leader's threads (`all`);
   * `off` (each checked at start by bin/cli.ts): the leader's Kafka worker reads every partition.
   */
  fetchesKafka(): 'all' | 'nodes' | undefined {
    const mode = (process.env['OXBOW_KAFKA_NODE_FETCH'] ?? 'nodes').trim().toLowerCase();
    return mode === 'off' ? undefined : mode === 'all' ? 'all' : 'nodes';
  }

  /** A checkpoint at or past an epoch, once complete and recorded (the leader's engine sets it: useCheckpoints). */
  private checkpointAfter: ((epoch: Epoch) => Promise<Epoch>) | undefined;

  constructor(
    private readonly peers: () => readonly SharePeer[],
    private readonly key: () => string | undefined,
    private readonly timeoutMs: number,
    private readonly seedFrom: KeyedSeedFrom = 'checkpoint',
    /** Where the leader writes the SST files of the stores it sends (stageKeyedFiles), emptied now; none: it sends none. */
    private readonly scratch?: string,
    /** A keyed share of a fragment whose state tables are all keyed by vnode leaves its state writes on its node (keyed-share-worker.ts, OXBOW_KEYED_NODE_STATE). */
    private readonly nodeState = false,
  ) {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }

  /** Exports made (each one's directory under `scratch`). */
  private exports = 0;

  /** The engine's checkpoints (executor/engine/create-engine.ts): `after(epoch)` asks for one now and resolves to the epoch of the first complete one at or past `epoch`. */
  useCheckpoints(after: (epoch: Epoch) => Promise<Epoch>): void {
    this.checkpointAfter = after;
    // Keyed fragments built before (a promoted leader's, whose shares wait for the nodes' checkpoints) cut their owners now.
    for (const listener of this.listeners) listener();
  }

  /** Whether the nodes listed now are asked to make their keyed shares' stores from their checkpoints (a fragment built with state defers its shares to a cut: ParallelRuntime.build). */
  seedsFromCheckpoints(): boolean {
    return this.seedFrom !== 'read' && this.key() !== undefined && this.peers().length > 0;
  }

  /** A share's key: the node and its share address (a node that starts again listens on another port). */
  private static keyOf(peer: SharePeer): string {
    return `${peer.nodeId}@${peer.shareAddress}`;
  }

  generation(): number {
    const seen = this.peers().map(RemoteShares.keyOf).join(' ');
    if (seen !== this.seen) {
      this.seen = seen;
      this.changes++;
    }
    return this.changes;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The cluster read the nodes again: the listeners hear of a change. */
  changed(): void {
    const generation = this.generation();
    if (generation === this.notified) return;
    this.notified = generation;
    for (const listener of this.listeners) listener();
  }

  keys(): ReadonlySet<string> {
    return this.key() === undefined ? new Set() : new Set(this.peers().map(RemoteShares.keyOf));
  }

  keyedNodes(): readonly string[] {
    return this.key() === undefined ? [] : this.peers().map((peer) => peer.nodeId);
  }

  /** One target per peer not in `skip`, for a source fragment being built or following the membership. */
  targets(fallbackScript: URL, skip: ReadonlySet<string> = new Set()): RemoteShareTarget[] {
    const key = this.key();
    if (key === undefined) return [];
    const peers = this.peers().filter((peer) => !skip.has(RemoteShares.keyOf(peer)));
    if (peers.length === 0) return [];
    const script = compiledWorkerScript(import.meta.url, './remote-share-worker.js');
    return peers.map((peer) => {
      const stats = new SharedArrayBuffer(16);
      const counters = new BigInt64Array(stats);
      let list = this.stats.get(peer.nodeId);
      if (list === undefined) this.stats.set(peer.nodeId, (list = []));
      list.push(counters);
      const data: RemoteShareData = { address: peer.shareAddress, node: peer.nodeId, key, stats, fallbackScript: fallbackScript.href, timeoutMs: this.timeoutMs };
      return { node: peer.nodeId, script, data, key: RemoteShares.keyOf(peer), failed: () => Atomics.load(counters, 1) !== 0n };
    });
  }

  /**
   * One target per peer for a keyed fragment being built, or whose owners are cut again because
   * the peers changed (keyed-share-worker.ts; parallel-fragment.ts' followMembership): the share
   * stays until the next cut; a failed one runs on this node until then.
   */
  keyedTargets(fallbackScript: URL, seeds: (shares: number) => readonly KeyedSeed[], staging?: KeyedSeedStaging, keep?: ReadonlySet<string>, tables?: KeyedTables): RemoteShareTarget[] {
    const key = this.key();
    const peers = key === undefined ? [] : this.peers();
    const staged = staging instanceof SeedStaging ? staging : undefined;
    const vnodeTables = tables?.keyed ?? [];
    const nodeState = this.nodeState && tables !== undefined && tables.all && vnodeTables.length > 0;
    if (key === undefined || peers.length === 0) {
      staging?.close();
      return [];
    }
    const script = compiledWorkerScript(import.meta.url, './keyed-share-worker.js');
    const startedAt = Date.now();
    // Peer i owns the vnodes of the owner after the threads' i-th: seed i is its.
    const seeded = seeds(peers.length);
    // A share whose store a checkpoint made has no seed read: it must open on that store.
    seeded.forEach((seed, index) => {
      if (keep?.has(RemoteShares.keyOf(peers[index]!)) === true) return;
      const stage = staged !== undefined && staged.keys[index] === RemoteShares.keyOf(peers[index]!) ? staged.stages[index] : undefined;
      if (seed.checkpoint !== undefined && (stage?.state !== 'staged' || stage.epoch !== seed.checkpoint)) throw new Error(`node ${peers[index]!.nodeId}'s store made from checkpoint ${seed.checkpoint} is gone`);
    });
    // A share the cut keeps running gets no target (its seed, empty, is not sent).
    const started = peers.flatMap((peer, index) => (keep?.has(RemoteShares.keyOf(peer)) === true ? [] : [index]));
    return started.map((index) => {
      const peer = peers[index]!;
      const seed = seeded[index]!;
      // A seed sent ahead to this very node (the same run) is opened with what goes after it; any other goes whole.
      const stage = staged !== undefined && staged.keys[index] === RemoteShares.keyOf(peer) ? staged.stages[index] : undefined;
      const ahead = stage?.state === 'staged' && stage.id !== undefined ? stage.id : undefined;
      if (ahead !== undefined) stage!.handOff();
      else stage?.close();
      const bytes = seed.base === undefined || ahead !== undefined ? seed.bytes : Buffer.concat([seed.base, seed.bytes]);
      const stats = new SharedArrayBuffer(40);
      const shareId = randomBytes(8).toString('hex');
      const counters = new BigInt64Array(stats);
      let list = this.keyedStats.get(peer.nodeId);
      if (list === undefined) this.keyedStats.set(peer.nodeId, (list = []));
      // A store of SST files the leader sent counts their bytes too (what crossed for it).
      const entry: KeyedShareStats = { counters, seedRows: seed.rows, seedBytes: (seed.base?.length ?? 0) + seed.bytes.length + (stage?.ofFiles === true && ahead !== undefined ? stage.bytes : 0), retired: false, ...(nodeState ? { nodeState: shareId } : {}) };
      list.push(entry);
      const data: KeyedShareData = { kind: 'keyed', address: peer.shareAddress, node: peer.nodeId, key, stats, fallbackScript: fallbackScript.href, timeoutMs: this.timeoutMs, seed: bytes, startedAt, ...(ahead === undefined ? {} : { staged: ahead }), ...(vnodeTables.length === 0 ? {} : { vnodeTables }), shareId, ...(nodeState ? { nodeState: true } : {}) };
      const failed = (): boolean => Atomics.load(counters, 1) !== 0n;
      const retire = (): void => {
        entry.retired = true;
      };
      const added = (rows: number, bytes: number): void => {
        entry.seedRows += rows;
        entry.seedBytes += bytes;
      };
      return { node: peer.nodeId, script, data, key: RemoteShares.keyOf(peer), failed, retire, added };
    });
  }

  /**
   * Sends each node listed now its seed as of the read's start ahead of the cut (keyed-share-stage.ts),
   * in the order of keyedTargets' shares; a node whose store `ahead` made from a checkpoint keeps that one.
   */
  stageKeyedSeeds(bases: readonly Uint8Array[], ahead?: KeyedSeedStaging, keep?: ReadonlySet<string>): KeyedSeedStaging {
    const key = this.key();
    const peers = key === undefined ? [] : this.peers();
    if (peers.length !== bases.length) throw new Error(`${peers.length} nodes take shares now, not the ${bases.length} whose seeds were read`);
    const keys = peers.map(RemoteShares.keyOf);
    const made = ahead instanceof StoreStaging ? ahead : undefined;
    const checkpoints = made?.checkpoints();
    return new SeedStaging(
      peers.map((peer, index) =>
        keep?.has(keys[index]!) === true ? undefined : checkpoints?.[index] !== undefined && made!.keys[index] === keys[index] ? made!.stages[index]! : new SeedStage(peer.nodeId, peer.shareAddress, key!, bases[index]!, this.timeoutMs),
      ),
      keys,
      made?.notes() ?? [],
    );
  }

  /** Has each node listed now make its share's store from the checkpoint it follows, at or past one taken at or after `after` (keyed-share-stage.ts' StoreStaging). */
  stageKeyedCheckpoint(after: Epoch, tables?: readonly number[], keep?: ReadonlySet<string>, gains?: ReadonlyMap<string, GainedVnodes>, owns?: ReadonlyMap<string, GainedVnodes>): KeyedSeedStaging | undefined {
    const key = this.key();
    const peers = key === undefined ? [] : this.peers();
    if (this.seedFrom !== 'checkpoint' || this.checkpointAfter === undefined || peers.length === 0) return undefined;
    return new StoreStaging(
      peers.map((peer) => {
        const gain = gains?.get(RemoteShares.keyOf(peer));
        const own = owns?.get(RemoteShares.keyOf(peer));
        return { node: peer.nodeId, address: peer.shareAddress, keep: keep?.has(RemoteShares.keyOf(peer)) === true, ...(gain === undefined ? {} : { gain }), ...(own === undefined ? {} : { own }) };
      }),
      peers.map(RemoteShares.keyOf),
      key!,
      this.checkpointAfter(after),
      this.timeoutMs,
      Math.max(CHECKPOINT_WITHIN_MS, 6 * this.timeoutMs),
      tables,
    );
  }

  /**
   * After the stores made from checkpoints (`ahead`, when asked): each node listed now whose share
   * the cut starts (its key in `owns`, every table keyed by vnode) and whose store no checkpoint
   * made gets one of SST files `read` exports out of this database at its start (the share's own
   * vnodes, the fragment's other state `tables` whole, the records: `ownStoreRanges`), under this
   * node's scratch directory, sent over a link of its own (keyed-share-stage.ts' SeedStage); a kept
   * share that gains vnodes (its key in `gains`) gets their ranges so (`gainedRanges`), for its
   * `add-store` at the cut. The
   * staging (`ahead`, or a new one) then counts those stores as made at the read's epoch; `settled`
   * once every such store is made or failed. Undefined when no share gets one (OXBOW_KEYED_SEED_FROM=read,
   * no node, an older view's tables).
   */
  stageKeyedFiles(read: KeyedSeedRead, ahead: KeyedSeedStaging | undefined, tables: readonly number[], keep?: ReadonlySet<string>, owns?: ReadonlyMap<string, GainedVnodes>, gains?: ReadonlyMap<string, GainedVnodes>): { staging: KeyedSeedStaging; settled: Promise<void> } | undefined {
    const key = this.key();
    const peers = key === undefined ? [] : this.peers();
    if (this.seedFrom === 'read' || this.scratch === undefined || peers.length === 0) return undefined;
    const keys = peers.map(RemoteShares.keyOf);
    const made = ahead instanceof StoreStaging && String(ahead.keys) === String(keys) ? ahead : undefined;
    if (ahead !== undefined && made === undefined) return undefined;
    const checkpoints = made?.checkpoints();
    const wanted = peers.flatMap((peer, index) => {
      const own = owns?.get(keys[index]!);
      const gain = own === undefined ? gains?.get(keys[index]!) : undefined;
      const vnodes = own ?? gain;
      if (keep?.has(keys[index]!) === true || vnodes === undefined || checkpoints?.[index] !== undefined) return [];
      return vnodes.tables.every((table) => keyedByVnode(table, vnodes.stateVnodes)) ? [{ peer, index, own, gain }] : [];
    });
    if (wanted.length === 0) return undefined;
    const staging =
      made ??
      new StoreStaging(
        peers.map((peer) => ({ node: peer.nodeId, address: peer.shareAddress, keep: keep?.has(RemoteShares.keyOf(peer)) === true })),
        keys,
        key!,
        undefined,
        this.timeoutMs,
        0,
      );
    const scratch = this.scratch;
    const settled = staging.useFiles(
      wanted.map(({ peer, index, own, gain }) => ({
        index,
        stage: (async () => {
          const directory = join(scratch, String(++this.exports));
          rmSync(directory, { recursive: true, force: true });
          mkdirSync(directory, { recursive: true });
          try {
            const files = await read.exportRanges(directory, own !== undefined ? ownStoreRanges(tables, own) : gainedRanges(gain!));
            if (files.length === 0) throw new Error('the export wrote no file');
            return new SeedStage(peer.nodeId, peer.shareAddress, key!, { files, directory, epoch: read.epoch, tables, ...(own === undefined ? { gain: gain! } : { own }) }, this.timeoutMs);
          } catch (error) {
            rmSync(directory, { recursive: true, force: true });
            throw error;
          }
        })(),
      })),
    );
    return { staging, settled };
  }

  /** Rows of keyed fragments node `nodeId` processed for this leader (epochs it handed over), or null when it got no keyed share. */
  rowsOf(nodeId: string): bigint | null {
    const list = this.keyedStats.get(nodeId);
    if (list === undefined) return null;
    let rows = 0n;
    for (const stats of list) rows += Atomics.load(stats.counters, 0);
    return rows;
  }

  /**
   * Bytes of node `nodeId`'s state writes this leader's relays keep in memory until a checkpoint holds
   * the node's parts (OXBOW_KEYED_NODE_STATE), or null when it got no keyed share.
   */
  keptBytesOf(nodeId: string): bigint | null {
    const list = this.keyedStats.get(nodeId);
    if (list === undefined) return null;
    let bytes = 0n;
    for (const stats of list) if (!stats.retired) bytes += Atomics.load(stats.counters, 3);
    return bytes;
  }

  /**
   * What node `nodeId`'s keyed shares were seeded with (state rows and bytes, summed) and the
   * longest time from a share's seed read to the node's first batch of it (null while one has not
   * answered yet), of its shares running now (a re-cut closed the others), or null when it got no keyed share.
   */
  seedOf(nodeId: string): { rows: bigint; bytes: bigint; readyMs: bigint | null } | null {
    const list = this.keyedStats.get(nodeId);
    if (list === undefined) return null;
    let rows = 0n;
    let bytes = 0n;
    let readyMs: bigint | null = 0n;
    let live = 0;
    for (const stats of list) {
      // A share closed at a re-cut: the node's shares now are what it was seeded with.
      if (stats.retired) continue;
      live++;
      rows += BigInt(stats.seedRows);
      bytes += BigInt(stats.seedBytes);
      const ready = Atomics.load(stats.counters, 2);
      if (ready === 0n || readyMs === null) readyMs = null;
      else if (ready > readyMs) readyMs = ready;
    }
    return { rows, bytes, readyMs: live === 0 ? null : readyMs };
  }

  /**
   * The nodes' parts of the checkpoint at `epoch` (share-store-checkpoint.ts): every node listed now
   * that runs a keyed share of this leader's (not closed at a cut, not failed over to this node) is
   * asked on a link of its own, all at once. A node that gives none fails the checkpoint.
   *
   * Node state (`held`: the shares whose state only their nodes held as the cut began): the
   * checkpoint needs a part of each share that held it then or after the cut, and takes no other
   * part of a share that names one. Such a part is what a promotion and a store made from the
   * checkpoint put in place of the share's vnodes, so a part of a share whose state is here (never
   * kept there, or back on this node) would bring back its node's older state. A share whose state
   * came back here while the cut was made fails the checkpoint: the cut may hold epochs run here
   * since, which its node's part lacks.
   */
  async checkpointParts(epoch: Epoch, held?: ReadonlyMap<string, string>): Promise<ManifestPart[]> {
    const key = this.key();
    const needed = neededParts(held ?? new Map(), this.nodeHeld());
    if (key === undefined) {
      if (needed.size > 0) throw new Error('this node has no key for its keyed shares, whose nodes hold state no checkpoint has');
      return [];
    }
    const peers = this.peers();
    const asked = peers.filter((peer) => this.keyedStats.get(peer.nodeId)?.some((stats) => !stats.retired && Atomics.load(stats.counters, 1) === 0n) === true);
    for (const node of new Set(needed.values())) {
      if (!asked.some((peer) => peer.nodeId === node)) throw new Error(`node ${node} holds keyed share state no checkpoint has, and it is not listed`);
    }
    const parts = (await Promise.all(asked.map((peer) => askNodeParts(peer.nodeId, peer.shareAddress, key, epoch, this.timeoutMs)))).flat();
    return recordedParts(parts, needed, this.nodeState);
  }

  /**
   * The keyed shares whose state writes only their node holds now (OXBOW_KEYED_NODE_STATE: a batch
   * handed over since the share started as the leader seeded it, not closed at a cut, not yet back
   * on this node with its state written here), by share id, with their node.
   */
  nodeHeld(): Map<string, string> {
    const held = new Map<string, string>();
    for (const [node, list] of this.keyedStats) {
      for (const stats of list) if (stats.nodeState !== undefined && !stats.retired && Atomics.load(stats.counters, 1) === 0n && Atomics.load(stats.counters, 4) !== 0n) held.set(stats.nodeState, node);
    }
    return held;
  }

  /** Units node `nodeId` generated for this leader, or null when it got no share. */
  unitsOf(nodeId: string): bigint | null {
    const list = this.stats.get(nodeId);
    if (list === undefined) return null;
    let units = 0n;
    for (const stats of list) units += Atomics.load(stats, 0);
    return units;
  }
}

/**
 * The shares a checkpoint needs a part of (node state): those whose state only their nodes held as
 * its cut began (`atCut`) or hold now that the cut is made (`now`), by share id, with their node.
 * A share in the first and not the second came back to this node while the cut was made, perhaps
 * with epochs run here since its node's last batch in the cut, which its part would lack: the
 * checkpoint fails.
 */
export function neededParts(atCut: ReadonlyMap<string, string>, now: ReadonlyMap<string, string>): Map<string, string> {
  for (const [share, node] of atCut) {
    if (!now.has(share)) throw new Error(`the state of keyed share ${share} came back from node ${node} to this node while the checkpoint was cut`);
  }
  return new Map([...atCut, ...now]);
}

/**
 * The parts a checkpoint records of those its nodes gave: one of each `needed` share (none given
 * fails it). With node state, no other part: the others' state is in the leader's files, and a
 * node's part would bring back older state where a promotion or a store made from the checkpoint
 * takes it (a share that came back here, whose node has not closed its store yet). Without it
 * (OXBOW_KEYED_NODE_CHECKPOINTS alone) every part, each holding what the leader's files hold.
 */
export function recordedParts(parts: readonly ManifestPart[], needed: ReadonlyMap<string, string>, nodeState: boolean): ManifestPart[] {
  for (const [share, node] of needed) {
    if (!parts.some((part) => part.share === share)) throw new Error(`node ${node} gave no part of keyed share ${share}, whose state only it holds`);
  }
  return nodeState ? parts.filter((part) => part.share !== undefined && needed.has(part.share)) : [...parts];
}
