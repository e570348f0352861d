// The packed form decoded rows take from a Kafka worker thread to the main thread
// (decoded-batch.ts): rows decoded by the message decoder, packed and unpacked, equal the rows the
// decoder produced, for a column of every type the JSON decoder fills (and INCLUDE columns), for
// deletes (kinds) and for generated random rows. No broker: the oracle is the decoder's own output
// before packing.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../../sql/catalog.js';
import { arrayOf, type } from '../../../../sql/types.js';
import type { Row } from '../../../../sql/value.js';
import { ByteWriter } from '../../../../storage/byte-writer.js';
import { MessageDecoder, type DecodedChanges } from '../../message-decoder.js';
import { sourceLayout } from '../../source-layout.js';
import type { RawMessageBatch } from '../../source.js';
import { packChanges, unpackRows } from '../decoded-batch.js';
import { column, INCLUDE_COLUMNS, jsonSource } from './json-corpus.js';

/** A source of every type the JSON decoder converts, plus the four INCLUDE columns and the hidden row id. */
const EVERY_TYPE: RelationDef = jsonSource(
  [
    column('i2', type('int2')),
    column('i4', type('int4')),
    column('i8', type('int8')),
    column('f4', type('float4')),
    column('f8', type('float8')),
    column('n', type('numeric')),
    column('b', type('bool')),
    column('t', type('text')),
    column('v', type('varchar')),
    column('d', type('date')),
    column('tm', type('time')),
    column('ts', type('timestamp')),
    column('tz', type('timestamptz')),
    column('iv', type('interval')),
    column('j', type('jsonb')),
    column('by', type('bytea')),
    column('u', type('uuid')),
    column('a', arrayOf(type('int4'))),
    column('_p', type('int4')),
    column('_o', type('int8')),
    column('_ts', type('timestamptz')),
    column('_k', type('bytea')),
  ],
  { id: 20001, name: 'every_type', include: [...INCLUDE_COLUMNS] },
);

const MESSAGES = [
  {
    i2: -32768,
    i4: 2147483647,
    i8: '-9223372036854775808',
    f4: 1.1,
    f8: -0.5e-300,
    n: '12345678901234567890.000100',
    b: true,
    t: 'plain',
    v: 'ünïcödé ✓ 𝄞',
    d: '2026-11-30',
    tm: '23:59:59.999999',
    ts: '2015-07-15 00:00:00.001',
    tz: '2026-01-01 12:00:00+02',
    iv: '1 year 2 mons 3 days 04:05:06.789',
    j: { a: [1, 2.50, null, true], 'b c': { d: 'e' } },
    by: '\\xdeadbeef',
    u: 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
    a: '{1,NULL,3}',
  },
  { i2: 7, i4: -1, i8: 9007199254740991, f4: 'NaN', f8: 'Infinity', n: 0.25, b: 'false', t: '', v: 'x'.repeat(300), d: 'infinity', tm: '00:00', ts: '-infinity', tz: '2000-02-29T23:00:00Z', iv: '-1 day', j: 'text', by: '\\x', u: '00000000-0000-0000-0000-000000000000', a: '{}' },
  {},
];

function rawBatch(values: string[], keys: (string | null)[]): RawMessageBatch {
  return {
    partition: 5,
    offsets: values.map((_, i) => BigInt(1_000_000_000_000 + i)),
    timestamps: values.map((_, i) => 1_764_000_000_000 + i),
    keys: keys.map((key) => (key === null ? null : Buffer.from(key))),
    values: values.map((value) => Buffer.from(value)),
    highWatermark: BigInt(1_000_000_000_000 + values.length),
  };
}

function decodeOnMainThread(relation: RelationDef, raw: RawMessageBatch): DecodedChanges {
  let rowId = 1n << 60n;
  const decoder = new MessageDecoder(sourceLayout(relation), 1 << 20, () => ++rowId);
  const changes: DecodedChanges = { rows: [], kinds: [] };
  const rejected: string[] = [];
  decoder.decode(raw, changes, (_partition, offset, error) => rejected.push(`${offset}: ${error}`));
  expect(rejected).toEqual([]);
  return changes;
}

describe('packed decoded rows', () => {
  it('unpack to the rows the decoder produced, for every type and the INCLUDE columns', () => {
    const changes = decodeOnMainThread(EVERY_TYPE, rawBatch(MESSAGES.map((message) => JSON.stringify(message)), ['k1', null, '']));
    expect(changes.rows).toHaveLength(3);
    // The decoder filled every column of the first message (no NULL left but none was sent).
    expect(changes.rows[0]!.every((value) => value !== null)).toBe(true);
    const packed = packChanges(changes.rows, changes.kinds, new ByteWriter(16));
    expect(packed.count).toBe(3);
    expect([...packed.kinds]).toEqual([1, 1, 1]);
    expect(unpackRows(packed)).toEqual(changes.rows);
  });

  it('carry deletes (upsert tombstones) as kind -1 with the key row', () => {
    const relation: RelationDef = {
      ...EVERY_TYPE,
      kind: 'table',
      columns: [column('id', type('int8'), false), column('name', type('varchar'))],
      primaryKey: [0],
      format: 'upsert',
      include: [],
    };
    let rowId = 0n;
    const decoder = new MessageDecoder(sourceLayout(relation), 1 << 20, () => ++rowId);
    const changes: DecodedChanges = { rows: [], kinds: [] };
    const raw: RawMessageBatch = { ...rawBatch(['{"id":1,"name":"a"}', '{"id":2,"name":"b"}'], ['1', '2']), values: [Buffer.from('{"id":1,"name":"a"}'), null] };
    decoder.decode(raw, changes, () => expect.unreachable());
    const packed = packChanges(changes.rows, changes.kinds, new ByteWriter());
    expect([...packed.kinds]).toEqual([1, -1]);
    expect(unpackRows(packed)).toEqual([
      [1n, 'a'],
      [2n, null],
    ]);
  });

  it('round-trip random rows of scalar values, also packed from an offset into the batch', () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.double(),
      fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
      fc.string({ unit: 'grapheme' }),
      fc.uint8Array({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(fc.array(fc.array(value, { maxLength: 12 }), { maxLength: 30 }), fc.nat(5), (rows, from) => {
        const kinds = rows.map((_, i) => (i % 3 === 0 ? -1 : 1));
        const start = Math.min(from, rows.length);
        const packed = packChanges(rows as Row[], kinds, new ByteWriter(8), start);
        expect(packed.count).toBe(rows.length - start);
        expect([...packed.kinds]).toEqual(kinds.slice(start));
        expect(unpackRows(packed)).toEqual(rows.slice(start));
      }),
    );
  });
});
