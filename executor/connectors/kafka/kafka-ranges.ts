// Kafka partitions fetched by a source fragment's owners (executor/cluster/README.md, "Kafka
// partitions fetched by the nodes"): the leader's source reads no message, it asks the broker for
// each partition's last stable offset (`StableOffsets`: ListOffsets, read committed) and hands
// the fragment offset ranges [position, min(LSO, position + budget)); the owner a range goes to (a
// thread of the leader or a node's share) fetches exactly those messages (`RangeFetcher`) with a
// kafkajs client of its own and decodes them as the Kafka worker's messages are.
//
// Both use kafkajs's low-level cluster and broker objects, as a replay does (kafka-replay.ts: no
// consumer group to join, one Fetch per leader for its partitions), with the consumer's isolation
// level (read committed) and kafkajs's own `Batch` filtering (control records, aborted
// transactions): the messages of a range are those the Kafka worker would have read, whoever
// fetches them, and the row ids (`kafkaRowId`: offset and partition) are the same.

import type { RelationDef } from '../../../sql/catalog.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { RawMessageBatch } from '../source.js';
import { kafkaOptions, type KafkaOptions } from './kafka-options.js';
import { bytesFor, FETCH_MAX_BYTES, FETCH_MAX_BYTES_PER_PARTITION, kafkajsInternals, newCluster, ReplayRequests, SMALL_READ_BYTES, type Cluster } from './kafka-replay.js';

/** How often the partitions are listed again (new partitions of the topic). */
const METADATA_REFRESH_MS = 3000;
/** A record's bytes in a record batch besides its key and value (offset and timestamp deltas, lengths, headers count), about. */
const RECORD_OVERHEAD_BYTES = 16;
/** The least a range's fetch asks for once the partition's message size is known. */
const LEAST_FETCH_BYTES = 16 << 10;

/**
 * A partition's fetch size for `offsets` still wanted: what they took so far (`bytesPerOffset`,
 * measured on the partition's earlier fetches) and a fifth more, so a fetch does not bring (and
 * kafkajs does not parse) messages past the range; 64 KiB before anything is known.
 */
function rangeBytes(offsets: bigint, bytesPerOffset: number | undefined): number {
  if (bytesPerOffset === undefined) return Math.min(SMALL_READ_BYTES, bytesFor(offsets));
  const bytes = Math.ceil(Number(offsets) * bytesPerOffset * 1.2) + 1024;
  return Math.min(FETCH_MAX_BYTES_PER_PARTITION, Math.max(LEAST_FETCH_BYTES, bytes));
}

/**
 * An owner's fetches of offset ranges: one client kept open across epochs (reconnected after a
 * failure). Each range's messages come back in offset order, a fetched batch at a time.
 */
export class RangeFetcher {
  private readonly kafka: KafkaOptions;
  private readonly name: string;
  private readonly where: string;
  private cluster: Cluster | undefined;
  /** Messages handed over (tests, EXPLAIN). */
  fetched = 0;
  /** Per partition, the bytes its messages took per offset on the last fetch (the next fetch's size). */
  private readonly bytesPerOffset = new Map<number, number>();

  constructor(private readonly relation: RelationDef) {
    this.kafka = kafkaOptions(relation.options ?? {});
    this.name = `${relation.schema}.${relation.name}`;
    this.where = `source "${relation.name}": cannot fetch Kafka topic "${this.kafka.topic}" from ${this.kafka.brokers.join(',')}`;
  }

