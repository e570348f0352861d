// The operators: arithmetic on the numeric types with PostgreSQL's overflow (22003 "integer out of
// range") and division-by-zero (22012) errors, comparisons for every type (through compareValues,
// so NaN equals NaN and sorts last, as PostgreSQL's float and numeric comparisons), string
// concatenation, LIKE/ILIKE and POSIX regular expressions, date/time arithmetic, jsonb operators,
// and integer bit operators. Each is registered with its PostgreSQL symbol and argument types.

import { SqlError, SqlState } from '../errors.js';
import type { DataType, TypeName } from '../types.js';
import { arrayOf, type, vectorOf } from '../types.js';
import type { Interval, SqlArray, Value } from '../value.js';
import type { EvalContext } from '../eval-context.js';
import { Numeric } from '../numeric.js';
import { Jsonb, isJsonObject, jsonContains, jsonGet, jsonGetPath, jsonHasKey, jsonToText, jsonbObject, type JsonValue } from '../json.js';
import { compareValues } from '../compare.js';
import { formatValue } from '../text-format.js';
import { MICROS_PER_DAY } from '../calendar.js';
import { fromLocal } from '../datetime.js';
import { multiplyInterval } from '../interval.js';
import {
  addIntervals, checkDate, checkTimestamp, negateInterval, timestampDifference, timestampPlusInterval, timestamptzPlusInterval,
} from '../datetime-arithmetic.js';
import { defineOperator, textArray } from './registry.js';
import { likeMatcher, regexMatcher } from './patterns.js';

const INT_NAMES = { int2: 'smallint', int4: 'integer', int8: 'bigint' } as const;
const INT_LIMITS = { int2: [-32768, 32767], int4: [-2147483648, 2147483647] } as const;

function divisionByZero(): SqlError {
  return new SqlError(SqlState.divisionByZero, 'division by zero');
}

function intOutOfRange(name: keyof typeof INT_NAMES): SqlError {
  return new SqlError(SqlState.numericValueOutOfRange, `${INT_NAMES[name]} out of range`);
}

// ---------------------------------------------------------------------------------------------
// integers (int2, int4 as numbers; int8 as bigint)

for (const name of ['int2', 'int4'] as const) {
  const [min, max] = INT_LIMITS[name];
  const check = (value: number): number => {
    if (value < min || value > max) throw intOutOfRange(name);
    return value + 0;
  };
  const args = [name, name] as const;
  defineOperator('+', { args, returns: name, impl: ([a, b]) => check((a as number) + (b as number)) });
  defineOperator('-', { args, returns: name, impl: ([a, b]) => check((a as number) - (b as number)) });
  defineOperator('*', { args, returns: name, impl: ([a, b]) => check((a as number) * (b as number)) });
  defineOperator('/', {
    args, returns: name, impl: ([a, b]) => {
      if (b === 0) throw divisionByZero();
      return check(Math.trunc((a as number) / (b as number)));
    },
  });
  defineOperator('%', {
    args, returns: name, impl: ([a, b]) => {
      if (b === 0) throw divisionByZero();
      return ((a as number) % (b as number)) + 0;
    },
  });
  defineOperator('-', { args: [name], returns: name, impl: ([a]) => check(-(a as number)) });
  defineOperator('+', { args: [name], returns: name, impl: ([a]) => a });
  defineOperator('@', { args: [name], returns: name, impl: ([a]) => check(Math.abs(a as number)) });
  defineOperator('&', { args, returns: name, impl: ([a, b]) => (a as number) & (b as number) });
  defineOperator('|', { args, returns: name, impl: ([a, b]) => (a as number) | (b as number) });
  defineOperator('#', { args, returns: name, impl: ([a, b]) => (a as number) ^ (b as number) });
  defineOperator('~', { args: [name], returns: name, impl: ([a]) => ~(a as number) });
  defineOperator('<<', { args: [name, 'int4'], returns: name, impl: ([a, b]) => (name === 'int2' ? ((((a as number) << ((b as number) & 31)) << 16) >> 16) : (a as number) << ((b as number) & 31)) });
  defineOperator('>>', { args: [name, 'int4'], returns: name, impl: ([a, b]) => (a as number) >> ((b as number) & 31) });
}

