// Reads of a Kafka source that stores no rows (executor/connectors/kafka/kafka-replay.ts): every read
// replays the topic from the broker. A point read by row id (`WHERE _row_id = x`) fetches one
// message, not the whole source. This suite times, over the wire (real
// oxbow server processes, a real broker started here), point reads by row id, an IN list of 10
// row ids, a filter on the INCLUDE partition and offset columns, and a whole-source count(*) for
// scale, on this build and, with --base-dist, on another build's dist/ in the same run (reads
// alternate between the two servers, which read the same topic). Each read's answer is checked
// against the message produced at that partition and offset.
// Prints JSON lines {"bench":"kafka-replay","metric","value","unit"}.
// Run: npm run build && npm run bench -- kafka-replay [--messages N] [--reads N] [--base-dist DIR]
//   (defaults: 200,000 messages times BENCH_SCALE in 3 partitions, 10 reads of each kind; a base
//   build: git worktree add /tmp/base <commit>, build it there, --base-dist /tmp/base/dist)

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import pg from 'pg';
import { freePortPair } from '../test/kafka/broker.js';
import { BENCH_SCALE, flag, reporter } from './support/harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = HERE.endsWith(join('dist', 'bench')) ? join(HERE, '..', '..') : join(HERE, '..');
const SCRIPT = join(ROOT, 'scripts', 'kafka.mjs');

const MESSAGES = Number(flag('--messages') ?? Math.round(200_000 * BENCH_SCALE));
const READS = Number(flag('--reads') ?? '10');
const BASE_DIST = flag('--base-dist');
const PARTITIONS = 3;
const TOPIC = 'points';

const report = reporter('kafka-replay', 2);

interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  readonly client: pg.Client;
  readonly dataDir: string;
}

async function startServer(name: string, dist: string): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), `oxbow-bench-replay-${name}-`));
  const child = spawn(process.execPath, [join(dist, 'bin', 'oxbow.js'), '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--barrier-interval-ms', '100'], {
    cwd: join(dist, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout!.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (text: string) => {
      stdout += text;
      const found = /oxbow ready: (postgres:\/\/\S+)/.exec(stdout);
      if (found !== null) resolve(found[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${name} server exited (${code}) before it was ready:\n${stdout}`)));
  });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return { name, child, client, dataDir };
}

async function stopServer(server: Server): Promise<void> {
  await server.client.end().catch(() => undefined);
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
  rmSync(server.dataDir, { recursive: true, force: true });
}

const rowIdOf = (partition: number, offset: number): bigint => (BigInt(offset) << 16n) | BigInt(partition);

const port = await freePortPair();
const started = spawnSync(process.execPath, [SCRIPT, '--port', String(port), '--timeout-ms', '120000'], { encoding: 'utf8' });
if (started.status !== 0) throw new Error(`broker did not start: ${started.stdout}${started.stderr}`);
const bootstrap = `127.0.0.1:${port}`;
const servers: Server[] = [];
try {
  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  // Message i goes to partition i % 3 at offset floor(i / 3): its row id is known without asking.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let from = 0; from < MESSAGES; from += 6000) {
    const messages = [];
    for (let id = from; id < Math.min(MESSAGES, from + 6000); id++) messages.push({ partition: id % PARTITIONS, value: JSON.stringify({ id, k: id % 7, label: `m${id}` }) });
    await producer.send({ topic: TOPIC, messages });
  }
  await producer.disconnect();
  report('messages in the topic', MESSAGES, 'messages');

  servers.push(await startServer('head', join(ROOT, 'dist')));
  if (BASE_DIST !== undefined) servers.push(await startServer('base', BASE_DIST));
  for (const server of servers) {
    await server.client.query(
      `CREATE SOURCE src (id bigint, k int, label varchar) INCLUDE partition AS part INCLUDE offset AS off WITH (connector = 'kafka', topic = '${TOPIC}', properties.bootstrap.server = '${bootstrap}') FORMAT PLAIN ENCODE JSON`,
    );
  }
  for (const server of servers) {
    for (;;) {
      const result = await server.client.query("SELECT coalesce(sum(committed_offset), 0)::int8 AS n FROM oxbow_catalog.source_partitions WHERE source_name = 'src'");
      if (Number(result.rows[0].n) === MESSAGES) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const timings = new Map<string, number[]>();
  async function timed(server: Server, kind: string, sql: string, expected: string): Promise<void> {
    const start = performance.now();
    const result = await server.client.query({ text: sql, rowMode: 'array' });
    const ms = performance.now() - start;
    const got = (result.rows as unknown[][]).map((row) => row.join(',')).join(';');
    if (got !== expected) throw new Error(`${server.name}: ${sql} returned ${got}, expected ${expected}`);
    const key = `${kind} (${server.name})`;
    if (!timings.has(key)) timings.set(key, []);
    timings.get(key)!.push(ms);
  }
  const pick = (round: number, salt: number): number => (round * 7919 + salt * 104_729) % MESSAGES;
  // One warm-up read each (connections, plan caches), then rounds alternating between the servers.
  for (const server of servers) await timed(server, 'warm-up', `SELECT id FROM src WHERE _row_id = ${rowIdOf(0, 0)}`, '0');
  timings.clear();
  for (let round = 0; round < READS; round++) {
    for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
      const id = pick(round, 1);
      await timed(server, 'point read by row id', `SELECT id FROM src WHERE _row_id = ${rowIdOf(id % PARTITIONS, Math.floor(id / PARTITIONS))}`, String(id));
      const ids = Array.from({ length: 10 }, (_, i) => pick(round, i + 2));
      const expected = [...new Set(ids)].sort((a, b) => (rowIdOf(a % 3, Math.floor(a / 3)) < rowIdOf(b % 3, Math.floor(b / 3)) ? -1 : 1)).join(';');
      await timed(server, 'IN list of 10 row ids', `SELECT id FROM src WHERE _row_id IN (${ids.map((i) => rowIdOf(i % PARTITIONS, Math.floor(i / PARTITIONS))).join(', ')})`, expected);
      const offset = Math.floor(pick(round, 13) / PARTITIONS) % Math.max(1, Math.floor(MESSAGES / PARTITIONS) - 100);
      const window = Array.from({ length: 100 }, (_, i) => (offset + i) * PARTITIONS + 1).filter((i) => i < MESSAGES);
      await timed(server, 'partition = 1 AND 100 offsets', `SELECT count(*), sum(id) FROM src WHERE part = 1 AND off >= ${offset} AND off < ${offset + 100}`, `${window.length},${window.reduce((a, b) => a + b, 0)}`);
    }
  }
  for (const server of servers) await timed(server, 'count(*) of the whole source', 'SELECT count(*) FROM src', String(MESSAGES));
  for (const [key, values] of timings) {
    const sorted = [...values].sort((a, b) => a - b);
    report(`${key}, median`, sorted[Math.floor(sorted.length / 2)]!, 'ms');
    report(`${key}, mean`, values.reduce((a, b) => a + b, 0) / values.length, 'ms');
  }
} finally {
  for (const server of servers) await stopServer(server).catch(() => undefined);
  spawnSync(process.execPath, [SCRIPT, '--stop', '--port', String(port)], { encoding: 'utf8' });
}
