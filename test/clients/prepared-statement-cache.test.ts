// The session's statement cache (executor/engine/prepared-statement-cache.ts) over the wire, against a
// real PostgreSQL 15: node-postgres sends every `client.query(text, values)` as an unnamed
// statement (Parse, Bind, Describe, Execute, Sync), which oxbow now prepares once per text, catalog
// and search path. Every outcome is compared with PostgreSQL's: the rows, the columns a Describe
// reports, the SQLSTATE of each error, across DDL, a changed search path, and named and unnamed
// statements of the same text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;

beforeAll(async () => {
  pair = await startPgPair(['create table t (id int primary key, g int, v bigint)', 'create schema other', 'create table other.t (id int primary key, g int, v bigint)']);
}, 120_000);

afterAll(async () => {
  await pair?.stop();
});

type Outcome = { ok: true; fields: string[]; rows: unknown[][]; rowCount: number | null } | { ok: false; code: string };

async function outcome(client: pg.Client, query: pg.QueryArrayConfig): Promise<Outcome> {
  try {
    const result = await client.query(query);
    return { ok: true, fields: result.fields.map((field) => field.name), rows: result.rows, rowCount: result.rowCount };
  } catch (error) {
    return { ok: false, code: (error as { code?: string }).code ?? '' };
  }
}

/** Runs the parameterized statement on both servers (unnamed unless `name`): the same outcome. */
async function same(text: string, values: unknown[], name?: string): Promise<Outcome> {
  const query: pg.QueryArrayConfig = { text, values, rowMode: 'array', ...(name === undefined ? {} : { name }) };
  const onPostgres = await outcome(pair.onPostgres, query);
  const onOxbow = await outcome(pair.onOxbow, query);
  expect(onOxbow, `${text} ${JSON.stringify(values)}`).toEqual(onPostgres);
  return onOxbow;
}

async function both(sql: string): Promise<void> {
  await Promise.all([pair.onPostgres.query(sql), pair.onOxbow.query(sql)]);
}

describe('unnamed statements of the same text', () => {
  it('insert and read what PostgreSQL does, the same text many times', async () => {
    for (let id = 1; id <= 20; id++) expect(await same('insert into t values ($1, $2, $3)', [id, id % 3, id * 7])).toMatchObject({ ok: true, rowCount: 1 });
    for (let g = 0; g < 3; g++) await same('select id, v from t where g = $1 order by id', [g]);
    await same('select g, count(*), sum(v) from t group by g order by g', []);
  });

  it('fail as PostgreSQL does, each time: a duplicate key, a value the parameter type refuses', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await same('insert into t values ($1, $2, $3)', [1, 0, 0])).toEqual({ ok: false, code: '23505' });
      expect(await same('insert into t values ($1, $2, $3)', ['x', 0, 0])).toEqual({ ok: false, code: '22P02' });
      expect(await same('select v from t where id = $1', ['1.5'])).toEqual({ ok: false, code: '22P02' });
    }
    await same('select count(*) from t', []);
  });

  it('follow DDL: a column added, the table dropped and created again', async () => {
    const select = 'select * from t where id = $1';
    await same(select, [2]);
    await both('alter table t add column s text');
    expect(await same(select, [2])).toMatchObject({ ok: true, fields: ['id', 'g', 'v', 's'] });
    await same('insert into t values ($1, $2, $3)', [100, 1, 1]);
    await same(select, [100]);
    await both('drop table t');
    expect(await same(select, [2])).toEqual({ ok: false, code: '42P01' });
    expect(await same('insert into t values ($1, $2, $3)', [1, 1, 1])).toEqual({ ok: false, code: '42P01' });
    await both('create table t (id int primary key, name text)');
    await same('insert into t values ($1, $2)', [1, 'again']);
    expect(await same(select, [1])).toMatchObject({ ok: true, fields: ['id', 'name'], rows: [['1', 'again']] });
  });

  it('follow the search path', async () => {
    await same('insert into other.t values ($1, $2, $3)', [1, 5, 50]);
    const select = 'select * from t where id = $1';
    await same(select, [1]);
    await both('set search_path = other, public');
    expect(await same(select, [1])).toMatchObject({ ok: true, fields: ['id', 'g', 'v'], rows: [['1', '5', '50']] });
    await both('set search_path = public');
    expect(await same(select, [1])).toMatchObject({ ok: true, fields: ['id', 'name'] });
  });

  it('share nothing wrong with a named statement of the same text', async () => {
    const text = 'select name from t where id = $1';
    await same(text, [1], 'named_select');
    await same(text, [1]);
    await same('insert into t values ($1, $2)', [2, 'two']);
    await same(text, [2], 'named_select');
    await same(text, [2]);
    await same(text, [3]);
  });
});
