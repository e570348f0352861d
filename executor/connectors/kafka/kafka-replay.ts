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
// *before* the plan runs (TableAccess.prepare), bounded by a byte budget (past it the statement
// fails with 53200 naming the source); a view's backfill reads the replay in chunks
// (`replayChunks`) and pushes each chunk as it arrives. kafkajs offers fetches by offset only
// through a consumer group; a replay reads with its low-level cluster and broker objects instead
// (no group to join or leave behind, one Fetch request per leader for all its partitions), with
// kafkajs's own `Batch` filtering (control records, aborted transactions) and the consumer's
// isolation level (read committed), so a replay sees exactly the messages the stream saw.
//
// What is fetched: only what the statement's scans can match (`narrowReplay`). A point read by
// row id (`WHERE _row_id = x`, IN lists) fetches that offset of that partition; comparisons of the
// row id or the INCLUDE partition / offset columns with constants or parameters narrow the
// partitions and offsets; never past the epoch's committed offsets.
//
// Trouble is an error, never a hang: a connection refused or lost, a timeout, a leader that moved
// are retried with back-off (`ReplayRequests`) for up to REQUEST_TIMEOUT_MS from the first failed
// attempt, then 08006; a deleted topic is 08006 at once; messages below the broker's log start or
// above its high watermark are 72000 (naming the partition and the missing offsets).

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
export const FETCH_MAX_BYTES = 16 << 20;
export const FETCH_MAX_BYTES_PER_PARTITION = 4 << 20;
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

