// The MVCC key layout shared by every state table:
//
//   tableId (4 bytes, big endian) | vnode (1 byte) | key (memcomparable) | ~epoch (8 bytes, big endian)
//
// The epoch is inverted so that the versions of one key sort newest first: "the newest version at
// or before E" is the first entry at or after `prefix | ~E`, one seek. The vnode is the key's
// bucket out of 256 (vnode-hash.ts): a keyed fragment's state tables in views of plan version 11 or
// later carry it (state-table.ts `vnodeColumns`), so a vnode is one key range a node can read or
// drop whole; every other table uses vnode 0, which keeps its rows in key order for range scans. Table id 0xFFFFFFFF holds the
// store's own records (committed epoch, metadata, table windows), outside every table's range.

import { assert } from '../sql/errors.js';
import type { Epoch } from '../sql/epoch.js';
import type { ByteWriter } from './byte-writer.js';

export const TABLE_ID_BYTES = 4;
export const VNODE_BYTES = 1;
export const TABLE_PREFIX_BYTES = TABLE_ID_BYTES + VNODE_BYTES;
export const EPOCH_SUFFIX_BYTES = 8;
export const SYSTEM_TABLE_ID = 0xffffffff;
export const MAX_TABLE_ID = 0xfffffffe;
export const DEFAULT_VNODE = 0;

const EPOCH_MASK = (1n << 64n) - 1n;

export function assertTableId(tableId: number): void {
  assert(Number.isInteger(tableId) && tableId >= 0 && tableId <= MAX_TABLE_ID, `table id ${tableId} out of range 0..${MAX_TABLE_ID}`);
}

export function writeTablePrefix(writer: ByteWriter, tableId: number, vnode = DEFAULT_VNODE): void {
  writer.uint32BigEndian(tableId);
  writer.byte(vnode);
}

/** The 8-byte inverted epoch that ends a versioned key. */
export function epochSuffix(epoch: Epoch): Buffer {
  const suffix = Buffer.allocUnsafe(EPOCH_SUFFIX_BYTES);
  suffix.writeBigUInt64BE(EPOCH_MASK ^ epoch);
  return suffix;
}

/** Appends the inverted epoch to a key being built (no Buffer per call). */
export function writeEpochSuffix(writer: ByteWriter, epoch: Epoch): void {
  writer.uint64BigEndian(EPOCH_MASK ^ epoch);
}

/** The suffix of the newest possible epoch: seeking to `prefix | LATEST` finds the newest version. */
export const LATEST_SUFFIX = Buffer.alloc(EPOCH_SUFFIX_BYTES, 0);

export function readEpochSuffix(buffer: Buffer, keyEnd: number): Epoch {
  return EPOCH_MASK ^ buffer.readBigUInt64BE(keyEnd - EPOCH_SUFFIX_BYTES);
}

/** First key of a table's range (its vnode 0). */
export function tableLowerBound(tableId: number): Buffer {
  const bound = Buffer.alloc(TABLE_ID_BYTES);
  bound.writeUInt32BE(tableId);
  return bound;
}

/**
 * The key range of vnodes `from` to `to - 1` of a table whose keys carry their vnode
 * (state-table.ts `vnodeColumns`): [tableId | from, tableId | to), the table's end when `to` is 256.
 */
export function vnodeRange(tableId: number, from: number, to: number): { lower: Buffer; upper: Buffer } {
  assert(Number.isInteger(from) && Number.isInteger(to) && from >= 0 && from < to && to <= 256, `vnodes ${from} to ${to} out of range`);
  const lower = Buffer.alloc(TABLE_PREFIX_BYTES);
  lower.writeUInt32BE(tableId);
  lower[TABLE_ID_BYTES] = from;
  if (to === 256) return { lower, upper: tableUpperBound(tableId) };
  const upper = Buffer.alloc(TABLE_PREFIX_BYTES);
  upper.writeUInt32BE(tableId);
  upper[TABLE_ID_BYTES] = to;
  return { lower, upper };
}

/**
 * The key ranges of the vnodes flagged 1 in `flags` (one byte per vnode, 256 of them) of a table
 * whose keys carry their vnode: one `vnodeRange` per run of consecutive flagged vnodes, ascending.
 */
export function vnodeRunRanges(tableId: number, flags: Uint8Array): { lower: Buffer; upper: Buffer }[] {
  const ranges: { lower: Buffer; upper: Buffer }[] = [];
  for (let from = 0; from < flags.length; ) {
    if (flags[from] !== 1) {
      from++;
      continue;
    }
    let to = from + 1;
    while (to < flags.length && flags[to] === 1) to++;
    ranges.push(vnodeRange(tableId, from, to));
    from = to;
  }
  return ranges;
}

/** Exclusive end of a table's range: the next table id. */
export function tableUpperBound(tableId: number): Buffer {
  const bound = Buffer.alloc(TABLE_ID_BYTES);
  bound.writeUInt32BE(tableId + 1);
  return bound;
}
