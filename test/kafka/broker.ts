// A real Apache Kafka broker for the Kafka tests: `scripts/kafka.mjs` (KRaft, from Maven Central
// jars) on a free loopback port pair (the broker's port and the controller's, port + 1). It never
// skips: when the broker cannot start, startBroker throws and the test file fails.
// Also the kafkajs producer/admin helpers the tests use to create topics, produce messages and read
// back what sinks wrote.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import type { Admin, Producer } from 'kafkajs';
import { waitFor } from '../support/wait-for.js';
import { freePort } from '../support/free-port.js';
export { listensOn } from '../support/listens-on.js';

const { Kafka, logLevel } = kafkajs;
/** The broker dedups a retried batch by producer id and sequence number. */
const EXACTLY_ONCE_PRODUCER = { allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 } as const;
const SCRIPT = fileURLToPath(new URL('../../scripts/kafka.mjs', import.meta.url));

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port p with p and p + 1 both free on 127.0.0.1 (the broker's and its controller's; bench/kafka-replay.ts too). */
export async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await freePort();
    if (port < 65534 && (await listenable(port + 1))) return port;
  }
  throw new Error('no free port pair for the Kafka broker');
}

export interface Broker {
  readonly port: number;
  /** The broker's process id (from the script's pid file). */
  readonly pid: number;
  /** host:port for properties.bootstrap.server */
  readonly bootstrap: string;
  readonly admin: Admin;
  readonly producer: Producer;
  createTopic(topic: string, partitions: number): Promise<void>;
  /** Sends messages; `partition` pins them, `timestamp` is milliseconds. */
  send(topic: string, messages: readonly { value: string | Buffer | null; key?: string | null; partition?: number; timestamp?: number }[]): Promise<void>;
  /** Sends with a new producer (fresh metadata: after partitions were added). */
  sendFresh(topic: string, messages: readonly { value: string; partition: number }[]): Promise<void>;
  /**
   * The committed (read_committed) messages of a one-partition topic as `key -> value` lines in
   * offset order (null for a missing key or value), once there are at least `count`.
   */
  readTopic(topic: string, count: number): Promise<string[]>;
  /** Stops the broker and starts it again on the same port and data (topics and messages kept). */
  restart(): void;
  stop(): Promise<void>;
}

/**
 * Runs scripts/kafka.mjs for `port` on behalf of this test process (`--owner`: the port pair stays
 * claimed while it lives, no other file's start or stop touches it); a start returns the broker's pid.
 */
function runScript(port: number, extra: readonly string[]): number {
  const started = spawnSync(process.execPath, [SCRIPT, '--port', String(port), '--owner', String(process.pid), '--timeout-ms', '120000', ...extra], { encoding: 'utf8' });
  const ready = new RegExp(`kafka ready: 127\\.0\\.0\\.1:${port} pid (\\d+)$`, 'm').exec(started.stdout);
  if (started.status !== 0 || ready === null) {
    throw new Error(`the Kafka broker did not start (exit ${started.status}):\n${started.stdout}\n${started.stderr}`);
  }
  return Number(ready[1]);
}

/** Stops this process's broker on `port` (by the pid its start recorded); `keepClaim` for a start again on the same data. */
export function stopBroker(port: number, options: { readonly keepClaim?: boolean } = {}): void {
  const stopped = spawnSync(process.execPath, [SCRIPT, '--stop', '--port', String(port), '--owner', String(process.pid), ...(options.keepClaim === true ? ['--keep-claim'] : [])], { encoding: 'utf8' });
  if (stopped.status !== 0) throw new Error(`the Kafka broker on ${port} did not stop (exit ${stopped.status}):\n${stopped.stdout}\n${stopped.stderr}`);
}

/** Starts this process's broker on `port` again on its data (after `stopBroker(port, { keepClaim: true })`); its new pid. */
export function restartBroker(port: number): number {
  return runScript(port, ['--keep-data']);
}

export interface BrokerOptions {
  /** The broker's port (a free pair when absent). */
  readonly port?: number;
  /** The port the broker advertises (clients reconnect there): a fault proxy's in front of it. */
  readonly advertisedPort?: number;
}

/** Starts the broker on `options.port`, or on a free pair: another pair when that one was taken meanwhile. */
async function startOnPort(options: BrokerOptions): Promise<{ port: number; pid: number }> {
  const extra = options.advertisedPort === undefined ? [] : ['--advertised-port', String(options.advertisedPort)];
  if (options.port !== undefined) return { port: options.port, pid: runScript(options.port, extra) };
  // The pair is free when probed; a process of another test file (they run at once) can bind one of
  // the two, or claim it for its broker, before this start does: then it starts on a fresh pair.
  for (let attempt = 1; ; attempt++) {
    const port = await freePortPair();
    try {
      return { port, pid: runScript(port, extra) };
    } catch (error) {
      if (attempt >= 5 || !portTaken(port, error)) throw error;
    }
  }
}

/**
 * True when a start on `port` failed because the pair was taken: claimed by another process's
 * broker (scripts/kafka.mjs refused it), bound by another process first (the broker's log says so),
 * or the broker exited during its start (its log may say nothing: see below).
 */
export function portTaken(port: number, error: unknown): boolean {
  if (/is claimed by process/.test(String((error as Error).message))) return true;
  // Kafka 4 logs nothing without a log4j2 configuration (SLF4J falls back to NOP), so a bind lost
  // to another process shows only as an early exit: that is retried on a fresh pair too.
  if (/broker exited during start/.test(String((error as Error).message))) return true;
  try {
    return /BindException|Address already in use/.test(readFileSync(join(kafkaCache(), `run-${port}`, 'kafka.log'), 'utf8'));
  } catch {
    return false;
  }
}

