// The only module that loads the native RocksDB addon (storage/native). It gives the addon a typed
// surface and turns the addon's errors into RocksDbError (with the RocksDB failure class as `code`)
// and then, where a user can meet them, into SqlError with the matching SQLSTATE.
//
// Calls are synchronous except the long ones (flush, compactRange, checkpoint), which run on the
// libuv thread pool and return Promises; close() waits for them.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqlError, SqlState, type SqlStateCode } from '../sql/errors.js';
import type { Bytes } from './byte-writer.js';

export type RocksDbErrorCode =
  | 'Corruption'
  | 'IOError'
  | 'NoSpace'
  | 'LockHeld'
  | 'Busy'
  | 'NotFound'
  | 'InvalidArgument'
  | 'NotSupported'
  | 'Incomplete'
  | 'ShutdownInProgress'
  | 'TimedOut'
  | 'Aborted'
  | 'TryAgain'
  | 'Closed'
  | 'Unknown';

export class RocksDbError extends Error {
  override readonly name = 'RocksDbError';
  readonly code: RocksDbErrorCode;
  constructor(code: RocksDbErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export interface OpenOptions {
  readonly createIfMissing?: boolean;
  readonly errorIfExists?: boolean;
  /** LRU block cache for SST data blocks, index and filter blocks. */
  readonly blockCacheBytes?: number;
  readonly bloomBitsPerKey?: number;
  readonly writeBufferBytes?: number;
  /**
   * A write buffer manager: every memtable together bounded to this many bytes and charged to the
   * block cache, whose capacity then holds both (0 or absent: none, memtables outside the cache).
   */
  readonly memtableBudgetBytes?: number;
  readonly blockBytes?: number;
  /** Every level's compression (default lz4: one compression everywhere lets files move down untouched). */
  readonly compression?: 'none' | 'snappy' | 'lz4' | 'zstd';
  /** The bottom level's, and blob files' (default: `compression`). */
  readonly bottommostCompression?: 'none' | 'snappy' | 'lz4' | 'zstd';
  readonly parallelism?: number;
  readonly maxOpenFiles?: number;
  /** Open without writing anything into the directory (inspecting a checkpoint); writes fail. */
  readonly readOnly?: boolean;
  /** Collect RocksDB tickers (statistics()); costs a little on every operation. */
  readonly statistics?: boolean;
  /**
   * false: open without the records column family (the layout of databases written before it, all
   * keys in the default family), which tests of the migration use to make such a database. A
   * database that has a records family refuses it.
   */
  readonly recordsFamily?: boolean;
}

/** The column families: `default` (the tables) and `records` (DESIGN.md §6, "The records family"). */
export type ColumnFamily = 'default' | 'records';

export interface IteratorOptions {
  /** Inclusive. */
  readonly lowerBound?: Bytes;
  /** Exclusive. */
  readonly upperBound?: Bytes;
  readonly reverse?: boolean;
  readonly snapshot?: Snapshot;
  readonly fillCache?: boolean;
  /**
   * MVCC mode: the 8-byte inverted epoch (see mvcc-key.ts). Only the newest version at or before
   * that epoch of each key is returned, tombstones skipped unless keepTombstones.
   */
  readonly epochSuffix?: Bytes;
  readonly keepTombstones?: boolean;
  /** Read this column family alone, whatever the bounds route to (tests and diagnostics). */
  readonly family?: ColumnFamily;
}

export interface LiveFile {
  /** File name inside the database directory, e.g. "000012.sst". */
  readonly name: string;
  readonly directory: string;
  /** The column family holding it. */
  readonly family: ColumnFamily;
  readonly sizeBytes: number;
  readonly level: number;
  readonly fileNumber: number;
  readonly entries: number;
  readonly smallestKey: Buffer;
  readonly largestKey: Buffer;
}

export interface Snapshot {
  readonly id: number;
}

/** An SST file `exportRanges` wrote: its path, the column family its keys belong to, its entries and size. */
export interface ExportedFile {
  readonly path: string;
  readonly family: ColumnFamily;
  readonly entries: number;
  readonly bytes: number;
}

interface NativeIterator {
  seek(key: Bytes): void;
  next(maxEntries: number, maxBytes: number): Buffer | null;
  close(): void;
}

interface NativeDatabase {
  close(): void;
  get(key: Bytes, snapshotId?: number): Buffer | undefined;
  multiGet(keys: Bytes[]): (Buffer | undefined)[];
  getLatestVersion(seekKey: Bytes, out?: Buffer): Buffer | number | undefined;
  write(packed: Bytes, sync: boolean): void;
  writeAsync(packed: Buffer, sync: boolean): Promise<void>;
  deleteRange(start: Bytes, end: Bytes, sync: boolean): void;
  iterator(options: object): NativeIterator;
  snapshot(): number;
  releaseSnapshot(id: number): void;
  getProperty(name: string, family?: ColumnFamily): string | undefined;
  memoryUsage(): [number, number, number, number, number, number];
  statistics(): { tickers: Record<string, number>; text: string } | undefined;
  liveFiles(): LiveFile[];
  approximateSize(start: Bytes, end: Bytes): number;
  tableStats(tableId: number, start: Bytes, end: Bytes): [number, number, number];
  setRetentionWatermark(tableId: number, epoch: bigint): void;
  capRetentionWatermarks(epoch: bigint | null): void;
  flush(): Promise<void>;
  compactRange(start?: Bytes, end?: Bytes): Promise<void>;
  checkpoint(directory: string): Promise<void>;
  exportRanges(directory: string, bounds: Bytes[], snapshotId?: number | null, newestEpoch?: bigint): Promise<ExportedFile[]>;
  ingest(files: readonly { readonly path: string; readonly family: ColumnFamily }[]): Promise<void>;
  share(): number;
  unshare(token: number): void;
  markRecordsTable(tableId: number): boolean;
  recordsTables(): number[] | null;
}

interface NativeModule {
  Database: (new (path: string, options: OpenOptions) => NativeDatabase) & (new (token: number) => NativeDatabase);
  rocksdbVersion: string;
  packedBatchOrder(packed: Buffer): number[];
  mallocInfo(): [number, number, number, number, number];
  mallocTrim(): boolean;
}

/** RocksDB's memory, in bytes (RocksDatabase.memoryUsage). */
export interface RocksMemoryUsage {
  /** What the block cache holds: data blocks, and the index and filter blocks (cached, not on the heap). */
  readonly blockCacheBytes: number;
  /** Of it, the entries pinned (in use by a reader, or the pinned top-level index and filter partitions). */
  readonly blockCachePinnedBytes: number;
  readonly blockCacheCapacityBytes: number;
  /** Every memtable alive: the active one, immutable ones not yet flushed, flushed ones an iterator still pins. */
  readonly memtableBytes: number;
  /** Of them, those not flushed yet (active and immutable). */
  readonly memtableUnflushedBytes: number;
  /** Open SST files' table readers outside the block cache (RocksDB's estimate). */
  readonly tableReaderBytes: number;
}

/** The C heap (glibc malloc, every arena), in bytes; zeros without glibc's mallinfo2. */
export interface MallocInfo {
  /** Taken from the system with brk/mmap for the arenas (not the large blocks mmapped one by one). */
  readonly arenaBytes: number;
  /** Large blocks mmapped one by one (128 KiB and up by default). */
  readonly mmapBytes: number;
  /** Handed out and not freed (arenas and mmapped blocks). */
  readonly inUseBytes: number;
  /** Free inside the arenas: resident unless trimmed, the fragmentation malloc keeps. */
  readonly freeBytes: number;
  /** Free at the top of the main arena, what malloc_trim could give back at once. */
  readonly releasableBytes: number;
}

/** The C heap's figures (glibc mallinfo2): a synchronous call that walks every arena's free lists. */
export function mallocInfo(): MallocInfo {
  const [arenaBytes, mmapBytes, inUseBytes, freeBytes, releasableBytes] = native().mallocInfo();
  return { arenaBytes, mmapBytes, inUseBytes, freeBytes, releasableBytes };
}

/** glibc's malloc_trim(0): gives free arena memory back to the system; true when some was. For measurements. */
export function mallocTrim(): boolean {
  return native().mallocTrim();
}

const ADDON_FILE = join('storage', 'native', 'build', 'Release', 'oxbow_rocksdb.node');

function findAddon(): string {
  // This file runs from storage/ (vitest, tsx) or from dist/storage/ (compiled).
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    const candidate = join(directory, '..', ADDON_FILE);
    if (existsSync(candidate)) return candidate;
    directory = dirname(directory);
  }
  throw new SqlError(SqlState.undefinedFile, 'the native RocksDB addon is not built (storage/native/build/Release/oxbow_rocksdb.node is missing)', {
    hint: 'run `npm install` (or `node scripts/install-native.mjs`); it needs the RocksDB library: apt-get install -y librocksdb-dev build-essential',
  });
}

let nativeModule: NativeModule | undefined;

function native(): NativeModule {
  if (nativeModule === undefined) {
    const require = createRequire(import.meta.url);
    try {
      nativeModule = require(findAddon()) as NativeModule;
    } catch (error) {
      if (error instanceof SqlError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new SqlError(SqlState.undefinedFile, `cannot load the native RocksDB addon: ${message}`, {
        hint: 'the RocksDB shared library may be missing: apt-get install -y librocksdb-dev, then npm install',
        cause: error,
      });
    }
  }
  return nativeModule;
}

export function rocksdbVersion(): string {
  return native().rocksdbVersion;
}

/**
 * The indexes of a packed batch's entries (write-batch.ts) in the order a write adds them to
 * RocksDB: each run of consecutive puts in key order (equal keys in packed order), deletes and
 * range deletes where they were (native/src/packed-batch.h). For tests.
 */
export function packedBatchOrder(packed: Buffer): number[] {
  try {
    return native().packedBatchOrder(packed);
  } catch (error) {
    throw toRocksDbError(error);
  }
}

/** Converts an error thrown by the addon into a RocksDbError; other errors pass through. */
export function toRocksDbError(error: unknown): unknown {
  if (error instanceof RocksDbError || error instanceof SqlError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  return new RocksDbError(code as RocksDbErrorCode, error.message, { cause: error });
}

const SQLSTATE_BY_CODE: Partial<Record<RocksDbErrorCode, SqlStateCode>> = {
  Corruption: SqlState.dataCorrupted,
  NoSpace: SqlState.diskFull,
  IOError: SqlState.ioError,
  LockHeld: SqlState.objectInUse,
  Busy: SqlState.objectInUse,
  Closed: SqlState.objectNotInPrerequisiteState,
  ShutdownInProgress: SqlState.adminShutdown,
};

const HINT_BY_CODE: Partial<Record<RocksDbErrorCode, string>> = {
  Corruption: 'a state file is damaged; restore the data directory from a checkpoint',
  NoSpace: 'free disk space on the data directory volume; no committed data was lost',
  LockHeld: 'another oxbow process is using this data directory; stop it or choose another --data-dir',
};

/** A storage failure as the SqlError a client sees: the right SQLSTATE, the RocksDB text as detail. */
export function toStorageSqlError(error: unknown, action: string): unknown {
  const converted = toRocksDbError(error);
  if (!(converted instanceof RocksDbError)) return converted;
  const code = SQLSTATE_BY_CODE[converted.code] ?? SqlState.ioError;
  const summary: Partial<Record<RocksDbErrorCode, string>> = {
    Corruption: 'state storage is corrupted',
    NoSpace: 'no space left on the device holding the state',
    LockHeld: 'the data directory is locked by another process',
    IOError: 'state storage I/O error',
  };
  return new SqlError(code, `${summary[converted.code] ?? 'state storage error'} while ${action}`, {
    detail: converted.message,
    hint: HINT_BY_CODE[converted.code],
    cause: converted,
  });
}

export class RocksIterator {
  private readonly iterator: NativeIterator;
  constructor(iterator: NativeIterator) {
    this.iterator = iterator;
  }

  /** Forward: first key >= key; reverse: last key <= key. */
  seek(key: Bytes): void {
    try {
      this.iterator.seek(key);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** Up to maxEntries entries packed as [u32le keyLength][key][u32le valueLength][value]...; null at the end. */
  nextPacked(maxEntries = 1024, maxBytes = 1 << 20): Buffer | null {
    try {
      return this.iterator.next(maxEntries, maxBytes);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  close(): void {
    this.iterator.close();
  }
}

/** Calls `visit(buffer, keyStart, keyEnd, valueStart, valueEnd)` for each entry of a packed batch. */
export function forEachPacked(
  packed: Buffer,
  visit: (buffer: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void,
): void {
  let offset = 0;
  const length = packed.length;
  while (offset < length) {
    const keyLength = packed.readUInt32LE(offset);
    const keyStart = offset + 4;
    const keyEnd = keyStart + keyLength;
    const valueLength = packed.readUInt32LE(keyEnd);
    const valueStart = keyEnd + 4;
    const valueEnd = valueStart + valueLength;
    visit(packed, keyStart, keyEnd, valueStart, valueEnd);
    offset = valueEnd;
  }
}

export class RocksDatabase {
  readonly path: string;
  private readonly native: NativeDatabase;
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  private constructor(path: string, database: NativeDatabase) {
    this.path = path;
    this.native = database;
  }

  /** Opens (creating if missing) the database in `path`; throws RocksDbError (LockHeld, Corruption...). */
  static open(path: string, options: OpenOptions = {}): RocksDatabase {
    const module = native();
    try {
      return new RocksDatabase(path, new module.Database(path, options));
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * A wrapper in this thread (a worker thread) over a database another thread opened and shared
   * (`share()`): RocksDB's DB is thread-safe, so both read and write it. The DB stays open until
   * the last wrapper over it is closed; `close()` here releases only this one.
   */
  static attach(token: number, path: string): RocksDatabase {
    const module = native();
    try {
      return new RocksDatabase(path, new module.Database(token));
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * A token under which worker threads attach to this open database (`RocksDatabase.attach`).
   * It stays valid until `unshare(token)` or this database's close().
   */
  share(): number {
    try {
      return this.native.share();
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  unshare(token: number): void {
    this.native.unshare(token);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get(key: Bytes, snapshot?: Snapshot): Buffer | undefined {
    try {
      return this.native.get(key, snapshot?.id);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  multiGet(keys: Bytes[]): (Buffer | undefined)[] {
    try {
      return this.native.multiGet(keys);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * The value of the first key >= seekKey sharing its MVCC prefix (all but the last 8 bytes):
   * the newest version at or before the epoch encoded in seekKey. One seek.
   */
  getLatestVersion(seekKey: Bytes): Buffer | undefined {
    try {
      return this.native.getLatestVersion(seekKey) as Buffer | undefined;
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * As getLatestVersion, but copies a value that fits into `out` and returns its length (no
   * allocation per read); a larger value is returned as a new Buffer.
   */
  getLatestVersionInto(seekKey: Bytes, out: Buffer): Buffer | number | undefined {
    try {
      return this.native.getLatestVersion(seekKey, out);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** Applies a packed batch (write-batch.ts) atomically; `sync` waits for the WAL on disk. */
  write(packed: Bytes, sync = false): void {
    try {
      this.native.write(packed, sync);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * As write(), but parsed and applied on the libuv pool: the main thread goes on while RocksDB
   * inserts into the memtable and syncs the WAL. `packed` must stay unchanged until the Promise
   * settles. Two writes started together may apply in either order: a caller that needs an order
   * starts the next one when the previous has settled. close() waits for it.
   */
  writeAsync(packed: Buffer, sync = false): Promise<void> {
    return this.track(() => this.native.writeAsync(packed, sync));
  }

  deleteRange(start: Bytes, end: Bytes, sync = false): void {
    try {
      this.native.deleteRange(start, end, sync);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  iterator(options: IteratorOptions = {}): RocksIterator {
    const nativeOptions = { ...options, snapshot: options.snapshot?.id };
    try {
      return new RocksIterator(this.native.iterator(nativeOptions));
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * A RocksDB snapshot for consistent raw reads. It does not hold back version GC: RocksDB applies
   * compaction filters regardless of snapshots, so MVCC history is governed by the retention
   * watermarks alone.
   */
  snapshot(): Snapshot {
    try {
      return { id: this.native.snapshot() };
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  releaseSnapshot(snapshot: Snapshot): void {
    this.native.releaseSnapshot(snapshot.id);
  }

  /**
   * A RocksDB property ("rocksdb.estimate-num-keys", "rocksdb.stats", ...) of the default column
   * family, or of `family` (undefined for `records` when the database has none).
   */
  getProperty(name: string, family?: ColumnFamily): string | undefined {
    try {
      return this.native.getProperty(name, family);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * Routes the table's keys to the records column family from now on (a table of small records
   * rewritten every epoch: a replayed source's positions), moving those already written in one
   * write, the mark persisted with them. True when newly marked; false when it was already, or the
   * database was opened read-only (it routes by the marks persisted in it). Any thread sharing
   * the database routes by it at once.
   */
  markRecordsTable(tableId: number): boolean {
    try {
      return this.native.markRecordsTable(tableId);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** The tables routed to the records family besides the store's own records; null without one. */
  recordsTables(): number[] | null {
    try {
      return this.native.recordsTables();
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** RocksDB's memory by component (block cache, memtables, table readers): one synchronous call. */
  memoryUsage(): RocksMemoryUsage {
    try {
      const [blockCacheBytes, blockCachePinnedBytes, memtableBytes, memtableUnflushedBytes, tableReaderBytes, blockCacheCapacityBytes] = this.native.memoryUsage();
      return { blockCacheBytes, blockCachePinnedBytes, blockCacheCapacityBytes, memtableBytes, memtableUnflushedBytes, tableReaderBytes };
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** Tickers and the statistics dump; undefined unless opened with statistics: true. */
  statistics(): { tickers: Record<string, number>; text: string } | undefined {
    return this.native.statistics();
  }

  /** The live SST files with sizes and key ranges (what a checkpoint must keep). */
  liveFiles(): LiveFile[] {
    try {
      return this.native.liveFiles();
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  approximateSize(start: Bytes, end: Bytes): number {
    try {
      return this.native.approximateSize(start, end);
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /**
   * One table (keys [start, end) with `tableId` as their first 4 bytes): the bytes its live SST
   * files reference in blob files (values of 256 bytes or more, which approximateSize does not see)
   * and the entries those files hold, both counted as each file was written (native
   * table-stats-collector.h), and RocksDB's estimate of its entries in the memtables.
   */
  tableStats(tableId: number, start: Bytes, end: Bytes): { blobBytes: number; fileEntries: number; memtableEntries: number } {
    try {
      const [blobBytes, fileEntries, memtableEntries] = this.native.tableStats(tableId, start, end);
      return { blobBytes, fileEntries, memtableEntries };
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  /** From now on compactions may drop versions of `tableId` shadowed by one at or below `epoch`. */
  setRetentionWatermark(tableId: number, epoch: bigint): void {
    this.native.setRetentionWatermark(tableId, epoch);
  }

  /**
   * From now on no table's watermark is above `epoch` (null: no bound), whatever the tables set:
   * compactions keep every version a read at `epoch` or later needs. For every wrapper of this
   * database (a share's worker's too).
   */
  capRetentionWatermarks(epoch: bigint | null): void {
    this.native.capRetentionWatermarks(epoch);
  }

  flush(): Promise<void> {
    return this.track(() => this.native.flush());
  }

  /** Compacts [start, end) (everything when omitted) down to the bottom level, running version GC. */
  compactRange(start?: Bytes, end?: Bytes): Promise<void> {
    return this.track(() => this.native.compactRange(start, end));
  }

  /** A RocksDB checkpoint in `directory` (must not exist): hard links to the live files. */
  checkpoint(directory: string): Promise<void> {
    return this.track(() => this.native.checkpoint(directory));
  }

  /**
   * The entries of the key ranges [lower, upper) (sorted, not overlapping, each in one column
   * family) as of one moment (`snapshot`'s, else the export's start), written into SST files under
   * `directory` (which must exist): one file per family holding any, none for ranges with no entry.
   * Nothing goes through the memtable. A snapshot released meanwhile is freed once the export is done.
   * `newestEpoch` leaves out the versions of MVCC tables written at later epochs (DESIGN.md §2: each
   * key ends with its epoch), the store's records kept: a store cut past a checkpoint's epoch gives
   * its tables as of that epoch.
   */
  exportRanges(directory: string, ranges: readonly { readonly lower: Bytes; readonly upper: Bytes }[], snapshot?: Snapshot, newestEpoch?: bigint): Promise<ExportedFile[]> {
    const bounds: Bytes[] = [];
    for (const range of ranges) bounds.push(range.lower, range.upper);
    let files: ExportedFile[] = [];
    return this.track(async () => {
      if (newestEpoch !== undefined) files = await this.native.exportRanges(directory, bounds, snapshot === undefined ? null : snapshot.id, newestEpoch);
      else files = await (snapshot === undefined ? this.native.exportRanges(directory, bounds) : this.native.exportRanges(directory, bounds, snapshot.id));
    }).then(() => files);
  }

  /**
   * SST files written by `exportRanges` (of any database) ingested, atomically: their entries
   * replace the versions of the same keys held here (they are newer than every write so far). The
   * files are moved in.
   */
  ingest(files: readonly { readonly path: string; readonly family: ColumnFamily }[]): Promise<void> {
    return this.track(() => this.native.ingest(files));
  }

  /** Waits for running flushes, compactions and checkpoints, then closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    try {
      this.native.close();
    } catch (error) {
      throw toRocksDbError(error);
    }
  }

  private track(start: () => Promise<void>): Promise<void> {
    let promise: Promise<void>;
    try {
      promise = start().catch((error: unknown) => {
        throw toRocksDbError(error);
      });
    } catch (error) {
      return Promise.reject(toRocksDbError(error));
    }
    // The tracking promise never rejects: the caller handles the failure of `promise` itself.
    const tracked: Promise<void> = promise.then(
      () => {
        this.pending.delete(tracked);
      },
      () => {
        this.pending.delete(tracked);
      },
    );
    this.pending.add(tracked);
    return promise;
  }
}
