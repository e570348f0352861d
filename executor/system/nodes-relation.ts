// oxbow_catalog.nodes: the nodes of a cluster (--cluster etcd://...), as the node serving the
// statement last read them from etcd (executor/cluster/ keeps the list fresh): node id, address,
// role (leader or standby), state, the epoch of the last checkpoint it wrote (leader) or followed
// (standby), its etcd lease, and under --remote-shares on the address where it runs shares of the
// leader's source fragments, the share protocol version it speaks (a node of another version than
// the leader's gets no share) and (on the leader) the units it generated in them, the rows of keyed
// fragments it processed, what its keyed shares were seeded with and how soon they answered, and
// the vnodes it owns across the keyed fragments (oxbow_catalog.vnodes; null on a standby and where
// no keyed fragment runs). Empty on a server started without --cluster.

import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';
import { vnodesOwnedBy } from './vnodes-relation.js';

/** Next to checkpoints (13240) and recovery (13241). */
export const NODES_RELATION_ID = 13242;

/** One node as it registered itself in etcd. */
export interface ClusterNodeRow {
  readonly nodeId: string;
  /** host:port of its PostgreSQL wire protocol port. */
  readonly address: string;
  readonly role: 'leader' | 'standby';
  /** What it is doing: 'following', 'promoting', 'serving', ... */
  readonly state: string;
  /** Epoch of the last complete checkpoint it wrote (leader) or followed (standby); null: none yet. */
  readonly checkpointEpoch: bigint | null;
  /** Its etcd lease, in hexadecimal as etcdctl prints it. */
  readonly leaseId: string;
  /** Whether this row is the node serving the statement. */
  readonly self: boolean;
  /** host:port where it runs shares of the leader's source fragments (--remote-shares on), or null. */
  readonly shareAddress: string | null;
  /** The share protocol version it speaks (with a share address; 1 for a node that names none), or null. The leader gives no share to a node whose version differs from its own. */
  readonly shareProtocol: number | null;
  /** On the leader: the source units this node generated for it in remote shares (null: it got no share). */
  readonly shareUnits: bigint | null;
  /** Rows of keyed fragments the node processed for the leader (its keyed shares' handed-over epochs). */
  readonly shareRows: bigint | null;
  /** On the leader: the state rows and bytes its keyed shares were seeded with (their vnodes' only), summed. */
  readonly shareSeedRows: bigint | null;
  readonly shareSeedBytes: bigint | null;
  /** On the leader: the longest time from a keyed share's seed read to the node's first batch of it (null until each has sent one). */
  readonly shareReadyMs: bigint | null;
}

export const nodesTable: SystemTable = {
  def: systemRelation(NODES_RELATION_ID, 'oxbow_catalog', 'nodes', ['node_id:text', 'address:text', 'role:text', 'state:text', 'checkpoint_epoch:int8', 'lease_id:text', 'is_self:bool', 'share_address:text', 'share_protocol:int4', 'share_units:int8', 'share_rows:int8', 'share_seed_rows:int8', 'share_seed_bytes:int8', 'share_ready_ms:int8', 'vnodes:int4']),
  rows: (context) => {
    const maps = context.vnodeMaps?.() ?? [];
    return (context.clusterNodes?.() ?? []).map((node): Row => [
      node.nodeId, node.address, node.role, node.state, node.checkpointEpoch, node.leaseId, node.self, node.shareAddress, node.shareProtocol,
      node.shareUnits, node.shareRows, node.shareSeedRows, node.shareSeedBytes, node.shareReadyMs, vnodesOwnedBy(maps, node.nodeId),
    ]);
  },
};
