// COPY framing over the engine double: CopyInResponse / CopyData / CopyDone / CopyFail,
// CopyOutResponse / CopyData / CopyDone, errors inside a COPY, in the simple and extended protocol.
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { doubleServerWithClient, types } from './harness.js';
import { cstring, fields, int16, message } from './raw-client.js';

const double = doubleServerWithClient();

describe('COPY', () => {
  it('FROM STDIN: CopyInResponse, rows, CopyDone, COPY n', async () => {
    double.client.send(serialize.query('copyin'));
    const response = await double.client.readMessage();
    expect(response.bytes).toEqual(message('G', Buffer.from([0]), int16(2), int16(0), int16(0)));
    double.client.send(serialize.copyData(Buffer.from('1\ta\n')), serialize.copyData(Buffer.from('2\tb\n3\tc\n')), serialize.copyDone());
    const reply = await double.client.readUntil('Z');
    expect(reply.map((m) => m.bytes)).toEqual([message('C', cstring('COPY 3')), message('Z', Buffer.from('I'))]);
  });

  it('CopyFail aborts with 57014 and the reason', async () => {
    const session = double.server.engine.openSessions().at(-1)!;
    const aborted = session.abortedCopies;
    double.client.send(serialize.query('copyin'));
    expect((await double.client.readMessage()).type).toBe('G');
    double.client.send(serialize.copyData(Buffer.from('1\ta\n')), serialize.copyFail('client gave up'));
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('57014');
    expect(fields(reply[0]!).get('M')).toBe('COPY from stdin failed: client gave up');
    expect(session.abortedCopies).toBe(aborted + 1);
  });

  it('a bad row fails the COPY with its context; later CopyData is ignored', async () => {
    double.client.send(serialize.query('copyin'));
    expect((await double.client.readMessage()).type).toBe('G');
    double.client.send(serialize.copyData(Buffer.from('bad row\n')), serialize.copyData(Buffer.from('1\ta\n')), serialize.copyDone());
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('22P04');
    expect(fields(reply[0]!).get('W')).toBe('COPY t, line 1');
    double.client.send(serialize.query('select 1'));
    expect(types(await double.client.readUntil('Z'))).toBe('TDCZ');
  });

  it('TO STDOUT: CopyOutResponse, a CopyData per row, CopyDone, COPY n', async () => {
    double.client.send(serialize.query('copyout 2'));
    const reply = await double.client.readUntil('Z');
    expect(reply.map((m) => m.bytes)).toEqual([
      message('H', Buffer.from([0]), int16(2), int16(0), int16(0)),
      message('d', Buffer.from('1\trow 1\n')),
      message('d', Buffer.from('2\trow 2\n')),
      message('c'),
      message('C', cstring('COPY 2')),
      message('Z', Buffer.from('I')),
    ]);
  });

  it('COPY FROM STDIN through the extended protocol (Sync during COPY is ignored)', async () => {
    double.client.send(serialize.parse({ text: 'copyin' }), serialize.bind({}), serialize.execute({}), serialize.sync());
    const start = await double.client.readUntil('G');
    expect(types(start)).toBe('12G');
    // PostgreSQL ignores a Sync during copy-in: the client sends another after CopyDone.
    double.client.send(serialize.copyData(Buffer.from('1\ta\n')), serialize.copyDone(), serialize.sync());
    const reply = await double.client.readUntil('Z');
    expect(reply.map((m) => m.bytes)).toEqual([message('C', cstring('COPY 1')), message('Z', Buffer.from('I'))]);
  });
});
