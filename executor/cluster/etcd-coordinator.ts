// The cluster's state in etcd, through the etcd3 client (v3 gRPC API; etcd 3.4 and later). One
// lease per node, granted and kept alive by a worker thread (lease-keeper.ts), so a blocked main
// thread does not lose it; every unary call has a deadline. Keys, under the prefix (`/oxbow`
// unless --cluster names one, so several clusters can share one etcd):
//   <prefix>/nodes/<node id>  the node's record (address, role, state, checkpoint epoch), under its lease
//   <prefix>/leader           the leader's node id and address, under the leader's lease: created
//                            only when absent (a transaction), so one node holds it at a time, and
//                            it disappears with the lease when the leader dies
//   <prefix>/checkpoint       the last complete checkpoint's epoch and who wrote it (no lease):
//                            written by a transaction that requires the leader key to be held by the
//                            writer's lease, so a node that lost leadership never moves it
//   <prefix>/fragments/<view id>/<n>  keyed fragment n's vnode map (executor/stream/parallel/vnode-map.ts,
//                            JSON: `vnodes`, the 256 owner indexes, and `owners`, each index's node id
//                            and thread or null), under the leader's lease and written by a
//                            transaction that requires the leader key to be held by it, at the
//                            fragment's build and at each cut; deleted when the fragment's dataflow
//                            ends. For operators and later steps: recovery does not read it yet.
// The checkpoint record is what a new leader restores: a manifest newer than it was written by a
// leader that died (or lost its lease) before its record, and never acknowledged a commit.

import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { LeaseKeeper } from './lease-keeper.js';

/** The key prefix when --cluster names none. */
export const DEFAULT_PREFIX = '/oxbow';

/** The cluster's keys under a prefix (`/oxbow` by default: `--cluster etcd://HOST:PORT/PREFIX`). */
export function clusterKeys(prefix: string): { readonly nodes: string; readonly leader: string; readonly checkpoint: string; readonly peerKey: string; readonly fragments: string } {
  return { nodes: `${prefix}/nodes/`, leader: `${prefix}/leader`, checkpoint: `${prefix}/checkpoint`, peerKey: `${prefix}/peer-key`, fragments: `${prefix}/fragments/` };
}

export interface NodeRecord {
  readonly nodeId: string;
  readonly address: string;
  readonly role: 'leader' | 'standby';
  readonly state: string;
  /** Decimal text (epochs exceed 2^53), or null. */
  readonly checkpointEpoch: string | null;
  readonly leaseId: string;
  /** host:port of its server of remote shares (--remote-shares on), absent otherwise. */
  readonly shareAddress?: string;
  /** The share protocol version its server speaks (remote-share-link.ts), with `shareAddress`; absent in the records of nodes from before versions were named (version 1). */
  readonly shareProtocol?: number;
}

export interface LeaderRecord {
  readonly nodeId: string;
  readonly address: string;
}

export interface CheckpointRecord {
  readonly epoch: string;
  readonly nodeId: string;
}

export interface CoordinatorOptions {
  /** Client endpoints, `http://host:port`. */
  readonly endpoints: readonly string[];
  /** Lease TTL in seconds: how long a dead node's lease (and leadership) outlives it. */
  readonly leaseTtlSeconds: number;
  /** Deadline of each unary etcd call. */
  readonly callTimeoutMs: number;
  /** The keys' prefix (DEFAULT_PREFIX when absent). */
  readonly prefix?: string;
  /** A main thread silent this long gives its lease up (lease-keeper.ts; default 30 s). */
  readonly stallMs?: number;
}

export class EtcdCoordinator {
  private readonly client: Etcd3;
  private readonly keeper: LeaseKeeper;
  private readonly keys: ReturnType<typeof clusterKeys>;
  private leaseIdText: string | undefined;
  /** Told once when the current lease is lost (its keepalives failed past the TTL, it expired, or the main thread stalled). */
  onLeaseLost: (error: Error) => void = () => undefined;

