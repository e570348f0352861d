// Virtual nodes: a key's hash bucket out of 256 (storage/vnode-hash.ts, the key layout's vnode
// byte). A parallel fragment's owners own vnodes by its vnode map (vnode-map.ts: built as v mod N,
// owner i of N owning the vnodes v with v mod N == i, then rebalanced when the owners change), so a
// key's owner follows from the key and the map: a restart with another parallelism finds every
// key's state where its new owner looks for it (state rows are keyed by the key itself, and a
// table's vnode byte by the key's hash, whatever the parallelism).

import type { SplitRange } from '../stream-context.js';

export { VNODE_COUNT, VnodeHasher, vnodeOf } from '../../../storage/vnode-hash.js';

/** The worker owning a vnode at a parallelism. */
export function ownerOf(vnode: number, parallelism: number): number {
  return vnode % parallelism;
}

/**
 * A generator source's split ranges cut among N workers: each range [from, to) of a split in N
 * contiguous shares, worker (next + w) mod N getting [from + len*w/N, from + len*(w+1)/N), the
 * first share rotating over the workers from range to range. `shares[i]` holds worker i's
 * (split, start, end) triples; `next` is the rotation for the following ranges.
 */
export function splitShares(ranges: readonly SplitRange[], parallelism: number, next: number): { shares: number[][]; next: number } {
  const shares: number[][] = [];
  for (let w = 0; w < parallelism; w++) shares.push([]);
  for (const { split, from, to } of ranges) {
    const length = to - from;
    if (length <= 0) continue;
    for (let w = 0; w < parallelism; w++) {
      const start = from + Math.floor((length * w) / parallelism);
      const end = from + Math.floor((length * (w + 1)) / parallelism);
      if (end > start) shares[(next + w) % parallelism]!.push(split, start, end);
    }
    next = (next + 1) % parallelism;
  }
  return { shares, next };
}
