// Text output and input of float4 and float8 as PostgreSQL 15 with extra_float_digits = 1 (the
// default): the shortest decimal that reads back as the same value (PostgreSQL uses Ryu), laid out
// like printf %g: fixed notation when the decimal exponent is in [-4, 15) for float8 and [-4, 6)
// for float4, otherwise `d.ddde+XX` with at least two exponent digits. With extra_float_digits
// <= 0 PostgreSQL prints %.{15+extra}g (float8) / %.{6+extra}g (float4) instead.
// JavaScript's Number#toString already yields the shortest round-trip digits of a double; for
// float4 we search the shortest precision that survives Math.fround.

import { SqlError, SqlState } from './errors.js';

const float32Scratch = new Float32Array(1);
const float32Bits = new Uint32Array(float32Scratch.buffer);

/**
 * Shortest digits of a float4 exactly as PostgreSQL's Ryu (f2s.c, bounds not accepted, round half
 * even on an exact tie), emulated with exact bigint arithmetic. Returns digits and the decimal
 * exponent of the first digit.
 */
function shortestFloat4(value: number): { digits: string; exponent: number } {
  float32Scratch[0] = value;
  const bits = float32Bits[0]!;
  const ieeeMantissa = bits & 0x7fffff;
  const ieeeExponent = (bits >>> 23) & 0xff;
  // small integers print exactly (f2d_small_int)
  const smallE2 = ieeeExponent - 127 - 23;
  if (smallE2 >= -23 && smallE2 <= 0 && (ieeeMantissa & ((1 << -smallE2) - 1)) === 0) {
    const integer = String(Math.abs(value));
    return { digits: integer.replace(/0+$/, '') || '0', exponent: integer.length - 1 };
  }
  const e2 = ieeeExponent === 0 ? 1 - 127 - 23 - 2 : ieeeExponent - 127 - 23 - 2;
  const m2 = ieeeExponent === 0 ? ieeeMantissa : (1 << 23) | ieeeMantissa;
  const mmShift = ieeeMantissa !== 0 || ieeeExponent <= 1 ? 1 : 0;
  const mv = BigInt(4 * m2);
  const mp = BigInt(4 * m2 + 2);
  const mm = BigInt(4 * m2 - 1 - mmShift);
  // value = mv * 2^e2; work in units of 10^e10 with e10 low enough for ~12 spare digits
  const e10 = Math.floor(Math.log10(Math.abs(value))) - 12;
  const scaled = (m: bigint): { quotient: bigint; exact: boolean } => {
    // m * 2^e2 / 10^e10
    let numerator = m;
    let denominator = 1n;
    if (e2 >= 0) numerator <<= BigInt(e2);
    else denominator <<= BigInt(-e2);
    if (e10 >= 0) denominator *= 10n ** BigInt(e10);
    else numerator *= 10n ** BigInt(-e10);
    return { quotient: numerator / denominator, exact: numerator % denominator === 0n };
  };
  const r = scaled(mv);
  const p = scaled(mp);
  let vr = r.quotient;
  let vp = p.exact ? p.quotient - 1n : p.quotient; // the upper bound itself is excluded
  let vm = scaled(mm).quotient;
  let vrIsTrailingZeros = r.exact;
  let lastRemovedDigit = 0n;
  let removed = 0;
  while (vp / 10n > vm / 10n) {
    vrIsTrailingZeros &&= lastRemovedDigit === 0n;
    lastRemovedDigit = vr % 10n;
    vr /= 10n;
    vp /= 10n;
    vm /= 10n;
    removed++;
  }
  if (vrIsTrailingZeros && lastRemovedDigit === 5n && vr % 2n === 0n) lastRemovedDigit = 4n;
  const output = vr + (vr === vm || lastRemovedDigit >= 5n ? 1n : 0n);
  const text = output.toString();
  return { digits: text.replace(/0+$/, '') || '0', exponent: e10 + removed + text.length - 1 };
}

/** The shortest digits and decimal exponent of a finite nonzero |value|. */
function shortestDigits(value: number, isFloat4: boolean): { digits: string; exponent: number } {
  if (isFloat4) return shortestFloat4(value);
  const text = value.toExponential();
  // text is like "1.2345e+8"
  const exponentAt = text.indexOf('e');
  const digits = text.slice(0, exponentAt).replace('.', '').replace(/0+$/, '') || '0';
  return { digits, exponent: Number(text.slice(exponentAt + 1)) };
}

function layout(negative: boolean, digits: string, exponent: number, fixedLimit: number): string {
  const sign = negative ? '-' : '';
  if (exponent >= -4 && exponent < fixedLimit) {
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    if (digits.length <= exponent + 1) return sign + digits + '0'.repeat(exponent + 1 - digits.length);
    return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
  }
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const exponentText = Math.abs(exponent).toString().padStart(2, '0');
  return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${exponentText}`;
}

function special(value: number): string | undefined {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  return undefined;
}

/** %.{precision}g as C's printf. */
function printfG(value: number, precision: number): string {
  const p = Math.max(1, precision);
  const exponential = Math.abs(value).toExponential(p - 1);
  const exponent = Number(exponential.slice(exponential.indexOf('e') + 1));
  const digits = exponential.slice(0, exponential.indexOf('e')).replace('.', '').replace(/0+$/, '') || '0';
  return layout(value < 0, digits, exponent, p);
}

export function formatFloat8(value: number, extraFloatDigits = 1): string {
  const text = special(value);
  if (text !== undefined) return text;
  if (extraFloatDigits <= 0) return printfG(value, 15 + extraFloatDigits);
  // fast path: in [1e-4, 1e15) JavaScript's shortest fixed notation is PostgreSQL's text
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e15) return String(value);
  const { digits, exponent } = shortestDigits(magnitude, false);
  return layout(value < 0, digits, exponent, 15);
}

export function formatFloat4(value: number, extraFloatDigits = 1): string {
  const text = special(value);
  if (text !== undefined) return text;
  if (extraFloatDigits <= 0) return printfG(value, 6 + extraFloatDigits);
  const { digits, exponent } = shortestDigits(Math.abs(value), true);
  return layout(value < 0, digits, exponent, 6);
}

const floatPattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** float8in / float4in: PostgreSQL's accepted forms, 22P02 on bad syntax, 22003 when out of range. */
export function parseFloat(text: string, isFloat4: boolean): number {
  const typeName = isFloat4 ? 'real' : 'double precision';
  const trimmed = text.trim();
  let value: number;
  if (floatPattern.test(trimmed)) {
    value = Number(trimmed);
  } else {
    const lower = trimmed.toLowerCase();
    if (lower === 'nan' || lower === '+nan' || lower === '-nan') value = NaN;
    else if (lower === 'infinity' || lower === '+infinity' || lower === 'inf' || lower === '+inf') value = Infinity;
    else if (lower === '-infinity' || lower === '-inf') value = -Infinity;
    else throw new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type ${typeName}: "${text}"`);
    return value;
  }
  const outOfRange = () => new SqlError(SqlState.numericValueOutOfRange, `"${trimmed}" is out of range for type ${typeName}`);
  if (!Number.isFinite(value)) throw outOfRange();
  if (value === 0 && /[1-9]/.test(trimmed.replace(/[eE].*$/, ''))) throw outOfRange(); // underflow
  if (isFloat4) {
    const single = Math.fround(value);
    if (!Number.isFinite(single)) throw outOfRange();
    if (single === 0 && value !== 0) throw outOfRange();
    return single;
  }
  return value;
}
