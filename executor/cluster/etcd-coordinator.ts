// The cluster's state in etcd, through the etcd3 client (v3 gRPC API; etcd 3.4 and later). One
// lease per node, kept alive by the client; every unary call has a deadline. Keys:
//   /oxbow/nodes/<node id>   the node's record (address, role, state, checkpoint epoch), under its lease
//   /oxbow/leader            the leader's node id and address, under the leader's lease: created
//                            only when absent (a transaction), so one node holds it at a time, and
//                            it disappears with the lease when the leader dies
//   /oxbow/checkpoint        the last complete checkpoint's epoch and who wrote it (no lease):
//                            written by a transaction that requires /oxbow/leader to be held by the
//                            writer's lease, so a node that lost leadership never moves it
// The checkpoint record is what a new leader restores: a manifest newer than it was written by a
// leader that died (or lost its lease) before its record, and never acknowledged a commit.

import { Etcd3, type Lease } from 'etcd3';

export const NODES_PREFIX = '/oxbow/nodes/';
export const LEADER_KEY = '/oxbow/leader';
export const CHECKPOINT_KEY = '/oxbow/checkpoint';

export interface NodeRecord {
  readonly nodeId: string;
  readonly address: string;
  readonly role: 'leader' | 'standby';
  readonly state: string;
  /** Decimal text (epochs exceed 2^53), or null. */
  readonly checkpointEpoch: string | null;
  readonly leaseId: string;
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
}

export class EtcdCoordinator {
  private readonly client: Etcd3;
  private lease: Lease | undefined;
  private leaseIdText: string | undefined;
  private renewedAtMs = 0;
  /** Told once when the current lease is lost (its keepalives failed past the TTL, or it expired). */
  onLeaseLost: (error: Error) => void = () => undefined;

  constructor(private readonly options: CoordinatorOptions) {
    this.client = new Etcd3({
      hosts: [...options.endpoints],
      dialTimeout: options.callTimeoutMs,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + options.callTimeoutMs }),
    });
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
    return this.renewedAtMs;
  }

  get leaseTtlMs(): number {
    return this.options.leaseTtlSeconds * 1000;
  }

  /** Grants a new lease (the previous one, if any, is released). */
  async grantLease(): Promise<string> {
    this.lease?.release();
    const lease = this.client.lease(this.options.leaseTtlSeconds);
    this.lease = lease;
    this.leaseIdText = undefined;
    lease.on('lost', (error) => {
      if (this.lease !== lease) return;
      this.lease = undefined;
      this.leaseIdText = undefined;
      this.onLeaseLost(error);
    });
    lease.on('keepaliveSucceeded', () => {
      if (this.lease === lease) this.renewedAtMs = Date.now();
    });
    // An error of the grant itself is reported by grant() and by a 'lost' event; the event is ignored.
    const requestedAt = Date.now();
    const id = await lease.grant();
    this.leaseIdText = id;
    this.renewedAtMs = requestedAt;
    return id;
  }

  private requireLease(): string {
    if (this.leaseIdText === undefined) throw new Error('no etcd lease');
    return this.leaseIdText;
  }

  async putNode(record: NodeRecord): Promise<void> {
    await this.client.put(NODES_PREFIX + record.nodeId).value(JSON.stringify(record)).lease(this.requireLease());
  }

  async nodes(): Promise<NodeRecord[]> {
    const values = await this.client.getAll().prefix(NODES_PREFIX).strings();
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
    const result = await this.client.if(LEADER_KEY, 'Create', '==', 0).then(this.client.put(LEADER_KEY).value(JSON.stringify(leader)).lease(lease)).commit();
    return result.succeeded;
  }

  /** Whether the leader key is held by this node's current lease. */
  async holdsLeadership(): Promise<boolean> {
    const lease = this.leaseIdText;
    if (lease === undefined) return false;
    const result = await this.client.if(LEADER_KEY, 'Lease', '==', lease).commit();
    return result.succeeded;
  }

  async leader(): Promise<LeaderRecord | undefined> {
    const value = await this.client.get(LEADER_KEY).string();
    if (value === null) return undefined;
    try {
      return JSON.parse(value) as LeaderRecord;
    } catch {
      return undefined;
    }
  }

  async checkpoint(): Promise<CheckpointRecord | undefined> {
    const value = await this.client.get(CHECKPOINT_KEY).string();
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
    const result = await this.client.if(LEADER_KEY, 'Lease', '==', lease).then(this.client.put(CHECKPOINT_KEY).value(JSON.stringify(record))).commit();
    return result.succeeded;
  }

  /** Gives the lease back (its keys, leadership included, go at once): a clean shutdown. */
  async revoke(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    this.leaseIdText = undefined;
    await lease?.revoke();
  }

  close(): void {
    this.lease?.release();
    this.lease = undefined;
    this.client.close();
  }
}

/** `etcd://HOST:PORT[,HOST:PORT...]` to client endpoints; throws an Error naming what is wrong. */
export function parseClusterUrl(text: string): string[] {
  const match = /^etcd:\/\/(.+)$/.exec(text.trim());
  if (match === null) throw new Error(`"${text}" is not a cluster URL; write etcd://HOST:PORT[,HOST:PORT...]`);
  return match[1]!.split(',').map((part) => {
    const hostPort = part.trim();
    const parsed = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(hostPort);
    if (parsed === null || Number(parsed[2]) < 1 || Number(parsed[2]) > 65535) throw new Error(`"${hostPort}" in "${text}" is not HOST:PORT`);
    return `http://${hostPort}`;
  });
}
