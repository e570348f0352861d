// Delivers the committed changes of every sink's relation: to Kafka here, to the other targets
// (blackhole, PostgreSQL) through target-sink.ts.
//
// Each barrier interval, for each sink: the changes between the epoch it delivered last and the
// newest committed epoch (sink-changes.ts; on the first run, the relation's contents at that
// epoch) are encoded per FORMAT and sent in one Kafka transaction, each message carrying its epoch
// in the `oxbow.epoch` header; then the new progress is committed in the store's metadata
// (`sink-progress/<sink id>`). Only committed epochs are read, so nothing uncommitted ever leaves.
// After a crash delivery resumes from the committed progress: no committed change is lost. For a
// crash between the Kafka commit and the progress commit, a starting sink first reads the end of
// its topic (read_committed) for the highest `oxbow.epoch` and resumes after it: none twice.
//
// Formats: PLAIN writes inserted rows only (append-only, like RisingWave's force_append_only);
// UPSERT writes key -> row, a tombstone (null value) for a deleted key; DEBEZIUM writes
// {before, after, op} with op c / u / d (a delete and insert of one key in an epoch is an update).
// Keys are JSON objects of the `primary_key` option's columns, else the relation's primary key
// (sink-key.ts).
//
// A sink AS query reads its change log (sink-log.ts) instead of its relation's versions: the
// entries since the last delivery, those committed as progress trimmed in the progress's commit;
// it holds no history and reads nothing ahead at start (the log keeps what is not delivered).
//
// Idle sinks: the history a sink reads (the relation's MVCC versions) is kept for the time-travel
// retention only, counted back from the newest commit. A sink whose relation does not change (or
// a store that commits nothing at all) must not fall out of that window: while nothing is sealed
// beyond what it delivered, no later commit can get an epoch below the wall clock's (nextEpoch),
// so its progress moves up to the present (less a clock slack) without reading anything, and that
// progress is committed at least every quarter of the retention so a restart finds it too. At
// engine start, before anything commits, each sink reads what it has not delivered (catchUp), so
// a server down for longer than the retention loses nothing when its first commit moves the
// window. A sink that still finds its progress below the window sends the relation's contents
// again and says so in source_errors: no silent gap, no endless failure.
//
// Deadlines: every broker connection and request has the sink's `connect.timeout.ms` and
// `request.timeout.ms` (kafka-options.ts), and a delivery's transaction, first send to commit,
// `transaction.timeout.ms`. A round that fails or passes its deadline is a row in
// oxbow_catalog.sink_errors and is retried with backoff (200 ms doubling to 10 s) by a new
// producer: its InitProducerId fences the old one and settles the transaction the old one left
// (committed or aborted by the broker), and the topic's tail is read again, so a commit whose answer
// was lost is not sent twice.

import kafkajs from 'kafkajs';
import type { Producer } from 'kafkajs';
import type { RelationDef } from '../../sql/catalog.js';
import { epochFromMillis, epochToMillis, type Epoch } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { StateTable } from '../../storage/state-table.js';
import type { ConnectorHost } from './connector-host.js';
import { kafkaOptions, type KafkaOptions } from './kafka/kafka-options.js';
import { kafkaSocketFactory } from './dns-lookup.js';
import { changesBetween, deliverableEpoch, type EpochChanges } from './sink-changes.js';
import { JsonRowEncoder } from './json-row.js';
import { AvroRowEncoder } from './avro/avro-encoder.js';
import { registryOptions } from './schema-registry.js';
import { sinkKeyPositions } from './sink-key.js';
import { SinkLog } from './sink-log.js';
import { sinkStatusOf } from './sink-status.js';
import { sinkHolder, sinkTargetOf, TargetSink } from './target-sink.js';

