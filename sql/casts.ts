// Casts between the types of types.ts: which casts exist and in which context (PostgreSQL's
// pg_cast: implicit 'i', assignment 'a', explicit 'e', plus the automatic I/O conversion casts: to
// a string type in assignment context, from a string type only explicitly), the conversions
// themselves (integer overflow 22003, float -> int rounding half to even as rint, numeric -> int
// half away from zero, float -> numeric through %.15g as PostgreSQL), and the type modifiers
// (varchar(n)/char(n) length with 22001, numeric(p,s), timestamp(p)/time(p)/interval precision).

import { SqlError, SqlState } from './errors.js';
import type { DataType, TypeName } from './types.js';
import type { Interval, SqlArray, Value } from './value.js';
import type { CastContext, CastImpl } from './functions.js';
import type { EvalContext } from './eval-context.js';
import { Numeric } from './numeric.js';
import { Jsonb, jsonTypeOf, jsonNumberToNumeric } from './json.js';
import { formatValue, parseValue } from './text-format.js';
import { MICROS_PER_DAY } from './calendar.js';
import { fromLocal, roundTimePrecision, roundTimestampPrecision, toLocal } from './datetime.js';

type Level = 'i' | 'a' | 'e';

const levelRank: Record<Level, number> = { i: 0, a: 1, e: 2 };
const contextRank: Record<CastContext, number> = { implicit: 0, assignment: 1, explicit: 2 };

const castLevels = new Map<string, Level>();
function cast(from: TypeName, to: TypeName, level: Level): void {
  castLevels.set(`${from}>${to}`, level);
}

// numeric tower (pg_cast)
const numericTower: TypeName[] = ['int2', 'int4', 'int8', 'numeric', 'float4', 'float8'];
for (let i = 0; i < numericTower.length; i++) {
  for (let j = 0; j < numericTower.length; j++) {
    if (i !== j) cast(numericTower[i]!, numericTower[j]!, j > i ? 'i' : 'a');
  }
}
for (const from of ['int2', 'int4', 'int8'] as const) {
  for (const to of ['oid', 'regclass', 'regproc', 'regtype', 'regnamespace', 'regprocedure'] as const) cast(from, to, 'i');
}
for (const from of ['oid', 'regclass', 'regproc', 'regtype', 'regnamespace', 'regprocedure'] as const) {
  cast(from, 'int8', 'a');
  cast(from, 'int4', 'a');
  for (const to of ['oid', 'regclass', 'regproc', 'regtype', 'regnamespace', 'regprocedure'] as const) if (from !== to) cast(from, to, 'i');
}
cast('int4', 'bool', 'e');
cast('bool', 'int4', 'e');
cast('int4', 'char', 'e');
cast('char', 'int4', 'e');
// strings
for (const from of ['text', 'varchar', 'bpchar', 'name', 'char'] as const) {
  for (const to of ['text', 'varchar', 'bpchar', 'name'] as const) if (from !== to) cast(from, to, 'i');
}
cast('bpchar', 'char', 'a');
cast('text', 'char', 'a');
cast('varchar', 'char', 'a');
cast('char', 'text', 'i');
// date/time
cast('date', 'timestamp', 'i');
cast('date', 'timestamptz', 'i');
cast('timestamp', 'timestamptz', 'i');
cast('timestamptz', 'timestamp', 'a');
cast('timestamp', 'date', 'a');
cast('timestamptz', 'date', 'a');
cast('timestamp', 'time', 'a');
cast('timestamptz', 'time', 'a');
cast('time', 'interval', 'i');
cast('interval', 'time', 'a');
// json
cast('json', 'jsonb', 'a');
cast('jsonb', 'json', 'a');
for (const to of ['bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric'] as const) cast('jsonb', to, 'e');

const stringTypes = new Set<TypeName>(['text', 'varchar', 'bpchar', 'name']);

/** The context a cast needs, or undefined when there is none. */
export function castLevel(from: DataType, to: DataType): Level | undefined {
  if (from.name === to.name) {
    if (from.name !== 'array') return 'i';
    return from.element !== undefined && to.element !== undefined ? castLevel(from.element, to.element) : 'i';
  }
  if (from.name === 'unknown') return 'i';
  if (from.name === 'array' && to.name === 'array') return undefined;
  const direct = castLevels.get(`${from.name}>${to.name}`);
  if (direct !== undefined) return direct;
  // automatic I/O conversion casts
  if (stringTypes.has(to.name) && from.name !== 'void' && from.name !== 'record') return 'a';
  if (stringTypes.has(from.name) && to.name !== 'void' && to.name !== 'record') return 'e';
  return undefined;
}

