// Runs Debian's sqlsmith against a running oxbow through the wire tap (wire-tap.ts) and sums up
// what happened: statements, errors by SQLSTATE (with a few example messages each), the slowest
// statement, and anything still unanswered. Used by sqlsmith.test.ts and, for long runs, from the
// command line:
//   node --import tsx test/fuzz/sqlsmith.ts <host> <port> <seed> <count>   (prints the summary as JSON)

import { spawn } from 'node:child_process';
import { startWireTap, type TappedStatement } from './wire-tap.js';

export const SQLSMITH = '/usr/bin/sqlsmith';

/** The tables sqlsmith gets to play with: varied types, NULLs, a view. */
export const FUZZ_SCHEMA = [
  `CREATE TABLE t1 (a int PRIMARY KEY, b text, c numeric(10,2), d float8, e bool, f timestamptz, g date, h jsonb, i interval, j bigint)`,
  `INSERT INTO t1 VALUES (1, 'x', 1.5, 2.5, true, '2024-01-02 03:04:05+00', '2020-01-01', '{"a": 1}', '1 day', 5),
     (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
     (3, 'yy', -3.25, 0, false, '1999-12-31 23:59:59+00', '1970-01-01', '[1, 2]', '-2 hours', -7)`,
  `CREATE TABLE t2 (k int, s varchar(10), r real, sm smallint, ts timestamp, tm time, ba bytea, ch char(3), arr int[])`,
  `INSERT INTO t2 VALUES (1, 'a', 1.5, 1, '2024-01-01 00:00:00', '12:00', '\\x01', 'ab', '{1,2}'),
     (2, 'b', NULL, 2, NULL, '00:00:01', NULL, NULL, NULL),
     (NULL, NULL, -0.5, NULL, '2000-02-29 10:00:00', NULL, '\\x', 'xyz', '{}')`,
  `CREATE TABLE t3 (id bigint PRIMARY KEY, name varchar, score numeric, tags text[])`,
  `INSERT INTO t3 SELECT g, 'n' || g, g * 1.25, ARRAY['t' || (g % 3)] FROM generate_series(1, 20) AS g`,
  `CREATE VIEW v1 AS SELECT a, b, c FROM t1 WHERE a > 1`,
];

export interface SqlsmithRun {
  readonly seed: number;
  readonly statements: number;
  readonly failed: number;
  /** SQLSTATE → count and up to three distinct example messages with their statements. */
  readonly errors: Record<string, { count: number; examples: { message: string; sql: string }[] }>;
  readonly slowest: { readonly ms: number; readonly sql: string } | undefined;
  /** Statements sent and never answered. */
  readonly unanswered: readonly string[];
  readonly exitCode: number | null;
  readonly stderrTail: string;
}

/** The statements sqlsmith sends itself to set up a session, not generated ones. */
function generated(statement: TappedStatement): boolean {
  return !/^\s*(set |select version\(\)|show server_version_num|begin;?$|rollback;?$|select .* from (pg_type|information_schema\.tables|pg_catalog\.pg_operator|pg_proc|pg_attribute|pg_class t)\b)/is.test(statement.sql);
}

export async function runSqlsmith(host: string, port: number, seed: number, count: number, timeoutMs: number): Promise<SqlsmithRun> {
  const tap = await startWireTap(host, port);
  const started = tap.statements.length;
  let stderr = '';
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(
      SQLSMITH,
      [`--target=host=127.0.0.1 port=${tap.port} user=oxbow dbname=oxbow sslmode=disable`, `--seed=${seed}`, `--max-queries=${count}`, '--exclude-catalog'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      stderr = (stderr + text).slice(-4000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  const statements = tap.statements.slice(started).filter(generated);
  const unanswered = tap.pending().map((s) => s.sql);
  await tap.close();
  const errors: SqlsmithRun['errors'] = {};
  let failed = 0;
  let slowest: SqlsmithRun['slowest'];
  for (const statement of statements) {
    if (statement.durationMs !== undefined && (slowest === undefined || statement.durationMs > slowest.ms)) slowest = { ms: statement.durationMs, sql: statement.sql };
    if (statement.error === undefined) continue;
    failed++;
    const entry = (errors[statement.error.code] ??= { count: 0, examples: [] });
    entry.count++;
    if (entry.examples.length < 3 && !entry.examples.some((e) => e.message === statement.error!.message)) {
      entry.examples.push({ message: statement.error.message, sql: statement.sql });
    }
  }
  return { seed, statements: statements.length, failed, errors, slowest, unanswered, exitCode, stderrTail: stderr };
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/.*\//, '/'))) {
  const [host = '127.0.0.1', port = '6543', seed = '1', count = '1000'] = process.argv.slice(2);
  const run = await runSqlsmith(host, Number(port), Number(seed), Number(count), 30 * 60_000);
  console.log(JSON.stringify(run, null, 1));
}
