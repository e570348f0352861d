// The StateStore over an MVCC backend (RocksDB or memory): the tables, the open epoch's metadata
// writes and drops, and commit, which writes every table's buffered rows, the metadata, the tables'
// window records and the committed epoch in one atomic, WAL-synced batch. Only after that write
// succeeds does any in-memory state change, so a failed commit (disk full) loses nothing and can be
// retried or aborted.
//
// Store records live under table id 0xFFFFFFFF: 'e' the committed epoch, 'm' + name a metadata
// value, 't' + table id a table's window record (table-window.ts).

import { assert, SqlError, SqlState } from '../sql/errors.js';
import { EPOCH_SEQUENCE_BITS, type Epoch } from '../sql/epoch.js';
import type { ReadableWindow, StateStore, StateTable, StateTableSchema } from './state-table.js';
import { ByteWriter } from './byte-writer.js';
import type { MvccBackend } from './mvcc-backend.js';
import { assertTableId, epochSuffix, SYSTEM_TABLE_ID, tableLowerBound, tableUpperBound } from './mvcc-key.js';
import { MvccStateTable, type TableHost } from './mvcc-state-table.js';
import { MemoryBudget } from './row-cache.js';
import { encodeRow, ROW_TOMBSTONE } from './row-codec.js';
import { advanceWatermark, decodeTableRecord, encodeTableRecord, windowError, type TableRecord } from './table-window.js';
import { BATCH_PUT, WriteBatchBuilder } from './write-batch.js';

export interface MvccStoreOptions {
  /** Default time-travel retention (--time-travel-retention). */
  readonly retentionMs: number;
  /** Budget of the memory tier (--memory-limit). */
  readonly memoryLimitBytes: number;
}

/** One second of epoch time: the smallest step of a table's GC watermark. */
const WATERMARK_STEP = 1000n << EPOCH_SEQUENCE_BITS;

const RECORD_EPOCH = 0x65; // 'e'
const RECORD_META = 0x6d; // 'm'
const RECORD_TABLE = 0x74; // 't'

function systemKey(kind: number, tail?: Buffer): Buffer {
  const writer = new ByteWriter(16);
  writer.uint32BigEndian(SYSTEM_TABLE_ID);
  writer.byte(kind);
  if (tail !== undefined) writer.bytes(tail);
  return writer.copy();
}

/** The key of the committed-epoch record (8 bytes, big endian), for readers of a checkpoint. */
export function committedEpochKey(): Buffer {
  return systemKey(RECORD_EPOCH);
}

function tableRecordKey(tableId: number): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(tableId);
  return systemKey(RECORD_TABLE, id);
}

/** The key of a metadata record (`putMeta`), for readers of a checkpoint. */
export function metaKey(name: string): Buffer {
  return systemKey(RECORD_META, Buffer.from(name, 'utf8'));
}

export class MvccStateStore implements StateStore, TableHost {
  readonly backend: MvccBackend;
  readonly options: MvccStoreOptions;
  readonly budget: MemoryBudget;
  private readonly tables = new Map<number, MvccStateTable>();
  private readonly records = new Map<number, TableRecord>();
  private readonly pendingMeta = new Map<string, Uint8Array>();
  /** Tables dropped in the open epoch (restored by abort()). */
  private readonly pendingDrops = new Map<number, { table: MvccStateTable | undefined; record: TableRecord | undefined }>();
  private readonly batch = new WriteBatchBuilder();
  /** Tables whose record changed other than by the watermark (retention), to write at commit. */
  private readonly changedRecords = new Set<number>();
  private committed: Epoch = 0n;
  private closed = false;

  constructor(backend: MvccBackend, options: MvccStoreOptions) {
    this.backend = backend;
    this.options = options;
    this.budget = new MemoryBudget(options.memoryLimitBytes);
    this.load();
  }

  private load(): void {
    const epoch = this.backend.get(systemKey(RECORD_EPOCH));
    this.committed = epoch === undefined ? 0n : epoch.readBigUInt64BE(0);
    const iterator = this.backend.scan({ lowerBound: systemKey(RECORD_TABLE), upperBound: systemKey(RECORD_TABLE + 1) });
    try {
      for (let packed = iterator.nextPacked(1024); packed !== null; packed = iterator.nextPacked(1024)) {
        let offset = 0;
        while (offset < packed.length) {
          const keyLength = packed.readUInt32LE(offset);
          const keyEnd = offset + 4 + keyLength;
          const valueLength = packed.readUInt32LE(keyEnd);
          const tableId = packed.readUInt32BE(keyEnd - 4);
          const record = decodeTableRecord(packed.subarray(keyEnd + 4, keyEnd + 4 + valueLength));
          this.records.set(tableId, record);
          this.backend.setRetentionWatermark(tableId, record.gcWatermark);
          offset = keyEnd + 4 + valueLength;
        }
      }
    } finally {
      iterator.close();
    }
  }

