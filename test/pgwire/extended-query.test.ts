// The extended query protocol over the engine double: named and unnamed statements and portals,
// Describe, Execute row limits with PortalSuspended, Close, the skip-until-Sync rule after an
// error, binary parameters and results, and pipelining of several Syncs in one write.
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { doubleServerWithClient, types } from './harness.js';
import { cstring, fields, int16, int32, message } from './raw-client.js';

const double = doubleServerWithClient();

/** Bind with explicit per-parameter formats and result formats (pg-protocol's bind has no per-column control). */
function bind(portal: string, statement: string, parameters: { format: number; bytes: Buffer | null }[], resultFormats: number[]): Buffer {
  const parts: Buffer[] = [cstring(portal), cstring(statement), int16(parameters.length)];
  for (const parameter of parameters) parts.push(int16(parameter.format));
  parts.push(int16(parameters.length));
  for (const parameter of parameters) {
    if (parameter.bytes === null) parts.push(int32(-1));
    else parts.push(int32(parameter.bytes.length), parameter.bytes);
  }
  parts.push(int16(resultFormats.length));
  for (const format of resultFormats) parts.push(int16(format));
  return message('B', ...parts);
}

describe('extended query', () => {
  it('Parse, Describe statement, Bind, Describe portal, Execute, Sync', async () => {
    double.client.send(
      serialize.parse({ name: 'two', text: 'select 2' }),
      serialize.describe({ type: 'S', name: 'two' }),
      serialize.bind({ statement: 'two', portal: 'p' }),
      serialize.describe({ type: 'P', name: 'p' }),
      serialize.execute({ portal: 'p' }),
      serialize.sync(),
    );
    const reply = await double.client.readUntil('Z');
    expect(reply.map((m) => m.bytes)).toEqual([
      message('1'),
      message('t', int16(0)),
      message('T', int16(1), cstring('?column?'), int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)),
      message('2'),
      message('T', int16(1), cstring('?column?'), int32(0), int16(0), int32(23), int16(4), int32(-1), int16(0)),
      message('D', int16(1), int32(1), Buffer.from('2')),
      message('C', cstring('SELECT 1')),
      message('Z', Buffer.from('I')),
    ]);
  });

  it('a command statement describes as NoData', async () => {
    double.client.send(serialize.parse({ text: 'notice' }), serialize.describe({ type: 'S' }), serialize.sync());
    expect(types(await double.client.readUntil('Z'))).toBe('1tnZ');
  });

  it('Execute with a row limit suspends the portal and resumes it', async () => {
    double.client.send(
      serialize.parse({ text: 'rows 5' }),
      serialize.bind({}),
      serialize.execute({ rows: 2 }),
      serialize.execute({ rows: 2 }),
      serialize.execute({ rows: 2 }),
      serialize.sync(),
    );
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('12DDsDDsDCZ');
    expect(reply.at(-2)!.bytes).toEqual(message('C', cstring('SELECT 1')));
  });

  it('after Sync outside a transaction the portal is gone', async () => {
    double.client.send(serialize.parse({ text: 'rows 3' }), serialize.bind({ portal: 'keep' }), serialize.execute({ portal: 'keep', rows: 1 }), serialize.sync());
    expect(types(await double.client.readUntil('Z'))).toBe('12DsZ');
    double.client.send(serialize.execute({ portal: 'keep' }), serialize.sync());
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('EZ');
    expect(fields(reply[0]!).get('C')).toBe('34000');
    expect(fields(reply[0]!).get('M')).toBe('portal "keep" does not exist');
  });

  it('an error discards every message up to Sync', async () => {
    double.client.send(
      serialize.parse({ text: 'fail 22012' }),
      serialize.bind({}),
      serialize.execute({}),
      serialize.parse({ name: 'never', text: 'select 1' }),
      serialize.execute({}),
      serialize.sync(),
      serialize.parse({ name: 'after', text: 'select 3' }),
      serialize.sync(),
    );
    const first = await double.client.readUntil('Z');
    expect(types(first)).toBe('12EZ');
    expect(fields(first[2]!).get('C')).toBe('22012');
    expect(types(await double.client.readUntil('Z'))).toBe('1Z');
    // "never" was discarded: binding it fails, "after" exists.
    double.client.send(serialize.bind({ statement: 'never' }), serialize.sync());
    const missing = await double.client.readUntil('Z');
    expect(fields(missing[0]!).get('C')).toBe('26000');
    expect(fields(missing[0]!).get('M')).toBe('prepared statement "never" does not exist');
  });

  it('refuses a duplicate statement name and a wrong parameter count', async () => {
    double.client.send(serialize.parse({ name: 'dup', text: 'select 1' }), serialize.parse({ name: 'dup', text: 'select 1' }), serialize.sync());
    const reply = await double.client.readUntil('Z');
    expect(types(reply)).toBe('1EZ');
    expect(fields(reply[1]!).get('C')).toBe('42P05');
    double.client.send(serialize.parse({ name: 'e', text: 'echo int4' }), serialize.bind({ statement: 'e', values: [] }), serialize.sync());
    const count = await double.client.readUntil('Z');
    expect(fields(count[1]!).get('C')).toBe('08P01');
    expect(fields(count[1]!).get('M')).toBe('bind message supplies 0 parameters, but prepared statement "e" requires 1');
  });

  it('Close removes statements and portals; closing a missing one is not an error', async () => {
    double.client.send(serialize.parse({ name: 'gone', text: 'select 1' }), serialize.close({ type: 'S', name: 'gone' }), serialize.close({ type: 'P', name: 'nothing' }), serialize.sync());
    expect(types(await double.client.readUntil('Z'))).toBe('133Z');
    double.client.send(serialize.describe({ type: 'S', name: 'gone' }), serialize.sync());
    expect(types(await double.client.readUntil('Z'))).toBe('EZ');
  });

  it('binary parameters and results round-trip with PostgreSQL byte layouts', async () => {
    const cases: { type: string; oid: number; bytes: Buffer }[] = [
      { type: 'int4', oid: 23, bytes: int32(-123456) },
      { type: 'int8', oid: 20, bytes: Buffer.from('fffffffffffffffe', 'hex') },
      { type: 'int2', oid: 21, bytes: int16(-2) },
      { type: 'bool', oid: 16, bytes: Buffer.from([1]) },
      { type: 'float8', oid: 701, bytes: Buffer.from('400921fb54442d18', 'hex') },
      { type: 'float4', oid: 700, bytes: Buffer.from('3fc00000', 'hex') },
      { type: 'text', oid: 25, bytes: Buffer.from('héllo', 'utf8') },
      { type: 'bytea', oid: 17, bytes: Buffer.from([0, 1, 2, 255]) },
      // 12345.678 = digits 1 2345 6780, weight 1, dscale 3 (PostgreSQL's numeric_send)
      { type: 'numeric', oid: 1700, bytes: Buffer.concat([int16(3), int16(1), int16(0), int16(3), int16(1), int16(2345), int16(6780)] as unknown as Uint8Array[]) },
      // -0.05 = digit 500, weight -1, negative, dscale 2
      { type: 'numeric', oid: 1700, bytes: Buffer.concat([int16(1), int16(-1), int16(0x4000), int16(2), int16(500)] as unknown as Uint8Array[]) },
      // 2024-02-29 is day 8825 after 2000-01-01
      { type: 'date', oid: 1082, bytes: int32(8825) },
      { type: 'timestamp', oid: 1114, bytes: Buffer.from('0002b8c4c6c1e240', 'hex') },
      { type: 'timestamptz', oid: 1184, bytes: Buffer.from('7fffffffffffffff', 'hex') },
      { type: 'time', oid: 1083, bytes: Buffer.from('000000141dd76000', 'hex') },
      { type: 'interval', oid: 1186, bytes: Buffer.concat([Buffer.from('00000000000f4240', 'hex'), int32(3), int32(14)] as unknown as Uint8Array[]) },
    ];
    for (const testCase of cases) {
      double.client.send(
        serialize.parse({ name: '', text: `echo ${testCase.type}`, types: [testCase.oid] }),
        bind('', '', [{ format: 1, bytes: testCase.bytes }], [1]),
        serialize.execute({}),
        serialize.sync(),
      );
      const reply = await double.client.readUntil('Z');
      expect(types(reply), testCase.type).toBe('12DCZ');
      expect(reply[2]!.bytes, testCase.type).toEqual(message('D', int16(1), int32(testCase.bytes.length), testCase.bytes));
    }
  });

  it('binary NULL and malformed binary input (22P03 too long, 08P01 too short, as PostgreSQL)', async () => {
    double.client.send(serialize.parse({ text: 'echo int4', types: [23] }), bind('', '', [{ format: 1, bytes: null }], [1]), serialize.execute({}), serialize.sync());
    const reply = await double.client.readUntil('Z');
    expect(reply[2]!.bytes).toEqual(message('D', int16(1), int32(-1)));
    double.client.send(serialize.parse({ text: 'echo int4', types: [23] }), bind('', '', [{ format: 1, bytes: Buffer.from([1, 2, 3, 4, 5]) }], [1]), serialize.sync());
    const bad = await double.client.readUntil('Z');
    expect(types(bad)).toBe('1EZ');
    expect(fields(bad[1]!).get('C')).toBe('22P03');
    expect(fields(bad[1]!).get('M')).toBe('incorrect binary data format in bind parameter 1');
    double.client.send(serialize.parse({ text: 'echo int4', types: [23] }), bind('', '', [{ format: 1, bytes: Buffer.from([1, 2]) }], [1]), serialize.sync());
    const short = await double.client.readUntil('Z');
    expect(types(short)).toBe('1EZ');
    expect(fields(short[1]!).get('C')).toBe('08P01');
    expect(fields(short[1]!).get('M')).toBe('insufficient data left in message');
  });

  it('pipelines several Parse/Bind/Execute/Sync groups sent in one write', async () => {
    const batch: Buffer[] = [];
    for (let i = 0; i < 50; i++) batch.push(serialize.parse({ text: `select ${i}` }), serialize.bind({}), serialize.execute({}), serialize.sync());
    double.client.send(Buffer.concat(batch as unknown as Uint8Array[]));
    for (let i = 0; i < 50; i++) {
      const reply = await double.client.readUntil('Z');
      expect(reply[2]!.bytes).toEqual(message('D', int16(1), int32(String(i).length), Buffer.from(String(i))));
    }
  });

  it('Flush sends pending results without ReadyForQuery', async () => {
    double.client.send(serialize.parse({ text: 'select 9' }), serialize.bind({}), serialize.execute({}), serialize.flush());
    expect(types([await double.client.readMessage(), await double.client.readMessage(), await double.client.readMessage(), await double.client.readMessage()])).toBe('12DC');
    double.client.send(serialize.sync());
    expect(types(await double.client.readUntil('Z'))).toBe('Z');
  });
});
