// Secondary indexes (CREATE [UNIQUE] INDEX on a table, executor/catalog/secondary-index.ts) over the wire
// with `pg`, against the real oxbow server and a real PostgreSQL 15 given the same statements:
// after a seeded random sequence of INSERT / ON CONFLICT / UPDATE / DELETE / COPY-free writes,
// point SELECTs by indexed non-key columns (which EXPLAIN shows as index lookups) return
// PostgreSQL's rows, and the same rows as the query written so that it must scan; the same holds
// after a restart on the same data directory. UNIQUE violations (on INSERT, UPDATE and CREATE)
// give PostgreSQL's SQLSTATE, message and detail; DROP INDEX and DROP TABLE remove the index.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { seededRandom } from '../support/seeded-random.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;
let onOxbow: pg.Client;
let onPostgres: pg.Client;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-index-'));

const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

async function connectOxbow(): Promise<void> {
  oxbow = await startOxbow({ dataDir });
  onOxbow = new pg.Client({ connectionString: oxbow.url, types: rawTypes });
  await onOxbow.connect();
}

beforeAll(async () => {
  postgres = await startPostgres();
  onPostgres = new pg.Client({ connectionString: postgres.url, types: rawTypes });
  await Promise.all([connectOxbow(), onPostgres.connect()]);
  for (const sql of [
    'create table ix (id int primary key, a int, b text, c bigint)',
    "insert into ix select g, g % 17, 'b' || (g % 5), g * 3 from generate_series(1, 500) g",
    'create index ix_a on ix (a)',
    'create index ix_b_a on ix (b, a)',
    'create unique index ix_c on ix (c)',
    'create table nk (a int, b text)',
    "insert into nk select g % 7, 't' || g from generate_series(1, 100) g",
    'create index nk_a on nk (a)',
  ]) {
    await Promise.all([onOxbow.query(sql), onPostgres.query(sql)]);
  }
  // Materialized views over ix (oxbow only; PostgreSQL answers the same query over ix), with
  // indexes on a grouping column and on a column whose rows repeat (duplicate numbers).
  for (const sql of [
    'create materialized view ixg as select a, b, count(*) as n, sum(c) as s from ix group by a, b',
    'create index ixg_a on ixg (a)',
    'create materialized view ixd as select a, b from ix',
    'create index ixd_a on ixd (a)',
  ]) {
    await onOxbow.query(sql);
  }
}, 120_000);