  constructor(private readonly options: CoordinatorOptions) {
    this.keys = clusterKeys(options.prefix ?? DEFAULT_PREFIX);
    this.client = new Etcd3({
      hosts: [...options.endpoints],
      dialTimeout: options.callTimeoutMs,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + options.callTimeoutMs }),
    });
    this.keeper = new LeaseKeeper({
      endpoints: options.endpoints,
      leaseTtlSeconds: options.leaseTtlSeconds,
      callTimeoutMs: options.callTimeoutMs,
      ...(options.stallMs === undefined ? {} : { stallMs: options.stallMs }),
    });
    this.keeper.onLost = (error) => {
      if (this.leaseIdText === undefined) return;
      this.leaseIdText = undefined;
      this.onLeaseLost(error);
    };
  }

  /** The current lease's id (decimal, as etcd3 gives it), or undefined when none is granted. */
  get leaseId(): string | undefined {
    return this.leaseIdText;
  }

  /**
   * When etcd last confirmed the lease (its grant or a keep-alive answer, by this process's clock):
   * the lease lives at most the TTL past it, whatever the client has noticed.
   */
  get renewedAt(): number {
    return this.keeper.renewedAt;
  }

  get leaseTtlMs(): number {
    return this.options.leaseTtlSeconds * 1000;
  }

  /** Grants a new lease (the previous one, if any, is released). */
  async grantLease(): Promise<string> {
    this.leaseIdText = undefined;
    const id = await this.keeper.grant();
    this.leaseIdText = id;
    return id;
  }

  private requireLease(): string {
    if (this.leaseIdText === undefined) throw new Error('no etcd lease');
    return this.leaseIdText;
  }

  async putNode(record: NodeRecord): Promise<void> {
    await this.client.put(this.keys.nodes + record.nodeId).value(JSON.stringify(record)).lease(this.requireLease());
  }

  async nodes(): Promise<NodeRecord[]> {
    const values = await this.client.getAll().prefix(this.keys.nodes).strings();
    const records: NodeRecord[] = [];
    for (const value of Object.values(values)) {
      try {
        records.push(JSON.parse(value) as NodeRecord);
      } catch {
        // A record this version cannot read is not listed.
      }
    }
    return records.sort((left, right) => (left.nodeId < right.nodeId ? -1 : left.nodeId > right.nodeId ? 1 : 0));
  }

  /** Takes leadership when nobody holds it; true when this node holds it now. */
  async campaign(leader: LeaderRecord): Promise<boolean> {
    const lease = this.requireLease();
    const result = await this.client.if(this.keys.leader, 'Create', '==', 0).then(this.client.put(this.keys.leader).value(JSON.stringify(leader)).lease(lease)).commit();
    return result.succeeded;
  }

  /** Whether the leader key is held by this node's current lease. */
  async holdsLeadership(): Promise<boolean> {
    const lease = this.leaseIdText;
    if (lease === undefined) return false;
    const result = await this.client.if(this.keys.leader, 'Lease', '==', lease).commit();
    return result.succeeded;
  }

  async leader(): Promise<LeaderRecord | undefined> {
    const value = await this.client.get(this.keys.leader).string();
    if (value === null) return undefined;
    try {
      return JSON.parse(value) as LeaderRecord;
    } catch {
      return undefined;
    }
  }

  async checkpoint(): Promise<CheckpointRecord | undefined> {
    const value = await this.client.get(this.keys.checkpoint).string();
    if (value === null) return undefined;
    try {
      return JSON.parse(value) as CheckpointRecord;
    } catch {
      return undefined;
    }
  }

  /** Records the last complete checkpoint, only while this node's lease holds leadership. */
  async commitCheckpoint(record: CheckpointRecord): Promise<boolean> {
    const lease = this.requireLease();
    const result = await this.client.if(this.keys.leader, 'Lease', '==', lease).then(this.client.put(this.keys.checkpoint).value(JSON.stringify(record))).commit();
    return result.succeeded;
  }

  /** Records a keyed fragment's vnode map (JSON text), under this node's lease, only while it holds leadership. */
  async putFragmentMap(viewId: number, fragment: number, text: string): Promise<boolean> {
    const lease = this.requireLease();
    const key = `${this.keys.fragments}${viewId}/${fragment}`;
    const result = await this.client.if(this.keys.leader, 'Lease', '==', lease).then(this.client.put(key).value(text).lease(lease)).commit();
    return result.succeeded;
  }

  /** Deletes a keyed fragment's vnode map, only while this node holds leadership. */
  async deleteFragmentMap(viewId: number, fragment: number): Promise<boolean> {
    const lease = this.requireLease();
    const key = `${this.keys.fragments}${viewId}/${fragment}`;
    const result = await this.client.if(this.keys.leader, 'Lease', '==', lease).then(this.client.delete().key(key)).commit();
    return result.succeeded;
  }

  /**
   * The cluster's node-to-node key (hex), created at random by the first node that asks: a standby
   * that forwards a session's writes proves it to the leader (pgwire/forward.ts). Whoever can read
   * the cluster's keys in etcd can already lead it; nobody else learns it.
   */
  async peerKey(): Promise<string> {
    const fresh = randomBytes(32).toString('hex');
    await this.client.if(this.keys.peerKey, 'Create', '==', 0).then(this.client.put(this.keys.peerKey).value(fresh)).commit();
    const value = await this.client.get(this.keys.peerKey).string();
    if (value === null || !/^[0-9a-f]{64}$/.test(value)) throw new Error(`etcd holds no usable node-to-node key at ${this.keys.peerKey}`);
    return value;
  }

  /** Gives the lease back (its keys, leadership included, go at once): a clean shutdown. */
  async revoke(): Promise<void> {
    if (this.leaseIdText === undefined) return;
    this.leaseIdText = undefined;
    await this.keeper.revoke();
  }

  close(): void {
    this.leaseIdText = undefined;
    this.keeper.close();
    this.client.close();
  }
}

export interface ClusterUrl {
  /** Client endpoints, `http://host:port`. */
  readonly endpoints: readonly string[];
  /** The keys' prefix: `/` and the URL's path, or DEFAULT_PREFIX. */
  readonly prefix: string;
}

/**
 * `etcd://HOST:PORT[,HOST:PORT...][/PREFIX]` to client endpoints and the keys' prefix (`/oxbow`
 * when the URL has no path); throws an Error naming what is wrong.
 */
export function parseClusterUrl(text: string): ClusterUrl {
  const match = /^etcd:\/\/([^/]+)(\/.*)?$/.exec(text.trim());
  if (match === null) throw new Error(`"${text}" is not a cluster URL; write etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`);
  const path = match[2] === undefined || match[2] === '/' ? undefined : match[2].replace(/\/+$/, '');
  if (path !== undefined && !/^(\/[A-Za-z0-9_.-]+)+$/.test(path)) {
    throw new Error(`"${path}" in "${text}" is not a key prefix; write /NAME[/NAME...] with letters, digits, "_", "." and "-"`);
  }
  const endpoints = match[1]!.split(',').map((part) => {
    const hostPort = part.trim();
    const parsed = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(hostPort);
    if (parsed === null || Number(parsed[2]) < 1 || Number(parsed[2]) > 65535) throw new Error(`"${hostPort}" in "${text}" is not HOST:PORT`);
    return `http://${hostPort}`;
  });
  return { endpoints, prefix: path ?? DEFAULT_PREFIX };
}
