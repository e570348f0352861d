// Kafka into oxbow: Nexmark bid events as JSON in a real broker (scripts/kafka.mjs, started here on a
// free port), read by `CREATE SOURCE bid (...) FORMAT PLAIN ENCODE JSON` into the Nexmark q0, q1,
// q5 and q7 views (bench/nexmark/qN.sql), each in a fresh in-process engine on
// RocksDB. The same events come from the built-in generator (connector = 'nexmark',
// executor/connectors/generators/) in the same run as the upper bound: the bids of events 0..N-1 of
// the deterministic generator are what the topic holds, so both read the same rows.
//
// Rates: messages (bids) per second from CREATE SOURCE until the epoch that commits the last one
// (includes the consumer joining), and steady (from the first committed epoch to the last). The
// run checks q0 holds every bid.
// Prints JSON lines {"bench":"kafka","metric","value","unit"}.
// `--queries count` is a `SELECT count(*)` view over the source (checked like q0); "main thread busy"
// is the main event loop's utilization over the run (the worker threads' share is in per CPU second).
// Run: npm run build && npm run bench -- kafka [--events N] [--queries q0,count,q1,q5,q7]
//   (defaults: 1,000,000 Nexmark events times BENCH_SCALE (92% are bids), 4 partitions,
//   --barrier-interval-ms 1000; --skip-generator leaves the upper bound out; --parallelism N: the
//   engine's, default 1: q0 and count over the source that stores no rows run as a Kafka source
//   fragment at N > 1, executor/stream/PARALLEL.md "Source fragments")

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { createEngine } from '../executor/engine/create-engine.js';
import type { Engine } from '../executor/engine/engine.js';
import { NexmarkGenerator } from '../executor/connectors/generators/nexmark-generator.js';
import type { Row } from '../sql/value.js';
import { querySql, SOURCE_COLUMNS } from './nexmark.js';
import { BENCH_SCALE, flag, openSession, reporter, runSql } from './support/harness.js';
import { freePort } from '../test/support/free-port.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = HERE.endsWith(join('dist', 'bench')) ? join(HERE, '..', '..') : join(HERE, '..');
const SCRIPT = join(ROOT, 'scripts', 'kafka.mjs');
const BID_COLUMNS = SOURCE_COLUMNS.bid;

const EVENTS = Number(flag('--events') ?? Math.round(1_000_000 * BENCH_SCALE));
const QUERIES = (flag('--queries') ?? 'q0,q1,q5,q7').split(',').map((query) => query.trim());
const PARTITIONS = Number(flag('--partitions') ?? '4');
const BARRIER_MS = Number(flag('--barrier-interval-ms') ?? '1000');
const WITH_GENERATOR = !process.argv.slice(2).includes('--skip-generator');
const PARALLELISM = Number(flag('--parallelism') ?? '1');

const report = reporter('kafka', 1);

/** A JSON string literal for plain ASCII text (the generator's strings need no escapes but quotes). */
function jsonText(text: string): string {
  return JSON.stringify(text);
}

/** `YYYY-MM-DD HH:MM:SS.mmm` of microseconds since 1970 (the JSON shape RisingWave's Nexmark topics use). */
function timestampText(micros: number): string {
  return new Date(micros / 1000).toISOString().replace('T', ' ').replace('Z', '');
}

/** Produces the bids of events 0..events-1 to `topic`, round robin over partitions; returns the bid count. */
async function produceBids(kafka: kafkajs.Kafka, topic: string, events: number): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const generator = new NexmarkGenerator({ seed: 0 });
  const CHUNK = 10_000;
  const INFLIGHT = 4;
  let next = 0;
  let count = 0;
  const inflight = new Set<Promise<unknown>>();
  while (next < events) {
    const rows: Row[] = [];
    next = generator.fill(rows, 'Bid', next, 1, events, CHUNK).next;
    const byPartition: { value: string }[][] = Array.from({ length: PARTITIONS }, () => []);
    for (const row of rows) {
      const [auction, bidder, price, channel, url, dateTime, extra] = row as [bigint, bigint, bigint, string, string, number, string];
      byPartition[count++ % PARTITIONS]!.push({
        value: `{"auction":${auction},"bidder":${bidder},"price":${price},"channel":${jsonText(channel)},"url":${jsonText(url)},"date_time":"${timestampText(dateTime)}","extra":${jsonText(extra)}}`,
      });
    }
    const sent = producer.sendBatch({ acks: 1, topicMessages: byPartition.map((messages, partition) => ({ topic, messages: messages.map((message) => ({ ...message, partition })) })) });
    inflight.add(sent);
    void sent.finally(() => inflight.delete(sent));
    if (inflight.size >= INFLIGHT) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  await producer.disconnect();
  return count;
}

interface Ingest {
  readonly seconds: number;
  readonly steadySeconds: number | undefined;
  readonly steadyMessages: number;
  readonly cpuSeconds: number;
  /** Share of the wall time the main thread's event loop was busy (eventLoopUtilization). */
  readonly mainBusy: number;
}

