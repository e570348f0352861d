// Runs the connectors of every connector relation in the catalog and commits what they read.
//
// Each barrier interval (--barrier-interval-ms) the manager takes the engine's write lock and, for
// every source with new messages, writes the decoded changes into the relation's state table
// (recording them for the materialized views that read it), puts the source's next offsets into
// the store's metadata (`source-offsets/<relation id>`) and commits the epoch: data, view changes
// and offsets in one atomic write. After a crash a source resumes from the offsets of the last
// committed epoch, and messages below them are dropped on arrival, so each message is reflected
// exactly once. A failed commit aborts the epoch and restarts the sources from their committed
// offsets.
//
// Sources start when their relation appears in the catalog (checked at every tick, so DDL needs
// no hook) and stop when it is dropped. Decoding runs as batches arrive, outside the lock;
// a source holding more than MAX_PENDING_ROWS undecided rows makes its connector wait
// (backpressure) until the next barrier, and a replayed source whose units the workers of a keyed
// fragment generate waits while they hold more than their credit (the range readers' `held`).

import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { StateTable } from '../../storage/state-table.js';
import type { ConnectorHost } from './connector-host.js';
import { MessageDecoder, type DecodedChanges } from './message-decoder.js';
import { sourceLayout, type SourceLayout } from './source-layout.js';
import type { PartitionOffsets, RawMessageBatch, SourceReader, StartupResolver } from './source.js';
import type { SourceStatus } from './source-status.js';
import { kafkaOptions } from './kafka/kafka-options.js';
import { KafkaWorkerReader, type DecodedBatch, type DecodedBatchListener } from './kafka/kafka-worker-reader.js';
import { GeneratorReader, isGeneratorConnector } from './generators/generator-reader.js';
import { indexEntry, indexStateTable, secondaryIndexes } from '../catalog/secondary-index.js';
import { FirstOffsets, isReplayed, positionTable, replayProducer, writePositions } from './source-replay.js';
import type { PackedPartitionRows, SplitRange } from '../stream/stream-context.js';
import { unpackRows } from './kafka/decoded-batch.js';
import { copyRaw, unpackRaw } from './kafka/raw-batch.js';
import type { SplitProducer } from './generators/split-producer.js';
import { isKafkaReplayed, kafkaRowId, replayLimits } from './kafka/kafka-replay.js';
import { isPostgresCdc } from './postgres-cdc/cdc-options.js';
import { CHANGE_TRUNCATE, PostgresCdcReader, UNCHANGED_TOAST } from './postgres-cdc/cdc-reader.js';

const MAX_PENDING_ROWS = 200_000;
/**
 * A source's rows go into the open epoch and through the views in chunks of about this many as
 * they arrive, not all at the barrier: the epoch's intermediate rows die young and the barrier
 * only seals (executor/stream/DESIGN.md, "Chunks within an epoch"). An engine's `sourceChunkRows`
 * setting overrides it (0: everything at the barrier); tests set `rows`.
 */
export const sourceChunks = { rows: 4096 };

/** Rows per chunk for an engine: its `sourceChunkRows` setting, else `sourceChunks.rows`. */
export function chunkRowsOf(host: Pick<ConnectorHost, 'settings'>): number {
  return host.settings.tuning?.sourceChunkRows ?? sourceChunks.rows;
}
export const OFFSETS_META_PREFIX = 'source-offsets/';

function encodeOffsets(offsets: ReadonlyMap<number, bigint>): Uint8Array {
  const object: Record<string, string> = {};
  for (const [partition, offset] of offsets) object[String(partition)] = String(offset);
  return new TextEncoder().encode(JSON.stringify(object));
}

export function decodeOffsets(bytes: Uint8Array | undefined): Map<number, bigint> | undefined {
  if (bytes === undefined) return undefined;
  const object = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, string>;
  return new Map(Object.entries(object).map(([partition, offset]) => [Number(partition), BigInt(offset)]));
}

