// One node of a cluster (--cluster etcd://...): the Engine facade the wire protocol server serves,
// whatever the node's role.
//
// A standby runs no engine: it registers under its lease, campaigns for leadership every
// `pollIntervalMs`, and follows the checkpoints as the leader records them in etcd (downloads each
// new manifest's new files into `<data-dir>/follow`, storage/checkpoint/follow.ts). Each
// followed checkpoint is linked into `<data-dir>/replicas/<epoch>` and opened by a read-only engine
// (engine/read-only.ts): a connection reads the newest one at the time it connected (SELECT, AS
// OF, catalog queries, SHOW; `SHOW oxbow_standby_epoch` names its epoch), and writes and DDL
// go to the leader: a session's first statement that writes (or begins a read-write block) opens a
// connection to the leader as the same user and the session runs there from then on
// (pgwire/forward.ts; `--standby-writes refuse`: 25006 with a hint naming the leader instead).
// The standby proves itself to the leader with the cluster's node-to-node key, kept in etcd
// (`peerVerifier`). A replaced replica closes once its last connection does.
// Before the first followed checkpoint, connections get 57P03 naming the leader's address.
//
// When the leader's lease expires (it died, or lost etcd), a standby wins the campaign and is
// promoted: it removes manifests newer than the checkpoint record in etcd (written by a leader that
// died before recording them: no commit was acknowledged from them), brings its followed files to
// that checkpoint (what landed since the last poll; a cold node downloads everything here), links
// them into `<data-dir>/state` and opens the engine over it as on any start: tables, views and
// catalog are the checkpoint's, and sources rewind to its offsets (exactly once). Then it serves.
//
// Fencing: the leader's checkpoints complete only through a transaction that requires the leader
// key to be held by its lease (ManifestGuard); a leader whose lease is lost, whose lease etcd has
// not confirmed for nearly a TTL (the watchdog), or who finds the leader key no longer its own,
// calls `onFenced` at once (the server exits; restarted, it joins as
// a standby), so two leaders never both record checkpoints and a deposed one stops committing.

import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import { SqlError, SqlState } from '../../sql/errors.js';
import { formatScramVerifier, scramVerifier } from '../../sql/scram-verifier.js';
import type { Epoch } from '../../sql/epoch.js';
import { CheckpointFollower } from '../../storage/checkpoint/follow.js';
import type { ManifestGuard } from '../../storage/checkpoint/checkpointer.js';
import { listCheckpointEpochs } from '../../storage/checkpoint/restore.js';
import { manifestKey, ManifestError, type CheckpointManifest, type ManifestPart } from '../../storage/checkpoint/manifest.js';
import { takeParts, type PartsTaken } from '../../storage/checkpoint/parts.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import { openObjectStore } from '../../storage/object-store/open-object-store.js';
import { ObjectStoreError, type ObjectStore } from '../../storage/object-store/object-store.js';
import { DEFAULT_OBJECT_STORE_TIMEOUT_MS, DEFAULT_RETRY_POLICY } from '../../storage/object-store/retry.js';
import { createEngine, openReadOnlyEngine, type EngineOptions } from '../engine/create-engine.js';
import type { OxbowEngine } from '../engine/open-engine.js';
import type { Engine, LoginRole, Session, SessionEvents, StartupParameters } from '../engine/engine.js';
import type { ClusterNodeRow } from '../system/nodes-relation.js';
import { PrometheusWriter } from '../metrics/prometheus.js';
import { EtcdCoordinator, type NodeRecord } from './etcd-coordinator.js';
import { configuredShareProtocolVersion } from './remote-share-link.js';
import { RemoteShareServer } from './remote-share-server.js';
import { CHECKPOINTED_CHANNEL, type CheckpointedParts } from './share-store-checkpoint.js';
import { RemoteShares, type KeyedSeedFrom, type SharePeer } from './remote-shares.js';
import { sourceFragmentWorkerScript } from '../connectors/source-fragment-worker-script.js';
import { fragmentWorkerScript } from '../stream/parallel/parallel-fragment.js';
import { encodeVnodeMap, type VnodeMapSink } from '../stream/parallel/vnode-map.js';

