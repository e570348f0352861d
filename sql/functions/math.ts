// Mathematical functions: abs, sign, round, trunc, ceil/ceiling, floor, mod, div, power/pow, sqrt,
// cbrt, exp, ln, log, log10, pi, random, degrees/radians and the trigonometric functions, width_bucket,
// gcd/lcm, trim_scale, scale. float8 versions follow C's libm (round(float8) is rint: half to
// even); numeric versions are exact (numeric.ts) with PostgreSQL's result scales.

import { SqlError, SqlState } from '../errors.js';
import type { Value } from '../value.js';
import { Numeric } from '../numeric.js';
import { roundHalfEven } from '../casts.js';
import { defineFunction } from './registry.js';

function divisionByZero(): SqlError {
  return new SqlError(SqlState.divisionByZero, 'division by zero');
}

function floatResult(value: number, inputsFinite: boolean): number {
  if (!Number.isFinite(value) && !Number.isNaN(value) && inputsFinite) {
    throw new SqlError(SqlState.numericValueOutOfRange, 'value out of range: overflow');
  }
  return value;
}

// abs
defineFunction('abs', { args: ['int2'], returns: 'int2', impl: ([a]) => {
  if (a === -32768) throw new SqlError(SqlState.numericValueOutOfRange, 'smallint out of range');
  return Math.abs(a as number);
} });
defineFunction('abs', { args: ['int4'], returns: 'int4', impl: ([a]) => {
  if (a === -2147483648) throw new SqlError(SqlState.numericValueOutOfRange, 'integer out of range');
  return Math.abs(a as number);
} });
defineFunction('abs', { args: ['int8'], returns: 'int8', impl: ([a]) => {
  if (a === -9223372036854775808n) throw new SqlError(SqlState.numericValueOutOfRange, 'bigint out of range');
  return (a as bigint) < 0n ? -(a as bigint) : a;
} });
defineFunction('abs', { args: ['float4'], returns: 'float4', impl: ([a]) => Math.abs(a as number) });
defineFunction('abs', { args: ['float8'], returns: 'float8', impl: ([a]) => Math.abs(a as number) });
defineFunction('abs', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).abs() });

defineFunction('sign', { args: ['float8'], returns: 'float8', impl: ([a]) => ((a as number) > 0 ? 1 : (a as number) < 0 ? -1 : 0) });
defineFunction('sign', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).signum() });

// rounding
defineFunction('round', { args: ['float8'], returns: 'float8', impl: ([a]) => (Number.isFinite(a) ? roundHalfEven(a as number) : a) });
defineFunction('round', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).round(0) });
defineFunction('round', { args: ['numeric', 'int4'], returns: 'numeric', impl: ([a, b]) => (a as Numeric).round(Math.max(-1000, Math.min(1000, b as number))) });
defineFunction('trunc', { args: ['float8'], returns: 'float8', impl: ([a]) => Math.trunc(a as number) });
defineFunction('trunc', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).trunc(0) });
defineFunction('trunc', { args: ['numeric', 'int4'], returns: 'numeric', impl: ([a, b]) => (a as Numeric).trunc(Math.max(-1000, Math.min(1000, b as number))) });
for (const name of ['ceil', 'ceiling'] as const) {
  defineFunction(name, { args: ['float8'], returns: 'float8', impl: ([a]) => Math.ceil(a as number) });
  defineFunction(name, { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).ceil() });
}
defineFunction('floor', { args: ['float8'], returns: 'float8', impl: ([a]) => Math.floor(a as number) });
defineFunction('floor', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).floor() });

// mod / div
for (const name of ['int2', 'int4'] as const) {
  defineFunction('mod', { args: [name, name], returns: name, impl: ([a, b]) => {
    if (b === 0) throw divisionByZero();
    return ((a as number) % (b as number)) + 0;
  } });
}
defineFunction('mod', { args: ['int8', 'int8'], returns: 'int8', impl: ([a, b]) => {
  if (b === 0n) throw divisionByZero();
  return (a as bigint) % (b as bigint);
} });
defineFunction('mod', { args: ['numeric', 'numeric'], returns: 'numeric', impl: ([a, b]) => (a as Numeric).modulo(b as Numeric) });
defineFunction('div', { args: ['numeric', 'numeric'], returns: 'numeric', impl: ([a, b]) => (a as Numeric).divideTruncated(b as Numeric) });

