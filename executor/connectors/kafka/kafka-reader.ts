// The Kafka connector behind our SourceReader interface, on kafkajs (why kafkajs: README.md).
//
// Offsets are oxbow's, not Kafka's: each start joins a fresh consumer group (so a restarted
// process never waits for its killed predecessor's session to expire), subscribes from the
// beginning and seeks every known partition to the next offset oxbow committed; a partition it has
// never seen (one added to the topic later) is read from its start. The manager also drops any
// message below the committed offset, so a late seek can cost a re-read but never a duplicate.
// All partitions are fetched concurrently (kafkajs fetches every assigned partition of the broker
// in one request and `partitionsConsumedConcurrently` hands them over in parallel); new partitions
// are picked up by a metadata refresh every few seconds.
//
// Trouble (unreachable broker, deleted topic) is reported to the listener and retried with a
// backoff forever: a source never gives up. A monitor polls the topic's offsets for the high
// watermarks (lag) and notices a topic that disappeared.

import kafkajs from 'kafkajs';
import type { Admin, Consumer, EachBatchPayload } from 'kafkajs';
import type { KafkaOptions } from './kafka-options.js';
import { kafkaSocketFactory } from '../dns-lookup.js';
import type { PartitionOffsets, RawMessageBatch, SourceListener, SourceReader } from '../source.js';

const { Kafka, logLevel } = kafkajs;

const METADATA_MAX_AGE_MS = 3000;
const MONITOR_INTERVAL_MS = 2000;
const RETRY_BACKOFF_MS = 1000;
const MAX_RETRY_BACKOFF_MS = 10_000;
/** How often the group coordinator is asked whether it is ready, and for how long at most. */
const COORDINATOR_POLL_MS = 100;
const COORDINATOR_WAIT_MS = 30_000;
/**
 * kafkajs retries a JoinGroup answered "not the correct coordinator" with this policy: short
 * first waits (the coordinator is usually there within a second), and never restarts a crashed
 * consumer itself: its restart would lose our seeks and read the partitions from their start (the
 * manager drops those messages, but they are fetched and decoded again); our loop starts a new
 * consumer at our positions instead.
 */
