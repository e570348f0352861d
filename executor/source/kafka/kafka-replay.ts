// Kafka sources that store no rows (RelationDef.replayed on an append-only Kafka source): every
// read of the source is a replay of its topic from the broker, decoded by the same MessageDecoder
// as the stream, with the same hidden row ids.
//
// What the source commits (source-replay.ts): per partition its next offset (the offset oxbow
// already commits with the epoch) and, once, the first offset it read (where the source's history
// starts: the startup mode's offset, or the start of a partition added later). Both are rows of the
// relation's own state table, versioned by epoch, so AS OF an older epoch reads the shorter
// prefix. A replay of partition p is the messages [first, next) of p as of the epoch read.
//
// Row ids are derived from the message: `offset * 2^16 + partition` (`kafkaRowId`), written by the
// decoder in the worker thread for streamed rows and here for replayed ones, so a view keyed by row
// id sees the same ids streamed and backfilled. Replayed rows come in row-id order (offset major,
// partition minor), as a scan of a stored source's table came in key order.
//
// The fetch: a batch statement runs synchronously over `Iterable<Row>`, so the replay is fetched
// *before* the plan runs (`fetchKafkaReplay`, called from TableAccess.prepare), bounded by a byte
// budget (past it the statement fails with 53200 naming the source); a view's backfill reads the
// replay in chunks (`replayChunks`) and pushes each chunk as it arrives. kafkajs offers fetches by
// offset only through a consumer group; a replay reads with its low-level cluster and broker
// objects instead (no group to join or leave behind, one Fetch request per leader for all its
// partitions), with kafkajs's own `Batch` filtering (control records, aborted transactions) and the
// consumer's isolation level (read committed), so a replay sees exactly the messages the stream saw.
//
// Trouble is an error, never a hang: an unreachable broker or a deleted topic (08006, each request
// bounded by REQUEST_TIMEOUT_MS), messages below the broker's log start or above its high watermark
// (72000, naming the partition and the missing offsets).

import { createRequire } from 'node:module';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Epoch } from '../../../sql/epoch.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { Row } from '../../../sql/value.js';
import type { RowVersion } from '../../../storage/state-table.js';
import { MessageDecoder, type DecodedChanges } from '../message-decoder.js';
import { sourceLayout } from '../source-layout.js';
import type { RawMessageBatch } from '../source.js';
import { kafkaOptions, type KafkaOptions } from './kafka-options.js';

/** Bits of a row id that carry the partition (partitions 0..65535). */
const PARTITION_BITS = 16n;
const MAX_PARTITIONS = 1 << 16;
/** Bound on each broker request (connect, metadata, offsets, fetch). */
const REQUEST_TIMEOUT_MS = 10_000;
/** Bytes per Fetch request and per partition within it. */
const FETCH_MAX_BYTES = 16 << 20;
const FETCH_MAX_BYTES_PER_PARTITION = 4 << 20;
/** The default bound of a prefetched replay when the engine names none. */
export const DEFAULT_REPLAY_LIMIT_BYTES = 512 << 20;
/** The bound of a prefetched replay: the engine's --memory-limit (set when its source manager starts). */
export const replayLimits = { bytes: DEFAULT_REPLAY_LIMIT_BYTES };
/**
 * Heap bytes a decoded row takes per byte of its message, for the budget: a JSON message of ~130
 * bytes becomes a row array with boxed numbers, strings and a BigInt row id of about 400 bytes.
 */
const HEAP_BYTES_PER_MESSAGE_BYTE = 3;

/** True for an append-only Kafka source that stores no rows (reads replay its topic). */
export function isKafkaReplayed(relation: RelationDef): boolean {
  return relation.kind === 'source' && relation.replayed === true && (relation.options?.['connector'] ?? '').toLowerCase() === 'kafka';
}

/** A replayed Kafka source's hidden row id of the message at `offset` of `partition`. */
export function kafkaRowId(partition: number, offset: bigint): bigint {
  // The decoder rejects such a message (streamed and replayed alike) rather than reuse an id.
  if (partition >= MAX_PARTITIONS) throw new Error(`partition ${partition} is beyond the ${MAX_PARTITIONS} partitions a source that stores no rows can tell apart`);
  return (offset << PARTITION_BITS) | BigInt(partition);
}

