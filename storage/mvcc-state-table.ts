// One state table over an MVCC backend: the open epoch's writes buffered in a map, the sealed
// epochs' writes whose commit is still in flight (layers, read after the open epoch and before
// anything committed), committed rows served from the memory tier (row-cache.ts) or the backend,
// reads AS OF an epoch, ordered range scans that merge buffered writes over committed rows, and
// version history (versions()). The store (mvcc-state-store.ts) owns commit; this file owns reads
// and buffering.
//
// Rows passed in or returned are not copied: callers must not mutate them.

import type { Epoch } from '../sql/epoch.js';
import { assert } from '../sql/errors.js';
import type { DataType } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import type { RowVersion, ScanOptions, StateTable, StateTableSchema } from './state-table.js';
import { ByteWriter } from './byte-writer.js';
import { encodeKey, encodeKeyColumns } from './memcomparable.js';
import type { MvccBackend } from './mvcc-backend.js';
import { EPOCH_SUFFIX_BYTES, LATEST_SUFFIX, TABLE_ID_BYTES, TABLE_PREFIX_BYTES, epochSuffix, readEpochSuffix, tableUpperBound, vnodeRange, writeEpochSuffix, writeTablePrefix } from './mvcc-key.js';
import { VNODE_COUNT, VnodeHasher } from './vnode-hash.js';
import { decodeRow, encodeRow, ROW_TOMBSTONE } from './row-codec.js';
import { BATCH_PUT, WriteBatchBuilder } from './write-batch.js';
import { MemoryBudget, RowCache } from './row-cache.js';

/** One sealed epoch's writes to a table, readable until its commit is durable. */
interface SealedLayer {
  readonly epoch: Epoch;
  readonly rows: Map<string, Row | null>;
  /** The layer's keys in order, made on the first scan that needs them. */
  sorted: string[] | undefined;
  /** The epoch's appended rows (append()) not yet keyed into `rows`, all written after them. */
  appended: WriteBatchBuilder | undefined;
  /** The epoch's range delete (deleteBelow): every key below it is gone from this epoch on. */
  readonly cleanEnd: string | undefined;
}

/**
 * A durable range delete (deleteBelow): from `epoch` on, no key below `end` (encoded, without the
 * table prefix) exists. Reads AS OF an earlier epoch still see the rows, which stay in the backend
 * until the table's GC watermark passes `epoch`; then one RocksDB DeleteRange removes them.
 */
export interface Cleaning {
  readonly epoch: Epoch;
  readonly end: string;
}

/** The epoch suffix of an appended entry until its commit writes the epoch's (buildBatch). */
const BLANK_SUFFIX = Buffer.alloc(EPOCH_SUFFIX_BYTES);
/** An append buffer larger than this goes once an epoch uses less than an eighth of it. */
const APPEND_BUFFER_KEPT_BYTES = 1 << 20;

/** What a table needs from its store. */
export interface TableHost {
  readonly backend: MvccBackend;
  readonly committedEpoch: Epoch;
  /** While set, latest reads of the backend see no version newer than this (MvccStateStore.startAt). */
  readonly readCeiling?: Epoch | undefined;
  /** The epoch to read for a request AS OF `epoch`; throws 72000 outside the readable window. */
  resolveReadEpoch(tableId: number, epoch: Epoch): Epoch;
  /** Throws 72000 when versions between `from` and `to` may have been collected. */
  checkHistory(tableId: number, from: Epoch, to: Epoch): void;
}

const SCAN_BATCH_ENTRIES = 512;
/** A range delete drops the cache's rows below it at once while the cache holds fewer entries than this. */
const PURGE_CACHE_MIN_ENTRIES = 1024;