/** One running source: its reader, the decoded changes not yet committed, its offsets. */
class RunningSource implements DecodedBatchListener {
  readonly layout: SourceLayout;
  /** Undefined for a generator connector (it produces rows, not messages). */
  readonly decoder: MessageDecoder | undefined;
  pending: DecodedChanges = { rows: [], kinds: [] };
  /**
   * Units of a replayed generator source read without their rows (`advanced`: only source
   * fragments read it, their workers generate the rows), per split in order, and how many.
   */
  private pendingRanges: SplitRange[] = [];
  pendingUnits = 0;
  /**
   * A replayed Kafka source's decoded batches kept packed (only Kafka source fragments read it:
   * their workers unpack, transform and store the rows), in arrival order, and their rows.
   */
  private pendingPacked: PackedPartitionRows[] = [];
  private pendingPackedRows = 0;
  /** The producer that generates pending ranges here when some dataflow needs their rows after all. */
  private producer: SplitProducer | undefined;
  /** Next offset per partition including pending messages. */
  readonly next = new Map<number, bigint>();
  /** Next offset per partition as of the last committed epoch. */
  committed = new Map<number, bigint>();
  /** Offsets changed since the last commit (new messages, or the first start's resolved offsets). */
  dirty = false;
  /** Rows written into the open epoch by chunks since the last barrier, and their next offsets. */
  unsealed = 0;
  private written: Map<number, bigint> | undefined;
  private waiters: (() => void)[] = [];
  readonly reader: SourceReader & StartupResolver & { committed?(offsets: ReadonlyMap<number, bigint>, epoch: Epoch): void; dropped?(): Promise<void> };
  /** The relation's rows, or (a replayed source) its position per split (source-replay.ts). */
  table: StateTable;
  /** Stores only its positions: rows go to the views that read it, nowhere else. */
  readonly replayed: boolean;
  /** A replayed source's positions as last written (a split that did not move is not written again). */
  private committedPositions = new Map<number, bigint>();
  /** A replayed Kafka source's first offset per partition (where a replay of it starts). */
  private readonly firstOffsets: FirstOffsets | undefined;
  stopped = false;

  constructor(
    readonly relation: RelationDef,
    private readonly manager: SourceManager,
  ) {
    this.layout = sourceLayout(relation);
    if (isGeneratorConnector(relation)) {
      this.decoder = undefined;
      this.reader = new GeneratorReader(relation, () => manager.core.rowIds.next());
    } else if (isPostgresCdc(relation)) {
      // Upserts, deletes and truncates by primary key from logical replication (postgres-cdc/).
      this.decoder = undefined;
      this.reader = new PostgresCdcReader(relation, () => manager.core.remoteCheckpointEpoch?.());
    } else {
      const options = kafkaOptions(relation.options ?? {});
      // A replayed Kafka source's row ids come from partition and offset (kafka/kafka-replay.ts).
      this.decoder = new MessageDecoder(this.layout, options.maxMessageBytes, isKafkaReplayed(relation) ? kafkaRowId : () => manager.core.rowIds.next());
      // Fetch and decoding run in a worker thread (kafka/kafka-worker.ts); decoded() gets the rows.
      this.reader = new KafkaWorkerReader(relation, options, `${relation.schema}.${relation.name}`, () => manager.core.rowIds.next(), {
        fastJson: manager.core.settings.tuning?.kafkaFastJson !== false,
        fragmentDecode: manager.core.settings.tuning?.kafkaFragmentDecode !== false,
      });
    }
    this.replayed = isReplayed(relation);
    this.table = positionTable(manager.core.store, relation);
    this.firstOffsets = isKafkaReplayed(relation) ? new FirstOffsets(this.table, relation) : undefined;
  }

  get topic(): string {
    const options = this.relation.options;
    return options?.['topic'] ?? (isPostgresCdc(this.relation) ? `${options?.['schema.name'] ?? 'public'}.${options?.['table.name'] ?? ''}` : '');
  }

