// node-postgres (`pg`) against the real oxbow server (startOxbow: the built CLI, real engine,
// RocksDB) and against a real PostgreSQL 15: parameterised queries over the extended protocol give
// the same text values, column types, command tags and SQLSTATEs on both.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;
let onOxbow: pg.Client;
let onPostgres: pg.Client;

beforeAll(async () => {
  pair = await startPgPair();
  ({ onOxbow, onPostgres } = pair);
}, 120_000);

afterAll(() => pair?.stop());

type Outcome = { rows: unknown[][]; types: number[]; command: string; rowCount: number | null } | { code: string | undefined; position: string | undefined };

async function run(client: pg.Client, text: string, values: unknown[] = []): Promise<Outcome> {
  try {
    const result = await client.query({ text, values, rowMode: 'array' });
    return { rows: result.rows as unknown[][], types: result.fields.map((field) => field.dataTypeID), command: result.command, rowCount: result.rowCount };
  } catch (error) {
    const failure = error as { code?: string; position?: string };
    return { code: failure.code, position: failure.position };
  }
}

async function same(text: string, values: unknown[] = []): Promise<Outcome> {
  const [mine, theirs] = await Promise.all([run(onOxbow, text, values), run(onPostgres, text, values)]);
  expect(mine, `${text} ${JSON.stringify(values)}`).toEqual(theirs);
  return mine;
}

describe('pg (node-postgres) with parameters, compared with PostgreSQL', () => {
  it('typed parameters of the common types', async () => {
    await same('select $1::int + 1 as x', [41]);
    await same('select $1::bigint as a, $2::text as b, $3::bool as c, $4::numeric as d, $5::float8 as e', ['9007199254740993', 'hé ✓', true, '12.340', 1.25]);
    await same('select $1::date as a, $2::timestamptz as b, $3::timestamp as c, $4::interval as d', ['2024-02-29', '2024-01-02 03:04:05+00', '2024-01-02 03:04:05.123456', '1 day 02:03:04']);
    await same('select $1::jsonb as a, $2::bytea as b, $3::smallint as c, $4::varchar as d', ['{"b": [1, 2], "a": null}', Buffer.from([0, 1, 255]), 7, 'v']);
    await same('select $1::int as a, $2::text as b', [null, null]);
    await same('select $1 || $2 as a', ['left', 'right']);
  });

  it('DML with parameters, RETURNING, and reading back', async () => {
    await same('create table pt (id int primary key, v text, n numeric(8,2))');
    await same('insert into pt values ($1, $2, $3)', [1, 'one', '1.5']);
    await same('insert into pt values ($1, $2, $3), ($4, $5, $6) returning id, v', [2, 'two', '2', 3, null, '-3.25']);
    await same('select * from pt where id >= $1 order by id', [1]);
    await same('update pt set v = $1 where id = $2', ['uno', 1]);
    await same('delete from pt where id = $1', [2]);
    await same('select * from pt order by id');
  });

  it('errors carry the same SQLSTATE and position', async () => {
    const missing = await same('select nope from pt');
    expect(missing).toMatchObject({ code: '42703' });
    await same('select $1::int', ['abc']);
    await same('select 1/$1::int', [0]);
    await same('insert into pt values ($1, $2, $3)', [1, 'duplicate', '0']);
    // The connection is usable after each error.
    await same('select count(*) from pt');
  });

  it('a wrong number of parameters is refused by the server (08P01)', async () => {
    await same('select 1', [1]);
  });

  it('many parameters and a larger result', async () => {
    const values = Array.from({ length: 100 }, (_, i) => i);
    await same(`select ${values.map((_, i) => `$${i + 1}::int`).join(' + ')} as total`, values);
    await same('select g, g * 2 as twice, (g::text || $1) as label from generate_series(1, 3000) as g order by g', ['x']);
  });
});
