// Protobuf fields to oxbow columns, and decoded field values (protobufjs) to oxbow values.
// int32/sint32/sfixed32 -> integer; uint32/fixed32, int64/sint64/sfixed64/uint64/fixed64 -> bigint
// (a uint64 beyond 2^63 - 1 is an error); float -> real; double -> double precision; bool ->
// boolean; string -> varchar; bytes -> bytea; enum -> varchar (the value's name);
// google.protobuf.Timestamp -> timestamptz; other messages, repeated and map fields -> jsonb.

import protobuf from 'protobufjs';
import { Jsonb, type JsonValue } from '../../../sql/json.js';
import { type, type DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { formatTypeName } from '../../catalog/type-names.js';
import { IncompatibleField, type SchemaColumn } from '../avro/avro-types.js';

export type ProtobufConverter = (value: unknown) => Value;

const TIMESTAMP = '.google.protobuf.Timestamp';

export function protobufColumnType(field: protobuf.Field): DataType {
  if (field.repeated || field.map) return type('jsonb');
  if (field.resolvedType instanceof protobuf.Enum) return type('varchar');
  if (field.resolvedType instanceof protobuf.Type) return field.resolvedType.fullName === TIMESTAMP ? type('timestamptz') : type('jsonb');
  switch (field.type) {
    case 'int32':
    case 'sint32':
    case 'sfixed32':
      return type('int4');
    case 'uint32':
    case 'fixed32':
    case 'int64':
    case 'sint64':
    case 'sfixed64':
    case 'uint64':
    case 'fixed64':
      return type('int8');
    case 'float':
      return type('float4');
    case 'double':
      return type('float8');
    case 'bool':
      return type('bool');
    case 'string':
      return type('varchar');
    case 'bytes':
      return type('bytea');
    default:
      throw new IncompatibleField(`Protobuf field "${field.name}" has an unknown type ${field.type}`);
  }
}

/** The columns of a message type: its fields in declaration order, all nullable. */
export function protobufColumns(message: protobuf.Type): SchemaColumn[] {
  return message.fieldsArray.map((field) => ({ name: field.name, type: protobufColumnType(field), nullable: true }));
}

function toBigInt(value: unknown): bigint {
  if (typeof value === 'number') return BigInt(value);
  const long = value as { low: number; high: number; unsigned: boolean };
  const unsigned = long.unsigned;
  const result = (BigInt(unsigned ? long.high >>> 0 : long.high) << 32n) | BigInt(long.low >>> 0);
  if (unsigned && result > 0x7fffffffffffffffn) throw new Error(`uint64 value ${result} is out of range for type bigint`);
  return result;
}

/** A converter from a decoded value of `field` to a value of the column type `target`; throws IncompatibleField when the column cannot hold it. */
export function protobufConverter(field: protobuf.Field, target: DataType): ProtobufConverter {
  const natural = protobufColumnType(field);
  if (target.name === 'jsonb' || target.name === 'json') {
    const owner = field.parent as protobuf.Type;
    return (value) => new Jsonb(toJson(owner, field, value));
  }
  const widening: Record<string, string[]> = { int8: ['int4'], float8: ['int4', 'int8', 'float4'], varchar: ['varchar'], text: ['varchar'] };
  if (natural.name !== target.name && !(widening[target.name] ?? []).includes(natural.name)) {
    throw new IncompatibleField(`cannot read Protobuf field "${field.name}" (${formatTypeName(natural)}) into ${formatTypeName(target)}`);
  }
  if (field.resolvedType instanceof protobuf.Enum) {
    const names = field.resolvedType.valuesById;
    return (value) => names[value as number] ?? String(value);
  }
  switch (target.name) {
    case 'int8':
      return (value) => toBigInt(value);
    case 'float8':
      return natural.name === 'int8' ? (value) => Number(toBigInt(value)) : (value) => value as number;
    case 'bytea':
      return (value) => new Uint8Array(value as Uint8Array);
    case 'timestamptz':
      return (value) => {
        const timestamp = value as { seconds: unknown; nanos: number };
        return Number(toBigInt(timestamp.seconds ?? 0)) * 1_000_000 + Math.trunc((timestamp.nanos ?? 0) / 1000);
      };
    default:
      return (value) => value as Value;
  }
}

/** A field's value as JSON (protobufjs's toObject: 64-bit integers and enums as strings, bytes base64). */
function toJson(owner: protobuf.Type, field: protobuf.Field, value: unknown): JsonValue {
  const object = owner.toObject(owner.create({ [field.name]: value }), { longs: String, enums: String, bytes: String, defaults: false, arrays: true, objects: true });
  return (object[field.name] ?? null) as JsonValue;
}