  get committedEpoch(): Epoch {
    return this.committed;
  }

  table(schema: StateTableSchema): StateTable {
    this.assertOpen();
    assertTableId(schema.tableId);
    const existing = this.tables.get(schema.tableId);
    if (existing !== undefined) {
      if (schema !== existing.schema) {
        // A new schema for the same table (ALTER: columns, retention). Rows are self-describing,
        // so only the key must stay the same.
        assert(
          schema.primaryKey.length === existing.schema.primaryKey.length &&
            schema.primaryKey.every((column, index) => schema.columnTypes[column]?.name === existing.keyTypes[index]!.name),
          `table ${schema.tableId} reopened with a different primary key`,
        );
        existing.schema = schema;
        const record = this.records.get(schema.tableId);
        if (record !== undefined && record.retentionMs !== schema.retentionMs) {
          record.retentionMs = schema.retentionMs;
          this.changedRecords.add(schema.tableId);
        }
      }
      return existing;
    }
    const table = new MvccStateTable(schema, this, this.budget);
    this.tables.set(schema.tableId, table);
    const record = this.records.get(schema.tableId);
    if (record === undefined || this.pendingDrops.has(schema.tableId)) {
      table.committedEmpty = true;
      this.records.set(schema.tableId, { createdEpoch: null, gcWatermark: 0n, retentionMs: schema.retentionMs });
    } else if (record.retentionMs !== schema.retentionMs) {
      record.retentionMs = schema.retentionMs;
      this.changedRecords.add(schema.tableId);
    }
    return table;
  }

  dropTable(tableId: number): void {
    this.assertOpen();
    const table = this.tables.get(tableId);
    if (!this.pendingDrops.has(tableId)) this.pendingDrops.set(tableId, { table, record: this.records.get(tableId) });
    if (table !== undefined) {
      table.discardPending();
      table.cache.clear();
      this.tables.delete(tableId);
    }
  }

  getMeta(key: string): Uint8Array | undefined {
    this.assertOpen();
    const pending = this.pendingMeta.get(key);
    if (pending !== undefined) return pending;
    const value = this.backend.get(metaKey(key));
    return value === undefined ? undefined : new Uint8Array(value);
  }

  putMeta(key: string, value: Uint8Array): void {
    this.assertOpen();
    this.pendingMeta.set(key, value);
  }

