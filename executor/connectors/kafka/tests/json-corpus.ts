// Messages for the JSON fast path's differential tests (json-row-packer.test.ts without a broker,
// test/kafka/fast-json.test.ts through one), for a source of EVERY_TYPE_COLUMNS (plus the four
// INCLUDE columns): valid messages of every type (most taken by the fast path), invalid JSON,
// wrong types, values out of range, missing, null and duplicate fields, escaped keys, an
// oversized message (over CORPUS_MAX_BYTES), timestamps of every shape, invalid and valid UTF-8.
// Also the source definition these tests and the packer's and worker's tests decode into
// (`jsonSource`, `column`).

import type { ColumnDef, RelationDef } from '../../../../sql/catalog.js';
import { arrayOf, type } from '../../../../sql/types.js';
import type { RawMessageBatch } from '../../source.js';

export const CORPUS_MAX_BYTES = 600;

/** Messages a test produced to one partition, as the consumer would hand them to the decoder (offsets 0.. in order): the oracle's input. */
export function producedBatch(partition: number, sent: readonly { readonly value: string | Buffer; readonly key: string | null; readonly timestamp: number }[]): RawMessageBatch {
  return {
    partition,
    offsets: sent.map((_, k) => BigInt(k)),
    timestamps: sent.map((m) => m.timestamp),
    keys: sent.map((m) => (m.key === null ? null : Buffer.from(m.key))),
    values: sent.map((m) => (typeof m.value === 'string' ? Buffer.from(m.value) : m.value)),
    highWatermark: BigInt(sent.length),
  };
}

/** A visible column, nullable unless said. */
export const column = (name: string, t: ColumnDef['type'], nullable = true): ColumnDef => ({ name, type: t, nullable, hidden: false });

/**
 * A Kafka source FORMAT PLAIN ENCODE JSON of `columns` and the hidden `_row_id` after them (its
 * key), no INCLUDE columns, topic `t`; `extra` overrides any field (id, name, options, include...).
 */
export function jsonSource(columns: readonly ColumnDef[], extra: Partial<RelationDef> = {}): RelationDef {
  return {
    id: 20002,
    kind: 'source',
    schema: 'public',
    name: 'src',
    columns: [...columns, { name: '_row_id', type: type('int8'), nullable: false, hidden: true }],
    primaryKey: [columns.length],
    dependsOn: [],
    options: { connector: 'kafka', topic: 't', 'properties.bootstrap.server': '127.0.0.1:9092' },
    format: 'plain',
    encode: 'json',
    include: [],
    ...extra,
  };
}

/** Every type the JSON decoder converts, a NOT NULL column (`req`), INCLUDE columns `_p` `_o` `_ts` `_k`, odd names. */
export const EVERY_TYPE_COLUMNS: ColumnDef[] = [
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
  column('ts', type('timestamp')),
  column('tz', type('timestamptz')),
  column('iv', type('interval')),
  column('j', type('jsonb')),
  column('by', type('bytea')),
  column('a', arrayOf(type('int4'))),
  column('req', type('int4'), false),
  column('_p', type('int4')),
  column('_o', type('int8')),
  column('_ts', type('timestamptz')),
  column('_k', type('bytea')),
  column('ünï', type('text')),
  column('', type('int4')),
];

export const INCLUDE_COLUMNS = [
  { what: 'partition', column: '_p' },
  { what: 'offset', column: '_o' },
  { what: 'timestamp', column: '_ts' },
  { what: 'key', column: '_k' },
] as const;

export const VALID_EVERY_TYPE = [
  '{"i2":-32768,"i4":2147483647,"i8":-9007199254740991,"f4":1.1,"f8":-0.5e-300,"n":12.50,"b":true,"t":"plain","v":"ünïcödé ✓ 𝄞","d":"2026-11-30","ts":"2015-07-15 00:00:00.001","tz":"2026-01-01 12:00:00+02","iv":"1 day","j":{"a":[1,2.50,null,true],"b c":{"d":"e"}},"by":"\\\\xdeadbeef","a":"{1,NULL,3}","req":0,"ünï":"x","":5}',
  '{"i2":32767,"i4":-2147483648,"i8":9007199254740991,"f4":-0,"f8":0,"n":"0.1","b":false,"t":"","v":"x","ts":"1969-12-31 23:59:59.999999","req":-1}',
  ' \t\r\n{ "req" : 7 , "t" : "a b" } \n',
  '{"req":1,"extra":{"deep":[[[{"x":"\\u00e9\\n"}]]],"n":-1.5e+10,"t":true,"f":false,"z":null},"more":[]}',
  '{"req":1,"ts":"2024-02-29T12:00:00","t":"tab\\tand \\"quotes\\" and \\u2603 and \\ud83d\\ude00"}',
  '{"req":1,"t":123,"v":1.50,"i8":"42","i4":"17","f8":"1e3","b":"yes","i2":1.0,"f4":1e2}',
  '{"req":1,"i4":1e2,"i8":5.0,"f8":1E400,"t":-0,"v":true,"n":1e-7}',
  '{"req":2,"t":null,"i4":null,"ts":null,"j":null}',
  '{"req":3,"j":[1,"two",{"three":3}],"by":"\\\\x00ff"}',
  '{"req":4,"ts":"2023-02-28 23:59:59.5","d":"2000-02-29"}',
  '{}',
  '{"req":5,"t":"\\u0000"}',
  '{"req":6,"x":1,"x":2}',
];

