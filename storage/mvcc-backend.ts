// The ordered key-value store under the MVCC state tables: RocksDB through the addon
// (rocks-backend.ts) or a sorted in-memory map (memory-backend.ts). Both speak the same packed
// formats (write-batch.ts for writes, [u32le keyLength][key][u32le valueLength][value] for scans)
// and the same MVCC iteration rule, so the state tables on top are one implementation.

import type { Epoch } from '../sql/epoch.js';
import type { Bytes } from './byte-writer.js';

export interface BackendScanOptions {
  readonly lowerBound: Bytes;
  readonly upperBound: Bytes;
  readonly reverse?: boolean;
  /** MVCC mode: only the newest version at or before this inverted epoch, per key. */
  readonly epochSuffix?: Bytes;
  readonly keepTombstones?: boolean;
}

export interface BackendIterator {
  /** Up to maxEntries packed entries, or null at the end. */
  nextPacked(maxEntries: number): Buffer | null;
  close(): void;
}

/** A part of the process's memory a store or backend holds (the operator's view: oxbow_catalog.memory). */
export interface MemoryPart {
  /** A lower-case name, stable across releases: `rocksdb_memtables`, `row_cache` ... */
  readonly component: string;
  readonly bytes: number;
  /** The bound it is kept under, where there is one. */
  readonly limitBytes: number | null;
}

export interface MvccBackend {
  /**
   * True when the backend keeps its writes in the order they are started (a worker thread's
   * backend, whose batches go to the thread that commits them): the store starts each sealed
   * epoch's write at once instead of after the previous one finished.
   */
  readonly ordersWrites?: boolean;
  /**
   * The newest version at or before the epoch encoded in `seekKey` (prefix | ~epoch). The value
   * starts at offset 0 of the returned buffer, which may be longer (a reused scratch buffer: rows
   * are self-delimiting) and is valid only until the next call.
   */
  getLatestVersion(seekKey: Buffer): Buffer | undefined;
  /** A plain (unversioned) key: store records and metadata. */
  get(key: Buffer): Buffer | undefined;
  scan(options: BackendScanOptions): BackendIterator;
  /** Applies a packed batch atomically and durably (WAL synced). */
  write(packed: Buffer): void;
  /**
   * Fails now (with nothing written) when a batch of `bytes` cannot be taken: the disk reserve.
   * writeAsync's caller asks first, so a full disk fails the commit before its epoch is sealed.
   */
  checkWritable(bytes: number): void;
  /**
   * As write(), off the main thread where the backend can (RocksDB: the libuv pool). `packed` must
   * stay unchanged until the Promise settles; the caller starts one write at a time, in order.
   */
  writeAsync(packed: Buffer): Promise<void>;
  approximateSize(lowerBound: Bytes, upperBound: Bytes): number;
  approximateKeys(lowerBound: Bytes, upperBound: Bytes): number;
  /**
   * One table's size and keys (versions included) for the operator's view: its key range
   * [lowerBound, upperBound) measured with what the backend knows best about it (RocksDB: the
   * SST and memtable estimate plus its bytes in blob files, and its entries counted per file).
   */
  tableStats(tableId: number, lowerBound: Bytes, upperBound: Bytes): { bytes: number; keys: number };
  /** The backend's own memory outside the JS heap, by component (RocksDB's caches and memtables; none in memory). */
  memoryUsage(): readonly MemoryPart[];
  /** Versions of the table shadowed by one at or below `epoch` may now be garbage-collected. */
  setRetentionWatermark(tableId: number, epoch: Epoch): void;
  /**
   * The table holds small records rewritten every epoch (StateTableSchema.records): RocksDB keeps
   * them apart from the growing tables (its records column family). Idempotent; absent in memory.
   */
  markRecordsTable?(tableId: number): void;
  close(): Promise<void>;
}
