// Memcomparable key encoding: SQL values to bytes whose unsigned byte order is the SQL order
// (PostgreSQL's btree order, text in the C collation), so RocksDB's bytewise comparator sorts state
// rows by key. Values that SQL calls equal encode equally (numeric 1.0 and 1.00, interval '1 month'
// and '30 days', float -0 and 0, bpchar 'a ' and 'a'), so they are one key, as in a PostgreSQL
// unique index. Keys are never decoded: the full row is in the value (row-codec.ts).
//
// Every value starts with a null marker: 0x01 present, 0x02 NULL (NULLS LAST, PostgreSQL's default
// for ascending order). Variable-length byte strings escape 0x00 as 0x00 0xFF and end with 0x00 0x01.

import type { DataType } from '../sql/types.js';
import type { Interval, SqlArray, Value } from '../sql/value.js';
import { Numeric } from '../sql/numeric.js';
import { jsonNumberToNumeric, type Jsonb, type JsonValue } from '../sql/json.js';
import { ByteWriter } from './byte-writer.js';
import { uuidBytes } from '../sql/uuid.js';

const PRESENT = 0x01;
const NULL_MARKER = 0x02;

/** Encodes the key columns `row` (already in key order) with their types. */
export function encodeKey(writer: ByteWriter, key: readonly Value[], types: readonly DataType[]): void {
  for (let index = 0; index < key.length; index++) encodeValue(writer, key[index] ?? null, types[index]!);
}

/** Encodes the key columns of a full row: `row[indexes[i]]` with `types[i]`. */
export function encodeKeyColumns(writer: ByteWriter, row: readonly Value[], indexes: readonly number[], types: readonly DataType[]): void {
  for (let index = 0; index < indexes.length; index++) encodeValue(writer, row[indexes[index]!] ?? null, types[index]!);
}

export function encodeValue(writer: ByteWriter, value: Value, type: DataType): void {
  if (value === null) {
    writer.byte(NULL_MARKER);
    return;
  }
  writer.byte(PRESENT);
  switch (type.name) {
    // First: the commonest key (row ids, numbers of rows), matched before a dozen other names.
    case 'int8':
      encodeInt64(writer, value as bigint | number);
      return;
    case 'bool':
      writer.byte(value ? 1 : 0);
      return;
    case 'int2':
    case 'int4':
      encodeInt32(writer, value as number);
      return;
    case 'oid':
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
      writer.uint32BigEndian(value as number);
      return;
    case 'float4':
    case 'float8':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      encodeFloat64(writer, value as number);
      return;
    case 'numeric':
      encodeNumeric(writer, value as Numeric);
      return;
    case 'bpchar':
      encodeString(writer, trimTrailingSpaces(value as string));
      return;
    case 'varchar':
    case 'text':
    case 'name':
    case 'char':
    case 'unknown':
      encodeString(writer, value as string);
      return;
    case 'bytea':
      encodeBytes(writer, value as Uint8Array);
      return;
    case 'uuid':
      // Fixed width: the 16 bytes, whose order is PostgreSQL's uuid order.
      writer.bytes(uuidBytes(value as string));
      return;
    case 'interval':
      encodeInterval(writer, value as Interval);
      return;
    case 'jsonb':
      encodeJsonbTop(writer, (value as Jsonb).value);
      return;
    case 'array':
      encodeArray(writer, value as SqlArray, type.element);
      return;
    default:
      encodeDynamic(writer, value);
  }
}

function encodeInt32(writer: ByteWriter, value: number): void {
  writer.uint32BigEndian((value ^ 0x80000000) >>> 0);
}

const MASK_64 = (1n << 64n) - 1n;

function encodeInt64(writer: ByteWriter, value: bigint | number): void {
  const number = Number(value);
  if (number >= -Number.MAX_SAFE_INTEGER && number <= Number.MAX_SAFE_INTEGER) {
    // The sign bit flipped, from the safe integer's two 32-bit halves: no BigInt arithmetic.
    writer.uint32Pair((Math.floor(number / 0x100000000) ^ 0x80000000) >>> 0, number >>> 0);
    return;
  }
  writer.int64BigEndianSignFlipped(typeof value === 'bigint' ? value : BigInt(value));
}