  commit(epoch: Epoch): void {
    this.assertOpen();
    assert(epoch > this.committed, `commit epoch ${epoch} must be greater than the last committed ${this.committed}`);
    const batch = this.batch;
    batch.reset();
    const writer = batch.writer;
    for (const tableId of this.pendingDrops.keys()) {
      batch.deleteRange(tableLowerBound(tableId), tableUpperBound(tableId));
      if (!this.tables.has(tableId)) batch.delete(tableRecordKey(tableId));
    }
    const suffix = epochSuffix(epoch);
    for (const table of this.tables.values()) {
      if (table.pending.size === 0) continue;
      const prefix = table.prefix;
      for (const [key, row] of table.pending) {
        batch.beginKey(BATCH_PUT);
        writer.bytes(prefix);
        writer.writeLatin1(key);
        writer.bytes(suffix);
        batch.beginValue();
        if (row === null) writer.byte(ROW_TOMBSTONE);
        else encodeRow(writer, row);
        batch.endValue();
      }
    }
    const updatedRecords = new Map<number, TableRecord>();
    for (const [tableId, record] of this.records) {
      if (this.pendingDrops.has(tableId) && !this.tables.has(tableId)) continue;
      const createdEpoch = record.createdEpoch ?? epoch;
      let gcWatermark = advanceWatermark(record.gcWatermark, epoch, record.retentionMs ?? this.options.retentionMs);
      // The window moves in steps of at least a second, so a burst of small commits (one per DML
      // statement) does not rewrite every table's record each time.
      if (gcWatermark - record.gcWatermark < WATERMARK_STEP) gcWatermark = record.gcWatermark;
      if (record.createdEpoch !== null && gcWatermark === record.gcWatermark && !this.changedRecords.has(tableId)) continue;
      const updated: TableRecord = { createdEpoch, gcWatermark, retentionMs: record.retentionMs };
      updatedRecords.set(tableId, updated);
      batch.put(tableRecordKey(tableId), encodeTableRecord(updated));
    }
    for (const [key, value] of this.pendingMeta) batch.put(metaKey(key), value);
    const epochBytes = Buffer.alloc(8);
    epochBytes.writeBigUInt64BE(epoch);
    batch.put(systemKey(RECORD_EPOCH), epochBytes);

    this.backend.write(batch.view());

    // Durable: now publish in memory.
    this.committed = epoch;
    for (const [tableId, dropped] of this.pendingDrops) {
      if (!this.tables.has(tableId)) this.records.delete(tableId);
      dropped.table?.cache.dispose();
    }
    this.pendingDrops.clear();
    for (const table of this.tables.values()) if (table.pending.size > 0) table.publishPending();
    for (const [tableId, record] of updatedRecords) {
      const previous = this.records.get(tableId);
      this.records.set(tableId, record);
      if (previous === undefined || previous.gcWatermark !== record.gcWatermark) this.backend.setRetentionWatermark(tableId, record.gcWatermark);
    }
    this.pendingMeta.clear();
    this.changedRecords.clear();
    if (batch.writer.buffer.length > 16 * 1024 * 1024) this.batch.writer.buffer = Buffer.allocUnsafe(64 * 1024);
  }

  abort(): void {
    for (const table of this.tables.values()) table.discardPending();
    this.pendingMeta.clear();
    // Undo drops: the same table objects come back (callers may hold them), re-creations go.
    for (const [tableId, { table, record }] of this.pendingDrops) {
      const replacement = this.tables.get(tableId);
      if (replacement !== undefined && replacement !== table) {
        replacement.cache.dispose();
        this.tables.delete(tableId);
      }
      if (table !== undefined) this.tables.set(tableId, table);
      if (record !== undefined) this.records.set(tableId, record);
    }
    this.pendingDrops.clear();
    for (const [tableId, record] of this.records) {
      if (record.createdEpoch === null && !this.tables.has(tableId)) this.records.delete(tableId);
    }
  }

  readableWindow(tableId: number): ReadableWindow {
    const record = this.records.get(tableId);
    if (record === undefined || record.createdEpoch === null) return { oldest: this.committed, latest: this.committed };
    const oldest = record.createdEpoch > record.gcWatermark ? record.createdEpoch : record.gcWatermark;
    return { oldest, latest: this.committed };
  }

  resolveReadEpoch(tableId: number, epoch: Epoch): Epoch {
    const window = this.readableWindow(tableId);
    if (epoch < window.oldest) throw windowError(tableId, epoch, window.oldest, window.latest, 'AS OF');
    return epoch > window.latest ? window.latest : epoch;
  }

  checkHistory(tableId: number, from: Epoch, to: Epoch): void {
    if (from > to) {
      throw new SqlError(SqlState.invalidParameterValue, 'FOR SYSTEM_TIME BETWEEN: the start is after the end');
    }
    const record = this.records.get(tableId);
    if (record === undefined || record.createdEpoch === null) return;
    // Collected history matters only if the table existed before the watermark.
    if (from < record.gcWatermark && record.gcWatermark > record.createdEpoch) {
      throw windowError(tableId, from, this.readableWindow(tableId).oldest, this.committed, 'BETWEEN');
    }
  }

  /** Memory tier figures, for metrics and tests. */
  memoryStats(): { usedBytes: number; limitBytes: number; cachedRows: number; hits: number; misses: number; evictions: number } {
    let cachedRows = 0;
    let hits = 0;
    let misses = 0;
    let evictions = 0;
    for (const table of this.tables.values()) {
      cachedRows += table.cache.size;
      hits += table.cache.hits;
      misses += table.cache.misses;
      evictions += table.cache.evictions;
    }
    return { usedBytes: this.budget.usedBytes, limitBytes: this.budget.limitBytes, cachedRows, hits, misses, evictions };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const table of this.tables.values()) table.cache.dispose();
    this.tables.clear();
    await this.backend.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new SqlError(SqlState.objectNotInPrerequisiteState, 'the state store is closed');
  }
}
