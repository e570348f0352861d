// The MVCC backend in memory, for fast unit tests: a sorted array of keys (latin1 strings, whose
// order is the byte order) and a map of values. It follows RocksDB's semantics that the state
// tables rely on: atomic batches, bounded scans that see the data as of their creation, the MVCC
// "newest version at or before E" rule, and version GC below each table's retention watermark.

import type { Epoch } from '../sql/epoch.js';
import { ByteWriter, type Bytes } from './byte-writer.js';
import type { BackendIterator, BackendScanOptions, MemoryPart, MvccBackend } from './mvcc-backend.js';
import { EPOCH_SUFFIX_BYTES, TABLE_PREFIX_BYTES } from './mvcc-key.js';
import { BATCH_DELETE, BATCH_DELETE_RANGE, BATCH_PUT, forEachBatchEntry } from './write-batch.js';

function lowerBoundIndex(keys: readonly string[], target: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

function latin1(bytes: Bytes): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

function copyBytes(buffer: Buffer, start: number, end: number): Buffer {
  const copy = Buffer.allocUnsafe(end - start);
  buffer.copy(copy as unknown as Uint8Array, 0, start, end);
  return copy;
}

function isTombstone(value: Buffer): boolean {
  return value.length === 0 || value[0] === 0;
}

class MemoryIterator implements BackendIterator {
  private readonly entries: [string, Buffer][];
  private index = 0;
  private readonly writer = new ByteWriter(4096);

  constructor(entries: [string, Buffer][]) {
    this.entries = entries;
  }

  nextPacked(maxEntries: number): Buffer | null {
    if (this.index >= this.entries.length) return null;
    const writer = this.writer;
    writer.reset();
    const end = Math.min(this.entries.length, this.index + maxEntries);
    for (; this.index < end; this.index++) {
      const [key, value] = this.entries[this.index]!;
      writer.uint32LittleEndian(key.length);
      writer.ensure(key.length);
      writer.buffer.write(key, writer.length, key.length, 'latin1');
      writer.length += key.length;
      writer.uint32LittleEndian(value.length);
      writer.bytes(value);
    }
    return writer.copy();
  }

  close(): void {}
}

export class MemoryBackend implements MvccBackend {
  memoryUsage(): readonly MemoryPart[] {
    return [];
  }

  private keys: string[] = [];
  private readonly values = new Map<string, Buffer>();
  private unsorted: string[] = [];
  private hasDeletions = false;
  private readonly watermarks = new Map<number, Epoch>();
  private writesSinceCollection = 0;
  private collectionDue = false;

  getLatestVersion(seekKey: Buffer): Buffer | undefined {
    this.normalize();
    const seek = seekKey.toString('latin1');
    const index = lowerBoundIndex(this.keys, seek);
    const found = this.keys[index];
    if (found === undefined || found.length !== seek.length) return undefined;
    const prefixLength = seek.length - EPOCH_SUFFIX_BYTES;
    if (!found.startsWith(seek.slice(0, prefixLength))) return undefined;
    return this.values.get(found);
  }

  get(key: Buffer): Buffer | undefined {
    return this.values.get(key.toString('latin1'));
  }

  scan(options: BackendScanOptions): BackendIterator {
    this.normalize();
    const lower = latin1(options.lowerBound);
    const upper = latin1(options.upperBound);
    const start = lowerBoundIndex(this.keys, lower);
    const end = lowerBoundIndex(this.keys, upper);
    const raw: [string, Buffer][] = [];
    for (let index = start; index < end; index++) {
      const key = this.keys[index]!;
      raw.push([key, this.values.get(key)!]);
    }
    const entries = options.epochSuffix === undefined ? raw : this.visibleVersions(raw, latin1(options.epochSuffix), options.keepTombstones === true);
    if (options.reverse === true) entries.reverse();
    return new MemoryIterator(entries);
  }

  /** The MVCC rule of the native iterator: per key, the newest version at or before the epoch. */
  private visibleVersions(entries: [string, Buffer][], suffix: string, keepTombstones: boolean): [string, Buffer][] {
    const visible: [string, Buffer][] = [];
    let answered: string | undefined;
    for (const entry of entries) {
      const key = entry[0];
      if (key.length < EPOCH_SUFFIX_BYTES) continue;
      const prefix = key.slice(0, key.length - EPOCH_SUFFIX_BYTES);
      if (prefix === answered) continue;
      if (key.slice(key.length - EPOCH_SUFFIX_BYTES) < suffix) continue;
      answered = prefix;
      if (keepTombstones || !isTombstone(entry[1])) visible.push(entry);
    }
    return visible;
  }

  checkWritable(_bytes: number): void {}

  /** Applied on a later turn of the event loop, as RocksDB's worker would: reads meanwhile see the old state. */
  writeAsync(packed: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      setImmediate(() => {
        try {
          this.write(packed);
          resolve();
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  write(packed: Buffer): void {
    forEachBatchEntry(packed, (operation, buffer, keyStart, keyEnd, valueStart, valueEnd) => {
      const key = buffer.toString('latin1', keyStart, keyEnd);
      if (operation === BATCH_PUT) {
        if (!this.values.has(key)) this.unsorted.push(key);
        this.values.set(key, copyBytes(buffer, valueStart, valueEnd));
      } else if (operation === BATCH_DELETE) {
        if (this.values.delete(key)) this.hasDeletions = true;
      } else if (operation === BATCH_DELETE_RANGE) {
        this.normalize();
        const end = buffer.toString('latin1', valueStart, valueEnd);
        const from = lowerBoundIndex(this.keys, key);
        const to = lowerBoundIndex(this.keys, end);
        for (let index = from; index < to; index++) this.values.delete(this.keys[index]!);
        if (to > from) this.hasDeletions = true;
      }
      this.writesSinceCollection++;
    });
    if (this.collectionDue && this.writesSinceCollection * 4 > this.keys.length) this.collectGarbage();
  }

  approximateSize(lowerBound: Bytes, upperBound: Bytes): number {
    this.normalize();
    const start = lowerBoundIndex(this.keys, latin1(lowerBound));
    const end = lowerBoundIndex(this.keys, latin1(upperBound));
    let bytes = 0;
    for (let index = start; index < end; index++) bytes += this.keys[index]!.length + this.values.get(this.keys[index]!)!.length;
    return bytes;
  }

  /** Exact here: every entry of the range and its bytes. */
  tableStats(_tableId: number, lowerBound: Bytes, upperBound: Bytes): { bytes: number; keys: number } {
    return { bytes: this.approximateSize(lowerBound, upperBound), keys: this.approximateKeys(lowerBound, upperBound) };
  }

  approximateKeys(lowerBound: Bytes, upperBound: Bytes): number {
    this.normalize();
    return lowerBoundIndex(this.keys, latin1(upperBound)) - lowerBoundIndex(this.keys, latin1(lowerBound));
  }

  setRetentionWatermark(tableId: number, epoch: Epoch): void {
    if (this.watermarks.get(tableId) === epoch) return;
    this.watermarks.set(tableId, epoch);
    this.collectionDue = true;
  }

  /** Number of stored entries (versions and tombstones), for tests of garbage collection. */
  get entryCount(): number {
    return this.values.size;
  }

  /** What a full RocksDB compaction with the version GC filter does. */
  collectGarbage(): void {
    this.normalize();
    let currentTable = -1;
    let watermark: Epoch = 0n;
    let shadowing: string | undefined;
    for (const key of this.keys) {
      if (key.length < TABLE_PREFIX_BYTES + EPOCH_SUFFIX_BYTES) continue;
      const tableId = Buffer.from(key.slice(0, 4), 'latin1').readUInt32BE(0);
      if (tableId !== currentTable) {
        currentTable = tableId;
        watermark = this.watermarks.get(tableId) ?? 0n;
        shadowing = undefined;
      }
      if (watermark === 0n) continue;
      const prefix = key.slice(0, key.length - EPOCH_SUFFIX_BYTES);
      if (prefix === shadowing) {
        this.values.delete(key);
        this.hasDeletions = true;
        continue;
      }
      const epoch = ((1n << 64n) - 1n) ^ Buffer.from(key.slice(key.length - EPOCH_SUFFIX_BYTES), 'latin1').readBigUInt64BE(0);
      if (epoch <= watermark) {
        shadowing = prefix;
        // As a full compaction does: a tombstone at the watermark hides nothing any more.
        if (isTombstone(this.values.get(key)!)) {
          this.values.delete(key);
          this.hasDeletions = true;
        }
      }
    }
    this.writesSinceCollection = 0;
    this.collectionDue = false;
    this.normalize();
  }

  private normalize(): void {
    if (this.unsorted.length > 0) {
      const added = this.unsorted.sort();
      this.unsorted = [];
      const merged: string[] = new Array<string>(this.keys.length + added.length);
      let left = 0;
      let right = 0;
      let out = 0;
      const keys = this.keys;
      while (left < keys.length && right < added.length) merged[out++] = keys[left]! < added[right]! ? keys[left++]! : added[right++]!;
      while (left < keys.length) merged[out++] = keys[left++]!;
      while (right < added.length) merged[out++] = added[right++]!;
      this.keys = merged;
    }
    if (this.hasDeletions) {
      this.keys = this.keys.filter((key) => this.values.has(key));
      this.hasDeletions = false;
    }
  }

  async close(): Promise<void> {}
}
