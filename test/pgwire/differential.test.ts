// The protocol state machine compared with a real PostgreSQL 15: the same frontend messages (built
// with pg-protocol) go to oxbow (the real server process) and to PostgreSQL, and the backend
// message sequences must match: message types, command tags, SQLSTATEs and protocol-level error
// texts, DataRow bytes, RowDescription names and types, ReadyForQuery status. SHOW_PROTOCOL=1
// prints the compared summaries.
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgresAsOxbow, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { int16, int32, message, RawClient, summarize, type BackendMessage } from './raw-client.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;

beforeAll(async () => {
  [postgres, oxbow] = await Promise.all([startPostgresAsOxbow(), startOxbow()]);
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  await postgres?.stop();
});

async function connect(port: number): Promise<RawClient> {
  const client = await RawClient.connect(port);
  client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
  await client.readUntil('Z');
  return client;
}

/** Sends the same messages to both servers and compares what comes back up to `readyCount` ReadyForQuery messages (or the close). */
async function compare(messages: Buffer[], options: { readyCount?: number; withErrorText?: boolean; setup?: string[] } = {}): Promise<string[]> {
  const outcomes: string[][] = [];
  for (const port of [oxbow.port, postgres.port]) {
    const client = await connect(port);
    for (const sql of options.setup ?? []) {
      client.send(serialize.query(sql));
      await client.readUntil('Z');
    }
    client.send(...messages);
    const received: BackendMessage[] = [];
    const readyCount = options.readyCount ?? 1;
    let ready = 0;
    while (ready < readyCount) {
      let next: BackendMessage;
      try {
        next = await client.readMessage();
      } catch {
        received.push({ type: 'closed', payload: Buffer.alloc(0), bytes: Buffer.alloc(0) });
        break;
      }
      received.push(next);
      if (next.type === 'Z') ready++;
    }
    client.end();
    outcomes.push(received.map((backend) => summarize(backend, options.withErrorText ?? true)));
  }
  if (process.env.SHOW_PROTOCOL) console.log(JSON.stringify(outcomes[0]));
  expect(outcomes[0]).toEqual(outcomes[1]);
  return outcomes[0]!;
}

async function startupParameters(port: number): Promise<Map<string, string>> {
  const client = await RawClient.connect(port);
  client.send(serialize.startup({ user: 'oxbow', database: 'oxbow', application_name: 'probe' }));
  const messages = await client.readUntil('Z');
  client.end();
  return new Map(
    messages
      .filter((backend) => backend.type === 'S')
      .map((backend) => {
        const [name, value] = backend.payload.toString('utf8').split('\0');
        return [name!, value!] as const;
      }),
  );
}

/** Sends raw bytes on a fresh connection (no startup done) and summarises the answer up to ReadyForQuery or the close. */
async function compareStartup(bytes: Buffer): Promise<string[]> {
  const outcomes: string[][] = [];
  for (const port of [oxbow.port, postgres.port]) {
    const client = await RawClient.connect(port);
    client.send(bytes);
    const received: string[] = [];
    for (;;) {
      let next: BackendMessage;
      try {
        next = await client.readMessage();
      } catch {
        received.push('closed');
        break;
      }
      // Only the shape of the startup answer: parameter values and keys differ between servers.
      received.push(next.type === 'E' ? summarize(next) : next.type === 'R' ? `R ${next.payload.readInt32BE(0)}` : next.type);
      if (next.type === 'Z') break;
    }
    client.end();
    outcomes.push(received.filter((entry) => entry !== 'S'));
  }
  expect(outcomes[0]).toEqual(outcomes[1]);
  return outcomes[0]!;
}

function startupPacket(version: number, parameters: Record<string, string>): Buffer {
  const parts: Buffer[] = [int16(version >> 16), int16(version & 0xffff)];
  for (const [name, value] of Object.entries(parameters)) parts.push(Buffer.from(`${name}\0${value}\0`));
  parts.push(Buffer.from([0]));
  const body = Buffer.concat(parts as unknown as Uint8Array[]);
  return Buffer.concat([int32(body.length + 4), body] as unknown as Uint8Array[]);
}