  /**
   * Fetches the messages [from, to) of each (partition, from, to) triple of `ranges` (offsets as
   * numbers) and gives each fetched batch to `onBatch`, in offset order within a partition. Fails
   * with 08006 when the broker cannot be reached within the bound, with 72000 when it no longer
   * has (or does not yet have) offsets of a range.
   */
  async fetch(ranges: readonly number[], onBatch: (batch: RawMessageBatch) => void): Promise<void> {
    const pending = new Map<number, { next: bigint; to: bigint }[]>();
    for (let at = 0; at + 2 < ranges.length; at += 3) {
      const partition = ranges[at]!;
      const from = BigInt(ranges[at + 1]!);
      const to = BigInt(ranges[at + 2]!);
      if (to <= from) continue;
      let list = pending.get(partition);
      if (list === undefined) pending.set(partition, (list = []));
      list.push({ next: from, to });
    }
    if (pending.size === 0) return;
    for (const list of pending.values()) list.sort((a, b) => (a.next < b.next ? -1 : a.next > b.next ? 1 : 0));
    let cluster = this.cluster;
    if (cluster === undefined) {
      cluster = newCluster(this.kafka, this.name);
      const requests = new ReplayRequests(cluster, this.where, undefined);
      for (;;) {
        try {
          await requests.attempt(cluster.connect());
          await requests.attempt(cluster.addTargetTopic(this.kafka.topic));
          requests.succeeded();
          break;
        } catch (error) {
          try {
            await requests.recover(error);
          } catch (final) {
            await cluster.disconnect().catch(() => undefined);
            throw final;
          }
        }
      }
      this.cluster = cluster;
    }
    const requests = new ReplayRequests(cluster, this.where, undefined);
    const fetchBytes = new Map<number, number>();
    const topic = this.kafka.topic;
    try {
      while (pending.size > 0) {
        try {
          const leaders = cluster.findLeaderForPartitions(topic, [...pending.keys()]);
          const answers = await Promise.all(
            Object.entries(leaders).map(async ([nodeId, partitions]) => {
              const broker = await requests.attempt(cluster.findBroker({ nodeId }));
              const wanted = partitions.map((partition) => {
                const range = pending.get(partition)![0]!;
                return { partition, fetchOffset: String(range.next), maxBytes: fetchBytes.get(partition) ?? rangeBytes(range.to - range.next, this.bytesPerOffset.get(partition)) };
              });
              return requests.attempt(
                broker.fetch({ maxWaitTime: 100, minBytes: 1, maxBytes: FETCH_MAX_BYTES, isolationLevel: kafkajsInternals.isolation.READ_COMMITTED, topics: [{ topic, partitions: wanted }] }),
              );
            }),
          );
          requests.succeeded();
          for (const { responses } of answers) {
            for (const response of responses) {
              for (const data of response.partitions) {
                const list = pending.get(data.partition);
                const range = list?.[0];
                if (list === undefined || range === undefined) continue;
                const fetchOffset = range.next;
                const batch = new kafkajsInternals.Batch(topic, String(fetchOffset), data);
                if (batch.isEmptyIncludingFiltered()) {
                  // The leader cut the range below the last stable offset: the broker holds it, or held it.
                  if (BigInt(batch.highWatermark) <= fetchOffset) throw this.missing(data.partition, fetchOffset, range.to, `the broker's log ends at offset ${batch.highWatermark}`);
                  // A record batch larger than this partition's share of the request: ask for more.
                  const bytes = fetchBytes.get(data.partition) ?? SMALL_READ_BYTES;
                  if (bytes >= FETCH_MAX_BYTES) throw this.missing(data.partition, fetchOffset, range.to, 'a record batch larger than the fetch size');
                  fetchBytes.set(data.partition, Math.min(FETCH_MAX_BYTES, Math.max(bytes, FETCH_MAX_BYTES_PER_PARTITION) * 2));
                  continue;
                }
                fetchBytes.delete(data.partition);
                const offsets: bigint[] = [];
                const timestamps: number[] = [];
                const keys: (Buffer | null)[] = [];
                const values: (Buffer | null)[] = [];
                let bytes = 0;
                for (const message of batch.messages) {
                  const offset = BigInt(message.offset);
                  if (offset < fetchOffset) continue;
                  if (offset >= range.to) break;
                  offsets.push(offset);
                  timestamps.push(Number(message.timestamp));
                  keys.push(message.key ?? null);
                  values.push(message.value ?? null);
                  bytes += (message.key?.length ?? 0) + (message.value?.length ?? 0) + RECORD_OVERHEAD_BYTES;
                }
                if (offsets.length > 0) this.bytesPerOffset.set(data.partition, bytes / offsets.length);
                const after = BigInt(batch.lastOffset()) + 1n;
                if (after <= fetchOffset) continue;
                range.next = after;
                if (range.next >= range.to) list.shift();
                if (list.length === 0) pending.delete(data.partition);
                if (offsets.length > 0) {
                  this.fetched += offsets.length;
                  onBatch({ partition: data.partition, offsets, timestamps, keys, values, highWatermark: BigInt(batch.highWatermark) });
                }
              }
            }
          }
        } catch (error) {
          await requests.recover(error);
        }
      }
    } catch (error) {
      // A client that failed is not reused: the next fetch connects again.
      this.cluster = undefined;
      await cluster.disconnect().catch(() => undefined);
      throw error;
    }
  }

  private missing(partition: number, from: bigint, to: bigint, why: string): SqlError {
    return new SqlError(SqlState.snapshotTooOld, `source "${this.relation.name}": Kafka topic "${this.kafka.topic}" partition ${partition} has no offsets ${from} to ${to - 1n} (${why})`);
  }

  async close(): Promise<void> {
    const cluster = this.cluster;
    this.cluster = undefined;
    await cluster?.disconnect().catch(() => undefined);
  }
}

/** The leader's reads of each partition's last stable offset (and the log start of partitions it has no position for). */
export class StableOffsets {
  private cluster: Cluster | undefined;
  private refreshedAt = 0;

  constructor(
    private readonly kafka: KafkaOptions,
    private readonly name: string,
  ) {}

  /** Per partition of the topic: its last stable offset and, for a partition not in `known`, its log start. */
  async read(known: ReadonlyMap<number, bigint>): Promise<{ stable: Map<number, bigint>; starts: Map<number, bigint> }> {
    const topic = this.kafka.topic;
    let cluster = this.cluster;
    try {
      if (cluster === undefined) {
        cluster = newCluster(this.kafka, this.name);
        await cluster.connect();
        await cluster.addTargetTopic(topic);
        this.cluster = cluster;
        this.refreshedAt = Date.now();
      } else if (Date.now() - this.refreshedAt > METADATA_REFRESH_MS) {
        await cluster.refreshMetadata();
        this.refreshedAt = Date.now();
      }
      const partitions = cluster.findTopicPartitionMetadata(topic).map((entry) => ({ partition: entry.partitionId }));
      if (partitions.length === 0) throw new Error(`Kafka topic "${topic}" does not exist (deleted?)`);
      const [highs] = await cluster.fetchTopicsOffset([{ topic, partitions, fromBeginning: false }]);
      const stable = new Map<number, bigint>();
      for (const entry of highs?.partitions ?? []) stable.set(entry.partition, BigInt(entry.offset));
      const starts = new Map<number, bigint>();
      const unknown = partitions.filter(({ partition }) => !known.has(partition));
      if (unknown.length > 0) {
        const [lows] = await cluster.fetchTopicsOffset([{ topic, partitions: unknown, fromBeginning: true }]);
        for (const entry of lows?.partitions ?? []) starts.set(entry.partition, BigInt(entry.offset));
      }
      return { stable, starts };
    } catch (error) {
      this.cluster = undefined;
      await cluster?.disconnect().catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    const cluster = this.cluster;
    this.cluster = undefined;
    await cluster?.disconnect().catch(() => undefined);
  }
}
