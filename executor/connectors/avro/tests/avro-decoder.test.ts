// The Avro decoder through MessageDecoder and BatchPacker, without a broker or registry (messages
// written with the reader schema's own id need no registry): every mapped type with values at
// their edges (int64 beyond 2^53, negative decimals), FORMAT DEBEZIUM envelopes, UPSERT
// tombstones with a bare key, and bad messages (no magic byte, truncated, trailing bytes, an id
// the registry does not know).

import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import type { ColumnDef, RelationDef } from '../../../../sql/catalog.js';
import { Numeric } from '../../../../sql/numeric.js';
import { type, withTypmod } from '../../../../sql/types.js';
import type { Row } from '../../../../sql/value.js';
import { BatchPacker } from '../../kafka/batch-packer.js';
import { unpackRows } from '../../kafka/decoded-batch.js';
import { MessageDecoder } from '../../message-decoder.js';
import { sourceLayout } from '../../source-layout.js';
import type { RawMessageBatch } from '../../source.js';
import { avroColumns, avroType } from '../avro-types.js';

const READER_ID = 7;
const VALUE = {
  type: 'record',
  name: 'Row',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: ['null', 'string'], default: null },
    { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 20, scale: 3 } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'extra', type: { type: 'map', values: 'int' } },
  ],
};
const ENVELOPE = {
  type: 'record',
  name: 'Envelope',
  fields: [
    { name: 'before', type: ['null', VALUE], default: null },
    { name: 'after', type: ['null', 'Row'], default: null },
    { name: 'op', type: 'string' },
  ],
};

function framed(id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([header, payload]);
}

function decimal(unscaled: bigint): Buffer {
  const buffer = Buffer.alloc(9);
  buffer.writeBigInt64BE(unscaled, 1);
  buffer[0] = unscaled < 0n ? 0xff : 0;
  return buffer;
}

function relation(schema: object, format: string, primaryKey?: number): RelationDef {
  const columns: ColumnDef[] = avroColumns(format === 'debezium' ? VALUE : (schema as never)).map((column) => ({ name: column.name, type: column.type, nullable: column.nullable, hidden: false }));
  const hidden = primaryKey === undefined;
  return {
    id: 1,
    kind: 'source',
    schema: 'public',
    name: 'src',
    columns: hidden ? [...columns, { name: '_row_id', type: type('int8'), nullable: false, hidden: true }] : columns,
    primaryKey: hidden ? [columns.length] : [primaryKey],
    dependsOn: [],
    options: { connector: 'kafka', topic: 't', 'encode.schema.registry': 'http://127.0.0.1:1', 'encode.avro.reader.schema': JSON.stringify(schema), 'encode.avro.reader.id': String(READER_ID) },
    format,
    encode: 'avro',
    include: [],
  } as RelationDef;
}

function batch(values: (Buffer | null)[], keys: (Buffer | null)[] = values.map(() => null)): RawMessageBatch {
  return { partition: 0, offsets: values.map((_, i) => BigInt(i)), values, keys, timestamps: values.map(() => 0), highWatermark: BigInt(values.length) };
}

function decode(def: RelationDef, raw: RawMessageBatch): { rows: Row[]; kinds: number[]; errors: string[] } {
  const decoder = new MessageDecoder(sourceLayout(def), 1 << 20, () => 0n);
  const out = { rows: [] as Row[], kinds: [] as number[] };
  const errors: string[] = [];
  decoder.decode(raw, out, (_partition, offset, error) => errors.push(`${offset}: ${error}`));
  return { ...out, errors };
}

const valueType = avroType(VALUE);
const row = (id: bigint, name: string | null, unscaled: bigint): Buffer =>
  framed(READER_ID, valueType.toBuffer({ id, name, amount: decimal(unscaled), at: 1_700_000_000_123_456n, extra: { a: 1 } }));