const INT8_MIN = -9223372036854775808n;
const INT8_MAX = 9223372036854775807n;
function checkInt8(value: bigint): bigint {
  if (value < INT8_MIN || value > INT8_MAX) throw intOutOfRange('int8');
  return value;
}
{
  const args = ['int8', 'int8'] as const;
  defineOperator('+', { args, returns: 'int8', impl: ([a, b]) => checkInt8((a as bigint) + (b as bigint)) });
  defineOperator('-', { args, returns: 'int8', impl: ([a, b]) => checkInt8((a as bigint) - (b as bigint)) });
  defineOperator('*', { args, returns: 'int8', impl: ([a, b]) => checkInt8((a as bigint) * (b as bigint)) });
  defineOperator('/', {
    args, returns: 'int8', impl: ([a, b]) => {
      if (b === 0n) throw divisionByZero();
      return checkInt8((a as bigint) / (b as bigint));
    },
  });
  defineOperator('%', {
    args, returns: 'int8', impl: ([a, b]) => {
      if (b === 0n) throw divisionByZero();
      return (a as bigint) % (b as bigint);
    },
  });
  defineOperator('-', { args: ['int8'], returns: 'int8', impl: ([a]) => checkInt8(-(a as bigint)) });
  defineOperator('+', { args: ['int8'], returns: 'int8', impl: ([a]) => a });
  defineOperator('@', { args: ['int8'], returns: 'int8', impl: ([a]) => checkInt8((a as bigint) < 0n ? -(a as bigint) : (a as bigint)) });
  defineOperator('&', { args, returns: 'int8', impl: ([a, b]) => (a as bigint) & (b as bigint) });
  defineOperator('|', { args, returns: 'int8', impl: ([a, b]) => (a as bigint) | (b as bigint) });
  defineOperator('#', { args, returns: 'int8', impl: ([a, b]) => (a as bigint) ^ (b as bigint) });
  defineOperator('~', { args: ['int8'], returns: 'int8', impl: ([a]) => ~(a as bigint) });
  defineOperator('<<', { args: ['int8', 'int4'], returns: 'int8', impl: ([a, b]) => BigInt.asIntN(64, (a as bigint) << BigInt((b as number) & 63)) });
  defineOperator('>>', { args: ['int8', 'int4'], returns: 'int8', impl: ([a, b]) => (a as bigint) >> BigInt((b as number) & 63) });
}

// ---------------------------------------------------------------------------------------------
// floats

function floatOverflow(): SqlError {
  return new SqlError(SqlState.numericValueOutOfRange, 'value out of range: overflow');
}
function floatUnderflow(): SqlError {
  return new SqlError(SqlState.numericValueOutOfRange, 'value out of range: underflow');
}

for (const name of ['float4', 'float8'] as const) {
  const round = name === 'float4' ? Math.fround : (x: number) => x;
  const args = [name, name] as const;
  const checked = (result: number, a: number, b: number, zeroAllowed: boolean): number => {
    const value = round(result);
    if (!Number.isFinite(value) && Number.isFinite(a) && Number.isFinite(b)) throw floatOverflow();
    if (value === 0 && !zeroAllowed) throw floatUnderflow();
    return value;
  };
  defineOperator('+', { args, returns: name, impl: ([a, b]) => checked((a as number) + (b as number), a as number, b as number, true) });
  defineOperator('-', { args, returns: name, impl: ([a, b]) => checked((a as number) - (b as number), a as number, b as number, true) });
  defineOperator('*', { args, returns: name, impl: ([a, b]) => checked((a as number) * (b as number), a as number, b as number, a === 0 || b === 0) });
  defineOperator('/', {
    args, returns: name, impl: ([a, b]) => {
      if (b === 0 && !Number.isNaN(a)) throw divisionByZero();
      return checked((a as number) / (b as number), a as number, b as number, a === 0 || !Number.isFinite(b));
    },
  });
  defineOperator('-', { args: [name], returns: name, impl: ([a]) => -(a as number) });
  defineOperator('+', { args: [name], returns: name, impl: ([a]) => a });
  defineOperator('@', { args: [name], returns: name, impl: ([a]) => Math.abs(a as number) });
}
// float4 with float8 (float48pl and friends): the result is float8
for (const [left, right] of [['float4', 'float8'], ['float8', 'float4']] as const) {
  const args = [left, right] as const;
  const overflowChecked = (result: number, a: number, b: number): number => {
    if (!Number.isFinite(result) && Number.isFinite(a) && Number.isFinite(b)) throw floatOverflow();
    return result;
  };
  defineOperator('+', { args, returns: 'float8', impl: ([a, b]) => overflowChecked((a as number) + (b as number), a as number, b as number) });
  defineOperator('-', { args, returns: 'float8', impl: ([a, b]) => overflowChecked((a as number) - (b as number), a as number, b as number) });
  defineOperator('*', { args, returns: 'float8', impl: ([a, b]) => {
    const result = overflowChecked((a as number) * (b as number), a as number, b as number);
    if (result === 0 && a !== 0 && b !== 0) throw floatUnderflow();
    return result;
  } });
  defineOperator('/', { args, returns: 'float8', impl: ([a, b]) => {
    if (b === 0 && !Number.isNaN(a)) throw divisionByZero();
    const result = overflowChecked((a as number) / (b as number), a as number, b as number);
    if (result === 0 && a !== 0 && Number.isFinite(b)) throw floatUnderflow();
    return result;
  } });
  for (const op of ['=', '<>', '<', '<=', '>', '>='] as const) {
    const test = { '=': (c: number) => c === 0, '<>': (c: number) => c !== 0, '<': (c: number) => c < 0, '<=': (c: number) => c <= 0, '>': (c: number) => c > 0, '>=': (c: number) => c >= 0 }[op];
    defineOperator(op, { args, returns: 'bool', impl: ([a, b]) => test(compareValues(a!, b!, type('float8'))) });
  }
}