describe('startup identical to PostgreSQL 15', () => {
  it('a normal startup: AuthenticationOk, ParameterStatus..., BackendKeyData, ReadyForQuery', async () => {
    expect(await compareStartup(startupPacket(0x30000, { user: 'oxbow', database: 'oxbow' }))).toEqual(['R 0', 'K', 'Z']);
  });

  it('protocol 3.1 with an unknown _pq_ option gets NegotiateProtocolVersion', async () => {
    await compareStartup(startupPacket(0x30001, { user: 'oxbow', database: 'oxbow', _pq_magic: 'x', '_pq_.magic': 'on' }));
  });

  it('refusals: unknown database, no user', async () => {
    await compareStartup(startupPacket(0x30000, { user: 'oxbow', database: 'nosuch' }));
    await compareStartup(startupPacket(0x30000, { database: 'oxbow' }));
    // (Protocol 2: PostgreSQL answers in the old protocol's format; oxbow sends a 3.0 ErrorResponse.)
    // (A bad startup length: PostgreSQL closes without a word, oxbow says why first; see bad-input.test.ts.)
  });

  it('a CancelRequest with an unknown key closes without an answer', async () => {
    expect(await compareStartup(Buffer.concat([int32(16), int32(80877102), int32(1), int32(2)] as unknown as Uint8Array[]))).toEqual(['closed']);
  });
});

