// A batch aggregate over a full scan at --parallelism 1 and 2 (executor/batch/parallel-aggregate.ts):
// `SELECT count(*), sum(x), avg(y) FROM t WHERE z % 7 <> 0` over 5,000,000 rows (x BENCH_SCALE),
// one data directory loaded once, then the server restarted at 1 and 2 alternately (`--rounds`,
// default 3), each run timed after one warm-up: wall time, the server's CPU-seconds over the query
// (/proc/<pid>/stat) and the 1-minute load average. Also the workers' round trip (the same query
// over a 1,000-row table with the threshold at 0, against the serial path), from which the
// threshold OXBOW_PARALLEL_SCAN_MIN_BYTES is chosen. Prints JSON lines.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { BENCH_SCALE, flag, median, reporter } from './support/harness.js';
import { startOxbowNode, type OxbowNode } from './support/server-process.js';

const ENTRY = fileURLToPath(new URL('../bin/oxbow.js', import.meta.url));
const ROWS = Math.round(5_000_000 * BENCH_SCALE);
const ROUNDS = Number(flag('--rounds') ?? '3');
const QUERY = 'select count(*), sum(x), avg(y) from t where z % 7 <> 0';
const report = reporter('parallel-scan');

/** User + system CPU-seconds of a process so far (Linux), 0 elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

async function withServer<T>(dataDir: string, parallelism: number, env: Record<string, string>, body: (client: pg.Client, node: OxbowNode) => Promise<T>): Promise<T> {
  const node = await startOxbowNode(ENTRY, dataDir, ['--parallelism', String(parallelism)], env);
  const client = new pg.Client({ connectionString: node.url });
  await client.connect();
  try {
    return await body(client, node);
  } finally {
    await client.end();
    await node.stop();
  }
}

async function timed(client: pg.Client, node: OxbowNode, sql: string): Promise<{ ms: number; cpu: number; rows: unknown[] }> {
  const cpuBefore = cpuSeconds(node.child.pid!);
  const start = process.hrtime.bigint();
  const result = await client.query({ text: sql, rowMode: 'array' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  return { ms, cpu: cpuSeconds(node.child.pid!) - cpuBefore, rows: result.rows };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-pscan-'));
  try {
    await withServer(dataDir, 1, {}, async (client) => {
      await client.query('create table t (k int primary key, x int, y numeric(12,2), z int)');
      await client.query('create table small (k int primary key, x int, y numeric(12,2), z int)');
      await client.query('insert into small select g, g % 1000, (g % 10007) / 100.0, g from generate_series(1, 1000) g');
      const chunk = 500_000;
      const start = process.hrtime.bigint();
      for (let from = 1; from <= ROWS; from += chunk) {
        const to = Math.min(ROWS, from + chunk - 1);
        await client.query(`insert into t select g, ((g % 100003) * 7919) % 100000 - 30000, (g % 10007) / 100.0, g from generate_series(${from}, ${to}) g`);
      }
      report('load_seconds', Number(process.hrtime.bigint() - start) / 1e9, 's');
      const size = await client.query({ text: "select pg_total_relation_size('t'::regclass)", rowMode: 'array' });
      report('table_bytes', Number(size.rows[0]![0]), 'bytes');
    });
    // The workers' round trip: a tiny table through them (threshold 0) against the serial path.
    const tiny: Record<string, number[]> = { serial: [], parallel: [] };
    await withServer(dataDir, 2, { OXBOW_PARALLEL_SCAN_MIN_BYTES: '0' }, async (client, node) => {
      const sql = 'select count(*), sum(x), avg(y) from small where z % 7 <> 0';
      const plan = await client.query({ text: `explain ${sql}`, rowMode: 'array' });
      if (!plan.rows.some((row) => String(row[0]).includes('ParallelAggregate'))) throw new Error('the tiny query did not run in the workers');
      for (let i = 0; i < 30; i++) tiny.parallel!.push((await timed(client, node, sql)).ms);
    });
    await withServer(dataDir, 1, {}, async (client, node) => {
      for (let i = 0; i < 30; i++) tiny.serial!.push((await timed(client, node, 'select count(*), sum(x), avg(y) from small where z % 7 <> 0')).ms);
    });
    report('tiny_serial_ms', median(tiny.serial!.slice(5)), 'ms');
    report('tiny_parallel_ms', median(tiny.parallel!.slice(5)), 'ms');
    report('worker_round_trip_ms', median(tiny.parallel!.slice(5)) - median(tiny.serial!.slice(5)), 'ms');
    let answer: string | undefined;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const parallelism of [1, 2]) {
        await withServer(dataDir, parallelism, {}, async (client, node) => {
          const plan = await client.query({ text: `explain ${QUERY}`, rowMode: 'array' });
          const parallel = plan.rows.some((row) => String(row[0]).includes('ParallelAggregate'));
          if (parallel !== parallelism > 1) throw new Error(`at --parallelism ${parallelism} the plan is ${parallel ? '' : 'not '}parallel`);
          await timed(client, node, QUERY);
          const run = await timed(client, node, QUERY);
          const text = JSON.stringify(run.rows);
          if (answer !== undefined && text !== answer) throw new Error(`answers differ: ${text} vs ${answer}`);
          answer = text;
          report(`p${parallelism}_seconds`, run.ms / 1000, 's');
          report(`p${parallelism}_cpu_seconds`, run.cpu, 's');
          report(`p${parallelism}_load_1m`, loadavg()[0]!, 'load');
          report(`p${parallelism}_rows_per_second`, ROWS / (run.ms / 1000), 'rows/s');
        });
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