/** The offset a replayed Kafka row id names (its partition: `Number(rowId & 0xffffn)`). */
function offsetOfRowId(rowId: bigint): bigint {
  return rowId >> PARTITION_BITS;
}

/** What a replay reads of one partition: messages [from, to). */
export interface PartitionRange {
  readonly partition: number;
  readonly from: bigint;
  readonly to: bigint;
}

/** The ranges of an epoch: from each partition's first offset to its committed next offset. */
export type ReplayRanges = ReadonlyMap<number, PartitionRange>;

export interface ReplayFetchOptions {
  /** The statement's cancel (CancelRequest, statement_timeout, close): checked between requests. */
  readonly signal?: AbortSignal;
  /** Fails with 53200 once the decoded rows would take more (prefetch only). */
  readonly limitBytes?: number;
}

/** One fetched partition's messages, decoded: rows in offset order with their row ids set. */
export interface ReplayChunk {
  readonly partition: number;
  readonly rows: Row[];
  /** Message bytes (keys and values) of the chunk, rejected messages included. */
  readonly bytes: number;
}

// ---- kafkajs's low-level client (no public API for a fetch by offset without a group) ----------

interface FetchedMessage {
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}
interface FetchedBatch {
  readonly messages: FetchedMessage[];
  readonly highWatermark: string;
  lastOffset(): string;
}
interface PartitionData {
  readonly partition: number;
  readonly highWatermark: string;
}
interface Broker {
  fetch(request: {
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    isolationLevel: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: PartitionData[] }[] }>;
}
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(query: { nodeId: string }): Promise<Broker>;
  fetchTopicsOffset(topics: { topic: string; partitions: { partition: number }[]; fromBeginning: boolean }[]): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

const requireKafkajs = createRequire(import.meta.url);
const kafkajsInternals = {
  Cluster: requireKafkajs('kafkajs/src/cluster/index.js') as new (options: Record<string, unknown>) => Cluster,
  Batch: requireKafkajs('kafkajs/src/consumer/batch.js') as new (topic: string, fetchedOffset: string, partitionData: PartitionData) => FetchedBatch,
  loggers: requireKafkajs('kafkajs/src/loggers/index.js') as { createLogger(options: { level: number; logCreator: unknown }): unknown; LEVELS: { NOTHING: number } },
  logCreator: requireKafkajs('kafkajs/src/loggers/console.js') as unknown,
  socketFactory: requireKafkajs('kafkajs/src/network/socketFactory.js') as () => unknown,
  isolation: requireKafkajs('kafkajs/src/protocol/isolationLevel.js') as { READ_COMMITTED: number },
};

function newCluster(options: KafkaOptions, name: string): Cluster {
  return new kafkajsInternals.Cluster({
    logger: kafkajsInternals.loggers.createLogger({ level: kafkajsInternals.loggers.LEVELS.NOTHING, logCreator: kafkajsInternals.logCreator }),
    socketFactory: kafkajsInternals.socketFactory(),
    brokers: [...options.brokers],
    clientId: `oxbow-replay-${name}`,
    connectionTimeout: 3000,
    requestTimeout: REQUEST_TIMEOUT_MS,
    enforceRequestTimeout: true,
    metadataMaxAge: 300_000,
    retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1000 },
    allowAutoTopicCreation: false,
    maxInFlightRequests: null,
    isolationLevel: kafkajsInternals.isolation.READ_COMMITTED,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `work`, or 08006 naming the source once REQUEST_TIMEOUT_MS pass (a request never hangs a statement). */
async function bounded<T>(work: Promise<T>, what: string, signal: AbortSignal | undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)), REQUEST_TIMEOUT_MS);
    if (signal !== undefined) {
      onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('canceled'));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([work, expired]);
  } catch (error) {
    if (signal?.aborted === true || error instanceof SqlError) throw error;
    const unknownTopic = (error as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION';
    throw new SqlError(SqlState.connectionFailure, `${what}: ${unknownTopic ? 'the topic does not exist (deleted?)' : messageOf(error)}`);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    work.catch(() => undefined);
  }
}