  async start(): Promise<void> {
    this.manager.status.named(this.relation.id, `${this.relation.schema}.${this.relation.name}`);
    const stored = decodeOffsets(this.manager.core.store.getMeta(OFFSETS_META_PREFIX + this.relation.id));
    let resume: Map<number, bigint>;
    if (stored !== undefined) resume = stored;
    else {
      // First start: resolve the startup mode once and commit it, so a restart before any message
      // arrives still starts where the first start did.
      for (;;) {
        if (this.stopped) return;
        try {
          resume = await this.reader.startOffsets();
          break;
        } catch (error) {
          this.trouble(`Kafka topic "${this.topic}": ${error instanceof Error ? error.message : String(error)}`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
      this.dirty = true;
    }
    if (this.stopped) return;
    this.firstOffsets?.started(resume, stored !== undefined);
    for (const [partition, offset] of resume) {
      this.next.set(partition, offset);
      if (stored !== undefined) this.committed.set(partition, offset);
      this.manager.status.partition(this.relation.id, this.topic, partition).committedOffset = stored !== undefined ? offset : -1n;
    }
    await this.reader.start(resume as PartitionOffsets, this);
  }

  batch(batch: RawMessageBatch): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const partition = batch.partition;
    const status = this.manager.status.partition(this.relation.id, this.topic, partition);
    if (batch.highWatermark > status.highWatermark) status.highWatermark = batch.highWatermark;
    const offsets = batch.offsets;
    const expected = this.next.get(partition);
    let from = 0;
    if (expected !== undefined) while (from < offsets.length && offsets[from]! < expected) from++;
    if (from === offsets.length) return Promise.resolve();
    this.firstOffsets?.saw(partition, offsets[from]!);
    const fresh: RawMessageBatch =
      from === 0
        ? batch
        : { ...batch, offsets: offsets.slice(from), timestamps: batch.timestamps.slice(from), keys: batch.keys.slice(from), values: batch.values.slice(from) };
    const id = this.relation.id;
    this.decoder!.decode(fresh, this.pending, (p, offset, error, payload) => this.manager.status.reject(id, p, offset, error, payload));
    status.messages += fresh.offsets.length;
    this.next.set(partition, fresh.offsets[fresh.offsets.length - 1]! + 1n);
    this.dirty = true;
    return this.backpressure();
  }

  /** Rows a Kafka worker decoded (kafka/kafka-worker-reader.ts, row ids set) for messages [firstOffset, next). */
  decoded(batch: DecodedBatch): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const { partition, rows, kinds } = batch;
    // Messages undecoded that some dataflow now needs as rows here: decoded here.
    if (batch.raw !== undefined && !this.wantsPacked()) return this.batch(unpackRaw(partition, batch.raw, batch.highWatermark));
    const id = this.relation.id;
    const status = this.manager.status.partition(id, this.topic, partition);
    if (batch.highWatermark > status.highWatermark) status.highWatermark = batch.highWatermark;
    for (const { offset, error, payload } of batch.rejects) this.manager.status.reject(id, partition, offset, error, payload);
    this.firstOffsets?.saw(partition, batch.firstOffset);
    if (batch.packed !== undefined && batch.packed.count > 0) {
      this.pendingPacked.push({ partition, count: batch.packed.count, rows: batch.packed.rows });
      this.pendingPackedRows += batch.packed.count;
    }
    if (batch.raw !== undefined && batch.messages > 0) {
      this.pendingPacked.push({ partition, count: batch.messages, raw: batch.raw });
      this.pendingPackedRows += batch.messages;
    }
    if (batch.range === true && batch.next > batch.firstOffset) {
      // Offsets, for the back-pressure: the messages are counted when the owners answer (source-fragment.ts, `onFetched`).
      const offsets = Number(batch.next - batch.firstOffset);
      this.pendingPacked.push({ partition, count: offsets, range: { from: batch.firstOffset, to: batch.next } });
      this.pendingPackedRows += offsets;
    }
    const { rows: pendingRows, kinds: pendingKinds } = this.pending;
    for (let i = 0; i < rows.length; i++) {
      pendingRows.push(rows[i]!);
      pendingKinds.push(kinds[i]!);
    }
    status.messages += batch.messages;
    this.next.set(partition, batch.next);
    this.dirty = true;
    return this.backpressure();
  }

  /** Rows from a generator connector, already in the relation's layout, up to offset `next` of `partition`. */
  generated(partition: number, rows: Row[], next: bigint): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const pending = this.pending;
    if (this.replayed) {
      // A replayed source's write reads its rows alone (every one an insert: no kinds), and the
      // reader's array is this chunk's own: taken as it is when nothing is pending, not copied.
      if (pending.rows.length === 0) pending.rows = rows;
      else for (let i = 0; i < rows.length; i++) pending.rows.push(rows[i]!);
    } else {
      const { rows: pendingRows, kinds } = pending;
      for (let i = 0; i < rows.length; i++) {
        pendingRows.push(rows[i]!);
        kinds.push(1);
      }
    }
    this.manager.status.partition(this.relation.id, this.topic, partition).messages += rows.length;
    this.next.set(partition, next);
    this.dirty = true;
    return this.backpressure();
  }

  /** Whether the generator must make rows: not while only source fragments read this replayed source. */
  rowsWanted(): boolean {
    return !this.replayed || this.manager.core.streams.rangeReaders(this.relation.id) === undefined;
  }

