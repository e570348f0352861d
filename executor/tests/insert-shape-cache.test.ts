// The session's INSERT ... VALUES plan cache (insert-shape-cache.ts) over the in-memory store:
// statements differing only in literals parse and plan once; a new literal type is a new shape;
// DDL on the table re-plans; a failure before the commit goes down the ordinary path with its
// SQLSTATE and position. Expected values by hand (the over-the-wire differential test against
// PostgreSQL is test/clients/insert-shape-cache.test.ts).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryStateStore } from '../../storage/memory-state-store.js';
import { openEngine, type OxbowEngine } from '../open-engine.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Session } from '../engine.js';
import type { Row } from '../../sql/value.js';
import type { InsertShapeCache } from '../insert-shape-cache.js';

let engine: OxbowEngine;
let session: Session;

beforeEach(async () => {
  engine = await openEngine(createMemoryStateStore(), { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
});
afterEach(async () => {
  await engine.close();
});

function counts(): InsertShapeCache['counts'] {
  return { ...(session as unknown as { insertShapes: InsertShapeCache }).insertShapes.counts };
}

async function run(sql: string): Promise<Row[]> {
  let rows: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') rows = await result.cursor.next(0);
  }
  return rows;
}

async function failure(sql: string): Promise<SqlError> {
  try {
    await run(sql);
  } catch (error) {
    if (error instanceof SqlError) return error;
    throw error;
  }
  throw new Error(`expected ${sql} to fail`);
}

describe('the INSERT ... VALUES plan cache', () => {
  it('parses and plans a shape once, whatever its literal values', async () => {
    await run('create table t (id int primary key, s text, n numeric)');
    for (let id = 1; id <= 10; id++) await run(`insert into t values (${id - 5}, 'row ''${id}''', ${id}.5)`);
    expect(counts()).toEqual({ hits: 9, parsed: 1, planned: 1, ordinary: 0 });
    const rows = await run('select id, s, n::text from t order by id');
    expect(rows.length).toBe(10);
    expect(rows[0]).toEqual([-4, "row '1'", '1.5']);
    expect(rows[9]).toEqual([5, "row '10'", '10.5']);
  });

  it('makes a new shape for a different literal type, and runs NULLs and booleans', async () => {
    await run('create table t (id int primary key, b bool, big bigint)');
    await run('insert into t values (1, true, 5)');
    await run('insert into t values (2, false, 9000000000)');
    await run('insert into t values (3, NULL, NULL)');
    await run('insert into t values (4, NULL, -6)');
    expect(counts()).toEqual({ hits: 0, parsed: 4, planned: 4, ordinary: 0 });
    await run('insert into t values (5, true, 7)');
    expect(counts().hits).toBe(1);
    expect(await run('select id, b, big from t order by id')).toEqual([
      [1, true, 5n],
      [2, false, 9000000000n],
      [3, null, null],
      [4, null, -6n],
      [5, true, 7n],
    ]);
  });

  it('re-plans after DDL on the table: ALTER, DROP and CREATE', async () => {
    await run('create table t (id int primary key, s text)');
    await run("insert into t values (1, 'a')");
    await run('alter table t add column c int default 7');
    await run("insert into t values (2, 'b')");
    expect(await run('select id, s, c from t order by id')).toEqual([
      [1, 'a', 7],
      [2, 'b', 7],
    ]);
    await run('drop table t');
    const dropped = await failure("insert into t values (3, 'c')");
    expect(dropped.code).toBe(SqlState.undefinedTable);
    expect(dropped.position).toBe(13);
    await run('create table t (id int primary key, s int)');
    await run("insert into t values (4, '44')");
    expect(await run('select id, s from t')).toEqual([[4, 44]]);
    expect(counts()).toMatchObject({ parsed: 1, planned: 3, ordinary: 1 });
  });

  it('sends a failure before the commit down the ordinary path, with its SQLSTATE and position', async () => {
    await run('create table t (id int primary key, s text)');
    await run("insert into t values (1, 'a')");
    const badInteger = await failure("insert into t values ('x1', 'b')");
    expect(badInteger.code).toBe(SqlState.invalidTextRepresentation);
    expect(badInteger.message).toBe('invalid input syntax for type integer: "x1"');
    expect(badInteger.position).toBe(23);
    const duplicate = await failure("insert into t values (1, 'again')");
    expect(duplicate.code).toBe(SqlState.uniqueViolation);
    expect(counts().ordinary).toBe(2);
    await run("insert into t values (2, 'b')");
    expect(await run('select id, s from t order by id')).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
  });

  it('leaves prepared statements and other statements alone', async () => {
    await run('create table t (id int primary key)');
    await run('insert into t values (1) returning id');
    await run('insert into t select 2');
    const prepared = session.prepare('insert into t values ($1)', []);
    await session.execute(prepared, { parameters: [3] });
    expect(counts()).toEqual({ hits: 0, parsed: 0, planned: 0, ordinary: 0 });
    expect(await run('select id from t order by id')).toEqual([[1], [2], [3]]);
  });
});
