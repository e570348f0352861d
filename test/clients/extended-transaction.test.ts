// The extended protocol's transaction rules and a prepared statement's re-planning, compared with
// a real PostgreSQL 15 over raw frames (built with pg-protocol): the backend messages (types,
// command tags, SQLSTATEs and texts, DataRow bytes, ReadyForQuery status) and the state after each
// step must be the same.
//
// - Everything up to a Sync is one transaction: several Executes before one Sync (pipelining, JDBC
//   batches) are one implicit transaction, so an error skips to the Sync and undoes the earlier
//   Executes since the last Sync; COMMIT / ROLLBACK / BEGIN among them, a Query among them, SET
//   LOCAL, DISCARD ALL and CREATE INDEX CONCURRENTLY after another Execute.
// - A named prepared statement is re-planned when search_path changes, when a table it reads is
//   dropped and created again or a column is added; a re-plan that would change its result
//   columns is 0A000 at Bind and at Describe.
//
// Failures are duplicate keys (23505), raised by Execute on both servers (PostgreSQL folds a
// constant `1/0` while planning, at Bind, where oxbow raises it at Execute).
import { serialize } from 'pg-protocol';
import postgresClient from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { oxbowAndPostgres } from '../support/server-pair.js';
import { RawClient, summarize } from '../pgwire/raw-client.js';

const servers = oxbowAndPostgres();
const clients: RawClient[] = [];

afterAll(() => {
  for (const client of clients) client.end();
});

interface Pair {
  readonly oxbow: RawClient;
  readonly postgres: RawClient;
}

async function connect(port: number, user: string, database: string): Promise<RawClient> {
  const client = await RawClient.connect(port);
  clients.push(client);
  client.send(serialize.startup({ user, database }));
  await client.readUntil('Z');
  return client;
}

async function pair(): Promise<Pair> {
  return {
    oxbow: await connect(servers.oxbow.port, 'oxbow', 'oxbow'),
    postgres: await connect(servers.postgres.port, 'postgres', 'postgres'),
  };
}

/** Sends the frames and reads up to `readyCount` ReadyForQuery messages: the summaries. */
async function exchange(client: RawClient, frames: readonly Buffer[], readyCount: number): Promise<string[]> {
  client.send(...frames);
  const received: string[] = [];
  let ready = 0;
  while (ready < readyCount) {
    const next = await client.readMessage();
    received.push(summarize(next));
    if (next.type === 'Z') ready++;
  }
  return received;
}

/** Parse (unnamed), Bind, Describe portal, Execute of one statement. */
function execute(sql: string): Buffer[] {
  return [serialize.parse({ text: sql }), serialize.bind({}), serialize.describe({ type: 'P' }), serialize.execute({})];
}

