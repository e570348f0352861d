// The engine's Session over the in-memory state store: DDL, DML and queries end to end through the
// real parser, planner and batch executor; transactions status; COPY FROM/TO with PostgreSQL's
// rules and atomicity; settings and their ParameterStatus events; cancellation and timeouts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { openEngine, type OxbowEngine } from '../open-engine.js';
import { SqlError } from '../../../sql/errors.js';
import type { Notice, Session } from '../engine.js';
import type { Row } from '../../../sql/value.js';

let engine: OxbowEngine;
let session: Session;
let notices: Notice[];
let parameterChanges: [string, string][];

beforeEach(async () => {
  engine = await openEngine(createMemoryStateStore(), { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  notices = [];
  parameterChanges = [];
  session = engine.openSession(
    { user: 'oxbow', database: 'oxbow', options: { application_name: 'tests' } },
    { notice: (notice) => notices.push(notice), parameterStatus: (name, value) => parameterChanges.push([name, value]) },
  );
});
afterEach(async () => {
  await engine.close();
});

/** Runs every statement of `sql`; returns the last result's rows (or its command tag). */
async function run(sql: string): Promise<{ rows?: Row[]; tag: string; columns?: string[] }> {
  let last: { rows?: Row[]; tag: string; columns?: string[] } = { tag: '' };
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') {
      const rows = await result.cursor.next(0);
      last = { rows, tag: result.commandTag(rows.length), columns: result.columns.map((column) => column.name) };
    } else if (result.kind === 'command') last = { tag: result.commandTag };
    else last = { tag: result.kind };
  }
  return last;
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

async function copyIn(sql: string, chunks: string[]): Promise<string> {
  const [statement] = session.prepareMany(sql);
  const result = await session.execute(statement!, { parameters: [] });
  if (result.kind !== 'copyIn') throw new Error('not a COPY FROM');
  for (const chunk of chunks) result.write(new TextEncoder().encode(chunk));
  return result.end();
}

describe('engine session', () => {
  it('creates, writes and reads a table; the hidden row id stays hidden', async () => {
    expect((await run("create table t (id int primary key, v varchar(10) not null default 'x')")).tag).toBe('CREATE TABLE');
    expect((await run("insert into t values (1, 'a'), (2, 'b')")).tag).toBe('INSERT 0 2');
    expect((await run('insert into t (id) values (3)')).tag).toBe('INSERT 0 1');
    const result = await run('select * from t order by id');
    expect(result.columns).toEqual(['id', 'v']);
    expect(result.rows).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'x'],
    ]);
    await run('create table n (a int, b text)');
    await run("insert into n values (1, 'x'), (1, 'x')");
    const plain = await run('select * from n');
    expect(plain.columns).toEqual(['a', 'b']);
    expect(plain.rows).toEqual([
      [1, 'x'],
      [1, 'x'],
    ]);
  });

  it('a failing statement applies nothing', async () => {
    await run('create table t (id int primary key, v text)');
    await run("insert into t values (1, 'a')");
    const error = await failure("insert into t values (2, 'b'), (1, 'again')");
    expect(error.code).toBe('23505');
    expect((await run('select * from t')).rows).toEqual([[1, 'a']]);
  });

  it('a multi-statement string plans each statement when it runs', async () => {
    const result = await run("create table later (a int); insert into later values (7); select a from later");
    expect(result.rows).toEqual([[7]]);
  });

  it('reports transaction status and refuses statements after an error until ROLLBACK', async () => {
    await run('create table t (id int primary key)');
    expect(session.transactionStatus()).toBe('idle');
    await run('begin');
    expect(session.transactionStatus()).toBe('inTransaction');
    await run('insert into t values (1)');
    expect((await failure('insert into t values (1)')).code).toBe('23505');
    expect(session.transactionStatus()).toBe('failed');
    expect((await failure('select 1')).code).toBe('25P02');
    expect((await run('rollback')).tag).toBe('ROLLBACK');
    expect(session.transactionStatus()).toBe('idle');
    // The row inserted inside the block committed at its own epoch; ROLLBACK writes it back.
    expect(notices).toEqual([]);
    expect((await run('select * from t')).rows).toEqual([]);
    expect((await run('commit')).tag).toBe('COMMIT');
    expect(notices[0]!.message).toBe('there is no transaction in progress');
  });

  it('SET and SHOW go through the session, reported parameters are announced', async () => {
    expect(session.setting('application_name')).toBe('tests');
    await run("set application_name = 'other'");
    expect(parameterChanges).toEqual([['application_name', 'other']]);
    expect((await run('show application_name')).rows).toEqual([['other']]);
    await run('set search_path = nowhere');
    expect((await failure('create table t (a int)')).code).toBe('3F000');
    expect((await failure('set no_such_thing = 1')).code).toBe('42704');
  });

  it('expands views, nested and renamed, and lets a CTE shadow a view name', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'a'), (2, 'b')");
    await run('create view v as select id, v from t where id > 1');
    await run('create view w (a, b) as select * from v');
    expect((await run('select * from v')).rows).toEqual([[2, 'b']]);
    const renamed = await run('select * from w');
    expect(renamed.columns).toEqual(['a', 'b']);
    expect(renamed.rows).toEqual([[2, 'b']]);
    expect((await run('with v as (select 5 as five) select * from v')).rows).toEqual([[5]]);
    expect((await failure('drop table t')).code).toBe('2BP01');
    await run('drop table t cascade');
    expect(notices.at(-1)!.message).toBe('drop cascades to 2 other objects');
    expect(notices.at(-1)!.detail).toBe('drop cascades to view v\ndrop cascades to view w');
    expect((await failure('select * from w')).code).toBe('42P01');
  });

  it('ALTER TABLE ADD COLUMN: existing rows read NULL in the new column', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'a')");
    expect((await run('alter table t add column w int')).tag).toBe('ALTER TABLE');
    await run("insert into t values (2, 'b', 20)");
    const result = await run('select * from t order by id');
    expect(result.columns).toEqual(['id', 'v', 'w']);
    expect(result.rows).toEqual([
      [1, 'a', null],
      [2, 'b', 20],
    ]);
    await run('create table plain (a int); insert into plain values (1); alter table plain add column b text');
    await run("insert into plain values (2, 'two')");
    expect((await run('select * from plain order by a')).rows).toEqual([
      [1, null],
      [2, 'two'],
    ]);
  });

  it('ADD COLUMN with DEFAULT fills existing rows; NOT NULL without one fails on a non-empty table', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'a'), (2, 'b')");
    await run('alter table t add column score int default 7');
    await run("insert into t (id, v) values (3, 'c')");
    expect((await run('select id, score from t order by id')).rows).toEqual([
      [1, 7],
      [2, 7],
      [3, 7],
    ]);
    const error = await failure('alter table t add column must int not null');
    expect(error.code).toBe('23502');
    expect(error.message).toBe('column "must" of relation "t" contains null values');
    expect((await run('select * from t where id = 1')).columns).toEqual(['id', 'v', 'score']);
    await run('create table empty (a int); alter table empty add column b int not null');
    expect((await failure('insert into empty (a) values (1)')).code).toBe('23502');
    await run('create table plain (a int); insert into plain values (1); alter table plain add column b text not null default \'x\'');
    expect((await run('select * from plain')).rows).toEqual([[1, 'x']]);
  });

  it('writers from two sessions interleave without losing rows', async () => {
    const other = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
    await run('create table t (id int primary key, who text)');
    const write = async (target: Session, who: string, from: number) => {
      for (let index = from; index < from + 50; index++) {
        const [statement] = target.prepareMany(`insert into t values (${index}, '${who}')`);
        await target.execute(statement!, { parameters: [] });
      }
    };
    await Promise.all([write(session, 'first', 0), write(other, 'second', 1000)]);
    const counts = await run('select who, count(*) from t group by who order by who');
    expect(counts.rows).toEqual([
      ['first', 50n],
      ['second', 50n],
    ]);
    other.close();
  });

  it("RisingWave's SHOW TABLES / COLUMNS / INDEXES, DESCRIBE and SHOW CREATE", async () => {
    await run("create table t (id int primary key, v varchar(10) not null default 'x'); create table plain (a int)");
    await run('create view v as select * from t; create index i on t (v)');
    expect(await run('show tables')).toEqual({ columns: ['Name'], rows: [['plain'], ['t']], tag: 'SHOW' });
    expect((await run("show tables like 'p%'")).rows).toEqual([['plain']]);
    expect((await run('show views')).rows).toEqual([['v']]);
    expect((await run('show databases')).rows).toEqual([['oxbow']]);
    expect((await run('show columns from t')).rows).toEqual([
      ['id', 'integer', 'false', null],
      ['v', 'character varying(10)', 'false', null],
    ]);
    expect((await run('show indexes from t')).rows).toEqual([
      ['t_pkey', 't', 'id', '', ''],
      ['i', 't', 'v', '', ''],
    ]);
    expect((await run('describe t')).rows).toEqual([
      ['id', 'integer', 'false', null],
      ['v', 'character varying(10)', 'false', null],
      ['primary key', 'id', null, null],
      ['i', 'index(v)', null, null],
      ['table description', null, null, null],
    ]);
    expect((await run('show create table t')).rows).toEqual([
      ['public.t', "CREATE TABLE public.t (id integer, v character varying(10) NOT NULL DEFAULT 'x', PRIMARY KEY (id))"],
    ]);
    expect((await run('show create view v')).rows).toEqual([['public.v', 'CREATE VIEW public.v AS select * from t']]);
    expect((await failure('show create table v')).code).toBe('42809');
    expect((await failure('show columns from nope')).code).toBe('42P01');
  });

  it('CREATE TABLE AS creates and fills the table in one statement', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'a'), (2, 'b')");
    expect((await run("create table copy (k, label) as select id * 10, v || '!' from t")).tag).toBe('SELECT 2');
    const result = await run('select * from copy order by k');
    expect(result.columns).toEqual(['k', 'label']);
    expect(result.rows).toEqual([
      [10, 'a!'],
      [20, 'b!'],
    ]);
    expect((await failure('create table copy as select 1')).code).toBe('42P07');
    expect((await run('create table if not exists copy as select 1')).tag).toBe('CREATE TABLE AS');
    expect((await failure('create table broken as select 1/0')).code).toBe('22012');
    expect((await failure('select * from broken')).code).toBe('42P01');
  });

  it('reads a view as of a past moment (FOR SYSTEM_TIME on the view reaches its tables)', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'old')");
    await run('create view v as with recent as (select id, v from t) select * from recent');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const between = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await run("update t set v = 'new' where id = 1");
    expect((await run('select v from v')).rows).toEqual([['new']]);
    expect((await run(`select v from v for system_time as of '${between}'::timestamptz`)).rows).toEqual([['old']]);
  });

  it('statement_timeout cancels a long statement with 57014', async () => {
    await run("set statement_timeout = '50ms'");
    const error = await failure('select * from generate_series(1, 100000000)');
    expect(error.code).toBe('57014');
    expect(error.message).toBe('canceling statement due to statement timeout');
    await run('reset statement_timeout');
    expect((await run('select 1')).rows).toEqual([[1]]);
  });

  it('cancel() stops the running statement with 57014 and the session carries on', async () => {
    const running = failure('select * from generate_series(1, 100000000)');
    setTimeout(() => engine.findSession(session.processId, session.secretKey)!.cancel(), 20);
    const error = await running;
    expect(error.code).toBe('57014');
    expect(error.message).toBe('canceling statement due to user request');
    expect(engine.findSession(session.processId, session.secretKey + 1)).toBeUndefined();
    expect((await run('select 2')).rows).toEqual([[2]]);
  });

  it('refuses an unknown database with 3D000', () => {
    let error: unknown;
    try {
      engine.openSession({ user: 'oxbow', database: 'nope', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
    } catch (caught) {
      error = caught;
    }
    expect((error as SqlError).code).toBe('3D000');
    expect((error as SqlError).message).toBe('database "nope" does not exist');
  });
});

