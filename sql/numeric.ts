// Exact decimal numbers for the SQL type numeric: an unscaled bigint and a scale (number of
// digits after the point, PostgreSQL's "display scale"), plus NaN and +-Infinity as PostgreSQL 15
// has them. Never a JS double. This file owns the arithmetic with PostgreSQL's result-scale rules
// (numeric.c: add/sub keep the larger scale, mul adds scales, div picks at least 16 significant
// digits via select_div_scale, sqrt/ln/exp/power pick their scales the same way), rounding (half
// away from zero, as PostgreSQL), numeric(p,s) coercion, and text input/output.
//
// PostgreSQL stores digits in base 10000 and some of its scale rules are phrased in "weights" of
// that base; `baseWeight` reproduces that so our result scales are the same.

import { SqlError, SqlState } from './errors.js';

export type NumericSpecial = 'nan' | 'inf' | '-inf';

const MAX_DISPLAY_SCALE = 1000;
const MIN_SIG_DIGITS = 16;

const powersOfTen: bigint[] = [1n];
/** 10^n as a bigint, cached for small n. */
export function pow10(n: number): bigint {
  if (n < 256) {
    while (powersOfTen.length <= n) powersOfTen.push(powersOfTen[powersOfTen.length - 1]! * 10n);
    return powersOfTen[n]!;
  }
  return 10n ** BigInt(n);
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}

/** Divides and rounds half away from zero (PostgreSQL's numeric rounding). */
export function divRound(numerator: bigint, denominator: bigint): bigint {
  let quotient = numerator / denominator;
  const remainder = numerator % denominator;
  if (remainder !== 0n && 2n * abs(remainder) >= abs(denominator)) {
    quotient += (numerator < 0n) === (denominator < 0n) ? 1n : -1n;
  }
  return quotient;
}

function digitCount(value: bigint): number {
  return value === 0n ? 0 : abs(value).toString().length;
}

function overflow(): SqlError {
  return new SqlError(SqlState.numericValueOutOfRange, 'value overflows numeric format');
}

function divisionByZero(): SqlError {
  return new SqlError(SqlState.divisionByZero, 'division by zero');
}

export class Numeric {
  /** value = unscaled * 10^-scale; for special values unscaled is 0n. */
  readonly unscaled: bigint;
  readonly scale: number;
  readonly special: NumericSpecial | undefined;

  constructor(unscaled: bigint, scale: number, special?: NumericSpecial) {
    this.unscaled = unscaled;
    this.scale = scale;
    this.special = special;
  }

  static readonly NaN = new Numeric(0n, 0, 'nan');
  static readonly Infinity = new Numeric(0n, 0, 'inf');
  static readonly NegativeInfinity = new Numeric(0n, 0, '-inf');
  static readonly ZERO = new Numeric(0n, 0);
  static readonly ONE = new Numeric(1n, 0);

  static fromBigInt(value: bigint): Numeric {
    return new Numeric(value, 0);
  }

  static fromInteger(value: number): Numeric {
    return new Numeric(BigInt(value), 0);
  }

  /** float8 -> numeric as PostgreSQL: the value printed with 15 significant digits (%.15g). */
  static fromFloat8(value: number, significantDigits = 15): Numeric {
    if (Number.isNaN(value)) return Numeric.NaN;
    if (value === Infinity) return Numeric.Infinity;
    if (value === -Infinity) return Numeric.NegativeInfinity;
    return Numeric.parse(trimPrecision(value.toPrecision(significantDigits)));
  }

  /** float4 -> numeric: 6 significant digits (%.6g). */
  static fromFloat4(value: number): Numeric {
    return Numeric.fromFloat8(value, 6);
  }

