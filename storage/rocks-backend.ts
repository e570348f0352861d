// The MVCC backend on RocksDB: a thin adapter from MvccBackend to the addon wrapper, turning
// storage failures into SqlErrors with the right SQLSTATE (corruption XX001, disk full 53100, I/O
// 58030) so a client sees a clear error and the process keeps running.

import { statfsSync } from 'node:fs';
import type { Epoch } from '../sql/epoch.js';
import { SqlError, SqlState } from '../sql/errors.js';
import type { BackendIterator, BackendScanOptions, MemoryPart, MvccBackend } from './mvcc-backend.js';
import { RocksDatabase, toStorageSqlError, type RocksIterator } from './rocksdb.js';
import type { Bytes } from './byte-writer.js';

class RocksBackendIterator implements BackendIterator {
  private readonly iterator: RocksIterator;
  constructor(iterator: RocksIterator) {
    this.iterator = iterator;
  }

  nextPacked(maxEntries: number): Buffer | null {
    try {
      return this.iterator.nextPacked(maxEntries);
    } catch (error) {
      throw toStorageSqlError(error, 'scanning state');
    }
  }

  close(): void {
    this.iterator.close();
  }
}

export class RocksBackend implements MvccBackend {
  readonly database: RocksDatabase;
  /** Tables already marked as records tables through this backend (markRecordsTable is idempotent). */
  private readonly recordsTables = new Set<number>();
  /** Point reads copy values here instead of allocating a Buffer per read. */
  private scratch = Buffer.allocUnsafe(4096);

  /**
   * Free bytes a commit must leave on the data directory's disk. RocksDB needs room to flush
   * memtables and compact; when a write runs out of space mid-way, Debian's RocksDB 7.8 (built
   * with assertions) can abort the process in WritableFileWriter instead of returning an error.
   * So a commit that would eat into the reserve fails first, with 53100, and nothing is lost.
   */
  private readonly reserveBytes: number;
  /** The last statfs figure, when it was taken (performance.now()), and the bytes committed since. */
  private lastFreeBytes = 0;
  private lastCheckedAt = Number.NEGATIVE_INFINITY;
  private bytesSinceCheck = 0;

  constructor(database: RocksDatabase, writeBufferBytes = DEFAULT_WRITE_BUFFER_BYTES) {
    this.database = database;
    this.reserveBytes = diskReserveBytes(database.path, writeBufferBytes);
  }

  checkWritable(bytes: number): void {
    this.checkDiskSpace(bytes);
  }

  /**
   * Fails with 53100 when committing `incomingBytes` would leave less than the reserve free. The
   * statfs (2-5 us, a fixed cost of every one-row epoch) is skipped while the last figure is under
   * DISK_CHECK_MAX_AGE_MS old and stays above DISK_CHECK_MARGIN reserves even if every byte
   * committed since, and these, took DISK_AMPLIFICATION times their size (WAL, flush, compaction,
   * blob files): far from full (1 GiB free at the default 256 MiB reserve), a recent figure decides
   * the same; nearer, every commit asks the disk.
   */
  private checkDiskSpace(incomingBytes: number): void {
    const now = performance.now();
    const committed = this.bytesSinceCheck + incomingBytes;
    if (now - this.lastCheckedAt < DISK_CHECK_MAX_AGE_MS && this.lastFreeBytes - committed * DISK_AMPLIFICATION >= this.reserveBytes * DISK_CHECK_MARGIN) {
      this.bytesSinceCheck = committed;
      return;
    }
    let freeBytes: number;
    try {
      const stats = statfsSync(this.database.path);
      freeBytes = stats.bavail * stats.bsize;
    } catch {
      return; // no figure to go by: RocksDB reports what happens
    }
    this.lastFreeBytes = freeBytes;
    this.lastCheckedAt = now;
    this.bytesSinceCheck = incomingBytes;
    if (freeBytes < this.reserveBytes + incomingBytes) {
      this.lastCheckedAt = Number.NEGATIVE_INFINITY;
      throw new SqlError(SqlState.diskFull, `could not commit: the disk of ${this.database.path} is nearly full (${freeBytes} bytes free, ${this.reserveBytes} kept in reserve for flushes and compactions)`, {
        hint: 'Free disk space or move --data-dir to a larger disk; every committed epoch is intact.',
      });
    }
  }

  getLatestVersion(seekKey: Buffer): Buffer | undefined {
    let found: Buffer | number | undefined;
    try {
      found = this.database.getLatestVersionInto(seekKey, this.scratch);
    } catch (error) {
      throw toStorageSqlError(error, 'reading state');
    }
    if (typeof found === 'number') return this.scratch;
    // A value larger than the scratch buffer: grow it for the next read.
    if (found !== undefined && found.length > this.scratch.length) this.scratch = Buffer.allocUnsafe(found.length * 2);
    return found;
  }