const { Kafka, logLevel } = kafkajs;
export const SINK_PROGRESS_META_PREFIX = 'sink-progress/';
/** Messages per Kafka transaction at most; a bigger delivery is split (each part its own transaction). */
const MESSAGES_PER_TRANSACTION = 50_000;
/**
 * How far back from the end of each partition to look for the last delivered epoch first; a
 * partition whose window holds no delivery (only aborted messages and markers: a killed leader's
 * last transaction, up to MESSAGES_PER_TRANSACTION messages, or several) is read again eight times
 * further back, up to MAX_TAIL_OFFSETS, or its start.
 */
const TAIL_OFFSETS = 1000n;
const MAX_TAIL_OFFSETS = BigInt(16 * MESSAGES_PER_TRANSACTION);
const TAIL_READ_TIMEOUT_MS = 20_000;
/** How far the wall clock may step back without an idle sink's progress passing a later commit. */
const CLOCK_SLACK_MS = 1000;
const FIRST_RETRY_MS = 200;
const LAST_RETRY_MS = 10_000;

interface SinkMessage {
  key: string | null;
  value: string | Buffer | null;
  headers: { 'oxbow.epoch': string };
}

/**
 * Bytes of messages per produce request at most. A request's messages for a partition go as one
 * record batch, which the broker refuses above its message.max.bytes (1 MiB by default): a
 * transaction's messages are sent in pieces of about this size (a message bigger than it alone).
 * Strings count their UTF-16 units: at 4 bytes per character a piece stays under 1 MiB.
 */
const SEND_BYTES = 256 * 1024;

