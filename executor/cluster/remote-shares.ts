// The leader's side of remote shares (`--remote-shares on`; docs/design.md section 7): which nodes
// get a share of each source fragment (every other node whose etcd record has a share address, as
// the leader last read the records: a fragment follows them between chunks), the data of the thread that
// speaks to each (remote-share-worker.ts), and the units each node generated for this leader
// (oxbow_catalog.nodes' share_units).

import { compiledWorkerScript } from '../batch/worker-script.js';
import type { RemoteShareSource, RemoteShareTarget } from '../stream/parallel/source-fragment.js';

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
  /** The fragment's state tables' committed entries and records (packed), which the node's store starts from. */
  readonly seed: Uint8Array;
}

export interface SharePeer {
  readonly nodeId: string;
  readonly shareAddress: string;
}

export class RemoteShares implements RemoteShareSource {
  private readonly stats = new Map<string, BigInt64Array[]>();
  /** Per node, the counters of its keyed shares (rows of epochs it handed over). */
  private readonly keyedStats = new Map<string, BigInt64Array[]>();
  /** The peers' keys as last read, and how many times they changed. */
  private seen = '';
  private changes = 0;

  constructor(
    private readonly peers: () => readonly SharePeer[],
    private readonly key: () => string | undefined,
    private readonly timeoutMs: number,
  ) {}

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

  keys(): ReadonlySet<string> {
    return this.key() === undefined ? new Set() : new Set(this.peers().map(RemoteShares.keyOf));
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
   * One target per peer for a keyed fragment being built (keyed-share-worker.ts): the share is cut
   * when the fragment is built and stays with the fragment (a node that joins later gets shares of
   * fragments built after it joined); a failed one runs on this node until the fragment is gone.
   */
  keyedTargets(fallbackScript: URL, seed: Uint8Array): RemoteShareTarget[] {
    const key = this.key();
    if (key === undefined) return [];
    const peers = this.peers();
    if (peers.length === 0) return [];
    const script = compiledWorkerScript(import.meta.url, './keyed-share-worker.js');
    return peers.map((peer) => {
      const stats = new SharedArrayBuffer(16);
      const counters = new BigInt64Array(stats);
      let list = this.keyedStats.get(peer.nodeId);
      if (list === undefined) this.keyedStats.set(peer.nodeId, (list = []));
      list.push(counters);
      const data: KeyedShareData = { kind: 'keyed', address: peer.shareAddress, node: peer.nodeId, key, stats, fallbackScript: fallbackScript.href, timeoutMs: this.timeoutMs, seed };
      return { node: peer.nodeId, script, data, key: RemoteShares.keyOf(peer), failed: () => Atomics.load(counters, 1) !== 0n };
    });
  }

  /** Rows of keyed fragments node `nodeId` processed for this leader (epochs it handed over), or null when it got no keyed share. */
  rowsOf(nodeId: string): bigint | null {
    const list = this.keyedStats.get(nodeId);
    if (list === undefined) return null;
    let rows = 0n;
    for (const stats of list) rows += Atomics.load(stats, 0);
    return rows;
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
