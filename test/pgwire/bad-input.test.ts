// Bad input never takes the server down: truncated and oversized messages, unknown message types,
// garbage before startup, a client that disconnects mid-query, 200 connections at once, idle
// timeouts. Each gets a clear error or a clean close, and the server keeps serving others.
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectReady, startDoubleServer, types, type DoubleServer } from './harness.js';
import { fields, int32, RawClient } from './raw-client.js';

let server: DoubleServer;

beforeAll(async () => {
  server = await startDoubleServer({ maxMessageBytes: 64 * 1024 });
});
afterAll(async () => {
  await server?.stop();
});

/** The server still answers a fresh client. */
async function stillServes(): Promise<void> {
  const { client } = await connectReady(server.port);
  client.send(serialize.query('select 1'));
  expect(types(await client.readUntil('Z'))).toBe('TDCZ');
  client.end();
}

describe('bad input', () => {
  it('garbage before startup (an HTTP request) gets a FATAL 08P01 and a close', async () => {
    const client = await RawClient.connect(server.port);
    client.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const messages = await client.readToEnd();
    expect(messages.length).toBe(1);
    expect(fields(messages[0]!).get('S')).toBe('FATAL');
    expect(fields(messages[0]!).get('C')).toBe('08P01');
    expect(fields(messages[0]!).get('M')).toBe('invalid length of startup packet');
    await stillServes();
  });

  it('an oversized message is refused from its header (54000) and the connection closed', async () => {
    const { client } = await connectReady(server.port);
    // Only the header: the server must not wait for (or buffer) the 100 MB body.
    client.send(Buffer.concat([Buffer.from('Q'), int32(100 * 1024 * 1024)] as unknown as Uint8Array[]));
    const messages = await client.readToEnd();
    expect(messages.length).toBe(1);
    expect(fields(messages[0]!).get('S')).toBe('FATAL');
    expect(fields(messages[0]!).get('C')).toBe('54000');
    expect(fields(messages[0]!).get('M')).toMatch(/is 104857600 bytes, more than the limit of 65536 bytes/);
    await stillServes();
  });

  it('a message length below 4 is a FATAL 08P01', async () => {
    const { client } = await connectReady(server.port);
    client.send(Buffer.concat([Buffer.from('Q'), int32(2)] as unknown as Uint8Array[]));
    const messages = await client.readToEnd();
    expect(fields(messages[0]!).get('C')).toBe('08P01');
    await stillServes();
  });

  it('an unknown message type is a FATAL 08P01', async () => {
    const { client } = await connectReady(server.port);
    client.send(Buffer.concat([Buffer.from('@'), int32(4)] as unknown as Uint8Array[]));
    const messages = await client.readToEnd();
    expect(messages.length).toBe(1);
    expect(fields(messages[0]!).get('C')).toBe('08P01');
    expect(fields(messages[0]!).get('M')).toBe('invalid frontend message type 64');
    await stillServes();
  });

  it('a malformed message body is an ERROR 08P01, and the connection goes on', async () => {
    const { client } = await connectReady(server.port);
    // A Query without its NUL terminator.
    client.send(Buffer.concat([Buffer.from('Q'), int32(7), Buffer.from('abc')] as unknown as Uint8Array[]));
    const reply = await client.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('08P01');
    client.send(serialize.query('select 1'));
    expect(types(await client.readUntil('Z'))).toBe('TDCZ');
    client.end();
  });

  it('a truncated message followed by a disconnect is dropped cleanly', async () => {
    const { client } = await connectReady(server.port);
    const query = serialize.query('select 1');
    client.send(query.subarray(0, query.length - 3));
    client.socket.destroy();
    await client.closedPromise;
    await stillServes();
  });

  it('a truncated startup packet followed by a disconnect is dropped cleanly', async () => {
    const client = await RawClient.connect(server.port);
    const startup = serialize.startup({ user: 'oxbow' });
    client.send(startup.subarray(0, 10));
    client.socket.destroy();
    await stillServes();
  });

  it('a client that disconnects mid-query has its statement cancelled and its session closed', async () => {
    const { client } = await connectReady(server.port);
    const session = server.engine.openSessions().at(-1)!;
    client.send(serialize.query('sleep'));
    while (!session.executed.includes('sleep')) await new Promise((resolve) => setTimeout(resolve, 5));
    client.socket.destroy();
    while (!session.closed) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(session.cancelCount).toBe(1);
    await stillServes();
  });

  it('a client that stops reading a large result holds back only its own session', async () => {
    const { client: slow } = await connectReady(server.port);
    slow.socket.pause();
    slow.send(serialize.query('rows 300000'));
    // While the slow client's socket is full and the server waits for it to drain, others are served.
    await stillServes();
    await stillServes();
    slow.socket.resume();
    const reply = await slow.readUntil('Z');
    expect(reply.filter((m) => m.type === 'D').length).toBe(300000);
    expect(reply.at(-2)!.payload.toString('utf8')).toBe('SELECT 300000\0');
    slow.end();
  });

  it('200 connections at once: 100 served, the rest get 53300, and the server recovers', async () => {
    // Wait for earlier tests' connections to be gone so the count starts from zero.
    while (server.server.connectionCount > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const attempts = await Promise.allSettled(
      Array.from({ length: 200 }, async () => {
        const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'oxbow', database: 'oxbow' });
        await client.connect();
        return client;
      }),
    );
    const connected = attempts.filter((attempt) => attempt.status === 'fulfilled').map((attempt) => (attempt as PromiseFulfilledResult<pg.Client>).value);
    const refused = attempts.filter((attempt) => attempt.status === 'rejected').map((attempt) => (attempt as PromiseRejectedResult).reason as { code?: string; message: string });
    expect(connected.length).toBe(100);
    expect(refused.length).toBe(100);
    for (const reason of refused) {
      expect(reason.code).toBe('53300');
      expect(reason.message).toBe('sorry, too many clients already');
    }
    const results = await Promise.all(connected.map((client) => client.query({ text: 'select 3', rowMode: 'array' })));
    for (const result of results) expect(result.rows).toEqual([[3]]);
    await Promise.all(connected.map((client) => client.end()));
    while (server.server.connectionCount > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await stillServes();
  });

  it('idle_session_timeout closes an idle session with FATAL 57P05', async () => {
    const { client } = await connectReady(server.port, { idle_session_timeout: '20ms' });
    const messages = await client.readToEnd();
    expect(messages.length).toBe(1);
    expect(fields(messages[0]!).get('S')).toBe('FATAL');
    expect(fields(messages[0]!).get('C')).toBe('57P05');
    expect(fields(messages[0]!).get('M')).toBe('terminating connection due to idle-session timeout');
  });

  it('idle_in_transaction_session_timeout closes a session idle inside a transaction with 25P03', async () => {
    const { client } = await connectReady(server.port, { idle_in_transaction_session_timeout: '20ms' });
    client.send(serialize.query('begin'));
    const messages = await client.readToEnd();
    expect(types(messages)).toBe('CZE');
    expect(fields(messages[2]!).get('C')).toBe('25P03');
  });

  it('a client that never finishes startup is closed after the authentication timeout', async () => {
    const own = await startDoubleServer({ authenticationTimeoutMs: 50 });
    const silent = await RawClient.connect(own.port);
    await silent.closedPromise;
    const halfway = await RawClient.connect(own.port);
    halfway.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }).subarray(0, 12));
    await halfway.closedPromise;
    expect(own.server.connectionCount).toBe(0);
    await own.stop();
  });

  it('server shutdown tells connected clients 57P01', async () => {
    const own = await startDoubleServer();
    const { client } = await connectReady(own.port);
    const closing = own.stop();
    const messages = await client.readToEnd();
    await closing;
    expect(fields(messages[0]!).get('C')).toBe('57P01');
  });
});
