// Avro schemas to oxbow columns and Avro values (as avsc decodes them, logical types left to their
// underlying type) to oxbow values (sql/value.ts). Used by the Avro decoder (avro-decoder.ts), by
// CREATE SOURCE (columns from the registry's schema, and the check of declared columns against
// it) and, the other way, by the Avro sink (avro-encoder.ts).
//
// Mapping: boolean -> boolean; int -> integer (date -> date, time-millis -> time); long -> bigint
// (timestamp-millis/micros -> timestamptz, local-timestamp-millis/micros -> timestamp,
// time-micros -> time); float -> real; double -> double precision; string -> varchar (uuid ->
// uuid); bytes/fixed -> bytea (decimal -> numeric(p, s)); enum -> varchar (the symbol); a union
// of null and one type -> that type, nullable; records, arrays, maps and other unions -> jsonb
// (bytes inside as "\x..." hex text).

import avro from 'avsc';
import { Numeric } from '../../../sql/numeric.js';
import { Jsonb, type JsonValue } from '../../../sql/json.js';
import { formatTypeName } from '../../catalog/type-names.js';
import { type, withTypmod, type DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';

/** Avro longs as bigint both ways (avsc's default refuses values beyond 2^53). */
const BIGINT_LONG = avro.types.LongType.__with({
  fromBuffer: (buffer: Buffer) => buffer.readBigInt64LE(0),
  toBuffer: (value: bigint) => {
    const buffer = Buffer.allocUnsafe(8);
    buffer.writeBigInt64LE(value, 0);
    return buffer;
  },
  fromJSON: (value: unknown) => BigInt(value as number),
  toJSON: (value: bigint) => Number(value),
  isValid: (value: unknown) => typeof value === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** The avsc type of `schema`: longs as bigint, unions of null and one type unwrapped unless `wrapUnions` (`{branch: value}`). */
export function avroType(schema: unknown, wrapUnions = false): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, { wrapUnions: wrapUnions ? true : 'auto', registry: { long: BIGINT_LONG }, typeHook: bigintLongs });
}

/** Every long, logical or not, as BIGINT_LONG (the registry alone covers only the bare name "long"). */
function bigintLongs(schema: avro.Schema): avro.Type | undefined {
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) && (schema as { type?: unknown }).type === 'long' ? BIGINT_LONG : undefined;
}

/** An Avro schema as JSON (a name, an object with "type", or a union array). */
export type AvroSchema = string | { readonly type: unknown; readonly [key: string]: unknown } | readonly unknown[];

export interface AvroField {
  readonly name: string;
  readonly type: AvroSchema;
}

export interface SchemaColumn {
  readonly name: string;
  readonly type: DataType;
  readonly nullable: boolean;
}

/** Thrown when a declared column cannot hold an Avro field (CREATE answers 42804). */
export class IncompatibleField extends Error {}

/** The fields of a record schema; throws when `schema` is not a record. */
export function recordFields(schema: AvroSchema, what = 'the schema'): readonly AvroField[] {
  const fields = typeof schema === 'object' && !Array.isArray(schema) && (schema as { type: unknown }).type === 'record' ? (schema as { fields?: unknown }).fields : undefined;
  if (!Array.isArray(fields)) throw new IncompatibleField(`${what} is not an Avro record`);
  return fields as AvroField[];
}

/** The non-null branch of a ["null", T] union, and whether null was a branch. */
export function unwrapNullable(schema: AvroSchema): { schema: AvroSchema; nullable: boolean } {
  if (!Array.isArray(schema)) return { schema, nullable: schema === 'null' };
  const branches = (schema as unknown[]).filter((branch) => branch !== 'null');
  if (branches.length === 1) return { schema: branches[0] as AvroSchema, nullable: branches.length < schema.length };
  return { schema, nullable: branches.length < schema.length };
}