describe('COPY', () => {
  it('loads text and CSV, with defaults for unlisted columns', async () => {
    await run("create table t (id int primary key, v text, w text default 'dflt')");
    expect(await copyIn('copy t (id, v) from stdin', ['1\ta\\tb\n2\t\\N\n', '3\tc'])).toBe('COPY 3');
    expect(await copyIn('copy t from stdin with (format csv, header true)', ['id,v,w\n4,"x, ""y""",\n5,,""\n'])).toBe('COPY 2');
    expect((await run('select * from t order by id')).rows).toEqual([
      [1, 'a\tb', 'dflt'],
      [2, null, 'dflt'],
      [3, 'c', 'dflt'],
      [4, 'x, "y"', null],
      [5, null, ''],
    ]);
  });

  it('a bad row fails the COPY with its line in the context, and nothing is applied', async () => {
    await run('create table t (id int primary key, v text)');
    let error: unknown;
    try {
      await copyIn('copy t from stdin', ['1\ta\n2\tb\nthree\tc\n']);
    } catch (caught) {
      error = caught;
    }
    expect((error as SqlError).code).toBe('22P02');
    expect((error as SqlError).message).toBe('invalid input syntax for type integer: "three"');
    expect((error as SqlError).context).toBe('COPY t, line 3, column id: "three"');
    expect((await run('select * from t')).rows).toEqual([]);

    const extra = await copyIn('copy t from stdin', ['1\ta\tb\n']).catch((caught: SqlError) => caught);
    expect((extra as SqlError).code).toBe('22P04');
    expect((extra as SqlError).message).toBe('extra data after last expected column');
    const missing = await copyIn('copy t from stdin', ['1\n']).catch((caught: SqlError) => caught);
    expect((missing as SqlError).message).toBe('missing data for column "v"');
    const duplicate = await copyIn('copy t from stdin', ['1\ta\n1\tb\n']).catch((caught: SqlError) => caught);
    expect((duplicate as SqlError).code).toBe('23505');
    expect((await run('select * from t')).rows).toEqual([]);
  });

  it('writes text and CSV to stdout', async () => {
    await run("create table t (id int primary key, v text); insert into t values (1, 'a\tb'), (2, null), (3, 'x,y')");
    const collect = async (sql: string) => {
      const [statement] = session.prepareMany(sql);
      const result = await session.execute(statement!, { parameters: [] });
      if (result.kind !== 'copyOut') throw new Error('not a COPY TO');
      let text = '';
      for await (const chunk of result.data) text += new TextDecoder().decode(chunk);
      return { text, tag: result.commandTag() };
    };
    expect(await collect('copy t to stdout')).toEqual({ text: '1\ta\\tb\n2\t\\N\n3\tx,y\n', tag: 'COPY 3' });
    expect(await collect('copy t to stdout with (format csv, header)')).toEqual({ text: 'id,v\n1,a\tb\n2,\n3,"x,y"\n', tag: 'COPY 3' });
  });
});
