// Unit tests of the message decoder (no broker): each format and encoding on hand-made raw
// batches, INCLUDE columns, and every kind of bad message rejected with its offset while the rest
// of the batch decodes. Expected rows are written out by hand from the messages.

import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../sql/catalog.js';
import { type } from '../../../sql/types.js';
import type { Row } from '../../../sql/value.js';
import { MessageDecoder, splitCsvLine, type DecodedChanges } from '../message-decoder.js';
import { sourceLayout } from '../source-layout.js';
import type { RawMessageBatch } from '../source.js';

function relation(overrides: Partial<RelationDef>): RelationDef {
  return {
    id: 20000,
    kind: 'table',
    schema: 'public',
    name: 's',
    columns: [
      { name: 'id', type: type('int4'), nullable: false, hidden: false },
      { name: 'name', type: type('varchar'), nullable: true, hidden: false },
      { name: 'amount', type: type('int8'), nullable: true, hidden: false },
    ],
    primaryKey: [0],
    dependsOn: [],
    options: { connector: 'kafka', topic: 't', 'properties.bootstrap.server': '127.0.0.1:9092' },
    format: 'plain',
    encode: 'json',
    ...overrides,
  };
}

function batch(values: (string | null)[], keys: (string | null)[] = []): RawMessageBatch {
  return {
    partition: 3,
    offsets: values.map((_, i) => BigInt(100 + i)),
    timestamps: values.map((_, i) => 1_700_000_000_000 + i),
    keys: values.map((_, i) => (keys[i] === undefined || keys[i] === null ? null : Buffer.from(keys[i]!))),
    values: values.map((value) => (value === null ? null : Buffer.from(value))),
    highWatermark: BigInt(100 + values.length),
  };
}

function decode(def: RelationDef, input: RawMessageBatch, maxBytes = 1 << 20): { changes: DecodedChanges; rejected: string[] } {
  let rowId = 0n;
  const decoder = new MessageDecoder(sourceLayout(def), maxBytes, () => ++rowId);
  const changes: DecodedChanges = { rows: [], kinds: [] };
  const rejected: string[] = [];
  decoder.decode(input, changes, (partition, offset, error) => rejected.push(`${partition}:${offset} ${error}`));
  return { changes, rejected };
}

describe('MessageDecoder', () => {
  it('decodes plain JSON, NULL for missing optional fields, and rejects bad messages one by one', () => {
    const { changes, rejected } = decode(
      relation({}),
      batch(['{"id":1,"name":"a","amount":5}', '{"id":2}', 'nope', '{"id":"x"}', '{"name":"no id"}', '{"id":3,"amount":1.5}', '{"id":4,"amount":"9007199254740993"}', null]),
    );
    expect(changes.rows).toEqual([
      [1, 'a', 5n],
      [2, null, null],
      [4, null, 9007199254740993n],
    ]);
    expect(changes.kinds).toEqual([1, 1, 1]);
    expect(rejected).toEqual([
      expect.stringMatching(/^3:102 invalid JSON/),
      '3:103 field "id": invalid input syntax for type integer: "x"',
      '3:104 missing field "id"',
      '3:105 field "amount": invalid input syntax for type bigint: "1.5"',
      '3:107 message without a value',
    ]);
  });

  it('rejects oversized messages', () => {
    const { changes, rejected } = decode(relation({}), batch(['{"id":1}', JSON.stringify({ id: 2, name: 'x'.repeat(100) })]), 50);
    expect(changes.rows).toEqual([[1, null, null]]);
    expect(rejected).toEqual([expect.stringMatching(/^3:101 message of \d+ bytes exceeds max.message.bytes \(50\)$/)]);
  });

  it('fills INCLUDE columns and the hidden row id', () => {
    const def = relation({
      columns: [
        { name: 'v', type: type('int4'), nullable: true, hidden: false },
        { name: 'p', type: type('int4'), nullable: true, hidden: false },
        { name: 'o', type: type('int8'), nullable: true, hidden: false },
        { name: 'ts', type: type('timestamptz'), nullable: true, hidden: false },
        { name: 'k', type: type('bytea'), nullable: true, hidden: false },
        { name: '_row_id', type: type('int8'), nullable: false, hidden: true },
      ],
      primaryKey: [5],
      include: [
        { what: 'partition', column: 'p' },
        { what: 'offset', column: 'o' },
        { what: 'timestamp', column: 'ts' },
        { what: 'key', column: 'k' },
      ],
    });
    const { changes } = decode(def, batch(['{"v":7}', '{"v":8}'], ['ab', null]));
    expect(changes.rows).toEqual([
      [7, 3, 100n, 1_700_000_000_000_000, new Uint8Array([97, 98]), 1n],
      [8, 3, 101n, 1_700_000_000_001_000, null, 2n],
    ] as Row[]);
  });

  it('upserts and deletes on tombstones keyed by JSON or bare text', () => {
    const { changes, rejected } = decode(relation({ format: 'upsert' }), batch(['{"id":1,"name":"a"}', null, null, null], ['1', '{"id":1}', '7', null]));
    expect(changes.rows).toEqual([
      [1, 'a', null],
      [1, null, null],
      [7, null, null],
    ]);
    expect(changes.kinds).toEqual([1, -1, -1]);
    expect(rejected).toEqual(['3:103 tombstone without a key']);
  });

  it('turns Debezium events into inserts and deletes by key', () => {
    const events = [
      { op: 'c', after: { id: 1, name: 'a' } },
      { payload: { op: 'u', before: { id: 1, name: 'a' }, after: { id: 1, name: 'b' } } },
      { op: 'u', before: { id: 1, name: 'b' }, after: { id: 2, name: 'b' } },
      { op: 'd', before: { id: 2, name: 'b' } },
      { op: 'd' },
    ].map((event) => JSON.stringify(event));
    const { changes, rejected } = decode(relation({ format: 'debezium' }), batch([...events, null]));
    expect(changes.rows.map((row, i) => `${changes.kinds[i]! > 0 ? '+' : '-'}${row[0]}:${row[1]}`)).toEqual(['+1:a', '+1:b', '-1:b', '+2:b', '-2:b']);
    expect(rejected).toEqual(['3:104 Debezium op "d" without "before"']);
  });

  it('decodes CSV by position with quoting', () => {
    const { changes, rejected } = decode(relation({ encode: 'csv', options: { 'encode.delimiter': ';' } }), batch(['1;"x;y";3', '2;;', '3;a', '4;"unterminated;1']));
    expect(changes.rows).toEqual([
      [1, 'x;y', 3n],
      [2, null, null],
    ]);
    expect(rejected).toEqual(['3:102 CSV line has 2 fields, expected 3', '3:103 unterminated quoted CSV field']);
  });

  it('splits CSV lines: empty unquoted fields are NULL, quoted empty ones empty strings', () => {
    expect(splitCsvLine('a,"",,"b""c"', ',')).toEqual(['a', '', null, 'b"c']);
    expect(splitCsvLine('a,', ',')).toEqual(['a', null]);
  });
});
