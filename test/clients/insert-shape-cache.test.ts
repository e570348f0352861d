// The INSERT ... VALUES plan cache (executor/engine/insert-shape-cache.ts) over the wire, against a real
// PostgreSQL 15: statements that differ only in their literals run one cached plan, so every
// outcome here is compared with PostgreSQL's (rows written, SQLSTATE and position of each error),
// and each error also with oxbow's own ordinary path (the same text with a trailing comment, which
// the shape recognizer leaves to the parser): the message must be the same. A cached plan must
// follow DDL (ALTER, DROP, CREATE of the table it writes) and the search path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;

beforeAll(async () => {
  pair = await startPgPair([
    'create table t (id int primary key, s text, v varchar(3), n numeric(10,2), b bool, big bigint, f float8, d date, sm smallint, j jsonb, dflt int default 42)',
  ]);
}, 120_000);

afterAll(async () => {
  if (positionsUnlikePostgres.length > 0) console.log(`positions unlike PostgreSQL's (the ordinary path's as well):\n${positionsUnlikePostgres.join('\n')}`);
  await pair?.stop();
});

type Outcome = { ok: true; rowCount: number | null } | { ok: false; code: string; position: string | undefined; message: string };

async function outcome(client: pg.Client, sql: string): Promise<Outcome> {
  try {
    const result = await client.query(sql);
    return { ok: true, rowCount: result.rowCount };
  } catch (error) {
    const failure = error as { code?: string; position?: string; message: string };
    return { ok: false, code: failure.code ?? '', position: failure.position, message: failure.message };
  }
}

/** Errors whose position differs from PostgreSQL's on oxbow's ordinary path too (not the cache's doing). */
const positionsUnlikePostgres: string[] = [];

/**
 * Runs `sql` on both servers: the same success or the same SQLSTATE; an error's position and
 * message equal those of oxbow's ordinary path.
 */
async function same(sql: string): Promise<Outcome> {
  const onPostgres = await outcome(pair.onPostgres, sql);
  const onOxbow = await outcome(pair.onOxbow, sql);
  if (onPostgres.ok) {
    expect(onOxbow, sql).toEqual(onPostgres);
  } else {
    expect(onOxbow.ok, `${sql}: ${onOxbow.ok ? 'succeeded on oxbow' : onOxbow.message}`).toBe(false);
    if (!onOxbow.ok) {
      expect(onOxbow.code, sql).toBe(onPostgres.code);
      if (onOxbow.position !== onPostgres.position) positionsUnlikePostgres.push(`${sql}: ${onOxbow.position} vs ${onPostgres.position}`);
      const ordinary = await outcome(pair.onOxbow, `${sql} -- the ordinary path`);
      expect(ordinary, sql).toEqual(onOxbow);
    }
  }
  return onOxbow;
}

async function sameRows(sql: string): Promise<void> {
  const [onPostgres, onOxbow] = await Promise.all([pair.onPostgres.query({ text: sql, rowMode: 'array' }), pair.onOxbow.query({ text: sql, rowMode: 'array' })]);
  expect(onOxbow.rows, sql).toEqual(onPostgres.rows);
}