export interface ClusterOptions {
  /** etcd client endpoints, `http://host:port` (etcd-coordinator.ts parses --cluster). */
  readonly endpoints: readonly string[];
  /** The keys' prefix in etcd (etcd-coordinator.ts' DEFAULT_PREFIX when absent). */
  readonly prefix?: string;
  /** Lease TTL: a dead leader is replaced after about this long (default 5 s). */
  readonly leaseTtlSeconds?: number;
  /** A main thread that has not run for this long gives the lease up (lease-keeper.ts; default 30 s). */
  readonly stallMs?: number;
  /** Deadline of each etcd call (default 2 s). */
  readonly callTimeoutMs?: number;
  /** How often a standby campaigns and follows, and a leader checks its leadership (default 250 ms). */
  readonly pollIntervalMs?: number;
  /** A standby follows checkpoints as they land (default); false: a cold standby downloads all at promotion. */
  readonly followCheckpoints?: boolean;
  /** What a standby does with a session's writes and DDL: run them on the leader (default), or refuse them with 25006. */
  readonly standbyWrites?: 'forward' | 'refuse';
  /** How long a forwarded statement waits for a leader to reach before 57P03 (default 10 s). */
  readonly forwardTimeoutMs?: number;
  /**
   * --remote-shares on: this node runs shares of the leader's source fragments for it (a TCP server
   * on `host`, its address in the node's record), and as the leader gives shares to every other node
   * that does; `timeoutMs` bounds the handshake and each epoch's batch (default 10 s).
   */
  /**
   * `nodeCheckpoints`: the leader's checkpoints name each node's keyed share stores, which the nodes
   * cut and upload (share-store-checkpoint.ts). `nodeState` (with it): a keyed share's state writes
   * stay on its node, the leader keeping them only until a checkpoint holds the node's part.
   */
  readonly remoteShares?: { readonly host: string; readonly timeoutMs?: number; readonly drainMs?: number; readonly seedFrom?: KeyedSeedFrom; readonly nodeCheckpoints?: boolean; readonly nodeState?: boolean };
  /** This node lost leadership while leading: it must stop at once (the server exits). */
  readonly onFenced: (reason: string) => void;
  /** Role changes and errors, one line each (the server writes them to stderr). */
  readonly log: (line: string) => void;
}

const NODE_ID_FILE = 'cluster-node-id';
const REPLICAS_DIR = 'replicas';

/** A followed checkpoint a standby serves reads from. */
interface Replica {
  readonly epoch: Epoch;
  readonly dir: string;
  readonly engine: OxbowEngine;
}

/** The node's id, kept in `<data-dir>/cluster-node-id` so a restarted node keeps its name. */
function loadNodeId(dataDir: string): string {
  const path = join(dataDir, NODE_ID_FILE);
  if (existsSync(path)) {
    const text = readFileSync(path, 'utf8').trim();
    if (/^[A-Za-z0-9_.-]{1,64}$/.test(text)) return text;
  }
  mkdirSync(dataDir, { recursive: true });
  const id = `node-${randomBytes(4).toString('hex')}`;
  writeFileSync(path, id + '\n');
  return id;
}

/** How long a drained node waits for the leader to close its shares (then the leader's threads run what is left). */
const SHARE_DRAIN_MS = 5000;

export class ClusterNode implements Engine {
  readonly nodeId: string;
  private readonly coordinator: EtcdCoordinator;
  private readonly followStore: Promise<ObjectStore>;
  private readonly follower: Promise<CheckpointFollower>;
  private engine: Engine | undefined;
  private role: 'leader' | 'standby' = 'standby';
  private state = 'joining';
  private address = '';
  private leaderAddress: string | undefined;
  private checkpointEpoch: Epoch | undefined;
  private nodesCache: readonly NodeRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;
  private fenced = false;
  private lastError = '';
  private published = '';
  private promotion: Promise<void> | undefined;
  /** The keyed fragments' vnode maps written to etcd, one after another (the last write of a fragment wins). */
  private mapWrites: Promise<void> = Promise.resolve();
  private watchdog: NodeJS.Timeout | undefined;
  /** The newest followed checkpoint open for reads (a standby), and replaced ones still with connections. */
  private replica: Replica | undefined;
  private readonly retiredReplicas = new Set<Replica>();
  /** The cluster's node-to-node key (etcd-coordinator.ts' peerKey), read at join. */
  private peerKey: string | undefined;
  private readonly peerVerifiers = new Map<string, string>();
  /** --remote-shares on: this node's server of shares, and the leader's shares on the others. */
  private shareServer: RemoteShareServer | undefined;
  private shareAddress: string | undefined;
  private readonly shares: RemoteShares | undefined;
  /** The leader's checkpoints recorded with the nodes' parts, told to its keyed shares' relays (OXBOW_KEYED_NODE_STATE). */
  private checkpointed: BroadcastChannel | undefined;
  /** The share protocol version this node speaks and records (remote-share-link.ts). */
  private readonly shareProtocol = configuredShareProtocolVersion();
  /** The runs of nodes (id and share address) of another share protocol version the leader said it gives no share. */
  private readonly otherVersions = new Set<string>();

  constructor(
    private readonly engineOptions: EngineOptions,
    private readonly options: ClusterOptions,
  ) {
    this.nodeId = loadNodeId(engineOptions.dataDir);
    this.coordinator = new EtcdCoordinator({
      endpoints: options.endpoints,
      leaseTtlSeconds: options.leaseTtlSeconds ?? 5,
      callTimeoutMs: options.callTimeoutMs ?? 2000,
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      ...(options.stallMs === undefined ? {} : { stallMs: options.stallMs }),
    });
    this.coordinator.onLeaseLost = (error) => this.leaseLost(error);
    const remoteShares = options.remoteShares;
    if (remoteShares !== undefined) {
      this.shares = new RemoteShares(
        () => this.sharePeers(),
        () => this.peerKey,
        remoteShares.timeoutMs ?? 10_000,
        remoteShares.seedFrom ?? 'checkpoint',
        join(engineOptions.dataDir, 'keyed-seed-files'),
        remoteShares.nodeState === true && remoteShares.nodeCheckpoints === true,
      );
    }
    this.followStore = openObjectStore(engineOptions.checkpointUrl, {
      retry: { ...DEFAULT_RETRY_POLICY, timeoutMs: engineOptions.objectStoreTimeoutMs ?? DEFAULT_OBJECT_STORE_TIMEOUT_MS },
    });
    this.follower = this.followStore.then((store) => new CheckpointFollower(store, join(engineOptions.dataDir, 'follow')));
    // A failed open is reported where the store is used; this keeps it from being unhandled.
    this.follower.catch(() => undefined);
  }

