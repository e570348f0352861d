// Binary wire formats of values, as PostgreSQL's typsend/typrecv functions define them: big-endian
// integers and IEEE floats, dates as days and timestamps as microseconds since 2000-01-01, numeric
// as base-10000 digit groups, jsonb as a version byte plus text, one-dimensional arrays with a
// header. Text formats are not here: they come from sql/functions.ts (formatValue/parseValue).
//
// `writeBinary` appends `int32 length | bytes` to a message; `readBinary` decodes one Bind
// parameter and throws 22P03 with PostgreSQL's wording for malformed input.

import { SqlError, SqlState } from '../sql/errors.js';
import * as functions from '../sql/functions.js';
import type { EvalContext } from '../sql/functions.js';
import { Numeric } from '../sql/numeric.js';
import { TYPES, typeOid, type DataType } from '../sql/types.js';
import type { Interval, SqlArray, Value } from '../sql/value.js';
import type { MessageWriter } from './message-writer.js';
import { asBytes } from './node-buffer.js';
import { uuidBytes, uuidFromBytes } from '../sql/uuid.js';

/** Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch for dates and timestamps). */
const POSTGRES_EPOCH_DAYS = 10_957;
const POSTGRES_EPOCH_MICROS = POSTGRES_EPOCH_DAYS * 86_400_000_000;
const INT64_MAX = 0x7fffffffffffffffn;
const INT64_MIN = -0x8000000000000000n;
const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;

const NUMERIC_POSITIVE = 0x0000;
const NUMERIC_NEGATIVE = 0x4000;
const NUMERIC_NAN = 0xc000;
const NUMERIC_PLUS_INFINITY = 0xd000;
const NUMERIC_MINUS_INFINITY = 0xf000;

/** Whether oxbow has a binary format for this type (else Bind/results in binary get 0A000). */
export function hasBinaryFormat(type: DataType): boolean {
  if (type.name === 'array') return type.element !== undefined && type.element.name !== 'array' && hasBinaryFormat(type.element);
  return type.name !== 'record' && type.name !== 'void';
}

/** Appends `int32 length | binary value` for a non-null value. */
export function writeBinary(writer: MessageWriter, value: Value, type: DataType, context: EvalContext): void {
  switch (type.name) {
    case 'bool':
      writer.int32(1).int8(value ? 1 : 0);
      return;
    case 'int2':
      writer.int32(2).int16(value as number);
      return;
    case 'int4':
      writer.int32(4).int32(value as number);
      return;
    case 'oid':
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure': {
      const at = writer.int32(4).reserve(4);
      writer.raw.writeUInt32BE((value as number) >>> 0, at);
      return;
    }
    case 'int8':
      writeInt64(writer, value as bigint);
      return;
    case 'float4': {
      const at = writer.int32(4).reserve(4);
      writer.raw.writeFloatBE(value as number, at);
      return;
    }
    case 'float8': {
      const at = writer.int32(8).reserve(8);
      writer.raw.writeDoubleBE(value as number, at);
      return;
    }
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
    case 'char':
    case 'unknown':
      writer.lengthPrefixedText(value as string);
      return;
    case 'json':
      writer.lengthPrefixedText(functions.formatValue(value, type, context));
      return;
    case 'jsonb': {
      const text = functions.formatValue(value, type, context);
      const at = writer.reserve(5);
      writer.text(text);
      writer.raw.writeInt32BE(writer.length - at - 4, at);
      writer.raw[at + 4] = 1; // jsonb binary format version
      return;
    }
    case 'bytea': {
      const bytes = value as Uint8Array;
      writer.int32(bytes.length).bytes(bytes);
      return;
    }
    case 'uuid':
      writer.int32(16).bytes(uuidBytes(value as string));
      return;
    case 'date':
      writer.int32(4).int32(dateToWire(value as number));
      return;
    case 'time':
      writeInt64(writer, BigInt(value as number));
      return;
    case 'timestamp':
    case 'timestamptz':
      writeInt64(writer, timestampToWire(value as number));
      return;
    case 'interval': {
      const interval = value as Interval;
      writer.int32(16);
      const at = writer.reserve(8);
      writer.raw.writeBigInt64BE(BigInt(interval.micros), at);
      writer.int32(interval.days).int32(interval.months);
      return;
    }
    case 'numeric':
      writeNumeric(writer, value as Numeric);
      return;
    case 'array':
      writeArray(writer, value as SqlArray, type, context);
      return;
    case 'record':
    case 'void':
      throw new SqlError(SqlState.featureNotSupported, `no binary output function available for type ${type.name}`);
  }
}