/** Whether `from` converts to `to` implicitly (the planner's can_coerce_type). */
export function canCastImplicitly(from: DataType, to: DataType): boolean {
  return castLevel(from, to) === 'i';
}

// ---------------------------------------------------------------------------------------------
// Conversions

const INT2_MIN = -32768;
const INT2_MAX = 32767;
const INT4_MIN = -2147483648;
const INT4_MAX = 2147483647;
const INT8_MIN = -9223372036854775808n;
const INT8_MAX = 9223372036854775807n;

function outOfRange(name: 'smallint' | 'integer' | 'bigint'): SqlError {
  return new SqlError(SqlState.numericValueOutOfRange, `${name} out of range`);
}

function checkInt2(value: number): number {
  if (value < INT2_MIN || value > INT2_MAX) throw outOfRange('smallint');
  return value;
}

function checkInt4(value: number): number {
  if (value < INT4_MIN || value > INT4_MAX) throw outOfRange('integer');
  return value;
}

function checkInt8(value: bigint): bigint {
  if (value < INT8_MIN || value > INT8_MAX) throw outOfRange('bigint');
  return value;
}

/** rint: round half to even, as C's default rounding mode. */
export function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const difference = value - floor;
  let result: number;
  if (difference < 0.5) result = floor;
  else if (difference > 0.5) result = floor + 1;
  else result = floor % 2 === 0 ? floor : floor + 1;
  return result === 0 && (value < 0 || Object.is(value, -0)) ? -0 : result;
}

function floatToInteger(value: number, name: 'smallint' | 'integer' | 'bigint'): number {
  if (Number.isNaN(value) || !Number.isFinite(value)) throw outOfRange(name);
  return roundHalfEven(value) + 0;
}

function floatToInt8(value: number): bigint {
  const rounded = floatToInteger(value, 'bigint');
  // PostgreSQL: FLOAT8_FITS_IN_INT64 requires value < 2^63
  if (rounded < -9223372036854775808 || rounded >= 9223372036854775808) throw outOfRange('bigint');
  return BigInt(rounded);
}

function numericToBigInt(value: Numeric, name: 'smallint' | 'integer' | 'bigint'): bigint {
  if (value.special === 'nan') throw new SqlError(SqlState.featureNotSupported, `cannot convert NaN to ${name}`);
  if (value.special !== undefined) throw new SqlError(SqlState.featureNotSupported, `cannot convert infinity to ${name}`);
  return value.toBigIntRounded()!;
}

function float4Checked(value: number): number {
  if (Number.isNaN(value) || !Number.isFinite(value)) return value;
  const single = Math.fround(value);
  if (!Number.isFinite(single)) throw new SqlError(SqlState.numericValueOutOfRange, 'value out of range: overflow');
  if (single === 0 && value !== 0) throw new SqlError(SqlState.numericValueOutOfRange, 'value out of range: underflow');
  return single;
}