defineOperator('^', {
  args: ['float8', 'float8'], returns: 'float8', impl: ([a, b]) => {
    const x = a as number;
    const y = b as number;
    if (x === 0 && y < 0) throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'zero raised to a negative power is undefined');
    if (x < 0 && !Number.isInteger(y) && Number.isFinite(y)) {
      throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'a negative number raised to a non-integer power yields a complex result');
    }
    if (x === 1 || y === 0) return 1; // POSIX pow: 1^NaN = 1, NaN^0 = 1
    // V8's pow(400, -2) is 1 ulp off where glibc's is exact; 1 / x^n is exact when x^n is
  const result = Number.isInteger(y) && y < 0 && y > -64 ? 1 / Math.pow(x, -y) : Math.pow(x, y);
    if (!Number.isFinite(result) && Number.isFinite(x) && Number.isFinite(y)) throw floatOverflow();
    if (result === 0 && x !== 0 && Number.isFinite(x) && Number.isFinite(y)) throw floatUnderflow();
    return result;
  },
});
defineOperator('|/', {
  args: ['float8'], returns: 'float8', impl: ([a]) => {
    if ((a as number) < 0) throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'cannot take square root of a negative number');
    return Math.sqrt(a as number);
  },
});

// ---------------------------------------------------------------------------------------------
// numeric

{
  const args = ['numeric', 'numeric'] as const;
  defineOperator('+', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).add(b as Numeric) });
  defineOperator('-', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).subtract(b as Numeric) });
  defineOperator('*', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).multiply(b as Numeric) });
  defineOperator('/', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).divide(b as Numeric) });
  defineOperator('%', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).modulo(b as Numeric) });
  defineOperator('^', { args, returns: 'numeric', impl: ([a, b]) => (a as Numeric).power(b as Numeric) });
  defineOperator('-', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).negate() });
  defineOperator('+', { args: ['numeric'], returns: 'numeric', impl: ([a]) => a });
  defineOperator('@', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).abs() });
}

// ---------------------------------------------------------------------------------------------
// comparisons, for every type

const comparable: Exclude<TypeName, 'array'>[] = [
  'bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'text', 'varchar', 'bpchar', 'name', 'char', 'bytea',
  'date', 'time', 'timestamp', 'timestamptz', 'interval', 'jsonb', 'oid',
];