  /** Whether a replayed Kafka source's decoded batches stay packed: only Kafka source fragments read it (their workers unpack them). */
  wantsPacked(): boolean {
    if (!this.replayed) return false;
    const readers = this.manager.core.streams.rangeReaders(this.relation.id);
    return readers !== undefined && readers.every((reader) => reader.takeRows !== undefined);
  }

  /**
   * Whether a replayed Kafka source is read as offset ranges its fragments' owners fetch
   * themselves (kafka/kafka-ranges.ts): only Kafka source fragments read it and each of them has
   * shares on other nodes to give ranges to (executor/cluster/README.md, "Kafka partitions fetched
   * by the nodes").
   */
  wantsRanges(): boolean {
    if (!this.replayed) return false;
    const readers = this.manager.core.streams.rangeReaders(this.relation.id);
    return readers !== undefined && readers.length > 0 && readers.every((reader) => reader.takeRows !== undefined && reader.takesFetchRanges?.() === true);
  }

  /**
   * Ranges read and not written that no reader takes now (a dataflow needs the source's rows on
   * this thread, or a fragment lost its nodes): dropped, and their partitions read again from the
   * first such range by the Kafka worker.
   */
  private unreadRanges(): void {
    if (!this.pendingPacked.some((batch) => batch.range !== undefined)) return;
    const readers = this.manager.core.streams.rangeReaders(this.relation.id);
    if (readers !== undefined && readers.every((reader) => reader.takeRows !== undefined && reader.takesFetchRanges?.() === true)) return;
    const back = new Map<number, bigint>();
    const kept: PackedPartitionRows[] = [];
    let rows = 0;
    for (const batch of this.pendingPacked) {
      if (batch.range === undefined) {
        kept.push(batch);
        rows += batch.count;
      } else if (!back.has(batch.partition)) back.set(batch.partition, batch.range.from);
    }
    this.pendingPacked = kept;
    this.pendingPackedRows = rows;
    // Ranges are not counted as messages when handed out (their owners count what they fetch): nothing to take back.
    for (const [partition, from] of back) {
      this.next.set(partition, from);
      (this.reader as { rewind?(partition: number, offset: bigint): void }).rewind?.(partition, from);
    }
  }

  /** Units [from, next) of a generator's split, without rows (rowsWanted() was false). */
  advanced(partition: number, from: number, next: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const last = this.pendingRanges[this.pendingRanges.length - 1];
    if (last !== undefined && last.split === partition && last.to === from) this.pendingRanges[this.pendingRanges.length - 1] = { split: partition, from: last.from, to: next };
    else this.pendingRanges.push({ split: partition, from, to: next });
    this.pendingUnits += next - from;
    this.manager.status.partition(this.relation.id, this.topic, partition).messages += next - from;
    this.next.set(partition, BigInt(next));
    this.dirty = true;
    const full = this.backpressure();
    // Workers that make the rows of the units handed to them bound the reader as rows do here.
    let held: Promise<void> | undefined;
    for (const reader of this.manager.core.streams.rangeReaders(this.relation.id) ?? []) held ??= reader.held?.();
    return held === undefined ? full : Promise.all([full, held]).then(() => undefined);
  }

  /** Rows or units read and not yet written into the open epoch. */
  get pendingCount(): number {
    return this.pending.rows.length + this.pendingUnits + this.pendingPackedRows;
  }