describe('INSERT ... VALUES from the cached shape', () => {
  it('checks the ordinary path against the cached one (a trailing comment is not lifted)', async () => {
    // The oracle of the error tests: the commented text must take the ordinary path, or they would compare the cache with itself.
    const failure = await outcome(pair.onOxbow, "insert into t (id, s) values ('not a number', 'x') -- c");
    expect(failure).toMatchObject({ ok: false, code: '22P02', position: '31' });
  });

  it('writes what PostgreSQL writes for every literal type, NULLs, negative numbers and quoted strings', async () => {
    const statements = [
      "insert into t (id, s) values (1, 'a')",
      "insert into t (id, s) values (2, 'it''s')",
      "insert into t (id, s) values (-3, '')",
      'insert into t (id, s) values (4, NULL)',
      "insert into t (id, s) values (5, 'back\\slash \"q\"')",
      'insert into t (id, n, f, big, sm) values (10, 1.5, -2.25, 9000000000, -32768)',
      'insert into t (id, n, f, big, sm) values (11, -0.005, 1e3, -9223372036854775807, 32767)',
      'insert into t (id, n, f, big, sm) values (12, 7, .5, 12, 0)',
      'insert into t (id, n, f, big, sm) values (13, NULL, NULL, NULL, NULL)',
      "insert into t (id, b, d, j) values (20, true, '2024-02-29', '{\"k\": [1, 2]}')",
      "insert into t (id, b, d, j) values (21, FALSE, '1999-12-31', 'null')",
      "insert into t (id, b, d, j) values (22, 't', 'today', '[]')",
      "insert into t (id, b, d, j) values (23, NULL, NULL, NULL)",
      "insert into t values (30, 'x', 'abc', 1.25, true, 1, 1.5, '2020-01-01', 1, '1', default)",
      "insert into t values (31, 'y', 'ab', 2, false, 2, 2, '2020-01-02', 2, '2', 5)",
      "insert into t values (32, 'z', 'a', 3.5, NULL, 3, 3, '2020-01-03', 3, '3', NULL)",
      "insert into t (id, s) values (40, 'm1'), (41, 'm2'), (42, NULL)",
      "insert into t (id, s) values (43, 'm3'), (44, 'm4'), (45, 'm5')",
      'insert into t (id, s, v) values (50, 1, 2)',
      'insert into t (id, s, v) values (51, 22, 333)',
      "insert into t (id, big) values ('60', '123')",
      "insert into t (id, big) values ('61', '-456')",
      'insert into t (id, n) values (62, 12345678.125)',
      'insert into t (id, n) values (63, 99999999.994)',
    ];
    for (const sql of statements) expect((await same(sql)).ok, sql).toBe(true);
    await sameRows('select * from t order by id');
  });

  it('answers errors with PostgreSQL\'s SQLSTATE and position, and the ordinary path\'s message', async () => {
    const statements = [
      "insert into t (id, s) values (100, 'ok')",
      "insert into t (id, s) values ('abc', 'x')",
      "insert into t (id, s) values (101, 'x')",
      'insert into t (id, sm) values (102, 40000)',
      'insert into t (id, sm) values (103, -40000)',
      "insert into t (id, v) values (104, 'abcd')",
      "insert into t (id, v) values (105, 'abc')",
      "insert into t (id, v) values (106, 'abcde')",
      "insert into t (id, s) values (100, 'duplicate')",
      "insert into t (id, s) values (NULL, 'null key')",
      'insert into t (id, b) values (107, 1)',
      'insert into t (id, b) values (108, 2)',
      "insert into t (id, d) values (109, 'not a date')",
      "insert into t (id, d) values (110, '2021-02-30')",
      "insert into t (id, j) values (111, '{bad')",
      'insert into t (id, n) values (112, 123456789.5)',
      'insert into t (id, s) values (113, \'a\', 1)',
      'insert into t (id, nope) values (114, 1)',
      'insert into nope values (1)',
      'insert into t (id, big) values (115, 9223372036854775808)',
      'insert into t (id) values (2147483648)',
      "insert into t (id, s) values (116, 'after the errors')",
    ];
    for (const sql of statements) await same(sql);
    await sameRows('select * from t where id >= 100 order by id');
  });

  it('follows ALTER, DROP and CREATE of the table a cached plan writes', async () => {
    await Promise.all([pair.onOxbow.query('create table u (id int primary key, s text)'), pair.onPostgres.query('create table u (id int primary key, s text)')]);
    await same("insert into u values (1, 'one')");
    await same("insert into u values (2, 'two')");
    for (const ddl of ['alter table u add column c int default 7']) await Promise.all([pair.onOxbow.query(ddl), pair.onPostgres.query(ddl)]);
    await same("insert into u values (3, 'three')");
    await same("insert into u values (4, 'four', -4)");
    await sameRows('select * from u order by id');
    for (const ddl of ['drop table u']) await Promise.all([pair.onOxbow.query(ddl), pair.onPostgres.query(ddl)]);
    expect((await same("insert into u values (5, 'five')")).ok).toBe(false);
    for (const ddl of ['create table u (id int primary key, s int)']) await Promise.all([pair.onOxbow.query(ddl), pair.onPostgres.query(ddl)]);
    expect((await same("insert into u values (6, '66')")).ok).toBe(true);
    expect((await same("insert into u values (7, 'seven')")).ok).toBe(false);
    expect((await same('insert into u values (8, 8.5)')).ok).toBe(true);
    await sameRows('select * from u order by id');
  });

  it('follows the search path', async () => {
    for (const ddl of ['create schema other', 'create table w (id int primary key, s text)', 'create table other.w (id int primary key, s text, extra int default 9)']) {
      await Promise.all([pair.onOxbow.query(ddl), pair.onPostgres.query(ddl)]);
    }
    await same("insert into w values (1, 'public')");
    for (const set of ['set search_path = other, public']) await Promise.all([pair.onOxbow.query(set), pair.onPostgres.query(set)]);
    await same("insert into w values (1, 'other')");
    await same("insert into w values (2, 'other', 3)");
    for (const set of ['set search_path = public']) await Promise.all([pair.onOxbow.query(set), pair.onPostgres.query(set)]);
    await same("insert into w values (2, 'public')");
    await same("insert into w values (3, 'public', 3)");
    await sameRows('select * from public.w order by id');
    await sameRows('select * from other.w order by id');
  });
});