afterAll(async () => {
  await onOxbow?.end();
  await onPostgres?.end();
  await oxbow?.stop();
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function rows(client: pg.Client, text: string, values: unknown[] = []): Promise<unknown> {
  try {
    const result = await client.query({ text, values, rowMode: 'array' });
    return { rows: result.rows, command: result.command, rowCount: result.rowCount };
  } catch (error) {
    const e = error as { code?: string; message?: string; detail?: string };
    return { code: e.code, message: e.message, detail: e.detail };
  }
}

async function same(text: string, values: unknown[] = []): Promise<void> {
  const [mine, theirs] = await Promise.all([rows(onOxbow, text, values), rows(onPostgres, text, values)]);
  expect(mine, `${text} ${JSON.stringify(values)}`).toEqual(theirs);
}

/** A query on oxbow (a materialized view) against its definition's answer on PostgreSQL. */
async function like(onView: string, onTables: string): Promise<void> {
  const [mine, theirs] = await Promise.all([rows(onOxbow, onView), rows(onPostgres, onTables)]);
  expect((mine as { rows: unknown }).rows, onView).toEqual((theirs as { rows: unknown }).rows);
}

async function plan(text: string): Promise<string> {
  const result = await onOxbow.query({ text: `explain ${text}`, rowMode: 'array' });
  return (result.rows as string[][]).map((r) => r[0]).join('\n');
}


/** Every indexed read compared with PostgreSQL and with the same read forced to scan (`+ 0`, `|| ''`). */
async function checkReads(): Promise<void> {
  for (let a = -1; a <= 17; a += 3) {
    await same(`select * from ix where a = ${a} order by id`);
    await same(`select id from ix where b = 'b${a % 5}' and a = ${a} order by id`);
    await same(`select id from ix where b = 'b${a % 5}' order by id`);
    await same(`select count(*) from nk where a = ${a}`);
    const indexed = await rows(onOxbow, `select * from ix where a = ${a} order by id`);
    const scanned = await rows(onOxbow, `select * from ix where a + 0 = ${a} order by id`);
    expect(indexed).toEqual(scanned);
  }
  for (let a = 0; a <= 17; a += 4) {
    await like(`select b, n, s from ixg where a = ${a} order by b`, `select b, count(*) as n, sum(c) as s from ix where a = ${a} group by a, b order by b`);
    await like(`select b from ixd where a = ${a} order by b`, `select b from ix where a = ${a} order by b`);
    expect(await rows(onOxbow, `select b from ixd where a + 0 = ${a} order by b`)).toEqual(await rows(onOxbow, `select b from ixd where a = ${a} order by b`));
  }
  await like('select b, n from ixg where a is null order by b', 'select b, count(*) from ix where a is null group by b order by b');
  for (const c of [3, 300, 1500, 1501, 999999]) await same(`select id, a from ix where c = ${c}`);
  await same('select id from ix where a in (1, 2, 16) order by id');
  await same('select * from ix where a = $1 order by id', [4]);
  await same('select * from ix where a is null order by id');
}

describe('secondary indexes', () => {
  it('EXPLAIN shows an index lookup by the longest pinned prefix, and a scan otherwise', async () => {
    expect(await plan('select * from ix where a = 3')).toContain('index lookup ix_a (a) = (3)');
    expect(await plan("select * from ix where b = 'b1' and a = 3")).toContain("index lookup ix_b_a (b, a) = ('b1', 3)");
    expect(await plan("select * from ix where b = 'b1'")).toContain("index lookup ix_b_a (b) = ('b1')");
    expect(await plan('select * from ix where c = 9')).toContain('index lookup ix_c (c) = (9)');
    expect(await plan('select * from ix where id = 9 and a = 3')).toContain('lookup (id) = (9)');
    expect(await plan('select * from ix where id = 9 and a = 3')).not.toContain('index lookup');
    expect(await plan('select * from ix where a + 0 = 3')).not.toContain('lookup');
    expect(await plan('select * from nk where a = 3')).toContain('index lookup nk_a (a) = (3)');
    expect(await plan('select * from ixg where a = 3')).toContain('index lookup ixg_a (a) = (3)');
    expect(await plan('select * from ixd where a = 3')).toContain('index lookup ixd_a (a) = (3)');
  });

  it('reads equal PostgreSQL and a scan after random INSERT / UPDATE / DELETE, and after a restart', async () => {
    await checkReads();
    const next = seededRandom(20261129);
    const pick = (n: number) => Math.floor(next() * n);
    for (let step = 0; step < 120; step++) {
      const id = 1 + pick(600);
      const a = pick(6) === 0 ? 'null' : String(pick(17));
      const statement = [
        () => `insert into ix values (${id}, ${a}, 'b${pick(5)}', ${1000000 + step}) on conflict (id) do update set a = excluded.a, b = excluded.b`,
        () => `update ix set a = ${a}, b = 'b${pick(5)}' where id = ${id}`,
        () => `update ix set a = a + 1 where a = ${pick(17)}`,
        () => `delete from ix where id = ${id}`,
        () => `delete from ix where a = ${pick(17)} and id % 3 = 0`,
        () => `insert into nk values (${a}, 'r${step}')`,
        () => `update nk set a = ${a} where b = 't${1 + pick(100)}'`,
        () => `delete from nk where a = ${pick(7)} and b like '%${pick(10)}'`,
      ][pick(8)]!();
      await same(statement);
      if (step % 30 === 29) await checkReads();
    }
    await checkReads();
    await onOxbow.end();
    await oxbow.stop();
    await connectOxbow();
    expect(await plan('select * from ix where a = 3')).toContain('index lookup ix_a (a) = (3)');
    await checkReads();
  }, 120_000);

  it('a UNIQUE index refuses duplicates as PostgreSQL does; NULLs are distinct', async () => {
    await same('insert into ix values (9001, 1, null, 3)');
    await same('update ix set c = 6 where id = 1');
    await same('insert into ix values (9002, 1, null, null), (9003, 1, null, null)');
    await same('select id from ix where c is null order by id');
    // Which duplicate PostgreSQL names depends on its scan order: compare code and message.
    const [mine, theirs] = await Promise.all([rows(onOxbow, 'create unique index ix_a_unique on ix (a)'), rows(onPostgres, 'create unique index ix_a_unique on ix (a)')]);
    expect({ ...(mine as object), detail: undefined }).toEqual({ ...(theirs as object), detail: undefined });
    expect((mine as { detail: string }).detail).toMatch(/^Key \(a\)=\(\d+\) is duplicated\.$/);
    await same('create unique index nk_b on nk (b)');
    await same("insert into nk values (1, 't5')");
    await same('select count(*) from nk where b = $1', ['t5']);
  });

  it('AS OF reads the index as of that moment, and the table before the index existed', async () => {
    await onOxbow.query('create table tt (id int primary key, a int)');
    await onOxbow.query('insert into tt select g, g % 4 from generate_series(1, 40) g');
    const before = ((await onOxbow.query({ text: 'select now()::text', rowMode: 'array' })).rows[0] as string[])[0]!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    await onOxbow.query('create index tt_a on tt (a)');
    await onOxbow.query('update tt set a = 9 where id <= 10');
    const after = ((await onOxbow.query({ text: 'select now()::text', rowMode: 'array' })).rows[0] as string[])[0]!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    await onOxbow.query('delete from tt where a = 9');
    // Expected sets worked out from the statements: a = id % 4, then ids 1..10 set to 9, then deleted.
    const ids = (f: (id: number) => boolean) => Array.from({ length: 40 }, (_, i) => i + 1).filter(f).map((id) => [String(id)]);
    for (const [moment, a, expected] of [
      [before, 1, ids((id) => id % 4 === 1)],
      [before, 9, []],
      [after, 1, ids((id) => id % 4 === 1 && id > 10)],
      [after, 9, ids((id) => id <= 10)],
    ] as const) {
      const text = `select id from tt for system_time as of '${moment}'::timestamptz where a = ${a} order by id`;
      expect(await plan(text)).toContain('index lookup tt_a (a)');
      expect((await rows(onOxbow, text)) as { rows: unknown }).toMatchObject({ rows: expected });
    }
    expect(await rows(onOxbow, 'select id from tt where a = 9')).toMatchObject({ rows: [] });
  });

  it('DROP INDEX, IF NOT EXISTS, and DROP TABLE take the index with them', async () => {
    await same('create index if not exists ix_a on ix (b)');
    await same('drop index ix_a');
    expect(await plan('select * from ix where a = 3')).not.toContain('ix_a');
    await same('select * from ix where a = 3 order by id');
    await same('drop index ix_a');
    await same('create index ix_a on ix (a)');
    await checkReads();
    await onOxbow.query('drop index ixd_a');
    await like('select b from ixd where a = 3 order by b', 'select b from ix where a = 3 order by b');
    await onOxbow.query('drop materialized view ixg');
    await same('drop table nk');
    await same('create table nk (a int, b text)');
    await same('create index nk_a on nk (a)');
    await same('select * from nk where a = 1');
  });
});