/** IEEE order with NaN above +Infinity and -0 equal to 0, as PostgreSQL orders float8. */
export function encodeFloat64(writer: ByteWriter, value: number): void {
  const normalized = value === 0 ? 0 : Number.isNaN(value) ? Number.NaN : value;
  const bits = writer.float64Bits(normalized);
  const high = bits.getUint32(0);
  const low = bits.getUint32(4);
  if (high & 0x80000000) {
    writer.uint32BigEndian(~high >>> 0);
    writer.uint32BigEndian(~low >>> 0);
  } else {
    writer.uint32BigEndian((high | 0x80000000) >>> 0);
    writer.uint32BigEndian(low);
  }
}

function trimTrailingSpaces(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x20) end--;
  return end === text.length ? text : text.slice(0, end);
}

function escapeFrom(writer: ByteWriter, start: number): void {
  // Rare: NUL bytes inside a byte string. Re-write the tail with 0x00 -> 0x00 0xFF.
  let zeros = 0;
  for (let index = start; index < writer.length; index++) if (writer.buffer[index] === 0) zeros++;
  if (zeros === 0) return;
  const tail = Uint8Array.prototype.slice.call(writer.buffer, start, writer.length);
  writer.length = start;
  writer.ensure(tail.length + zeros);
  for (let index = 0; index < tail.length; index++) {
    const byte = tail[index]!;
    writer.buffer[writer.length++] = byte;
    if (byte === 0) writer.buffer[writer.length++] = 0xff;
  }
}

export function encodeString(writer: ByteWriter, text: string): void {
  const start = writer.length;
  writer.utf8(text);
  escapeFrom(writer, start);
  writer.byte(0x00);
  writer.byte(0x01);
}

function encodeBytes(writer: ByteWriter, bytes: Uint8Array): void {
  const start = writer.length;
  writer.bytes(bytes);
  escapeFrom(writer, start);
  writer.byte(0x00);
  writer.byte(0x01);
}

const NUMERIC_NEGATIVE_INFINITY = 0x01;
const NUMERIC_NEGATIVE = 0x02;
const NUMERIC_ZERO = 0x03;
const NUMERIC_POSITIVE = 0x04;
const NUMERIC_INFINITY = 0x05;
const NUMERIC_NAN = 0x06;

/**
 * Numeric as sign class, then for finite non-zero values the decimal exponent and the significant
 * digits (trailing zeros stripped, so 1.0 and 1.00 are equal), all bytes inverted when negative.
 */
export function encodeNumeric(writer: ByteWriter, value: Numeric): void {
  if (value.special === 'nan') return writer.byte(NUMERIC_NAN);
  if (value.special === 'inf') return writer.byte(NUMERIC_INFINITY);
  if (value.special === '-inf') return writer.byte(NUMERIC_NEGATIVE_INFINITY);
  const unscaled = value.unscaled;
  if (unscaled === 0n) return writer.byte(NUMERIC_ZERO);
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString();
  let significant = digits.length;
  while (significant > 1 && digits.charCodeAt(significant - 1) === 0x30) significant--;
  // value = 0.d1d2d3... * 10^exponent
  const exponent = digits.length - value.scale;
  writer.byte(negative ? NUMERIC_NEGATIVE : NUMERIC_POSITIVE);
  const start = writer.length;
  writer.uint32BigEndian((exponent ^ 0x80000000) >>> 0);
  writer.ensure(significant + 1);
  for (let index = 0; index < significant; index++) writer.buffer[writer.length++] = digits.charCodeAt(index);
  writer.buffer[writer.length++] = 0x00;
  if (negative) {
    for (let index = start; index < writer.length; index++) writer.buffer[index] = ~writer.buffer[index]! & 0xff;
  }
}

const MICROS_PER_DAY = 86_400_000_000n;
const SIGN_128 = 1n << 127n;
const MASK_128 = (1n << 128n) - 1n;

/** PostgreSQL compares intervals by their span with 30-day months: a 128-bit microsecond count. */
function encodeInterval(writer: ByteWriter, value: Interval): void {
  const span = BigInt(value.months * 30 + value.days) * MICROS_PER_DAY + BigInt(Math.trunc(value.micros));
  const biased = (span ^ SIGN_128) & MASK_128;
  writer.uint64BigEndian(biased >> 64n);
  writer.uint64BigEndian(biased & MASK_64);
}

