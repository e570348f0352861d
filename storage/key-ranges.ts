// A table's rows cut into contiguous key ranges of about equal size, and the committed rows of one
// range read at an epoch, for scans that several threads share (executor/batch/parallel-aggregate.ts).
//
// A relation's table keeps its rows under vnode 0 (mvcc-key.ts; only a keyed fragment's state
// tables carry other vnodes, and nothing here reads them), so a table is one byte range
// [tableId | 0, tableId | 1); the cut points come from RocksDB's size estimate (approximateSize,
// SST files and memtables) by bisection, then move to the start of the next stored key, so that
// all versions of a key fall in one range. A range is a pair of encoded bounds (table prefix and
// memcomparable key, no epoch suffix), exactly the bounds MvccStateTable's scans use.
//
// The reads go straight to RocksDB at a committed epoch, as MvccStateTable.scan({ epoch }) does:
// the newest version at or before the epoch per key, tombstones skipped. What the store keeps only
// in memory does not apply to such a read except range deletes not yet applied to RocksDB
// (MvccStateTable.rangeDeletesPending), which the caller checks first.

import type { Epoch } from '../sql/epoch.js';
import type { Row } from '../sql/value.js';
import { EPOCH_SUFFIX_BYTES, SYSTEM_TABLE_ID, TABLE_ID_BYTES, TABLE_PREFIX_BYTES, epochSuffix, tableLowerBound } from './mvcc-key.js';
import { decodeRow } from './row-codec.js';
import type { RocksDatabase } from './rocksdb.js';
import { WriteBatchBuilder } from './write-batch.js';

/** Bytes of key position the bisection works on, after the table prefix. */
const POSITION_BYTES = 8;
const POSITION_END = 1n << BigInt(POSITION_BYTES * 8);

/** The byte range of a table's rows: [tableId | vnode 0, tableId | vnode 1). */
export function tableKeyRange(tableId: number): { lower: Buffer; upper: Buffer } {
  const lower = Buffer.alloc(TABLE_PREFIX_BYTES);
  lower.writeUInt32BE(tableId);
  const upper = Buffer.alloc(TABLE_PREFIX_BYTES);
  upper.writeUInt32BE(tableId);
  upper[TABLE_ID_BYTES] = 1;
  return { lower, upper };
}

/**
 * The byte ranges of every table but `keep` (table ids, any order), ascending, each
 * `[tableId, tableId')` over 4-byte table prefixes (every vnode), the store's records (table
 * 0xFFFFFFFF) excluded: one range per gap between the kept tables.
 */
export function rangesOutsideTables(keep: readonly number[]): { lower: Buffer; upper: Buffer }[] {
  for (const id of keep) {
    if (!Number.isInteger(id) || id < 0 || id >= SYSTEM_TABLE_ID) throw new RangeError(`not a table id: ${id}`);
  }
  const ids = [...new Set(keep)].sort((a, b) => a - b);
  const ranges: { lower: Buffer; upper: Buffer }[] = [];
  let from = 0;
  for (const id of ids) {
    if (id > from) ranges.push({ lower: tableLowerBound(from), upper: tableLowerBound(id) });
    from = id + 1;
  }
  if (from < SYSTEM_TABLE_ID) ranges.push({ lower: tableLowerBound(from), upper: tableLowerBound(SYSTEM_TABLE_ID) });
  return ranges;
}

/**
 * Drops the rows of every table but `keep` from `database` (a keyed share's store made from a
 * whole checkpoint, executor/cluster/README.md "Keyed shares"): one write of a RocksDB range delete
 * per gap between the kept tables (rangesOutsideTables), the store's records kept. Reads no longer
 * see those rows at once; their bytes go as RocksDB compacts the ranges (compactRange over them).
 * Returns the ranges.
 */
export function dropTablesOutside(database: RocksDatabase, keep: readonly number[]): { lower: Buffer; upper: Buffer }[] {
  const ranges = rangesOutsideTables(keep);
  if (ranges.length === 0) return ranges;
  const batch = new WriteBatchBuilder();
  for (const range of ranges) batch.deleteRange(range.lower, range.upper);
  database.write(batch.view());
  return ranges;
}

/** RocksDB's estimate of the bytes a table's rows take (every version, SST files and memtables). */
export function tableApproximateBytes(database: RocksDatabase, tableId: number): number {
  const { lower, upper } = tableKeyRange(tableId);
  return database.approximateSize(lower, upper);
}

function positionKey(tableId: number, position: bigint): Buffer {
  const key = Buffer.alloc(TABLE_PREFIX_BYTES + POSITION_BYTES);
  key.writeUInt32BE(tableId);
  key.writeBigUInt64BE(position, TABLE_PREFIX_BYTES);
  return key;
}

/**
 * The start of the first stored key at or after `at` (its bytes without the epoch suffix), or
 * `upper` when none is below it.
 */
function keyStartAt(database: RocksDatabase, at: Buffer, upper: Buffer): Buffer {
  const iterator = database.iterator({ lowerBound: at, upperBound: upper, fillCache: false });
  try {
    const packed = iterator.nextPacked(1);
    if (packed === null) return upper;
    const keyLength = packed.readUInt32LE(0);
    return Buffer.from(packed.subarray(4, 4 + keyLength - EPOCH_SUFFIX_BYTES));
  } finally {
    iterator.close();
  }
}

/**
 * `parts` contiguous ranges covering the table's rows, about equal in RocksDB's size estimate:
 * `parts + 1` ascending bounds, the first the table's start, the last its end. A range may be
 * empty (equal bounds); the ranges cover every key whatever the estimate says.
 */
export function tableKeySplits(database: RocksDatabase, tableId: number, parts: number): Buffer[] {
  const { lower, upper } = tableKeyRange(tableId);
  const total = database.approximateSize(lower, upper);
  const bounds: Buffer[] = [lower];
  let from = 0n;
  for (let part = 1; part < parts; part++) {
    const target = (total * part) / parts;
    // The smallest position whose prefix holds at least `target` bytes.
    let low = from;
    let high = POSITION_END - 1n;
    while (low < high) {
      const middle = (low + high) >> 1n;
      if (database.approximateSize(lower, positionKey(tableId, middle)) >= target) high = middle;
      else low = middle + 1n;
    }
    from = low;
    const previous = bounds[bounds.length - 1]!;
    const bound = keyStartAt(database, positionKey(tableId, low), upper);
    bounds.push(Buffer.compare(bound, previous) < 0 ? previous : bound);
  }
  bounds.push(upper);
  return bounds;
}

/** Entries per native call of a range read. */
const READ_BATCH_ENTRIES = 512;

/**
 * The rows with keys in [lower, upper) as of committed epoch `epoch`, in key order, a packed batch
 * of up to 512 at a time (decoded rows; a tombstone's key yields nothing).
 */
export function* committedRowsInRange(database: RocksDatabase, lower: Buffer, upper: Buffer, epoch: Epoch): Generator<Row[]> {
  const iterator = database.iterator({ lowerBound: lower, upperBound: upper, epochSuffix: epochSuffix(epoch) });
  try {
    for (;;) {
      const packed = iterator.nextPacked(READ_BATCH_ENTRIES);
      if (packed === null) return;
      const rows: Row[] = [];
      let offset = 0;
      while (offset < packed.length) {
        const keyEnd = offset + 4 + packed.readUInt32LE(offset);
        const valueStart = keyEnd + 4;
        offset = valueStart + packed.readUInt32LE(keyEnd);
        const row = decodeRow(packed, valueStart);
        if (row !== undefined) rows.push(row);
      }
      yield rows;
    }
  } finally {
    iterator.close();
  }
}

