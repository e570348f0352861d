// The MVCC backend on RocksDB: a thin adapter from MvccBackend to the addon wrapper, turning
// storage failures into SqlErrors with the right SQLSTATE (corruption XX001, disk full 53100, I/O
// 58030) so a client sees a clear error and the process keeps running.

import type { Epoch } from '../sql/epoch.js';
import type { BackendIterator, BackendScanOptions, MvccBackend } from './mvcc-backend.js';
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
  /** Point reads copy values here instead of allocating a Buffer per read. */
  private scratch = Buffer.allocUnsafe(4096);

  constructor(database: RocksDatabase) {
    this.database = database;
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
    try {
      this.database.write(packed, true);
    } catch (error) {
      throw toStorageSqlError(error, 'committing an epoch');
    }
  }

  approximateSize(lowerBound: Bytes, upperBound: Bytes): number {
    return this.database.approximateSize(lowerBound, upperBound);
  }

  approximateKeys(lowerBound: Bytes, upperBound: Bytes): number {
    // RocksDB estimates keys only for the whole database; share it out by the range's bytes.
    const totalKeys = Number(this.database.getProperty('rocksdb.estimate-num-keys') ?? '0');
    const totalBytes = this.database.approximateSize(Buffer.alloc(0), Buffer.alloc(8, 0xff));
    if (totalBytes <= 0) return 0;
    return Math.round((totalKeys * this.database.approximateSize(lowerBound, upperBound)) / totalBytes);
  }

  setRetentionWatermark(tableId: number, epoch: Epoch): void {
    this.database.setRetentionWatermark(tableId, epoch);
  }

  close(): Promise<void> {
    return this.database.close();
  }
}