  /** Changes from a CDC reader in the relation's layout (kinds: 1 upsert, -1 delete, CHANGE_TRUNCATE, CHANGE_UPSERT_MERGE) up to offset `next` of partition 0. */
  changes(rows: Row[], kinds: number[], next: bigint): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const { rows: pendingRows, kinds: pendingKinds } = this.pending;
    for (let i = 0; i < rows.length; i++) {
      pendingRows.push(rows[i]!);
      pendingKinds.push(kinds[i]!);
    }
    this.manager.status.partition(this.relation.id, this.topic, 0).messages += rows.length;
    this.next.set(0, next);
    this.dirty = true;
    return this.backpressure();
  }

  /**
   * Full: the connector waits, and the barrier comes now rather than at the next interval (a
   * source faster than one barrier interval's worth of rows does not idle until the timer). The
   * wait ends when apply() takes the rows; the store's bound on epochs in flight (whenWritable)
   * holds back the next barrier if the writes fall behind.
   */
  private backpressure(): Promise<void> {
    const pending = this.pendingCount;
    if (pending + this.unsealed < MAX_PENDING_ROWS) {
      const chunkRows = chunkRowsOf(this.manager.core);
      if (chunkRows > 0 && pending >= chunkRows) this.manager.requestChunk();
      return Promise.resolve();
    }
    this.manager.requestBarrier();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  trouble(message: string): void {
    if (this.stopped) return;
    if (this.manager.status.troubled(this.relation.id, message)) {
      process.stderr.write(`oxbow: source ${this.relation.schema}.${this.relation.name}: ${message}\n`);
    }
  }

  recovered(): void {
    if (this.manager.status.troubleOf(this.relation.id) !== undefined) {
      process.stderr.write(`oxbow: source ${this.relation.schema}.${this.relation.name}: reading again\n`);
    }
    this.manager.status.recovered(this.relation.id);
  }

  highWatermark(partition: number, offset: bigint): void {
    if (this.stopped) return;
    const status = this.manager.status.partition(this.relation.id, this.topic, partition);
    status.highWatermark = offset;
  }

  /**
   * At the barrier (inside the write lock): writes what is still pending into the open epoch;
   * returns the next offsets as of this epoch, for committedNow() once it is durable, and releases
   * the backpressure.
   */
  apply(): Map<number, bigint> {
    this.write();
    const applied = this.written!;
    this.written = undefined;
    this.unsealed = 0;
    this.dirty = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
    return applied;
  }

  /**
   * Writes the pending changes into the open epoch (inside the write lock) with the offsets they
   * reach, and pushes them through the views every `chunkRowsOf` rows; a chunk between barriers, or
   * the rest at the barrier.
   */
  write(): void {
    const { rows, kinds } = this.pending;
    // Rows read while the epoch is written (off the main thread) go into the next epoch.
    this.pending = { rows: [], kinds: [] };
    if (this.replayed) this.unreadRanges();
    const applied = new Map(this.next);
    const streams = this.manager.core.streams;
    const id = this.relation.id;
    const captured = streams.captures(id);
    const chunkRows = chunkRowsOf(this.manager.core);
    const chunk = chunkRows > 0 ? chunkRows : rows.length;
    if (this.replayed) {
      // Append-only rows with their unit numbers as row ids: to the views, and the positions to the
      // source's state table (a replay of everything below them is these rows again).
      if (captured) {
        const owned = isGeneratorConnector(this.relation);
        // A chunk at a time: each full chunk goes through the views as soon as it is recorded.
        for (let from = 0; from < rows.length; from += chunk) {
          const to = Math.min(rows.length, from + chunk);
          // A generator's rows are new arrays nothing else keeps: a view's scan may narrow them in place.
          streams.recordInserts(id, rows, from, to, owned);
          if (to - from === chunk) streams.push();
        }
        streams.push();
      }
      const units = this.writeRanges(captured, chunk) + this.writePacked(captured);
      const moved = new Map<number, bigint>();
      for (const [split, position] of applied) if (this.committedPositions.get(split) !== position) moved.set(split, position);
      writePositions(this.table, this.relation, moved);
      this.firstOffsets?.write(applied);
      this.committedPositions = applied;
      this.writtenNow(id, rows.length + units, applied);
      return;
    }
    const appendOnly = this.layout.rowIdPosition !== undefined;
    const keyIndexes = this.layout.primaryKey;
    const key: Row = new Array(keyIndexes.length);
    // Secondary indexes of a connector table (executor/catalog/secondary-index.ts) follow its rows.
    const relation = this.relation;
    const indexes = relation.kind === 'table' ? secondaryIndexes(this.manager.core.catalog.snapshot, id).map((index) => ({ index, table: indexStateTable(this.manager.core.store, relation, index) })) : [];
    for (let i = 0; i < rows.length; i++) {
      let row = rows[i]!;
      if (kinds[i]! >= CHANGE_TRUNCATE) {
        if (kinds[i] === CHANGE_TRUNCATE) {
          for (const old of [...this.table.scan()]) {
            if (captured) streams.record(id, old, -1);
            for (const { index, table } of indexes) table.delete(indexEntry(relation, index, old));
            this.table.delete(old);
          }
          continue;
        }
        // An update that left TOASTed values unchanged takes them from the stored row.
        for (let k = 0; k < keyIndexes.length; k++) key[k] = row[keyIndexes[k]!]!;
        const stored = this.table.get(key);
        row = row.map((value, column) => (value === (UNCHANGED_TOAST as unknown) ? (stored?.[column] ?? null) : value));
      }
      if (kinds[i]! > 0) {
        if (captured || indexes.length > 0) {
          let old: Row | undefined;
          if (!appendOnly) {
            for (let k = 0; k < keyIndexes.length; k++) key[k] = row[keyIndexes[k]!]!;
            old = this.table.get(key);
            if (old !== undefined && captured) streams.record(id, old, -1);
          }
          if (captured) streams.record(id, row, 1);
          for (const { index, table } of indexes) {
            if (old !== undefined) table.delete(indexEntry(relation, index, old));
            table.insert(indexEntry(relation, index, row));
          }
        }
        this.table.insert(row);
      } else {
        for (let k = 0; k < keyIndexes.length; k++) key[k] = row[keyIndexes[k]!]!;
        const old = this.table.get(key);
        if (old !== undefined) {
          if (captured) streams.record(id, old, -1);
          for (const { index, table } of indexes) table.delete(indexEntry(relation, index, old));
          this.table.delete(old);
        }
      }
      if (captured && (i + 1) % chunk === 0) streams.push();
    }
    if (captured) streams.push();
    this.writtenNow(id, rows.length, applied);
  }

  /**
   * The units read without rows: to the source fragments that read this source, whose workers
   * generate their rows into the same epoch; or, when some dataflow now needs the rows here (a
   * view created meanwhile), generated and pushed here. Returns the units.
   */
  private writeRanges(captured: boolean, chunk: number): number {
    const ranges = this.pendingRanges;
    const units = this.pendingUnits;
    if (ranges.length === 0) return 0;
    this.pendingRanges = [];
    this.pendingUnits = 0;
    const streams = this.manager.core.streams;
    const id = this.relation.id;
    const readers = streams.rangeReaders(id);
    if (readers !== undefined) {
      for (const reader of readers) reader.take(ranges, id);
      streams.rangesTaken(id);
      return units;
    }
    if (!captured) return units;
    const producer = (this.producer ??= replayProducer(this.relation));
    for (const { split, from, to } of ranges) {
      let offset = from;
      while (offset < to) {
        const rows: Row[] = [];
        offset = producer.produce(split, offset, to, rows, Math.max(chunk, 1024));
        for (const row of rows) streams.record(id, row, 1);
        streams.push();
      }
    }
    return units;
  }

  /**
   * A replayed Kafka source's packed batches: to the Kafka source fragments that read it (each
   * partition's batch to its worker, buffer transferred; a second fragment gets copies), or, when
   * some dataflow now needs the rows here, unpacked and pushed here. Returns the rows.
   */
  private writePacked(captured: boolean): number {
    const batches = this.pendingPacked;
    const count = this.pendingPackedRows;
    if (batches.length === 0) return 0;
    this.pendingPacked = [];
    this.pendingPackedRows = 0;
    const streams = this.manager.core.streams;
    const id = this.relation.id;
    const readers = streams.rangeReaders(id);
    if (readers !== undefined && readers.every((reader) => reader.takeRows !== undefined)) {
      readers.forEach((reader, index) => reader.takeRows!(index === readers.length - 1 ? batches : batches.map((batch) => ({ ...batch, rows: batch.rows?.slice(), raw: batch.raw === undefined ? undefined : copyRaw(batch.raw) })), id));
      streams.rangesTaken(id);
      return count;
    }
    if (!captured) return count;
    const reject = (partition: number, offset: bigint, error: string, payload: Buffer | null): void => this.manager.status.reject(id, partition, offset, error, payload);
    for (const batch of batches) {
      if (batch.raw !== undefined) {
        const decoded: DecodedChanges = { rows: [], kinds: [] };
        this.decoder!.decode(unpackRaw(batch.partition, batch.raw, 0n), decoded, reject);
        for (const row of decoded.rows) streams.record(id, row, 1);
      } else {
        for (const row of unpackRows({ count: batch.count, rows: batch.rows!, kinds: new Int8Array(0) })) streams.record(id, row, 1);
      }
      streams.push();
    }
    return count;
  }

  /** After write(): the offsets into the epoch's metadata (with the rows they cover), the rows counted. */
  private writtenNow(id: number, rows: number, applied: Map<number, bigint>): void {
    this.manager.core.store.putMeta(OFFSETS_META_PREFIX + id, encodeOffsets(applied));
    const sourceRows = this.manager.core.metrics.sourceRows;
    sourceRows.set(id, (sourceRows.get(id) ?? 0) + rows);
    this.written = applied;
    this.unsealed += rows;
  }

  /** The epoch with the applied changes committed. */
  committedNow(applied: Map<number, bigint>, epoch: Epoch): void {
    this.committed = applied;
    this.reader.committed?.(applied, epoch);
    for (const [partition, offset] of this.committed) this.manager.status.partition(this.relation.id, this.topic, partition).committedOffset = offset;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
    await this.reader.stop();
  }
}