/** `oids`: the implementing functions' pg_proc OIDs (=, <>, <, <=, >, >=) where the generated table lacks them. */
function defineComparisons(left: DataType, right: DataType, oids?: readonly [number, number, number, number, number, number]): void {
  const t = left;
  const args = [left, right];
  const oid = (i: number) => (oids === undefined ? {} : { oid: oids[i]! });
  // The arguments read by index, not taken apart ([a, b]): the destructuring's iterator was an
  // allocation per comparison (a join's BETWEEN residual, a filter) in the compiled impl.
  defineOperator('=', { args, returns: 'bool', ...oid(0), impl: (values) => compareValues(values[0]!, values[1]!, t) === 0 });
  defineOperator('<>', { args, returns: 'bool', ...oid(1), impl: (values) => compareValues(values[0]!, values[1]!, t) !== 0 });
  defineOperator('<', { args, returns: 'bool', ...oid(2), impl: (values) => compareValues(values[0]!, values[1]!, t) < 0 });
  defineOperator('<=', { args, returns: 'bool', ...oid(3), impl: (values) => compareValues(values[0]!, values[1]!, t) <= 0 });
  defineOperator('>', { args, returns: 'bool', ...oid(4), impl: (values) => compareValues(values[0]!, values[1]!, t) > 0 });
  defineOperator('>=', { args, returns: 'bool', ...oid(5), impl: (values) => compareValues(values[0]!, values[1]!, t) >= 0 });
}

for (const name of comparable) defineComparisons(type(name), type(name));
// uuid_eq, uuid_ne, uuid_lt, uuid_le, uuid_gt, uuid_ge (PostgreSQL 15's pg_proc)
defineComparisons(type('uuid'), type('uuid'), [2956, 2959, 2954, 2955, 2958, 2957]);
for (const element of ['int2', 'int4', 'int8', 'text', 'varchar', 'bpchar', 'name', 'char', 'float4', 'float8', 'numeric', 'bool', 'date', 'time', 'timestamp', 'timestamptz', 'interval', 'bytea', 'oid', 'uuid'] as const) {
  defineComparisons(arrayOf(type(element)), arrayOf(type(element)));
}
// cross-type comparisons PostgreSQL has directly (so that int8 = int4 does not widen the column)
function defineCrossIntegerComparisons(left: 'int2' | 'int4' | 'int8', right: 'int2' | 'int4' | 'int8'): void {
  const toBig = (value: Value) => (typeof value === 'bigint' ? value : BigInt(value as number));
  const compare = (a: Value, b: Value) => {
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    const x = toBig(a);
    const y = toBig(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  const args = [left, right] as const;
  defineOperator('=', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) === 0 });
  defineOperator('<>', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) !== 0 });
  defineOperator('<', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) < 0 });
  defineOperator('<=', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) <= 0 });
  defineOperator('>', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) > 0 });
  defineOperator('>=', { args, returns: 'bool', impl: ([a, b]) => compare(a!, b!) >= 0 });
}
for (const left of ['int2', 'int4', 'int8'] as const) {
  for (const right of ['int2', 'int4', 'int8'] as const) if (left !== right) defineCrossIntegerComparisons(left, right);
}

// name against text, in both orders (PostgreSQL 12's nameeqtext ... btnametextcmp): client
// drivers' catalog queries compare pg_class.relname with a varchar parameter (SQLAlchemy's
// `relname = $1::VARCHAR`), which PostgreSQL resolves to name = text.
defineComparisons(type('name'), type('text'));
defineComparisons(type('text'), type('name'));
// int2vector and oidvector (pg_index.indkey, indclass) compare as their arrays.
defineComparisons(vectorOf('int2vector'), vectorOf('int2vector'));
defineComparisons(vectorOf('oidvector'), vectorOf('oidvector'), [679, 619, 677, 678, 681, 680]);
// "char" against text (PostgreSQL coerces "char" to text; psycopg2's `relkind = ANY (ARRAY['r', ...])`).
defineComparisons(type('char'), type('text'));
defineComparisons(type('text'), type('char'));

// ---------------------------------------------------------------------------------------------
// strings

function textOf(value: Value, t: DataType, context: EvalContext): string {
  if (t.name === 'bool') return value ? 'true' : 'false';
  return formatValue(value, t, context);
}