const CONSUMER_RETRY = { retries: 10, initialRetryTime: 100, maxRetryTime: 1000, restartOnFailure: async (): Promise<boolean> => false };

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class KafkaReader implements SourceReader {
  private readonly kafka;
  private readonly stopping = new AbortController();
  /** Next offset to read per partition: the resume point, advanced as batches are handed over. */
  private readonly positions = new Map<number, bigint>();
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private loops: Promise<void>[] = [];
  /** Ends the running consumer so the loop starts a new one (new partitions appeared). */
  private restart: ((reason: string) => void) | undefined;
  /** Partition count the running consumer was started with (undefined until known). */
  private partitionCount: number | undefined;

  constructor(
    private readonly options: KafkaOptions,
    private readonly name: string,
  ) {
    this.kafka = new Kafka({
      clientId: `oxbow-${name}`,
      brokers: [...options.brokers],
      logLevel: logLevel.NOTHING,
      connectionTimeout: options.connectTimeoutMs,
      requestTimeout: options.requestTimeoutMs,
      socketFactory: kafkaSocketFactory(options.connectTimeoutMs),
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 3000 },
    });
  }

  /** The offsets the startup mode names, for a source's first start. */
  async startOffsets(): Promise<Map<number, bigint>> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const bounds = await admin.fetchTopicOffsets(this.options.topic);
      const out = new Map<number, bigint>();
      const startup = this.options.startup;
      if (startup.kind === 'timestamp') {
        const byTime = await admin.fetchTopicOffsetsByTimestamp(this.options.topic, startup.millis);
        for (const entry of byTime) {
          const high = bounds.find((bound) => bound.partition === entry.partition)?.high ?? '0';
          // -1: no message at or after the timestamp yet: start at the end.
          out.set(entry.partition, BigInt(entry.offset === '-1' ? high : entry.offset));
        }
      } else {
        for (const bound of bounds) out.set(bound.partition, BigInt(startup.kind === 'earliest' ? bound.low : bound.high));
      }
      return out;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async start(resume: PartitionOffsets, listener: SourceListener): Promise<void> {
    for (const [partition, offset] of resume) this.positions.set(partition, offset);
    this.loops = [this.consumeLoop(listener), this.monitorLoop(listener)];
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.consumer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    await Promise.all(this.loops);
  }

  private async consumeLoop(listener: SourceListener): Promise<void> {
    const signal = this.stopping.signal;
    let backoffMs = RETRY_BACKOFF_MS;
    while (!signal.aborted) {
      const groupId = `oxbow-${this.name}-${process.pid}-${Date.now()}`;
      const consumer = this.kafka.consumer({
        groupId,
        metadataMaxAge: METADATA_MAX_AGE_MS,
        allowAutoTopicCreation: false,
        maxBytes: 16 << 20,
        maxBytesPerPartition: 4 << 20,
        maxWaitTimeInMs: 200,
        retry: CONSUMER_RETRY,
      });
      this.consumer = consumer;
      let crashed!: (message: string) => void;
      const crash = new Promise<string>((resolve) => (crashed = resolve));
      this.restart = crashed;
      this.partitionCount = undefined;
      consumer.on(consumer.events.CRASH, (event) => {
        const message = `Kafka consumer for topic "${this.options.topic}" failed: ${messageOf(event.payload.error)}`;
        listener.trouble(message);
        if (!event.payload.restart) crashed(message);
      });
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        // The partitions this consumer reads; the monitor restarts it when the topic grows.
        this.partitionCount = event.payload.memberAssignment[this.options.topic]?.length ?? 0;
        listener.recovered();
      });
      try {
        await this.coordinatorReady(groupId, signal);
        if (signal.aborted) return;
        await consumer.connect();
        await consumer.subscribe({ topic: this.options.topic, fromBeginning: true });
        await consumer.run({
          autoCommit: true,
          partitionsConsumedConcurrently: 8,
          eachBatchAutoResolve: true,
          eachBatch: (payload) => this.deliver(payload, listener),
        });
        for (const [partition, offset] of this.positions) consumer.seek({ topic: this.options.topic, partition, offset: String(offset) });
        backoffMs = RETRY_BACKOFF_MS;
        await Promise.race([crash, sleep(2 ** 31 - 1, signal)]);
      } catch (error) {
        listener.trouble(`Kafka topic "${this.options.topic}" at ${this.options.brokers.join(',')}: ${messageOf(error)}`);
      }
      await consumer.disconnect().catch(() => undefined);
      if (signal.aborted) return;
      await sleep(backoffMs, signal);
      backoffMs = Math.min(backoffMs * 2, MAX_RETRY_BACKOFF_MS);
    }
  }

  /**
   * Waits until the coordinator of `groupId` answers for it. A fresh group's coordinator is a
   * partition of __consumer_offsets; on a new broker that topic is created at the first request
   * and loaded, and until then a JoinGroup fails with "coordinator not available", "not the
   * correct coordinator" or "the coordinator is loading". kafkajs treats the last as fatal for
   * the consumer (a crash, then a restart from scratch, seconds under load), so ask first with
   * DescribeGroups, which costs nothing once the coordinator is there.
   */
  private async coordinatorReady(groupId: string, signal: AbortSignal): Promise<void> {
    const admin = this.kafka.admin({ retry: { retries: 0 } });
    try {
      await admin.connect();
      const deadline = Date.now() + COORDINATOR_WAIT_MS;
      for (;;) {
        try {
          await admin.describeGroups([groupId]);
          return;
        } catch (error) {
          // Past the deadline, the consumer's join reports whatever is wrong.
          if (signal.aborted || Date.now() > deadline) return;
          // A broker that cannot be reached is the consumer's to report; anything else (not
          // available, not the coordinator, loading, retries exhausted on those) means not yet.
          if (/Connection|BrokerNotFound/.test((error as Error).name ?? '')) return;
          await sleep(COORDINATOR_POLL_MS, signal);
        }
      }
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private async deliver({ batch }: EachBatchPayload, listener: SourceListener): Promise<void> {
    const messages = batch.messages;
    const count = messages.length;
    const offsets: bigint[] = new Array(count);
    const timestamps: number[] = new Array(count);
    const keys: (Buffer | null)[] = new Array(count);
    const values: (Buffer | null)[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const message = messages[i]!;
      offsets[i] = BigInt(message.offset);
      timestamps[i] = Number(message.timestamp);
      keys[i] = message.key ?? null;
      values[i] = message.value ?? null;
    }
    const raw: RawMessageBatch = { partition: batch.partition, offsets, timestamps, keys, values, highWatermark: BigInt(batch.highWatermark) };
    if (count > 0) this.positions.set(batch.partition, offsets[count - 1]! + 1n);
    await listener.batch(raw);
  }

  private async monitorLoop(listener: SourceListener): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      await sleep(MONITOR_INTERVAL_MS, signal);
      if (signal.aborted) return;
      try {
        if (this.admin === undefined) {
          this.admin = this.kafka.admin();
          await this.admin.connect();
        }
        const topics = await this.admin.listTopics();
        if (!topics.includes(this.options.topic)) {
          listener.trouble(`Kafka topic "${this.options.topic}" does not exist (deleted?); waiting for it`);
          continue;
        }
        const bounds = await this.admin.fetchTopicOffsets(this.options.topic);
        for (const bound of bounds) listener.highWatermark(bound.partition, BigInt(bound.high));
        // kafkajs rejoins by itself when its metadata refresh (metadataMaxAge) shows new
        // partitions, but only while it is fetching: do not rely on it and start a new consumer,
        // which is assigned every partition (the new ones from their start, the others at their
        // positions). The admin's offsets come from cached metadata: ask the broker for the count.
        const metadata = await this.admin.fetchTopicMetadata({ topics: [this.options.topic] });
        const count = metadata.topics[0]?.partitions.length ?? 0;
        if (this.partitionCount !== undefined && count > this.partitionCount) {
          this.partitionCount = count;
          this.restart?.('new partitions');
        }
      } catch (error) {
        listener.trouble(`Kafka broker ${this.options.brokers.join(',')} unreachable: ${messageOf(error)}`);
        await this.admin?.disconnect().catch(() => undefined);
        this.admin = undefined;
      }
    }
  }
}