describe('protocol behaviour identical to PostgreSQL 15', () => {
  it('reports the ParameterStatus list of the issue with PostgreSQL\'s values', async () => {
    const mine = await startupParameters(oxbow.port);
    const theirs = await startupParameters(postgres.port);
    for (const name of ['server_encoding', 'client_encoding', 'DateStyle', 'TimeZone', 'integer_datetimes', 'standard_conforming_strings', 'application_name']) {
      expect(mine.get(name), name).toBe(theirs.get(name));
    }
    expect(mine.get('server_version')).toMatch(/^15\./);
  });

  it('simple query: several statements, the first error ends the message', async () => {
    await compare([serialize.query("select 1 as a; select 1/0; select 'never'")], { withErrorText: false });
    await compare([serialize.query('')]);
    await compare([serialize.query(';')]);
    await compare([serialize.query("select 'x' as a, 2::int8 as b, null::text as c, 1.50::numeric(5,2) as d")]);
  });

  it('extended query: Describe statement with parameters, Bind, Describe portal, Execute', async () => {
    const summary = await compare([
      serialize.parse({ name: 's1', text: 'select $1::int + 1 as next, $2::text as label' }),
      serialize.describe({ type: 'S', name: 's1' }),
      serialize.bind({ statement: 's1', portal: 'p1', values: ['41', 'x'] }),
      serialize.describe({ type: 'P', name: 'p1' }),
      serialize.execute({ portal: 'p1' }),
      serialize.sync(),
    ]);
    expect(summary[0]).toBe('1');
  });

  it('Execute with a row limit: PortalSuspended, then the rest, then an exhausted portal', async () => {
    await compare([
      serialize.parse({ text: 'select g from generate_series(1, 5) as g' }),
      serialize.bind({}),
      serialize.execute({ rows: 2 }),
      serialize.execute({ rows: 2 }),
      serialize.execute({ rows: 2 }),
      serialize.sync(),
    ]);
  });

  it('executing a portal again after it completed', async () => {
    await compare([serialize.parse({ text: 'select g from generate_series(1, 2) as g' }), serialize.bind({}), serialize.execute({}), serialize.execute({}), serialize.execute({ rows: 1 }), serialize.sync()]);
    await compare(
      // (The table's contents afterwards differ by design: oxbow commits each statement on its own.)
      [serialize.parse({ text: 'insert into again values (1)' }), serialize.bind({}), serialize.execute({}), serialize.execute({}), serialize.sync()],
      { setup: ['create table again (id int)'] },
    );
  });

  it('empty statements, NoData, several statements in one Parse, duplicate portals, bad parameters', async () => {
    await compare([serialize.parse({ text: '' }), serialize.bind({}), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);
    await compare([serialize.parse({ text: 'insert into nodata values (1)' }), serialize.describe({ type: 'S' }), serialize.sync()], { setup: ['create table nodata (id int)'] });
    await compare([serialize.parse({ text: 'select 1; select 2' }), serialize.sync()]);
    await compare([serialize.parse({ text: 'select 1' }), serialize.bind({ portal: 'x' }), serialize.bind({ portal: 'x' }), serialize.sync()]);
    await compare([serialize.parse({ text: 'select $1::int' }), serialize.bind({ values: ['twelve'] }), serialize.sync()]);
    await compare([serialize.parse({ text: 'select $1::int' }), serialize.bind({ values: ['  12  '] }), serialize.execute({}), serialize.sync()]);
    await compare([serialize.sync(), serialize.sync()], { readyCount: 2 });
  });

  it('transaction status in ReadyForQuery: an error inside BEGIN fails the block until ROLLBACK', async () => {
    await compare(
      [
        serialize.query('begin'),
        // (Not a constant 1/0: PostgreSQL folds that at Bind, oxbow at Execute.)
        serialize.parse({ text: 'select 1/g from generate_series(0, 1) as g' }),
        serialize.bind({}),
        serialize.execute({}),
        serialize.sync(),
        serialize.query('select 1'),
        serialize.query('rollback'),
      ],
      { readyCount: 4 },
    );
  });

  it('a simple Query in the middle of an extended batch, and Flush', async () => {
    await compare([serialize.parse({ text: 'select 1' }), serialize.bind({}), serialize.execute({}), serialize.query('select 2'), serialize.execute({}), serialize.sync()], { readyCount: 2 });
    await compare([serialize.parse({ name: 'f', text: 'select 3' }), serialize.flush(), serialize.bind({ statement: 'f' }), serialize.execute({}), serialize.flush(), serialize.sync()]);
  });

  it('format code errors, and a portal outliving its closed statement', async () => {
    const twoResultFormats = message('B', Buffer.from('\0\0'), int16(0), int16(0), int16(2), int16(0), int16(0));
    await compare([serialize.parse({ text: 'select 1' }), twoResultFormats, serialize.sync()]);
    const badFormat = message('B', Buffer.from('\0\0'), int16(0), int16(0), int16(1), int16(2));
    await compare([serialize.parse({ text: 'select 1' }), badFormat, serialize.describe({ type: 'P' }), serialize.sync()]);
    await compare([serialize.parse({ text: 'select 1' }), badFormat, serialize.execute({}), serialize.sync()]);
    const badParameterFormat = message('B', Buffer.from('\0\0'), int16(1), int16(3), int16(1), int32(1), Buffer.from('5'), int16(0));
    await compare([serialize.parse({ text: 'select $1::int' }), badParameterFormat, serialize.sync()]);
    const formatsWithoutParameters = message('B', Buffer.from('\0\0'), int16(2), int16(0), int16(0), int16(1), int32(1), Buffer.from('5'), int16(0));
    await compare([serialize.parse({ text: 'select $1::int' }), formatsWithoutParameters, serialize.sync()]);
    await compare([
      serialize.parse({ name: 'gone', text: 'select 4' }),
      serialize.bind({ statement: 'gone', portal: 'stays' }),
      serialize.close({ type: 'S', name: 'gone' }),
      serialize.execute({ portal: 'stays' }),
      serialize.parse({ name: 'gone', text: 'select 5' }),
      serialize.sync(),
    ]);
  });

  it('SET of a reported parameter sends ParameterStatus', async () => {
    await compare([serialize.query("set application_name = 'probe2'")]);
    await compare([serialize.query("set timezone = 'Europe/Paris'; set datestyle = 'German'; select 1 as one")]);
  });

  it('notices come before the CommandComplete of their statement', async () => {
    await compare([serialize.query('drop table if exists nothing_here; select 1 as one')]);
    await compare([serialize.parse({ text: 'drop table if exists nothing_here' }), serialize.bind({}), serialize.execute({}), serialize.sync()]);
  });

  it('portals live until their transaction ends', async () => {
    await compare(
      [
        serialize.query('begin'),
        serialize.parse({ text: 'select g from generate_series(1, 3) as g' }),
        serialize.bind({ portal: 'p' }),
        serialize.execute({ portal: 'p', rows: 1 }),
        serialize.sync(),
        serialize.execute({ portal: 'p', rows: 1 }),
        serialize.sync(),
        serialize.query('commit'),
        serialize.execute({ portal: 'p', rows: 1 }),
        serialize.sync(),
      ],
      { readyCount: 5 },
    );
  });

  it('errors skip to Sync; the statement names stay as they were', async () => {
    await compare(
      [
        serialize.parse({ name: 'a', text: 'select 1' }),
        serialize.parse({ name: 'a', text: 'select 2' }),
        serialize.bind({ statement: 'a' }),
        serialize.execute({}),
        serialize.sync(),
        serialize.bind({ statement: 'a' }),
        serialize.execute({}),
        serialize.sync(),
      ],
      { readyCount: 2 },
    );
  });

  it('missing statements and portals, wrong parameter counts, Close of unknown names', async () => {
    await compare([serialize.bind({ statement: 'nope' }), serialize.sync()]);
    await compare([serialize.execute({ portal: 'nope' }), serialize.sync()]);
    await compare([serialize.describe({ type: 'P', name: 'nope' }), serialize.sync()]);
    await compare([serialize.parse({ text: 'select $1::int' }), serialize.bind({ values: [] }), serialize.sync()]);
    await compare([serialize.close({ type: 'S', name: 'nope' }), serialize.close({ type: 'P', name: 'nope' }), serialize.sync()]);
  });

  it('binary results', async () => {
    const bind = message('B', Buffer.from('\0\0'), int16(0), int16(0), int16(1), int16(1));
    await compare([
      serialize.parse({ text: "select 1::int2, 2::int4, 3::int8, 1.5::float8, 2.5::float4, true, 'hé'::text, '\\x01ff'::bytea, 12345.678::numeric, -0.05::numeric, '2024-02-29'::date, '2024-01-02 03:04:05.123456'::timestamp, '2024-01-02 03:04:05+00'::timestamptz, '1 year 2 mons 3 days 04:05:06'::interval, '13:14:15'::time" }),
      bind,
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    ]);
  });

  it('binary arrays (results and a parameter)', async () => {
    const bind = message('B', Buffer.from('\0\0'), int16(0), int16(0), int16(1), int16(1));
    await compare([serialize.parse({ text: "select array[1, 2, 3] as a, array['x', null]::text[] as b, array[]::int8[] as c" }), bind, serialize.execute({}), serialize.sync()]);
    // int4[] {5,NULL}: one dimension, has nulls, element type 23, length 2 from 1.
    const array = Buffer.concat([int32(1), int32(1), int32(23), int32(2), int32(1), int32(4), int32(5), int32(-1)] as unknown as Uint8Array[]);
    const parts: Buffer[] = [Buffer.from('\0\0'), int16(1), int16(1), int16(1), int32(array.length), array, int16(0)];
    await compare([serialize.parse({ text: 'select $1::int4[] as a', types: [1007] }), message('B', ...parts), serialize.execute({}), serialize.sync()]);
  });

  it('binary parameters', async () => {
    const parameters = [int32(7), Buffer.from('0000000000000009', 'hex'), Buffer.from('hé')];
    const parts: Buffer[] = [Buffer.from('\0\0'), int16(1), int16(1), int16(parameters.length)];
    for (const parameter of parameters) parts.push(int32(parameter.length), parameter);
    parts.push(int16(0));
    await compare([
      serialize.parse({ text: 'select $1::int4 + 1 as a, $2::int8 * 2 as b, $3::text as c', types: [23, 20, 25] }),
      message('B', ...parts),
      serialize.execute({}),
      serialize.sync(),
    ]);
  });

  it('COPY: CopyFail, Sync ignored during copy-in, COPY TO STDOUT', async () => {
    const setup = ['create table c (id int primary key, v text)'];
    await compare([serialize.query('copy c from stdin'), serialize.copyData(Buffer.from('1\ta\n')), serialize.copyFail('stop')], { setup });
    // COPY in the middle of a multi-statement Query: the statements after it run once it is done.
    await compare([serialize.query("copy c from stdin; select 'after' as a"), serialize.copyData(Buffer.from('7\tz\n')), serialize.copyDone()], { setup });
    // A Query message during copy-in fails the COPY (08P01).
    await compare([serialize.query('copy c from stdin'), serialize.query('select 1')], { setup });
    await compare(
      [
        serialize.parse({ text: 'copy c from stdin' }),
        serialize.bind({}),
        serialize.execute({}),
        serialize.sync(),
        serialize.copyData(Buffer.from('1\ta\n2\tb\n')),
        serialize.copyDone(),
        serialize.sync(),
        serialize.query('copy (select * from c order by id) to stdout'),
      ],
      { setup, readyCount: 2 },
    );
  });

  it('an unknown message type is a FATAL 08P01 and the connection closes', async () => {
    const summary = await compare([Buffer.concat([Buffer.from('@'), int32(4)] as unknown as Uint8Array[])]);
    expect(summary.at(-1)).toBe('closed');
  });
});