  /**
   * Joins the cluster once the server listens at `address` (host:port): the lease, the node's
   * record and a first campaign. Rejects when etcd cannot be reached (the server does not start).
   */
  async join(address: string): Promise<void> {
    this.address = address;
    await this.followStore;
    // Replicas of an earlier run are stale: the followed files are opened again when followed.
    await rm(join(this.engineOptions.dataDir, REPLICAS_DIR), { recursive: true, force: true });
    await this.coordinator.grantLease();
    this.peerKey = await this.coordinator.peerKey();
    if (this.options.remoteShares !== undefined) {
      this.shareServer = new RemoteShareServer({
        host: this.options.remoteShares.host,
        dataDir: this.engineOptions.dataDir,
        peerKey: () => this.peerKey,
        workerScript: sourceFragmentWorkerScript,
        keyedWorkerScript: fragmentWorkerScript,
        log: this.options.log,
        // A keyed share's store from the checkpoint this standby follows (a cold one follows none: the leader sends the seed).
        checkpointSeed: async (epoch, dir, withinMs, stop, vnodes) => {
          if (this.options.followCheckpoints === false) throw new Error('this node does not follow checkpoints (a cold standby)');
          if (this.role !== 'standby') throw new Error('this node is not a standby');
          const nodeState = this.options.remoteShares?.nodeState === true;
          return (await this.follower).materializeAtLeast(epoch, dir, withinMs, () => stop() || this.closed || this.role !== 'standby', nodeState ? (manifest, materializePart) => this.takeNodeState(manifest, dir, materializePart, vnodes) : undefined);
        },
        ...(this.options.remoteShares.nodeCheckpoints === true ? { storeCheckpoints: { node: this.nodeId, objectStore: () => this.followStore } } : {}),
      });
      this.shareAddress = await this.shareServer.listen();
    }
    this.state = 'following';
    this.leaderAddress = (await this.coordinator.leader())?.address;
    await this.publish(true);
    this.options.log(`oxbow: cluster node ${this.nodeId} joined as a standby (lease ${this.leaseHex()})`);
    this.schedule(0);
  }

  /**
   * The other nodes that get shares: those whose record has a share address and names this node's
   * share protocol version. A node of another version (a rolling upgrade) gets none: its vnodes
   * and units run on this node's threads, as if it were not listed; the leader says so once per run
   * of the node.
   */
  private sharePeers(): SharePeer[] {
    const peers: SharePeer[] = [];
    for (const record of this.nodesCache) {
      if (record.nodeId === this.nodeId || typeof record.shareAddress !== 'string') continue;
      const version = recordedShareProtocol(record);
      if (version === this.shareProtocol) {
        peers.push({ nodeId: record.nodeId, shareAddress: record.shareAddress });
        continue;
      }
      const run = `${record.nodeId} ${record.shareAddress}`;
      if (this.role === 'leader' && !this.otherVersions.has(run)) {
        this.otherVersions.add(run);
        this.options.log(
          `oxbow: node ${record.nodeId} (${record.shareAddress}) speaks share protocol version ${version ?? '(unreadable)'} and this leader version ${this.shareProtocol}: it gets no remote share; its shares run on this node`,
        );
      }
    }
    return peers;
  }

