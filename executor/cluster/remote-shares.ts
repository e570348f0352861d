// The leader's side of remote shares (`--remote-shares on`; docs/design.md section 7): which nodes
// get a share of each source fragment (every other node whose etcd record has a share address, as
// the leader last read the records when the view's dataflow was built), the data of the thread that
// speaks to each (remote-share-worker.ts), and the units each node generated for this leader
// (oxbow_catalog.nodes' share_units).

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RemoteShareTarget } from '../stream/parallel/source-fragment.js';

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

export interface SharePeer {
  readonly nodeId: string;
  readonly shareAddress: string;
}

/** The compiled remote-share-worker.js (under vitest this module runs from TypeScript: the build's copy in dist/). */
function workerScript(): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL('./remote-share-worker.js', import.meta.url);
  const marker = '/executor/cluster/';
  const built = `${here.slice(0, here.lastIndexOf(marker))}/dist${marker}remote-share-worker.js`;
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build first`);
  return new URL(`file://${built}`);
}

export class RemoteShares {
  private readonly stats = new Map<string, BigInt64Array[]>();

  constructor(
    private readonly peers: () => readonly SharePeer[],
    private readonly key: () => string | undefined,
    private readonly timeoutMs: number,
  ) {}

  /** One target per peer, for a source fragment being built. */
  targets(fallbackScript: URL): RemoteShareTarget[] {
    const key = this.key();
    if (key === undefined) return [];
    const script = workerScript();
    return this.peers().map((peer) => {
      const stats = new SharedArrayBuffer(16);
      let list = this.stats.get(peer.nodeId);
      if (list === undefined) this.stats.set(peer.nodeId, (list = []));
      list.push(new BigInt64Array(stats));
      const data: RemoteShareData = { address: peer.shareAddress, node: peer.nodeId, key, stats, fallbackScript: fallbackScript.href, timeoutMs: this.timeoutMs };
      return { node: peer.nodeId, script, data };
    });
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