export class SourceManager {
  private readonly running = new Map<number, RunningSource>();
  /** Relations whose connector could not be built. */
  private readonly broken = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /** A source filled up during the running barrier: the next one starts as soon as it ends. */
  private again = false;
  private closed = false;
  /** A chunk write is queued on the write lock (requestChunk). */
  private chunkQueued = false;

  constructor(
    readonly core: ConnectorHost,
    readonly status: SourceStatus,
    private readonly barrierIntervalMs: number,
  ) {
    // A read of a Kafka source that stores no rows holds its replay within --memory-limit.
    replayLimits.bytes = core.settings.memoryLimitBytes;
  }

  start(): void {
    // Every other writer (DML, DDL, a view's backfill, a checkpoint) first seals what the chunks
    // wrote into the open epoch, so its abort cannot drop source rows and its snapshot holds them.
    this.core.writeLock.drain = () => this.drain();
    this.schedule(this.barrierIntervalMs);
  }

  /**
   * A source holds a chunk's worth of rows: write every source's pending rows into the open epoch
   * and through the views now, under the write lock, without sealing (the barrier seals them).
   */
  requestChunk(): void {
    if (this.chunkQueued || this.closed) return;
    this.chunkQueued = true;
    void this.core.writeLock.runPipelined(() => this.writeChunks());
  }