  private leaseHex(): string {
    const id = this.coordinator.leaseId;
    return id === undefined ? '' : BigInt(id).toString(16);
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.fenced) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule(this.options.pollIntervalMs ?? 250);
      });
    }, delayMs);
  }

  private async tick(): Promise<void> {
    try {
      if (this.coordinator.leaseId === undefined) {
        // A standby whose lease was lost (etcd unreachable past the TTL) joins again.
        await this.coordinator.grantLease();
        this.published = '';
      }
      if (this.role === 'standby') {
        if (await this.coordinator.campaign({ nodeId: this.nodeId, address: this.address })) {
          // The nodes as of now: the old leader's record went with its lease, and the keyed
          // fragments the promotion builds take shares on the nodes listed (a stale list would
          // seed a share on the node that just left, which then fails over at once).
          this.nodesCache = await this.coordinator.nodes();
          this.promotion = this.promote();
          try {
            await this.promotion;
          } catch (error) {
            // The lease goes back first, so another node takes over without waiting for the TTL;
            // the server exits, and a restart joins as a standby.
            await this.coordinator.revoke().catch(() => undefined);
            this.fence(`its promotion failed: ${error instanceof Error ? error.message : String(error)}`);
            return;
          }
        } else {
          this.leaderAddress = (await this.coordinator.leader())?.address;
          if (this.options.followCheckpoints !== false) await this.followRecorded();
        }
      } else if (!(await this.coordinator.holdsLeadership())) {
        this.fence('the leader key in etcd is no longer held by this node');
        return;
      }
      this.nodesCache = await this.coordinator.nodes();
      // The leader's keyed fragments cut their owners again at their next safe point when the nodes changed.
      this.shares?.changed();
      await this.publish(false);
      this.lastError = '';
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== this.lastError) this.options.log(`oxbow: cluster node ${this.nodeId}: ${message}`);
      this.lastError = message;
    }
  }

  /** Follows the checkpoint etcd records, when it moved. */
  private async followRecorded(): Promise<void> {
    const record = await this.coordinator.checkpoint();
    if (record === undefined) return;
    const epoch = BigInt(record.epoch);
    const follower = await this.follower;
    if (follower.followedEpoch !== epoch) {
      try {
        await follower.follow(epoch);
        this.checkpointEpoch = epoch;
      } catch (error) {
        // Retention may delete a manifest's files while they are followed: the next record is followed instead.
        if (!(error instanceof ManifestError || (error instanceof ObjectStoreError && (error.code === 'NotFound' || error.code === 'Corrupt')))) throw error;
      }
    }
    const followed = follower.followedEpoch;
    if (followed !== undefined && this.replica?.epoch !== followed) await this.openReplica(follower, followed);
  }

  /** Links the followed checkpoint into a replica directory and opens a read-only engine on it. */
  private async openReplica(follower: CheckpointFollower, epoch: Epoch): Promise<void> {
    const dir = join(this.engineOptions.dataDir, REPLICAS_DIR, epoch.toString());
    await mkdir(join(this.engineOptions.dataDir, REPLICAS_DIR), { recursive: true });
    await follower.materialize(dir);
    let engine: OxbowEngine;
    try {
      engine = await openReadOnlyEngine({
        stateDir: dir,
        dataDir: this.engineOptions.dataDir,
        timeTravelRetentionMs: this.engineOptions.timeTravelRetentionMs,
        memoryLimitBytes: this.engineOptions.memoryLimitBytes,
        readOnly: {
          epoch,
          writesGoTo: () => this.otherLeader(),
          ...(this.options.standbyWrites === 'refuse'
            ? {}
            : { forward: { leaderAddress: () => this.otherLeader(), peerPassword: (user: string) => this.peerPassword(user), timeoutMs: this.options.forwardTimeoutMs ?? 10_000 } }),
        },
        clusterNodes: () => this.rows(),
        // Metrics of its own: the server's /metrics must never read a replica's store once it closed.
        ...(this.engineOptions.ssl === undefined ? {} : { ssl: this.engineOptions.ssl }),
      });
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    if (this.closed || this.role !== 'standby') {
      await this.closeReplica({ epoch, dir, engine });
      return;
    }
    const previous = this.replica;
    this.replica = { epoch, dir, engine };
    if (previous !== undefined) this.retireReplica(previous);
  }

  /** The leader's address when another node leads. */
  private otherLeader(): string | undefined {
    return this.leaderAddress !== undefined && this.leaderAddress !== this.address ? this.leaderAddress : undefined;
  }

  /**
   * The password a node proves to the leader when it forwards a session of `user`: an HMAC of the
   * user name under the cluster's key, so a forwarded session is good for that user only.
   */
  private peerPassword(user: string): string {
    if (this.peerKey === undefined) throw new SqlError(SqlState.cannotConnectNow, 'this node has not joined the cluster yet');
    return createHmac('sha256', Buffer.from(this.peerKey, 'hex') as unknown as Uint8Array).update(`oxbow peer session of ${user}`).digest('base64');
  }

  /** The leader's side: the verifier of `peerPassword(user)` (cached per user); undefined unless this node leads. */
  peerVerifier(user: string): string | undefined {
    if (this.engine === undefined || this.fenced || this.peerKey === undefined) return undefined;
    let verifier = this.peerVerifiers.get(user);
    if (verifier === undefined) {
      // A fixed salt per key and user: the verifier is derived again the same way after a restart.
      const salt = createHash('sha256').update(this.peerKey).update('\0').update(user).digest().subarray(0, 16);
      verifier = formatScramVerifier(scramVerifier(this.peerPassword(user), salt));
      if (this.peerVerifiers.size > 1000) this.peerVerifiers.clear();
      this.peerVerifiers.set(user, verifier);
    }
    return verifier;
  }

  /** A replaced replica closes now, or when its last connection closes. */
  private retireReplica(replica: Replica): void {
    if (replica.engine.sessionCount === 0) {
      void this.closeReplica(replica);
      return;
    }
    this.retiredReplicas.add(replica);
    replica.engine.onIdle = () => {
      this.retiredReplicas.delete(replica);
      void this.closeReplica(replica);
    };
  }

  private async closeReplica(replica: Replica): Promise<void> {
    try {
      await replica.engine.close();
      await rm(replica.dir, { recursive: true, force: true });
    } catch (error) {
      this.options.log(`oxbow: cluster node ${this.nodeId}: closing the replica of checkpoint ${replica.epoch}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Every replica closes (promotion, shutdown): their connections end. */
  private async closeReplicas(): Promise<void> {
    const replicas = [...(this.replica === undefined ? [] : [this.replica]), ...this.retiredReplicas];
    this.replica = undefined;
    this.retiredReplicas.clear();
    await Promise.all(replicas.map((replica) => this.closeReplica(replica)));
  }

  /**
   * A leader whose lease etcd has not confirmed for (nearly) a TTL may have lost it without being
   * told yet (etcd unreachable, or this process stalled): it fences itself, since a standby may
   * already lead. The keep-alives go every third of the TTL, so a healthy leader never gets close.
   */
  private startWatchdog(): void {
    const marginMs = 250;
    this.watchdog = setInterval(() => {
      const silentMs = Date.now() - this.coordinator.renewedAt;
      if (silentMs > this.coordinator.leaseTtlMs - marginMs) this.fence(`etcd has not confirmed its lease for ${silentMs} ms (the TTL is ${this.coordinator.leaseTtlMs} ms)`);
    }, 100);
    this.watchdog.unref();
  }

  private async promote(): Promise<void> {
    const started = performance.now();
    this.startWatchdog();
    this.role = 'leader';
    this.leaderAddress = this.address;
    this.state = 'promoting';
    await this.publish(false);
    this.options.log(`oxbow: cluster node ${this.nodeId} won the election; restoring the last complete checkpoint`);
    await this.closeReplicas();
    const store = await this.followStore;
    const follower = await this.follower;
    const record = await this.coordinator.checkpoint();
    const epochs = await listCheckpointEpochs(store);
    let candidates: Epoch[];
    if (record === undefined) {
      candidates = epochs;
    } else {
      const recorded = BigInt(record.epoch);
      // Manifests past the record were written by a leader that died (or was deposed) before it
      // recorded them: none of their commits was acknowledged under --durability remote.
      const zombies = epochs.filter((epoch) => epoch > recorded);
      if (zombies.length > 0) {
        await store.delete(zombies.map((epoch) => manifestKey(epoch)));
        this.options.log(`oxbow: cluster node ${this.nodeId} removed ${zombies.length} unrecorded checkpoint manifest(s) past epoch ${recorded}`);
      }
      candidates = epochs.filter((epoch) => epoch <= recorded);
    }
    const stateDir = join(this.engineOptions.dataDir, 'state');
    let restored: Epoch | undefined;
    let downloaded = { files: 0, bytes: 0 };
    for (const epoch of candidates) {
      try {
        const result = await follower.follow(epoch);
        downloaded = { files: result.filesDownloaded, bytes: result.bytesDownloaded };
        restored = epoch;
        break;
      } catch (error) {
        if (!(error instanceof ManifestError || (error instanceof ObjectStoreError && (error.code === 'NotFound' || error.code === 'Corrupt')))) throw error;
        this.options.log(`oxbow: cluster node ${this.nodeId}: checkpoint ${epoch} cannot be restored (${(error as Error).message}); trying an older one`);
      }
    }
    let parts: PartsTaken | undefined;
    if (restored !== undefined) {
      await follower.materialize(stateDir);
      const followed = follower.followed;
      // The nodes' vnodes come from their own stores' parts at the checkpoint (README.md, "Each
      // node owning its vnodes' state", step 5), not from this node's copy of them.
      if (followed?.parts !== undefined && followed.parts.length > 0) parts = await this.takeParts(stateDir, followed.parts, restored, follower);
      this.checkpointEpoch = restored;
    } else if (record !== undefined) {
      throw new SqlError(SqlState.dataCorrupted, `etcd records checkpoint ${record.epoch}, but no complete checkpoint at or before it is in ${store.location}`);
    } else if (epochs.length === 0) {
      // A cluster's first leader: a fresh state (or the local one, when this data directory has one).
    }
    store.close();
    await rm(join(this.engineOptions.dataDir, 'follow'), { recursive: true, force: true });
    /** The parts of the checkpoint being made, until it is recorded. */
    const partsAsked = new Map<Epoch, readonly ManifestPart[]>();
    let heldAtCut: ReadonlyMap<string, string> | undefined;
    if (this.options.remoteShares?.nodeState === true) {
      this.checkpointed = new BroadcastChannel(CHECKPOINTED_CHANNEL);
      this.checkpointed.unref();
    }
    const guard: ManifestGuard = {
      check: async () => {
        if (this.fenced || this.role !== 'leader' || !(await this.coordinator.holdsLeadership())) throw new Error('this node is no longer the leader');
      },
      commit: async (epoch) => {
        const committed = await this.coordinator.commitCheckpoint({ epoch: epoch.toString(), nodeId: this.nodeId });
        if (!committed) {
          this.fence('etcd refused the checkpoint record: the leader key is held by another lease');
          return false;
        }
        this.checkpointEpoch = epoch;
        // The keyed shares whose nodes keep their state let go of the writes this checkpoint's parts hold.
        const parts = partsAsked.get(epoch);
        partsAsked.clear();
        if (parts !== undefined && parts.length > 0) this.checkpointed?.postMessage({ epoch: epoch.toString(), url: this.engineOptions.checkpointUrl, parts } satisfies CheckpointedParts);
        return true;
      },
      ...(this.shares !== undefined && this.options.remoteShares?.nodeCheckpoints === true
        ? {
            // The shares whose state only their nodes hold as the cut begins need a part too, even if they come back here before it is asked.
            cutting: () => {
              heldAtCut = this.shares!.nodeHeld();
            },
            parts: async (epoch: Epoch) => {
              const parts = await this.shares!.checkpointParts(epoch, heldAtCut);
              partsAsked.set(epoch, parts);
              return parts;
            },
          }
        : {}),
    };
    // A clean shutdown hands over everything committed: the last checkpoint, within half the
    // shutdown bound (the other half is the loop's own, for a checkpoint already running).
    const finalCheckpointWithinMs = Math.floor((this.engineOptions.shutdownTimeoutMs ?? 10_000) / 2);
    const shares = this.shares;
    this.engine = await createEngine({
      ...this.engineOptions,
      manifestGuard: guard,
      clusterNodes: () => this.rows(),
      finalCheckpointWithinMs,
      ...(shares === undefined ? {} : { remoteShares: shares }),
      vnodeMaps: this.vnodeMapSink(),
    });
    this.state = 'serving';
    await this.publish(false);
    this.options.log(
      `oxbow: cluster node ${this.nodeId} is the leader (checkpoint ${restored ?? 'none'} restored, ${downloaded.files} files and ${downloaded.bytes} bytes downloaded at promotion${parts === undefined ? '' : `, ${parts.parts} node part${parts.parts === 1 ? '' : 's'} taken (${parts.ranges} vnode ranges, ${parts.entries} entries, ${parts.bytes} bytes${parts.skipped === 0 ? '' : `; ${parts.skipped} left out`})`}; ${Math.round(performance.now() - started)} ms from election to serving)`,
    );
  }

  /**
   * Replaces the nodes' vnodes in the materialized checkpoint with their parts as of it (the
   * followed files: a warm standby downloads nothing more; storage/checkpoint/parts.ts).
   */
  private async takeParts(stateDir: string, parts: NonNullable<CheckpointManifest['parts']>, epoch: Epoch, follower: CheckpointFollower): Promise<PartsTaken> {
    const database = RocksDatabase.open(stateDir, { blockCacheBytes: 8 << 20, createIfMissing: false });
    try {
      return await takeParts(database, parts, epoch, join(this.engineOptions.dataDir, 'parts'), (part, dir) => follower.materializePart(part, dir));
    } finally {
      await database.close();
    }
  }

  /**
   * With OXBOW_KEYED_NODE_STATE, a keyed share's store made from a followed checkpoint takes the
   * checkpoint's parts, as a promotion does: each is of a share whose node held its state at the
   * checkpoint (remote-shares.ts' `recordedParts`), which the leader's files of the checkpoint
   * hold as it was when the share started (a promoted leader's first cut makes its nodes' stores
   * from the checkpoint it restored). Only the parts of `vnodes` (flags; all when undefined), those
   * the store is made for: a cut's kept share, whose part the checkpoint names, never gives vnodes.
   */
  private async takeNodeState(manifest: CheckpointManifest, dir: string, materializePart: (part: ManifestPart, dir: string) => Promise<void>, vnodes?: Uint8Array): Promise<void> {
    const parts = (manifest.parts ?? []).filter((part) => vnodes === undefined || part.vnodes.some((vnode) => vnodes[vnode] === 1));
    if (parts.length === 0) return;
    const started = performance.now();
    const database = RocksDatabase.open(dir, { blockCacheBytes: 8 << 20, createIfMissing: false });
    let taken: PartsTaken;
    try {
      taken = await takeParts(database, parts, BigInt(manifest.epoch), `${dir}-parts`, materializePart);
    } finally {
      await database.close();
    }
    this.options.log(
      `oxbow: a keyed share's store made from checkpoint ${manifest.epoch} took ${taken.parts} node part${taken.parts === 1 ? '' : 's'} (${taken.ranges} vnode ranges, ${taken.entries} entries, ${taken.bytes} bytes${taken.skipped === 0 ? '' : `; ${taken.skipped} left out`}) in ${Math.round(performance.now() - started)} ms`,
    );
  }

  /** The leader's keyed fragments' vnode maps to etcd (`<prefix>/fragments/<view id>/<n>`), in order; a failed write is logged, the next cut writes again. */
  private vnodeMapSink(): VnodeMapSink {
    const write = (what: string, run: () => Promise<boolean>): void => {
      this.mapWrites = this.mapWrites.then(async () => {
        if (this.closed || this.role !== 'leader') return;
        try {
          if (!(await run())) this.options.log(`oxbow: cluster node ${this.nodeId} did not ${what}: the leader key is held by another lease`);
        } catch (error) {
          this.options.log(`oxbow: cluster node ${this.nodeId} could not ${what}: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
    };
    return {
      nodeId: this.nodeId,
      record: (record) => {
        const text = encodeVnodeMap(record);
        write(`record view ${record.viewId}'s fragment ${record.fragment} vnode map in etcd`, () => this.coordinator.putFragmentMap(record.viewId, record.fragment, text));
      },
      drop: (viewId, fragment) => write(`delete view ${viewId}'s fragment ${fragment} vnode map from etcd`, () => this.coordinator.deleteFragmentMap(viewId, fragment)),
    };
  }

  /** Writes the node's record when it changed (or always, with `force`). */
  private async publish(force: boolean): Promise<void> {
    const record: NodeRecord = {
      nodeId: this.nodeId,
      address: this.address,
      role: this.role,
      state: this.state,
      checkpointEpoch: this.checkpointEpoch === undefined ? null : this.checkpointEpoch.toString(),
      leaseId: this.leaseHex(),
      ...(this.shareAddress === undefined ? {} : { shareAddress: this.shareAddress, shareProtocol: this.shareProtocol }),
    };
    const text = JSON.stringify(record);
    if (!force && text === this.published) return;
    await this.coordinator.putNode(record);
    this.published = text;
  }

  private rows(): ClusterNodeRow[] {
    const byId = new Map(this.nodesCache.map((record) => [record.nodeId, record]));
    // This node's own row is always current, whatever the last read of etcd said.
    byId.set(this.nodeId, {
      nodeId: this.nodeId,
      address: this.address,
      role: this.role,
      state: this.state,
      checkpointEpoch: this.checkpointEpoch === undefined ? null : this.checkpointEpoch.toString(),
      leaseId: this.leaseHex(),
      ...(this.shareAddress === undefined ? {} : { shareAddress: this.shareAddress, shareProtocol: this.shareProtocol }),
    });
    return [...byId.values()]
      .sort((left, right) => (left.nodeId < right.nodeId ? -1 : left.nodeId > right.nodeId ? 1 : 0))
      .map((record) => ({
        nodeId: record.nodeId,
        address: record.address,
        role: record.role,
        state: record.state,
        checkpointEpoch: record.checkpointEpoch === null ? null : BigInt(record.checkpointEpoch),
        leaseId: record.leaseId,
        self: record.nodeId === this.nodeId,
        shareAddress: record.shareAddress ?? null,
        shareProtocol: typeof record.shareAddress === 'string' ? (recordedShareProtocol(record) ?? null) : null,
        shareUnits: this.role === 'leader' ? (this.shares?.unitsOf(record.nodeId) ?? null) : null,
        shareRows: this.role === 'leader' ? (this.shares?.rowsOf(record.nodeId) ?? null) : null,
        ...seedColumns(this.role === 'leader' ? this.shares?.seedOf(record.nodeId) : undefined),
      }));
  }

  private leaseLost(error: Error): void {
    if (this.closed) return;
    if (this.role === 'leader') {
      this.fence(`its etcd lease was lost (${error.message})`);
    } else {
      this.options.log(`oxbow: cluster node ${this.nodeId} lost its etcd lease (${error.message}); joining again`);
    }
  }

  private fence(reason: string): void {
    if (this.fenced) return;
    this.fenced = true;
    this.state = 'fenced';
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    this.options.onFenced(`cluster node ${this.nodeId} is no longer the leader: ${reason}`);
  }

  openSession(parameters: StartupParameters, events: SessionEvents): Session {
    if (this.engine !== undefined && !this.fenced) return this.engine.openSession(parameters, events);
    if (this.closed) throw new SqlError(SqlState.adminShutdown, 'the server is shutting down');
    if (this.role === 'standby' && this.replica !== undefined) return this.replica.engine.openSession(parameters, events);
    const leader = this.leaderAddress !== undefined && this.leaderAddress !== this.address ? this.leaderAddress : undefined;
    throw new SqlError(
      SqlState.cannotConnectNow,
      this.role === 'leader' ? 'this node is becoming the leader; try again in a moment' : `this node is a standby; the leader is at ${leader ?? 'an address not known yet'}`,
      { hint: leader === undefined ? 'connect to the leader (oxbow_catalog.nodes on any leader lists the nodes)' : `connect to ${leader}` },
    );
  }

  /** The roles of the engine a connection would get (the leader's, or the newest replica's): their passwords. */
  loginRole(user: string): LoginRole | undefined {
    const engine = this.engine !== undefined && !this.fenced ? this.engine : this.replica?.engine;
    return engine?.loginRole?.(user);
  }

  findSession(processId: number, secretKey: number): Session | undefined {
    for (const engine of [this.engine, this.replica?.engine, ...[...this.retiredReplicas].map((replica) => replica.engine)]) {
      const session = engine?.findSession(processId, secretKey);
      if (session !== undefined) return session;
    }
    return undefined;
  }

  /**
   * The cluster's part of /metrics (bin/cluster.ts), in the Prometheus text format: whether this
   * node leads and how many nodes etcd lists; on the leader, per node, what its shares did for it
   * (the columns of `oxbow_catalog.nodes`); on a node running keyed shares, their stores open now,
   * those stores' SST bytes, and the bytes of SST files it copied out of checkpoints and ingested.
   */
  prometheusText(): string {
    const w = new PrometheusWriter();
    const rows = this.rows();
    w.one('oxbow_cluster_leader', "Whether this node is the cluster's leader (1) or a standby (0).", this.role === 'leader' && !this.fenced ? 1 : 0);
    w.one('oxbow_cluster_nodes', 'Nodes the cluster lists in etcd (their leases alive), this one included.', rows.length);
    if (this.role === 'leader') {
      const perNode = (name: string, type: 'gauge' | 'counter', help: string, value: (row: ClusterNodeRow) => bigint | null): void => {
        w.family(name, type, help);
        for (const row of rows) {
          const figure = value(row);
          if (figure !== null) w.sample(name, { node: row.nodeId }, Number(figure));
        }
      };
      perNode('oxbow_cluster_node_share_units_total', 'counter', 'Source units a node generated or fetched for this leader in its shares.', (row) => row.shareUnits);
      perNode('oxbow_cluster_node_share_rows_total', 'counter', "Rows of keyed fragments a node aggregated or joined for this leader (its keyed shares' handed-over epochs).", (row) => row.shareRows);
      perNode('oxbow_cluster_node_share_seed_bytes', 'gauge', "Bytes of state a node's keyed shares running now were seeded with by this leader (their vnodes' only).", (row) => row.shareSeedBytes);
      if (this.options.remoteShares?.nodeState === true) {
        perNode('oxbow_cluster_node_share_kept_bytes', 'gauge', "Bytes of a node's keyed shares' state writes this leader keeps in memory until a checkpoint holds the node's parts (OXBOW_KEYED_NODE_STATE=on).", (row) => this.shares?.keptBytesOf(row.nodeId) ?? null);
      }
    }
    const shares = this.shareServer?.metrics();
    if (shares !== undefined) {
      w.one('oxbow_keyed_share_stores', "Keyed shares' stores open on this node (running shares', staged ones', those made from checkpoints being read).", shares.stores);
      w.one('oxbow_keyed_share_store_bytes', "Live SST files' bytes of the keyed shares' stores open on this node.", shares.storeBytes);
      w.one('oxbow_keyed_share_copied_bytes_total', "Bytes of SST files this node copied out of followed checkpoints for keyed shares (a share's own vnodes, a kept share's gained ones).", shares.copiedBytes, 'counter');
      w.one('oxbow_keyed_share_ingested_bytes_total', "Bytes of SST files this node ingested into keyed shares' stores.", shares.ingestedBytes, 'counter');
      w.one('oxbow_keyed_share_checkpoints_total', "Keyed shares' stores this node cut for the leader's checkpoints (OXBOW_KEYED_NODE_CHECKPOINTS=on).", shares.checkpointedStores, 'counter');
      w.one('oxbow_keyed_share_checkpoint_uploaded_bytes_total', "Bytes of those stores' files this node sent to the object store (files already there are named, not sent).", shares.checkpointUploadedBytes, 'counter');
    }
    return w.lines.join('\n') + '\n';
  }

  get closingStep(): string | undefined {
    return this.engine?.closingStep;
  }

  /** Stops campaigning, closes the engine (leader), then gives the lease back so a standby takes over at once. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    await this.ticking?.catch(() => undefined);
    await this.promotion?.catch(() => undefined);
    await this.closeReplicas();
    try {
      if (this.engine === undefined && this.shareServer !== undefined && !this.fenced) {
        // A drained node hands its shares back: its record goes first, so the leader gives it no
        // more ranges and closes each share once it answered what it was sent.
        await this.coordinator.revoke().catch(() => undefined);
        await this.shareServer.drain(this.options.remoteShares?.drainMs ?? SHARE_DRAIN_MS);
      }
      await this.engine?.close();
      await this.shareServer?.close();
    } finally {
      if (!this.fenced) await this.coordinator.revoke().catch(() => undefined);
      this.coordinator.close();
      (await this.followStore.catch(() => undefined))?.close();
      this.checkpointed?.close();
    }
  }
}

/** The seed columns of oxbow_catalog.nodes: null on a standby and for a node without keyed shares. */
function seedColumns(seed: { rows: bigint; bytes: bigint; readyMs: bigint | null } | null | undefined): Pick<ClusterNodeRow, 'shareSeedRows' | 'shareSeedBytes' | 'shareReadyMs'> {
  return { shareSeedRows: seed?.rows ?? null, shareSeedBytes: seed?.bytes ?? null, shareReadyMs: seed?.readyMs ?? null };
}

/** The share protocol version a node's record names: 1 when it names none (a node from before versions were named), undefined when it is not a whole number. */
function recordedShareProtocol(record: NodeRecord): number | undefined {
  const version: unknown = record.shareProtocol;
  if (version === undefined) return 1;
  return typeof version === 'number' && Number.isSafeInteger(version) ? version : undefined;
}