/** Bind, Describe, Execute of a named statement, then Sync. */
function executeNamed(name: string): Buffer[] {
  return [serialize.bind({ statement: name }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()];
}

const sync = serialize.sync();

/** The summary of a DataRow of these text values. */
function dataRow(...values: string[]): string {
  let hex = values.length.toString(16).padStart(4, '0');
  for (const value of values) hex += Buffer.byteLength(value).toString(16).padStart(8, '0') + Buffer.from(value).toString('hex');
  return `D ${hex}`;
}

interface Step {
  readonly label: string;
  readonly frames: readonly Buffer[];
  /** ReadyForQuery messages the step ends with (1 unless it holds a Query). */
  readonly readyCount?: number;
}

/** Runs each step on both servers, then `stateSql` as a Query on each; every answer must be equal. */
async function compareSteps(connections: Pair, steps: readonly Step[], stateSql: string): Promise<string[]> {
  const differences: string[] = [];
  const expected: string[] = [];
  for (const step of steps) {
    const outcomes: string[] = [];
    for (const client of [connections.postgres, connections.oxbow]) {
      const answer = await exchange(client, step.frames, step.readyCount ?? 1);
      const state = await exchange(client, [serialize.query(stateSql)], 1);
      outcomes.push(`${answer.join(' | ')} => ${state.join(' | ')}`);
    }
    expected.push(outcomes[0]!);
    if (outcomes[0] !== outcomes[1]) differences.push(`${step.label}\n  postgres ${outcomes[0]}\n  oxbow    ${outcomes[1]}`);
  }
  expect(differences).toEqual([]);
  return expected;
}

it('several Executes before one Sync are one transaction, as in PostgreSQL 15', async () => {
  const connections = await pair();
  const setup = 'create table t (id int primary key, v text); insert into t values (1, $$a$$)';
  for (const client of [connections.postgres, connections.oxbow]) await exchange(client, [serialize.query(setup)], 1);
  const duplicate = "insert into t values (1, 'dup')";
  const steps: Step[] = [
    { label: 'two inserts, one Sync', frames: [...execute("insert into t values (2, 'b')"), ...execute("insert into t values (3, 'c')"), sync] },
    { label: 'an error undoes the earlier Executes and skips the later ones', frames: [...execute("insert into t values (4, 'd')"), ...execute("update t set v = 'z' where id = 2"), ...execute(duplicate), ...execute("insert into t values (5, 'e')"), sync] },
    { label: 'a SET before the error is undone', frames: [...execute('set extra_float_digits = 1'), ...execute(duplicate), sync] },
    { label: 'SET LOCAL warns, yet lasts until the Sync', frames: [...execute("set local work_mem = '64MB'"), ...execute('show work_mem'), sync] },
    { label: 'DISCARD ALL after another Execute', frames: [...execute('select 1'), ...execute('discard all'), sync] },
    { label: 'CREATE INDEX CONCURRENTLY after another Execute', frames: [...execute('select 1'), ...execute('create index concurrently t_v on t (v)'), sync] },
    { label: 'COMMIT among the Executes commits the ones before it', frames: [...execute("insert into t values (6, 'f')"), ...execute('commit'), ...execute("insert into t values (7, 'g')"), ...execute(duplicate), sync] },
    { label: 'ROLLBACK among the Executes rolls back the ones before it', frames: [...execute("insert into t values (8, 'h')"), ...execute('rollback'), ...execute("insert into t values (9, 'i')"), sync] },
    { label: 'BEGIN takes the Executes before it into the block', frames: [...execute("insert into t values (10, 'j')"), ...execute('begin'), ...execute("insert into t values (11, 'k')"), sync] },
    { label: 'the block rolled back', frames: [...execute('rollback'), sync] },
    { label: 'a failing Query among the Executes undoes them', frames: [...execute("insert into t values (12, 'l')"), serialize.query(duplicate), ...execute("insert into t values (13, 'm')"), sync], readyCount: 2 },
    { label: 'a Flush does not end the transaction', frames: [...execute("insert into t values (14, 'n')"), serialize.flush(), ...execute(duplicate), sync] },
    {
      label: 'a suspended portal, then an error',
      frames: [...execute("insert into t values (15, 'o')"), serialize.parse({ text: 'select generate_series(1, 3)' }), serialize.bind({}), serialize.execute({ rows: 1 }), ...execute(duplicate), sync],
    },
    { label: 'an error in an explicit block fails it', frames: [serialize.query('begin')] },
    { label: 'the failed block', frames: [...execute("insert into t values (16, 'p')"), ...execute(duplicate), sync] },
    { label: 'its rollback', frames: [serialize.query('rollback')] },
    { label: 'one Execute and its Sync', frames: [...execute("insert into t values (17, 'q')"), sync] },
  ];
  const expected = await compareSteps(connections, steps, 'select id, v from t order by id; show extra_float_digits; show work_mem');
  // The oracle shows the rule: after the second step, rows 4 and 2's update are gone.
  expect(expected[1]).toContain('E ERROR 23505');
  expect(expected[1]).not.toContain(dataRow('4', 'd'));

  // Execute and its Sync in two writes: the Execute cannot know it is alone, and commits at the Sync.
  for (const client of [connections.postgres, connections.oxbow]) {
    client.send(...execute("insert into t values (18, 'r')"), serialize.flush());
    await client.readUntil('C');
    expect(await exchange(client, [sync], 1)).toEqual(['Z 49']);
    expect(await exchange(client, [serialize.query('select count(*) from t where id = 18')], 1)).toContain(dataRow('1'));
  }
});

it('a view follows a pipeline that is rolled back', async () => {
  const client = await connect(servers.oxbow.port, 'oxbow', 'oxbow');
  await exchange(client, [serialize.query('create table w (id int primary key, v int); insert into w values (1, 10); create materialized view w_total as select count(*) as n, sum(v) as total from w')], 1);
  const answer = await exchange(client, [...execute('insert into w values (2, 20)'), ...execute('update w set v = 11 where id = 1'), ...execute('insert into w values (1, 0)'), sync], 1);
  expect(answer.some((line) => line.startsWith('E ERROR 23505'))).toBe(true);
  const view = await exchange(client, [serialize.query('select n, total from w_total')], 1);
  const recomputed = await exchange(client, [serialize.query('select count(*), sum(v) from w')], 1);
  expect(view.filter((line) => line.startsWith('D'))).toEqual(recomputed.filter((line) => line.startsWith('D')));
  expect((await exchange(client, [serialize.query('select id, v from w')], 1)).filter((line) => line.startsWith('D'))).toEqual([dataRow('1', '10')]);
});

it('a named prepared statement is re-planned when search_path or a table changes, as in PostgreSQL 15', async () => {
  const connections = await pair();
  const setup = 'create schema s1; create schema s2; create table s1.x (a int); create table s2.x (a int); insert into s1.x values (1); insert into s2.x values (2); set search_path = s1';
  for (const client of [connections.postgres, connections.oxbow]) await exchange(client, [serialize.query(setup)], 1);
  const query = (sql: string): Step => ({ label: sql, frames: [serialize.query(sql)] });
  const steps: Step[] = [
    {
      label: 'prepare',
      frames: [serialize.parse({ name: 'star', text: 'select * from x' }), serialize.parse({ name: 'a', text: 'select a from x where a > $1' }), serialize.parse({ name: 'ins', text: 'insert into x values (7)' }), sync],
    },
    { label: 'star in s1', frames: executeNamed('star') },
    query('set search_path = s2'),
    { label: 'star after SET search_path', frames: executeNamed('star') },
    { label: 'insert after SET search_path', frames: executeNamed('ins') },
    query('select * from s2.x order by a'),
    query('drop table s2.x; create table s2.x (a int); insert into s2.x values (3)'),
    { label: 'star after the table was created again', frames: executeNamed('star') },
    query('alter table s2.x add column b int'),
    { label: 'Bind of star after ADD COLUMN', frames: [serialize.bind({ statement: 'star' }), sync] },
    { label: 'Describe of star after ADD COLUMN', frames: [serialize.describe({ type: 'S', name: 'star' }), sync] },
    { label: 'a named column still reads', frames: [serialize.bind({ statement: 'a', values: ['0'] }), serialize.describe({ type: 'P' }), serialize.execute({}), sync] },
    { label: 'insert after ADD COLUMN', frames: executeNamed('ins') },
    query('drop table s2.x; create table s2.x (a text)'),
    { label: 'star after the column changed type', frames: executeNamed('star') },
    query('drop table s2.x'),
    { label: 'star after DROP TABLE', frames: executeNamed('star') },
    query('create table s2.x (a int)'),
    { label: 'star after CREATE TABLE', frames: executeNamed('star') },
    query('set search_path = public'),
    { label: 'star with no x on the search path', frames: executeNamed('star') },
  ];
  const expected = await compareSteps(connections, steps, 'select 1');
  expect(expected[9]).toContain('E ERROR 0A000 cached plan must not change result type');
});

it('postgres.js prepares a statement again when its result changed (the RevalidateCachedQuery routine), as with PostgreSQL 15', async () => {
  const outcomes: string[] = [];
  for (const url of [servers.postgres.url, servers.oxbow.url]) {
    const sql = postgresClient(url, { max: 1, onnotice: () => undefined });
    try {
      await sql`create table r (a int)`;
      await sql`insert into r values (1)`;
      const first = await sql`select * from r`;
      await sql`alter table r add column b int`;
      // The prepared `select * from r` fails with 0A000 at Bind; postgres.js retries it once, prepared anew.
      const second = await sql`select * from r`;
      outcomes.push(JSON.stringify([first, second]));
    } finally {
      await sql.end();
    }
  }
  expect(outcomes[1]).toBe(outcomes[0]);
  expect(outcomes[0]).toBe('[[{"a":1}],[{"a":1,"b":null}]]');
});
