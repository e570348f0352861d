// A multi-statement simple Query is one implicit transaction (PostgreSQL's protocol chapter,
// "Multiple Statements in a Simple Query"): a failing statement rolls back the earlier statements
// of its message, settings and rows, unless a BEGIN / COMMIT / ROLLBACK in the message says
// otherwise; an explicit block's ROLLBACK undoes its rows too. Each message below is sent as one Query by `pg` clients to oxbow and to a real
// PostgreSQL 15; the outcome (command tags or SQLSTATE, warnings) and the state after it (the
// table's rows, a setting) must be the same.
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { rawTypes } from '../support/pg-pair.js';
import { oxbowAndPostgres } from '../support/server-pair.js';

const servers = oxbowAndPostgres();
const clients: pg.Client[] = [];

interface Connection {
  readonly client: pg.Client;
  readonly notices: string[];
}

async function connect(url: string): Promise<Connection> {
  const client = new pg.Client({ connectionString: url, types: rawTypes });
  const notices: string[] = [];
  client.on('notice', (notice) => notices.push(`${notice.severity} ${notice.code}: ${notice.message}`));
  await client.connect();
  clients.push(client);
  return { client, notices };
}

/** One Query message: its command tags and rows, or the SQLSTATE it failed with; then its warnings. */
async function run(connection: Connection, sql: string): Promise<string> {
  connection.notices.length = 0;
  let outcome: string;
  try {
    const result = (await connection.client.query({ text: sql, rowMode: 'array' })) as pg.QueryResult | pg.QueryResult[];
    const results = Array.isArray(result) ? result : [result];
    outcome = results.map((one) => `${one.command} ${JSON.stringify(one.rows)}`).join(', ');
  } catch (error) {
    outcome = `error ${(error as { code?: string }).code}`;
  }
  return connection.notices.length === 0 ? outcome : `${outcome} ${connection.notices.join('; ')}`;
}

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.end()));
});

const SETUP = ['create table t (id int primary key, v text)', 'create table n (v int)', "insert into t values (3, 'x')"];

/** Each message, then what is compared after it. */
const MESSAGES = [
  // The two cases: a failing statement undoes the INSERT and the SET before it.
  "insert into t values (1, 'a'); select 1/0",
  'set extra_float_digits = 1; select 1/0',
  // Several writes to one key, and to a row that existed before: all back as they were.
  "insert into t values (2, 'b'); update t set v = 'c' where id = 2; delete from t where id = 2; insert into t values (2, 'd'); select 1/0",
  "update t set v = 'y' where id = 3; delete from t where id = 3; select 1/0",
  // A table without a primary key (hidden row ids).
  'insert into n values (1); insert into n values (1), (2); select 1/0',
  // A constraint violation is a failure too.
  "insert into t values (11, 'l'); insert into t values (3, 'dup')",
  // Statements that all succeed commit.
  "insert into t values (12, 'm'); set extra_float_digits = 2; update t set v = 'mm' where id = 12",
  // An explicit block inside the message commits on its own; what follows is a new implicit block.
  "begin; insert into t values (4, 'e'); commit; insert into t values (5, 'f'); select 1/0",
  // COMMIT and ROLLBACK in an implicit block close it (with a warning); a new one follows.
  "insert into t values (6, 'g'); commit; insert into t values (7, 'h'); select 1/0",
  "insert into t values (8, 'i'); set extra_float_digits = 0; rollback; insert into t values (9, 'j')",
  // SET LOCAL lasts until the message ends, without the warning a lone SET LOCAL gets.
  "set local work_mem = '64MB'; show work_mem",
  "set local work_mem = '64MB'",
  // Statements that cannot run inside a transaction block, implicit or explicit.
  'select 1; discard all',
  'select 1; create index concurrently t_v on t (v)',
  'create index concurrently t_v on t (v); drop index concurrently t_v',
  'create index concurrently t_v on t (v)',
  'drop index concurrently t_v',
  'begin; create index concurrently t_v on t (v)',
  'rollback',
  // An explicit block's ROLLBACK (or a failed block's COMMIT) undoes its rows, over several
  // messages; a BEGIN after statements of an implicit block takes them into the explicit one.
  'begin',
  "insert into t values (20, 'p'); update t set v = 'q' where id = 3",
  'delete from t where id = 12',
  'rollback',
  "begin; insert into t values (21, 'r'); select 1/0",
  'commit',
  "insert into t values (22, 's'); begin; insert into t values (23, 't'); set extra_float_digits = 3",
  'rollback',
  "begin; insert into t values (24, 'u')",
  'commit',
  // A later statement reads the earlier ones' rows.
  "insert into t values (13, 'n'); select v from t where id = 13; delete from t where id = 13; select count(*) from t where id = 13",
];