export interface FetchedMessage {
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}
export interface FetchedBatch {
  readonly messages: FetchedMessage[];
  readonly highWatermark: string;
  lastOffset(): string;
  /** No message at or after the fetch offset (control records and aborted ones count as messages). */
  isEmptyIncludingFiltered(): boolean;
}
export interface PartitionData {
  readonly partition: number;
  readonly highWatermark: string;
}
export interface Broker {
  fetch(request: {
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    isolationLevel: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: PartitionData[] }[] }>;
}
export interface Cluster {
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
export const kafkajsInternals = {
  Cluster: requireKafkajs('kafkajs/src/cluster/index.js') as new (options: Record<string, unknown>) => Cluster,
  Batch: requireKafkajs('kafkajs/src/consumer/batch.js') as new (topic: string, fetchedOffset: string, partitionData: PartitionData) => FetchedBatch,
  loggers: requireKafkajs('kafkajs/src/loggers/index.js') as { createLogger(options: { level: number; logCreator: unknown }): unknown; LEVELS: { NOTHING: number } },
  logCreator: requireKafkajs('kafkajs/src/loggers/console.js') as unknown,
  socketFactory: requireKafkajs('kafkajs/src/network/socketFactory.js') as () => unknown,
  isolation: requireKafkajs('kafkajs/src/protocol/isolationLevel.js') as { READ_COMMITTED: number },
};

export function newCluster(options: KafkaOptions, name: string): Cluster {
  return new kafkajsInternals.Cluster({
    logger: kafkajsInternals.loggers.createLogger({ level: kafkajsInternals.loggers.LEVELS.NOTHING, logCreator: kafkajsInternals.logCreator }),
    socketFactory: kafkajsInternals.socketFactory(),
    brokers: [...options.brokers],
    clientId: `oxbow-replay-${name}`,
    connectionTimeout: options.connectTimeoutMs,
    requestTimeout: Math.min(REQUEST_TIMEOUT_MS, options.requestTimeoutMs),
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

/** Back-off between attempts after a transient failure: doubled from the first up to the last. */
const RETRY_FIRST_DELAY_MS = 100;
const RETRY_MAX_DELAY_MS = 1000;

/** kafkajs error types that no retry mends. */
const FINAL_TYPES = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'OFFSET_OUT_OF_RANGE', 'TOPIC_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', 'UNSUPPORTED_VERSION']);

/** The kafkajs type of an error or of what it wraps (`cause`: retries exhausted wraps the last failure). */
function errorChain(error: unknown): { type?: unknown; name?: unknown; retriable?: unknown }[] {
  const chain: { type?: unknown; name?: unknown; retriable?: unknown; cause?: unknown }[] = [];
  for (let link = error as { cause?: unknown } | undefined; link !== undefined && link !== null && typeof link === 'object' && chain.length < 5; link = link.cause as typeof link) chain.push(link);
  return chain;
}

function isUnknownTopic(error: unknown): boolean {
  return errorChain(error).some((link) => link.type === 'UNKNOWN_TOPIC_OR_PARTITION');
}

/**
 * A failure a later attempt may not see: a connection refused, reset or timed out (a broker
 * restarting), a partition whose leader moved or is being elected, a broker not in the cached
 * metadata. Not: a deleted topic, an offset out of range, authorization, our own SqlErrors.
 */
function isTransient(error: unknown): boolean {
  if (error instanceof SqlError) return false;
  const chain = errorChain(error);
  if (chain.some((link) => typeof link.type === 'string' && FINAL_TYPES.has(link.type))) return false;
  // Retries exhausted inside kafkajs (KafkaJSNumberOfRetriesExceeded, non-retriable itself): what it wrapped decides.
  const deciding = chain.filter((link) => link.name !== 'KafkaJSNumberOfRetriesExceeded' && link.name !== 'KafkaJSNonRetriableError');
  const first = deciding[0] ?? chain[0];
  return first !== undefined && (first.retriable === true || first.name === 'ReplayTimeout');
}

class ReplayTimeout extends Error {
  override readonly name = 'ReplayTimeout';
}

/**
 * Broker requests of one replay, each bounded, retried with back-off after a transient failure.
 * The bound is REQUEST_TIMEOUT_MS from the start of the first failed attempt of a streak (a
 * success ends the streak): an attempt in a streak gets only what is left of it, so a broker that
 * does not come back fails the statement with 08006 about REQUEST_TIMEOUT_MS after it went away,
 * as a single request did before retries.
 */
export class ReplayRequests {
  private failingSince: number | undefined;
  private attemptStarted = 0;
  private delay = RETRY_FIRST_DELAY_MS;
  /** Attempts that failed transiently and were retried (tests and traces read it). */
  retries = 0;

  constructor(
    private readonly cluster: Cluster,
    private readonly where: string,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** `work` bounded by what is left of the window; the raw error when it fails (recover decides). */
  async attempt<T>(work: Promise<T>): Promise<T> {
    this.attemptStarted = Date.now();
    const left = this.failingSince === undefined ? REQUEST_TIMEOUT_MS : Math.max(1, this.failingSince + REQUEST_TIMEOUT_MS - this.attemptStarted);
    const signal = this.signal;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ReplayTimeout(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)), left);
      if (signal !== undefined) {
        onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('canceled'));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    try {
      return await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
      work.catch(() => undefined);
    }
  }

  /** A request succeeded: the next failure starts a new streak. */
  succeeded(): void {
    this.failingSince = undefined;
    this.delay = RETRY_FIRST_DELAY_MS;
  }

  /**
   * After a failed attempt: rethrows what no retry mends (08006 for a broker or topic trouble,
   * the cancel, our own errors), else waits the back-off and refreshes the metadata (a moved
   * leader) so the caller can try again. Past the window: 08006 with the last failure.
   */
  async recover(error: unknown): Promise<void> {
    const signal = this.signal;
    if (signal?.aborted === true) throw signal.reason instanceof Error ? signal.reason : error;
    if (error instanceof SqlError) throw error;
    if (!isTransient(error)) throw this.failure(error);
    this.failingSince ??= this.attemptStarted;
    const deadline = this.failingSince + REQUEST_TIMEOUT_MS;
    if (Date.now() + this.delay >= deadline) throw this.failure(error);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.delay);
      signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    signal?.throwIfAborted();
    this.delay = Math.min(this.delay * 2, RETRY_MAX_DELAY_MS);
    this.retries++;
    // Where the partitions' leaders are now; a failure here is the next attempt's to report.
    await this.attempt(this.cluster.refreshMetadata()).catch(() => undefined);
  }

  failure(error: unknown): SqlError {
    return new SqlError(SqlState.connectionFailure, `${this.where}: ${isUnknownTopic(error) ? 'the topic does not exist (deleted?)' : messageOf(error)}`);
  }
}

