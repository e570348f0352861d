// The StateStore over an MVCC backend (RocksDB or memory): the tables, the open epoch's metadata
// writes and drops, and commit, which writes every table's buffered rows, the metadata, the tables'
// window records and the committed epoch in one atomic, WAL-synced batch. Only after that write
// succeeds does any in-memory state change, so a failed commit (disk full) loses nothing and can be
// retried or aborted.
//
// Store records live under table id 0xFFFFFFFF: 'e' the committed epoch, 'm' + name a metadata
// value, 't' + table id a table's window record (table-window.ts), 'c' + table id + epoch a range
// delete of the table (MvccStateTable.deleteBelow) not yet applied to the backend: its end key.

import { assert, SqlError, SqlState } from '../sql/errors.js';
import { EPOCH_SEQUENCE_BITS, epochToMillis, type Epoch } from '../sql/epoch.js';
import type { HistoryHold, ReadableWindow, StateStore, StateTable, StateTableSchema } from './state-table.js';
import { ByteWriter } from './byte-writer.js';
import type { MemoryPart, MvccBackend } from './mvcc-backend.js';
import { assertTableId, epochSuffix, SYSTEM_TABLE_ID, tableLowerBound, tableUpperBound } from './mvcc-key.js';
import { MvccStateTable, type Cleaning, type TableHost } from './mvcc-state-table.js';
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

/**
 * Writes of other threads that commit with this store's epochs (the workers of parallel dataflows,
 * executor/stream/PARALLEL.md): asked for their writes of each epoch as its batch is built, told
 * when it is durable or failed, and closed before the store closes.
 */
export interface CommitParticipant {
  /**
   * Asks for its writes of the open epoch, sealed as `epoch`: undefined when it has none, else the
   * packed writes to come, appended to the epoch's batch before it is written (one atomic write).
   */
  contribute(epoch: Epoch): PendingWrites | undefined;
  durable(epoch: Epoch): void;
  failed(error: unknown): void;
  close(): Promise<void>;
}

/** A participant's packed writes of a sealed epoch, still being made by another thread. */
export interface PendingWrites {
  /** Blocks until they come (the synchronous commit); a failure is thrown. */
  wait(): readonly Uint8Array[];
  /** Resolves when they come (commitAsync: the thread goes on meanwhile); a failure rejects, within a deadline. */
  whenReady(): Promise<readonly Uint8Array[]>;
}

/** At most this many sealed epochs in flight before whenWritable() makes the committer wait. */
export const MAX_SEALED_EPOCHS = 3;

/** An epoch sealed by commitAsync(), its batch being written or waiting for the running write. */
interface SealedEpoch {
  readonly epoch: Epoch;
  readonly batch: WriteBatchBuilder;
  /** Tables with a sealed layer of this epoch. */
  readonly tables: readonly MvccStateTable[];
  /** Tables dropped in this epoch: their caches go once it is durable. */
  readonly droppedTables: readonly MvccStateTable[];
  /** Tables gone with this epoch, and the table records it writes: the windows once durable. */
  readonly droppedIds: readonly number[];
  readonly records: ReadonlyMap<number, TableRecord>;
  /** GC watermarks the compaction filter may use once the epoch is durable. */
  readonly watermarks: readonly [number, Epoch][];
  /** Range deletes this epoch's batch applies to the backend: per table, up to which cleaning's epoch. */
  readonly applied: readonly AppliedCleaning[];
  readonly meta: ReadonlyMap<string, Uint8Array>;
  /** The participants' writes still to come, appended to `batch` when they do: the write waits for them. */
  contributions: Promise<void> | undefined;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** A table's cleanings up to `through` applied to the backend by a batch (one DeleteRange). */
interface AppliedCleaning {
  readonly table: MvccStateTable;
  readonly through: Epoch;
}

/** One second of epoch time: the smallest step of a table's GC watermark. */
const WATERMARK_STEP_MS = 1000;
const WATERMARK_STEP = BigInt(WATERMARK_STEP_MS) << EPOCH_SEQUENCE_BITS;

const RECORD_EPOCH = 0x65; // 'e'
const RECORD_META = 0x6d; // 'm'
const RECORD_TABLE = 0x74; // 't'
const RECORD_CLEANING = 0x63; // 'c'

function systemKey(kind: number, tail?: Buffer): Buffer {
  const writer = new ByteWriter(16);
  writer.uint32BigEndian(SYSTEM_TABLE_ID);
  writer.byte(kind);
  if (tail !== undefined) writer.bytes(tail);
  return writer.copy();
}

const EPOCH_RECORD_KEY = systemKey(RECORD_EPOCH);
const NO_META: ReadonlyMap<string, Uint8Array> = new Map();

/** The key of the committed-epoch record (8 bytes, big endian), for readers of a checkpoint. */
export function committedEpochKey(): Buffer {
  return systemKey(RECORD_EPOCH);
}

/** The key of a table's record ('t' | table id: its readable window), for readers that copy a table's entries with it. */
export function tableRecordKey(tableId: number): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(tableId);
  return systemKey(RECORD_TABLE, id);
}