async function state(connection: Connection): Promise<string> {
  const rows = await run(connection, 'select id, v from t order by id');
  const others = await run(connection, 'select v, count(*) from n group by v order by v');
  const settings = await run(connection, 'show extra_float_digits; show work_mem');
  return `${rows} | ${others} | ${settings}`;
}

it('every message answers and leaves the same state as in PostgreSQL 15', async () => {
  const onPostgres = await connect(servers.postgres.url);
  const onOxbow = await connect(servers.oxbow.url);
  for (const sql of SETUP) {
    expect(await run(onOxbow, sql)).toBe(await run(onPostgres, sql));
  }
  const differences: string[] = [];
  const expected: string[] = [];
  for (const sql of MESSAGES) {
    const postgresOutcome = `${await run(onPostgres, sql)} => ${await state(onPostgres)}`;
    const oxbowOutcome = `${await run(onOxbow, sql)} => ${await state(onOxbow)}`;
    expected.push(postgresOutcome);
    if (postgresOutcome !== oxbowOutcome) differences.push(`${sql}\n  postgres ${postgresOutcome}\n  oxbow    ${oxbowOutcome}`);
  }
  expect(differences).toEqual([]);
  // The oracle itself shows the rule: the first message's INSERT is gone.
  expect(expected[0]).toMatch(/^error 22012 => SELECT \[\["3","x"\]\] \|/);
});

it('a materialized view follows the rollback; a row another session changed meanwhile keeps that change', async () => {
  const session = await connect(servers.oxbow.url);
  const other = await connect(servers.oxbow.url);
  expect(await run(session, 'create table r (id int primary key, v int)')).toBe('CREATE []');
  expect(await run(session, 'insert into r values (1, 10), (2, 20)')).toBe('INSERT []');
  expect(await run(session, 'create materialized view r_total as select count(*) as row_count, sum(v) as total from r')).toMatch(/^SELECT/);
  expect(await run(session, 'insert into r values (3, 30); update r set v = 11 where id = 1; select 1/0')).toBe('error 22012');
  // The view equals its query recomputed over the table.
  expect(await run(session, 'select row_count, total from r_total')).toBe(await run(session, 'select count(*), sum(v) from r'));
  expect(await run(session, 'select id, v from r order by id')).toBe('SELECT [["1","10"],["2","20"]]');

  // The message updates row 2, then sleeps; the other session changes row 2 during the sleep; the
  // message fails. PostgreSQL would make the other UPDATE wait for the rollback, then apply it:
  // its value is what row 2 holds in the end either way, and row 1 is rolled back.
  const message = run(session, 'update r set v = 21 where id = 2; update r set v = 12 where id = 1; select pg_sleep(2); select 1/0');
  for (;;) {
    const active = await run(other, "select count(*) from pg_stat_activity where query like '%pg_sleep(2)%' and state = 'active' and pid <> pg_backend_pid()");
    if (active === 'SELECT [["1"]]') break;
  }
  expect(await run(other, 'update r set v = 22 where id = 2')).toBe('UPDATE []');
  expect(await message).toMatch(/^error 22012 WARNING 01000: rollback left 1 row /);
  expect(await run(session, 'select id, v from r order by id')).toBe('SELECT [["1","10"],["2","22"]]');
  expect(await run(session, 'select row_count, total from r_total')).toBe(await run(session, 'select count(*), sum(v) from r'));
});
