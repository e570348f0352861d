// Primary-key point lookups (planner rule index_lookup) over the wire with `pg`, against the real
// oxbow server and a real PostgreSQL 15 holding the same rows: `=`, `IN`, composite keys,
// parameters, cross-type integer keys, keys out of the column's range, NULL, missing keys, and
// reads after UPDATE / DELETE give PostgreSQL's rows. EXPLAIN shows the lookup; AS OF lookups
// agree with the same query written so that it must scan (`id + 0 = ...`).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;
let onOxbow: pg.Client;
let onPostgres: pg.Client;

beforeAll(async () => {
  pair = await startPgPair([
    'create table lk (id int primary key, v text, n bigint)',
    "insert into lk select g, 'v' || g, g * 10 from generate_series(1, 2000) g",
    'create table lk2 (a bigint, b text, c int, primary key (a, b))',
    "insert into lk2 select g % 50, 'k' || (g / 50), g from generate_series(1, 1000) g",
    'create table lk8 (id bigint primary key, v text)',
    "insert into lk8 values (1, 'one'), (9007199254740993, 'big'), (-5, 'neg')",
  ]);
  ({ onOxbow, onPostgres } = pair);
}, 120_000);

afterAll(() => pair?.stop());

async function rows(client: pg.Client, text: string, values: unknown[] = []): Promise<unknown> {
  try {
    const result = await client.query({ text, values, rowMode: 'array' });
    return { rows: result.rows, command: result.command, rowCount: result.rowCount };
  } catch (error) {
    return { code: (error as { code?: string }).code };
  }
}

async function same(text: string, values: unknown[] = []): Promise<void> {
  const [mine, theirs] = await Promise.all([rows(onOxbow, text, values), rows(onPostgres, text, values)]);
  expect(mine, `${text} ${JSON.stringify(values)}`).toEqual(theirs);
}

async function plan(text: string): Promise<string> {
  const result = await onOxbow.query({ text: `explain ${text}`, rowMode: 'array' });
  return (result.rows as string[][]).map((r) => r[0]).join('\n');
}

describe('primary-key lookups', () => {
  it('EXPLAIN shows a lookup for =, IN and a full composite key, and none otherwise', async () => {
    expect(await plan('select v from lk where id = 42')).toContain('lookup (id) = (42)');
    expect(await plan('select v from lk where id in (5, 3, 9)')).toContain('lookup (id) IN ((5), (3), (9))');
    expect(await plan("select c from lk2 where a = 3 and b = 'k2'")).toContain("lookup (a, b) = (3, 'k2')");
    expect(await plan('select c from lk2 where a = 3')).not.toContain('lookup');
    expect(await plan('select v from lk where id = 1 or v = $1')).not.toContain('lookup');
    expect(await plan('select v from lk where id + 0 = 1')).not.toContain('lookup');
  });

  it('point and IN-list SELECTs return PostgreSQL rows', async () => {
    await same('select * from lk where id = 42');
    await same('select * from lk where id = 0');
    await same('select * from lk where id = 2001');
    await same('select v from lk where id in (7, 3, 1999, 3, 5000) order by id');
    await same('select v from lk where id in (7, 3, 1999) and n > 50 order by id');
    await same('select v from lk where id = null');
    await same('select v from lk where id = 3000000000');
    await same('select v from lk where id = 42::bigint');
    await same('select v from lk where id = 42::smallint');
    await same('select * from lk where id = $1', [17]);
    await same('select * from lk where id = $1', [null]);
    await same('select * from lk where id = $1 or id = $2 order by 1', [4, 8]);
    await same("select c from lk2 where a = 3 and b = 'k2'");
    await same("select c from lk2 where b = 'k2' and a = 3::int");
    await same("select c from lk2 where (a = 3 and b = 'k2') or (a = 49 and b = 'k19') or (a = 1 and b = 'nope') order by c");
    await same("select c from lk2 where a = $1 and b = $2", ['10', 'k4']);
    await same('select * from lk8 where id = 9007199254740993');
    await same('select * from lk8 where id = -5 or id = 1 order by id');
    await same('select count(*) from lk where id in (1, 2, 3)');
    await same('select l.v, k.c from lk l join lk2 k on k.c = l.id where l.id = 77');
  });

  it('UPDATE and DELETE by key, then lookups see the new state', async () => {
    await same("update lk set v = 'changed' where id = 10");
    await same('select * from lk where id = 10');
    await same('delete from lk where id in (11, 12, 9999)');
    await same('select * from lk where id in (10, 11, 12, 13) order by id');
    await same("insert into lk values (11, 'back', 0)");
    await same('select * from lk where id = 11');
    await same('select count(*) from lk');
  });

  it('an AS OF lookup returns what a scan of the same moment returns', async () => {
    await onOxbow.query("update lk set v = 'later' where id = 20");
    const moment = 'now() - interval \'0 seconds\'';
    for (const id of [20, 21, 5000]) {
      const lookup = await rows(onOxbow, `select * from lk for system_time as of ${moment} where id = ${id}`);
      const scan = await rows(onOxbow, `select * from lk for system_time as of ${moment} where id + 0 = ${id}`);
      expect(lookup).toEqual(scan);
    }
    expect(await plan(`select * from lk for system_time as of ${moment} where id = 20`)).toContain('lookup (id) = (20)');
  });
});