function numericTowerConversion(from: TypeName, to: TypeName): CastImpl | undefined {
  const isInteger = (name: TypeName) => name === 'int2' || name === 'int4' || name === 'oid' || name === 'regclass' || name === 'regproc' || name === 'regtype' || name === 'regnamespace' || name === 'regprocedure';
  if (isInteger(from)) {
    switch (to) {
      case 'int2': return (v) => checkInt2(v as number);
      case 'int4': return (v) => checkInt4(v as number);
      case 'int8': return (v) => BigInt(v as number);
      case 'numeric': return (v) => Numeric.fromInteger(v as number);
      case 'float4': return (v) => Math.fround(v as number);
      case 'float8': return (v) => v;
      case 'oid': case 'regclass': case 'regproc': case 'regtype': case 'regnamespace': case 'regprocedure':
        return (v) => ((v as number) < 0 ? (v as number) + 4294967296 : v);
      default: return undefined;
    }
  }
  if (from === 'int8') {
    switch (to) {
      case 'int2': return (v) => checkInt2(Number(checkInt8(v as bigint)));
      case 'int4': return (v) => {
        const x = v as bigint;
        if (x < -2147483648n || x > 2147483647n) throw outOfRange('integer');
        return Number(x);
      };
      case 'numeric': return (v) => Numeric.fromBigInt(v as bigint);
      case 'float4': return (v) => Math.fround(Number(v as bigint));
      case 'float8': return (v) => Number(v as bigint);
      case 'oid': case 'regclass': case 'regproc': case 'regtype': case 'regnamespace': case 'regprocedure': return (v) => {
        const x = v as bigint;
        if (x < -2147483648n || x > 4294967295n) throw new SqlError(SqlState.numericValueOutOfRange, 'OID out of range');
        return x < 0n ? Number(x) + 4294967296 : Number(x);
      };
      default: return undefined;
    }
  }
  if (from === 'float4' || from === 'float8') {
    switch (to) {
      case 'int2': return (v) => checkInt2(floatToInteger(v as number, 'smallint'));
      case 'int4': return (v) => checkInt4(floatToInteger(v as number, 'integer'));
      case 'int8': return (v) => floatToInt8(v as number);
      case 'numeric': return from === 'float4' ? (v) => Numeric.fromFloat4(v as number) : (v) => Numeric.fromFloat8(v as number);
      case 'float4': return (v) => float4Checked(v as number);
      case 'float8': return from === 'float4' ? (v) => v : (v) => v;
      default: return undefined;
    }
  }
  if (from === 'numeric') {
    switch (to) {
      case 'int2': return (v) => {
        const x = numericToBigInt(v as Numeric, 'smallint');
        if (x < -32768n || x > 32767n) throw outOfRange('smallint');
        return Number(x);
      };
      case 'int4': return (v) => {
        const x = numericToBigInt(v as Numeric, 'integer');
        if (x < -2147483648n || x > 2147483647n) throw outOfRange('integer');
        return Number(x);
      };
      case 'int8': return (v) => checkInt8(numericToBigInt(v as Numeric, 'bigint'));
      case 'float4': return (v) => {
        const x = (v as Numeric).toNumber();
        const single = Math.fround(x);
        if ((v as Numeric).special === undefined && (!Number.isFinite(single) || (single === 0 && (v as Numeric).unscaled !== 0n))) {
          throw new SqlError(SqlState.numericValueOutOfRange, `"${(v as Numeric).toString()}" is out of range for type real`);
        }
        return single;
      };
      case 'float8': return (v) => {
        const x = (v as Numeric).toNumber();
        if (!Number.isFinite(x) && (v as Numeric).special === undefined) {
          throw new SqlError(SqlState.numericValueOutOfRange, `"${(v as Numeric).toString()}" is out of range for type double precision`);
        }
        return x;
      };
      default: return undefined;
    }
  }
  return undefined;
}

function jsonbTo(to: TypeName): CastImpl {
  const expected = to === 'bool' ? 'boolean' : 'number';
  const sqlName: Record<string, string> = { bool: 'boolean', int2: 'smallint', int4: 'integer', int8: 'bigint', float4: 'real', float8: 'double precision', numeric: 'numeric' };
  return (value, context) => {
    const json = (value as Jsonb).value;
    const kind = jsonTypeOf(json);
    if (kind !== expected) {
      throw new SqlError(SqlState.invalidParameterValue, `cannot cast jsonb ${kind === 'number' ? 'numeric' : kind} to type ${sqlName[to]}`);
    }
    if (to === 'bool') return json as boolean;
    const numeric = jsonNumberToNumeric(json as number | Numeric);
    if (to === 'numeric') return numeric;
    return numericTowerConversion('numeric', to)!(numeric, context);
  };
}

function textOf(value: Value, from: DataType, context: EvalContext): string {
  if (from.name === 'bool') return value ? 'true' : 'false';
  if (from.name === 'bpchar') return (value as string).replace(/ +$/, '');
  return formatValue(value, from, context);
}

