// PostgreSQL into oxbow by logical replication (connector = 'postgres-cdc'): a real PostgreSQL 15
// (test/support/postgres.ts, wal_level = logical) and an in-process engine on RocksDB.
//
// - snapshot: N rows upstream (`--rows`, default 200,000 times BENCH_SCALE) read by CREATE TABLE's
//   initial snapshot, rows/s until the table holds them all;
// - stream: N more inserts in transactions of 10,000 rows, then an UPDATE of every row and a DELETE
//   of half of them (3.5 N row changes): row changes/s from the first upstream statement until the
//   committed offset reaches the upstream's last commit;
// - latency: `--samples` (default 200) one-row INSERT commits, 20 ms apart: from the COMMIT's
//   answer to a `count(*)` view over the table showing the row (polled every millisecond), p50/p99.
// The load average is printed beside the figures. Each figure is checked (counts equal upstream).
// Prints JSON lines {"bench":"cdc","metric","value","unit"}.
// Run: npm run build && npm run bench -- cdc [--rows N] [--samples N] [--barrier-interval-ms MS]

import { loadavg } from 'node:os';
import { startPostgres } from '../test/support/postgres.js';
import { BENCH_SCALE, flag, openBenchEngine, reporter } from './support/harness.js';

const ROWS = Number(flag('--rows') ?? Math.round(200_000 * BENCH_SCALE));
const SAMPLES = Number(flag('--samples') ?? '200');
const BARRIER_MS = Number(flag('--barrier-interval-ms') ?? '100');
const report = reporter('cdc', 1);

const postgres = await startPostgres({ logical: true, settings: { max_connections: '40' } });
const bench = await openBenchEngine('cdc', { barrierIntervalMs: BARRIER_MS });
try {
  report('barrier_interval', BARRIER_MS, 'ms');
  await postgres.query('CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, amount numeric NOT NULL, note text, at timestamptz NOT NULL)');
  const fill = (from: number, to: number): string =>
    `INSERT INTO items SELECT g, g % 100, g * 1.25, 'item ' || g, timestamptz '2024-01-01' + g * interval '1 second' FROM generate_series(${from}, ${to}) g`;
  await postgres.query(fill(1, ROWS));
  const options = `connector = 'postgres-cdc', hostname = '127.0.0.1', port = '${postgres.port}', username = 'postgres', database.name = 'postgres', table.name = 'items'`;
  const count = async (): Promise<number> => Number((await bench.run('SELECT n FROM item_count'))[0]?.[0] ?? 0);
  const committed = async (): Promise<bigint> => BigInt(String((await bench.run("SELECT committed_offset FROM oxbow_catalog.source_partitions WHERE source_name = 'items'"))[0]?.[0] ?? '-1'));
  const until = async (what: string, done: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 600_000;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`cdc bench: timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };

  let started = performance.now();
  await bench.run(`CREATE TABLE items (id int PRIMARY KEY, grp int, amount numeric, note text, at timestamptz) WITH (${options})`);
  await bench.run('CREATE MATERIALIZED VIEW item_count AS SELECT count(*) AS n FROM items');
  await until('the snapshot', async () => (await count()) === ROWS);
  report('snapshot_rows_per_second', ROWS / ((performance.now() - started) / 1000), 'rows/s');

  started = performance.now();
  for (let first = ROWS + 1; first <= 2 * ROWS; first += 10_000) await postgres.query(fill(first, Math.min(first + 9_999, 2 * ROWS)));
  await postgres.query('UPDATE items SET amount = amount + 1');
  await postgres.query('DELETE FROM items WHERE id % 2 = 0');
  const end = BigInt((await postgres.query("SELECT pg_current_wal_insert_lsn() - '0/0'")).rows[0]![0]!);
  const upstreamDone = performance.now();
  await until('the stream', async () => (await committed()) >= end - 4096n && (await count()) === ROWS);
  const changes = ROWS + 2 * ROWS + ROWS;
  const streamSeconds = (performance.now() - started) / 1000;
  report('stream_row_changes_per_second', changes / streamSeconds, 'changes/s');
  report('stream_catch_up_after_upstream', performance.now() - upstreamDone, 'ms');

  const latencies: number[] = [];
  let expected = ROWS;
  for (let sample = 0; sample < SAMPLES; sample++) {
    expected++;
    await postgres.query(`INSERT INTO items VALUES (${-1 - sample}, 0, 1, 'probe', now())`);
    const committedAt = performance.now();
    await until('a probe row', async () => (await count()) === expected);
    latencies.push(performance.now() - committedAt);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  latencies.sort((a, b) => a - b);
  report('commit_to_view_p50', latencies[Math.floor(latencies.length * 0.5)]!, 'ms');
  report('commit_to_view_p99', latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!, 'ms');
  report('load_average_1m', loadavg()[0]!, 'load');
  const upstreamCount = Number((await postgres.query('SELECT count(*) FROM items')).rows[0]![0]);
  if (upstreamCount !== (await count())) throw new Error(`cdc bench: oxbow holds ${await count()} rows, upstream ${upstreamCount}`);
} finally {
  await bench.close();
  await postgres.stop();
}