  private writeChunks(): Promise<void> | void {
    this.chunkQueued = false;
    if (this.closed) return;
    // Synchronous unless a cut waits for a safe point: then the rows wait for the gap first.
    if (this.core.streams.safePointWanted()) return this.gapForSafePoint().then(() => this.writeReady());
    this.writeReady();
  }

  private writeReady(): void {
    if (this.closed) return;
    const ready = [...this.running.values()].filter((source) => source.pendingCount > 0 && this.core.catalog.snapshot.relationById(source.relation.id) !== undefined);
    try {
      for (const source of ready) source.write();
    } catch (error) {
      // The open epoch held every source's unsealed chunks: all of them restart from their committed offsets.
      this.core.store.abort();
      this.failed([...this.running.values()].filter((source) => source.unsealed > 0 || ready.includes(source)), error);
    }
  }

  /**
   * While a keyed fragment's cut waits for a safe point (executor/cluster/README.md, "Keyed
   * shares"), the next epoch's rows wait until every sealed epoch is durable: pipelined barriers
   * (a Kafka topic read behind) would otherwise route each epoch's first rows before the last one
   * is durable, and the fragment would never be at an epoch boundary with nothing in flight. Only
   * then; a failed write is the barrier's to report.
   */
  private async gapForSafePoint(): Promise<void> {
    if (this.core.streams.safePointWanted()) await this.core.store.settled().catch(() => undefined);
  }

  /** Inside the write lock, for another writer: seals the chunks written since the last barrier. */
  private async drain(): Promise<void> {
    if (![...this.running.values()].some((source) => source.unsealed > 0)) return;
    const sealed = await this.barrier();
    if (sealed !== undefined) void sealed.durable.then(() => this.committed(sealed.sources, sealed.offsets, sealed.epoch), (error: unknown) => this.failed(sealed.sources, error));
  }

  /** A barrier now (a source is full), or right after the running one. */
  requestBarrier(): void {
    if (this.closed) return;
    if (this.ticking !== undefined) this.again = true;
    else this.runTick();
  }