/** Per partition, its ranges in offset order, overlapping and touching ones merged. */
function rangesByPartition(ranges: ReplayRanges | readonly PartitionRange[]): Map<number, PartitionRange[]> {
  const list = ranges instanceof Map ? [...ranges.values()] : (ranges as readonly PartitionRange[]);
  const byPartition = new Map<number, PartitionRange[]>();
  for (const range of list) {
    if (range.to <= range.from) continue;
    let entry = byPartition.get(range.partition);
    if (entry === undefined) byPartition.set(range.partition, (entry = []));
    entry.push(range);
  }
  for (const [partition, entry] of byPartition) {
    entry.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
    const merged: PartitionRange[] = [];
    for (const range of entry) {
      const last = merged[merged.length - 1];
      if (last !== undefined && range.from <= last.to) {
        if (range.to > last.to) merged[merged.length - 1] = { partition, from: last.from, to: range.to };
      } else merged.push(range);
    }
    byPartition.set(partition, merged);
  }
  return byPartition;
}

/**
 * The decoded messages of every range, a partition's fetched batch at a time (in offset order
 * within a partition). `ranges` is an epoch's ranges (one per partition) or a narrowed read
 * (`narrowReplay`: any number per partition, e.g. one offset per row id of a point read). Rows
 * carry their row ids; rejected messages are skipped, as the stream skipped them. Fails with
 * 72000 when the broker no longer has a message the source read (retention, a recreated topic),
 * with 08006 when it cannot be reached within the bound (transient failures are retried:
 * `ReplayRequests`) or the topic is gone.
 */