export class MvccStateTable implements StateTable {
  schema: StateTableSchema;
  readonly keyTypes: readonly DataType[];
  /**
   * The bytes every key of the table starts with: the table id and vnode 0, or the table id alone
   * for a table with vnode columns, whose encoded keys (`pending`, the cache, the bounds) then
   * start with their vnode byte. `keyStart` is its length: where an encoded key starts in a stored one.
   */
  readonly prefix: Buffer;
  readonly keyStart: number;
  /** A table with vnode columns: the hasher of their values, and their indexes in the row and in the key. */
  private readonly vnodeHasher: VnodeHasher | undefined;
  private readonly vnodeRowColumns: readonly number[] = [];
  private readonly vnodeKeyColumns: readonly number[] = [];
  /** Key columns a prefix must hold for its vnode to be known (the last vnode column's key position, plus one). */
  private readonly vnodeKeyWidth: number = 0;
  /** Buffered writes of the open epoch by encoded key (latin1): the row, or null for a delete. */
  pending = new Map<string, Row | null>();
  /**
   * Rows of the open epoch written by append() (a blind insert under a unique key), after every
   * write in `pending`: encoded at once as entries of the commit's write batch, their epoch suffix
   * blank, which the commit copies into its batch and stamps (appendTo()). Only a read or a keyed
   * write of this table decodes them into `pending` (settle()). An append-only view's rows thus
   * cost no key string and no Map entry, and die young: V8 never promotes nor marks them.
   */
  private appended: WriteBatchBuilder | undefined;
  /** An emptied append buffer kept for the next epoch. */
  private spareAppended: WriteBatchBuilder | undefined;
  /** Some open or sealed appended rows are not keyed yet. */
  private unsettled = false;
  /**
   * Writes of sealed epochs whose commit is in flight, oldest first: every read of the latest state
   * sees them after `pending` and before the cache and the backend; reads AS OF an epoch never do
   * (they see durable epochs only). Each goes when its epoch is durable (publishSealed()).
   */
  readonly sealed: SealedLayer[] = [];
  readonly cache: RowCache;
  /** writeAround(): published rows are not cached (a stale entry for the key is dropped). */
  private cacheWrites = true;
  private readonly host: TableHost;
  private readonly writer = new ByteWriter(256);
  /**
   * The first `sortedPending.length` buffered keys (in the Map's insertion order) in key order; the
   * keys added since are the Map's later entries (keys only join the buffer until it is cleared),
   * merged in by the next scan. No per-write list of new keys: a write is one Map.set.
   */
  private sortedPending: string[] = [];
  /**
   * No committed row can exist: the table was created (or dropped and created again) in the open
   * epoch. Latest reads then answer from the buffered writes alone, with no cache entry and no
   * RocksDB seek per miss (a view's backfill looks up each new output row: 100k misses at 30 us
   * and more each). Cleared once a commit has written rows to it.
   */
  committedEmpty = false;
  /**
   * At or above every key this table holds or ever held (encoded without the table prefix, in
   * latin1: string order is byte order): the largest key in the backend, read by one reverse seek
   * at the first latest read that gets past the buffers, raised by every buffered write after
   * that. A latest read of a larger key is absent with no cache lookup and no RocksDB seek, so an
   * INSERT of ascending keys (serial ids, timestamps) checks its primary key without reading
   * RocksDB. Deletes, aborts and version GC leave it high, which only costs reads. Undefined until
   * that first read; '' while the table has no key at all.
   */
  private keyBound: string | undefined;
  /**
   * A table with vnode columns keeps its key bound per vnode (a key of vnode v against the largest
   * of v), in two parts: the backend's largest key of each vnode, read by one reverse seek when a
   * read of that vnode first needs it (undefined until then, and again once another writer added
   * rows), and the largest key this table ever buffered in each vnode (raised by every write, the
   * vnode's byte alone before any). A vnode never read costs no seek: a share's node reads only
   * the vnodes it owns, not the ranges it dropped.
   */
  private readonly vnodeBounds: (string | undefined)[] = [];
  private readonly vnodeWritten: string[] = [];
  /** The open epoch's range delete (deleteBelow), if any. */
  pendingCleanEnd: string | undefined;
  /** Durable range deletes not yet applied to the backend, oldest first (their ends ascending). */
  cleanings: Cleaning[] = [];
  /** Cleanings up to this epoch are in a batch's DeleteRange already (the store's bookkeeping). */
  cleaningsScheduled: Epoch = 0n;
  /** The end of the last cleaning applied to the backend: the rows below it are gone from RocksDB. */
  private appliedEnd = '';
  /**
   * Every key below this is gone in the latest state (the newest range delete, open, sealed or
   * durable): a latest read below it is absent with no lookup, a latest scan starts at it, and a
   * write below it is refused (a range delete promises that nothing is written below its end again).
   */
  private cleanedEnd = '';
  /** The row cache's size at which the next range delete drops its cached rows below the end. */
  private purgeCacheAt = 0;
  /**
   * truncate(): the open epoch's commit deletes every version of every key below this one (the
   * table prefix and the encoded bound), as one range delete before the table's writes.
   */
  truncateBelow: Buffer | undefined;

  constructor(schema: StateTableSchema, host: TableHost, budget: MemoryBudget) {
    this.schema = schema;
    this.host = host;
    this.keyTypes = schema.primaryKey.map((index) => schema.columnTypes[index]!);
    const prefixWriter = new ByteWriter(8);
    const vnodeColumns = schema.vnodeColumns;
    if (vnodeColumns === undefined) {
      writeTablePrefix(prefixWriter, schema.tableId);
      this.vnodeHasher = undefined;
    } else {
      assert(vnodeColumns.length > 0, `table ${schema.tableId}: no vnode column`);
      const keyColumns = vnodeColumns.map((column) => schema.primaryKey.indexOf(column));
      assert(keyColumns.every((position) => position >= 0), `table ${schema.tableId}: a vnode column is not a key column`);
      prefixWriter.uint32BigEndian(schema.tableId);
      this.vnodeHasher = new VnodeHasher(vnodeColumns.map((column) => schema.columnTypes[column]!));
      this.vnodeRowColumns = vnodeColumns;
      this.vnodeKeyColumns = keyColumns;
      this.vnodeKeyWidth = Math.max(...keyColumns) + 1;
      for (let vnode = 0; vnode < VNODE_COUNT; vnode++) {
        this.vnodeBounds.push(undefined);
        this.vnodeWritten.push(String.fromCharCode(vnode));
      }
    }
    this.prefix = prefixWriter.copy();
    this.keyStart = this.prefix.length;
    this.cache = new RowCache(budget);
  }

  /** True when the table's keys carry their vnode (`StateTableSchema.vnodeColumns`). */
  get keyedByVnode(): boolean {
    return this.vnodeHasher !== undefined;
  }

