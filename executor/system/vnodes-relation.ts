// oxbow_catalog.vnodes: the vnode map of each keyed fragment running on this node (a cluster's
// leader, or a single node; executor/stream/parallel/vnode-map.ts), one row per fragment and vnode:
// the view (name and id), the fragment's number within its view, the vnode (0-255), the node that
// owns it and, for a thread of this node, the thread's index (null for another node's share). A
// thread's node id is this node's under --cluster, null on a server started without it. Empty on a
// standby and without parallel keyed fragments.

import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';

/** Next to nodes (13242). */
export const VNODES_RELATION_ID = 13243;

/** One keyed fragment's map as the runtime keeps it. */
export interface VnodeMapRow {
  readonly viewId: number;
  /** The fragment's number within its view (in the order the view's dataflow built them, from 0). */
  readonly fragment: number;
  /** The owner index of each vnode. */
  readonly map: ArrayLike<number>;
  readonly owners: readonly { readonly node: string | null; readonly thread: number | null }[];
}

export const vnodesTable: SystemTable = {
  def: systemRelation(VNODES_RELATION_ID, 'oxbow_catalog', 'vnodes', ['view_name:text', 'view_id:int4', 'fragment:int4', 'vnode:int4', 'node_id:text', 'thread:int4']),
  rows: (context) => {
    const rows: Row[] = [];
    const maps = [...(context.vnodeMaps?.() ?? [])].sort((a, b) => a.viewId - b.viewId || a.fragment - b.fragment);
    for (const fragment of maps) {
      const name = context.catalog.relationById(fragment.viewId)?.name ?? null;
      for (let vnode = 0; vnode < fragment.map.length; vnode++) {
        const owner = fragment.owners[fragment.map[vnode]!];
        rows.push([name, fragment.viewId, fragment.fragment, vnode, owner?.node ?? null, owner?.thread ?? null]);
      }
    }
    return rows;
  },
};

/** Vnodes node `nodeId` owns across the keyed fragments, or null when there is none (oxbow_catalog.nodes' vnodes). */
export function vnodesOwnedBy(maps: readonly VnodeMapRow[], nodeId: string): number | null {
  if (maps.length === 0) return null;
  let count = 0;
  for (const fragment of maps) {
    for (let vnode = 0; vnode < fragment.map.length; vnode++) if (fragment.owners[fragment.map[vnode]!]?.node === nodeId) count++;
  }
  return count;
}
