// Batch aggregates split across worker threads by key range (executor/batch/parallel-aggregate.ts)
// at --parallelism 2 and 4, against PostgreSQL 15 on the same data: count, sum, min, max and avg
// over integers, bigints, numerics and text, NULLs, filters, an empty table, a filter that keeps
// nothing, FOR SYSTEM_TIME AS OF an older epoch (PostgreSQL's answer before the change), a read
// after a write in a transaction block, a division by zero in a worker (22012) and a
// statement_timeout (57014), the session going on after each. EXPLAIN must show the parallel path for every query, so the test fails without it.
// The server is the build's (npm run build first); OXBOW_PARALLEL_SCAN_MIN_BYTES=0 makes every
// table large enough.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';
import { startOxbow, type OxbowServer } from '../../../test/support/server.js';
import { seededRandom } from '../../../test/support/seeded-random.js';

const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

const ROWS = 12_000;

const SCHEMA = [
  'create table t (k int primary key, x int, z bigint, y numeric(12,3), s text)',
  'create table e (k int primary key, a int, b numeric)',
];

/** Deterministic rows with NULLs in every column but the key. */
function inserts(): string[] {
  const random = seededRandom(7);
  const out: string[] = [];
  for (let start = 0; start < ROWS; start += 1000) {
    const values: string[] = [];
    for (let k = start; k < start + 1000; k++) {
      const x = random() < 0.08 ? 'null' : String(Math.floor(random() * 20000) - 5000);
      const z = random() < 0.05 ? 'null' : String(BigInt(Math.floor(random() * 2 ** 40)) * 4099n - 2n ** 45n);
      const y = random() < 0.1 ? 'null' : (Math.floor(random() * 2_000_000) / 1000 - 700).toFixed(3);
      const s = random() < 0.1 ? 'null' : `'w${Math.floor(random() * 100000)}'`;
      values.push(`(${k}, ${x}, ${z}, ${y}, ${s})`);
    }
    out.push(`insert into t values ${values.join(', ')}`);
  }
  return out;
}

const QUERIES = [
  'select count(*), count(x), sum(x), min(x), max(x), avg(x) from t',
  'select sum(z), avg(z), min(z), max(z), count(z) from t',
  'select sum(y), avg(y), min(y), max(y), min(s), max(s) from t',
  'select count(*), sum(x), avg(y) from t where z % 7 <> 0',
  'select count(*) filter (where x > 0), sum(x + 1), avg(x * 2) filter (where s < \'w5\') from t where y is not null',
  'select count(*), sum(x), avg(y), min(s), max(z) from t where x > 1000000',
  'select count(*), count(a), sum(a), avg(a), max(b), avg(b) from e',
  'select avg(y)::numeric(20,4) as rounded, count(*) + 1 as more from t',
];

async function rows(client: pg.Client, sql: string): Promise<unknown[][]> {
  return (await client.query({ text: sql, rowMode: 'array' })).rows as unknown[][];
}

async function explain(client: pg.Client, sql: string): Promise<string> {
  return (await rows(client, `explain ${sql}`)).map((row) => row[0]).join('\n');
}

let postgres: PostgresServer;

beforeAll(async () => {
  postgres = await startPostgres();
  for (const statement of [...SCHEMA, ...inserts()]) await postgres.query(statement);
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
});

for (const parallelism of [2, 4]) {
  describe(`at --parallelism ${parallelism}`, () => {
    let server: OxbowServer;
    let client: pg.Client;
    let oracle: pg.Client;

    beforeAll(async () => {
      server = await startOxbow({ args: ['--parallelism', String(parallelism)], env: { OXBOW_PARALLEL_SCAN_MIN_BYTES: '0' } });
      client = new pg.Client({ connectionString: server.url, types: rawTypes });
      await client.connect();
      oracle = new pg.Client({ connectionString: postgres.url, types: rawTypes });
      await oracle.connect();
      for (const statement of [...SCHEMA, ...inserts()]) await client.query(statement);
    }, 120_000);

    afterAll(async () => {
      await client?.end();
      await oracle?.end();
      await server?.stop();
    });

    it('answers as PostgreSQL 15 does, through the workers', async () => {
      for (const sql of QUERIES) {
        expect(await explain(client, sql), sql).toContain(`(${parallelism} workers, by key range)`);
        expect(await rows(client, sql), sql).toEqual(await rows(oracle, sql));
      }
    }, 120_000);

    it('runs the scan in the workers, not on the main thread', async () => {
      // EXPLAIN ANALYZE counts the rows each node yields on the main thread: the workers' scan yields none there.
      const lines = (await rows(client, 'explain analyze select count(*), sum(x) from t')).map((row) => String(row[0]));
      expect(lines.find((line) => line.includes('ParallelAggregate'))).toContain('actual rows=1 ');
      expect(lines.find((line) => line.includes('Scan public.t'))).toContain('loops=0 ');
    }, 60_000);

    it('reports a worker error with its SQLSTATE and keeps the session in sync', async () => {
      const sql = 'select count(*) from t where 10 / (k - k) > 0';
      expect(await explain(client, sql)).toContain('ParallelAggregate');
      const expected = await postgres.tryQuery(sql);
      expect(expected.ok).toBe(false);
      const error = await client.query(sql).then(
        () => undefined,
        (caught: { code?: string; message?: string }) => caught,
      );
      expect(error?.code).toBe(expected.ok ? undefined : expected.code);
      expect(error?.message).toBe('division by zero');
      expect(await rows(client, 'select count(*) from t')).toEqual([[String(ROWS)]]);
    }, 60_000);

    it('stops the workers at statement_timeout and keeps the session in sync', async () => {
      const sql = 'select count(*), sum(x) from t where length(s) > 0';
      expect(await explain(client, sql)).toContain('ParallelAggregate');
      await client.query("set statement_timeout = '1ms'");
      const error = await client.query(sql).then(
        () => undefined,
        (caught: { code?: string; message?: string }) => caught,
      );
      await client.query('set statement_timeout = 0');
      expect(error?.code).toBe('57014');
      expect(error?.message).toBe('canceling statement due to statement timeout');
      expect(await rows(client, sql)).toEqual(await rows(oracle, sql));
    }, 60_000);

    it('reads AS OF an older epoch and its own writes in a transaction block', async () => {
      const sql = 'select count(*), sum(x), avg(y), max(s) from t';
      const before = await rows(oracle, sql);
      const moment = (await rows(client, 'select now()::text'))[0]![0] as string;
      await new Promise((resolve) => setTimeout(resolve, 50));
      const change = [`delete from t where k % 5 = 0`, `update t set x = x + 3 where k % 3 = 0`, `insert into t values (${ROWS + 1}, 77, 1, 1.5, 'zz')`];
      await oracle.query('begin');
      await client.query('begin');
      for (const statement of change) {
        await oracle.query(statement);
        await client.query(statement);
      }
      // Inside the block, after its writes: the workers see them.
      expect(await explain(client, sql)).toContain('ParallelAggregate');
      expect(await rows(client, sql)).toEqual(await rows(oracle, sql));
      await oracle.query('commit');
      await client.query('commit');
      const asOf = `select count(*), sum(x), avg(y), max(s) from t for system_time as of '${moment}'::timestamptz`;
      expect(await explain(client, asOf)).toContain('ParallelAggregate');
      expect(await rows(client, asOf)).toEqual(before);
      expect(await rows(client, sql)).toEqual(await rows(oracle, sql));
      // Undo for the other parallelism's run (the oracle's data is shared).
      await oracle.query('delete from t');
      for (const statement of inserts()) await oracle.query(statement);
    }, 120_000);
  });
}
