// A PostgreSQL sink's throughput: rows per second from an oxbow table into a local PostgreSQL
// table (bench/support/local-postgres.ts, started here) by `CREATE SINK ... WITH (connector =
// 'postgres')`, upsert by the primary key, in an in-process engine on RocksDB:
//   snapshot: N rows in the table before CREATE SINK, until the sink has written them all (one
//     delivery: the contents);
//   inserts: N more rows in statements of 50,000, from the first statement until all are written;
//   updates: every row updated in one statement (each a delete and an insert in oxbow's history,
//     one upsert in PostgreSQL), until all are written.
// `--form as` makes the sink `AS SELECT * FROM items` (its own dataflow, read from its change log)
// instead of `FROM items` (the table's versions read).
// Written rows are the sink's own count (oxbow_catalog.sink_status.rows_delivered, PostgreSQL's
// row counts); the run checks the target's count and sum against the table's at the end.
// Prints JSON lines {"bench":"pg-sink","metric","value","unit"}.
// Run: npm run build && npm run bench -- pg-sink [--rows N] (default 200,000 times BENCH_SCALE) [--form from|as]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { createEngine } from '../executor/engine/create-engine.js';
import type { Engine } from '../executor/engine/engine.js';
import { startLocalPostgres } from './support/local-postgres.js';
import { openSession, reporter, runSql } from './support/harness.js';

const report = reporter('pg-sink', 1);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf('--rows');
  const rows = at < 0 ? Math.round(200_000 * Number(process.env['BENCH_SCALE'] ?? '1')) : Number(args[at + 1]);
  if (!(rows > 0) || !Number.isSafeInteger(rows)) throw new Error(`--rows must be a positive integer, not ${String(rows)}`);
  const formAt = args.indexOf('--form');
  const form = formAt < 0 ? 'from' : args[formAt + 1];
  if (form !== 'from' && form !== 'as') throw new Error(`--form takes from or as, not ${String(form)}`);
  const postgres = await startLocalPostgres();
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-pg-sink-'));
  let engine: Engine | undefined;
  try {
    const target = await postgres.connect();
    await target.query('CREATE TABLE items (id bigint PRIMARY KEY, a bigint, b text, c double precision)');
    engine = await createEngine({ dataDir, checkpointUrl: `file://${dataDir}/checkpoints`, barrierIntervalMs: 100, checkpointIntervalMs: 600_000, timeTravelRetentionMs: 60_000, memoryLimitBytes: 1 << 30 });
    const session = openSession(engine);
    const run = (sql: string): Promise<unknown[][]> => runSql(session, sql);
    const delivered = async (): Promise<number> => Number((await run("SELECT coalesce(sum(rows_delivered), 0) FROM oxbow_catalog.sink_status WHERE sink_name = 'items_out'"))[0]?.[0] ?? 0);
    const waitFor = async (count: number): Promise<void> => {
      while ((await delivered()) < count) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const insert = (from: number, to: number) => run(`INSERT INTO items SELECT g, g * 7, 'item ' || g::text, g * 0.5 FROM generate_series(${from}, ${to}) AS g`);
    await run('CREATE TABLE items (id int8 PRIMARY KEY, a int8, b text, c float8)');
    for (let first = 1; first <= rows; first += 50_000) await insert(first, Math.min(rows, first + 49_999));

    let start = performance.now();
    await run(`CREATE SINK items_out ${form === 'as' ? 'AS SELECT * FROM items' : 'FROM items'} WITH (connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres', table = 'items'${form === 'as' ? ", primary_key = 'id'" : ''})`);
    await waitFor(rows);
    report('snapshot_rows_per_second', rows / ((performance.now() - start) / 1000), 'rows/s');

    start = performance.now();
    for (let first = rows + 1; first <= 2 * rows; first += 50_000) await insert(first, Math.min(2 * rows, first + 49_999));
    await waitFor(2 * rows);
    report('insert_rows_per_second', rows / ((performance.now() - start) / 1000), 'rows/s');

    start = performance.now();
    await run('UPDATE items SET a = a + 1');
    await waitFor(4 * rows);
    report('update_rows_per_second', (2 * rows) / ((performance.now() - start) / 1000), 'rows/s');
    report('load_average_1m', loadavg()[0]!, 'load');

    const [expected] = await run('SELECT count(*), sum(a) FROM items');
    const found = (await target.query('SELECT count(*)::text AS n, sum(a)::text AS s FROM items')).rows[0] as { n: string; s: string };
    if (found.n !== String(expected![0]) || found.s !== String(expected![1])) throw new Error(`target has ${found.n} rows summing to ${found.s}, oxbow ${String(expected![0])} and ${String(expected![1])}`);
    await target.end();
  } finally {
    await engine?.close();
    await postgres.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