export async function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  const started = await startOnPort(options);
  const port = started.port;
  let pid = started.pid;
  const bootstrap = `127.0.0.1:${port}`;
  const kafka = new Kafka({ clientId: 'oxbow-test', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  // Idempotent: a produce request the client retries (a timeout on a loaded machine, or one
  // partition of a multi-partition request not served yet while the others were appended) must not
  // append a message twice, or every count the tests compute from what they sent is off by one
  // (the flaky "picks up partitions added to the topic" read partition 2's only message twice).
  const producer = kafka.producer(EXACTLY_ONCE_PRODUCER);
  await producer.connect();
  return {
    port,
    get pid() {
      return pid;
    },
    bootstrap,
    admin,
    producer,
    async createTopic(topic, partitions) {
      // On a loaded machine kafkajs' own wait for the leaders can give up ("This server does not
      // host this topic-partition"): then wait here until every partition has a leader.
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true }).catch(() => undefined);
      await waitFor(`topic ${topic} with ${partitions} partitions led`, async () => {
        const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
        const led = metadata.topics[0]?.partitions.filter((partition) => partition.leader >= 0).length ?? 0;
        return led === partitions ? true : undefined;
      });
    },
    async send(topic, messages) {
      const request = {
        topic,
        messages: messages.map((message) => ({
          value: message.value,
          key: message.key ?? null,
          ...(message.partition === undefined ? {} : { partition: message.partition }),
          ...(message.timestamp === undefined ? {} : { timestamp: String(message.timestamp) }),
        })),
      };
      // A topic just created may not be served yet on a loaded machine (kafkajs gives up after its
      // own retries): sending again reuses the failed attempt's sequence numbers (kafkajs rolls
      // them back), so a partition that did append it is not appended twice.
      for (let attempt = 1; ; attempt++) {
        try {
          await producer.send(request);
          return;
        } catch (error) {
          const failure = error as { type?: string; cause?: { type?: string } };
          const type = failure.type ?? failure.cause?.type;
          if (attempt >= 20 || (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE' && type !== 'NOT_LEADER_FOR_PARTITION')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    },
    async sendFresh(topic, messages) {
      const fresh = kafka.producer(EXACTLY_ONCE_PRODUCER);
      await fresh.connect();
      try {
        await fresh.send({ topic, messages: messages.map((message) => ({ value: message.value, partition: message.partition })) });
      } finally {
        await fresh.disconnect();
      }
    },
    async readTopic(topic, count) {
      const consumer = kafka.consumer({ groupId: `read-${topic}-${Date.now()}`, readUncommitted: false });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const seen: string[] = [];
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(`${message.key?.toString() ?? 'null'} -> ${message.value?.toString() ?? 'null'}`) });
      try {
        return await waitFor(`${count} messages in ${topic}`, async () => (seen.length >= count ? [...seen] : undefined));
      } finally {
        await consumer.disconnect();
      }
    },
    restart() {
      stopBroker(port, { keepClaim: true });
      pid = restartBroker(port);
    },
    async stop() {
      await producer.disconnect().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      stopBroker(port);
    },
  };
}

/** A message as `readAllMessages` gives it: its value (`'null'` for none), offset and headers as text. */
export interface ReadMessage {
  readonly value: string;
  readonly offset: number;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Every committed (read_committed) message value of `topic`, all partitions, from the beginning:
 * read until there are at least `atLeast` and none arrived for `quietMs`, or `timeoutMs` passed.
 * `name` names the client (`oxbow-name`) and its consumer group (`name-topic-now`).
 */
export async function readAllCommitted(bootstrap: string, topic: string, atLeast: number, options: { readonly name: string; readonly timeoutMs: number; readonly quietMs?: number }): Promise<string[]> {
  return (await readAllMessages(bootstrap, topic, atLeast, options)).map((message) => message.value);
}

/** As `readAllCommitted`, with each message's offset and headers; `uncommitted` reads read_uncommitted (aborted and open transactions' messages too). */
export async function readAllMessages(
  bootstrap: string,
  topic: string,
  atLeast: number,
  options: { readonly name: string; readonly timeoutMs: number; readonly quietMs?: number; readonly uncommitted?: boolean },
): Promise<ReadMessage[]> {
  const quietMs = options.quietMs ?? 3000;
  const client = new Kafka({ clientId: `oxbow-${options.name}`, brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const consumer = client.consumer({ groupId: `${options.name}-${topic}-${Date.now()}`, readUncommitted: options.uncommitted === true });
  const seen: ReadMessage[] = [];
  let lastAt = Date.now();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(message.headers ?? {})) headers[key] = value?.toString() ?? '';
      seen.push({ value: message.value?.toString() ?? 'null', offset: Number(message.offset), headers });
      lastAt = Date.now();
    },
  });
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline && (seen.length < atLeast || Date.now() - lastAt < quietMs)) await new Promise((resolve) => setTimeout(resolve, 100));
  await consumer.disconnect();
  return seen;
}

/** Where scripts/kafka.mjs keeps its jars and each port's data folder. */
export function kafkaCache(): string {
  return process.env['OXBOW_KAFKA_CACHE'] ?? fileURLToPath(new URL('../../.cache/kafka', import.meta.url));
}