  private schedule(delayMs: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.runTick(), delayMs);
    this.timer.unref();
  }

  /**
   * One barrier, then the next one barrier-interval after this one started (at once when this one
   * ran longer, or a source filled up meanwhile): a long barrier no longer skips a beat.
   */
  private runTick(): void {
    if (this.ticking !== undefined || this.closed) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const started = performance.now();
    this.ticking = this.tick().finally(() => {
      this.ticking = undefined;
      if (this.closed) return;
      const again = this.again;
      this.again = false;
      this.schedule(again ? 0 : Math.max(0, this.barrierIntervalMs - (performance.now() - started)));
    });
  }

  /** One barrier: start/stop sources to match the catalog, commit what they read. */
  async tick(): Promise<void> {
    if (this.closed) return;
    this.reconcile();
    if (this.running.size === 0) return;
    // The epoch's write goes on after the lock is released (the next barrier overlaps it).
    const sealed = await this.core.writeLock.runPipelined(() => this.barrier());
    if (sealed !== undefined) void sealed.durable.then(() => this.committed(sealed.sources, sealed.offsets, sealed.epoch), (error: unknown) => this.failed(sealed.sources, error));
  }

  private committed(sources: RunningSource[], offsets: Map<number, bigint>[], epoch: Epoch): void {
    for (let index = 0; index < sources.length; index++) sources[index]!.committedNow(offsets[index]!, epoch);
  }

  private failed(sources: RunningSource[], error: unknown): void {
    const message = `committing source data failed: ${error instanceof Error ? error.message : String(error)}; restarting from the committed offsets`;
    process.stderr.write(`oxbow: ${message}\n`);
    for (const source of sources) {
      if (this.running.get(source.relation.id) !== source) continue;
      // A row of oxbow_catalog.source_errors while it lasts (cleared when the source reads again).
      this.status.troubled(source.relation.id, message);
      this.running.delete(source.relation.id);
      void source.stop();
    }
  }

  private reconcile(): void {
    const wanted = new Map<number, RelationDef>();
    for (const relation of this.core.catalog.snapshot.relations()) {
      if ((relation.kind === 'source' || relation.kind === 'table') && relation.options?.['connector'] !== undefined) {
        // A shared postgres-cdc source only holds its tables' connection options: no reader.
        if (relation.kind === 'source' && isPostgresCdc(relation)) continue;
        wanted.set(relation.id, relation);
      }
    }
    for (const [id, source] of this.running) {
      if (!wanted.has(id)) {
        this.running.delete(id);
        void source.stop().then(() => source.reader.dropped?.());
        this.status.forget(id);
      }
    }
    for (const [id, relation] of wanted) {
      if (this.running.has(id) || this.broken.has(id)) continue;
      let source: RunningSource;
      try {
        source = new RunningSource(relation, this);
      } catch (error) {
        // A relation whose connector cannot even be built (options from an older version?) must
        // not stop the other sources: record it once and leave it.
        this.broken.add(id);
        const message = `cannot start: ${error instanceof Error ? error.message : String(error)}`;
        if (this.status.troubled(id, message)) process.stderr.write(`oxbow: source ${relation.schema}.${relation.name}: ${message}\n`);
        continue;
      }
      this.running.set(id, source);
      source.start().catch((error: unknown) => source.trouble(error instanceof Error ? error.message : String(error)));
    }
  }

  private async barrier(): Promise<{ sources: RunningSource[]; offsets: Map<number, bigint>[]; epoch: Epoch; durable: Promise<void> } | undefined> {
    let ready = [...this.running.values()].filter((source) => source.dirty && this.core.catalog.snapshot.relationById(source.relation.id) !== undefined);
    if (ready.length === 0) return undefined;
    // Rows not yet written wait for the last epoch's durability while a cut waits (chunks already written are in this epoch).
    if (ready.some((source) => source.pendingCount > 0) && this.core.streams.safePointWanted()) {
      await this.gapForSafePoint();
      ready = ready.filter((source) => this.running.get(source.relation.id) === source && this.core.catalog.snapshot.relationById(source.relation.id) !== undefined);
      if (ready.length === 0) return undefined;
    }
    try {
      const trace = this.core.settings.tuning?.sourceTrace === true;
      const started = performance.now();
      const rows = trace ? ready.reduce((total, source) => total + source.pending.rows.length + source.unsealed, 0) : 0;
      const offsets = ready.map((source) => source.apply());
      const applied = performance.now();
      if (trace) await this.core.store.whenWritable();
      const writable = performance.now();
      const { epoch, durable } = await this.core.seal();
      if (trace) {
        const sealed = performance.now();
        void durable.then(() => {
          const ms = (from: number, to: number): string => (to - from).toFixed(0);
          process.stderr.write(`oxbow source trace: rows=${rows} apply=${ms(started, applied)}ms wait-for-writes=${ms(applied, writable)}ms seal=${ms(writable, sealed)}ms durable-after=${ms(sealed, performance.now())}ms\n`);
        });
      }
      return { sources: ready, offsets, epoch, durable };
    } catch (error) {
      this.core.store.abort();
      this.failed(ready, error);
      return undefined;
    }
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.core.writeLock.drain !== undefined) this.core.writeLock.drain = undefined;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.running.values()].map((source) => source.stop()));
    this.running.clear();
  }
}