// powers, roots, logarithms
function powerFloat(x: number, y: number): number {
  if (x === 0 && y < 0) throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'zero raised to a negative power is undefined');
  if (x < 0 && !Number.isInteger(y) && Number.isFinite(y)) {
    throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'a negative number raised to a non-integer power yields a complex result');
  }
  if (x === 1 || y === 0) return 1;
  // V8's pow(400, -2) is 1 ulp off where glibc's is exact; 1 / x^n is exact when x^n is
  const result = Number.isInteger(y) && y < 0 && y > -64 ? 1 / Math.pow(x, -y) : Math.pow(x, y);
  if (result === 0 && x !== 0 && Number.isFinite(x) && Number.isFinite(y)) throw new SqlError(SqlState.numericValueOutOfRange, 'value out of range: underflow');
  return floatResult(result, Number.isFinite(x) && Number.isFinite(y));
}
for (const name of ['power', 'pow'] as const) {
  defineFunction(name, { args: ['float8', 'float8'], returns: 'float8', impl: ([a, b]) => powerFloat(a as number, b as number) });
  defineFunction(name, { args: ['numeric', 'numeric'], returns: 'numeric', impl: ([a, b]) => (a as Numeric).power(b as Numeric) });
}
defineFunction('sqrt', { args: ['float8'], returns: 'float8', impl: ([a]) => {
  if ((a as number) < 0) throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'cannot take square root of a negative number');
  return Math.sqrt(a as number);
} });
defineFunction('sqrt', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).sqrt() });
defineFunction('cbrt', { args: ['float8'], returns: 'float8', impl: ([a]) => Math.cbrt(a as number) });
defineFunction('exp', { args: ['float8'], returns: 'float8', impl: ([a]) => {
  const result = Math.exp(a as number);
  if (result === 0 && Number.isFinite(a)) throw new SqlError(SqlState.numericValueOutOfRange, 'value out of range: underflow');
  return floatResult(result, Number.isFinite(a));
} });
defineFunction('exp', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).exp() });
function lnFloat(x: number): number {
  if (x === 0) throw new SqlError(SqlState.invalidArgumentForLogarithm, 'cannot take logarithm of zero');
  if (x < 0) throw new SqlError(SqlState.invalidArgumentForLogarithm, 'cannot take logarithm of a negative number');
  return Math.log(x);
}
defineFunction('ln', { args: ['float8'], returns: 'float8', impl: ([a]) => lnFloat(a as number) });
defineFunction('ln', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).ln() });
for (const name of ['log', 'log10'] as const) {
  defineFunction(name, { args: ['float8'], returns: 'float8', impl: ([a]) => {
    lnFloat(a as number);
    return Math.log10(a as number);
  } });
  defineFunction(name, { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).log(Numeric.fromInteger(10)) });
}
defineFunction('log', { args: ['numeric', 'numeric'], returns: 'numeric', impl: ([base, value]) => (value as Numeric).log(base as Numeric) });

// PostgreSQL: degrees(x) = x / RADIANS_PER_DEGREE, radians(x) = x * RADIANS_PER_DEGREE
const RADIANS_PER_DEGREE = 0.0174532925199432957692;
defineFunction('pi', { args: [], returns: 'float8', impl: () => Math.PI });
defineFunction('random', { args: [], returns: 'float8', volatility: 'volatile', impl: () => Math.random() });
defineFunction('degrees', { args: ['float8'], returns: 'float8', impl: ([a]) => (a as number) / RADIANS_PER_DEGREE });
defineFunction('radians', { args: ['float8'], returns: 'float8', impl: ([a]) => (a as number) * RADIANS_PER_DEGREE });

