// Kafka into oxbow: Nexmark-like bid events as JSON in a real broker (scripts/kafka.mjs, started
// here on a free port), read by a source (1) into its table alone and (2) into a table plus an
// aggregating materialized view (per-auction count and max price, Nexmark q-like). Reports
// events/s from CREATE SOURCE until every message is committed, and the producer's rate.
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/kafka.js [events]   (default 300000)

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { createEngine } from '../executor/create-engine.js';
import type { Session } from '../executor/engine.js';

const EVENTS = Number(process.argv[2] ?? 300_000);
const PARTITIONS = 4;
const SCRIPT = fileURLToPath(new URL('../../scripts/kafka.mjs', import.meta.url));

function report(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'kafka', metric, value: Number(value.toFixed(1)), unit }));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

const port = await freePort();
const started = spawnSync(process.execPath, [SCRIPT, '--port', String(port)], { encoding: 'utf8' });
if (started.status !== 0) throw new Error(`broker did not start: ${started.stdout}${started.stderr}`);
const bootstrap = `127.0.0.1:${port}`;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-kafka-'));

try {
  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'bids', numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const produceStart = process.hrtime.bigint();
  const base = Date.UTC(2026, 0, 1);
  const CHUNK = 10_000;
  for (let first = 0; first < EVENTS; first += CHUNK) {
    const byPartition: { value: string }[][] = Array.from({ length: PARTITIONS }, () => []);
    for (let i = first; i < Math.min(first + CHUNK, EVENTS); i++) {
      byPartition[i % PARTITIONS]!.push({
        value: JSON.stringify({
          auction: 1000 + (i % 977),
          bidder: 2000 + (i % 4093),
          price: 100 + ((i * 7919) % 100_000),
          channel: i % 3 === 0 ? 'Google' : 'Apple',
          url: `https://www.nexmark.com/item.htm?query=${i % 1013}`,
          date_time: new Date(base + i).toISOString().replace('T', ' ').replace('Z', ''),
          extra: '',
        }),
      });
    }
    await producer.sendBatch({ acks: 1, topicMessages: byPartition.map((messages, partition) => ({ topic: 'bids', messages: messages.map((message) => ({ ...message, partition })) })) });
  }
  report('produce', EVENTS / (Number(process.hrtime.bigint() - produceStart) / 1e9), 'events/s');
  await producer.disconnect();

  const engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${dataDir}/checkpoints`,
    barrierIntervalMs: 1000,
    checkpointIntervalMs: 600_000,
    timeTravelRetentionMs: 600_000,
    memoryLimitBytes: 1 << 30,
  });
  const session: Session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  const run = async (sql: string): Promise<unknown[][]> => {
    let rows: unknown[][] = [];
    for (const statement of session.prepareMany(sql)) {
      const result = await session.execute(statement, { parameters: [] });
      if (result.kind === 'rows') rows = await result.cursor.next(0);
    }
    return rows;
  };
  const columns = 'auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar';
  const options = `connector = 'kafka', topic = 'bids', properties.bootstrap.server = '${bootstrap}', scan.startup.mode = 'earliest'`;
  // Two rates: from CREATE SOURCE (includes joining the consumer group, a few seconds) and steady
  // state (from the first committed epoch with messages to the last).
  const ingest = async (label: string, name: string, view: string | undefined): Promise<void> => {
    const start = process.hrtime.bigint();
    await run(`CREATE SOURCE ${name} (${columns}) WITH (${options}) FORMAT PLAIN ENCODE JSON`);
    if (view !== undefined) await run(view);
    let firstAt: bigint | undefined;
    let firstCount = 0;
    for (;;) {
      const rows = await run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name = '${name}'`);
      const count = Number(rows[0]![0]);
      if (firstAt === undefined && count > 0) {
        firstAt = process.hrtime.bigint();
        firstCount = count;
      }
      if (count >= EVENTS) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const end = process.hrtime.bigint();
    report(`${label}, from CREATE SOURCE`, EVENTS / (Number(end - start) / 1e9), 'events/s');
    if (firstAt !== undefined && end > firstAt) report(`${label}, steady`, (EVENTS - firstCount) / (Number(end - firstAt) / 1e9), 'events/s');
  };
  await ingest('source into its table', 'bids_only', undefined);
  await ingest('source into table + aggregate view', 'bids_viewed', 'CREATE MATERIALIZED VIEW max_bid AS SELECT auction, count(*) AS n, max(price) AS top FROM bids_viewed GROUP BY auction');
  const check = await run('SELECT sum(n)::int8 FROM max_bid');
  if (Number(check[0]![0]) !== EVENTS) throw new Error(`the view counted ${String(check[0]![0])} events, expected ${EVENTS}`);
  await engine.close();
} finally {
  spawnSync(process.execPath, [SCRIPT, '--stop', '--port', String(port)], { encoding: 'utf8' });
  rmSync(dataDir, { recursive: true, force: true });
}