  get(key: Buffer): Buffer | undefined {
    try {
      return this.database.get(key);
    } catch (error) {
      throw toStorageSqlError(error, 'reading state');
    }
  }

  scan(options: BackendScanOptions): BackendIterator {
    try {
      return new RocksBackendIterator(this.database.iterator(options));
    } catch (error) {
      throw toStorageSqlError(error, 'scanning state');
    }
  }

  write(packed: Buffer): void {
    this.checkDiskSpace(packed.length);
    try {
      this.database.write(packed, true);
    } catch (error) {
      throw toStorageSqlError(error, 'committing an epoch');
    }
  }

  async writeAsync(packed: Buffer): Promise<void> {
    try {
      await this.database.writeAsync(packed, true);
    } catch (error) {
      throw toStorageSqlError(error, 'committing an epoch');
    }
  }

  approximateSize(lowerBound: Bytes, upperBound: Bytes): number {
    return this.database.approximateSize(lowerBound, upperBound);
  }

  tableStats(tableId: number, lowerBound: Bytes, upperBound: Bytes): { bytes: number; keys: number } {
    const { blobBytes, fileEntries, memtableEntries } = this.database.tableStats(tableId, lowerBound, upperBound);
    // approximateSize sees SST files and memtables; large values live in blob files.
    const bytes = this.approximateSize(lowerBound, upperBound) + blobBytes;
    // Entries are counted per SST file as it is written; files written before that count none, so
    // a table with no counted entry at all falls back to its share of RocksDB's database-wide estimate.
    const counted = fileEntries + memtableEntries;
    return { bytes, keys: counted > 0 ? counted : this.approximateKeys(lowerBound, upperBound) };
  }

  approximateKeys(lowerBound: Bytes, upperBound: Bytes): number {
    // RocksDB estimates keys only for the whole database; share it out by the range's bytes.
    const totalKeys = Number(this.database.getProperty('rocksdb.estimate-num-keys') ?? '0') + Number(this.database.getProperty('rocksdb.estimate-num-keys', 'records') ?? '0');
    const totalBytes = this.database.approximateSize(Buffer.alloc(0), Buffer.alloc(8, 0xff));
    if (totalBytes <= 0) return 0;
    return Math.round((totalKeys * this.database.approximateSize(lowerBound, upperBound)) / totalBytes);
  }

  memoryUsage(): readonly MemoryPart[] {
    const usage = this.database.memoryUsage();
    return [
      { component: 'rocksdb_block_cache', bytes: usage.blockCacheBytes, limitBytes: usage.blockCacheCapacityBytes },
      { component: 'rocksdb_block_cache_pinned', bytes: usage.blockCachePinnedBytes, limitBytes: null },
      { component: 'rocksdb_memtables', bytes: usage.memtableBytes, limitBytes: null },
      { component: 'rocksdb_table_readers', bytes: usage.tableReaderBytes, limitBytes: null },
    ];
  }

  setRetentionWatermark(tableId: number, epoch: Epoch): void {
    this.database.setRetentionWatermark(tableId, epoch);
  }

  markRecordsTable(tableId: number): void {
    if (this.recordsTables.has(tableId)) return;
    try {
      this.database.markRecordsTable(tableId);
      this.recordsTables.add(tableId);
    } catch (error) {
      throw toStorageSqlError(error, `moving table ${tableId} to the records family`);
    }
  }

  close(): Promise<void> {
    return this.database.close();
  }
}

/** How long a statfs figure may stand in for a new one (checkDiskSpace). */
const DISK_CHECK_MAX_AGE_MS = 1000;
/** Disk bytes a committed byte may take before the next check: WAL, L0 file, compactions, blobs. */
const DISK_AMPLIFICATION = 8;
/** A figure stands in for a new one only while this many reserves stay free. */
const DISK_CHECK_MARGIN = 4;

/** RocksDB's default memtable size in our addon (storage/native/src/database.cc). */
const DEFAULT_WRITE_BUFFER_BYTES = 64 << 20;
/**
 * The disk reserve: room for four memtables, what a flush plus a compaction of level 0 write before
 * they can free anything; never more than a third of the disk, or a small disk could take no commit.
 */
export function diskReserveBytes(path: string, writeBufferBytes: number): number {
  let totalBytes = Number.POSITIVE_INFINITY;
  try {
    const stats = statfsSync(path);
    totalBytes = stats.blocks * stats.bsize;
  } catch {
    // unknown size: the memtable rule alone
  }
  return Math.floor(Math.min(4 * writeBufferBytes, totalBytes / 3));
}
