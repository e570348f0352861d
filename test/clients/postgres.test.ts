// `postgres` (porsager) against the real oxbow server and a real PostgreSQL 15: named prepared
// statements reused across calls, pipelining of many queries on one connection, cursors (Execute
// with a row limit and PortalSuspended), COPY FROM STDIN / TO STDOUT streams, multi-statement
// simple queries and errors. Both servers must give the same answers.
import { once } from 'node:events';
import postgresClient from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;
type Sql = ReturnType<typeof postgresClient>;
let onOxbow: Sql;
let onPostgres: Sql;

beforeAll(async () => {
  [postgres, oxbow] = await Promise.all([startPostgres(), startOxbow()]);
  // One connection each, so concurrent queries are pipelined on it; prepare: true names statements.
  onOxbow = postgresClient(oxbow.url, { max: 1, prepare: true, onnotice: () => {} });
  onPostgres = postgresClient(postgres.url, { max: 1, prepare: true, onnotice: () => {} });
  for (const sql of [onOxbow, onPostgres]) {
    await sql`create table kv (k int primary key, v text, amount bigint)`;
  }
}, 120_000);

afterAll(async () => {
  await onOxbow?.end({ timeout: 5 });
  await onPostgres?.end({ timeout: 5 });
  await oxbow?.stop();
  await postgres?.stop();
});

async function both<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
  const mine = await work(onOxbow);
  const theirs = await work(onPostgres);
  expect(mine).toEqual(theirs);
  return mine;
}

describe('postgres (porsager)', () => {
  it('named prepared statements are reused with new parameters', async () => {
    const rows = await both(async (sql) => {
      const out: unknown[] = [];
      for (let i = 1; i <= 5; i++) {
        // postgres serializes a bigint parameter, though its typings leave bigint out.
        await sql`insert into kv (k, v, amount) values (${i}, ${`v${i}`}, ${(BigInt(i) * 10n ** 15n) as unknown as number})`;
        out.push(...(await sql`select k, v, amount from kv where k = ${i}`));
      }
      return out;
    });
    expect(rows).toHaveLength(5);
  });

  it('pipelines 200 queries on one connection, answers in order', async () => {
    const results = await both((sql) => Promise.all(Array.from({ length: 200 }, (_, i) => sql`select ${i}::int * 2 as twice, ${`n${i}`}::text as label`)));
    results.forEach((result, i) => expect(result[0]).toEqual({ twice: i * 2, label: `n${i}` }));
  });

  it('a failing query in a pipeline fails alone', async () => {
    const outcomes = await both((sql) =>
      Promise.allSettled([sql`select 1 as a`, sql`select 1/0 as b`, sql`select 3 as c`]).then((settled) =>
        settled.map((entry) => (entry.status === 'fulfilled' ? [...entry.value] : { code: (entry.reason as { code?: string }).code })),
      ),
    );
    expect(outcomes).toEqual([[{ a: 1 }], { code: '22012' }, [{ c: 3 }]]);
  });

  it('cursors fetch in batches (Execute with a row limit, PortalSuspended)', async () => {
    const batches = await both(async (sql) => {
      const sizes: number[] = [];
      const values: number[] = [];
      await sql`select g from generate_series(1, 25) as g order by g`.cursor(10, (rows) => {
        sizes.push(rows.length);
        values.push(...rows.map((row) => row.g as number));
      });
      return { sizes, values };
    });
    expect(batches.sizes).toEqual([10, 10, 5]);
    expect(batches.values).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it('COPY FROM STDIN and COPY TO STDOUT streams', async () => {
    const copied = await both(async (sql) => {
      const writable = await sql`copy kv (k, v, amount) from stdin`.writable();
      for (let k = 100; k < 1100; k++) writable.write(`${k}\tcopied ${k}\t${k * 3}\n`);
      writable.end();
      await once(writable, 'finish');
      const [{ count }] = await sql`select count(*)::int as count from kv where k >= 100`;
      const readable = await sql`copy (select k, v from kv where k between 100 and 104 order by k) to stdout`.readable();
      let text = '';
      for await (const chunk of readable) text += chunk.toString();
      return { count, text };
    });
    expect(copied.count).toBe(1000);
    expect(copied.text).toBe('100\tcopied 100\n101\tcopied 101\n102\tcopied 102\n103\tcopied 103\n104\tcopied 104\n');
  });

  it('multi-statement simple queries and errors with their codes', async () => {
    await both(async (sql) => {
      const results = await sql.unsafe('select 1 as one; select 2 as two');
      return results.map((result: unknown) => [...(result as unknown[])]);
    });
    await both(async (sql) => {
      try {
        await sql`select missing_column from kv`;
        return 'no error';
      } catch (error) {
        return (error as { code?: string }).code;
      }
    });
  });
});