export const INVALID_OR_REJECTED = [
  // Invalid JSON.
  '',
  '{',
  '{"req":1,}',
  '{"req":1}x',
  '{"req":1}{"req":2}',
  '[{"req":1}]',
  '"string"',
  'null',
  '\ufeff{"req":1}',
  '{"req":01}',
  '{"req":1.}',
  '{"req":.5}',
  '{"req":-}',
  '{"req":+1}',
  '{"req":1e}',
  '{"req":1,"x":tru}',
  '{"req":1,"x":nul}',
  '{"req":1,"x":"\\x"}',
  '{"req":1,"x":"\\u12g4"}',
  '{"req":1,"x":"a\tb"}',
  '{req:1}',
  "{'req':1}",
  '{"req":1 "t":"a"}',
  '{"req":1,"x":[1,2,]}',
  '{"req":1,"x":{"a" 1}}',
  '{"req":1,"x":[}',
  '{"req":1,"t":"unterminated}',
  // Wrong types and out of range values (the converters refuse them).
  '{"req":1,"i2":32768}',
  '{"req":1,"i2":-32769}',
  '{"req":1,"i4":2147483648}',
  '{"req":1,"i4":1.5}',
  '{"req":1,"i4":true}',
  '{"req":1,"i4":"abc"}',
  '{"req":1,"i4":[1]}',
  '{"req":1,"i8":9007199254740992}',
  '{"req":1,"i8":-9007199254740993}',
  '{"req":1,"i8":12345678901234567890}',
  '{"req":1,"t":{"a":1}}',
  '{"req":1,"t":[1]}',
  '{"req":1,"b":1}',
  '{"req":1,"f8":"abc"}',
  '{"req":1,"ts":"2023-02-29 00:00:00"}',
  '{"req":1,"ts":"2023-13-01 00:00:00"}',
  '{"req":1,"ts":"not a time"}',
  '{"req":1,"ts":12}',
  '{"req":1,"d":"2023-02-30"}',
  // Missing or null required fields.
  '{"t":"no req"}',
  '{"req":null}',
  // Duplicates (JSON.parse keeps the last).
  '{"req":1,"t":"first","t":"second"}',
  '{"req":1,"req":2}',
  // Escaped keys.
  '{"r\\u0065q":9}',
  '{"req":1,"\\u0074":"escaped t"}',
  // Oversized (CORPUS_MAX_BYTES).
  `{"req":1,"t":"${'y'.repeat(CORPUS_MAX_BYTES)}"}`,
];

export const TIMESTAMPS = [
  '2026-11-30 07:36:32',
  '2026-11-30T07:36:32',
  '2026-11-30 07:36:32.1',
  '2026-11-30 07:36:32.123456',
  '2026-11-30 07:36:32.1234567',
  '2026-11-30 07:36:32.',
  '2026-11-30 07:36:32Z',
  '2026-11-30 07:36:32+05:30',
  '2026-11-30 24:00:00',
  '2026-11-30 23:60:00',
  '2026-11-30 23:59:60',
  '0000-01-01 00:00:00',
  '0001-01-01 00:00:00',
  '9999-12-31 23:59:59.999999',
  '1900-02-29 00:00:00',
  '2000-02-29 00:00:00',
  '1970-01-01 00:00:00',
  '1969-12-31 23:59:59.999999',
  '2026-1-30 07:36:32',
  '2026-11-30  07:36:32',
  ' 2026-11-30 07:36:32',
  '2026-11-30 07:36:32 ',
  'epoch',
  'infinity',
  '2026-11-30',
  '2026-11-30 07:36',
  '２０２６-11-30 07:36:32',
  '2026-11-30T07:36:32.5Z',
  '2026-11-30 07:36:32+0530',
  '2026-11-30 07:36:32-08',
  '2026-11-30 07:36:32.000001-08:00',
  '2026-11-30 07:36:32+05:',
  '2026-11-30 07:36:32+5',
  '2026-11-30 07:36:32+053',
  '2026-11-30 07:36:32z',
  '2026-11-30 07:36:32+05:30:00',
  '2026-11-30 07:36:32 +05:30',
  '2026-11-30 07:36:32+99:99',
  '2026-11-30 07:36:32 UTC',
  '2026-11-30 07:36:32.1234567Z',
];

/** Messages with invalid and valid UTF-8 in declared strings, an undeclared string and a key. */
export function utf8Messages(): Buffer[] {
  const messages: Buffer[] = [];
  const sequences = [[0xc3, 0xa9], [0xe2, 0x98, 0x83], [0xf0, 0x9f, 0x98, 0x80], [0xff], [0xc3], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xe2, 0x98]];
  for (const sequence of sequences) {
    for (const field of ['t', 'undeclared', 'ts', 'ünï']) {
      messages.push(Buffer.concat([Buffer.from(`{"req":1,"${field}":"a`), Buffer.from(sequence), Buffer.from('b"}')]));
    }
    messages.push(Buffer.concat([Buffer.from('{"req":1,"'), Buffer.from(sequence), Buffer.from('":"key bytes"}')]));
  }
  return messages;
}

/** The whole corpus in one list. */
export function corpus(): (string | Buffer)[] {
  return [...VALID_EVERY_TYPE, ...INVALID_OR_REJECTED, ...TIMESTAMPS.map((text) => JSON.stringify({ req: 1, ts: text, tz: text })), ...utf8Messages()];
}
