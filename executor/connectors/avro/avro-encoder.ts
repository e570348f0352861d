// Rows to Avro in the Confluent wire format, for Kafka sinks with FORMAT PLAIN ENCODE AVRO: the
// relation's visible columns become a record schema (every field a union of null and its type,
// default null), registered under `<topic>-value` before the first delivery (the registry returns
// the same id for the same schema, so a restart registers nothing new), and each row is written
// as magic byte 0, the id, then avsc's encoding. The type's encoder is built once.
//
// Column types: boolean -> boolean; smallint/integer -> int; bigint -> long; real -> float;
// double precision -> double; numeric(p, s) -> decimal bytes (unconstrained numeric -> string);
// text/varchar -> string; bytea -> bytes; date -> int date; timestamp -> long
// local-timestamp-micros; timestamptz -> long timestamp-micros; uuid -> string uuid; anything else
// (jsonb, interval, arrays, time) -> string in PostgreSQL's text form.

import avro from 'avsc';
import type { DataType } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import type { Numeric } from '../../../sql/numeric.js';
import { formatValue } from '../../../sql/text-format.js';
import { avroType } from './avro-types.js';
import { confluentHeader, SchemaRegistry, type RegistryOptions } from '../schema-registry.js';

type FieldEncoder = (value: Value) => unknown;

function avroName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}

function fieldOf(columnType: DataType): { schema: unknown; encode: FieldEncoder } {
  switch (columnType.name) {
    case 'bool':
      return { schema: 'boolean', encode: (value) => value };
    case 'int2':
    case 'int4':
      return { schema: 'int', encode: (value) => value };
    case 'int8':
      return { schema: 'long', encode: (value) => value };
    case 'float4':
      return { schema: 'float', encode: (value) => value };
    case 'float8':
      return { schema: 'double', encode: (value) => value };
    case 'numeric': {
      if (columnType.typmod >= 4) {
        const precision = (columnType.typmod - 4) >> 16;
        const scale = (columnType.typmod - 4) & 0xffff;
        return { schema: { type: 'bytes', logicalType: 'decimal', precision, scale }, encode: (value) => decimalBytes(value as Numeric, scale) };
      }
      return { schema: 'string', encode: (value) => formatValue(value, columnType) };
    }
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
      return { schema: 'string', encode: (value) => value };
    case 'bytea':
      return { schema: 'bytes', encode: (value) => Buffer.from(value as Uint8Array) };
    case 'date':
      return { schema: { type: 'int', logicalType: 'date' }, encode: (value) => value };
    case 'timestamp':
      return { schema: { type: 'long', logicalType: 'local-timestamp-micros' }, encode: (value) => BigInt(value as number) };
    case 'timestamptz':
      return { schema: { type: 'long', logicalType: 'timestamp-micros' }, encode: (value) => BigInt(value as number) };
    case 'uuid':
      return { schema: { type: 'string', logicalType: 'uuid' }, encode: (value) => value };
    default:
      return { schema: 'string', encode: (value) => formatValue(value, columnType) };
  }
}

/** A Numeric at `scale` as an Avro decimal's two's-complement big-endian bytes. */
function decimalBytes(value: Numeric, scale: number): Buffer {
  const numeric = value as unknown as { unscaled: bigint; scale: number };
  let unscaled = numeric.unscaled;
  if (numeric.scale < scale) unscaled *= 10n ** BigInt(scale - numeric.scale);
  else if (numeric.scale > scale) unscaled /= 10n ** BigInt(numeric.scale - scale);
  let hex = (unscaled < 0n ? -unscaled : unscaled).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let bytes = Buffer.from(`00${hex}`, 'hex');
  if (unscaled < 0n) {
    // Two's complement of the magnitude, one sign byte wide enough.
    const width = BigInt(bytes.length * 8);
    hex = ((1n << width) + unscaled).toString(16).padStart(bytes.length * 2, '0');
    bytes = Buffer.from(hex, 'hex');
  }
  return bytes;
}

export class AvroRowEncoder {
  /** The registered record schema (JSON). */
  readonly schema: { type: 'record'; name: string; namespace: string; fields: { name: string; type: unknown; default: null }[] };
  private readonly type: avro.Type;
  private readonly names: string[];
  /** Each field's union branch name (values are written as `{branch: value}`: avsc cannot tell a bigint's branch itself). */
  private readonly branches: string[];
  private readonly encoders: FieldEncoder[];
  private readonly registry: SchemaRegistry;
  private header: Buffer | undefined;

  constructor(
    relationName: string,
    columns: readonly { readonly name: string; readonly type: DataType }[],
    /** The row positions written (the visible columns), in order. */
    private readonly positions: readonly number[],
    registry: RegistryOptions,
    private readonly subject: string,
  ) {
    const fields = positions.map((position) => ({ name: avroName(columns[position]!.name), ...fieldOf(columns[position]!.type) }));
    this.names = fields.map((field) => field.name);
    this.branches = fields.map((field) => (typeof field.schema === 'string' ? field.schema : (field.schema as { type: string }).type));
    this.encoders = fields.map((field) => field.encode);
    this.schema = { type: 'record', name: avroName(relationName), namespace: 'oxbow', fields: fields.map((field) => ({ name: field.name, type: ['null', field.schema], default: null })) };
    this.type = avroType(this.schema, true);
    this.registry = new SchemaRegistry(registry);
  }

  /** Registers the schema under the subject once (before the first message). */
  async register(): Promise<void> {
    if (this.header !== undefined) return;
    const id = await this.registry.register(this.subject, JSON.stringify(this.schema));
    this.header = confluentHeader(id);
  }

  encode(row: Row): Buffer {
    if (this.header === undefined) throw new Error('the Avro schema is not registered yet');
    const record: Record<string, unknown> = {};
    for (let i = 0; i < this.positions.length; i++) {
      const value = row[this.positions[i]!] ?? null;
      record[this.names[i]!] = value === null ? null : { [this.branches[i]!]: this.encoders[i]!(value) };
    }
    return Buffer.concat([this.header, this.type.toBuffer(record)]);
  }
}