/** The key of a table's cleaning record at `epoch` ('c' | table id | epoch); `epoch` 0 starts the table's records. */
function cleaningKey(tableId: number, epoch: Epoch): Buffer {
  const tail = Buffer.alloc(12);
  tail.writeUInt32BE(tableId);
  tail.writeBigUInt64BE(epoch, 4);
  return systemKey(RECORD_CLEANING, tail);
}

/** The end of a table's cleaning records. */
function cleaningsEnd(tableId: number): Buffer {
  const tail = Buffer.alloc(4);
  tail.writeUInt32BE(tableId + 1);
  return systemKey(RECORD_CLEANING, tail);
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
  /** Each table's record as of the last sealed epoch (what the next commit builds on). */
  private readonly records = new Map<number, TableRecord>();
  /** Each table's record as of the committed (durable) epoch: readable windows. */
  private readonly windows = new Map<number, TableRecord>();
  /** History holds per table (holdHistory): holder -> what it keeps. */
  private readonly holds = new Map<number, Map<string, HistoryHold>>();
  /** Durable cleanings found at open, per table id, until the table is opened (or dropped). */
  private readonly loadedCleanings = new Map<number, Cleaning[]>();
  /** Per held table, its holds summed up (heldHistory): recomputed when a hold changes, read at every commit. */
  private readonly heldSummaries = new Map<number, HeldHistory>();
  private readonly pendingMeta = new Map<string, Uint8Array>();
  /** Tables dropped in the open epoch (restored by abort()). */
  private readonly pendingDrops = new Map<number, { table: MvccStateTable | undefined; record: TableRecord | undefined }>();
  private readonly batch = new WriteBatchBuilder();
  private metaNowBatch: WriteBatchBuilder | undefined;
  /** Tables whose record changed other than by the watermark (retention), to write at commit. */
  private readonly changedRecords = new Set<number>();
  private committed: Epoch = 0n;
  /** The last sealed epoch: `committed`, or later while writes are in flight. */
  private latest: Epoch = 0n;
  /** Sealed epochs whose write has not finished, oldest first. */
  private readonly sealed: SealedEpoch[] = [];
  /** How many of `sealed` (from the front) the running write covers. */
  private sealedWriting = 0;
  /** Bytes of the sealed batches in flight. */
  private sealedBytes = 0;
  /** The running write and the publication after it; undefined when none runs. */
  private writing: Promise<void> | undefined;
  /** Batch buffers of finished writes, reused by the next seals. */
  private readonly sparebatches: WriteBatchBuilder[] = [];
  /** The largest recent batch in bytes, decaying by 1/16 per commit (keepOrShrink). */
  private recentBatchBytes = 0;
  /** Set by a failed write: every later commit fails with it. */
  private failure: unknown;
  private closed = false;
  private readonly participants = new Set<CommitParticipant>();
  /**
   * Latest reads of the backend see no version newer than this while set (`startAt`): a worker that
   * takes over a share of another node's keys replays epochs the backend may already hold.
   */
  readCeiling: Epoch | undefined;
  /** The ceiling is lifted once this epoch is durable here. */
  private ceilingUntil: Epoch | undefined;

  constructor(backend: MvccBackend, options: MvccStoreOptions) {
    this.backend = backend;
    this.options = options;
    this.budget = new MemoryBudget(options.memoryLimitBytes);
    this.load();
  }

  private load(): void {
    const epoch = this.backend.get(systemKey(RECORD_EPOCH));
    this.committed = epoch === undefined ? 0n : epoch.readBigUInt64BE(0);
    this.latest = this.committed;
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
          this.windows.set(tableId, record);
          this.backend.setRetentionWatermark(tableId, record.gcWatermark);
          offset = keyEnd + 4 + valueLength;
        }
      }
    } finally {
      iterator.close();
    }
    const cleanings = this.backend.scan({ lowerBound: systemKey(RECORD_CLEANING), upperBound: systemKey(RECORD_CLEANING + 1) });
    try {
      for (let packed = cleanings.nextPacked(1024); packed !== null; packed = cleanings.nextPacked(1024)) {
        let offset = 0;
        while (offset < packed.length) {
          const keyLength = packed.readUInt32LE(offset);
          const keyEnd = offset + 4 + keyLength;
          const valueLength = packed.readUInt32LE(keyEnd);
          const tableId = packed.readUInt32BE(keyEnd - 12);
          const epoch = packed.readBigUInt64BE(keyEnd - 8);
          const end = packed.toString('latin1', keyEnd + 4, keyEnd + 4 + valueLength);
          let list = this.loadedCleanings.get(tableId);
          if (list === undefined) this.loadedCleanings.set(tableId, (list = []));
          // Keys in order: by epoch within a table.
          list.push({ epoch, end });
          offset = keyEnd + 4 + valueLength;
        }
      }
    } finally {
      cleanings.close();
    }
  }

  get committedEpoch(): Epoch {
    return this.committed;
  }

  /**
   * Starts this store as of `base` rather than its backend's committed epoch, for a worker that
   * replays the epochs after `base` a node already handed over (executor/cluster/keyed-share-worker.ts):
   * their writes may be in the backend or on their way to it, so until `until` is durable here, the
   * latest reads of the backend see only versions up to the last epoch durable here (its own
   * replayed epochs are its sealed layers meanwhile, equal to what the node handed over).
   */
  startAt(base: Epoch, until: Epoch): void {
    this.assertOpen();
    assert(this.sealed.length === 0, 'startAt before any commit');
    this.committed = base;
    this.latest = base;
    if (until > base) {
      this.readCeiling = base;
      this.ceilingUntil = until;
    }
  }

  /** Writes of other threads commit with this store's epochs from the next batch built on. */
  addParticipant(participant: CommitParticipant): void {
    this.participants.add(participant);
  }

  removeParticipant(participant: CommitParticipant): void {
    this.participants.delete(participant);
  }

  /** Rows any table read here may have been committed by another writer since: each table forgets what it knew of its committed rows (MvccStateTable.committedElsewhere). */
  committedElsewhere(): void {
    for (const table of this.tables.values()) table.committedElsewhere();
  }

  /** Rows of keys no table read here were committed by another writer: each table forgets its key bound (MvccStateTable.rowsAddedElsewhere). */
  rowsAddedElsewhere(): void {
    for (const table of this.tables.values()) table.rowsAddedElsewhere();
  }

  table(schema: StateTableSchema): StateTable {
    this.assertOpen();
    assertTableId(schema.tableId);
    // Its keys move to the records family in this call, whoever opened the table first (DESIGN.md §6).
    if (schema.records === true) this.backend.markRecordsTable?.(schema.tableId);
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
        assert(String(schema.vnodeColumns) === String(existing.schema.vnodeColumns), `table ${schema.tableId} reopened with different vnode columns`);
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
    const cleanings = this.loadedCleanings.get(schema.tableId);
    if (cleanings !== undefined && !this.pendingDrops.has(schema.tableId)) table.loadCleanings(cleanings);
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
    for (let index = this.sealed.length - 1; index >= 0; index--) {
      const sealed = this.sealed[index]!.meta.get(key);
      if (sealed !== undefined) return sealed;
    }
    const value = this.backend.get(metaKey(key));
    return value === undefined ? undefined : new Uint8Array(value);
  }

  putMeta(key: string, value: Uint8Array): void {
    this.assertOpen();
    this.pendingMeta.set(key, value);
  }

  /**
   * Writes one metadata record at once, durably (one WAL-synced write on the main thread), outside
   * the epochs: for what must be on disk before it is used and must not roll back with an abort (a
   * sequence's reserved range). A key written here is never written with putMeta.
   */
  putMetaNow(key: string, value: Uint8Array): void {
    this.assertWritable();
    const batch = (this.metaNowBatch ??= new WriteBatchBuilder());
    batch.reset();
    batch.put(metaKey(key), value);
    this.backend.write(batch.view());
  }

  /**
   * Commits the open epoch synchronously: one WAL-synced write on the main thread, then memory.
   * If the write fails nothing in memory changed (retry or abort()). Only when no commitAsync() is
   * in flight (the order of epochs in RocksDB would otherwise be lost).
   */
  commit(epoch: Epoch): void {
    this.assertWritable();
    assert(this.sealed.length === 0, 'commit() while sealed epochs are in flight: await settled() first');
    assert(epoch > this.committed, `commit epoch ${epoch} must be greater than the last committed ${this.committed}`);
    const batch = this.batch;
    const applied: AppliedCleaning[] = [];
    const pending: PendingWrites[] = [];
    const updatedRecords = this.buildBatch(batch, epoch, applied, pending);
    try {
      for (const writes of pending) for (const bytes of writes.wait()) batch.writer.bytes(bytes);
      this.backend.write(batch.view());
    } catch (error) {
      // The participants sealed their epoch for this batch: it is gone with it.
      for (const participant of this.participants) participant.failed(error);
      throw error;
    }
    for (const participant of this.participants) participant.durable(epoch);

    // Durable: now publish in memory.
    this.committed = epoch;
    this.latest = epoch;
    this.followCeiling(epoch);
    for (const [tableId, dropped] of this.pendingDrops) {
      if (!this.tables.has(tableId)) {
        this.records.delete(tableId);
        this.windows.delete(tableId);
      }
      this.loadedCleanings.delete(tableId);
      dropped.table?.cache.dispose();
    }
    this.pendingDrops.clear();
    for (const table of this.tables.values()) if (table.hasPending()) table.publishPending(epoch);
    for (const { table, through } of applied) {
      table.cleaningsScheduled = through;
      table.cleaningsApplied(through);
    }
    for (const [tableId, record] of updatedRecords) {
      const previous = this.records.get(tableId);
      this.records.set(tableId, record);
      this.windows.set(tableId, record);
      if (previous === undefined || previous.gcWatermark !== record.gcWatermark) this.backend.setRetentionWatermark(tableId, record.gcWatermark);
    }
    this.pendingMeta.clear();
    this.changedRecords.clear();
    this.keepOrShrink(batch);
  }

  /**
   * Seals the open epoch as `epoch` and opens the next one at once: its writes stay readable by
   * every read of the latest state (sealed layers, in commit order), its batch is written off the
   * main thread, and the Promise resolves when the batch is in RocksDB with its WAL synced. Only
   * then does `committedEpoch` (what AS OF reads and snapshots see) move to it. Batches are written
   * one at a time in epoch order; epochs sealed while one is being written go together in the next
   * write (one fsync for all: group commit). A failed write fails its epoch and every later sealed
   * one with the write's error and poisons the store (every later commit fails with it): their
   * writes were built on the failed epoch. A disk too full to take the batch fails here, before
   * sealing, with nothing changed.
   */
  commitAsync(epoch: Epoch): Promise<void> {
    this.assertWritable();
    assert(epoch > this.latest, `commit epoch ${epoch} must be greater than the last sealed ${this.latest}`);
    const batch = this.sparebatches.pop() ?? new WriteBatchBuilder();
    let updatedRecords: Map<number, TableRecord>;
    const applied: AppliedCleaning[] = [];
    const pending: PendingWrites[] = [];
    try {
      updatedRecords = this.buildBatch(batch, epoch, applied, pending);
      this.backend.checkWritable(batch.writer.length + this.sealedBytes);
    } catch (error) {
      this.sparebatches.push(batch);
      // The participants still answer (and are told the epoch failed).
      for (const writes of pending) void writes.whenReady().catch(() => undefined);
      for (const participant of this.participants) participant.failed(error);
      throw error;
    }
    // Sealed: from here on the epoch is in flight and the open epoch is the next one.
    const tables: MvccStateTable[] = [];
    for (const table of this.tables.values()) {
      if (!table.hasPending()) continue;
      table.sealPending(epoch);
      tables.push(table);
    }
    for (const { table, through } of applied) table.cleaningsScheduled = through;
    const droppedTables: MvccStateTable[] = [];
    const droppedIds: number[] = [];
    for (const [tableId, dropped] of this.pendingDrops) {
      this.loadedCleanings.delete(tableId);
      if (!this.tables.has(tableId)) {
        this.records.delete(tableId);
        droppedIds.push(tableId);
      }
      if (dropped.table !== undefined) droppedTables.push(dropped.table);
    }
    this.pendingDrops.clear();
    const watermarks: [number, Epoch][] = [];
    for (const [tableId, record] of updatedRecords) {
      const previous = this.records.get(tableId);
      this.records.set(tableId, record);
      if (previous === undefined || previous.gcWatermark !== record.gcWatermark) watermarks.push([tableId, record.gcWatermark]);
    }
    const meta = this.pendingMeta.size === 0 ? NO_META : new Map(this.pendingMeta);
    this.pendingMeta.clear();
    this.changedRecords.clear();
    this.latest = epoch;
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const durable = new Promise<void>((yes, no) => {
      resolve = yes;
      reject = no;
    });
    // Handled here so an epoch nobody awaits cannot become an unhandled rejection; awaiting
    // callers still see the failure.
    durable.catch(() => {});
    const sealed: SealedEpoch = { epoch, batch, tables, droppedTables, droppedIds, records: updatedRecords, watermarks, applied, meta, contributions: undefined, resolve, reject };
    if (pending.length > 0) {
      sealed.contributions = this.contributed(sealed, pending);
      // Its failure is the epoch's (writeSealed): not an unhandled rejection meanwhile.
      sealed.contributions.catch(() => undefined);
    }
    this.sealed.push(sealed);
    this.sealedBytes += batch.writer.length;
    if (this.backend.ordersWrites === true) this.writeNow(sealed);
    else if (this.writing === undefined) this.writeSealed();
    return durable;
  }

  /**
   * Resolves when the epochs sealed so far are durable (or failed): checkpoints, close, a writer
   * entering the write lock. Epochs sealed after the call are not waited for, so a steady stream of
   * barriers cannot starve the caller.
   */
  async settled(): Promise<void> {
    const target = this.latest;
    while (this.committed < target && this.writing !== undefined) await this.writing;
  }

  /** Resolves when fewer than `maxSealed` epochs are in flight (back-pressure for the committer). */
  async whenWritable(maxSealed = MAX_SEALED_EPOCHS): Promise<void> {
    while (this.sealed.length >= maxSealed && this.writing !== undefined) await this.writing;
  }

  /** Epochs sealed and not yet durable. */
  get sealedEpochs(): number {
    return this.sealed.length;
  }

  /** The last epoch sealed (committed or in flight): the next epoch must be later. */
  get latestEpoch(): Epoch {
    return this.latest;
  }

  /**
   * The participants' writes of a sealed epoch, appended to its batch as they come (every one, in
   * the order asked); a failure rejects, failing the epoch at its write.
   */
  private async contributed(sealed: SealedEpoch, pending: readonly PendingWrites[]): Promise<void> {
    const settled = await Promise.allSettled(pending.map((writes) => writes.whenReady()));
    for (const result of settled) if (result.status === 'rejected') throw result.reason;
    // A store that failed meanwhile dropped the epoch (and its bytes' count).
    if (!this.sealed.includes(sealed)) return;
    const before = sealed.batch.writer.length;
    for (const result of settled) if (result.status === 'fulfilled') for (const bytes of result.value) sealed.batch.writer.bytes(bytes);
    this.sealedBytes += sealed.batch.writer.length - before;
    sealed.contributions = undefined;
  }

  /**
   * Writes every sealed epoch not yet being written, as one batch, then publishes them in order. An
   * epoch whose participants' writes are still to come is waited for (the write after it too: the
   * epochs' order), under the participants' deadlines; its failure fails it and every later one.
   */
  private writeSealed(): void {
    const first = this.sealed[this.sealedWriting];
    if (first === undefined) return;
    if (first.contributions !== undefined) {
      const waiting: Promise<void> = first.contributions.then(
        () => {
          if (this.writing !== waiting) return;
          this.writing = undefined;
          this.writeSealed();
        },
        (error: unknown) => {
          if (this.writing === waiting) this.fail(error);
        },
      );
      this.writing = waiting;
      return;
    }
    let end = this.sealedWriting;
    while (end < this.sealed.length && this.sealed[end]!.contributions === undefined) end++;
    const group = this.sealed.slice(this.sealedWriting, end);
    this.sealedWriting = end;
    const packed = group.length === 1 ? group[0]!.batch.view() : Buffer.concat(group.map((sealed) => sealed.batch.view()));
    this.writing = this.backend.writeAsync(packed).then(
      () => {
        for (const sealed of group) this.publishSealed(sealed);
        this.sealedWriting = 0;
        this.writing = undefined;
        if (this.sealed.length > 0) this.writeSealed();
      },
      (error: unknown) => {
        this.fail(error);
      },
    );
  }

  /**
   * Starts one sealed epoch's write at once (a backend that keeps its writes in order): its
   * publication follows the previous epoch's, and a failure fails it and every later one.
   */
  private writeNow(sealed: SealedEpoch): void {
    const written =
      sealed.contributions === undefined ? this.backend.writeAsync(sealed.batch.view()) : sealed.contributions.then(() => this.backend.writeAsync(sealed.batch.view()));
    const previous = this.writing ?? Promise.resolve();
    const publication: Promise<void> = previous
      .then(() => written)
      .then(
        () => {
          if (this.failure === undefined && this.sealed[0] === sealed) this.publishSealed(sealed);
        },
        (error: unknown) => {
          if (this.failure === undefined) this.fail(error);
        },
      )
      .finally(() => {
        if (this.writing === publication) this.writing = undefined;
      });
    this.writing = publication;
  }

  /** `epoch` is durable here: the read ceiling (startAt) moves to it, or goes once the replayed epochs are. */
  private followCeiling(epoch: Epoch): void {
    if (this.ceilingUntil === undefined) return;
    this.readCeiling = epoch;
    if (epoch >= this.ceilingUntil) this.readCeiling = this.ceilingUntil = undefined;
  }

  /** A sealed epoch is durable: it becomes the committed epoch, its layers cached rows. */
  private publishSealed(sealed: SealedEpoch): void {
    const first = this.sealed.shift();
    assert(first === sealed, 'sealed epochs publish in order');
    this.sealedBytes -= sealed.batch.writer.length;
    this.committed = sealed.epoch;
    this.followCeiling(sealed.epoch);
    for (const table of sealed.droppedTables) table.cache.dispose();
    for (const tableId of sealed.droppedIds) this.windows.delete(tableId);
    for (const [tableId, record] of sealed.records) this.windows.set(tableId, record);
    for (const table of sealed.tables) table.publishSealed(sealed.epoch);
    for (const { table, through } of sealed.applied) table.cleaningsApplied(through);
    for (const [tableId, watermark] of sealed.watermarks) this.backend.setRetentionWatermark(tableId, watermark);
    for (const participant of this.participants) participant.durable(sealed.epoch);
    this.keepOrShrink(sealed.batch);
    sealed.batch.reset();
    if (this.sparebatches.length < MAX_SEALED_EPOCHS) this.sparebatches.push(sealed.batch);
    sealed.resolve();
  }

  /**
   * A written batch's buffer is kept for the next seal while recent epochs fill it: a 200k-row
   * epoch (20 MB) would grow a fresh 64 KiB buffer by nine doublings every time, copying and
   * faulting in ~60 MB (ByteWriter.ensure, 3.5% of q0's profile when it does). Once the largest recent batch (decaying by
   * 1/16 per commit, so a run of small epochs between large ones does not count) uses less than an
   * eighth of it, the buffer goes back to 64 KiB: a burst of large epochs holds no memory after it.
   */
  private keepOrShrink(batch: WriteBatchBuilder): void {
    const used = batch.writer.length;
    this.recentBatchBytes = Math.max(used, this.recentBatchBytes - this.recentBatchBytes / 16);
    const capacity = batch.writer.buffer.length;
    if (capacity > 1024 * 1024 && this.recentBatchBytes < capacity / 8) batch.writer.buffer = Buffer.allocUnsafe(64 * 1024);
  }

  /** A write failed: every sealed epoch fails with its error, and so does every later commit. */
  private fail(error: unknown): void {
    this.failure = error;
    const failed = this.sealed.splice(0);
    for (const table of this.tables.values()) table.discardSealed();
    for (const sealed of failed) for (const table of sealed.tables) table.discardSealed();
    this.sealedWriting = 0;
    this.sealedBytes = 0;
    this.writing = undefined;
    this.latest = this.committed;
    for (const participant of this.participants) participant.failed(error);
    for (const sealed of failed) sealed.reject(error);
  }

  /**
   * Writes the open epoch's batch into `batch` (nothing else changes); returns the new table records
   * and adds to `applied` the range deletes the batch applies to the backend.
   */
  private buildBatch(batch: WriteBatchBuilder, epoch: Epoch, applied: AppliedCleaning[], pending: PendingWrites[]): Map<number, TableRecord> {
    batch.reset();
    const writer = batch.writer;
    for (const tableId of this.pendingDrops.keys()) {
      batch.deleteRange(tableLowerBound(tableId), tableUpperBound(tableId));
      batch.deleteRange(cleaningKey(tableId, 0n), cleaningsEnd(tableId));
      if (!this.tables.has(tableId)) batch.delete(tableRecordKey(tableId));
    }
    const suffix = epochSuffix(epoch);
    for (const table of this.tables.values()) {
      if (table.cleanings.length > 0) this.applyCleanings(batch, table, applied);
      if (!table.hasPending()) continue;
      const prefix = table.prefix;
      // A range delete of this epoch: its record, read by AS OF and latest reads until applied.
      if (table.pendingCleanEnd !== undefined) batch.put(cleaningKey(table.schema.tableId, epoch), Buffer.from(table.pendingCleanEnd, 'latin1'));
      // truncate(): the table's keys below the bound go, history and all, before its new writes.
      if (table.truncateBelow !== undefined) batch.deleteRange(prefix, table.truncateBelow);
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
      // Appended rows (already encoded) come after every keyed write of the table.
      table.appendTo(batch, suffix);
    }
    for (const participant of this.participants) {
      const writes = participant.contribute(epoch);
      if (writes !== undefined) pending.push(writes);
    }
    const updatedRecords = new Map<number, TableRecord>();
    const epochMillis = epochToMillis(epoch);
    for (const [tableId, record] of this.records) {
      const held = this.heldSummaries.get(tableId);
      const retentionMs = this.retentionOf(record, held);
      // Most epochs move no table's window (it moves in whole seconds): a number comparison
      // settles that without the BigInt arithmetic of nextWatermark (a fixed cost per table per epoch).
      if (
        record.createdEpoch !== null &&
        !this.changedRecords.has(tableId) &&
        held?.fromEpoch === undefined &&
        epochMillis - retentionMs < epochToMillis(record.gcWatermark) + WATERMARK_STEP_MS
      ) {
        continue;
      }
      if (this.pendingDrops.has(tableId) && !this.tables.has(tableId)) continue;
      const createdEpoch = record.createdEpoch ?? epoch;
      const gcWatermark = nextWatermark(record.gcWatermark, epoch, retentionMs, held?.fromEpoch);
      if (record.createdEpoch !== null && gcWatermark === record.gcWatermark && !this.changedRecords.has(tableId)) continue;
      const updated: TableRecord = { createdEpoch, gcWatermark, retentionMs: record.retentionMs };
      updatedRecords.set(tableId, updated);
      batch.put(tableRecordKey(tableId), encodeTableRecord(updated));
    }
    for (const [key, value] of this.pendingMeta) batch.put(metaKey(key), value);
    batch.beginKey(BATCH_PUT);
    writer.bytes(EPOCH_RECORD_KEY);
    batch.beginValue();
    writer.uint64BigEndian(epoch);
    batch.endValue();
    return updatedRecords;
  }

  /**
   * Applies a table's durable cleanings that no reader can ask to see through any more (their epoch
   * at or below the table's durable GC watermark: reads AS OF an earlier epoch fail with 72000) to
   * the backend: one DeleteRange of the rows below the newest one's end, and their records deleted.
   */
  private applyCleanings(batch: WriteBatchBuilder, table: MvccStateTable, applied: AppliedCleaning[]): void {
    const watermark = this.windows.get(table.schema.tableId)?.gcWatermark ?? 0n;
    let last: Cleaning | undefined;
    for (const cleaning of table.cleanings) {
      if (cleaning.epoch > watermark) break;
      last = cleaning;
    }
    if (last === undefined || last.epoch <= table.cleaningsScheduled) return;
    const tableId = table.schema.tableId;
    batch.deleteRange(table.prefix, Buffer.concat([table.prefix, Buffer.from(last.end, 'latin1')]));
    batch.deleteRange(cleaningKey(tableId, 0n), cleaningKey(tableId, last.epoch + 1n));
    applied.push({ table, through: last.epoch });
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

  /** The history a table keeps back from each commit: its own retention (or the default), or a longer `retentionMs` hold. */
  private retentionOf(record: TableRecord, held: HeldHistory | undefined): number {
    const own = record.retentionMs ?? this.options.retentionMs;
    return held?.retentionMs !== undefined && held.retentionMs > own ? held.retentionMs : own;
  }

  holdHistory(holder: string, tableId: number, hold: HistoryHold | undefined): void {
    let holds = this.holds.get(tableId);
    if (hold === undefined) {
      if (holds === undefined || !holds.delete(holder)) return;
    } else {
      if (holds === undefined) this.holds.set(tableId, (holds = new Map()));
      holds.set(holder, hold);
    }
    if (holds.size === 0) {
      this.holds.delete(tableId);
      this.heldSummaries.delete(tableId);
    } else {
      this.heldSummaries.set(tableId, heldHistory(holds.values()));
    }
  }

  readableWindow(tableId: number): ReadableWindow {
    const record = this.windows.get(tableId);
    if (record === undefined || record.createdEpoch === null || record.createdEpoch > this.committed) return { oldest: this.committed, latest: this.committed };
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
    const record = this.windows.get(tableId);
    if (record === undefined || record.createdEpoch === null || record.createdEpoch > this.committed) return;
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

  /**
   * The store's memory by component: the row caches (charged to --memory-limit), the packed write
   * batches (sealed epochs in flight and the spare buffers kept for the next seals: Buffers outside
   * the V8 heap), then the backend's own (RocksDB's block cache, memtables, table readers).
   */
  memoryUsage(): MemoryPart[] {
    let batchBytes = 0;
    for (const sealed of this.sealed) batchBytes += sealed.batch.writer.buffer.length;
    for (const spare of this.sparebatches) batchBytes += spare.writer.buffer.length;
    batchBytes += this.batch.writer.buffer.length;
    return [
      { component: 'row_cache', bytes: this.budget.usedBytes, limitBytes: this.budget.limitBytes },
      { component: 'write_batches', bytes: batchBytes, limitBytes: null },
      ...this.backend.memoryUsage(),
    ];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Sealed epochs were acknowledged to nobody yet: their writes finish (or fail) before the close.
    await this.settled();
    for (const participant of [...this.participants]) await participant.close();
    this.participants.clear();
    for (const table of this.tables.values()) table.cache.dispose();
    this.tables.clear();
    await this.backend.close();
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.failure !== undefined) {
      const cause = this.failure;
      const code = cause instanceof SqlError ? cause.code : SqlState.ioError;
      throw new SqlError(code, `the state store failed an earlier commit and takes no more: ${cause instanceof Error ? cause.message : String(cause)}`, {
        hint: 'Restart oxbow: it recovers from the last durable epoch.',
        cause,
      });
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new SqlError(SqlState.objectNotInPrerequisiteState, 'the state store is closed');
  }
}

/** A table's holds summed up: the longest `retentionMs` and the lowest `fromEpoch`, each if any. */
interface HeldHistory {
  readonly retentionMs: number | undefined;
  readonly fromEpoch: Epoch | undefined;
}

function heldHistory(holds: Iterable<HistoryHold>): HeldHistory {
  let retentionMs: number | undefined;
  let fromEpoch: Epoch | undefined;
  for (const hold of holds) {
    if ('fromEpoch' in hold) {
      if (fromEpoch === undefined || hold.fromEpoch < fromEpoch) fromEpoch = hold.fromEpoch;
    } else if (retentionMs === undefined || hold.retentionMs > retentionMs) {
      retentionMs = hold.retentionMs;
    }
  }
  return { retentionMs, fromEpoch };
}

/**
 * The GC watermark after committing `epoch`, the one place it is computed: `retentionMs` (the
 * table's own or a longer hold's) of epoch time back, in steps of at least WATERMARK_STEP (so a
 * burst of small commits does not rewrite every table's record each time), never above
 * `fromEpoch` (the lowest epoch a hold keeps) and never moving back.
 */
function nextWatermark(current: Epoch, epoch: Epoch, retentionMs: number, fromEpoch: Epoch | undefined): Epoch {
  let watermark = advanceWatermark(current, epoch, retentionMs);
  if (watermark - current < WATERMARK_STEP) watermark = current;
  if (fromEpoch !== undefined && watermark > fromEpoch) watermark = fromEpoch > current ? fromEpoch : current;
  return watermark;
}
