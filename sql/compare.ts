// Ordering and hashing of SQL values, as PostgreSQL's btree and hash operator classes:
// `compareValues` gives the ORDER BY order of two non-null values of one type (NaN above every
// number for float and numeric, text in the C collation = code point order, intervals by their
// 30-day-month span, jsonb by PostgreSQL's jsonb order), `hashValue` a 32-bit hash consistent with
// compareValues === 0 (1 and 1.00 numeric hash alike, 0 and -0 float too, '1 mon' and '30 days').

import type { DataType } from './types.js';
import type { Interval, SqlArray, Value } from './value.js';
import { Numeric } from './numeric.js';
import { Jsonb, compareJson, jsonbKeys, type JsonValue } from './json.js';
import { compareText } from './collation.js';
import { compareIntervals, intervalSpan } from './interval.js';

function compareNumbers(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareFloats(a: number, b: number): number {
  // NaN is equal to itself and greater than every other value (float8_cmp_internal)
  if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
  if (Number.isNaN(b)) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function compareBpchar(a: string, b: string): number {
  // bpchar ignores trailing spaces
  return compareText(a.replace(/ +$/, ''), b.replace(/ +$/, ''));
}

function compareArrays(a: SqlArray, b: SqlArray, element: DataType): number {
  const length = Math.min(a.elements.length, b.elements.length);
  for (let i = 0; i < length; i++) {
    const x = a.elements[i]!;
    const y = b.elements[i]!;
    // NULL elements sort after non-null ones, as PostgreSQL's array_cmp
    if (x === null || y === null) {
      if (x === null && y === null) continue;
      return x === null ? 1 : -1;
    }
    const c = compareValues(x, y, element);
    if (c !== 0) return c;
  }
  if (a.elements.length !== b.elements.length) return a.elements.length - b.elements.length;
  const dimsA = a.dims ?? [a.elements.length];
  const dimsB = b.dims ?? [b.elements.length];
  if (dimsA.length !== dimsB.length) return dimsA.length - dimsB.length;
  for (let i = 0; i < dimsA.length; i++) if (dimsA[i] !== dimsB[i]) return dimsA[i]! - dimsB[i]!;
  return 0;
}

/** SQL comparison of two non-null values of one type: negative, 0, positive. */
export function compareValues(a: Value, b: Value, type: DataType): number {
  switch (type.name) {
    case 'int2':
    case 'int4':
    case 'oid':
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return compareNumbers(a as number, b as number);
    case 'int8': {
      const x = a as bigint;
      const y = b as bigint;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'float4':
    case 'float8':
      return compareFloats(a as number, b as number);
    case 'numeric':
      return (a as Numeric).compare(b as Numeric);
    case 'bool':
      return (a ? 1 : 0) - (b ? 1 : 0);
    case 'text':
    case 'varchar':
    case 'name':
    case 'char':
    case 'unknown':
    case 'uuid':
      return compareText(a as string, b as string);
    case 'bpchar':
      return compareBpchar(a as string, b as string);
    case 'bytea':
      return compareBytes(a as Uint8Array, b as Uint8Array);
    case 'interval':
      return compareIntervals(a as Interval, b as Interval);
    case 'jsonb':
    case 'json':
      return compareJson((a as Jsonb).value, (b as Jsonb).value);
    case 'array':
      return compareArrays(a as SqlArray, b as SqlArray, type.element ?? { name: 'text', typmod: -1 });
    case 'void':
    case 'record':
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Hashing (32-bit, FNV-1a style mixing; stable across processes so it can place keys in vnodes)

function mix(hash: number, value: number): number {
  return Math.imul(hash ^ value, 0x01000193) >>> 0;
}

/** The finalized hash as an int32 (a small integer to V8: no heap number); `finalize` is it unsigned. MurmurHash3's fmix32, also storage/vnode-hash.ts' last step. */
export function finalize32(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

function finalize(hash: number): number {
  return finalize32(hash) >>> 0;
}

const OFFSET_BASIS = 0x811c9dc5;

function hashString(text: string, seed = OFFSET_BASIS): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) hash = mix(hash, text.charCodeAt(i));
  return hash;
}

const float64 = new Float64Array(1);
const float64Words = new Uint32Array(float64.buffer);

// Integers of any width hash alike (1::int2, 1::int4, 1::int8): 32-bit values by themselves,
// wider ones by their high and low 32-bit halves, computed the same way for numbers and bigints.
function hashInteger(value: number): number {
  return hashInteger32(value) >>> 0;
}

/** hashInteger as an int32. */
function hashInteger32(value: number): number {
  if (value >= -0x80000000 && value <= 0x7fffffff) return finalize32(mix(OFFSET_BASIS, value | 0));
  const high = Math.floor(value / 4294967296);
  const low = value - high * 4294967296;
  return finalize32(mix(mix(0x9e3779b9, low | 0), high | 0));
}

const INT64_MIN = -(2n ** 63n);
const INT64_END = 2n ** 63n;

function hashBigInt(value: bigint): number {
  // A bigint within +-(2^53 - 1) converts exactly; any other converts to a number of magnitude >= 2^53
  // (not a safe integer). One conversion instead of two bigint comparisons (int8 keys: 3x faster).
  const number = Number(value);
  if (Number.isSafeInteger(number)) return hashInteger(number);
  if (value >= INT64_MIN && value < INT64_END) {
    const low = Number(BigInt.asUintN(32, value));
    const high = Number(BigInt.asIntN(32, value >> 32n));
    return finalize(mix(mix(0x9e3779b9, low | 0), high | 0));
  }
  return finalize(hashString(value.toString(), 0x9e3779b9));
}

function hashFloat(value: number): number {
  if (Number.isNaN(value)) return 0x7ff80000;
  float64[0] = value === 0 ? 0 : value; // -0 hashes as 0
  return finalize(mix(mix(OFFSET_BASIS, float64Words[0]!), float64Words[1]!));
}

function hashNumeric(value: Numeric): number {
  if (value.special !== undefined) return finalize(hashString(value.special, 0x27d4eb2f));
  const normalized = value.normalized();
  if (normalized.scale === 0) return hashBigInt(normalized.unscaled);
  return finalize(hashString(normalized.toString(), 0x9e3779b9));
}

function hashJson(value: JsonValue, seed: number): number {
  if (value === null) return mix(seed, 1);
  if (typeof value === 'boolean') return mix(seed, value ? 3 : 2);
  if (typeof value === 'string') return hashString(value, mix(seed, 4));
  if (typeof value === 'number' || value instanceof Numeric) {
    const numeric = typeof value === 'number' ? (Number.isInteger(value) ? Numeric.fromInteger(value) : Numeric.parse(String(value))) : value;
    return mix(seed, hashNumeric(numeric));
  }
  if (Array.isArray(value)) {
    let hash = mix(seed, 5);
    for (const element of value) hash = hashJson(element, hash);
    return hash;
  }
  let hash = mix(seed, 6);
  for (const key of jsonbKeys(value)) hash = hashJson(value[key]!, hashString(key, hash));
  return hash;
}

// hasherOf's functions: int32 results (hashValue's unsigned hash | 0).
function hashIntegerOrFloat32(value: Value): number {
  return Number.isFinite(value as number) ? hashInteger32(value as number) : hashFloat(value as number) | 0;
}

function hashInt8_32(value: Value): number {
  const number = Number(value as bigint);
  if (Number.isSafeInteger(number)) return hashInteger32(number);
  return hashBigInt(value as bigint) | 0;
}

function hashText32(value: Value): number {
  return finalize32(hashString(value as string));
}

/**
 * `hashValue` for one type, resolved once (a key map's columns), as an int32: hasherOf(type)(value)
 * === (hashValue(value, type) | 0) for every value. The integer, int8 and text types skip the
 * switch on the type's name per value, and an int32 is no heap number.
 */
export function hasherOf(type: DataType): (value: Value) => number {
  switch (type.name) {
    case 'int2':
    case 'int4':
    case 'oid':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return hashIntegerOrFloat32;
    case 'int8':
      return hashInt8_32;
    case 'text':
    case 'varchar':
    case 'name':
      return hashText32;
    default:
      return (value) => hashValue(value, type) | 0;
  }
}

/** Hash consistent with compareValues === 0 (for hash joins, aggregates and vnodes). */
export function hashValue(value: Value, type: DataType): number {
  switch (type.name) {
    case 'int2':
    case 'int4':
    case 'oid':
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return Number.isFinite(value as number) ? hashInteger(value as number) : hashFloat(value as number);
    case 'int8':
      return hashBigInt(value as bigint);
    case 'float4':
    case 'float8':
      return hashFloat(value as number);
    case 'numeric':
      return hashNumeric(value as Numeric);
    case 'bool':
      return value ? 1 : 0;
    case 'text':
    case 'varchar':
    case 'name':
    case 'char':
    case 'unknown':
    case 'uuid':
      return finalize(hashString(value as string));
    case 'bpchar':
      return finalize(hashString((value as string).replace(/ +$/, '')));
    case 'bytea': {
      const bytes = value as Uint8Array;
      let hash = OFFSET_BASIS;
      for (let i = 0; i < bytes.length; i++) hash = mix(hash, bytes[i]!);
      return finalize(hash);
    }
    case 'interval':
      return hashBigInt(intervalSpan(value as Interval));
    case 'jsonb':
    case 'json':
      return finalize(hashJson((value as Jsonb).value, OFFSET_BASIS));
    case 'array': {
      const element = type.element ?? { name: 'text' as const, typmod: -1 };
      let hash = OFFSET_BASIS;
      for (const item of (value as SqlArray).elements) hash = mix(hash, item === null ? 0 : hashValue(item, element));
      return finalize(hash);
    }
    case 'void':
    case 'record':
      return 0;
  }
}
