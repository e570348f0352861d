// The simple query protocol over the engine double: exact bytes of a result, several statements
// per message with PostgreSQL's error rule, empty queries, syntax errors, notices, parameter
// status changes and transaction status in ReadyForQuery.
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { doubleServerWithClient, types } from './harness.js';
import { cstring, fields, int16, int32, message } from './raw-client.js';

const double = doubleServerWithClient();

function session() {
  return double.server.engine.openSessions().at(-1)!;
}

describe('simple query', () => {
  it('sends RowDescription, DataRow, CommandComplete, ReadyForQuery byte for byte', async () => {
    double.client.send(serialize.query('select 42'));
    const reply = Buffer.concat((await double.client.readUntil('Z')).map((m) => m.bytes) as unknown as Uint8Array[]);
    const expected = Buffer.concat([
      message('T', int16(1), cstring('?column?'), int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)),
      message('D', int16(1), int32(2), Buffer.from('42')),
      message('C', cstring('SELECT 1')),
      message('Z', Buffer.from('I')),
    ] as unknown as Uint8Array[]);
    expect(reply).toEqual(expected);
  });

  it('runs several statements and stops at the first failing one', async () => {
    const before = session().executed.length;
    double.client.send(serialize.query('select 1; fail 42P01; select 2'));
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('TDCEZ');
    const error = fields(reply[3]!);
    expect(error.get('S')).toBe('ERROR');
    expect(error.get('V')).toBe('ERROR');
    expect(error.get('C')).toBe('42P01');
    expect(error.get('M')).toBe('failure requested');
    expect(error.get('D')).toBe('by the test');
    expect(error.get('H')).toBe('none');
    expect(session().executed.slice(before)).toEqual(['select 1', 'fail 42P01']);
  });

  it('a syntax error anywhere fails the whole string before anything runs, with its position', async () => {
    const before = session().executed.length;
    double.client.send(serialize.query('select 1; syntax'));
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('42601');
    expect(fields(reply[0]!).get('P')).toBe('1');
    expect(session().executed.length).toBe(before);
  });

  it('an empty query string gets EmptyQueryResponse', async () => {
    double.client.send(serialize.query(''));
    const reply = await double.client.readUntil('Z');
    expect(reply.map((m) => m.bytes)).toEqual([message('I'), message('Z', Buffer.from('I'))]);
    double.client.send(serialize.query('  ;  ; '));
    expect(types(await double.client.readUntil('Z'))).toBe('IZ');
  });

  it('reports the transaction status in ReadyForQuery: T in a block, E after a failure in it', async () => {
    double.client.send(serialize.query('begin'));
    expect((await double.client.readUntil('Z')).at(-1)!.bytes).toEqual(message('Z', Buffer.from('T')));
    double.client.send(serialize.query('fail 22012'));
    expect((await double.client.readUntil('Z')).at(-1)!.bytes).toEqual(message('Z', Buffer.from('E')));
    double.client.send(serialize.query('select 1'));
    const refused = await double.client.readUntil('Z');
    expect(fields(refused[0]!).get('C')).toBe('25P02');
    double.client.send(serialize.query('rollback'));
    const done = await double.client.readUntil('Z');
    expect(done[0]!.bytes).toEqual(message('C', cstring('ROLLBACK')));
    expect(done.at(-1)!.bytes).toEqual(message('Z', Buffer.from('I')));
  });

  it('forwards notices and parameter changes', async () => {
    double.client.send(serialize.query('notice; set application_name psql2'));
    const reply = await double.client.readUntil('Z');
    // The ParameterStatus comes just before ReadyForQuery, as PostgreSQL sends it.
    expect(types(reply)).toBe('NCCSZ');
    const notice = fields(reply[0]!);
    expect(notice.get('S')).toBe('NOTICE');
    expect(notice.get('M')).toBe('a notice');
    expect(notice.get('D')).toBe('notice detail');
    expect(reply[3]!.bytes).toEqual(message('S', cstring('application_name'), cstring('psql2')));
  });

  it('an encoder failing halfway through a row leaves a well-formed stream (XX000)', async () => {
    double.client.send(serialize.query('corrupt'));
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('TDEZ');
    expect(reply[1]!.bytes).toEqual(message('D', int16(1), int32(4), Buffer.from('fine')));
    expect(fields(reply[2]!).get('C')).toBe('XX000');
    double.client.send(serialize.query('select 5'));
    expect(types(await double.client.readUntil('Z'))).toBe('TDCZ');
  });

  it('streams a large result in batches with the right count', async () => {
    double.client.send(serialize.query('rows 5000'));
    const reply = await double.client.readUntil('Z');
    expect(reply.filter((m) => m.type === 'D').length).toBe(5000);
    const last = reply.filter((m) => m.type === 'D').at(-1)!;
    expect(last.bytes).toEqual(message('D', int16(2), int32(4), Buffer.from('5000'), int32(8), Buffer.from('row 5000')));
    expect(reply.at(-2)!.bytes).toEqual(message('C', cstring('SELECT 5000')));
  });
});