/**
 * The decoded messages [from, to) of every range, a partition's fetched batch at a time (in offset
 * order within a partition). Rows carry their row ids; rejected messages are skipped, as the
 * stream skipped them. Fails with 72000 when the broker no longer has a message the source read
 * (retention, a recreated topic), with 08006 when it cannot be reached or the topic is gone.
 */
export async function* replayChunks(relation: RelationDef, ranges: ReplayRanges, options: ReplayFetchOptions = {}): AsyncGenerator<ReplayChunk> {
  const wanted = [...ranges.values()].filter((range) => range.to > range.from);
  if (wanted.length === 0) return;
  const kafka = kafkaOptions(relation.options ?? {});
  const name = `${relation.schema}.${relation.name}`;
  const where = `source "${relation.name}": cannot replay Kafka topic "${kafka.topic}" from ${kafka.brokers.join(',')}`;
  const signal = options.signal;
  const decoder = new MessageDecoder(sourceLayout(relation), kafka.maxMessageBytes, kafkaRowId);
  const cluster = newCluster(kafka, name);
  try {
    await bounded(cluster.connect(), where, signal);
    await bounded(cluster.addTargetTopic(kafka.topic), where, signal);
    const known = new Set(cluster.findTopicPartitionMetadata(kafka.topic).map((partition) => partition.partitionId));
    if (known.size === 0) throw new SqlError(SqlState.connectionFailure, `${where}: the topic does not exist (deleted?)`);
    for (const range of wanted) {
      if (!known.has(range.partition)) throw missing(relation, kafka.topic, range, range.from, range.to, 'the partition no longer exists');
    }
    await checkRetained(cluster, relation, kafka.topic, wanted, where, signal);
    const next = new Map(wanted.map((range) => [range.partition, range.from]));
    while (next.size > 0) {
      signal?.throwIfAborted();
      const leaders = cluster.findLeaderForPartitions(kafka.topic, [...next.keys()]);
      for (const [nodeId, partitions] of Object.entries(leaders)) {
        const broker = await bounded(cluster.findBroker({ nodeId }), where, signal);
        const request = partitions.map((partition) => ({ partition, fetchOffset: String(next.get(partition)!), maxBytes: FETCH_MAX_BYTES_PER_PARTITION }));
        const { responses } = await bounded(
          broker.fetch({ maxWaitTime: 100, minBytes: 1, maxBytes: FETCH_MAX_BYTES, isolationLevel: kafkajsInternals.isolation.READ_COMMITTED, topics: [{ topic: kafka.topic, partitions: request }] }),
          where,
          signal,
        );
        for (const response of responses) {
          for (const data of response.partitions) {
            const range = ranges.get(data.partition);
            const fetchOffset = next.get(data.partition);
            if (range === undefined || fetchOffset === undefined) continue;
            const batch = new kafkajsInternals.Batch(kafka.topic, String(fetchOffset), data);
            const chunk = decodeBatch(decoder, data.partition, batch.messages, range.to);
            const after = BigInt(batch.lastOffset()) + 1n;
            if (after <= fetchOffset) {
              // Nothing at or after the offset: the broker's log ends below what the source read.
              if (BigInt(batch.highWatermark) <= fetchOffset) throw missing(relation, kafka.topic, range, fetchOffset, range.to, `the broker's log ends at offset ${batch.highWatermark}`);
              continue;
            }
            if (after >= range.to) next.delete(data.partition);
            else next.set(data.partition, after);
            if (chunk.rows.length > 0 || chunk.bytes > 0) yield chunk;
          }
        }
      }
    }
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
}

function decodeBatch(decoder: MessageDecoder, partition: number, messages: readonly FetchedMessage[], to: bigint): ReplayChunk {
  const offsets: bigint[] = [];
  const timestamps: number[] = [];
  const keys: (Buffer | null)[] = [];
  const values: (Buffer | null)[] = [];
  let bytes = 0;
  for (const message of messages) {
    const offset = BigInt(message.offset);
    if (offset >= to) break;
    offsets.push(offset);
    timestamps.push(Number(message.timestamp));
    keys.push(message.key ?? null);
    values.push(message.value ?? null);
    bytes += (message.key?.length ?? 0) + (message.value?.length ?? 0);
  }
  const raw: RawMessageBatch = { partition, offsets, timestamps, keys, values, highWatermark: 0n };
  const out: DecodedChanges = { rows: [], kinds: [] };
  // Rejected messages were recorded when the stream read them; a replay skips them again.
  decoder.decode(raw, out, () => undefined);
  return { partition, rows: out.rows, bytes };
}

/** 72000 for messages the source read that the broker no longer has. */
function missing(relation: RelationDef, topic: string, range: PartitionRange, from: bigint, to: bigint, why: string): SqlError {
  return new SqlError(SqlState.snapshotTooOld, `source "${relation.name}": Kafka topic "${topic}" partition ${range.partition} no longer has offsets ${from} to ${to - 1n} (${why})`, {
    detail: `The source read offsets ${range.from} to ${range.to - 1n} of this partition and stores no rows: reads replay them from the broker.`,
    hint: "The topic's retention (retention.ms, retention.bytes) must cover what the source read; a source that must outlive it keeps its rows when created with a primary key.",
  });
}

/** Every range starts at or after its partition's log start (else 72000). */
async function checkRetained(cluster: Cluster, relation: RelationDef, topic: string, ranges: readonly PartitionRange[], where: string, signal: AbortSignal | undefined): Promise<void> {
  const partitions = ranges.map((range) => ({ partition: range.partition }));
  const [lows] = await bounded(cluster.fetchTopicsOffset([{ topic, partitions, fromBeginning: true }]), where, signal);
  for (const range of ranges) {
    const low = BigInt(lows?.partitions.find((entry) => entry.partition === range.partition)?.offset ?? '0');
    if (low > range.from) throw missing(relation, topic, range, range.from, low < range.to ? low : range.to, `the broker's log starts at offset ${low}`);
  }
}

/**
 * A replay fetched whole before a statement runs: each partition's rows in offset order. Reads at
 * the snapshot or AS OF an older epoch take the prefix below that epoch's positions.
 */
export class KafkaReplay {
  private constructor(private readonly partitions: ReadonlyMap<number, { readonly rows: Row[]; readonly offsets: bigint[] }>, private readonly rowIdAt: number) {}

  /** Fetches every range (the statement's snapshot); fails with 53200 past `limitBytes`. */
  static async fetch(relation: RelationDef, ranges: ReplayRanges, options: ReplayFetchOptions = {}): Promise<KafkaReplay> {
    const rowIdAt = sourceLayout(relation).rowIdPosition!;
    const limit = options.limitBytes ?? DEFAULT_REPLAY_LIMIT_BYTES;
    const partitions = new Map<number, { rows: Row[]; offsets: bigint[] }>();
    let bytes = 0;
    for await (const chunk of replayChunks(relation, ranges, options)) {
      bytes += chunk.bytes * HEAP_BYTES_PER_MESSAGE_BYTE;
      if (bytes > limit) {
        const budget = limit >= 1 << 20 ? `${Math.round(limit / (1 << 20))} MiB` : `${Math.round(limit / 1024)} KiB`;
        throw new SqlError(SqlState.outOfMemory, `source "${relation.name}": replaying its Kafka topic needs more than ${budget} of memory`, {
          detail: 'The source stores no rows: a read of it fetches the messages it read from the broker and holds them for the statement.',
          hint: 'Raise --memory-limit, or read the source through a materialized view.',
        });
      }
      let entry = partitions.get(chunk.partition);
      if (entry === undefined) partitions.set(chunk.partition, (entry = { rows: [], offsets: [] }));
      for (const row of chunk.rows) {
        entry.rows.push(row);
        entry.offsets.push(offsetOfRowId(row[rowIdAt] as bigint));
      }
    }
    return new KafkaReplay(partitions, rowIdAt);
  }

  /** The rows below each range's end (an epoch's positions, at most the fetched ones), in row-id order. */
  rows(ranges: ReplayRanges): Iterable<Row> {
    const cursors: { rows: Row[]; offsets: bigint[]; at: number; end: number; partition: number }[] = [];
    for (const [partition, entry] of this.partitions) {
      const range = ranges.get(partition);
      if (range === undefined) continue;
      const at = lowerBound(entry.offsets, range.from);
      const end = lowerBound(entry.offsets, range.to);
      if (end > at) cursors.push({ rows: entry.rows, offsets: entry.offsets, at, end, partition });
    }
    cursors.sort((a, b) => a.partition - b.partition);
    return {
      *[Symbol.iterator]() {
        // A merge by (offset, partition): row-id order.
        for (;;) {
          let best = -1;
          for (let i = 0; i < cursors.length; i++) {
            const cursor = cursors[i]!;
            if (cursor.at >= cursor.end) continue;
            if (best < 0 || cursor.offsets[cursor.at]! < cursors[best]!.offsets[cursors[best]!.at]!) best = i;
          }
          if (best < 0) return;
          const cursor = cursors[best]!;
          yield cursor.rows[cursor.at++]!;
        }
      },
    };
  }

  /** The row with this row id, if its message lies within the ranges and made a row. */
  row(rowId: bigint, ranges: ReplayRanges): Row | undefined {
    if (rowId < 0n) return undefined;
    const partition = Number(rowId & BigInt(MAX_PARTITIONS - 1));
    const offset = offsetOfRowId(rowId);
    const range = ranges.get(partition);
    const entry = this.partitions.get(partition);
    if (range === undefined || entry === undefined || offset < range.from || offset >= range.to) return undefined;
    const at = lowerBound(entry.offsets, offset);
    return entry.offsets[at] === offset ? entry.rows[at] : undefined;
  }

  /**
   * FOR SYSTEM_TIME BETWEEN: the rows committed by `to`, each valid from the epoch whose position
   * first covered its offset (`history`: the position rows' versions over the readable window;
   * below the oldest retained position, that version's epoch), never replaced.
   */
  versions(history: readonly { readonly partition: number; readonly next: bigint; readonly epoch: Epoch }[], ranges: ReplayRanges): Iterable<RowVersion> {
    const steps = new Map<number, { next: bigint; epoch: Epoch }[]>();
    for (const step of history) {
      let list = steps.get(step.partition);
      if (list === undefined) steps.set(step.partition, (list = []));
      list.push(step);
    }
    for (const list of steps.values()) list.sort((a, b) => (a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0));
    const rows = this.rows(ranges);
    const rowIdAt = this.rowIdAt;
    return {
      *[Symbol.iterator]() {
        for (const row of rows) {
          const rowId = row[rowIdAt] as bigint;
          const list = steps.get(Number(rowId & BigInt(MAX_PARTITIONS - 1)));
          if (list === undefined || list.length === 0) continue;
          const offset = offsetOfRowId(rowId);
          let low = 0;
          let high = list.length - 1;
          while (low < high) {
            const middle = (low + high) >> 1;
            if (list[middle]!.next > offset) high = middle;
            else low = middle + 1;
          }
          yield { row, validFrom: list[low]!.epoch, validTo: null };
        }
      },
    };
  }
}

function lowerBound(offsets: readonly bigint[], offset: bigint): number {
  let low = 0;
  let high = offsets.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (offsets[middle]! < offset) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The replayed Kafka sources a planned statement scans: every `Scan` node anywhere in the plan
 * (subqueries inside expressions included) whose relation is one. The plan is walked as plain
 * data so this module need not know every plan shape.
 */
export function kafkaReplayedScans(plan: unknown): readonly RelationDef[] {
  if (plan === null || typeof plan !== 'object') return [];
  // Plans are immutable and reused (prepared statements, the INSERT shape cache): walked once each.
  const cached = scansByPlan.get(plan);
  if (cached !== undefined) return cached;
  const found = new Map<number, RelationDef>();
  const seen = new Set<object>();
  const walk = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (Object.getPrototypeOf(value) !== Object.prototype) return;
    const node = value as Record<string, unknown>;
    if (node['kind'] === 'Scan' && typeof node['relation'] === 'object' && node['relation'] !== null) {
      const relation = node['relation'] as RelationDef;
      if (isKafkaReplayed(relation)) found.set(relation.id, relation);
    }
    for (const key in node) if (key !== 'relation' && key !== 'columns') walk(node[key]);
  };
  walk(plan);
  const scans = found.size === 0 ? NO_SCANS : [...found.values()];
  scansByPlan.set(plan, scans);
  return scans;
}

const NO_SCANS: readonly RelationDef[] = [];
const scansByPlan = new WeakMap<object, readonly RelationDef[]>();

export { MAX_PARTITIONS as KAFKA_REPLAY_MAX_PARTITIONS };