async function openEngine(dataDir: string): Promise<{ engine: Engine; run: (sql: string) => Promise<unknown[][]> }> {
  const engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${dataDir}/checkpoints`,
    barrierIntervalMs: BARRIER_MS,
    checkpointIntervalMs: 600_000,
    timeTravelRetentionMs: 60_000,
    memoryLimitBytes: 1 << 30,
    ...(PARALLELISM === 1 ? {} : { tuning: { parallelism: PARALLELISM } }),
  });
  const session = openSession(engine);
  const run = (sql: string): Promise<unknown[][]> => runSql(session, sql);
  return { engine, run };
}

/**
 * Creates the source and the query's view in a fresh engine, waits until the source committed
 * `target` (the sum of its committed offsets: messages for Kafka, event numbers for the generator).
 */
async function ingest(query: string, sourceDdl: string, target: number, check?: (run: (sql: string) => Promise<unknown[][]>) => Promise<void>): Promise<Ingest> {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-kafka-'));
  const { engine, run } = await openEngine(dataDir);
  try {
    const viewSql = query === 'count' ? 'CREATE MATERIALIZED VIEW bid_count AS SELECT count(*) AS bids FROM bid' : querySql(query).sql;
    const cpuStart = process.cpuUsage();
    const eluStart = performance.eventLoopUtilization();
    const start = performance.now();
    await run(sourceDdl);
    await run(viewSql);
    let firstAt: number | undefined;
    let firstCount = 0;
    for (;;) {
      const rows = await run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'`);
      const count = Number(rows[0]![0]);
      if (firstAt === undefined && count > 0) {
        firstAt = performance.now();
        firstCount = count;
      }
      if (count >= target) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const end = performance.now();
    const cpu = process.cpuUsage(cpuStart);
    const elu = performance.eventLoopUtilization(eluStart);
    if (check !== undefined) await check(run);
    return {
      seconds: (end - start) / 1000,
      steadySeconds: firstAt !== undefined && end > firstAt ? (end - firstAt) / 1000 : undefined,
      steadyMessages: target - firstCount,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      mainBusy: elu.utilization,
    };
  } finally {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// --bootstrap HOST:PORT uses a running broker (npm run kafka) and keeps it; a topic `bid-<events>`
// already filled by an earlier run is read again instead of produced (handy to profile ingestion).
const EXISTING = flag('--bootstrap');
const port = EXISTING === undefined ? await freePort() : 0;
if (EXISTING === undefined) {
  const started = spawnSync(process.execPath, [SCRIPT, '--port', String(port), '--timeout-ms', '120000'], { encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`broker did not start: ${started.stdout}${started.stderr}`);
}
const bootstrap = EXISTING ?? `127.0.0.1:${port}`;
const TOPIC = EXISTING === undefined ? 'bid' : `bid-${EVENTS}`;

try {
  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const existing = (await admin.listTopics()).includes(TOPIC) ? (await admin.fetchTopicOffsets(TOPIC)).reduce((sum, bound) => sum + Number(bound.high), 0) : 0;
  if (existing === 0) await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  const produceStart = performance.now();
  const bids = existing > 0 ? existing : await produceBids(kafka, TOPIC, EVENTS);
  if (existing === 0) report('produce (kafkajs, acks=1)', bids / ((performance.now() - produceStart) / 1000), 'messages/s');
  report('bids in the topic', bids, 'messages');

  const kafkaSource = `CREATE SOURCE bid (${BID_COLUMNS}) WITH (connector = 'kafka', topic = '${TOPIC}', properties.bootstrap.server = '${bootstrap}', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`;
  const generatorSource = `CREATE SOURCE bid (${BID_COLUMNS}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${EVENTS}', nexmark.split.num = '${PARTITIONS}', nexmark.min.event.gap.in.ns = '0')`;
  for (const query of QUERIES) {
    const check = query !== 'q0' && query !== 'count' ? undefined : async (run: (sql: string) => Promise<unknown[][]>): Promise<void> => {
      const rows = await run(query === 'q0' ? 'SELECT count(*)::int8 FROM nexmark_q0' : 'SELECT bids FROM bid_count');
      if (Number(rows[0]![0]) !== bids) throw new Error(`the ${query} view counts ${String(rows[0]![0])} bids, expected ${bids}`);
    };
    const fromKafka = await ingest(query, kafkaSource, bids, check);
    report(`${query} from Kafka, from CREATE SOURCE`, bids / fromKafka.seconds, 'messages/s');
    if (fromKafka.steadySeconds !== undefined) report(`${query} from Kafka, steady`, fromKafka.steadyMessages / fromKafka.steadySeconds, 'messages/s');
    report(`${query} from Kafka, per CPU second`, bids / fromKafka.cpuSeconds, 'messages/s per core');
    report(`${query} from Kafka, main thread busy`, fromKafka.mainBusy * 100, '%');
    if (WITH_GENERATOR) {
      const fromGenerator = await ingest(query, generatorSource, EVENTS, check);
      report(`${query} from the generator, from CREATE SOURCE`, bids / fromGenerator.seconds, 'messages/s');
      report(`${query} from the generator, per CPU second`, bids / fromGenerator.cpuSeconds, 'messages/s per core');
      report(`${query} from the generator, main thread busy`, fromGenerator.mainBusy * 100, '%');
    }
  }
} finally {
  if (EXISTING === undefined) spawnSync(process.execPath, [SCRIPT, '--stop', '--port', String(port)], { encoding: 'utf8' });
}