/** The pieces of `messages` of about SEND_BYTES each (keys, values and headers counted, plus a record's overhead), in order. */
export function sendPieces<M extends SinkMessage>(messages: readonly M[], bytes = SEND_BYTES): M[][] {
  const pieces: M[][] = [];
  let piece: M[] = [];
  let size = 0;
  for (const message of messages) {
    const own = 64 + (message.key?.length ?? 0) + (message.value?.length ?? 0) + message.headers['oxbow.epoch'].length;
    if (piece.length > 0 && size + own > bytes) {
      pieces.push(piece);
      piece = [];
      size = 0;
    }
    piece.push(message);
    size += own;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/**
 * The last epoch sealed: committedEpoch, or later while an asynchronous commit is in flight (on
 * stores that commit asynchronously and say so with `latestEpoch`).
 */
function lastSealedEpoch(store: ConnectorHost['store']): Epoch {
  const latest = (store as { latestEpoch?: Epoch }).latestEpoch;
  return latest !== undefined && latest > store.committedEpoch ? latest : store.committedEpoch;
}

class RunningSink {
  private producer: Producer | undefined;
  private readonly options: KafkaOptions;
  private readonly table: StateTable;
  /** A sink AS query's change log; undefined: the relation's versions are read. */
  private readonly log: SinkLog | undefined;
  private readonly value: JsonRowEncoder;
  /** ENCODE AVRO (FORMAT PLAIN): the Confluent-framed Avro values, schema registered before the first delivery. */
  private readonly avro: AvroRowEncoder | undefined;
  private readonly key: JsonRowEncoder;
  private readonly keyPositions: readonly number[];
  /** PLAIN messages carry the key only when primary_key names one. */
  private readonly plainKeyed: boolean;
  private delivered: Epoch | undefined;
  /** Changes read by catchUp() at engine start, up to epoch `to`, until they are delivered. */
  private held: { readonly to: Epoch; readonly changes: EpochChanges[] } | undefined;
  /** The progress last committed to the store's metadata (undefined: none yet). */
  private persisted: Epoch | undefined;
  /** Whether the topic's tail was checked for deliveries the progress does not know about. */
  private reconciled = false;
  busy = false;
  stopped = false;
  /** Failed rounds in a row, and when the next may start (backoff). */
  private failures = 0;
  private retryAt = 0;

  constructor(
    readonly sink: RelationDef,
    readonly from: RelationDef,
    private readonly core: ConnectorHost,
  ) {
    this.options = kafkaOptions(sink.options ?? {});
    this.table = core.store.table({
      tableId: from.id,
      columnTypes: from.columns.map((column) => column.type),
      primaryKey: from.primaryKey,
      ...(from.retentionMs === undefined ? {} : { retentionMs: from.retentionMs }),
    });
    this.log = from.stream?.changeLog === undefined ? undefined : new SinkLog(core.store, from);
    const visible = from.columns.flatMap((column, position) => (column.hidden ? [] : [position]));
    this.value = new JsonRowEncoder(from.columns, visible);
    const registry = sink.encode === 'avro' ? registryOptions(sink.options ?? {}, 'encode.') : undefined;
    this.avro = registry === undefined ? undefined : new AvroRowEncoder(from.name, from.columns, visible, registry, `${this.options.topic}-value`);
    this.keyPositions = sinkKeyPositions(sink.options, from.name, from.columns, from.primaryKey);
    this.key = new JsonRowEncoder(from.columns, this.keyPositions);
    this.plainKeyed = sink.options?.['primary_key'] !== undefined;
    const stored = core.store.getMeta(SINK_PROGRESS_META_PREFIX + sink.id);
    if (stored !== undefined) this.delivered = this.persisted = BigInt(new TextDecoder().decode(stored));
    this.hold();
  }

  /** Holds the relation's history from the progress on (StateStore.holdHistory): what is still to deliver stays readable. */
  private hold(): void {
    // The log keeps what is not delivered by itself.
    if (this.log !== undefined) return;
    const progress = this.persisted !== undefined && (this.delivered === undefined || this.persisted < this.delivered) ? this.persisted : this.delivered;
    if (progress !== undefined && !this.stopped) this.core.store.holdHistory(sinkHolder(this.sink.id), this.from.id, { fromEpoch: progress });
  }

  /** The relation's time-travel retention: how long the history this sink reads is kept. */
  private get retentionMs(): number {
    return this.from.retentionMs ?? this.core.settings.timeTravelRetentionMs;
  }

  private kafka() {
    return new Kafka({
      clientId: `oxbow-sink-${this.sink.name}`,
      brokers: [...this.options.brokers],
      logLevel: logLevel.NOTHING,
      connectionTimeout: this.options.connectTimeoutMs,
      requestTimeout: this.options.requestTimeoutMs,
      socketFactory: kafkaSocketFactory(this.options.connectTimeoutMs),
      // The sink's own rounds retry with backoff: kafkajs gives up after a few short tries.
      retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
    });
  }

  /** Whether the backoff after a failed round has passed. */
  ready(now: number): boolean {
    return now >= this.retryAt;
  }

  /**
   * A failed round: a sink_errors row with its attempt number, a backoff, and a fresh start: the
   * producer is dropped (a new one fences it) and the topic's tail is read again before sending.
   */
  failed(error: unknown): void {
    this.failures++;
    this.retryAt = Date.now() + Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1));
    this.reconciled = false;
    const producer = this.producer;
    this.producer = undefined;
    // A hung broker may never answer the disconnect: do not wait for it.
    void producer?.disconnect().catch(() => undefined);
    sinkStatusOf(this.core.sourceStatus).failed(this.sink.id, 'kafka', error instanceof Error ? error.message : String(error), this.failures);
  }

  /** Runs `step` within the transaction deadline; past it, rejects naming what did not happen and the option. */
  private withinTransactionDeadline<T>(step: Promise<T>, what = 'commit'): Promise<T> {
    const ms = this.options.transactionTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Kafka transaction to topic "${this.options.topic}" did not ${what} within ${ms} ms (transaction.timeout.ms)`)), ms);
    });
    step.catch(() => undefined);
    return Promise.race([step, deadline]).finally(() => clearTimeout(timer));
  }

  /**
   * The highest `oxbow.epoch` among the committed messages at the end of the topic: a delivery
   * whose Kafka transaction committed just before a crash, before its progress was committed.
   * Undefined when the topic is empty or missing. Each partition's tail is read from TAIL_OFFSETS
   * before its end; one whose window holds no delivery (a tail of aborted messages: a leader killed
   * mid-delivery) is read again further back, up to MAX_TAIL_OFFSETS or its start, so the last
   * committed delivery is found behind them and not sent again.
   */
  private async lastWrittenEpoch(): Promise<Epoch | undefined> {
    const kafka = this.kafka();
    const admin = kafka.admin();
    await admin.connect();
    let bounds: { partition: number; high: string; low: string }[];
    try {
      if (!(await admin.listTopics()).includes(this.options.topic)) return undefined;
      bounds = await admin.fetchTopicOffsets(this.options.topic);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    let targets = bounds.filter((bound) => BigInt(bound.high) > BigInt(bound.low));
    let latest: Epoch | undefined;
    for (let window = TAIL_OFFSETS; targets.length > 0; window = window * 8n > MAX_TAIL_OFFSETS ? MAX_TAIL_OFFSETS : window * 8n) {
      const found = await this.readTails(targets, window);
      for (const epoch of found.values()) if (latest === undefined || epoch > latest) latest = epoch;
      targets = targets.filter((bound) => !found.has(bound.partition) && BigInt(bound.high) - window > BigInt(bound.low) && window < MAX_TAIL_OFFSETS);
    }
    return latest;
  }

  /** The highest `oxbow.epoch` of the committed messages in the last `window` offsets of each partition of `targets` (none for a partition with none there). */
  private async readTails(targets: readonly { partition: number; high: string; low: string }[], window: bigint): Promise<Map<number, Epoch>> {
    const kafka = this.kafka();
    const consumer = kafka.consumer({ groupId: `oxbow-sink-check-${this.sink.id}-${process.pid}-${Date.now()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
    const pending = new Set(targets.map((bound) => bound.partition));
    const latest = new Map<number, Epoch>();
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    try {
      // A batch of aborted messages and transaction markers only (the tail after a transaction a
      // failed round left, aborted by the next producer) never reaches eachBatch: its end is
      // known from the batch events.
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        if (payload.topic !== this.options.topic || payload.lastOffset === null) return;
        if (BigInt(payload.lastOffset) >= BigInt(payload.highWatermark) - 2n) pending.delete(payload.partition);
        if (pending.size === 0) finished();
      });
      await consumer.connect();
      await consumer.subscribe({ topic: this.options.topic, fromBeginning: true });
      await consumer.run({
        eachBatch: async ({ batch }) => {
          for (const message of batch.messages) {
            const header = message.headers?.['oxbow.epoch'];
            if (header === undefined) continue;
            const epoch = BigInt(header.toString());
            const before = latest.get(batch.partition);
            if (before === undefined || epoch > before) latest.set(batch.partition, epoch);
          }
          // Control records (transaction markers) are never delivered: a batch that reaches the
          // last two offsets has seen the partition's last committed message.
          if (batch.messages.length > 0 && BigInt(batch.lastOffset()) >= BigInt(batch.highWatermark) - 2n) pending.delete(batch.partition);
          if (pending.size === 0) finished();
        },
      });
      for (const bound of targets) {
        const from = BigInt(bound.high) - window;
        consumer.seek({ topic: this.options.topic, partition: bound.partition, offset: String(from > BigInt(bound.low) ? from : BigInt(bound.low)) });
      }
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, TAIL_READ_TIMEOUT_MS))]);
    } finally {
      await consumer.disconnect().catch(() => undefined);
    }
    if (pending.size > 0) throw new Error(`could not read the end of topic "${this.options.topic}" to find what was delivered`);
    return latest;
  }

  private async connect(): Promise<Producer> {
    if (this.producer !== undefined) return this.producer;
    const kafka = this.kafka();
    const producer = kafka.producer({
      transactionalId: `oxbow-sink-${this.sink.id}`,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: true,
      transactionTimeout: this.options.transactionTimeoutMs,
    });
    // kafkajs's connect() asks for an idempotent producer id without the transactional id, which
    // fences nothing: the transactional InitProducerId comes with the first transaction. Begun and
    // aborted here with nothing in it (no EndTxn is sent), that transaction makes the broker settle
    // any transaction an earlier producer of this sink left open (a killed leader's, a failed
    // round's) and fence that producer before the topic's tail is read; an open transaction would
    // otherwise hold the topic's last stable offset, so that read could not reach the end (nor
    // would any read_committed consumer) until the broker timed it out (transaction.timeout.ms).
    // Within the same deadline; a producer that did not start is dropped.
    await this.withinTransactionDeadline(
      (async () => {
        await producer.connect();
        const fence = await producer.transaction();
        await fence.abort();
      })(),
      'start (producer connect and fence)',
    ).catch((error: unknown) => {
      void producer.disconnect().catch(() => undefined);
      throw error;
    });
    this.producer = producer;
    return producer;
  }

  /** One delivery round: everything committed since the last one. */
  async deliver(): Promise<void> {
    if (!this.reconciled) {
      // The producer first: its InitProducerId settles any transaction an earlier producer of this
      // sink left open, so the tail read next holds every delivery that committed.
      await this.connect();
      const written = await this.lastWrittenEpoch();
      if (written !== undefined && (this.delivered === undefined || written > this.delivered)) this.delivered = written;
      this.reconciled = true;
    }
    const store = this.core.store;
    const to = deliverableEpoch(this.core);
    // No checkpoint holds anything yet: the first delivery (the contents) waits for one.
    if (this.delivered === undefined && to === 0n) return;
    if (this.delivered !== undefined && to <= this.delivered) {
      // Nothing committed (or checkpointed, when gated) since the last delivery. With nothing sealed in flight either, every
      // later commit gets an epoch at or above the clock's (nextEpoch): move up to it.
      if (lastSealedEpoch(store) <= this.delivered) {
        const present = epochFromMillis(Date.now() - CLOCK_SLACK_MS);
        if (present > this.delivered) this.delivered = present;
      }
      await this.persistIfStale();
      return;
    }
    let changes: EpochChanges[];
    const held = this.held;
    if (held !== undefined && this.delivered !== undefined && this.delivered < held.to) {
      // Read at engine start, before anything could commit and move the window past the progress.
      const since = this.delivered;
      changes = held.changes.filter((change) => change.epoch > since && change.epoch <= to);
      if (to > held.to) changes = changes.concat(this.changesSince(held.to, to));
    } else if (this.delivered === undefined) {
      changes = this.log?.rowsKept === false ? this.log.contents(to) : [{ epoch: to, deletes: [], inserts: [...this.table.scan({ epoch: to })] }];
    } else changes = this.changesSince(this.delivered, to);
    await this.avro?.register();
    const messages = this.encode(changes);
    if (messages.length > 0) {
      const producer = await this.connect();
      for (let first = 0; first < messages.length; first += MESSAGES_PER_TRANSACTION) {
        const transaction = await this.withinTransactionDeadline(producer.transaction(), 'begin');
        try {
          await this.withinTransactionDeadline(
            (async () => {
              for (const piece of sendPieces(messages.slice(first, first + MESSAGES_PER_TRANSACTION))) await transaction.send({ topic: this.options.topic, messages: piece });
              await transaction.commit();
            })(),
          );
          // Fault injection for the test of the crash window between the two commits.
          this.core.settings.faults?.afterSinkCommit?.();
        } catch (error) {
          // Not awaited: past the deadline the broker may not answer. The next round's producer
          // fences this one and the broker settles the transaction.
          void transaction.abort().catch(() => undefined);
          throw error;
        }
      }
    }
    if (this.stopped) return;
    if (held !== undefined && to >= held.to) this.held = undefined;
    this.delivered = to;
    this.log?.delivered(to);
    this.failures = 0;
    sinkStatusOf(this.core.sourceStatus).delivered(this.sink.id, 'kafka', messages.length, to);
    if (messages.length > 0 || this.persisted === undefined) await this.persist(to);
    else await this.persistIfStale();
    this.hold();
  }

  /** The changes in (from, to]; when `from` is below the readable window, the contents at `to`, said once. */
  private changesSince(from: Epoch, to: Epoch): EpochChanges[] {
    if (this.log !== undefined) return this.log.changes(from, to);
    if (from >= this.core.store.readableWindow(this.from.id).oldest) return changesBetween(this.table, from, to);
    // Down (or stuck) for longer than the retention: the changes since the progress are gone.
    const message =
      `sink delivery resumed from a snapshot: the changes of "${this.from.name}" since epoch ${from} are older than the time-travel retention ` +
      `(${this.retentionMs} ms) and no longer kept; sent its contents at epoch ${to} instead (${this.sink.format === 'plain' ? 'rows already sent appear again' : 'keys deleted in the gap get no tombstone'})`;
    if (this.core.sourceStatus.troubled(this.sink.id, message)) process.stderr.write(`oxbow: sink ${this.sink.schema}.${this.sink.name}: ${message}\n`);
    return [{ epoch: to, deletes: [], inserts: [...this.table.scan({ epoch: to })] }];
  }

  /**
   * At engine start, before anything commits: reads the changes since the committed progress
   * while they are still in the window (the first commit after a restart moves the window to the
   * clock, and a server down for longer than the retention would otherwise find them gone).
   */
  catchUp(): void {
    const store = this.core.store;
    const to = store.committedEpoch;
    const from = this.delivered;
    if (this.log !== undefined || from === undefined || from < store.readableWindow(this.from.id).oldest) return;
    // Nothing is sealed beyond `to` yet, so no later commit can get an epoch below the clock's.
    const present = epochFromMillis(Date.now() - CLOCK_SLACK_MS);
    if (to <= from) {
      if (present > from) this.delivered = present;
      return;
    }
    this.held = { to: present > to ? present : to, changes: changesBetween(this.table, from, to) };
  }

  /** Commits the progress when the committed one lags the delivered one by a quarter of the retention. */
  private async persistIfStale(): Promise<void> {
    const delivered = this.delivered;
    if (delivered === undefined || this.stopped) return;
    if (this.persisted !== undefined && epochToMillis(delivered) - epochToMillis(this.persisted) < this.retentionMs / 4) return;
    await this.persist(delivered);
  }

  private async persist(progress: Epoch): Promise<void> {
    await this.core.writeLock.run(() => {
      if (this.core.catalog.snapshot.relationById(this.sink.id) === undefined) return;
      const store = this.core.store;
      // Nothing sealed since the progress: the epoch committed here holds only this metadata, so
      // the progress may move up to it (a slow Kafka round must not leave it behind the window).
      const quiet = lastSealedEpoch(store) <= progress;
      let epoch: Epoch;
      try {
        store.putMeta(SINK_PROGRESS_META_PREFIX + this.sink.id, new TextEncoder().encode(String(progress)));
        // The log's entries up to the progress are in the topic: they go in the same commit.
        this.log?.trim(progress);
        epoch = this.core.commit();
      } catch (error) {
        store.abort();
        throw error;
      }
      this.log?.trimmed(progress);
      if (quiet && this.delivered !== undefined && epoch > this.delivered) this.delivered = epoch;
    });
    this.persisted = progress;
  }

  private encode(changes: readonly EpochChanges[]): SinkMessage[] {
    const out: SinkMessage[] = [];
    const format = this.sink.format ?? 'plain';
    for (const change of changes) {
      const headers = { 'oxbow.epoch': String(change.epoch) };
      if (format === 'plain') {
        for (const row of change.inserts) out.push({ key: this.plainKeyed ? this.key.encode(row) : null, value: this.avro === undefined ? this.value.encode(row) : this.avro.encode(row), headers });
        continue;
      }
      const inserted = new Map<string, Row>();
      for (const row of change.inserts) inserted.set(this.key.encode(row), row);
      const deleted = new Map<string, Row>();
      for (const row of change.deletes) deleted.set(this.key.encode(row), row);
      for (const [key, before] of deleted) {
        const after = inserted.get(key);
        if (format === 'upsert') {
          if (after === undefined) out.push({ key, value: null, headers });
        } else {
          out.push({ key, value: this.debezium(before, after, after === undefined ? 'd' : 'u', change.epoch), headers });
        }
      }
      for (const [key, after] of inserted) {
        if (format === 'upsert') out.push({ key, value: this.value.encode(after), headers });
        else if (!deleted.has(key)) out.push({ key, value: this.debezium(undefined, after, 'c', change.epoch), headers });
      }
    }
    return out;
  }

  private debezium(before: Row | undefined, after: Row | undefined, op: string, epoch: Epoch): string {
    const millis = Number(epoch >> 16n);
    return `{"before":${before === undefined ? 'null' : this.value.encode(before)},"after":${after === undefined ? 'null' : this.value.encode(after)},"op":"${op}","ts_ms":${millis}}`;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.core.store.holdHistory(sinkHolder(this.sink.id), this.from.id, undefined);
    await this.producer?.disconnect().catch(() => undefined);
  }
}