  /** The largest key the table holds or held in the vnode of encoded key `key` (the table's only bound without vnode columns). */
  private boundOf(key: string): string {
    if (this.vnodeHasher === undefined) return (this.keyBound ??= this.readKeyBound());
    const vnode = key.charCodeAt(0);
    const stored = (this.vnodeBounds[vnode] ??= this.readVnodeBound(vnode));
    const written = this.vnodeWritten[vnode]!;
    return stored > written ? stored : written;
  }

  /** A key written: the bound of its vnode rises to it (when known). */
  private raiseBound(key: string): void {
    if (this.vnodeHasher === undefined) {
      if (this.keyBound !== undefined && key > this.keyBound) this.keyBound = key;
      return;
    }
    const vnode = key.charCodeAt(0);
    if (key > this.vnodeWritten[vnode]!) this.vnodeWritten[vnode] = key;
  }

  /** The bounds are read again when next needed. */
  private forgetBounds(): void {
    this.keyBound = undefined;
    this.vnodeBounds.fill(undefined);
  }

  get(key: Row, epoch?: Epoch): Row | undefined {
    if (this.unsettled) this.settle();
    const writer = this.writer;
    writer.reset();
    writer.bytes(this.prefix);
    if (this.vnodeHasher !== undefined) writer.byte(this.vnodeHasher.ofColumns(key, this.vnodeKeyColumns));
    encodeKey(writer, key, this.keyTypes);
    if (epoch === undefined) {
      const encoded = writer.latin1(this.keyStart);
      if (encoded < this.cleanedEnd) return undefined;
      if (this.pending.size > 0) {
        const buffered = this.pending.get(encoded);
        if (buffered !== undefined) return buffered ?? undefined;
      }
      for (let index = this.sealed.length - 1; index >= 0; index--) {
        const buffered = this.sealed[index]!.rows.get(encoded);
        if (buffered !== undefined) return buffered ?? undefined;
      }
      if (this.committedEmpty) return undefined;
      if (encoded > this.boundOf(encoded)) return undefined;
      const cached = this.cache.get(encoded);
      if (cached !== undefined) return cached ?? undefined;
      const ceiling = this.host.readCeiling;
      if (ceiling === undefined) writer.bytes(LATEST_SUFFIX);
      else writeEpochSuffix(writer, ceiling);
      const value = this.host.backend.getLatestVersion(writer.view());
      const row = value === undefined ? undefined : decodeRow(value);
      this.cache.set(encoded, row ?? null);
      return row;
    }
    const readEpoch = this.host.resolveReadEpoch(this.schema.tableId, epoch);
    if (this.cleanings.length > 0 && writer.latin1(this.keyStart) < this.cleanedAsOf(readEpoch)) return undefined;
    writeEpochSuffix(writer, readEpoch);
    const value = this.host.backend.getLatestVersion(writer.view());
    return value === undefined ? undefined : decodeRow(value);
  }

  insert(row: Row): void {
    if (this.appended !== undefined) this.settle();
    this.buffer(this.encodeRowKey(row), row);
  }

  delete(row: Row): void {
    if (this.appended !== undefined) this.settle();
    this.buffer(this.encodeRowKey(row), null);
  }

  /**
   * Deletes every row whose key sorts below `end` (a prefix of the key columns, in key order) in the
   * open epoch, as one range delete: no tombstone per key, no cache entry. Reads of the latest state
   * and AS OF this epoch or later see none of those rows; reads AS OF an earlier epoch still do,
   * within the retention. The caller writes no key below `end` afterwards (a window the watermark
   * closed): such a write fails. An `end` at or below the last one deletes nothing more.
   */
  deleteBelow(end: Row): void {
    assert(this.vnodeHasher === undefined, `table ${this.schema.tableId}: a range delete of a table keyed by vnode`);
    if (this.unsettled) this.settle();
    const writer = this.writer;
    writer.reset();
    encodeKey(writer, end, this.keyTypes);
    const encoded = writer.latin1();
    if (encoded <= this.cleanedEnd) return;
    if (this.pending.size > 0) {
      let removed = false;
      for (const key of this.pending.keys()) {
        if (key < encoded) {
          this.pending.delete(key);
          removed = true;
        }
      }
      if (removed) this.sortedPending = [];
    }
    this.pendingCleanEnd = encoded;
    this.cleanedEnd = encoded;
    // The cached rows below the end are never read again (a latest read below it answers first):
    // they go in one pass once the cache has doubled since the last, not at every range delete (a
    // pass per watermark advance over a large cache would cost more than the deletes it replaces).
    if (this.cache.size >= this.purgeCacheAt) {
      this.cache.deleteBelow(encoded);
      this.purgeCacheAt = Math.max(PURGE_CACHE_MIN_ENTRIES, 2 * this.cache.size);
    }
  }

  /** The end of the range deleted as of durable epoch `epoch` (keys below it are gone), '' when none. */
  private cleanedAsOf(epoch: Epoch): string {
    const cleanings = this.cleanings;
    for (let index = cleanings.length - 1; index >= 0; index--) if (cleanings[index]!.epoch <= epoch) return cleanings[index]!.end;
    return '';
  }

  /** The epoch of the first durable range delete after `epoch` that covers `key`, or null. */
  private cleanedAfter(key: string, epoch: Epoch): Epoch | null {
    for (const cleaning of this.cleanings) if (cleaning.epoch > epoch && key < cleaning.end) return cleaning.epoch;
    return null;
  }