export async function* replayChunks(relation: RelationDef, ranges: ReplayRanges | readonly PartitionRange[], options: ReplayFetchOptions = {}): AsyncGenerator<ReplayChunk> {
  const pending = rangesByPartition(ranges);
  if (pending.size === 0) return;
  const kafka = kafkaOptions(relation.options ?? {});
  const name = `${relation.schema}.${relation.name}`;
  const where = `source "${relation.name}": cannot replay Kafka topic "${kafka.topic}" from ${kafka.brokers.join(',')}`;
  const signal = options.signal;
  const decoder = new MessageDecoder(sourceLayout(relation), kafka.maxMessageBytes, kafkaRowId);
  const cluster = newCluster(kafka, name);
  const requests = new ReplayRequests(cluster, where, signal);
  try {
    for (;;) {
      try {
        await requests.attempt(cluster.connect());
        await requests.attempt(cluster.addTargetTopic(kafka.topic));
        const known = new Set(cluster.findTopicPartitionMetadata(kafka.topic).map((partition) => partition.partitionId));
        if (known.size === 0) throw new SqlError(SqlState.connectionFailure, `${where}: the topic does not exist (deleted?)`);
        for (const [partition, list] of pending) {
          if (!known.has(partition)) throw missing(relation, kafka.topic, list[0]!, list[0]!.from, list[list.length - 1]!.to, 'the partition no longer exists');
        }
        await checkRetained(requests, cluster, relation, kafka.topic, pending);
        requests.succeeded();
        break;
      } catch (error) {
        await requests.recover(error);
      }
    }
    const next = new Map([...pending].map(([partition, list]) => [partition, list[0]!.from]));
    /** A partition whose record batch did not fit its share of the last request: the bytes to ask for. */
    const fetchBytes = new Map<number, number>();
    while (next.size > 0) {
      signal?.throwIfAborted();
      try {
        const leaders = cluster.findLeaderForPartitions(kafka.topic, [...next.keys()]);
        // One Fetch per leader for the partitions read in bulk; a partition read narrowly (a few
        // offsets: point reads, IN lists, short offset ranges) goes alone with a small size, first
        // in its request, so the broker sends its whole first record batch (KIP-74) however large.
        const calls: { nodeId: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[] = [];
        for (const [nodeId, partitions] of Object.entries(leaders)) {
          const bulk: { partition: number; fetchOffset: string; maxBytes: number }[] = [];
          for (const partition of partitions) {
            const at = next.get(partition)!;
            const maxBytes = fetchBytes.get(partition) ?? bytesFor(pending.get(partition)![0]!.to - at);
            const entry = { partition, fetchOffset: String(at), maxBytes };
            if (maxBytes < FETCH_MAX_BYTES_PER_PARTITION) calls.push({ nodeId, partitions: [entry] });
            else bulk.push(entry);
          }
          if (bulk.length > 0) calls.push({ nodeId, partitions: bulk });
        }
        const answers = await Promise.all(
          calls.map(async (call) => {
            const broker = await requests.attempt(cluster.findBroker({ nodeId: call.nodeId }));
            return requests.attempt(
              broker.fetch({ maxWaitTime: 100, minBytes: 1, maxBytes: FETCH_MAX_BYTES, isolationLevel: kafkajsInternals.isolation.READ_COMMITTED, topics: [{ topic: kafka.topic, partitions: call.partitions }] }),
            );
          }),
        );
        requests.succeeded();
        for (const { responses } of answers) {
          for (const response of responses) {
            for (const data of response.partitions) {
              const list = pending.get(data.partition);
              const fetchOffset = next.get(data.partition);
              if (list === undefined || fetchOffset === undefined) continue;
              const batch = new kafkajsInternals.Batch(kafka.topic, String(fetchOffset), data);
              if (batch.isEmptyIncludingFiltered()) {
                // Nothing at or after the offset: the broker's log ends below what the source read,
                if (BigInt(batch.highWatermark) <= fetchOffset) throw missing(relation, kafka.topic, list[0]!, fetchOffset, list[0]!.to, `the broker's log ends at offset ${batch.highWatermark}`);
                // or the record batch there is larger than this partition's share of the request
                // (the broker sent a part of it, which the client drops): ask for more bytes.
                // kafkajs's lastOffset() would say the high watermark here, skipping messages.
                const bytes = fetchBytes.get(data.partition) ?? SMALL_READ_BYTES;
                if (bytes < FETCH_MAX_BYTES) {
                  fetchBytes.set(data.partition, Math.min(FETCH_MAX_BYTES, Math.max(bytes, FETCH_MAX_BYTES_PER_PARTITION) * 2));
                  continue;
                }
              }
              fetchBytes.delete(data.partition);
              const chunk = decodeBatch(decoder, data.partition, batch.messages, list);
              const after = BigInt(batch.lastOffset()) + 1n;
              if (after <= fetchOffset) continue;
              // Past the ranges the batch covered; the next fetch starts at the first offset still wanted.
              while (list.length > 0 && list[0]!.to <= after) list.shift();
              if (list.length === 0) next.delete(data.partition);
              else next.set(data.partition, list[0]!.from > after ? list[0]!.from : after);
              if (chunk.rows.length > 0 || chunk.bytes > 0) yield chunk;
            }
          }
        }
      } catch (error) {
        await requests.recover(error);
      }
    }
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
}

/** The least a partition's fetch asks for (the broker still sends the whole first record batch of a request). */
export const SMALL_READ_BYTES = 64 << 10;
/** Bytes asked per offset still wanted in a partition's current range (a JSON message is ~100-200 bytes). */
const BYTES_PER_OFFSET = 512n;

/** A partition's fetch size for `offsets` still wanted in its current range: 64 KiB to 4 MiB. */
export function bytesFor(offsets: bigint): number {
  const bytes = offsets * BYTES_PER_OFFSET;
  return bytes <= BigInt(SMALL_READ_BYTES) ? SMALL_READ_BYTES : bytes >= BigInt(FETCH_MAX_BYTES_PER_PARTITION) ? FETCH_MAX_BYTES_PER_PARTITION : Number(bytes);
}

function decodeBatch(decoder: MessageDecoder, partition: number, messages: readonly FetchedMessage[], wanted: readonly PartitionRange[]): ReplayChunk {
  const offsets: bigint[] = [];
  const timestamps: number[] = [];
  const keys: (Buffer | null)[] = [];
  const values: (Buffer | null)[] = [];
  let bytes = 0;
  let at = 0;
  for (const message of messages) {
    const offset = BigInt(message.offset);
    while (at < wanted.length && offset >= wanted[at]!.to) at++;
    if (at >= wanted.length) break;
    if (offset < wanted[at]!.from) continue;
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
async function checkRetained(requests: ReplayRequests, cluster: Cluster, relation: RelationDef, topic: string, pending: ReadonlyMap<number, readonly PartitionRange[]>): Promise<void> {
  const partitions = [...pending.keys()].map((partition) => ({ partition }));
  const [lows] = await requests.attempt(cluster.fetchTopicsOffset([{ topic, partitions, fromBeginning: true }]));
  for (const [partition, list] of pending) {
    const range = list[0]!;
    const to = list[list.length - 1]!.to;
    const low = BigInt(lows?.partitions.find((entry) => entry.partition === partition)?.offset ?? '0');
    if (low > range.from) throw missing(relation, topic, range, range.from, low < to ? low : to, `the broker's log starts at offset ${low}`);
  }
}

/**
 * A replay fetched whole before a statement runs: each partition's rows in offset order. Reads at
 * the snapshot or AS OF an older epoch take the prefix below that epoch's positions.
 */
export class KafkaReplay {
  private constructor(private readonly partitions: ReadonlyMap<number, { readonly rows: Row[]; readonly offsets: bigint[] }>, private readonly rowIdAt: number) {}

  /** Fetches every range (the statement's snapshot); fails with 53200 past `limitBytes`. */
  static async fetch(relation: RelationDef, ranges: ReplayRanges | readonly PartitionRange[], options: ReplayFetchOptions = {}): Promise<KafkaReplay> {
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

// ---- What a plan reads of a replayed source: its scans' pushed filters narrow the replay ------

/** A scan of a replayed source in a plan: its pushed filter over its output columns. */
export interface ReplayScan {
  readonly filter: unknown;
  /** Relation column of each output column (undefined: the identity). */
  readonly projection: readonly number[] | undefined;
}

/** A replayed Kafka source a plan scans, with every scan of it. */
export interface KafkaReplayRead {
  readonly relation: RelationDef;
  readonly scans: readonly ReplayScan[];
}

/**
 * The replayed Kafka sources a planned statement scans: every `Scan` node anywhere in the plan
 * (subqueries inside expressions included) whose relation is one, with each scan's filter. The
 * plan is walked as plain data so this module need not know every plan shape.
 */
export function kafkaReplayReads(plan: unknown): readonly KafkaReplayRead[] {
  if (plan === null || typeof plan !== 'object') return NO_READS;
  // Plans are immutable and reused (prepared statements, the INSERT shape cache): walked once each.
  const cached = readsByPlan.get(plan);
  if (cached !== undefined) return cached;
  const found = new Map<number, { relation: RelationDef; scans: ReplayScan[] }>();
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
      if (isKafkaReplayed(relation)) {
        let read = found.get(relation.id);
        if (read === undefined) found.set(relation.id, (read = { relation, scans: [] }));
        read.scans.push({ filter: node['filter'], projection: Array.isArray(node['projection']) ? (node['projection'] as number[]) : undefined });
      }
    }
    for (const key in node) if (key !== 'relation' && key !== 'columns') walk(node[key]);
  };
  walk(plan);
  const reads = found.size === 0 ? NO_READS : [...found.values()];
  readsByPlan.set(plan, reads);
  return reads;
}

/** The replayed Kafka sources a planned statement scans (kafkaReplayReads without the filters). */
export function kafkaReplayedScans(plan: unknown): readonly RelationDef[] {
  const reads = kafkaReplayReads(plan);
  if (reads === NO_READS) return NO_SCANS;
  let scans = scansByReads.get(reads);
  if (scans === undefined) scansByReads.set(reads, (scans = reads.map((read) => read.relation)));
  return scans;
}

const NO_READS: readonly KafkaReplayRead[] = [];
const NO_SCANS: readonly RelationDef[] = [];
const readsByPlan = new WeakMap<object, readonly KafkaReplayRead[]>();
const scansByReads = new WeakMap<object, readonly RelationDef[]>();

/**
 * A set of messages a filter can match: partitions [pFrom, pTo) x offsets [from, to). A filter
 * becomes a union of boxes holding every message it can be true for (a superset: the filter still
 * runs on the rows read).
 */
interface Box {
  readonly pFrom: number;
  readonly pTo: number;
  readonly from: bigint;
  readonly to: bigint;
}

const NO_END = 1n << 63n;
const EVERY: Box = { pFrom: 0, pTo: MAX_PARTITIONS, from: 0n, to: NO_END };
const EVERYTHING: readonly Box[] = [EVERY];
/** At most this many boxes (an IN list of this many row ids); past it the replay reads everything. */
const MAX_BOXES = 10_000;
const INTEGER_TYPES = new Set(['int2', 'int4', 'int8']);

function isEvery(box: Box): boolean {
  return box.pFrom <= 0 && box.pTo >= MAX_PARTITIONS && box.from <= 0n && box.to >= NO_END;
}

function intersect(a: Box, b: Box): Box | undefined {
  const box = { pFrom: Math.max(a.pFrom, b.pFrom), pTo: Math.min(a.pTo, b.pTo), from: a.from > b.from ? a.from : b.from, to: a.to < b.to ? a.to : b.to };
  return box.pFrom < box.pTo && box.from < box.to ? box : undefined;
}

/** Expressions as plain data (planner/expression.ts), the few fields read here. */
interface ExpressionData {
  readonly kind: string;
  readonly args?: readonly ExpressionData[];
  readonly operator?: string;
  readonly index?: number;
  readonly value?: unknown;
  readonly input?: ExpressionData;
  readonly type?: { readonly name: string };
}

/** Which message coordinate a relation column is. */
interface Coordinates {
  readonly rowId: number | undefined;
  readonly partition: number | undefined;
  readonly offset: number | undefined;
}

/** An integer literal, parameter or integer cast of one; null for NULL; undefined for anything else. */
function integerOf(e: ExpressionData, parameters: readonly unknown[]): bigint | null | undefined {
  if (e.type === undefined || !INTEGER_TYPES.has(e.type.name)) return undefined;
  let value: unknown;
  if (e.kind === 'Literal') value = e.value;
  else if (e.kind === 'Parameter') value = parameters[e.index!];
  else if (e.kind === 'Cast' && e.input !== undefined) return integerOf(e.input, parameters);
  else return undefined;
  if (value === null) return null;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  return undefined;
}

const FLIPPED: Readonly<Record<string, string>> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

function clampPartition(value: bigint): number {
  return value <= 0n ? 0 : value >= BigInt(MAX_PARTITIONS) ? MAX_PARTITIONS : Number(value);
}

/** `coordinate op constant` as boxes; undefined when the comparison is not one of those. */
function comparisonBoxes(e: ExpressionData, projection: readonly number[] | undefined, at: Coordinates, parameters: readonly unknown[]): readonly Box[] | undefined {
  const args = e.args;
  if (e.kind !== 'Call' || e.operator === undefined || FLIPPED[e.operator] === undefined || args === undefined || args.length !== 2) return undefined;
  let [column, constant] = args as [ExpressionData, ExpressionData];
  let op = e.operator;
  if (column.kind !== 'Column') {
    [column, constant] = [constant, column];
    op = FLIPPED[op]!;
  }
  if (column.kind !== 'Column' || column.type === undefined || !INTEGER_TYPES.has(column.type.name)) return undefined;
  const position = projection === undefined ? column.index : projection[column.index!];
  if (position === undefined) return undefined;
  const value = integerOf(constant, parameters);
  if (value === undefined) return undefined;
  if (value === null) return []; // a comparison with NULL is never true
  const box = (partial: Partial<Box>): readonly Box[] => {
    const made = intersect(EVERY, { ...EVERY, ...partial });
    return made === undefined ? [] : [made];
  };
  if (position === at.rowId) {
    // Row ids are offset * 2^16 + partition: offset-major, so a range of row ids is within a range of offsets.
    const offset = value >> PARTITION_BITS;
    switch (op) {
      case '=': {
        if (value < 0n) return [];
        const partition = Number(value & BigInt(MAX_PARTITIONS - 1));
        return box({ pFrom: partition, pTo: partition + 1, from: offset, to: offset + 1n });
      }
      case '>':
      case '>=':
        return box({ from: offset });
      case '<':
        return value <= 0n ? [] : box({ to: ((value - 1n) >> PARTITION_BITS) + 1n });
      default:
        return value < 0n ? [] : box({ to: offset + 1n });
    }
  }
  if (position === at.partition) {
    switch (op) {
      case '=':
        return value < 0n || value >= BigInt(MAX_PARTITIONS) ? [] : box({ pFrom: Number(value), pTo: Number(value) + 1 });
      case '>':
        return box({ pFrom: clampPartition(value + 1n) });
      case '>=':
        return box({ pFrom: clampPartition(value) });
      case '<':
        return box({ pTo: clampPartition(value) });
      default:
        return box({ pTo: clampPartition(value + 1n) });
    }
  }
  if (position === at.offset) {
    switch (op) {
      case '=':
        return box({ from: value, to: value + 1n });
      case '>':
        return box({ from: value + 1n });
      case '>=':
        return box({ from: value });
      case '<':
        return box({ to: value });
      default:
        return box({ to: value + 1n });
    }
  }
  return undefined;
}

/** The boxes holding every message `e` can be true for (EVERYTHING when it names no coordinate). */
function boxesOf(e: ExpressionData, projection: readonly number[] | undefined, at: Coordinates, parameters: readonly unknown[]): readonly Box[] {
  switch (e.kind) {
    case 'And': {
      let boxes: readonly Box[] = EVERYTHING;
      for (const arg of e.args ?? []) {
        const next = boxesOf(arg, projection, at, parameters);
        if (next.length === 1 && isEvery(next[0]!)) continue;
        if (boxes.length === 1 && isEvery(boxes[0]!)) {
          boxes = next;
          continue;
        }
        // Too many pairs: either side alone still holds every match.
        if (boxes.length * next.length > MAX_BOXES) {
          if (next.length < boxes.length) boxes = next;
          continue;
        }
        const both: Box[] = [];
        for (const a of boxes) for (const b of next) {
          const box = intersect(a, b);
          if (box !== undefined) both.push(box);
        }
        boxes = both;
      }
      return boxes;
    }
    case 'Or': {
      const boxes: Box[] = [];
      for (const arg of e.args ?? []) {
        const next = boxesOf(arg, projection, at, parameters);
        if (next.some(isEvery)) return EVERYTHING;
        boxes.push(...next);
        if (boxes.length > MAX_BOXES) return EVERYTHING;
      }
      return boxes;
    }
    case 'Literal':
      // WHERE false / NULL (a folded contradiction) matches nothing.
      return e.value === false || e.value === null ? [] : EVERYTHING;
    default:
      return comparisonBoxes(e, projection, at, parameters) ?? EVERYTHING;
  }
}

/**
 * What a statement needs of a replayed source at the epoch `ranges`: the messages its scans'
 * filters can match. A point read by row id (`_row_id = x`, an IN list of them) reads one offset of
 * one partition per id; comparisons of the row id, the `INCLUDE partition` and `INCLUDE offset`
 * columns with integer constants or parameters (=, <, <=, >, >=, AND, OR, IN, BETWEEN) narrow the
 * partitions and offsets read. Anything else, or one scan without such a filter, reads `ranges`
 * whole. Never more than `ranges`: a message past the epoch's committed offsets does not exist
 * as of that epoch.
 */
export function narrowReplay(read: KafkaReplayRead, ranges: ReplayRanges, parameters: readonly unknown[] = []): ReplayRanges | readonly PartitionRange[] {
  const layout = sourceLayout(read.relation);
  const at: Coordinates = { rowId: layout.rowIdPosition, partition: layout.partitionPosition, offset: layout.offsetPosition };
  const boxes: Box[] = [];
  for (const scan of read.scans) {
    if (scan.filter === undefined || scan.filter === null || typeof scan.filter !== 'object') return ranges;
    const found = boxesOf(scan.filter as ExpressionData, scan.projection, at, parameters);
    if (found.some(isEvery)) return ranges;
    boxes.push(...found);
    if (boxes.length > MAX_BOXES) return ranges;
  }
  const narrowed: PartitionRange[] = [];
  for (const range of ranges.values()) {
    for (const box of boxes) {
      if (range.partition < box.pFrom || range.partition >= box.pTo) continue;
      const from = range.from > box.from ? range.from : box.from;
      const to = range.to < box.to ? range.to : box.to;
      if (to > from) narrowed.push({ partition: range.partition, from, to });
    }
  }
  return narrowed;
}

export { MAX_PARTITIONS as KAFKA_REPLAY_MAX_PARTITIONS };