export class SinkManager {
  private readonly running = new Map<number, RunningSink | TargetSink>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: ConnectorHost,
    private readonly intervalMs: number,
  ) {}

  /** Call before anything commits (openEngine): each sink first reads what it has not delivered. */
  start(): void {
    const catalog = this.core.catalog.snapshot;
    for (const relation of catalog.relations()) {
      if (relation.kind !== 'sink') continue;
      try {
        const sink = this.runningSink(relation);
        if (sink instanceof RunningSink) sink.catchUp();
      } catch (error) {
        this.trouble(relation, error);
      }
    }
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  private tick(): void {
    const catalog = this.core.catalog.snapshot;
    const sinks = catalog.relations().filter((relation) => relation.kind === 'sink');
    const wanted = new Set(sinks.map((sink) => sink.id));
    for (const [id, sink] of this.running) {
      if (!wanted.has(id)) {
        this.running.delete(id);
        sinkStatusOf(this.core.sourceStatus).forget(id);
        void sink.stop();
      }
    }
    for (const relation of sinks) {
      let sink: RunningSink | TargetSink | undefined;
      try {
        sink = this.runningSink(relation);
      } catch (error) {
        this.trouble(relation, error);
        continue;
      }
      if (sink === undefined || sink.busy) continue;
      if (!sink.ready(Date.now())) continue;
      sink.busy = true;
      const running = sink;
      running
        .deliver()
        .then(() => this.core.sourceStatus.recovered(relation.id))
        .catch((error: unknown) => {
          running.failed(error);
          this.trouble(relation, error);
        })
        .finally(() => (running.busy = false));
    }
  }

  /** The running sink of `relation`, made on first use (undefined while the relation it reads is missing). */
  private runningSink(relation: RelationDef): RunningSink | TargetSink | undefined {
    let sink = this.running.get(relation.id);
    if (sink === undefined) {
      // A sink AS query owns its dataflow's rows; a sink FROM a relation reads that relation's.
      const from = relation.stream !== undefined ? relation : this.core.catalog.snapshot.relationById(relation.dependsOn[0]!);
      if (from === undefined) return undefined;
      const target = sinkTargetOf(relation, from);
      sink = target === undefined ? new RunningSink(relation, from, this.core) : new TargetSink(relation, from, this.core, target);
      this.running.set(relation.id, sink);
      this.core.sourceStatus.named(relation.id, `${relation.schema}.${relation.name}`);
    }
    return sink;
  }

  private trouble(relation: RelationDef, error: unknown): void {
    const message = `sink delivery failed: ${error instanceof Error ? error.message : String(error)}`;
    if (this.core.sourceStatus.troubled(relation.id, message)) process.stderr.write(`oxbow: sink ${relation.schema}.${relation.name}: ${message}\n`);
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await Promise.all([...this.running.values()].map((sink) => sink.stop()));
    this.running.clear();
  }
}
