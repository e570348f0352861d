// Startup, SSL/GSSENC negotiation, ParameterStatus, BackendKeyData, protocol-version negotiation,
// CancelRequest and SCRAM-SHA-256, checked byte for byte against independently built messages and
// with the real `pg` driver's SCRAM client.
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectReady, startDoubleServer, types, type DoubleServer } from './harness.js';
import { cstring, fields, int16, int32, message, RawClient } from './raw-client.js';

let trust: DoubleServer;
let secured: DoubleServer;

beforeAll(async () => {
  trust = await startDoubleServer();
  secured = await startDoubleServer({ password: 's3cret pass' });
});
afterAll(async () => {
  await trust?.stop();
  await secured?.stop();
});

describe('startup', () => {
  it('answers SSLRequest and GSSENCRequest with N, then accepts a 3.0 startup', async () => {
    const client = await RawClient.connect(trust.port);
    client.send(serialize.requestSsl());
    expect(await client.readByte()).toBe('N');
    client.send(Buffer.concat([int32(8), int32(80877104)] as unknown as Uint8Array[]));
    expect(await client.readByte()).toBe('N');
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow', application_name: 'probe' }));
    const messages = await client.readUntil('Z');
    expect(messages[0]!.bytes).toEqual(message('R', int32(0)));
    const statuses = new Map(
      messages.filter((m) => m.type === 'S').map((m) => {
        const [name, value] = m.payload.toString('utf8').split('\0');
        return [name!, value!] as const;
      }),
    );
    expect([...statuses.keys()].sort()).toEqual(
      ['application_name', 'client_encoding', 'DateStyle', 'integer_datetimes', 'server_encoding', 'server_version', 'standard_conforming_strings', 'TimeZone'].sort(),
    );
    expect(statuses.get('application_name')).toBe('probe');
    const session = trust.engine.openSessions().at(-1)!;
    const keyData = messages.find((m) => m.type === 'K')!;
    expect(keyData.bytes).toEqual(message('K', int32(session.processId), int32(session.secretKey)));
    expect(messages.at(-1)!.bytes).toEqual(message('Z', Buffer.from('I')));
    expect(session.startup.options['application_name']).toBe('probe');
    client.send(serialize.end());
    await client.closedPromise;
  });

  it('database defaults to the user name and an unknown database is a FATAL 3D000', async () => {
    const client = await RawClient.connect(trust.port);
    client.send(serialize.startup({ user: 'someone' }));
    const [ok, error] = await client.readToEnd();
    // PostgreSQL's order: authentication succeeds, then the database is looked up.
    expect(ok!.bytes).toEqual(message('R', int32(0)));
    expect(error!.type).toBe('E');
    expect(fields(error!).get('S')).toBe('FATAL');
    expect(fields(error!).get('C')).toBe('3D000');
    expect(fields(error!).get('M')).toBe('database "someone" does not exist');
  });

  it('negotiates down from protocol 3.1 with unknown _pq_ options', async () => {
    const client = await RawClient.connect(trust.port);
    const body = Buffer.concat([int16(3), int16(1), cstring('user'), cstring('oxbow'), cstring('database'), cstring('oxbow'), cstring('_pq_.magic'), cstring('on'), Buffer.from([0])] as unknown as Uint8Array[]);
    client.send(Buffer.concat([int32(body.length + 4), body] as unknown as Uint8Array[]));
    const messages = await client.readUntil('Z');
    expect(messages[0]!.bytes).toEqual(message('v', int32(0), int32(1), cstring('_pq_.magic')));
    expect(types(messages.slice(1, 2))).toBe('R');
    client.end();
  });

  it('rejects protocol 2.0 with a FATAL 0A000', async () => {
    const client = await RawClient.connect(trust.port);
    client.send(Buffer.concat([int32(9), int16(2), int16(0), Buffer.from([0])] as unknown as Uint8Array[]));
    const [error] = await client.readToEnd();
    expect(fields(error!).get('C')).toBe('0A000');
    expect(fields(error!).get('M')).toMatch(/unsupported frontend protocol 2\.0/);
  });

  it('a CancelRequest cancels the running statement of that backend only', async () => {
    const { client: busy } = await connectReady(trust.port);
    const { client: bystander } = await connectReady(trust.port);
    const sessions = trust.engine.openSessions();
    const busySession = sessions.at(-2)!;
    busy.send(serialize.query('sleep'));
    // Wait until the statement runs (the double records it), then cancel from a new connection.
    while (!busySession.executed.includes('sleep')) await new Promise((resolve) => setTimeout(resolve, 5));
    const canceller = await RawClient.connect(trust.port);
    canceller.send(serialize.cancel(busySession.processId, busySession.secretKey + 1)); // wrong key: ignored
    await canceller.closedPromise;
    const canceller2 = await RawClient.connect(trust.port);
    canceller2.send(serialize.cancel(busySession.processId, busySession.secretKey));
    await canceller2.closedPromise;
    const reply = await busy.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('57014');
    expect(busySession.cancelCount).toBe(1);
    bystander.send(serialize.query('select 7'));
    expect(types(await bystander.readUntil('Z'))).toBe('TDCZ');
    busy.end();
    bystander.end();
  });
});

describe('SCRAM-SHA-256', () => {
  it('advertises SCRAM-SHA-256 and pg logs in with the right password', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: secured.port, user: 'oxbow', database: 'oxbow', password: 's3cret pass' });
    await client.connect();
    const result = await client.query({ text: 'select 5', rowMode: 'array' });
    expect(result.rows).toEqual([[5]]);
    await client.end();
  });

  it('a wrong password is a FATAL 28P01', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: secured.port, user: 'oxbow', database: 'oxbow', password: 'wrong' });
    await expect(client.connect()).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "oxbow"' });
  });

  it('another user is refused even with the password', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: secured.port, user: 'mallory', database: 'oxbow', password: 's3cret pass' });
    await expect(client.connect()).rejects.toMatchObject({ code: '28P01' });
  });

  it('sends the mechanism list as PostgreSQL does', async () => {
    const client = await RawClient.connect(secured.port);
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    const request = await client.readMessage();
    expect(request.bytes).toEqual(message('R', int32(10), cstring('SCRAM-SHA-256'), Buffer.from([0])));
    client.send(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'p=tls-server-end-point,,n=,r=abc'));
    const [error] = await client.readToEnd();
    expect(fields(error!).get('C')).toBe('08P01');
    expect(fields(error!).get('M')).toBe('malformed SCRAM message');
  });
});
