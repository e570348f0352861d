// SUBSCRIBE's latency and cost. The engine (RocksDB, a temporary directory) and pgwire run in this
// process; the clients run in a child process (this file with `--clients-of PORT`), so this
// process's CPU and memory are the server's alone. A writer inserts 10 rows per statement every
// 50 ms into a table under a materialized view; three phases of `--seconds` each (default 10):
// no subscriber, one, and 100 subscribers (postgres.js COPY streams of
// `COPY (SUBSCRIBE recent WITH (SNAPSHOT = false)) TO STDOUT`). Printed per phase:
//   - latency_p50_ms / latency_p99_ms / latency_max_ms: from an epoch's commit (its epoch number
//     is the commit's wall-clock millisecond) to a client receiving that epoch's line;
//   - server_cpu_percent: this process's user + system CPU over the phase, in % of one core;
//   - server_rss_peak_mib, server_heap_used_mib: memory at the phase's peak / end;
//   - lines_per_subscriber, statements_per_second: what was delivered and written.
// Then the 100 subscribers' cost over the writer alone: extra CPU and memory per subscriber.
// Usage: npm run build && npm run bench -- subscribe [--seconds 10]

import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import postgres from 'postgres';
import { PgServer } from '../pgwire/server.js';
import { flag, openBenchEngine, reporter } from './support/harness.js';

const report = reporter('subscribe');
const PHASES = [
  { name: 'writer_only', subscribers: 0 },
  { name: 'one_subscriber', subscribers: 1 },
  { name: 'hundred_subscribers', subscribers: 100 },
] as const;
const WRITE_INTERVAL_MS = 50;
const ROWS_PER_STATEMENT = 10;

function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

async function server(): Promise<void> {
  const seconds = Number(flag('--seconds') ?? '10');
  const bench = await openBenchEngine('subscribe');
  const pgServer = new PgServer({ engine: bench.engine, host: '127.0.0.1', port: 0, maxConnections: 300 });
  const { port } = await pgServer.listen();
  await bench.run('CREATE TABLE events (id bigint PRIMARY KEY, at bigint, payload text); CREATE MATERIALIZED VIEW recent AS SELECT id, at, payload FROM events');
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const figures = new Map<string, { cpuPercent: number; rssPeak: number; heapUsed: number }>();
  let started: { cpu: NodeJS.CpuUsage; at: number } | undefined;
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--clients-of', String(port), '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for await (const line of createInterface({ input: child.stdout })) {
    const message = JSON.parse(line) as { phase?: string; event?: 'start' | 'end' };
    if (message.phase === undefined) {
      console.log(line);
      continue;
    }
    if (message.event === 'start') {
      global.gc?.();
      peakRss = process.memoryUsage().rss;
      started = { cpu: process.cpuUsage(), at: performance.now() };
      continue;
    }
    const cpu = process.cpuUsage(started!.cpu);
    const wallMicros = (performance.now() - started!.at) * 1000;
    const memory = process.memoryUsage();
    const phaseFigures = { cpuPercent: ((cpu.user + cpu.system) / wallMicros) * 100, rssPeak: peakRss / 2 ** 20, heapUsed: memory.heapUsed / 2 ** 20 };
    figures.set(message.phase, phaseFigures);
    report(`${message.phase}.server_cpu_percent`, phaseFigures.cpuPercent, '%');
    report(`${message.phase}.server_rss_peak_mib`, phaseFigures.rssPeak, 'MiB');
    report(`${message.phase}.server_heap_used_mib`, phaseFigures.heapUsed, 'MiB');
  }
  const code = await exited;
  clearInterval(sampler);
  const alone = figures.get('writer_only');
  const hundred = figures.get('hundred_subscribers');
  if (alone !== undefined && hundred !== undefined) {
    report('hundred_subscribers.extra_cpu_percent', hundred.cpuPercent - alone.cpuPercent, '%');
    report('hundred_subscribers.extra_rss_mib_per_subscriber', (hundred.rssPeak - alone.rssPeak) / 100, 'MiB');
    report('hundred_subscribers.extra_heap_mib_per_subscriber', (hundred.heapUsed - alone.heapUsed) / 100, 'MiB');
  }
  report('load_average_1m', loadavg()[0]!, '');
  await pgServer.close();
  await bench.close();
  if (code !== 0) throw new Error(`the clients' process exited with ${code}`);
}

async function clients(port: number): Promise<void> {
  const seconds = Number(flag('--seconds') ?? '10');
  const connection = { host: '127.0.0.1', port, user: 'oxbow', database: 'oxbow' };
  const writer = new pg.Client(connection);
  await writer.connect();
  let nextId = 0;
  let statements = 0;
  let writing = true;
  const writes = (async () => {
    while (writing) {
      const due = Date.now() + WRITE_INTERVAL_MS;
      const values = Array.from({ length: ROWS_PER_STATEMENT }, () => `(${nextId++}, ${Date.now()}, 'payload of a change, forty bytes or so.')`);
      await writer.query(`INSERT INTO events VALUES ${values.join(', ')}`);
      statements++;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  for (const phase of PHASES) {
    const latencies: number[] = [];
    const lines: number[] = [];
    let measuring = false;
    const subscribers = await Promise.all(
      Array.from({ length: phase.subscribers }, async (_, index) => {
        const sql = postgres({ ...connection, max: 1, onnotice: () => undefined });
        const query = sql.unsafe('COPY (SUBSCRIBE recent WITH (SNAPSHOT = false)) TO STDOUT');
        const stream = await query.readable();
        lines[index] = 0;
        query.catch(() => undefined);
        stream.on('error', () => undefined);
        stream.on('data', (chunk: Buffer) => {
          if (!measuring) return;
          const now = performance.timeOrigin + performance.now();
          const text = chunk.toString();
          let start = 0;
          for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
            const tab = text.indexOf('\t', start);
            latencies.push(now - Number(BigInt(text.slice(start, tab)) >> 16n));
            lines[index]!++;
            start = end + 1;
          }
        });
        return sql;
      }),
    );
    const writtenBefore = statements;
    console.log(JSON.stringify({ phase: phase.name, event: 'start' }));
    measuring = true;
    const phaseStart = performance.now();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    measuring = false;
    console.log(JSON.stringify({ phase: phase.name, event: 'end' }));
    report(`${phase.name}.statements_per_second`, ((statements - writtenBefore) * 1000) / (performance.now() - phaseStart), '1/s');
    if (phase.subscribers > 0) {
      latencies.sort((a, b) => a - b);
      report(`${phase.name}.latency_p50_ms`, percentile(latencies, 0.5), 'ms');
      report(`${phase.name}.latency_p99_ms`, percentile(latencies, 0.99), 'ms');
      report(`${phase.name}.latency_max_ms`, latencies[latencies.length - 1] ?? Number.NaN, 'ms');
      report(`${phase.name}.lines_per_subscriber`, lines.reduce((sum, count) => sum + count, 0) / phase.subscribers, 'lines');
      report(`${phase.name}.subscribers_receiving`, lines.filter((count) => count > 0).length, 'clients');
    }
    await Promise.all(subscribers.map((sql) => sql.end({ timeout: 0 })));
  }
  writing = false;
  await writes;
  await writer.end();
}

const clientsOf = flag('--clients-of');
if (clientsOf !== undefined) await clients(Number(clientsOf));
else await server();
