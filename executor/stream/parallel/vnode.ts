// Virtual nodes: a key's hash bucket out of 256 (storage/DESIGN.md, the key layout's vnode byte).
// A parallel dataflow's worker i of N owns the vnodes v with v mod N == i, so a key's owner follows
// from the key alone: a restart with another parallelism finds every key's state where its new
// owner looks for it (state rows are keyed by the key itself). The hash is FNV-1a over the key's
// memcomparable encoding: equal keys as the state tables see them land in one vnode, in every
// thread and every process.

import type { DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { encodeKey } from '../../../storage/memcomparable.js';

export const VNODE_COUNT = 256;

const scratch = new ByteWriter(256);

/** The vnode of a key (the values of a distribution key, with their types). */
export function vnodeOf(key: readonly Value[], types: readonly DataType[]): number {
  scratch.reset();
  encodeKey(scratch, key, types);
  return vnodeOfBytes(scratch.buffer, scratch.length);
}

export function vnodeOfBytes(bytes: Uint8Array, length: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < length; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return (hash >>> 0) % VNODE_COUNT;
}

/** The worker owning a vnode at a parallelism. */
export function ownerOf(vnode: number, parallelism: number): number {
  return vnode % parallelism;
}