function trig(name: string, fn: (x: number) => number, domain?: (x: number) => boolean): void {
  defineFunction(name, { args: ['float8'], returns: 'float8', impl: ([a]) => {
    const x = a as number;
    if (Number.isNaN(x)) return NaN;
    if ((domain !== undefined && !domain(x)) || (!Number.isFinite(x) && ['sin', 'cos', 'tan', 'cot'].includes(name))) {
      throw new SqlError(SqlState.numericValueOutOfRange, 'input is out of range');
    }
    return fn(x);
  } });
}
trig('sin', Math.sin);
trig('cos', Math.cos);
trig('tan', Math.tan);
trig('cot', (x) => 1 / Math.tan(x));
trig('asin', Math.asin, (x) => x >= -1 && x <= 1);
trig('acos', Math.acos, (x) => x >= -1 && x <= 1);
trig('atan', Math.atan);
defineFunction('atan2', { args: ['float8', 'float8'], returns: 'float8', impl: ([a, b]) => Math.atan2(a as number, b as number) });
trig('sinh', Math.sinh);
trig('cosh', Math.cosh);
trig('tanh', Math.tanh);

defineFunction('scale', { args: ['numeric'], returns: 'int4', impl: ([a]) => ((a as Numeric).special !== undefined ? null : (a as Numeric).scale) });
defineFunction('trim_scale', { args: ['numeric'], returns: 'numeric', impl: ([a]) => (a as Numeric).normalized() });
defineFunction('min_scale', { args: ['numeric'], returns: 'int4', impl: ([a]) => ((a as Numeric).special !== undefined ? null : (a as Numeric).normalized().scale) });

function gcdBig(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}
defineFunction('gcd', { args: ['int4', 'int4'], returns: 'int4', impl: ([a, b]) => {
  const result = Number(gcdBig(BigInt(a as number), BigInt(b as number)));
  if (result > 2147483647) throw new SqlError(SqlState.numericValueOutOfRange, 'integer out of range');
  return result;
} });
defineFunction('gcd', { args: ['int8', 'int8'], returns: 'int8', impl: ([a, b]) => {
  const result = gcdBig(a as bigint, b as bigint);
  if (result > 9223372036854775807n) throw new SqlError(SqlState.numericValueOutOfRange, 'bigint out of range');
  return result;
} });
defineFunction('lcm', { args: ['int4', 'int4'], returns: 'int4', impl: ([a, b]) => {
  if (a === 0 || b === 0) return 0;
  const x = BigInt(a as number);
  const y = BigInt(b as number);
  let result = (x / gcdBig(x, y)) * y;
  if (result < 0n) result = -result;
  if (result > 2147483647n) throw new SqlError(SqlState.numericValueOutOfRange, 'integer out of range');
  return Number(result);
} });

defineFunction('width_bucket', { args: ['float8', 'float8', 'float8', 'int4'], returns: 'int4', impl: ([operand, low, high, count]) => {
  const x = operand as number;
  const lo = low as number;
  const hi = high as number;
  const n = count as number;
  if (n <= 0) throw new SqlError(SqlState.invalidArgumentForWidthBucketFunction, 'count must be greater than zero');
  if (lo === hi) throw new SqlError(SqlState.invalidArgumentForWidthBucketFunction, 'lower bound cannot equal upper bound');
  if (Number.isNaN(x) || Number.isNaN(lo) || Number.isNaN(hi)) throw new SqlError(SqlState.invalidArgumentForWidthBucketFunction, 'operand, lower bound, and upper bound cannot be NaN');
  if (lo < hi) {
    if (x < lo) return 0;
    if (x >= hi) return n + 1;
    return Math.floor(((x - lo) / (hi - lo)) * n) + 1;
  }
  if (x > lo) return 0;
  if (x <= hi) return n + 1;
  return Math.floor(((lo - x) / (lo - hi)) * n) + 1;
} });

export function numericArgument(value: Value): Numeric {
  return value as Numeric;
}