/** Decodes one binary Bind parameter (1-based `parameterNumber` for the error text). */
export function readBinary(bytes: Buffer, type: DataType, context: EvalContext, parameterNumber: number): Value {
  // PostgreSQL's receive functions read what they need: too few bytes is 08P01, too many 22P03.
  const need = (size: number): void => {
    if (bytes.length < size) throw new SqlError(SqlState.protocolViolation, 'insufficient data left in message');
    if (bytes.length !== size) throw incorrect(parameterNumber);
  };
  switch (type.name) {
    case 'bool':
      need(1);
      return bytes[0] !== 0;
    case 'int2':
      need(2);
      return bytes.readInt16BE(0);
    case 'int4':
      need(4);
      return bytes.readInt32BE(0);
    case 'oid':
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
      need(4);
      return bytes.readUInt32BE(0);
    case 'int8':
      need(8);
      return bytes.readBigInt64BE(0);
    case 'float4':
      need(4);
      return bytes.readFloatBE(0);
    case 'float8':
      need(8);
      return bytes.readDoubleBE(0);
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
    case 'char':
    case 'unknown':
      return decodeUtf8(asBytes(bytes), parameterNumber);
    case 'json':
      return functions.parseValue(decodeUtf8(asBytes(bytes), parameterNumber), type, context);
    case 'jsonb':
      if (bytes.length < 1 || bytes[0] !== 1) {
        throw new SqlError(SqlState.invalidBinaryRepresentation, `unsupported jsonb version number ${bytes[0] ?? 0}`);
      }
      return functions.parseValue(decodeUtf8(asBytes(bytes.subarray(1)), parameterNumber), type, context);
    case 'bytea':
      return new Uint8Array(bytes);
    case 'uuid':
      need(16);
      return uuidFromBytes(bytes);
    case 'date': {
      need(4);
      const days = bytes.readInt32BE(0);
      if (days === INT32_MAX) return Infinity;
      if (days === INT32_MIN) return -Infinity;
      return days + POSTGRES_EPOCH_DAYS;
    }
    case 'time':
      need(8);
      return Number(bytes.readBigInt64BE(0));
    case 'timestamp':
    case 'timestamptz': {
      need(8);
      const micros = bytes.readBigInt64BE(0);
      if (micros === INT64_MAX) return Infinity;
      if (micros === INT64_MIN) return -Infinity;
      return Number(micros) + POSTGRES_EPOCH_MICROS;
    }
    case 'interval': {
      need(16);
      const interval: Interval = { micros: Number(bytes.readBigInt64BE(0)), days: bytes.readInt32BE(8), months: bytes.readInt32BE(12) };
      return interval;
    }
    case 'numeric':
      return readNumeric(bytes, parameterNumber);
    case 'array':
      return readArray(bytes, type, context, parameterNumber);
    case 'record':
    case 'void':
      throw new SqlError(SqlState.featureNotSupported, `no binary input function available for type ${type.name}`);
  }
}

function incorrect(parameterNumber: number): SqlError {
  return new SqlError(SqlState.invalidBinaryRepresentation, `incorrect binary data format in bind parameter ${parameterNumber}`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(bytes: Uint8Array, parameterNumber: number): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new SqlError(SqlState.characterNotInRepertoire, `invalid byte sequence for encoding "UTF8" in bind parameter ${parameterNumber}`);
  }
}

function writeInt64(writer: MessageWriter, value: bigint): void {
  const at = writer.int32(8).reserve(8);
  writer.raw.writeBigInt64BE(value, at);
}

function dateToWire(days: number): number {
  if (days === Infinity) return INT32_MAX;
  if (days === -Infinity) return INT32_MIN;
  return days - POSTGRES_EPOCH_DAYS;
}

function timestampToWire(micros: number): bigint {
  if (micros === Infinity) return INT64_MAX;
  if (micros === -Infinity) return INT64_MIN;
  return BigInt(Math.round(micros - POSTGRES_EPOCH_MICROS));
}

function writeNumeric(writer: MessageWriter, value: Numeric): void {
  if (value.special !== undefined) {
    const sign = value.special === 'nan' ? NUMERIC_NAN : value.special === 'inf' ? NUMERIC_PLUS_INFINITY : NUMERIC_MINUS_INFINITY;
    writer.int32(8).int16(0).int16(0).int16(sign).int16(0);
    return;
  }
  let unscaled = value.unscaled;
  let scale = value.scale;
  if (scale < 0) {
    unscaled *= 10n ** BigInt(-scale);
    scale = 0;
  }
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString();
  const integerPart = digits.length > scale ? digits.slice(0, digits.length - scale) : '';
  const fractionPart = digits.length > scale ? digits.slice(digits.length - scale) : digits.padStart(scale, '0');
  const integerPadded = integerPart.padStart(Math.ceil(integerPart.length / 4) * 4, '0');
  const fractionPadded = fractionPart.padEnd(Math.ceil(fractionPart.length / 4) * 4, '0');
  const all = integerPadded + fractionPadded;
  const groups: number[] = [];
  for (let i = 0; i < all.length; i += 4) groups.push(Number(all.slice(i, i + 4)));
  let weight = integerPadded.length / 4 - 1;
  let first = 0;
  while (first < groups.length && groups[first] === 0) {
    first++;
    weight--;
  }
  let last = groups.length;
  while (last > first && groups[last - 1] === 0) last--;
  const kept = groups.slice(first, last);
  if (kept.length === 0) weight = 0;
  writer.int32(8 + kept.length * 2).int16(kept.length).int16(weight).int16(negative && kept.length > 0 ? NUMERIC_NEGATIVE : NUMERIC_POSITIVE).int16(scale);
  for (const group of kept) writer.int16(group);
}