describe('ENCODE AVRO decoding', () => {
  it('maps every type exactly, int64 beyond 2^53 and negative decimals included', () => {
    const def = relation(VALUE, 'plain');
    expect(def.columns.map((column) => `${column.name} ${column.type.name}`)).toEqual(['id int8', 'name varchar', 'amount numeric', 'at timestamptz', 'extra jsonb', '_row_id int8']);
    expect(def.columns[2]!.type).toEqual(withTypmod(type('numeric'), ((20 << 16) | 3) + 4));
    const { rows, kinds, errors } = decode(def, batch([row(9_223_372_036_854_775_807n, 'a', -12_345n), row(-1n, null, 5n)]));
    expect(errors).toEqual([]);
    expect(kinds).toEqual([1, 1]);
    expect(rows[0]!.slice(0, 4)).toEqual([9_223_372_036_854_775_807n, 'a', new Numeric(-12_345n, 3), 1_700_000_000_123_456]);
    expect(String(rows[0]![4])).toBe('{"a": 1}');
    expect(rows[1]!.slice(0, 3)).toEqual([-1n, null, new Numeric(5n, 3)]);
  });

  it('packs the same rows as MessageDecoder (the worker path)', () => {
    const def = relation(VALUE, 'plain');
    const layout = sourceLayout(def);
    const raw = batch([row(1n, 'x', 1n), Buffer.from('nope'), row(2n, null, -2n)]);
    const packer = new BatchPacker(layout, new MessageDecoder(layout, 1 << 20, () => 0n), 1 << 20, () => 0n);
    const rejected: bigint[] = [];
    const packed = packer.pack(raw, 0, (_partition, offset) => rejected.push(offset));
    expect(rejected).toEqual([1n]);
    expect(packed.count).toBe(2);
    expect(unpackRows(packed)).toEqual(decode(def, raw).rows);
  });

  it('reads Debezium envelopes: c inserts after, u replaces, d deletes before', () => {
    const def = relation(ENVELOPE, 'debezium', 0);
    const envelopeType = avroType(ENVELOPE);
    const image = (id: bigint, name: string): object => ({ id, name, amount: decimal(100n), at: 0n, extra: {} });
    const message = (before: object | null, after: object | null, op: string): Buffer => framed(READER_ID, envelopeType.toBuffer({ before, after, op }));
    const { rows, kinds, errors } = decode(def, batch([message(null, image(1n, 'a'), 'c'), message(image(1n, 'a'), image(1n, 'b'), 'u'), message(image(1n, 'b'), null, 'd'), message(null, null, 'x')]));
    expect(kinds).toEqual([1, 1, -1]);
    expect(rows.map((decoded) => decoded.slice(0, 2))).toEqual([[1n, 'a'], [1n, 'b'], [1n, 'b']]);
    expect(errors).toEqual(['3: unknown Debezium op "x"']);
  });

  it('deletes by a bare key on an UPSERT tombstone', () => {
    const def = relation(VALUE, 'upsert', 0);
    const { rows, kinds, errors } = decode(def, batch([row(5n, 'x', 1n), null], [Buffer.from('5'), Buffer.from('5')]));
    expect(errors).toEqual([]);
    expect(kinds).toEqual([1, -1]);
    expect(rows[1]![0]).toBe(5n);
  });

  it('rejects unframed, truncated, over-long and unknown-id messages one by one', () => {
    const def = relation(VALUE, 'plain');
    const decoder = new MessageDecoder(sourceLayout(def), 1 << 20, () => 0n);
    decoder.schemaDecoder!.registry!.markUnknown(99);
    const good = row(1n, 'x', 1n);
    const out = { rows: [] as Row[], kinds: [] as number[] };
    const errors: string[] = [];
    decoder.decode(batch([Buffer.from([1, 0, 0, 0, 7, 2]), good.subarray(0, good.length - 3), Buffer.concat([good, Buffer.from([0])]), framed(99, Buffer.from([2])), Buffer.from([0, 0]), good]), out, (_partition, offset, error) =>
      errors.push(`${offset}: ${error}`),
    );
    expect(errors).toEqual([
      "0: message does not start with the schema registry's magic byte 0 (found 1)",
      `1: truncated Avro record (schema id 7, ${good.length - 3} bytes)`,
      `2: Avro record of schema id 7 ends at byte ${good.length} of ${good.length + 1}`,
      '3: unknown schema id 99: the schema registry has no such schema',
      "4: message of 2 bytes is shorter than the schema registry's 5-byte header",
    ]);
    expect(out.rows.length).toBe(1);
  });

  it('resolves an older writer against the reader schema (a field added with a default)', () => {
    const reader = avroType({ ...VALUE, fields: [...VALUE.fields, { name: 'score', type: 'int', default: 42 }] });
    const writer = avro.Type.forSchema({ type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: ['null', 'string'], default: null }, VALUE.fields[2]!, VALUE.fields[3]!, VALUE.fields[4]!] } as avro.Schema);
    const resolver = reader.createResolver(writer);
    const bytes = avroType(VALUE).toBuffer({ id: 3n, name: 'w', amount: decimal(0n), at: 0n, extra: {} });
    const decoded = reader.decode(bytes, 0, resolver).value as Record<string, unknown>;
    expect(decoded['score']).toBe(42);
    expect(decoded['id']).toBe(3n);
  });
});