/** Named types of `root` by full and short name, to follow references such as "com.acme.Status". */
export function namedTypes(root: AvroSchema): Map<string, AvroSchema> {
  const names = new Map<string, AvroSchema>();
  const visit = (schema: unknown, namespace: string | undefined): void => {
    if (Array.isArray(schema)) {
      for (const branch of schema) visit(branch, namespace);
      return;
    }
    if (schema === null || typeof schema !== 'object') return;
    const object = schema as Record<string, unknown>;
    const kind = object['type'];
    if (typeof object['name'] === 'string' && (kind === 'record' || kind === 'enum' || kind === 'fixed' || kind === 'error')) {
      const name = object['name'] as string;
      const ns = name.includes('.') ? undefined : ((object['namespace'] as string | undefined) ?? namespace);
      names.set(name, schema as AvroSchema);
      if (ns !== undefined && ns !== '') names.set(`${ns}.${name}`, schema as AvroSchema);
      const short = name.split('.').pop()!;
      names.set(short, schema as AvroSchema);
      const inner = name.includes('.') ? name.slice(0, name.lastIndexOf('.')) : ns;
      for (const field of (object['fields'] as { type: unknown }[] | undefined) ?? []) visit(field.type, inner);
      return;
    }
    if (kind === 'array') visit(object['items'], namespace);
    else if (kind === 'map') visit(object['values'], namespace);
    else if (typeof kind === 'object') visit(kind, namespace);
  };
  visit(root, undefined);
  return names;
}

interface Shape {
  /** The Avro primitive or complex kind: int, long, ..., record, enum, array, map, fixed, union. */
  readonly kind: string;
  readonly logical: string | undefined;
  readonly schema: AvroSchema;
}

function shapeOf(schema: AvroSchema, names: Map<string, AvroSchema>): Shape {
  if (typeof schema === 'string') {
    const named = names.get(schema);
    if (named !== undefined) return shapeOf(named, names);
    return { kind: schema, logical: undefined, schema };
  }
  if (Array.isArray(schema)) return { kind: 'union', logical: undefined, schema };
  const object = schema as Record<string, unknown>;
  const kind = object['type'];
  if (typeof kind === 'string' && !['record', 'error', 'enum', 'array', 'map', 'fixed'].includes(kind)) {
    return { kind: names.has(kind) ? shapeOf(kind, names).kind : kind, logical: object['logicalType'] as string | undefined, schema };
  }
  if (typeof kind === 'object' && kind !== null) return shapeOf(kind as AvroSchema, names);
  return { kind: kind === 'error' ? 'record' : String(kind), logical: object['logicalType'] as string | undefined, schema };
}

/** The column type an Avro (non-null) type maps to. */
export function avroColumnType(schema: AvroSchema, names: Map<string, AvroSchema>): DataType {
  const shape = shapeOf(schema, names);
  switch (shape.kind) {
    case 'boolean':
      return type('bool');
    case 'int':
      if (shape.logical === 'date') return type('date');
      if (shape.logical === 'time-millis') return type('time');
      return type('int4');
    case 'long':
      if (shape.logical === 'timestamp-millis' || shape.logical === 'timestamp-micros') return type('timestamptz');
      if (shape.logical === 'local-timestamp-millis' || shape.logical === 'local-timestamp-micros') return type('timestamp');
      if (shape.logical === 'time-micros') return type('time');
      return type('int8');
    case 'float':
      return type('float4');
    case 'double':
      return type('float8');
    case 'string':
      return shape.logical === 'uuid' ? type('uuid') : type('varchar');
    case 'enum':
      return type('varchar');
    case 'bytes':
    case 'fixed': {
      if (shape.logical === 'decimal') {
        const object = shape.schema as Record<string, unknown>;
        const precision = Number(object['precision']);
        const scale = Number(object['scale'] ?? 0);
        if (Number.isInteger(precision) && precision >= 1 && precision <= 1000 && scale >= 0 && scale <= precision) return withTypmod(type('numeric'), ((precision << 16) | scale) + 4);
        return type('numeric');
      }
      return type('bytea');
    }
    case 'null':
      throw new IncompatibleField('an Avro field of type null has no column type');
    default:
      return type('jsonb');
  }
}

