// The session's INSERT ... VALUES plan cache (insert-shape-cache.ts) over the in-memory store:
// statements differing only in literals parse and plan once; a new literal type is a new shape;
// DDL on the table re-plans; a failure before the commit goes down the ordinary path with its
// SQLSTATE and position. Expected values by hand (the over-the-wire differential test against
// PostgreSQL is test/clients/insert-shape-cache.test.ts).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { SqlState } from '../../../sql/errors.js';
import type { InsertShapeCache } from '../insert-shape-cache.js';
import type { StatementPreparer } from '../statement-preparer.js';

let h: Harness;

beforeEach(async () => {
  h = await openHarness();
});
afterEach(async () => {
  await h.close();
});

function counts(): InsertShapeCache['counts'] {
  return { ...(h.session as unknown as { preparer: StatementPreparer }).preparer.insertShapes.counts };
}

describe('the INSERT ... VALUES plan cache', () => {
  it('parses and plans a shape once, whatever its literal values', async () => {
    await h.rows('create table t (id int primary key, s text, n numeric)');
    for (let id = 1; id <= 10; id++) await h.rows(`insert into t values (${id - 5}, 'row ''${id}''', ${id}.5)`);
    expect(counts()).toEqual({ hits: 9, parsed: 1, planned: 1, ordinary: 0 });
    const rows = await h.rows('select id, s, n::text from t order by id');
    expect(rows.length).toBe(10);
    expect(rows[0]).toEqual([-4, "row '1'", '1.5']);
    expect(rows[9]).toEqual([5, "row '10'", '10.5']);
  });

  it('makes a new shape for a different literal type, and runs NULLs and booleans', async () => {
    await h.rows('create table t (id int primary key, b bool, big bigint)');
    await h.rows('insert into t values (1, true, 5)');
    await h.rows('insert into t values (2, false, 9000000000)');
    await h.rows('insert into t values (3, NULL, NULL)');
    await h.rows('insert into t values (4, NULL, -6)');
    expect(counts()).toEqual({ hits: 0, parsed: 4, planned: 4, ordinary: 0 });
    await h.rows('insert into t values (5, true, 7)');
    expect(counts().hits).toBe(1);
    expect(await h.rows('select id, b, big from t order by id')).toEqual([
      [1, true, 5n],
      [2, false, 9000000000n],
      [3, null, null],
      [4, null, -6n],
      [5, true, 7n],
    ]);
  });

  it('re-plans after DDL on the table: ALTER, DROP and CREATE', async () => {
    await h.rows('create table t (id int primary key, s text)');
    await h.rows("insert into t values (1, 'a')");
    await h.rows('alter table t add column c int default 7');
    await h.rows("insert into t values (2, 'b')");
    expect(await h.rows('select id, s, c from t order by id')).toEqual([
      [1, 'a', 7],
      [2, 'b', 7],
    ]);
    await h.rows('drop table t');
    const dropped = await h.failure("insert into t values (3, 'c')");
    expect(dropped.code).toBe(SqlState.undefinedTable);
    expect(dropped.position).toBe(13);
    await h.rows('create table t (id int primary key, s int)');
    await h.rows("insert into t values (4, '44')");
    expect(await h.rows('select id, s from t')).toEqual([[4, 44]]);
    expect(counts()).toMatchObject({ parsed: 1, planned: 3, ordinary: 1 });
  });

  it('sends a failure before the commit down the ordinary path, with its SQLSTATE and position', async () => {
    await h.rows('create table t (id int primary key, s text)');
    await h.rows("insert into t values (1, 'a')");
    const badInteger = await h.failure("insert into t values ('x1', 'b')");
    expect(badInteger.code).toBe(SqlState.invalidTextRepresentation);
    expect(badInteger.message).toBe('invalid input syntax for type integer: "x1"');
    expect(badInteger.position).toBe(23);
    const duplicate = await h.failure("insert into t values (1, 'again')");
    expect(duplicate.code).toBe(SqlState.uniqueViolation);
    expect(counts().ordinary).toBe(2);
    await h.rows("insert into t values (2, 'b')");
    expect(await h.rows('select id, s from t order by id')).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
  });

  it('leaves prepared statements and other statements alone', async () => {
    await h.rows('create table t (id int primary key)');
    await h.rows('insert into t values (1) returning id');
    await h.rows('insert into t select 2');
    const prepared = h.session.prepare('insert into t values ($1)', []);
    await h.session.execute(prepared, { parameters: [3] });
    expect(counts()).toEqual({ hits: 0, parsed: 0, planned: 0, ordinary: 0 });
    expect(await h.rows('select id from t order by id')).toEqual([[1], [2], [3]]);
  });
});