  /** The latest state's cleaned end again, from what stays (after an abort or a failed write). */
  private recomputeCleanedEnd(): void {
    let end = this.appliedEnd;
    const last = this.cleanings[this.cleanings.length - 1];
    if (last !== undefined && last.end > end) end = last.end;
    for (const layer of this.sealed) if (layer.cleanEnd !== undefined && layer.cleanEnd > end) end = layer.cleanEnd;
    if (this.pendingCleanEnd !== undefined && this.pendingCleanEnd > end) end = this.pendingCleanEnd;
    this.cleanedEnd = end;
  }

  /** The durable cleanings found at open (the store's records). */
  loadCleanings(cleanings: Cleaning[]): void {
    this.cleanings = cleanings;
    this.recomputeCleanedEnd();
  }

  /** The cleanings up to `epoch` are applied to the backend (their DeleteRange is durable). */
  cleaningsApplied(epoch: Epoch): void {
    let count = 0;
    while (count < this.cleanings.length && this.cleanings[count]!.epoch <= epoch) {
      const end = this.cleanings[count]!.end;
      if (end > this.appliedEnd) this.appliedEnd = end;
      count++;
    }
    if (count > 0) this.cleanings = this.cleanings.slice(count);
  }

  append(row: Row): void {
    let batch = this.appended;
    if (batch === undefined) {
      batch = this.appended = this.spareAppended ?? new WriteBatchBuilder();
      this.spareAppended = undefined;
      this.unsettled = true;
    }
    const writer = batch.writer;
    batch.beginKey(BATCH_PUT);
    writer.bytes(this.prefix);
    if (this.vnodeHasher !== undefined) writer.byte(this.vnodeHasher.ofColumns(row, this.vnodeRowColumns));
    encodeKeyColumns(writer, row, this.schema.primaryKey, this.keyTypes);
    writer.bytes(BLANK_SUFFIX);
    batch.beginValue();
    encodeRow(writer, row);
    batch.endValue();
  }

  /** True when the open epoch has writes to commit. */
  hasPending(): boolean {
    return this.pending.size > 0 || this.appended !== undefined || this.pendingCleanEnd !== undefined || this.truncateBelow !== undefined;
  }

  truncate(end: Row): void {
    assert(this.vnodeHasher === undefined, `table ${this.schema.tableId}: a truncation of a table keyed by vnode`);
    const writer = new ByteWriter(64);
    writer.bytes(this.prefix);
    encodeKey(writer, end, this.keyTypes);
    const bound = writer.copy();
    if (this.truncateBelow === undefined || Buffer.compare(bound, this.truncateBelow) > 0) this.truncateBelow = bound;
  }

  /**
   * Copies the open epoch's appended entries into `batch` (after its other writes of this table),
   * stamped with the epoch `suffix`.
   */
  appendTo(batch: WriteBatchBuilder, suffix: Buffer): void {
    const appended = this.appended;
    if (appended === undefined) return;
    const writer = batch.writer;
    const start = writer.length;
    writer.bytes(appended.writer.buffer, 0, appended.writer.length);
    batch.count += appended.count;
    const buffer = writer.buffer;
    const end = writer.length;
    // Per entry, in JS: Buffer's readUInt32LE and copy() check their arguments (copy() calls into
    // C++) on each of the epoch's rows.
    for (let at = start; at < end; ) {
      const keyLength = (buffer[at + 1]! | (buffer[at + 2]! << 8) | (buffer[at + 3]! << 16) | (buffer[at + 4]! << 24)) >>> 0;
      const valueAt = at + 5 + keyLength;
      const suffixAt = valueAt - EPOCH_SUFFIX_BYTES;
      for (let index = 0; index < EPOCH_SUFFIX_BYTES; index++) buffer[suffixAt + index] = suffix[index]!;
      at = valueAt + 4 + ((buffer[valueAt]! | (buffer[valueAt + 1]! << 8) | (buffer[valueAt + 2]! << 16) | (buffer[valueAt + 3]! << 24)) >>> 0);
    }
  }

  /** Each appended entry of `batch` as (key, row), in order: the key without prefix and suffix, as `pending` keys it. */
  private decodeAppended(batch: WriteBatchBuilder, into: (key: string, row: Row) => void): void {
    const buffer = batch.writer.buffer;
    const end = batch.writer.length;
    for (let at = 0; at < end; ) {
      const keyLength = buffer.readUInt32LE(at + 1);
      const valueAt = at + 5 + keyLength;
      into(buffer.toString('latin1', at + 5 + this.keyStart, valueAt - EPOCH_SUFFIX_BYTES), decodeRow(buffer, valueAt + 4)!);
      at = valueAt + 4 + buffer.readUInt32LE(valueAt);
    }
  }

  /** An append buffer done with: kept for the next epoch unless it is large and was little used. */
  private release(batch: WriteBatchBuilder): void {
    const used = batch.writer.length;
    batch.reset();
    if (this.spareAppended === undefined && (batch.writer.buffer.length <= APPEND_BUFFER_KEPT_BYTES || used >= batch.writer.buffer.length / 8)) this.spareAppended = batch;
  }

  /** The appended rows, open and sealed, keyed into their write maps (in order, after those maps' writes). */
  private settle(): void {
    this.unsettled = false;
    for (const layer of this.sealed) {
      const appended = layer.appended;
      if (appended === undefined) continue;
      layer.appended = undefined;
      layer.sorted = undefined;
      this.decodeAppended(appended, (key, row) => {
        layer.rows.set(key, row);
        this.raiseBound(key);
      });
      this.release(appended);
    }
    const appended = this.appended;
    if (appended === undefined) return;
    this.appended = undefined;
    this.decodeAppended(appended, (key, row) => this.buffer(key, row));
    this.release(appended);
  }