function readNumeric(bytes: Buffer, parameterNumber: number): Numeric {
  if (bytes.length < 8) throw incorrect(parameterNumber);
  const count = bytes.readInt16BE(0);
  const weight = bytes.readInt16BE(2);
  const sign = bytes.readUInt16BE(4);
  const displayScale = bytes.readInt16BE(6);
  if (count < 0 || bytes.length !== 8 + count * 2) throw incorrect(parameterNumber);
  if (sign === NUMERIC_NAN) return new Numeric(0n, 0, 'nan');
  if (sign === NUMERIC_PLUS_INFINITY) return new Numeric(0n, 0, 'inf');
  if (sign === NUMERIC_MINUS_INFINITY) return new Numeric(0n, 0, '-inf');
  if (sign !== NUMERIC_POSITIVE && sign !== NUMERIC_NEGATIVE) {
    throw new SqlError(SqlState.invalidBinaryRepresentation, 'invalid sign in external "numeric" value');
  }
  if (displayScale < 0) throw new SqlError(SqlState.invalidBinaryRepresentation, 'invalid scale in external "numeric" value');
  let unscaled = 0n;
  for (let i = 0; i < count; i++) {
    const digit = bytes.readInt16BE(8 + i * 2);
    if (digit < 0 || digit > 9999) throw new SqlError(SqlState.invalidBinaryRepresentation, 'invalid digit in external "numeric" value');
    unscaled = unscaled * 10000n + BigInt(digit);
  }
  // unscaled now holds the value times 10^(4 * (count - 1 - weight)).
  const fractionDigits = 4 * (count - 1 - weight);
  if (fractionDigits > displayScale) unscaled /= 10n ** BigInt(fractionDigits - displayScale);
  else if (fractionDigits < displayScale) unscaled *= 10n ** BigInt(displayScale - fractionDigits);
  if (sign === NUMERIC_NEGATIVE) unscaled = -unscaled;
  return new Numeric(unscaled, displayScale);
}

function writeArray(writer: MessageWriter, array: SqlArray, type: DataType, context: EvalContext): void {
  const element = type.element!;
  const lengthAt = writer.reserve(4);
  const start = writer.length;
  const dims = array.dims ?? [array.elements.length];
  const empty = array.elements.length === 0;
  let hasNull = 0;
  for (const item of array.elements) if (item === null) hasNull = 1;
  writer.int32(empty ? 0 : dims.length).int32(hasNull).int32(typeOid(element));
  // int2vector / oidvector start at 0 (PostgreSQL's int2vectorsend), other arrays at 1.
  const lowerBound = type.vector === undefined ? 1 : 0;
  if (!empty) for (const length of dims) writer.int32(length).int32(lowerBound);
  for (const item of array.elements) {
    if (item === null) writer.int32(-1);
    else writeBinary(writer, item, element, context);
  }
  writer.raw.writeInt32BE(writer.length - start, lengthAt);
}

function readArray(bytes: Buffer, type: DataType, context: EvalContext, parameterNumber: number): SqlArray {
  const element = type.element!;
  if (bytes.length < 12) throw incorrect(parameterNumber);
  const dimensionCount = bytes.readInt32BE(0);
  const elementOid = bytes.readUInt32BE(8);
  if (dimensionCount < 0 || dimensionCount > 6) {
    throw new SqlError(SqlState.invalidBinaryRepresentation, `invalid number of dimensions: ${dimensionCount}`);
  }
  if (elementOid !== typeOid(element) && elementOid !== TYPES.unknown.oid) {
    throw new SqlError(SqlState.datatypeMismatch, `binary data has array element type ${elementOid} instead of expected ${typeOid(element)}`);
  }
  let offset = 12;
  const dims: number[] = [];
  let total = dimensionCount === 0 ? 0 : 1;
  for (let i = 0; i < dimensionCount; i++) {
    if (offset + 8 > bytes.length) throw incorrect(parameterNumber);
    const length = bytes.readInt32BE(offset);
    if (length < 0) throw incorrect(parameterNumber);
    dims.push(length);
    total *= length;
    offset += 8;
  }
  const elements: Value[] = [];
  for (let i = 0; i < total; i++) {
    if (offset + 4 > bytes.length) throw incorrect(parameterNumber);
    const length = bytes.readInt32BE(offset);
    offset += 4;
    if (length === -1) {
      elements.push(null);
      continue;
    }
    if (length < 0 || offset + length > bytes.length) throw incorrect(parameterNumber);
    elements.push(readBinary(bytes.subarray(offset, offset + length), element, context, parameterNumber));
    offset += length;
  }
  if (offset !== bytes.length) throw incorrect(parameterNumber);
  return dims.length > 1 ? { kind: 'array', elements, dims } : { kind: 'array', elements };
}