/** The conversion ignoring `to`'s typmod. */
function baseConversion(from: DataType, to: DataType): CastImpl | undefined {
  if (from.name === 'unknown') return (value, context) => parseValue(value as string, to, context);
  if (from.name === to.name && from.name !== 'array') return (value) => value;
  const tower = numericTowerConversion(from.name, to.name);
  if (tower !== undefined) return tower;
  switch (`${from.name}>${to.name}`) {
    case 'int4>bool': return (v) => v !== 0;
    case 'bool>int4': return (v) => (v ? 1 : 0);
    case 'int4>char': return (v) => String.fromCharCode((v as number) & 0xff);
    case 'char>int4': return (v) => ((v as string).length === 0 ? 0 : (v as string).charCodeAt(0));
    case 'date>timestamp': return (v) => (v as number) * MICROS_PER_DAY;
    case 'date>timestamptz': return (v, context) => fromLocal((v as number) * MICROS_PER_DAY, context.timeZone);
    case 'timestamp>timestamptz': return (v, context) => fromLocal(v as number, context.timeZone);
    case 'timestamptz>timestamp': return (v, context) => toLocal(v as number, context.timeZone);
    case 'timestamp>date': return (v) => (Number.isFinite(v) ? Math.floor((v as number) / MICROS_PER_DAY) : v);
    case 'timestamptz>date': return (v, context) => {
      const local = toLocal(v as number, context.timeZone);
      return Number.isFinite(local) ? Math.floor(local / MICROS_PER_DAY) : local;
    };
    case 'timestamp>time': return (v) => {
      const x = v as number;
      return x - Math.floor(x / MICROS_PER_DAY) * MICROS_PER_DAY;
    };
    case 'timestamptz>time': return (v, context) => {
      const x = toLocal(v as number, context.timeZone);
      return x - Math.floor(x / MICROS_PER_DAY) * MICROS_PER_DAY;
    };
    case 'time>interval': return (v) => ({ months: 0, days: 0, micros: v as number });
    case 'interval>time': return (v) => {
      const micros = (v as Interval).micros % MICROS_PER_DAY;
      return micros < 0 ? micros + MICROS_PER_DAY : micros;
    };
    case 'json>jsonb': case 'jsonb>json': return (v) => v;
    default: break;
  }
  if (from.name === 'jsonb' || from.name === 'json') {
    if (['bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric'].includes(to.name)) return jsonbTo(to.name);
  }
  if (from.name === 'array' && to.name === 'array') {
    const element = resolveCast(from.element!, to.element!, 'explicit');
    if (element === undefined) return undefined;
    return (value, context) => {
      const array = value as SqlArray;
      return { kind: 'array', elements: array.elements.map((item) => (item === null ? null : element(item, context))), dims: array.dims } as SqlArray;
    };
  }
  if (stringTypes.has(to.name) || to.name === 'char') {
    if (stringTypes.has(from.name) || from.name === 'char') return (v) => v;
    return (value, context) => textOf(value, from, context);
  }
  if (stringTypes.has(from.name) || from.name === 'char') {
    const target = to.name === 'array' ? to : { name: to.name, typmod: -1 };
    return (value, context) => parseValue(from.name === 'bpchar' ? (value as string).replace(/ +$/, '') : (value as string), target as DataType, context);
  }
  return undefined;
}

function characterLength(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xd800 || code > 0xdbff) length++;
  }
  return length;
}

/** The first n characters (code points). */
function prefixCharacters(text: string, count: number): string {
  let index = 0;
  for (let seen = 0; seen < count && index < text.length; seen++) {
    const code = text.charCodeAt(index);
    index += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
  }
  return text.slice(0, index);
}

/** A length/precision coercion to `to`'s typmod, or undefined when there is nothing to do. */
function typmodCoercion(to: DataType, explicit: boolean): CastImpl | undefined {
  const typmod = to.typmod;
  if (typmod < 0) return undefined;
  switch (to.name) {
    case 'varchar':
    case 'bpchar': {
      const length = typmod - 4;
      if (length < 0) return undefined;
      const typeText = to.name === 'varchar' ? `character varying(${length})` : `character(${length})`;
      return (value) => {
        let text = value as string;
        const actual = characterLength(text);
        if (actual > length) {
          const prefix = prefixCharacters(text, length);
          if (!explicit && /[^ ]/.test(text.slice(prefix.length))) {
            throw new SqlError(SqlState.stringDataRightTruncation, `value too long for type ${typeText}`);
          }
          text = prefix;
        } else if (to.name === 'bpchar' && actual < length) {
          text += ' '.repeat(length - actual);
        }
        return text;
      };
    }
    case 'numeric':
      return (value) => (value as Numeric).applyTypmod(typmod);
    case 'timestamp':
    case 'timestamptz':
      return (value) => roundTimestampPrecision(value as number, typmod);
    case 'time':
      return (value) => roundTimePrecision(value as number, typmod);
    case 'interval': {
      // interval typmods carry a field mask and a precision; apply the precision only
      const precision = typmod & 0xffff;
      if (precision >= 6 || precision === 0xffff) return undefined;
      const scale = 10 ** (6 - precision);
      return (value) => {
        const interval = value as Interval;
        const magnitude = Math.floor((Math.abs(interval.micros) + scale / 2) / scale) * scale;
        return { months: interval.months, days: interval.days, micros: interval.micros < 0 ? -magnitude : magnitude };
      };
    }
    default:
      return undefined;
  }
}

/** The cast from one type to another in the given context, or undefined when not allowed. typmod of `to` is applied (varchar(n), numeric(p,s)). */
export function resolveCast(from: DataType, to: DataType, context: CastContext): CastImpl | undefined {
  const level = castLevel(from, to);
  if (level === undefined || levelRank[level] > contextRank[context]) return undefined;
  const base = baseConversion(from, to);
  if (base === undefined) return undefined;
  const coercion = typmodCoercion(to, context === 'explicit');
  if (coercion === undefined) return base;
  if (from.name === to.name && from.name !== 'unknown') {
    if (from.typmod === to.typmod && to.name !== 'bpchar') return base;
    return coercion;
  }
  return (value, evalContext) => coercion(base(value, evalContext), evalContext);
}