  prefixIsNew(prefix: Row): boolean {
    if (this.unsettled) this.settle();
    const writer = this.writer;
    writer.reset();
    if (this.vnodeHasher !== undefined) {
      // Without the vnode's columns the group spans every vnode: not known to be new.
      if (prefix.length < this.vnodeKeyWidth) return false;
      writer.byte(this.vnodeHasher.ofColumns(prefix, this.vnodeKeyColumns));
    }
    encodeKey(writer, prefix, this.keyTypes);
    // Keys sort as their bytes, and every key of the group starts with the prefix's: above the bound, none exists.
    const encoded = writer.latin1();
    return encoded > this.boundOf(encoded);
  }

  private buffer(key: string, row: Row | null): void {
    assert(!(key < this.cleanedEnd), `table ${this.schema.tableId}: a write below its range delete`);
    this.pending.set(key, row);
    this.raiseBound(key);
  }

  /** The largest key of the backend (any version, tombstones too), the sealed layers and the open epoch's writes. */
  private readKeyBound(): string {
    let bound = '';
    const { lower, upper } = this.bounds({});
    const iterator = this.host.backend.scan({ lowerBound: lower, upperBound: upper, reverse: true });
    try {
      const packed = iterator.nextPacked(1);
      if (packed !== null && packed.length > 0) {
        const keyLength = packed.readUInt32LE(0);
        bound = packed.toString('latin1', 4 + TABLE_PREFIX_BYTES, 4 + keyLength - EPOCH_SUFFIX_BYTES);
      }
    } finally {
      iterator.close();
    }
    for (const layer of this.sealed) for (const key of layer.rows.keys()) if (key > bound) bound = key;
    for (const key of this.pending.keys()) if (key > bound) bound = key;
    return bound;
  }

  /** The largest key of the backend in vnode `vnode` (any version, tombstones too), or the vnode's byte alone (below every key of it): one reverse seek. */
  private readVnodeBound(vnode: number): string {
    const { lower, upper } = vnodeRange(this.schema.tableId, vnode, vnode + 1);
    const iterator = this.host.backend.scan({ lowerBound: lower, upperBound: upper, reverse: true });
    try {
      const packed = iterator.nextPacked(1);
      if (packed === null || packed.length === 0) return String.fromCharCode(vnode);
      const keyLength = packed.readUInt32LE(0);
      return packed.toString('latin1', 4 + TABLE_ID_BYTES, 4 + keyLength - EPOCH_SUFFIX_BYTES);
    } finally {
      iterator.close();
    }
  }

  private encodeRowKey(row: Row): string {
    const writer = this.writer;
    writer.reset();
    if (this.vnodeHasher !== undefined) writer.byte(this.vnodeHasher.ofColumns(row, this.vnodeRowColumns));
    encodeKeyColumns(writer, row, this.schema.primaryKey, this.keyTypes);
    return writer.latin1();
  }

  /** Encoded bounds of a scan: [table prefix | start, table prefix | end). */
  private bounds(options: Omit<ScanOptions, 'epoch'>): { lower: Buffer; upper: Buffer } {
    const writer = new ByteWriter(64);
    writer.bytes(this.prefix);
    if (options.prefix !== undefined) {
      if (this.vnodeHasher !== undefined) {
        assert(options.prefix.length >= this.vnodeKeyWidth, `table ${this.schema.tableId}: a scan by a key prefix without the vnode's columns`);
        writer.byte(this.vnodeHasher.ofColumns(options.prefix, this.vnodeKeyColumns));
      }
      encodeKey(writer, options.prefix, this.keyTypes);
      const lower = writer.copy();
      // Key columns encode self-delimited, so the group's keys are exactly those starting with
      // these bytes: they end before the prefix's successor (last byte below 0xff incremented).
      let last = lower.length - 1;
      while (last >= this.keyStart && lower[last] === 0xff) last--;
      if (last < this.keyStart) return { lower, upper: this.bounds({}).upper };
      const upper = Buffer.from(lower.subarray(0, last + 1));
      upper[last] = upper[last]! + 1;
      return { lower, upper };
    }
    // A table keyed by vnode: the whole table, or a range within one vnode (bounds holding its columns).
    let vnode = -1;
    if (this.vnodeHasher !== undefined && (options.start !== undefined || options.end !== undefined)) {
      const vnodeOf = (bound: Row | undefined): number => (bound !== undefined && bound.length >= this.vnodeKeyWidth ? this.vnodeHasher!.ofColumns(bound, this.vnodeKeyColumns) : -1);
      const fromStart = vnodeOf(options.start);
      const fromEnd = vnodeOf(options.end);
      vnode = fromStart >= 0 ? fromStart : fromEnd;
      assert(vnode >= 0 && (fromEnd < 0 || fromEnd === vnode), `table ${this.schema.tableId}: a scan between keys of two vnodes`);
      writer.byte(vnode);
    }
    if (options.start !== undefined) encodeKey(writer, options.start, this.keyTypes);
    const lower = writer.copy();
    let upper: Buffer;
    if (this.vnodeHasher !== undefined && options.end !== undefined) {
      writer.reset();
      writer.bytes(this.prefix);
      writer.byte(vnode);
      encodeKey(writer, options.end, this.keyTypes);
      upper = writer.copy();
    } else if (this.vnodeHasher !== undefined) {
      // The vnode's end (the next vnode's first key), or the table's.
      upper = vnode < 0 ? tableUpperBound(this.schema.tableId) : vnodeRange(this.schema.tableId, vnode, vnode + 1).upper;
    } else if (options.end !== undefined) {
      writer.reset();
      writer.bytes(this.prefix);
      encodeKey(writer, options.end, this.keyTypes);
      upper = writer.copy();
    } else {
      // vnode 0 is the only one in use; the next vnode's prefix ends the table's rows.
      upper = Buffer.from(this.prefix.toString('latin1'), 'latin1');
      upper[TABLE_PREFIX_BYTES - 1] = upper[TABLE_PREFIX_BYTES - 1]! + 1;
      if (upper[TABLE_PREFIX_BYTES - 1] === 0) upper = tableUpperBound(this.schema.tableId);
    }
    return { lower, upper };
  }

