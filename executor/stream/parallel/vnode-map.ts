// A keyed fragment's vnode map (executor/cluster/README.md, "Each node owning its vnodes' state",
// step 1): the owner index of each of the 256 vnodes, the owners being the leader's worker threads
// first, then one share per other node. A fragment built fresh starts from the balanced map
// `vnode mod N` (the assignment of a single node); a change of owners rebalances the map it had,
// moving as few vnodes as can be: each owner ends with floor or ceil of 256/N, the owners holding
// most keep the larger counts, a removed owner's vnodes go to the owners holding fewest first, and
// an owner above its count gives its surplus, taken from each such owner in turn, to the owners
// below theirs; given which owners held which vnodes before, each moved vnode goes to an owner that
// never held it wherever the counts allow (a matching), so the cut can keep that owner running.
// The exchange routes a row to `map[vnode]`, a lookup in place of the modulo.

import type { VnodeMapRow } from '../../system/vnodes-relation.js';
import { VNODE_COUNT } from './vnode.js';

/** The owner index of each vnode (VNODE_COUNT entries). */
export type VnodeMap = Uint16Array;

/** Who an owner is: a thread of the leader (its node id, null on a server without --cluster, and the thread's index) or another node's share (its node id, thread null). */
export type VnodeOwner = VnodeMapRow['owners'][number];

/** The balanced map of a fragment built fresh: vnode v to owner v mod `owners`. */
export function balancedMap(owners: number): VnodeMap {
  if (!Number.isInteger(owners) || owners < 1 || owners > 0xffff) throw new RangeError(`a vnode map needs 1 to 65535 owners, not ${owners}`);
  const map = new Uint16Array(VNODE_COUNT);
  for (let vnode = 0; vnode < VNODE_COUNT; vnode++) map[vnode] = vnode % owners;
  return map;
}

/** How many vnodes each of `owners` owners holds in `map`. */
export function ownerCounts(map: VnodeMap, owners: number): number[] {
  const counts = new Array<number>(owners).fill(0);
  for (let vnode = 0; vnode < map.length; vnode++) counts[map[vnode]!]!++;
  return counts;
}

/**
 * The map after a change of owners: `next[i]` is the new index of old owner i, or -1 when it is
 * removed; new indexes no old owner maps to are owners that joined; `owners` is the new number.
 * Deterministic, and it moves exactly the vnodes of removed owners plus each remaining owner's
 * surplus over its new count (no map with balanced counts moves fewer). `heldBefore(owner, vnode)`
 * (new owner index): whether that owner held the vnode at some time before; the moved vnodes then
 * go to owners that did not, as many as the counts allow (the others as without it).
 */
export function rebalanceMap(map: VnodeMap, next: readonly number[], owners: number, heldBefore?: (owner: number, vnode: number) => boolean): VnodeMap {
  if (!Number.isInteger(owners) || owners < 1 || owners > 0xffff) throw new RangeError(`a vnode map needs 1 to 65535 owners, not ${owners}`);
  const out = new Uint16Array(VNODE_COUNT);
  const held: number[][] = Array.from({ length: owners }, () => []);
  const orphans: number[] = [];
  for (let vnode = 0; vnode < VNODE_COUNT; vnode++) {
    const to = next[map[vnode]!] ?? -1;
    if (to < 0 || to >= owners) orphans.push(vnode);
    else held[to]!.push(vnode);
  }
  // Each owner's count: floor(256/N), and one more for the `extra` owners holding most (ties: the lower index).
  const base = Math.floor(VNODE_COUNT / owners);
  const extra = VNODE_COUNT % owners;
  const byHeld = held.map((list, owner) => ({ owner, count: list.length })).sort((a, b) => b.count - a.count || a.owner - b.owner);
  const target = new Array<number>(owners).fill(base);
  for (let i = 0; i < extra; i++) target[byHeld[i]!.owner]!++;
  // The surplus, taken from each owner above its count in turn (its highest vnodes first).
  const pool = [...orphans];
  const surplus = held.map((list, owner) => Math.max(0, list.length - target[owner]!));
  let left = surplus.reduce((sum, count) => sum + count, 0);
  while (left > 0) {
    for (let owner = 0; owner < owners; owner++) {
      if (surplus[owner]! === 0) continue;
      surplus[owner]!--;
      left--;
      pool.push(held[owner]!.pop()!);
    }
  }
  // With what the owners held before: as many pool vnodes as can go to owners that never held them
  // (a maximum matching under each owner's room: augmenting paths), the rest as below.
  const rest = heldBefore === undefined ? pool : matchFresh(pool, held, target, heldBefore);
  // Each vnode of the pool to the owner below its count holding fewest (ties: the lower index).
  for (const vnode of rest) {
    let best = -1;
    for (let owner = 0; owner < owners; owner++) {
      const count = held[owner]!.length;
      if (count >= target[owner]!) continue;
      if (best < 0 || count < held[best]!.length) best = owner;
    }
    held[best]!.push(vnode);
  }
  held.forEach((list, owner) => {
    for (const vnode of list) out[vnode] = owner;
  });
  return out;
}

