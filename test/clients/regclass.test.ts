// reg* types over the wire, compared with a real PostgreSQL 15: regclass, regtype, regproc,
// regprocedure and regnamespace print names (schema-qualified when off the search path, the number for an OID
// that names nothing), read names, cast to and from oid and text, fail with PostgreSQL's
// SQLSTATEs; psql's \d of a table still matches PostgreSQL's output.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServer } from '../support/postgres.js';
import { startPgPair, type PgPair } from '../support/pg-pair.js';
import type { OxbowServer } from '../support/server.js';

let pair: PgPair;
let postgres: PostgresServer;
let oxbow: OxbowServer;
let onOxbow: pg.Client;
let onPostgres: pg.Client;

beforeAll(async () => {
  pair = await startPgPair(['create table rc_t (id int primary key, v text)', 'create schema rc_s', 'create table rc_s.inner_t (a int)', 'create table "Mixed Case" (a int)']);
  ({ onOxbow, onPostgres, postgres, oxbow } = pair);
}, 120_000);

afterAll(() => pair?.stop());

async function outcome(client: pg.Client, text: string, values: unknown[] = []): Promise<unknown> {
  try {
    const result = await client.query({ text, values, rowMode: 'array' });
    return { rows: result.rows, types: result.fields.map((f) => f.dataTypeID) };
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { code: e.code, message: e.message };
  }
}

async function same(text: string, values: unknown[] = []): Promise<void> {
  const [mine, theirs] = await Promise.all([outcome(onOxbow, text, values), outcome(onPostgres, text, values)]);
  expect(mine, `${text} ${JSON.stringify(values)}`).toEqual(theirs);
}

describe('reg* types compared with PostgreSQL', () => {
  it('regclass prints relation names', async () => {
    await same("select 'rc_t'::regclass, 'public.rc_t'::regclass, 'rc_s.inner_t'::regclass, '\"Mixed Case\"'::regclass");
    await same("select 'pg_class'::regclass, 'pg_class'::regclass::oid, 1259::regclass, 'pg_catalog.pg_type'::regclass");
    await same("select 'rc_t'::regclass::text, ('rc_t'::regclass)::oid = (select oid from pg_class where relname = 'rc_t')");
    await same("select c.oid::regclass from pg_class c where c.relname in ('rc_t', 'inner_t', 'Mixed Case') order by c.relname");
    await same("select c.oid::regclass::text from pg_class c where c.relname = 'rc_t'");
    await same('select 4000000000::oid::regclass');
    await same("select 'no_such_table'::regclass");
    await same("select 'rc_s.no_such'::regclass");
  });

  it('regtype, regproc and regnamespace', async () => {
    await same("select 'int4'::regtype, 23::regtype, 'integer'::regtype, 'character varying'::regtype, 1043::regtype::text, 'timestamptz'::regtype, 'uuid'::regtype");
    await same("select 'int4'::regtype::oid, 'text'::regtype::oid::int");
    await same("select 'no_such_type'::regtype");
    await same("select 'now'::regproc, 'now'::regproc::oid, 'pg_catalog.now'::regproc, 1299::regproc, 'now'::regproc::text");
    await same("select 'abs'::regproc");
    await same("select 'abs(integer)'::regprocedure, 'now()'::regprocedure, 'now()'::regprocedure::oid, 'abs(integer)'::regprocedure::regproc, 1299::regprocedure, 'length(text)'::regprocedure::text");
    await same("select 'pg_catalog.abs(bigint)'::regprocedure::oid, 'upper(text)'::regprocedure");
    await same("select 'abs(uuid)'::regprocedure");
    await same("select 'abs'::regprocedure");
    await same("select 'no_such_function'::regproc");
    await same("select 'public'::regnamespace, 2200::regnamespace, 'pg_catalog'::regnamespace::oid, 'rc_s'::regnamespace::text");
    await same("select 'no_such_schema'::regnamespace");
    await same('select $1::regclass::oid = $1::oid, $2::regtype', [1259, 20]);
    await same('select $1::regclass::text, $2::regtype, $3::regnamespace, $4::regproc', ['rc_t', 'bigint', 'rc_s', 'now']);
    await same('select $1::regclass', ['no_such_table']);
  });

  it("psql's \\d NAME matches PostgreSQL", () => {
    const psql = (args: readonly string[]) => spawnSync('psql', ['-X', ...args], { encoding: 'utf8' });
    for (const command of ['\\d rc_t', '\\d rc_s.inner_t', '\\d "Mixed Case"']) {
      const mine = psql(['-h', '127.0.0.1', '-p', String(oxbow.port), '-U', 'oxbow', '-d', 'oxbow', '-c', command]);
      const theirs = psql([postgres.url, '-c', command]);
      expect(mine.stderr, command).toBe(theirs.stderr);
      expect(mine.stdout, command).toBe(theirs.stdout);
    }
  });
});