// jsonb order (PostgreSQL's compareJsonbContainers): Object > Array > Boolean > Number > String >
// Null; containers first by element count; object pairs in storage order (keys by length, then
// bytes). At the top level a scalar is a one-element "raw scalar" array that sorts before a real
// array of the same length, so the empty top-level array sorts below every scalar.
const JSON_NULL = 0x10;
const JSON_STRING = 0x20;
const JSON_NUMBER = 0x30;
const JSON_BOOLEAN = 0x40;
const JSON_ARRAY = 0x50;
const JSON_OBJECT = 0x60;
const RAW_SCALAR = 0x01;
const REAL_ARRAY = 0x02;

function encodeJsonbTop(writer: ByteWriter, value: JsonValue): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Numeric)) {
    encodeJson(writer, value);
    return;
  }
  writer.byte(JSON_ARRAY);
  if (Array.isArray(value)) {
    writer.uint32BigEndian(value.length);
    writer.byte(REAL_ARRAY);
    for (const element of value) encodeJson(writer, element);
  } else {
    writer.uint32BigEndian(1);
    writer.byte(RAW_SCALAR);
    encodeJson(writer, value);
  }
}

/** Object keys in jsonb storage order: shorter first, then bytewise. */
export function jsonbKeyOrder(a: string, b: string): number {
  const byteLengthA = Buffer.byteLength(a, 'utf8');
  const byteLengthB = Buffer.byteLength(b, 'utf8');
  if (byteLengthA !== byteLengthB) return byteLengthA - byteLengthB;
  // Same byte length: UTF-8 byte order equals code point order.
  return compareCodePoints(a, b);
}

function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  const count = Math.min(left.length, right.length);
  for (let index = 0; index < count; index++) {
    const difference = left[index]!.codePointAt(0)! - right[index]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

function encodeJson(writer: ByteWriter, value: JsonValue): void {
  if (value === null) return writer.byte(JSON_NULL);
  switch (typeof value) {
    case 'string':
      writer.byte(JSON_STRING);
      encodeString(writer, value);
      return;
    case 'number':
      // jsonb numbers are numerics: 1 (a JS number) and 1.0 (a Numeric) are equal.
      writer.byte(JSON_NUMBER);
      encodeNumeric(writer, jsonNumberToNumeric(value));
      return;
    case 'boolean':
      writer.byte(JSON_BOOLEAN);
      writer.byte(value ? 1 : 0);
      return;
    default:
      break;
  }
  if (value instanceof Numeric) {
    writer.byte(JSON_NUMBER);
    encodeNumeric(writer, value);
    return;
  }
  if (Array.isArray(value)) {
    writer.byte(JSON_ARRAY);
    writer.uint32BigEndian(value.length);
    for (const element of value) encodeJson(writer, element);
    return;
  }
  const object = value as { [key: string]: JsonValue };
  const keys = Object.keys(object).sort(jsonbKeyOrder);
  writer.byte(JSON_OBJECT);
  writer.uint32BigEndian(keys.length);
  for (const key of keys) {
    encodeString(writer, key);
    encodeJson(writer, object[key]!);
  }
}

/**
 * PostgreSQL array order: elements pairwise (NULL elements last), then the shorter array first;
 * then the dimensions.
 */
function encodeArray(writer: ByteWriter, value: SqlArray, element: DataType | undefined): void {
  for (const item of value.elements) {
    writer.byte(0x01);
    if (element === undefined) {
      if (item === null) writer.byte(NULL_MARKER);
      else {
        writer.byte(PRESENT);
        encodeDynamic(writer, item);
      }
    } else {
      encodeValue(writer, item, element);
    }
  }
  writer.byte(0x00);
  for (const dimension of value.dims ?? [value.elements.length]) encodeInt32(writer, dimension);
}

/** For columns of a type without a dedicated encoding: by the JavaScript representation. */
function encodeDynamic(writer: ByteWriter, value: Value): void {
  switch (typeof value) {
    case 'boolean':
      writer.byte(0x10);
      writer.byte(value ? 1 : 0);
      return;
    case 'number':
      writer.byte(0x20);
      encodeFloat64(writer, value);
      return;
    case 'bigint':
      writer.byte(0x20);
      encodeFloat64(writer, Number(value));
      encodeInt64(writer, value);
      return;
    case 'string':
      writer.byte(0x30);
      encodeString(writer, value);
      return;
    default:
      break;
  }
  writer.byte(0x40);
  encodeString(writer, JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item)));
}