  /** PostgreSQL's numeric_in. Throws 22P02 with PostgreSQL's message on bad input. */
  static parse(text: string, typeName = 'numeric'): Numeric {
    const result = Numeric.tryParse(text);
    if (result === undefined) {
      throw new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type ${typeName}: "${text}"`);
    }
    return result;
  }

  /** As parse, but undefined on bad syntax. */
  static tryParse(text: string): Numeric | undefined {
    const trimmed = text.trim();
    const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(trimmed);
    if (match === null) {
      const lower = trimmed.toLowerCase();
      if (lower === 'nan') return Numeric.NaN;
      if (lower === 'infinity' || lower === '+infinity' || lower === 'inf' || lower === '+inf') return Numeric.Infinity;
      if (lower === '-infinity' || lower === '-inf') return Numeric.NegativeInfinity;
      return undefined;
    }
    const integerDigits = match[2]!;
    const fractionDigits = match[3] ?? '';
    if (integerDigits.length === 0 && fractionDigits.length === 0) return undefined;
    let exponent = 0;
    if (match[4] !== undefined) {
      exponent = Number(match[4]);
      // PostgreSQL: exponent beyond +-(NUMERIC_MAX_DISPLAY_SCALE * 2) is rejected as out of range.
      if (!Number.isFinite(exponent) || Math.abs(exponent) > 2000) {
        throw new SqlError(SqlState.numericValueOutOfRange, 'value overflows numeric format');
      }
    }
    let unscaled = BigInt((integerDigits + fractionDigits) || '0');
    if (match[1] === '-') unscaled = -unscaled;
    let scale = fractionDigits.length - exponent;
    if (scale < 0) {
      unscaled *= pow10(-scale);
      scale = 0;
    }
    if (scale > MAX_DISPLAY_SCALE) {
      // PostgreSQL keeps at most 1000 digits after the point (rounded)
      unscaled = divRound(unscaled, pow10(scale - MAX_DISPLAY_SCALE));
      scale = MAX_DISPLAY_SCALE;
    }
    return new Numeric(unscaled, scale);
  }

  isNaN(): boolean {
    return this.special === 'nan';
  }

  isFinite(): boolean {
    return this.special === undefined;
  }

  /** -1, 0 or 1 (NaN: 0; use isNaN first). */
  sign(): number {
    if (this.special === 'inf') return 1;
    if (this.special === '-inf') return -1;
    return this.unscaled > 0n ? 1 : this.unscaled < 0n ? -1 : 0;
  }

  /** PostgreSQL's numeric_out. */
  toString(): string {
    if (this.special !== undefined) return this.special === 'nan' ? 'NaN' : this.special === 'inf' ? 'Infinity' : '-Infinity';
    if (this.scale === 0) return this.unscaled.toString();
    const negative = this.unscaled < 0n;
    const digits = abs(this.unscaled).toString().padStart(this.scale + 1, '0');
    const point = digits.length - this.scale;
    return `${negative ? '-' : ''}${digits.slice(0, point)}.${digits.slice(point)}`;
  }

  /** The value as a JS double (numeric -> float8). */
  toNumber(): number {
    if (this.special !== undefined) return this.special === 'nan' ? NaN : this.special === 'inf' ? Infinity : -Infinity;
    if (this.scale === 0) return Number(this.unscaled);
    return Number(this.toString());
  }

  /** Rounded half away from zero to an integer bigint (numeric -> int casts); undefined for NaN/Infinity. */
  toBigIntRounded(): bigint | undefined {
    if (this.special !== undefined) return undefined;
    if (this.scale === 0) return this.unscaled;
    return divRound(this.unscaled, pow10(this.scale));
  }

  /** The same value at another scale (rounding when reducing). */
  rescale(scale: number): Numeric {
    if (this.special !== undefined || scale === this.scale) return this;
    if (scale > this.scale) return new Numeric(this.unscaled * pow10(scale - this.scale), scale);
    return new Numeric(divRound(this.unscaled, pow10(this.scale - scale)), scale);
  }

  /** round(x, s): half away from zero; a negative s rounds left of the point; the result scale is max(s, 0). */
  round(scale = 0): Numeric {
    if (this.special !== undefined) return this;
    if (scale >= this.scale) return this.rescale(Math.min(scale, MAX_DISPLAY_SCALE));
    const factor = pow10(this.scale - scale);
    const rounded = divRound(this.unscaled, factor);
    if (scale >= 0) return new Numeric(rounded, scale);
    return new Numeric(rounded * pow10(-scale), 0);
  }

  /** trunc(x, s): toward zero. */
  trunc(scale = 0): Numeric {
    if (this.special !== undefined) return this;
    if (scale >= this.scale) return this.rescale(Math.min(scale, MAX_DISPLAY_SCALE));
    const factor = pow10(this.scale - scale);
    const truncated = this.unscaled / factor;
    if (scale >= 0) return new Numeric(truncated, scale);
    return new Numeric(truncated * pow10(-scale), 0);
  }

  ceil(): Numeric {
    if (this.special !== undefined) return this;
    const factor = pow10(this.scale);
    let quotient = this.unscaled / factor;
    if (this.unscaled > 0n && this.unscaled % factor !== 0n) quotient += 1n;
    return new Numeric(quotient, 0);
  }

  floor(): Numeric {
    if (this.special !== undefined) return this;
    const factor = pow10(this.scale);
    let quotient = this.unscaled / factor;
    if (this.unscaled < 0n && this.unscaled % factor !== 0n) quotient -= 1n;
    return new Numeric(quotient, 0);
  }

  abs(): Numeric {
    if (this.special === '-inf') return Numeric.Infinity;
    if (this.special !== undefined || this.unscaled >= 0n) return this;
    return new Numeric(-this.unscaled, this.scale);
  }

  negate(): Numeric {
    if (this.special === 'inf') return Numeric.NegativeInfinity;
    if (this.special === '-inf') return Numeric.Infinity;
    if (this.special === 'nan') return this;
    return new Numeric(-this.unscaled, this.scale);
  }

  /** sign(x) as numeric: -1, 0, 1 (scale 0), NaN for NaN. */
  signum(): Numeric {
    if (this.special === 'nan') return this;
    return Numeric.fromInteger(this.sign());
  }

  add(other: Numeric): Numeric {
    if (this.special !== undefined || other.special !== undefined) return addSpecial(this, other);
    if (this.scale === other.scale) return new Numeric(this.unscaled + other.unscaled, this.scale);
    if (this.scale > other.scale) return new Numeric(this.unscaled + other.unscaled * pow10(this.scale - other.scale), this.scale);
    return new Numeric(this.unscaled * pow10(other.scale - this.scale) + other.unscaled, other.scale);
  }

  subtract(other: Numeric): Numeric {
    return this.add(other.negate());
  }

  multiply(other: Numeric): Numeric {
    if (this.special !== undefined || other.special !== undefined) {
      if (this.special === 'nan' || other.special === 'nan') return Numeric.NaN;
      const signProduct = this.sign() * other.sign();
      if (signProduct === 0) return Numeric.NaN; // infinity * 0
      return signProduct > 0 ? Numeric.Infinity : Numeric.NegativeInfinity;
    }
    const product = new Numeric(this.unscaled * other.unscaled, this.scale + other.scale);
    return product.scale > MAX_DISPLAY_SCALE ? product.round(MAX_DISPLAY_SCALE) : product;
  }

  /** x / y with PostgreSQL's select_div_scale; 22012 on division by zero. */
  divide(other: Numeric): Numeric {
    if (this.special !== undefined || other.special !== undefined) {
      if (this.special === 'nan' || other.special === 'nan') return Numeric.NaN;
      if (this.special !== undefined) {
        if (other.special !== undefined) return Numeric.NaN;
        if (other.unscaled === 0n) throw divisionByZero();
        return this.sign() * other.sign() > 0 ? Numeric.Infinity : Numeric.NegativeInfinity;
      }
      return Numeric.ZERO; // finite / infinity
    }
    if (other.unscaled === 0n) throw divisionByZero();
    return this.divideToScale(other, divisionScale(this, other));
  }

  /** x / y rounded to the given scale (both finite, y nonzero). */
  divideToScale(other: Numeric, scale: number): Numeric {
    // x/y = (ux * 10^-sx) / (uy * 10^-sy); result unscaled = ux * 10^(scale + sy - sx) / uy
    const shift = scale + other.scale - this.scale;
    const numerator = shift >= 0 ? this.unscaled * pow10(shift) : this.unscaled;
    const denominator = shift >= 0 ? other.unscaled : other.unscaled * pow10(-shift);
    return new Numeric(divRound(numerator, denominator), scale);
  }

  /** Integer division truncated toward zero (div(x, y)). */
  divideTruncated(other: Numeric): Numeric {
    if (this.special !== undefined || other.special !== undefined) {
      if (this.special === 'nan' || other.special === 'nan') return Numeric.NaN;
      if (this.special !== undefined) {
        if (other.special !== undefined) return Numeric.NaN;
        if (other.unscaled === 0n) throw divisionByZero();
        return this.sign() * other.sign() > 0 ? Numeric.Infinity : Numeric.NegativeInfinity;
      }
      return Numeric.ZERO;
    }
    if (other.unscaled === 0n) throw divisionByZero();
    const scale = Math.max(this.scale, other.scale);
    const a = this.unscaled * pow10(scale - this.scale);
    const b = other.unscaled * pow10(scale - other.scale);
    return new Numeric(a / b, 0);
  }

  /** x % y: the sign of x; scale max(sx, sy). */
  modulo(other: Numeric): Numeric {
    if (this.special !== undefined || other.special !== undefined) {
      if (this.special === 'nan' || other.special === 'nan') return Numeric.NaN;
      if (this.special !== undefined) {
        if (other.special === undefined && other.unscaled === 0n) throw divisionByZero();
        return Numeric.NaN;
      }
      return this; // finite % infinity = the finite value
    }
    if (other.unscaled === 0n) throw divisionByZero();
    const scale = Math.max(this.scale, other.scale);
    const a = this.unscaled * pow10(scale - this.scale);
    const b = other.unscaled * pow10(scale - other.scale);
    return new Numeric(a % b, scale);
  }

  /** Three-way comparison with NaN greater than everything (PostgreSQL's btree order). */
  compare(other: Numeric): number {
    const a = specialRank(this);
    const b = specialRank(other);
    if (a !== b || a !== 0) return a - b;
    if (this.scale === other.scale) return this.unscaled < other.unscaled ? -1 : this.unscaled > other.unscaled ? 1 : 0;
    const scale = Math.max(this.scale, other.scale);
    const x = this.unscaled * pow10(scale - this.scale);
    const y = other.unscaled * pow10(scale - other.scale);
    return x < y ? -1 : x > y ? 1 : 0;
  }

  equals(other: Numeric): boolean {
    return this.compare(other) === 0;
  }

  /** The value with trailing fractional zeros removed (for hashing and trim_scale). */
  normalized(): Numeric {
    if (this.special !== undefined || this.scale === 0) return this;
    let unscaled = this.unscaled;
    let scale = this.scale;
    if (unscaled === 0n) return Numeric.ZERO;
    while (scale > 0 && unscaled % 10n === 0n) {
      unscaled /= 10n;
      scale--;
    }
    return new Numeric(unscaled, scale);
  }

  /** Number of significant decimal digits left of the point (0 for |x| < 1). */
  integerDigits(): number {
    if (this.special !== undefined) return 0;
    return Math.max(0, digitCount(this.unscaled) - this.scale);
  }

  /**
   * Coerces to numeric(precision, scale) (PostgreSQL's apply_typmod): rounds to `scale`, then
   * 22003 "numeric field overflow" when the integer part does not fit.
   */
  applyTypmod(typmod: number): Numeric {
    if (typmod < 4) return this;
    const precision = ((typmod - 4) >> 16) & 0xffff;
    // PostgreSQL 15 allows negative scales: an 11-bit two's complement field
    const scale = (((typmod - 4) & 0x7ff) ^ 1024) - 1024;
    if (this.special !== undefined) {
      if (this.special === 'nan') return this;
      throw new SqlError(SqlState.numericValueOutOfRange, 'numeric field overflow', {
        detail: `A field with precision ${precision}, scale ${scale} cannot hold an infinite value.`,
      });
    }
    const rounded = this.round(scale);
    const maxIntegerDigits = precision - scale;
    // |rounded| must be below 10^maxIntegerDigits; rounded.scale >= scale, so the exponent is >= precision
    if (abs(rounded.unscaled) >= pow10(maxIntegerDigits + rounded.scale)) {
      throw new SqlError(SqlState.numericValueOutOfRange, 'numeric field overflow', {
        detail: `A field with precision ${precision}, scale ${scale} must round to an absolute value less than ${maxIntegerDigits === 0 ? '1' : `10^${maxIntegerDigits}`}.`,
      });
    }
    return rounded;
  }

  /** sqrt with PostgreSQL's result scale; 2201F for negative input. */
  sqrt(): Numeric {
    if (this.special === 'nan' || this.special === 'inf') return this;
    if (this.sign() < 0) {
      throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'cannot take square root of a negative number');
    }
    const weight = baseWeight(this);
    const sweight = Math.trunc(((weight + 1) * 4) / 2) - 1;
    const scale = clampScale(Math.max(MIN_SIG_DIGITS - sweight, this.scale));
    // floor(sqrt(x * 10^(2*(scale+1)))) then round the last digit half up
    const shift = 2 * (scale + 1) - this.scale;
    const radicand = shift >= 0 ? this.unscaled * pow10(shift) : this.unscaled / pow10(-shift);
    const root = bigintSqrt(radicand);
    return new Numeric(divRound(root, 10n), scale);
  }

  /** ln(x) with PostgreSQL's result scale; 2201E for x <= 0. */
  ln(): Numeric {
    if (this.special === 'nan' || this.special === 'inf') return this;
    if (this.sign() <= 0) {
      throw new SqlError(SqlState.invalidArgumentForLogarithm, this.sign() === 0 ? 'cannot take logarithm of zero' : 'cannot take logarithm of a negative number');
    }
    const scale = clampScale(Math.max(MIN_SIG_DIGITS - estimateLnDecimalWeight(this), this.scale));
    return lnToScale(this, scale);
  }

  /** log(b, x) (and log10 = log(10, x)) with PostgreSQL's result scale (numeric_log). */
  log(base: Numeric): Numeric {
    if (this.special === 'nan' || base.special === 'nan') return Numeric.NaN;
    if (this.sign() <= 0 || base.sign() <= 0) {
      throw new SqlError(SqlState.invalidArgumentForLogarithm, (this.sign() === 0 || base.sign() === 0) ? 'cannot take logarithm of zero' : 'cannot take logarithm of a negative number');
    }
    if (this.special !== undefined || base.special !== undefined) {
      // log(b, inf) = inf for b > 1; log(inf, x) = 0
      if (base.special !== undefined) return this.special !== undefined ? Numeric.NaN : Numeric.ZERO;
      return base.compare(Numeric.ONE) > 0 ? Numeric.Infinity : base.compare(Numeric.ONE) < 0 ? Numeric.NegativeInfinity : Numeric.NaN;
    }
    const resultWeight = estimateLnDecimalWeight(this) - estimateLnDecimalWeight(base);
    const scale = clampScale(Math.max(MIN_SIG_DIGITS - resultWeight, base.scale, this.scale));
    const guard = scale + 20;
    const lnBase = lnToScale(base, guard);
    if (lnBase.unscaled === 0n) throw divisionByZero();
    return lnToScale(this, guard).divideToScale(lnBase, scale);
  }

  /** exp(x) with PostgreSQL's result scale. */
  exp(): Numeric {
    if (this.special === 'nan' || this.special === 'inf') return this;
    if (this.special === '-inf') return Numeric.ZERO;
    const approximate = this.toNumber();
    if (approximate > 6000) throw overflow();
    // PostgreSQL: dweight = (int) (val * 0.434294481903252); rscale = 16 - dweight, at least dscale
    let decimalWeight = Math.trunc(approximate * 0.434294481903252);
    if (Math.abs(approximate) < 0.01) decimalWeight = 0;
    const scale = clampScale(Math.max(MIN_SIG_DIGITS - decimalWeight, this.scale));
    if (approximate < -6000) return new Numeric(0n, scale);
    return expToScale(this, scale);
  }

  /** x ^ y: exact for integer y (rounded to PostgreSQL's scale), through exp/ln otherwise. */
  power(exponent: Numeric): Numeric {
    return numericPower(this, exponent);
  }
}

function trimPrecision(text: string): string {
  // %g drops trailing zeros of the mantissa
  const exponentAt = text.indexOf('e');
  let mantissa = exponentAt < 0 ? text : text.slice(0, exponentAt);
  const exponent = exponentAt < 0 ? '' : text.slice(exponentAt);
  if (mantissa.includes('.')) mantissa = mantissa.replace(/0+$/, '').replace(/\.$/, '');
  return mantissa + exponent;
}

function specialRank(value: Numeric): number {
  if (value.special === undefined) return 0;
  return value.special === 'nan' ? 3 : value.special === 'inf' ? 2 : -2;
}

function addSpecial(a: Numeric, b: Numeric): Numeric {
  if (a.special === 'nan' || b.special === 'nan') return Numeric.NaN;
  if (a.special !== undefined && b.special !== undefined) return a.special === b.special ? a : Numeric.NaN;
  return a.special !== undefined ? a : b;
}

function clampScale(scale: number): number {
  return Math.min(Math.max(scale, 0), MAX_DISPLAY_SCALE);
}

/**
 * PostgreSQL's "weight": the position of the first nonzero base-10000 digit relative to the
 * point (0 for 1..9999, -1 for 0.0001..0.9999, 1 for 10000..), and that digit.
 */
function baseWeightAndFirstDigit(value: Numeric): { weight: number; first: bigint } {
  if (value.unscaled === 0n) return { weight: 0, first: 0n };
  const alignedScale = Math.ceil(value.scale / 4) * 4;
  const aligned = abs(value.unscaled) * pow10(alignedScale - value.scale);
  const groups = Math.ceil(aligned.toString().length / 4);
  return { weight: groups - 1 - alignedScale / 4, first: aligned / pow10(4 * (groups - 1)) };
}

function baseWeight(value: Numeric): number {
  return baseWeightAndFirstDigit(value).weight;
}

/** PostgreSQL's select_div_scale. */
function divisionScale(a: Numeric, b: Numeric): number {
  const x = baseWeightAndFirstDigit(a);
  const y = baseWeightAndFirstDigit(b);
  let quotientWeight = x.weight - y.weight;
  if (x.first <= y.first) quotientWeight--;
  return clampScale(Math.max(MIN_SIG_DIGITS - quotientWeight * 4, a.scale, b.scale));
}

function bigintSqrt(value: bigint): bigint {
  if (value < 2n) return value;
  // Newton's method from a double estimate (or a power of two above the square root when the
  // value exceeds the double range)
  const estimate = Math.sqrt(Number(value));
  let x = Number.isFinite(estimate) ? BigInt(Math.floor(estimate)) : 1n << BigInt(Math.ceil((value.toString(16).length * 4) / 2));
  if (x === 0n) x = 1n;
  for (;;) {
    const next = (x + value / x) >> 1n;
    if (abs(next - x) <= 1n) {
      x = next;
      break;
    }
    x = next;
  }
  while (x * x > value) x -= 1n;
  while ((x + 1n) * (x + 1n) <= value) x += 1n;
  return x;
}

/** PostgreSQL's estimate_ln_dweight: the decimal weight of ln(x). */
function estimateLnDecimalWeight(value: Numeric): number {
  const approximate = value.toNumber();
  if (approximate >= 0.9 && approximate <= 1.1) {
    // ln(x) ~ x - 1: its decimal weight
    const difference = value.subtract(Numeric.ONE);
    if (difference.unscaled === 0n) return 0;
    return digitCount(difference.unscaled) - difference.scale - 1;
  }
  // use the digits to estimate ln(x) = ln(first digits) + weight * ln(10)
  const digits = digitCount(value.unscaled);
  const decimalWeight = digits - value.scale - 1;
  const leading = Number(abs(value.unscaled).toString().slice(0, 15).padEnd(1, '0')) / 10 ** (Math.min(digits, 15) - 1);
  const lnValue = Math.log(leading) + decimalWeight * Math.LN10;
  // (int) log10(fabs(ln_var)) in C: truncation toward zero
  return lnValue === 0 ? 0 : Math.trunc(Math.log10(Math.abs(lnValue)));
}

/** ln(m) for 1 <= m < 10 as a fixed-point bigint with `working` digits (series after square roots). */
function lnMantissa(unscaled: bigint, scale: number, working: number): bigint {
  const one = pow10(working);
  let x = scale <= working ? unscaled * pow10(working - scale) : unscaled / pow10(scale - working);
  let doublings = 0;
  while (x > (one * 11n) / 10n || x < (one * 9n) / 10n) {
    x = bigintSqrt(x * one);
    doublings++;
  }
  // ln(x) = 2 * atanh((x - 1) / (x + 1)) = 2 * sum z^(2k+1) / (2k+1)
  const z = ((x - one) * one) / (x + one);
  const zSquared = (z * z) / one;
  let term = z;
  let sum = 0n;
  for (let k = 1n; term !== 0n; k += 2n) {
    sum += term / k;
    term = (term * zSquared) / one;
  }
  return (sum * 2n) << BigInt(doublings);
}

let ln10Cache: { working: number; value: bigint } | undefined;

function ln10(working: number): bigint {
  if (ln10Cache === undefined || ln10Cache.working < working) ln10Cache = { working, value: lnMantissa(10n, 0, working + 5) / 100000n };
  return ln10Cache.value / pow10(ln10Cache.working - working);
}

/**
 * ln(x) for finite x > 0, rounded to `scale`: x = m * 10^k with 1 <= m < 10, so
 * ln(x) = ln(m) + k * ln(10), each in fixed point with guard digits.
 */
function lnToScale(value: Numeric, scale: number): Numeric {
  const digits = digitCount(value.unscaled);
  const exponent = digits - 1 - value.scale;
  const working = scale + 12 + String(Math.abs(exponent)).length;
  let result = lnMantissa(abs(value.unscaled), digits - 1, working);
  if (exponent !== 0) result += BigInt(exponent) * ln10(working);
  return new Numeric(result, working).round(scale);
}

/** exp(x) for finite x, rounded to `scale`. */
function expToScale(value: Numeric, scale: number): Numeric {
  const approximate = value.toNumber();
  const guard = 10 + Math.max(0, Math.ceil(approximate * 0.4343));
  const working = scale + guard;
  const one = pow10(working);
  let x = value.rescale(working).unscaled;
  // halve until |x| < 0.01, then square back
  let halvings = 0;
  while (abs(x) * 100n > one) {
    x /= 2n;
    halvings++;
  }
  let sum = one;
  let term = one;
  for (let k = 1n; term !== 0n; k++) {
    term = (term * x) / one / k;
    sum += term;
  }
  for (let i = 0; i < halvings; i++) sum = (sum * sum) / one;
  return new Numeric(sum, working).round(scale);
}

function numericPower(base: Numeric, exponent: Numeric): Numeric {
  if (base.special === 'nan' || exponent.special === 'nan') {
    // PostgreSQL: 1 ^ NaN = 1 and NaN ^ 0 = 1
    if (base.special === undefined && base.compare(Numeric.ONE) === 0) return Numeric.ONE.rescale(0);
    if (exponent.special === undefined && exponent.unscaled === 0n) return Numeric.ONE.rescale(0);
    return Numeric.NaN;
  }
  if (base.special === undefined && base.unscaled === 0n && exponent.sign() < 0) {
    throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'zero raised to a negative power is undefined');
  }
  const exponentIsInteger = exponent.special === undefined && exponent.normalized().scale === 0;
  if (base.special === undefined && base.sign() < 0 && !exponentIsInteger && exponent.special === undefined) {
    throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'a negative number raised to a non-integer power yields a complex result');
  }
  if (base.special !== undefined || exponent.special !== undefined) return powerSpecial(base, exponent);
  if (exponentIsInteger) {
    const n = exponent.normalized().unscaled;
    if (abs(n) <= 0x7fffffffn) {
      // PostgreSQL's power_var_int: the result weight estimated in double precision
      const estimate = base.unscaled === 0n ? 0 : Number(n) * approximateLog10(base);
      if (estimate > 32768 * 4) throw overflow();
      if (estimate + 1 < -MAX_DISPLAY_SCALE) return new Numeric(0n, MAX_DISPLAY_SCALE);
      // PostgreSQL 15 (power_var): 16 digits after the point, at least the base's scale
      const scale = clampScale(Math.max(MIN_SIG_DIGITS, base.scale));
      if (n === 0n) return new Numeric(pow10(scale), scale);
      if (base.unscaled === 0n) return new Numeric(0n, scale);
      const magnitude = abs(n);
      if (Number(magnitude) * digitCount(base.unscaled) > 200_000) {
        // too many exact digits: through exp(n * ln|x|), with the sign of an odd power
        const viaLogarithm = expToScale(lnToScale(base.abs(), scale + 20 + Math.abs(Math.trunc(estimate))).multiply(exponent), scale);
        return base.sign() < 0 && n % 2n !== 0n ? viaLogarithm.negate() : viaLogarithm;
      }
      const exact = new Numeric(base.unscaled ** magnitude, base.scale * Number(magnitude));
      if (n > 0n) return exact.round(scale);
      return Numeric.ONE.divideToScale(exact, scale);
    }
  }
  if (base.unscaled === 0n) return new Numeric(0n, MIN_SIG_DIGITS); // 0 ^ positive non-integer
  if (base.sign() < 0) {
    // only integer exponents get here (beyond int32): |x| ^ n, negative for odd n
    const magnitude = numericPower(base.abs(), exponent);
    return exponent.normalized().unscaled % 2n !== 0n ? magnitude.negate() : magnitude;
  }
  // non-integer exponent: exp(y * ln(x)) with enough digits
  const lnBase = lnToScale(base, 40);
  const product = lnBase.multiply(exponent);
  const approximate = product.toNumber();
  // PostgreSQL: |exp * ln(base)| beyond NUMERIC_MAX_RESULT_SCALE * 3.01 overflows or is zero
  if (approximate > 6020) throw overflow();
  if (approximate < -6020) return new Numeric(0n, MAX_DISPLAY_SCALE);
  let decimalWeight = Math.trunc(approximate * 0.434294481903252);
  if (Math.abs(approximate) < 0.01) decimalWeight = 0;
  const scale = clampScale(Math.max(MIN_SIG_DIGITS - decimalWeight, base.scale, exponent.scale));
  return expToScale(lnToScale(base, scale + 20 + Math.abs(decimalWeight)).multiply(exponent), scale);
}

/** log10(|x|) of a finite nonzero value, from its leading digits. */
function approximateLog10(value: Numeric): number {
  const digits = abs(value.unscaled).toString();
  const leading = Number(digits.slice(0, 17));
  return Math.log10(leading) + (digits.length - Math.min(17, digits.length)) - value.scale;
}

function powerSpecial(base: Numeric, exponent: Numeric): Numeric {
  // PostgreSQL 15 follows POSIX pow() for infinities
  const baseValue = base.toNumber();
  const exponentValue = exponent.toNumber();
  if (base.special === undefined && base.unscaled === 0n && exponent.special === '-inf') {
    throw new SqlError(SqlState.invalidArgumentForPowerFunction, 'zero raised to a negative power is undefined');
  }
  const result = Math.pow(baseValue, exponentValue);
  if (Number.isNaN(result)) return Numeric.NaN;
  if (result === Infinity) return Numeric.Infinity;
  if (result === -Infinity) return Numeric.NegativeInfinity;
  return result === 0 ? Numeric.ZERO : Numeric.ONE;
}