/** The columns of a record schema (its fields in order). */
export function avroColumns(record: AvroSchema, names: Map<string, AvroSchema> = namedTypes(record)): SchemaColumn[] {
  return recordFields(shapeOf(record, names).schema).map((field) => {
    const { schema, nullable } = unwrapNullable(field.type);
    let columnType: DataType;
    try {
      columnType = avroColumnType(schema, names);
    } catch (error) {
      throw new IncompatibleField(`Avro field "${field.name}": ${error instanceof Error ? error.message : String(error)}`);
    }
    return { name: field.name, type: columnType, nullable };
  });
}

export type AvroConverter = (value: unknown) => Value;

const MICROS_PER_MILLI = 1000;

/**
 * A converter from an Avro value of `schema` (as avsc decodes it without logical types) to a
 * value of the column type `target`; throws IncompatibleField when the column cannot hold it.
 */
export function avroConverter(fieldSchema: AvroSchema, target: DataType, names: Map<string, AvroSchema>): AvroConverter {
  const { schema } = unwrapNullable(fieldSchema);
  const shape = shapeOf(schema, names);
  const natural = shape.kind === 'null' ? undefined : avroColumnType(schema, names);
  const name = target.name;
  if (name === 'jsonb' || name === 'json') return (value) => (value === null ? null : new Jsonb(toJson(value)));
  if (natural !== undefined && natural.name === name) {
    switch (name) {
      case 'int8':
        return identity;
      case 'bytea':
        return (value) => (value === null ? null : new Uint8Array(value as Buffer));
      case 'numeric': {
        const scale = Number((shape.schema as Record<string, unknown>)['scale'] ?? 0);
        return (value) => (value === null ? null : decimalFromBytes(value as Buffer, scale));
      }
      case 'timestamptz':
      case 'timestamp':
        return shape.logical!.endsWith('millis') ? (value) => (value === null ? null : Number(value as bigint) * MICROS_PER_MILLI) : (value) => (value === null ? null : Number(value as bigint));
      case 'time':
        return shape.logical === 'time-millis' ? (value) => (value === null ? null : (value as number) * MICROS_PER_MILLI) : (value) => (value === null ? null : Number(value as bigint));
      default:
        return identity;
    }
  }
  const from = natural === undefined ? 'null' : formatTypeName(natural);
  const widening: Record<string, string[]> = {
    int4: ['int2'],
    int8: ['int2', 'int4'],
    float8: ['int2', 'int4', 'int8', 'float4'],
    float4: ['int2', 'int4', 'int8'],
    numeric: ['int2', 'int4', 'int8'],
    varchar: ['int2', 'int4', 'int8', 'float4', 'float8', 'bool', 'uuid', 'varchar', 'text'],
    text: ['int2', 'int4', 'int8', 'float4', 'float8', 'bool', 'uuid', 'varchar', 'text'],
  };
  if (natural !== undefined && (widening[name] ?? []).includes(natural.name)) {
    if (name === 'int8') return (value) => (value === null ? null : BigInt(value as number));
    if (name === 'numeric') return (value) => (value === null ? null : typeof value === 'bigint' ? Numeric.fromBigInt(value) : Numeric.fromInteger(value as number));
    if (name === 'varchar' || name === 'text') return (value) => (value === null ? null : String(value));
    return (value) => (typeof value === 'bigint' ? Number(value) : (value as Value));
  }
  throw new IncompatibleField(`cannot read Avro type ${from} into ${formatTypeName(target)}`);
}

function identity(value: unknown): Value {
  return value as Value;
}

/** An Avro decimal's big-endian two's-complement unscaled bytes at `scale`. */
function decimalFromBytes(bytes: Buffer, scale: number): Numeric {
  if (bytes.length === 0) return new Numeric(0n, scale);
  let unscaled = BigInt(`0x${bytes.toString('hex')}`);
  if (bytes[0]! & 0x80) unscaled -= 1n << BigInt(bytes.length * 8);
  return new Numeric(unscaled, scale);
}

/** An avsc value to JSON (records as objects, wrapped unions as {branch: value}, bytes as "\x..."). */
export function toJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : Numeric.fromBigInt(value);
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(value)) out[key] = toJson((value as Record<string, unknown>)[key]);
    return out;
  }
  return String(value);
}