defineOperator('||', { args: ['text', 'text'], returns: 'text', impl: ([a, b]) => (a as string) + (b as string) });
// anytextcat / textanycat: a non-string operand is converted with its output function
for (const other of ['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'bool', 'date', 'time', 'timestamp', 'timestamptz', 'interval', 'oid', 'jsonb', 'bytea', 'uuid'] as const) {
  const t = type(other);
  defineOperator('||', { args: ['text', other], returns: 'text', oid: 2004, volatility: other === 'timestamptz' ? 'stable' : 'immutable', impl: ([a, b], c) => (a as string) + textOf(b!, t, c) });
  defineOperator('||', { args: [other, 'text'], returns: 'text', oid: 2003, volatility: other === 'timestamptz' ? 'stable' : 'immutable', impl: ([a, b], c) => textOf(a!, t, c) + (b as string) });
}
defineOperator('||', {
  args: ['bytea', 'bytea'], returns: 'bytea', impl: ([a, b]) => {
    const x = a as Uint8Array;
    const y = b as Uint8Array;
    const out = new Uint8Array(x.length + y.length);
    out.set(x, 0);
    out.set(y, x.length);
    return out;
  },
});

for (const [symbol, caseInsensitive, negate] of [['~~', false, false], ['!~~', false, true], ['~~*', true, false], ['!~~*', true, true]] as const) {
  for (const left of ['text', 'bpchar', 'name'] as const) {
    defineOperator(symbol, {
      args: [left, 'text'], returns: 'bool', impl: ([a, b]) => {
        const text = left === 'bpchar' ? (a as string) : (a as string);
        return likeMatcher(b as string, caseInsensitive, '\\').test(text) !== negate;
      },
    });
  }
  defineOperator(symbol, { args: ['bytea', 'bytea'], returns: 'bool', impl: ([a, b]) => likeMatcher(Buffer.from(b as Uint8Array).toString('latin1'), false, '\\').test(Buffer.from(a as Uint8Array).toString('latin1')) !== negate });
}
for (const [symbol, caseInsensitive, negate] of [['~', false, false], ['!~', false, true], ['~*', true, false], ['!~*', true, true]] as const) {
  for (const left of ['text', 'bpchar', 'name'] as const) {
    defineOperator(symbol, { args: [left, 'text'], returns: 'bool', impl: ([a, b]) => regexMatcher(b as string, caseInsensitive ? 'i' : '').test(a as string) !== negate });
  }
}

// ---------------------------------------------------------------------------------------------
// date and time

function dateArgument(value: Value): number {
  return value as number;
}

defineOperator('+', { args: ['date', 'int4'], returns: 'date', impl: ([a, b]) => (Number.isFinite(a) ? checkDate(dateArgument(a!) + (b as number)) : a) });
defineOperator('+', { args: ['int4', 'date'], returns: 'date', impl: ([a, b]) => (Number.isFinite(b) ? checkDate(dateArgument(b!) + (a as number)) : b) });
defineOperator('-', { args: ['date', 'int4'], returns: 'date', impl: ([a, b]) => (Number.isFinite(a) ? checkDate(dateArgument(a!) - (b as number)) : a) });
defineOperator('-', {
  args: ['date', 'date'], returns: 'int4', impl: ([a, b]) => {
    if (!Number.isFinite(a) || !Number.isFinite(b)) throw new SqlError(SqlState.datetimeFieldOverflow, 'cannot subtract infinite dates');
    return (a as number) - (b as number);
  },
});
defineOperator('+', { args: ['date', 'interval'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval((a as number) * MICROS_PER_DAY, b as Interval) });
defineOperator('+', { args: ['interval', 'date'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval((b as number) * MICROS_PER_DAY, a as Interval) });
defineOperator('-', { args: ['date', 'interval'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval((a as number) * MICROS_PER_DAY, negateInterval(b as Interval)) });
defineOperator('+', { args: ['date', 'time'], returns: 'timestamp', impl: ([a, b]) => checkTimestamp((a as number) * MICROS_PER_DAY + (b as number)) });
defineOperator('+', { args: ['time', 'date'], returns: 'timestamp', impl: ([a, b]) => checkTimestamp((b as number) * MICROS_PER_DAY + (a as number)) });

defineOperator('+', { args: ['timestamp', 'interval'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval(a as number, b as Interval) });
defineOperator('+', { args: ['interval', 'timestamp'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval(b as number, a as Interval) });
defineOperator('-', { args: ['timestamp', 'interval'], returns: 'timestamp', impl: ([a, b]) => timestampPlusInterval(a as number, negateInterval(b as Interval)) });
defineOperator('-', { args: ['timestamp', 'timestamp'], returns: 'interval', impl: ([a, b]) => timestampDifference(a as number, b as number) });
defineOperator('+', { args: ['timestamptz', 'interval'], returns: 'timestamptz', impl: ([a, b], c) => timestamptzPlusInterval(a as number, b as Interval, c.timeZone) });
defineOperator('+', { args: ['interval', 'timestamptz'], returns: 'timestamptz', impl: ([a, b], c) => timestamptzPlusInterval(b as number, a as Interval, c.timeZone) });
defineOperator('-', { args: ['timestamptz', 'interval'], returns: 'timestamptz', impl: ([a, b], c) => timestamptzPlusInterval(a as number, negateInterval(b as Interval), c.timeZone) });
defineOperator('-', { args: ['timestamptz', 'timestamptz'], returns: 'interval', impl: ([a, b]) => timestampDifference(a as number, b as number) });

function wrapTime(micros: number): number {
  const wrapped = micros % MICROS_PER_DAY;
  return wrapped < 0 ? wrapped + MICROS_PER_DAY : wrapped;
}
defineOperator('+', { args: ['time', 'interval'], returns: 'time', impl: ([a, b]) => wrapTime((a as number) + (b as Interval).micros) });
defineOperator('+', { args: ['interval', 'time'], returns: 'time', impl: ([a, b]) => wrapTime((b as number) + (a as Interval).micros) });
defineOperator('-', { args: ['time', 'interval'], returns: 'time', impl: ([a, b]) => wrapTime((a as number) - (b as Interval).micros) });
defineOperator('-', { args: ['time', 'time'], returns: 'interval', impl: ([a, b]) => ({ months: 0, days: 0, micros: (a as number) - (b as number) }) });

defineOperator('+', { args: ['interval', 'interval'], returns: 'interval', impl: ([a, b]) => addIntervals(a as Interval, b as Interval) });
defineOperator('-', { args: ['interval', 'interval'], returns: 'interval', impl: ([a, b]) => addIntervals(a as Interval, negateInterval(b as Interval)) });
defineOperator('-', { args: ['interval'], returns: 'interval', impl: ([a]) => negateInterval(a as Interval) });
defineOperator('+', { args: ['interval'], returns: 'interval', impl: ([a]) => a });
defineOperator('*', { args: ['interval', 'float8'], returns: 'interval', impl: ([a, b]) => multiplyInterval(a as Interval, b as number) });
defineOperator('*', { args: ['float8', 'interval'], returns: 'interval', impl: ([a, b]) => multiplyInterval(b as Interval, a as number) });
defineOperator('/', {
  args: ['interval', 'float8'], returns: 'interval', impl: ([a, b]) => {
    if (b === 0) throw divisionByZero();
    return multiplyInterval(a as Interval, 1 / (b as number));
  },
});

// timestamp - timestamptz etc. resolve through the implicit casts; date - timestamp needs the zone:
defineOperator('-', { args: ['date', 'timestamptz'], returns: 'interval', impl: ([a, b], c) => timestampDifference(fromLocal((a as number) * MICROS_PER_DAY, c.timeZone), b as number) });

// ---------------------------------------------------------------------------------------------
// jsonb

function jsonbValue(value: Value): JsonValue {
  return (value as Jsonb).value;
}
function wrap(value: JsonValue | undefined): Value {
  return value === undefined ? null : new Jsonb(value);
}
function textPath(value: Value): (string | null)[] {
  return (value as SqlArray).elements as (string | null)[];
}

defineOperator('->', { args: ['jsonb', 'text'], returns: 'jsonb', impl: ([a, b]) => wrap(jsonGet(jsonbValue(a!), b as string)) });
defineOperator('->', { args: ['jsonb', 'int4'], returns: 'jsonb', impl: ([a, b]) => wrap(jsonGet(jsonbValue(a!), b as number)) });
defineOperator('->>', {
  args: ['jsonb', 'text'], returns: 'text', impl: ([a, b]) => {
    const found = jsonGet(jsonbValue(a!), b as string);
    return found === undefined ? null : jsonToText(found);
  },
});
defineOperator('->>', {
  args: ['jsonb', 'int4'], returns: 'text', impl: ([a, b]) => {
    const found = jsonGet(jsonbValue(a!), b as number);
    return found === undefined ? null : jsonToText(found);
  },
});
defineOperator('#>', { args: ['jsonb', textArray], returns: 'jsonb', impl: ([a, b]) => wrap(jsonGetPath(jsonbValue(a!), textPath(b!))) });
defineOperator('#>>', {
  args: ['jsonb', textArray], returns: 'text', impl: ([a, b]) => {
    const found = jsonGetPath(jsonbValue(a!), textPath(b!));
    return found === undefined ? null : jsonToText(found);
  },
});
defineOperator('@>', { args: ['jsonb', 'jsonb'], returns: 'bool', impl: ([a, b]) => jsonContains(jsonbValue(a!), jsonbValue(b!)) });
defineOperator('<@', { args: ['jsonb', 'jsonb'], returns: 'bool', impl: ([a, b]) => jsonContains(jsonbValue(b!), jsonbValue(a!)) });
defineOperator('?', { args: ['jsonb', 'text'], returns: 'bool', impl: ([a, b]) => jsonHasKey(jsonbValue(a!), b as string) });
defineOperator('?|', { args: ['jsonb', textArray], returns: 'bool', impl: ([a, b]) => textPath(b!).some((key) => key !== null && jsonHasKey(jsonbValue(a!), key)) });
defineOperator('?&', { args: ['jsonb', textArray], returns: 'bool', impl: ([a, b]) => textPath(b!).every((key) => key === null || jsonHasKey(jsonbValue(a!), key)) });
defineOperator('||', {
  args: ['jsonb', 'jsonb'], returns: 'jsonb', impl: ([a, b]) => {
    const x = jsonbValue(a!);
    const y = jsonbValue(b!);
    if (isJsonObject(x) && isJsonObject(y)) return new Jsonb(jsonbObject([...Object.entries(x), ...Object.entries(y)]));
    const left = Array.isArray(x) ? x : [x];
    const right = Array.isArray(y) ? y : [y];
    return new Jsonb([...left, ...right]);
  },
});
defineOperator('-', {
  args: ['jsonb', 'text'], returns: 'jsonb', impl: ([a, b]) => {
    const x = jsonbValue(a!);
    if (isJsonObject(x)) return new Jsonb(jsonbObject(Object.entries(x).filter(([key]) => key !== b)));
    if (Array.isArray(x)) return new Jsonb(x.filter((element) => element !== b));
    throw new SqlError(SqlState.invalidParameterValue, 'cannot delete from scalar');
  },
});
defineOperator('-', {
  args: ['jsonb', 'int4'], returns: 'jsonb', impl: ([a, b]) => {
    const x = jsonbValue(a!);
    if (isJsonObject(x)) throw new SqlError(SqlState.invalidParameterValue, 'cannot delete from object using integer index');
    if (!Array.isArray(x)) throw new SqlError(SqlState.invalidParameterValue, 'cannot delete from scalar');
    const index = (b as number) < 0 ? x.length + (b as number) : (b as number);
    return new Jsonb(x.filter((_, i) => i !== index));
  },
});

// ---------------------------------------------------------------------------------------------
// arrays

for (const element of ['int2', 'int4', 'int8', 'text', 'float8', 'numeric', 'bool'] as const) {
  const arrayType = arrayOf(type(element));
  defineOperator('||', {
    args: [arrayType, arrayType], returns: arrayType, impl: ([a, b]) => ({ kind: 'array', elements: [...(a as SqlArray).elements, ...(b as SqlArray).elements] }),
  });
  defineOperator('||', { args: [arrayType, element], returns: arrayType, strict: false, impl: ([a, b]) => (a === null ? { kind: 'array', elements: [b ?? null] } : { kind: 'array', elements: [...(a as SqlArray).elements, b ?? null] }) });
  defineOperator('||', { args: [element, arrayType], returns: arrayType, strict: false, impl: ([a, b]) => (b === null ? { kind: 'array', elements: [a ?? null] } : { kind: 'array', elements: [a ?? null, ...(b as SqlArray).elements] }) });
  defineOperator('@>', {
    args: [arrayType, arrayType], returns: 'bool', impl: ([a, b]) => (b as SqlArray).elements.every((item) => item !== null && (a as SqlArray).elements.some((candidate) => candidate !== null && compareValues(candidate, item, type(element)) === 0)),
  });
  defineOperator('<@', {
    args: [arrayType, arrayType], returns: 'bool', impl: ([a, b]) => (a as SqlArray).elements.every((item) => item !== null && (b as SqlArray).elements.some((candidate) => candidate !== null && compareValues(candidate, item, type(element)) === 0)),
  });
  defineOperator('&&', {
    args: [arrayType, arrayType], returns: 'bool', impl: ([a, b]) => (a as SqlArray).elements.some((item) => item !== null && (b as SqlArray).elements.some((candidate) => candidate !== null && compareValues(candidate, item, type(element)) === 0)),
  });
}
