// The seeds of a keyed fragment's shares on other nodes (executor/cluster/README.md, "Keyed
// shares"): the committed entries of the fragment's state tables, each share getting only the rows
// of the vnodes it owns (owner `vnode mod owners`, the worker threads first), with every table's
// record. State rows are keyed by the operator's key with vnode byte 0 (storage/mvcc-key.ts), so a
// vnode is no key range: each row's vnode is computed from the columns the planner names for its
// table (`Fragment.stateVnodes`), the same values the exchange hashes for the row's input, read
// from the stored row (the row codec holds every column). The versions of one key are adjacent,
// newest first, and go to one owner: a tombstone goes with the key's first put found after it, and
// a key with tombstones only (no row at any epoch) goes nowhere. A table the planner names no
// columns for goes whole to every share.
//
// Read once, when the fragment is built (no epoch of it in flight: a safe point), on the main thread.

import type { StateTableDeclaration } from '../../../planner/stream/stream-plan.js';
import type { DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { EPOCH_SUFFIX_BYTES, tableLowerBound, tableUpperBound } from '../../../storage/mvcc-key.js';
import { tableRecordKey } from '../../../storage/mvcc-state-store.js';
import { forEachPacked, type RocksDatabase } from '../../../storage/rocksdb.js';
import { decodeRowValue, ROW_TOMBSTONE, RowReader } from '../../../storage/row-codec.js';
import { WriteBatchBuilder } from '../../../storage/write-batch.js';
import { VnodeHasher } from './vnode.js';

/** One share's seed. */
export interface KeyedSeed {
  /** Packed entries (write-batch.ts) the node's store is written with first. */
  readonly bytes: Uint8Array;
  /** Keys whose newest version is a row (the state rows the share starts with). */
  readonly rows: number;
  /** Entries (every version of those keys, the tombstones among them). */
  readonly entries: number;
}

/**
 * The seeds of shares `first .. owners - 1` (owner `first + i` gets seed i) of a fragment whose
 * state tables are `tables`, as of `database`'s committed state.
 */
export function keyedSeeds(
  database: RocksDatabase,
  tables: readonly StateTableDeclaration[],
  stateVnodes: ReadonlyMap<number, readonly number[]>,
  first: number,
  owners: number,
): KeyedSeed[] {
  const shares = owners - first;
  const builders = Array.from({ length: shares }, () => new WriteBatchBuilder());
  const rows = new Array<number>(shares).fill(0);
  const entries = new Array<number>(shares).fill(0);
  const reader = new RowReader(Buffer.alloc(0));
  const values: Value[] = [];
  /** The key (without its epoch suffix) of the entries being routed, and their owner's seed (-1: no share's, -2: not known yet). */
  let current = Buffer.alloc(256);
  let currentLength = -1;
  let target = -2;
  /** Tombstones of the current key before its first put (copied: the packed buffer is reused). */
  let waiting: Buffer[] = [];
  for (const table of tables) {
    const columns = stateVnodes.get(table.tableId);
    const types: DataType[] | undefined = columns?.map((column) => table.columnTypes[column]!);
    const hasher = types === undefined ? undefined : new VnodeHasher(types);
    const width = columns === undefined ? 0 : Math.max(...columns) + 1;
    currentLength = -1;
    waiting = [];
    const iterator = database.iterator({ lowerBound: tableLowerBound(table.tableId), upperBound: tableUpperBound(table.tableId) });
    try {
      for (let packed = iterator.nextPacked(1024); packed !== null; packed = iterator.nextPacked(1024)) {
        forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
          const tombstone = valueEnd === valueStart || buffer[valueStart] === ROW_TOMBSTONE;
          const prefixEnd = keyEnd - EPOCH_SUFFIX_BYTES;
          const prefixLength = prefixEnd - keyStart;
          const sameKey = prefixLength === currentLength && buffer.compare(current, 0, currentLength, keyStart, prefixEnd) === 0;
          if (!sameKey) {
            if (prefixLength > current.length) current = Buffer.alloc(prefixLength * 2);
            buffer.copy(current, 0, keyStart, prefixEnd);
            currentLength = prefixLength;
            target = -2;
            waiting = [];
          }
          if (hasher === undefined) {
            // No vnode columns: every share gets the table.
            for (let share = 0; share < shares; share++) {
              builders[share]!.put(buffer.subarray(keyStart, keyEnd), buffer.subarray(valueStart, valueEnd));
              entries[share]!++;
              if (!sameKey && !tombstone) rows[share]!++;
            }
            return;
          }
          if (target === -2) {
            if (tombstone) {
              waiting.push(Buffer.from(buffer.subarray(keyStart, keyEnd)), Buffer.from(buffer.subarray(valueStart, valueEnd)));
              return;
            }
            // The newest put of the key: its row's vnode columns name the owner.
            reader.buffer = buffer;
            reader.offset = valueStart + 1;
            reader.varint();
            values.length = 0;
            for (let column = 0; column < width; column++) values.push(decodeRowValue(reader));
            const owner = hasher.ofColumns(values, columns!) % owners;
            target = owner >= first ? owner - first : -1;
            if (target >= 0) {
              const builder = builders[target]!;
              for (let at = 0; at < waiting.length; at += 2) builder.put(waiting[at]!, waiting[at + 1]!);
              entries[target]! += waiting.length / 2;
              // The first version found is the newest: a put there makes a row.
              if (waiting.length === 0) rows[target]!++;
            }
            waiting = [];
          }
          if (target < 0) return;
          builders[target]!.put(buffer.subarray(keyStart, keyEnd), buffer.subarray(valueStart, valueEnd));
          entries[target]!++;
        });
      }
    } finally {
      iterator.close();
    }
    const key = tableRecordKey(table.tableId);
    const record = database.get(key);
    if (record !== undefined) for (const builder of builders) builder.put(key, record);
  }
  return builders.map((builder, share) => ({ bytes: builder.writer.copy(), rows: rows[share]!, entries: entries[share]! }));
}
