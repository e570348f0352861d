// A connection that ends inside a transaction block: PostgreSQL aborts the transaction, and oxbow
// writes the block's rows back as its ROLLBACK does (executor/engine/session.ts, close()). Each way of
// ending (Terminate, a socket destroyed, a FATAL idle-in-transaction timeout, a destroy while a
// statement of the block runs, a pipeline left without its Sync) is played with `pg` clients on
// oxbow and on a real PostgreSQL 15; the table another connection reads afterwards must be the
// same (oxbow's rollback lands shortly after the close: the reader waits for it, boundedly). A
// materialized view follows. A server killed with SIGKILL mid-block keeps the rows of the epochs
// the block committed (written down in executor/README.md, "Transactions").
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, expect, it } from 'vitest';
import { rawTypes } from '../support/pg-pair.js';
import { oxbowAndPostgres } from '../support/server-pair.js';
import { startOxbow } from '../support/server.js';
import { RawClient } from '../pgwire/raw-client.js';

const servers = oxbowAndPostgres();
const clients: pg.Client[] = [];

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.end()));
});

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, types: rawTypes });
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

async function rows(client: pg.Client, sql: string): Promise<string> {
  return JSON.stringify((await client.query({ text: sql, rowMode: 'array' })).rows);
}

/** Reads `sql` until it answers `expected` (the rollback of a closed session lands after the close), at most 100 times. */
async function settle(client: pg.Client, sql: string, expected: string): Promise<string> {
  let answer = '';
  for (let attempt = 0; attempt < 100; attempt++) {
    answer = await rows(client, sql);
    if (answer === expected) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return answer;
}

type Ending = (client: pg.Client, url: string) => Promise<void>;

const ENDINGS: readonly (readonly [string, Ending])[] = [
  ['Terminate', (client) => client.end()],
  ['socket destroyed', async (client) => (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()],
  [
    'FATAL idle-in-transaction timeout',
    async (client) => {
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      await client.query("set idle_in_transaction_session_timeout = '50ms'");
      await ended;
    },
  ],
  [
    'socket destroyed while a statement of the block runs',
    async (client, url) => {
      // PostgreSQL notices the closed socket once its sleep ends; oxbow cancels the statement at once.
      const sleeping = client.query('select pg_sleep(2)').catch(() => undefined);
      const watcher = await connect(url);
      for (let attempt = 0; attempt < 200; attempt++) {
        if ((await rows(watcher, "select count(*) from pg_stat_activity where query = 'select pg_sleep(2)' and state = 'active'")) === '[["1"]]') break;
      }
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      await sleeping;
    },
  ],
];

it('a connection ended inside a block rolls it back, as PostgreSQL 15 does', async () => {
  const setup = 'create table c (id int primary key, v int); insert into c values (1, 1), (2, 2)';
  const before = '[["1","1"],["2","2"]]';
  const readers = { postgres: await connect(servers.postgres.url), oxbow: await connect(servers.oxbow.url) };
  await readers.postgres.query(setup);
  await readers.oxbow.query(setup);
  await readers.oxbow.query('create materialized view c_total as select count(*) as n, sum(v) as total from c');
  const differences: string[] = [];
  for (const [label, end] of ENDINGS) {
    const outcomes: string[] = [];
    for (const [name, url] of [['postgres', servers.postgres.url], ['oxbow', servers.oxbow.url]] as const) {
      const client = await connect(url);
      await client.query('begin');
      await client.query('insert into c values (3, 3)');
      await client.query('update c set v = 20 where id = 2');
      await client.query('delete from c where id = 1');
      await end(client, url);
      outcomes.push(await settle(readers[name], 'select id, v from c order by id', before));
    }
    if (outcomes[0] !== outcomes[1]) differences.push(`${label}: postgres ${outcomes[0]}, oxbow ${outcomes[1]}`);
    expect(await rows(readers.oxbow, 'select n, total from c_total')).toBe(await rows(readers.oxbow, 'select count(*), sum(v) from c'));
  }
  expect(differences).toEqual([]);
  // The oracle's answer is the table before the block.
  expect(await rows(readers.postgres, 'select id, v from c order by id')).toBe(before);
});

it('a pipeline left without its Sync is rolled back when its connection closes, as in PostgreSQL 15', async () => {
  const outcomes: string[] = [];
  for (const [port, user, url] of [
    [servers.postgres.port, 'postgres', servers.postgres.url],
    [servers.oxbow.port, 'oxbow', servers.oxbow.url],
  ] as const) {
    const reader = await connect(url);
    await reader.query('create table p (id int primary key)');
    const raw = await RawClient.connect(port);
    raw.send(serialize.startup({ user, database: user }));
    await raw.readUntil('Z');
    const insert = (id: number) => [serialize.parse({ text: `insert into p values (${id})` }), serialize.bind({}), serialize.execute({})];
    raw.send(...insert(1), ...insert(2), serialize.flush());
    await raw.readUntil('C');
    await raw.readUntil('C');
    raw.socket.destroy();
    outcomes.push(await settle(reader, 'select count(*) from p', '[["0"]]'));
  }
  expect(outcomes).toEqual(['[["0"]]', '[["0"]]']);
});

it('a server killed inside a block keeps the rows its committed statements wrote; a shutdown rolls the block back', async () => {
  const server = await startOxbow();
  let restarted = server;
  try {
    const client = await connect(server.url);
    await client.query('create table k (id int primary key)');
    await client.query('insert into k values (1)');
    await client.query('begin');
    await client.query('insert into k values (2)');
    await server.kill('SIGKILL');
    restarted = await startOxbow({ dataDir: server.dataDir });
    const after = await connect(restarted.url);
    // Each statement commits its own epoch: the killed block's INSERT is durable (PostgreSQL would lose it).
    expect(await rows(after, 'select id from k order by id')).toBe('[["1"],["2"]]');
    // A shutdown (SIGTERM) closes the sessions first: the open block is rolled back before the store closes.
    await after.query('begin');
    await after.query('insert into k values (3)');
    await after.query('delete from k where id = 1');
    await restarted.kill('SIGTERM');
    restarted = await startOxbow({ dataDir: server.dataDir });
    const third = await connect(restarted.url);
    expect(await rows(third, 'select id from k order by id')).toBe('[["1"],["2"]]');
  } finally {
    await restarted.stop();
    if (restarted !== server) await server.stop();
  }
});
