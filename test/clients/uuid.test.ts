// The uuid type over the wire, compared with a real PostgreSQL 15: input forms and errors, output,
// ordering and comparisons, casts to and from text, gen_random_uuid(), a uuid primary key (key
// encoding: duplicates, lookups, ORDER BY), binary results and binary parameters (`pg`), COPY
// FROM STDIN / TO STDOUT through the real psql, and the pg_type row.
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
  pair = await startPgPair();
  ({ onOxbow, onPostgres, postgres, oxbow } = pair);
}, 120_000);

afterAll(() => pair?.stop());

async function outcome(client: pg.Client, text: string, values: unknown[] = [], binary = false): Promise<unknown> {
  try {
    const config: pg.QueryArrayConfig & { binary: boolean } = { text, values, rowMode: 'array', binary };
    const result = await client.query(config);
    return { rows: result.rows, types: result.fields.map((f) => f.dataTypeID), command: result.command, rowCount: result.rowCount };
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { code: e.code, message: e.message };
  }
}

async function same(text: string, values: unknown[] = [], binary = false): Promise<void> {
  const [mine, theirs] = await Promise.all([outcome(onOxbow, text, values, binary), outcome(onPostgres, text, values, binary)]);
  expect(mine, `${text} ${JSON.stringify(values)}`).toEqual(theirs);
}

const A = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';

describe('uuid compared with PostgreSQL', () => {
  it('input forms, output, comparisons and casts', async () => {
    await same(`select '${A.toUpperCase()}'::uuid as a, '{a0eebc999c0b4ef8bb6d6bb9bd380a11}'::uuid as b, 'a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11'::uuid as c`);
    for (const bad of ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111', '-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11', 'g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{a0eebc999c0b4ef8bb6d6bb9bd380a11', '']) {
      await same(`select '${bad}'::uuid`);
    }
    await same(`select '${A}'::uuid = '${A.toUpperCase()}'::uuid as eq, '${A}'::uuid < 'b0000000-0000-0000-0000-000000000000'::uuid as lt, '${A}'::uuid <> '${A}'::uuid as ne`);
    await same(`select '${A}'::uuid::text as t, ('${A}'::text)::uuid as u, '${A}'::uuid || '!' as cat, '${A}'::varchar::uuid as v`);
    // (PostgreSQL 15 has no min/max(uuid); oxbow's min/max take any ordered type.)
    await same(`select greatest('${A}'::uuid, 'ffffffff-0000-0000-0000-000000000000'::uuid), count(distinct x), count(x) from (values ('${A}'::uuid), (null), ('00000000-0000-0000-0000-000000000000'::uuid), ('${A}'::uuid)) v(x)`);
    await same(`select array['${A}'::uuid, null] as arr, pg_typeof('${A}'::uuid)::text as t`);
    await same('select $1::uuid as p', [A.toUpperCase()]);
  });

  it('gen_random_uuid: version 4, distinct per row', async () => {
    const result = await onOxbow.query({ text: 'select gen_random_uuid()::text as u from generate_series(1, 200)', rowMode: 'array' });
    const values = (result.rows as string[][]).map((r) => r[0]!);
    expect(new Set(values).size).toBe(200);
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await same('select pg_typeof(gen_random_uuid())::text, length(gen_random_uuid()::text)');
  });

  it('a uuid primary key: inserts, duplicates, lookups, order, group by, join', async () => {
    for (const sql of [
      'create table ut (id uuid primary key, v int)',
      `insert into ut values ('${A}', 1), ('00000000-0000-0000-0000-000000000002', 2), ('ffffffff-ffff-ffff-ffff-ffffffffffff', 3), ('80000000-0000-0000-0000-000000000000', 4)`,
    ]) {
      await same(sql);
    }
    await same(`insert into ut values ('${A.toUpperCase()}', 9)`);
    await same(`select v from ut where id = '${A.toUpperCase()}'`);
    await same(`select v from ut where id in ('${A}', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '12345678-1234-1234-1234-123456789012') order by v`);
    await same('select id, v from ut order by id');
    await same('select id, v from ut order by id desc limit 2');
    await same("select count(*) from ut where id > '7fffffff-ffff-ffff-ffff-ffffffffffff'");
    await same('select a.v, b.v from ut a join ut b on a.id = b.id order by 1');
    await same("update ut set v = v * 10 where id = '80000000-0000-0000-0000-000000000000' returning id, v");
    await same('select id::text, v from ut order by v');
  });

  it('binary results and binary parameters', async () => {
    await same(`select '${A}'::uuid as u, null::uuid as n`, [], true);
    await same('select id, v from ut order by id', [], true);
    const bytes = Buffer.from(A.replace(/-/g, ''), 'hex');
    await same('select $1::uuid as u', [bytes]);
    await same('select v from ut where id = $1', [bytes]);
    await same('select $1::uuid as u', [Buffer.from('0102', 'hex')]);
    await same('select $1::uuid as u', [Buffer.alloc(17)]);
    await same('select $1::int4 as i', [Buffer.from('0102', 'hex')]);
  });

  it('COPY FROM STDIN and TO STDOUT through psql, and the pg_type row', async () => {
    const psql = (port: number, sql: string, input?: string) =>
      spawnSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', '-c', sql], { input, encoding: 'utf8' });
    await same('create table uc (id uuid primary key, other uuid)');
    const data = `${A}\t\\N\n{00000000000000000000000000000001}\tFFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF\n`;
    const mine = psql(oxbow.port, 'copy uc from stdin', data);
    const theirs = spawnSync('psql', ['-X', '-q', postgres.url, '-c', 'copy uc from stdin'], { input: data, encoding: 'utf8' });
    expect(mine.stderr).toBe(theirs.stderr);
    const mineOut = psql(oxbow.port, 'copy (select * from uc order by id) to stdout');
    const theirsOut = spawnSync('psql', ['-X', '-q', postgres.url, '-c', 'copy (select * from uc order by id) to stdout'], { encoding: 'utf8' });
    expect(mineOut.stdout).toBe(theirsOut.stdout);
    expect(mineOut.stdout).toContain(`${A}\t\\N`);
    await same("select typname, typlen, typarray, typcategory from pg_type where oid in (2950, 2951) order by oid");
    await same("select format_type(2950, -1), 'uuid'::regtype::oid::int");
  });
});