  *scan(options: ScanOptions = {}): Iterable<Row> {
    if (this.unsettled) this.settle();
    let { lower, upper } = this.bounds(options);
    const reverse = options.reverse === true;
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit <= 0) return;
    let suffix: Buffer = LATEST_SUFFIX;
    let readEpoch: Epoch | undefined;
    if (options.epoch !== undefined) {
      // AS OF: committed (durable) epochs only, never a sealed one still in flight.
      readEpoch = this.host.resolveReadEpoch(this.schema.tableId, options.epoch);
      suffix = epochSuffix(readEpoch);
    } else if (this.host.readCeiling !== undefined) {
      suffix = epochSuffix(this.host.readCeiling);
    }
    // A range deleted (deleteBelow) as of the read: the scan starts past it, not through its rows.
    const cleaned = readEpoch === undefined ? this.cleanedEnd : this.cleanings.length > 0 ? this.cleanedAsOf(readEpoch) : '';
    if (cleaned !== '') {
      if (upper.length > this.keyStart && upper.toString('latin1', this.keyStart) <= cleaned) return;
      if (lower.toString('latin1', this.keyStart) < cleaned) lower = Buffer.concat([this.prefix, Buffer.from(cleaned, 'latin1')]);
    }
    // A key group above every key the table holds or held has no rows: no iterator, no seek (a
    // join's probe of a key newer than all of the other side's, q4's new auctions probing the bids).
    if (options.prefix !== undefined && options.epoch === undefined) {
      const first = lower.toString('latin1', this.keyStart);
      if (first > this.boundOf(first)) return;
    }
    let merged: string[] = [];
    // The buffered rows as of the scan's start: writes made while the scan runs (an UPDATE that
    // scans and rewrites) do not change what it returns, as the committed side is a snapshot too.
    let mergedRows: (Row | null)[] = [];
    if (options.epoch !== undefined) {
      // Committed rows only.
    } else if (this.sealed.length > 0) {
      // Sealed epochs in flight and the open epoch's writes over the committed rows.
      const overlay = this.overlayBetween(lower, upper);
      merged = overlay.keys;
      mergedRows = overlay.rows;
      if (reverse) {
        merged.reverse();
        mergedRows.reverse();
      }
    } else if (this.pending.size > 0) {
      merged = this.pendingBetween(lower.toString('latin1', this.keyStart), upper.toString('latin1', this.keyStart), upper.length <= this.keyStart);
      if (reverse) merged.reverse();
      mergedRows = merged.map((key) => this.pending.get(key)!);
    }
    if (options.epoch === undefined && this.committedEmpty) {
      // Nothing committed to merge with: the buffered rows are the whole table.
      let emitted = 0;
      for (const row of mergedRows) {
        if (row === null) continue;
        yield row;
        if (++emitted >= limit) return;
      }
      return;
    }
    const iterator = this.host.backend.scan({ lowerBound: lower, upperBound: upper, reverse, epochSuffix: suffix });
    let emitted = 0;
    let pendingIndex = 0;
    try {
      for (;;) {
        const packed = iterator.nextPacked(SCAN_BATCH_ENTRIES);
        if (packed === null) break;
        let offset = 0;
        while (offset < packed.length) {
          const keyLength = packed.readUInt32LE(offset);
          const keyStart = offset + 4;
          const keyEnd = keyStart + keyLength;
          const valueLength = packed.readUInt32LE(keyEnd);
          const valueStart = keyEnd + 4;
          offset = valueStart + valueLength;
          if (pendingIndex < merged.length) {
            const committedKey = packed.toString('latin1', keyStart + this.keyStart, keyEnd - EPOCH_SUFFIX_BYTES);
            // Buffered writes that sort before this committed key come first.
            while (pendingIndex < merged.length && (reverse ? merged[pendingIndex]! > committedKey : merged[pendingIndex]! < committedKey)) {
              const row = mergedRows[pendingIndex++]!;
              if (row !== null) {
                yield row;
                if (++emitted >= limit) return;
              }
            }
            if (pendingIndex < merged.length && merged[pendingIndex] === committedKey) {
              const row = mergedRows[pendingIndex++]!;
              if (row !== null) {
                yield row;
                if (++emitted >= limit) return;
              }
              continue;
            }
          }
          const row = decodeRow(packed, valueStart);
          if (row === undefined) continue;
          yield row;
          if (++emitted >= limit) return;
        }
      }
      while (pendingIndex < merged.length) {
        const row = mergedRows[pendingIndex++]!;
        if (row !== null) {
          yield row;
          if (++emitted >= limit) return;
        }
      }
    } finally {
      iterator.close();
    }
  }

  /**
   * The sealed layers and the open epoch's writes in [lower, upper), the newest write per key, in
   * key order: what a read of the latest state merges over the committed rows.
   */
  private overlayBetween(lower: Buffer, upper: Buffer): { keys: string[]; rows: (Row | null)[] } {
    const from = lower.toString('latin1', this.keyStart);
    const to = upper.toString('latin1', this.keyStart);
    const unbounded = upper.length <= this.keyStart;
    const newest = new Map<string, Row | null>();
    for (const layer of this.sealed) {
      if (layer.sorted === undefined) layer.sorted = [...layer.rows.keys()].sort();
      const keys = layer.sorted;
      const end = unbounded ? keys.length : lowerBoundIndex(keys, to);
      for (let index = lowerBoundIndex(keys, from); index < end; index++) newest.set(keys[index]!, layer.rows.get(keys[index]!)!);
    }
    if (this.pending.size > 0) {
      for (const key of this.pendingBetween(from, to, unbounded)) newest.set(key, this.pending.get(key)!);
    }
    const keys = [...newest.keys()].sort();
    const rows = new Array<Row | null>(keys.length);
    for (let index = 0; index < keys.length; index++) rows[index] = newest.get(keys[index]!)!;
    return { keys, rows };
  }

  /** Sorted buffered keys in [lower, upper) (encoded keys without the table prefix). */
  private pendingBetween(lower: string, upper: string, unbounded: boolean): string[] {
    // Keys only join the buffer until it is cleared, so the order is kept by merging the new keys
    // in (O(buffer) per scan after writes, not a sort of the whole buffer), and a range is two
    // binary searches: a key group's scan in a large open epoch (a backfill) stays cheap.
    const known = this.sortedPending.length;
    if (this.pending.size > known) {
      const added = new Array<string>(this.pending.size - known);
      let index = 0;
      let skipped = 0;
      for (const key of this.pending.keys()) {
        if (skipped < known) skipped++;
        else added[index++] = key;
      }
      added.sort();
      this.sortedPending = known === 0 ? added : mergeSorted(this.sortedPending, added);
    }
    const keys = this.sortedPending;
    const from = lowerBoundIndex(keys, lower);
    const to = unbounded ? keys.length : lowerBoundIndex(keys, upper);
    return from === 0 && to === keys.length ? keys.slice() : keys.slice(from, to);
  }

  *versions(from: Epoch, to: Epoch, options: Omit<ScanOptions, 'epoch'> = {}): Iterable<RowVersion> {
    this.host.checkHistory(this.schema.tableId, from, to);
    const { lower, upper } = this.bounds(options);
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    const reverse = options.reverse === true;
    // Versions of a key arrive newest first: each one is valid until the newer one before it.
    // A key's versions are emitted oldest first; with `reverse`, keys come in descending order.
    const durable = this.host.committedEpoch;
    const iterator = this.host.backend.scan({ lowerBound: lower, upperBound: upper });
    const groups: RowVersion[][] = [];
    let group: RowVersion[] = [];
    let groupKey: string | undefined;
    let newer: Epoch | null = null;
    let emitted = 0;
    try {
      for (;;) {
        const packed = iterator.nextPacked(SCAN_BATCH_ENTRIES);
        if (packed === null) break;
        let offset = 0;
        while (offset < packed.length) {
          const keyLength: number = packed.readUInt32LE(offset);
          const keyStart: number = offset + 4;
          const keyEnd: number = keyStart + keyLength;
          const valueLength: number = packed.readUInt32LE(keyEnd);
          const valueStart: number = keyEnd + 4;
          offset = valueStart + valueLength;
          const epoch = readEpochSuffix(packed, keyEnd);
          // A sealed epoch's write may have landed before it is acknowledged: not history yet.
          if (epoch > durable) continue;
          const key = packed.toString('latin1', keyStart, keyEnd - EPOCH_SUFFIX_BYTES);
          if (key !== groupKey) {
            if (group.length > 0) {
              group.reverse();
              if (reverse) groups.push(group);
              else {
                for (const version of group) {
                  yield version;
                  if (++emitted >= limit) return;
                }
              }
            }
            group = [];
            groupKey = key;
            newer = null;
          }
          let validTo = newer;
          newer = epoch;
          if (this.cleanings.length > 0) {
            // A durable range delete after this version ends it (the backend keeps it until GC).
            const cut = this.cleanedAfter(packed.toString('latin1', keyStart + this.keyStart, keyEnd - EPOCH_SUFFIX_BYTES), epoch);
            if (cut !== null && cut <= durable && (validTo === null || cut < validTo)) validTo = cut;
          }
          if (packed[valueStart] !== ROW_TOMBSTONE && epoch <= to && (validTo === null || validTo > from)) {
            group.push({ row: decodeRow(packed, valueStart)!, validFrom: epoch, validTo });
          }
        }
      }
    } finally {
      iterator.close();
    }
    if (group.length > 0) {
      group.reverse();
      groups.push(group);
    }
    if (reverse) groups.reverse();
    for (const versions of groups) {
      for (const version of versions) {
        yield version;
        if (++emitted >= limit) return;
      }
    }
  }

  stats(): { readonly bytes: number; readonly keys: number } {
    const lower = this.prefix;
    const upper = tableUpperBound(this.schema.tableId);
    return this.host.backend.tableStats(this.schema.tableId, lower, upper);
  }

  writeAround(): void {
    this.cacheWrites = false;
  }

  /**
   * Rows of this table were committed by another thread's store (a source fragment's workers,
   * executor/stream/PARALLEL.md): the latest reads here forget what they knew of the committed
   * rows (cached rows and absences, the key bound, an empty table).
   */
  committedElsewhere(): void {
    this.committedEmpty = false;
    this.forgetBounds();
    this.cache.clear();
  }

  /**
   * Rows of keys this table never read were committed by another writer (a keyed fragment's owner
   * taking vnodes it never held, executor/stream/parallel/parallel-fragment.ts): the key bound and
   * the empty table are forgotten, read again when next needed; the cache stays, as it holds only
   * keys read here, which those rows' keys are not.
   */
  rowsAddedElsewhere(): void {
    this.committedEmpty = false;
    this.forgetBounds();
  }

  /** After a successful commit of `epoch`: the buffered writes become the cached latest rows. */
  publishPending(epoch: Epoch): void {
    this.committedEmpty = false;
    if (this.pendingCleanEnd !== undefined) {
      this.cleanings.push({ epoch, end: this.pendingCleanEnd });
      this.pendingCleanEnd = undefined;
    }
    if (this.truncateBelow !== undefined) {
      this.truncateBelow = undefined;
      this.cache.clear();
    }
    if (this.appended !== undefined) {
      // Keyed only when the cache needs the keys; otherwise a key bound read again once needed.
      if (this.cacheWrites || this.cache.size > 0) this.settle();
      else {
        this.release(this.appended);
        this.appended = undefined;
        this.forgetBounds();
      }
    }
    if (this.cacheWrites) for (const [key, row] of this.pending) this.cache.set(key, row);
    else if (this.cache.size > 0) for (const key of this.pending.keys()) this.cache.delete(key);
    this.pending.clear();
    this.sortedPending = [];
  }

  /**
   * The open epoch's writes become a sealed layer of `epoch` (its commit now in flight); the open
   * epoch starts empty. Reads see the layer until publishSealed().
   */
  sealPending(epoch: Epoch): void {
    const sorted = this.sortedPending.length === this.pending.size ? this.sortedPending : undefined;
    this.sealed.push({ epoch, rows: this.pending, sorted, appended: this.appended, cleanEnd: this.pendingCleanEnd });
    this.pendingCleanEnd = undefined;
    // A truncation is in the sealed batch already; latest reads of its keys are not served by it.
    if (this.truncateBelow !== undefined) this.cache.clear();
    this.truncateBelow = undefined;
    this.pending = new Map();
    this.sortedPending = [];
    this.appended = undefined;
  }

  /** `epoch` (the oldest sealed layer) is durable: its rows become the cached latest rows. */
  publishSealed(epoch: Epoch): void {
    const layer = this.sealed.shift();
    assert(layer !== undefined && layer.epoch === epoch, `table ${this.schema.tableId}: published epoch ${epoch} is not its oldest sealed one`);
    this.committedEmpty = false;
    if (layer.cleanEnd !== undefined) this.cleanings.push({ epoch, end: layer.cleanEnd });
    if (layer.appended !== undefined) {
      if (this.cacheWrites || this.cache.size > 0) {
        this.sealed.unshift(layer);
        this.settle();
        this.sealed.shift();
      } else {
        // Durable and never keyed: the key bound is read again (one reverse seek) when next needed.
        this.release(layer.appended);
        layer.appended = undefined;
        this.forgetBounds();
      }
    }
    // A later range delete's keys are not cached (the latest reads below it answer without the cache).
    const cleaned = this.cleanedEnd;
    if (this.cacheWrites) {
      for (const [key, row] of layer.rows) if (!(key < cleaned)) this.cache.set(key, row);
    } else if (this.cache.size > 0) for (const key of layer.rows.keys()) this.cache.delete(key);
  }

  /** The sealed layers' commits failed: forget them (the committed state is what stays). */
  discardSealed(): void {
    this.sealed.length = 0;
    this.recomputeCleanedEnd();
  }

  discardPending(): void {
    this.truncateBelow = undefined;
    this.pending.clear();
    this.sortedPending = [];
    if (this.appended !== undefined) this.release(this.appended);
    this.appended = undefined;
    if (this.pendingCleanEnd !== undefined) {
      this.pendingCleanEnd = undefined;
      this.recomputeCleanedEnd();
    }
  }
}

/** The first index whose key is >= `key` in sorted `keys`. */
function lowerBoundIndex(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Two sorted arrays of distinct keys (no key in both) merged into one. */
function mergeSorted(left: readonly string[], right: readonly string[]): string[] {
  const merged = new Array<string>(left.length + right.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < left.length && j < right.length) merged[k++] = left[i]! < right[j]! ? left[i++]! : right[j++]!;
  while (i < left.length) merged[k++] = left[i++]!;
  while (j < right.length) merged[k++] = right[j++]!;
  return merged;
}
