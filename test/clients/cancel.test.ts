// Cancellation over the wire against the real oxbow server (the built CLI, real engine, RocksDB):
// a CancelRequest (raw, with the BackendKeyData `pg` received) and psql's SIGINT stop a statement
// that would run for many seconds inside a synchronous operator (a cross join, a sort of a million
// rows, a hash join build, pg_sleep); statement_timeout does the same with its own message; the
// session stays usable; another session is served while a big query runs; a cancelled INSERT into
// a table under a materialized view leaves neither the table nor the view half-written.
// pg_sleep's results are compared with a real PostgreSQL 15.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { oxbowAndPostgres } from '../support/server-pair.js';
import { waitFor } from '../support/wait-for.js';

const servers = oxbowAndPostgres();

async function client(url = servers.oxbow.url): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/** A CancelRequest on a fresh connection: length 16, code 80877102, process id, secret key. */
async function cancelRequest(target: pg.Client): Promise<void> {
  const { processID, secretKey } = target as unknown as { processID: number; secretKey: number };
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(80877102, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  await new Promise<void>((resolve, reject) => {
    const socket = connect(servers.oxbow.port, servers.oxbow.host, () => socket.end(message));
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

type Failure = { code: string | undefined; message: string };

async function failure(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code?: string; message: string };
    return { code: e.code, message: e.message };
  }
  throw new Error('the statement was expected to fail');
}

const userRequest: Failure = { code: '57014', message: 'canceling statement due to user request' };
const timeout: Failure = { code: '57014', message: 'canceling statement due to statement timeout' };

// Statements that run for far longer than any wait in this file (tens of seconds or more), each
// spending its time inside one synchronous operator.
const CROSS_JOIN = 'select count(*) from generate_series(1, 30000) a, generate_series(1, 30000) b where a + b < 0';
const SORT = 'select x from generate_series(1, 1000000) x order by -x limit 1 offset 999999';
const HASH_JOIN = 'select count(*) from generate_series(1, 3000000) a join generate_series(1, 3000000) b on a = b';

/** Resolves once the server has been busy on `statement` for a while (another session still answers). */
async function whileRunning(observer: pg.Client): Promise<void> {
  await observer.query('select pg_sleep(0.3)');
}

describe('CancelRequest', () => {
  it('stops a cross join inside the nested loop; the session keeps working', async () => {
    const [busy, other] = await Promise.all([client(), client()]);
    try {
      const running = failure(busy.query(CROSS_JOIN));
      await whileRunning(other);
      await cancelRequest(busy);
      expect(await running).toEqual(userRequest);
      expect((await busy.query('select 41 + 1 as x')).rows).toEqual([{ x: 42 }]);
    } finally {
      await Promise.all([busy.end(), other.end()]);
    }
  });

  it('stops a sort of a million rows and a hash join build', async () => {
    const [busy, other] = await Promise.all([client(), client()]);
    try {
      for (const statement of [SORT, HASH_JOIN]) {
        const running = failure(busy.query(statement));
        await other.query('select pg_sleep(0.2)');
        await cancelRequest(busy);
        expect(await running, statement).toEqual(userRequest);
      }
      expect((await busy.query('select count(*)::int as n from generate_series(1, 10)')).rows).toEqual([{ n: 10 }]);
    } finally {
      await Promise.all([busy.end(), other.end()]);
    }
  });

  it('stops pg_sleep', async () => {
    const [busy, other] = await Promise.all([client(), client()]);
    try {
      const running = failure(busy.query('select pg_sleep(60)'));
      await whileRunning(other);
      await cancelRequest(busy);
      expect(await running).toEqual(userRequest);
    } finally {
      await Promise.all([busy.end(), other.end()]);
    }
  });

  it('other sessions are served while a big query runs', async () => {
    const [busy, other] = await Promise.all([client(), client()]);
    try {
      let finished = false;
      const running = failure(busy.query(CROSS_JOIN)).finally(() => {
        finished = true;
      });
      for (let i = 0; i < 5; i++) {
        const result = await other.query('select $1::int * 2 as doubled', [i]);
        expect(result.rows).toEqual([{ doubled: i * 2 }]);
      }
      // Five round trips answered while the cross join was still running.
      expect(finished).toBe(false);
      await cancelRequest(busy);
      expect(await running).toEqual(userRequest);
    } finally {
      await Promise.all([busy.end(), other.end()]);
    }
  });
});

describe('statement_timeout', () => {
  it('stops a cross join, a sort, a hash join and pg_sleep with its own message', async () => {
    const c = await client();
    try {
      await c.query("set statement_timeout = '100ms'");
      for (const statement of [CROSS_JOIN, SORT, HASH_JOIN, 'select pg_sleep(10)', "select pg_sleep_for('10 seconds')"]) {
        expect(await failure(c.query(statement)), statement).toEqual(timeout);
      }
      expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      await c.query('reset statement_timeout');
      expect((await c.query('select pg_sleep(0.15) is null as n')).rows).toEqual([{ n: false }]);
    } finally {
      await c.end();
    }
  });

  it('a timed-out INSERT under a materialized view writes nothing, to the table or the view', async () => {
    const c = await client();
    try {
      await c.query('create table cancel_t (id int primary key, v int)');
      await c.query('create materialized view cancel_mv as select count(*) as n, sum(v) as s from cancel_t');
      await c.query('insert into cancel_t values (1, 10)');
      await c.query("set statement_timeout = '100ms'");
      const timedOut = await failure(c.query('insert into cancel_t select x + 1, x from generate_series(1, 3000000) x'));
      expect(timedOut).toEqual(timeout);
      await c.query('reset statement_timeout');
      expect((await c.query('select count(*)::int as n from cancel_t')).rows).toEqual([{ n: 1 }]);
      await c.query('flush');
      expect((await c.query('select n::int, s::int from cancel_mv')).rows).toEqual([{ n: 1, s: 10 }]);
      // The session and the table still take writes.
      await c.query('insert into cancel_t values (2, 5)');
      await c.query('flush');
      expect((await c.query('select n::int, s::int from cancel_mv')).rows).toEqual([{ n: 2, s: 15 }]);
    } finally {
      await c.end();
    }
  });
});

describe('psql', () => {
  it('SIGINT sends a CancelRequest that stops the running statement', async () => {
    const child = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(servers.oxbow.port), '-U', 'oxbow', '-d', 'oxbow', '-c', CROSS_JOIN], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const observer = await client();
    try {
      // psql handles SIGINT once it has connected: before that the signal ends it (no exit code 1,
      // no message), so the signal waits until the server runs psql's statement, however slowly
      // psql starts on a loaded machine.
      await waitFor('psql\'s statement running', async () => ((await observer.query({ text: "select count(*) as n from pg_stat_activity where query = $1 and state = 'active'", values: [CROSS_JOIN] })).rows[0].n === '1' ? true : undefined), 30_000);
      await whileRunning(observer);
      child.kill('SIGINT');
      expect(await exited).toBe(1);
      expect(stderr).toContain('ERROR:  canceling statement due to user request');
    } finally {
      await observer.end();
    }
  });
});

describe('pg_sleep compared with PostgreSQL', () => {
  it('returns one void value (text: empty) and NULL on NULL input', async () => {
    const [mine, theirs] = await Promise.all([client(), client(servers.postgres.url)]);
    try {
      for (const statement of [
        'select pg_sleep(0.01) as a, pg_sleep(0) is null as b',
        "select pg_sleep_for('10 milliseconds') as a, pg_sleep(-1) as b, pg_sleep(null) is null as c",
        'select pg_sleep(0.001) from generate_series(1, 3)',
      ]) {
        const [a, b] = await Promise.all([mine.query({ text: statement, rowMode: 'array' }), theirs.query({ text: statement, rowMode: 'array' })]);
        expect(a.rows, statement).toEqual(b.rows);
        expect(a.fields.map((f) => f.dataTypeID), statement).toEqual(b.fields.map((f) => f.dataTypeID));
      }
    } finally {
      await Promise.all([mine.end(), theirs.end()]);
    }
  });
});