/**
 * Gives the vnodes of `pool` to owners below their `target` count that never held them (`heldBefore`),
 * as many as can be (a vnode taken by an owner with no room left moves on to another fresh owner
 * with room when that frees one: Kuhn's augmenting paths over owners' slots), pushing them onto
 * `held`; returns the vnodes no such owner can take. Owners are tried fewest held first (ties: the
 * lower index), so the counts stay even where the choice is free. At most 256 vnodes: cheap.
 */
function matchFresh(pool: readonly number[], held: number[][], target: readonly number[], heldBefore: (owner: number, vnode: number) => boolean): number[] {
  const owners = held.length;
  const room = target.map((count, owner) => Math.max(0, count - held[owner]!.length));
  const taken: number[][] = Array.from({ length: owners }, () => []);
  const fresh = (owner: number, vnode: number): boolean => room[owner]! > 0 && !heldBefore(owner, vnode);
  const order = (): number[] =>
    Array.from({ length: owners }, (_, owner) => owner).sort((a, b) => held[a]!.length + taken[a]!.length - (held[b]!.length + taken[b]!.length) || a - b);
  const place = (vnode: number, visited: Uint8Array): boolean => {
    const owners = order();
    for (const owner of owners) {
      if (visited[owner] === 1 || !fresh(owner, vnode)) continue;
      if (taken[owner]!.length < room[owner]!) {
        taken[owner]!.push(vnode);
        return true;
      }
    }
    for (const owner of owners) {
      if (visited[owner] === 1 || !fresh(owner, vnode)) continue;
      visited[owner] = 1;
      const list = taken[owner]!;
      for (let at = 0; at < list.length; at++) {
        const other = list[at]!;
        list.splice(at, 1);
        if (place(other, visited)) {
          list.push(vnode);
          return true;
        }
        list.splice(at, 0, other);
      }
    }
    return false;
  };
  const rest: number[] = [];
  for (const vnode of pool) if (!place(vnode, new Uint8Array(owners))) rest.push(vnode);
  taken.forEach((list, owner) => {
    for (const vnode of list) held[owner]!.push(vnode);
  });
  return rest;
}

/** The new index of each old owner, matched by who it is (a thread by its index, a node's share by its node id); -1: gone. */
export function ownerMoves(before: readonly VnodeOwner[], after: readonly VnodeOwner[]): number[] {
  return before.map((owner) => after.findIndex((candidate) => (owner.thread === null ? candidate.thread === null && candidate.node === owner.node : candidate.thread === owner.thread)));
}

/** A fragment's map as the leader records it in etcd and shows it (oxbow_catalog.vnodes' row, with the map as it is routed by). */
export interface VnodeMapRecord extends VnodeMapRow {
  readonly map: VnodeMap;
}

/** The JSON the leader writes at `<prefix>/fragments/<view id>/<fragment>`: `vnodes`, the 256 owner indexes; `owners`, each index's owner. */
export function encodeVnodeMap(record: VnodeMapRecord): string {
  return JSON.stringify({ vnodes: Array.from(record.map), owners: record.owners.map((owner) => ({ node: owner.node, thread: owner.thread })) });
}

/** Where a leader's keyed fragments' maps go (executor/cluster/: etcd), and the node id its threads are named by. */
export interface VnodeMapSink {
  readonly nodeId: string;
  /** A fragment was built or its owners cut again: its map now. */
  record(record: VnodeMapRecord): void;
  /** A fragment's dataflow ended (its view dropped, or the view rebuilt). */
  drop(viewId: number, fragment: number): void;
}
