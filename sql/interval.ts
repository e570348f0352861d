// The interval type: PostgreSQL's text output (IntervalStyle postgres and iso_8601), text input
// (the postgres verbose form with units, '@ ... ago', time fields, SQL-standard 'Y-M', and ISO 8601
// 'P1Y2M3DT4H5M6S'), comparison (a month counts as 30 days, a day as 24 hours, as PostgreSQL's
// interval_cmp), and the justify_* normalizations.

import { SqlError, SqlState } from './errors.js';
import { MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND } from './calendar.js';
import type { Interval } from './value.js';

export function makeInterval(months: number, days: number, micros: number): Interval {
  return { months, days, micros };
}

export const ZERO_INTERVAL: Interval = Object.freeze({ months: 0, days: 0, micros: 0 });

function pad2(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}

/** Seconds and fraction as PostgreSQL's AppendSeconds: "06", "06.789" (trailing zeros trimmed). */
export function formatSeconds(seconds: number, fractionMicros: number): string {
  let text = pad2(seconds);
  if (fractionMicros !== 0) text += '.' + String(fractionMicros).padStart(6, '0').replace(/0+$/, '');
  return text;
}

function postgresPart(parts: string[], value: number, unit: string, state: { isBefore: boolean }): void {
  if (value === 0) return;
  parts.push(`${state.isBefore && value > 0 ? '+' : ''}${value} ${unit}${value !== 1 ? 's' : ''}`);
  state.isBefore = value < 0;
}

/** PostgreSQL's interval_out with IntervalStyle postgres (the default) or iso_8601. */
export function formatInterval(value: Interval, intervalStyle = 'postgres'): string {
  const years = Math.trunc(value.months / 12);
  const months = value.months - years * 12;
  const days = value.days;
  let micros = value.micros;
  const hours = Math.trunc(micros / MICROS_PER_HOUR);
  micros -= hours * MICROS_PER_HOUR;
  const minutes = Math.trunc(micros / MICROS_PER_MINUTE);
  micros -= minutes * MICROS_PER_MINUTE;
  const seconds = Math.trunc(micros / MICROS_PER_SECOND);
  const fraction = micros - seconds * MICROS_PER_SECOND;
  if (intervalStyle.toLowerCase() === 'iso_8601') return formatIso(years, months, days, hours, minutes, seconds, fraction);
  const parts: string[] = [];
  const state = { isBefore: false };
  postgresPart(parts, years, 'year', state);
  postgresPart(parts, months, 'mon', state);
  postgresPart(parts, days, 'day', state);
  if (parts.length === 0 || hours !== 0 || minutes !== 0 || seconds !== 0 || fraction !== 0) {
    const minus = hours < 0 || minutes < 0 || seconds < 0 || fraction < 0;
    const sign = minus ? '-' : state.isBefore ? '+' : '';
    parts.push(`${sign}${pad2(Math.abs(hours))}:${pad2(Math.abs(minutes))}:${formatSeconds(Math.abs(seconds), Math.abs(fraction))}`);
  }
  return parts.join(' ');
}

function formatIso(years: number, months: number, days: number, hours: number, minutes: number, seconds: number, fraction: number): string {
  if (years === 0 && months === 0 && days === 0 && hours === 0 && minutes === 0 && seconds === 0 && fraction === 0) return 'PT0S';
  let text = 'P';
  if (years !== 0) text += `${years}Y`;
  if (months !== 0) text += `${months}M`;
  if (days !== 0) text += `${days}D`;
  if (hours !== 0 || minutes !== 0 || seconds !== 0 || fraction !== 0) {
    text += 'T';
    if (hours !== 0) text += `${hours}H`;
    if (minutes !== 0) text += `${minutes}M`;
    if (seconds !== 0 || fraction !== 0) {
      const negative = seconds < 0 || fraction < 0;
      let secondsText = String(Math.abs(seconds));
      if (fraction !== 0) secondsText += '.' + String(Math.abs(fraction)).padStart(6, '0').replace(/0+$/, '');
      text += `${negative ? '-' : ''}${secondsText}S`;
    }
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Input

type UnitKind = 'millennium' | 'century' | 'decade' | 'year' | 'month' | 'week' | 'day' | 'hour' | 'minute' | 'second' | 'millisecond' | 'microsecond';

const units: Record<string, UnitKind> = {};
function unit(kind: UnitKind, ...names: string[]): void {
  for (const name of names) units[name] = kind;
}
unit('millennium', 'millennium', 'millennia', 'millenniums', 'mil', 'mils');
unit('century', 'century', 'centuries', 'cent', 'c');
unit('decade', 'decade', 'decades', 'dec', 'decs');
unit('year', 'year', 'years', 'y', 'yr', 'yrs');
unit('month', 'month', 'months', 'mon', 'mons');
unit('week', 'week', 'weeks', 'w');
unit('day', 'day', 'days', 'd');
unit('hour', 'hour', 'hours', 'h', 'hr', 'hrs');
unit('minute', 'minute', 'minutes', 'm', 'min', 'mins');
unit('second', 'second', 'seconds', 's', 'sec', 'secs');
unit('millisecond', 'millisecond', 'milliseconds', 'ms', 'msec', 'msecs', 'mseconds', 'millisecon');
unit('microsecond', 'microsecond', 'microseconds', 'us', 'usec', 'usecs', 'useconds');

/** rint: half to even, as PostgreSQL rounds fractional fields. */
function rint(value: number): number {
  const floor = Math.floor(value);
  if (value - floor !== 0.5) return Math.round(value);
  return floor % 2 === 0 ? floor : floor + 1;
}

class Accumulator {
  months = 0;
  days = 0;
  micros = 0;

  addFractionalMonths(value: number): void {
    const whole = Math.trunc(value);
    this.months += whole;
    this.addFractionalDays((value - whole) * 30);
  }

  addFractionalDays(value: number): void {
    const whole = Math.trunc(value);
    this.days += whole;
    this.micros += rint((value - whole) * MICROS_PER_DAY);
  }

  /** PostgreSQL: whole part * scale plus rint(fraction * scale) (AdjustMicroseconds). */
  private addMicros(value: number, scale: number): void {
    const whole = Math.trunc(value);
    this.micros += whole * scale + rint((value - whole) * scale);
  }

  add(kind: UnitKind, value: number): void {
    switch (kind) {
      case 'millennium': this.months += Math.trunc(value) * 12000 + rint((value - Math.trunc(value)) * 12000); break;
      case 'century': this.months += Math.trunc(value) * 1200 + rint((value - Math.trunc(value)) * 1200); break;
      case 'decade': this.months += Math.trunc(value) * 120 + rint((value - Math.trunc(value)) * 120); break;
      case 'year': this.months += Math.trunc(value) * 12 + rint((value - Math.trunc(value)) * 12); break;
      case 'month': this.addFractionalMonths(value); break;
      case 'week': this.addFractionalDays(value * 7); break;
      case 'day': this.addFractionalDays(value); break;
      case 'hour': this.addMicros(value, MICROS_PER_HOUR); break;
      case 'minute': this.addMicros(value, MICROS_PER_MINUTE); break;
      case 'second': this.addMicros(value, MICROS_PER_SECOND); break;
      case 'millisecond': this.addMicros(value, 1000); break;
      case 'microsecond': this.addMicros(value, 1); break;
    }
  }
}

function syntaxError(text: string): SqlError {
  return new SqlError(SqlState.invalidDatetimeFormat, `invalid input syntax for type interval: "${text}"`);
}

function rangeError(text: string): SqlError {
  return new SqlError(SqlState.intervalFieldOverflow, `interval field value out of range: "${text}"`);
}

const isoPattern = /^(-?)P(?:([-+]?\d+(?:\.\d+)?)Y)?(?:([-+]?\d+(?:\.\d+)?)M)?(?:([-+]?\d+(?:\.\d+)?)W)?(?:([-+]?\d+(?:\.\d+)?)D)?(?:T(?:([-+]?\d+(?:\.\d+)?)H)?(?:([-+]?\d+(?:\.\d+)?)M)?(?:([-+]?\d+(?:\.\d*)?)S)?)?$/i;

/** PostgreSQL's interval_in (IntervalStyle does not affect input). */
export function parseInterval(text: string): Interval {
  const trimmed = text.trim();
  if (trimmed.length === 0) throw syntaxError(text);
  const iso = isoPattern.exec(trimmed);
  if (iso !== null && trimmed.length > 1 && !/^-?PT?$/i.test(trimmed)) {
    const accumulator = new Accumulator();
    const kinds: UnitKind[] = ['year', 'month', 'week', 'day', 'hour', 'minute', 'second'];
    for (let i = 0; i < kinds.length; i++) {
      const field = iso[i + 2];
      if (field !== undefined) accumulator.add(kinds[i]!, Number(field));
    }
    return finish(accumulator, iso[1] === '-', text);
  }
  const tokens = trimmed.toLowerCase().match(/[+-]?\d+(?:\.\d*)?(?::\d+(?:\.\d*)?){1,2}|[+-]?\d+-\d+|[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|[a-z]+|@|\S/g);
  if (tokens === null) throw syntaxError(text);
  const accumulator = new Accumulator();
  let ago = false;
  let sawField = false;
  // PostgreSQL rejects a unit given twice ("1 day 2 days")
  const seen = new Set<UnitKind>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '@') continue;
    if (token === 'ago') {
      if (i !== tokens.length - 1) throw syntaxError(text);
      ago = true;
      continue;
    }
    if (token.includes(':')) {
      const match = /^([+-]?)(\d+)(?:\.(\d*))?:(\d+(?:\.\d*)?)(?::(\d+(?:\.\d*)?))?$/.exec(token);
      if (match === null) throw syntaxError(text);
      const sign = match[1] === '-' ? -1 : 1;
      let micros: number;
      if (match[3] !== undefined) {
        // mm.frac:ss? PostgreSQL reads "1.5:10" as minutes:seconds; rare, treat as syntax error
        throw syntaxError(text);
      }
      const first = Number(match[2]);
      const second = Number(match[4]);
      if (match[5] !== undefined) {
        const third = Number(match[5]);
        if (second >= 60 || third > 60) throw rangeError(text);
        micros = first * MICROS_PER_HOUR + second * MICROS_PER_MINUTE + Math.round(third * MICROS_PER_SECOND);
      } else if (match[4]!.includes('.')) {
        // "mm:ss.fff"
        if (second > 60) throw rangeError(text);
        micros = first * MICROS_PER_MINUTE + Math.round(second * MICROS_PER_SECOND);
      } else {
        if (second >= 60) throw rangeError(text);
        micros = first * MICROS_PER_HOUR + second * MICROS_PER_MINUTE;
      }
      const claims: UnitKind[] = ['hour', 'minute', 'second', 'millisecond', 'microsecond'];
      if (claims.some((claim) => seen.has(claim))) throw syntaxError(text);
      for (const claim of claims) seen.add(claim);
      accumulator.micros += sign * micros;
      sawField = true;
      continue;
    }
    const yearMonth = /^([+-]?)(\d+)-(\d+)$/.exec(token);
    if (yearMonth !== null) {
      const sign = yearMonth[1] === '-' ? -1 : 1;
      const months = Number(yearMonth[3]);
      if (months > 11) throw rangeError(text);
      accumulator.months += sign * (Number(yearMonth[2]) * 12 + months);
      sawField = true;
      continue;
    }
    if (/^[+-]?(?:\d|\.\d)/.test(token)) {
      const value = Number(token);
      if (!Number.isFinite(value)) throw rangeError(text);
      const next = tokens[i + 1];
      if (next !== undefined && next in units) {
        const kind = units[next]!;
        // fractional seconds also claim the millisecond and microsecond fields (DTK_ALL_SECS_M)
        const claims: UnitKind[] = kind === 'second' && !Number.isInteger(value) ? ['second', 'millisecond', 'microsecond'] : [kind];
        if (claims.some((claim) => seen.has(claim))) throw syntaxError(text);
        for (const claim of claims) seen.add(claim);
        accumulator.add(kind, value);
        i++;
      } else if (next === undefined || next === 'ago') {
        // a bare number is seconds
        accumulator.add('second', value);
      } else if (next !== undefined && next.includes(':')) {
        // "1 02:03:04": a number before a time field is days
        accumulator.add('day', value);
      } else {
        throw syntaxError(text);
      }
      sawField = true;
      continue;
    }
    throw syntaxError(text);
  }
  if (!sawField) throw syntaxError(text);
  return finish(accumulator, ago, text);
}

function finish(accumulator: Accumulator, negate: boolean, text: string): Interval {
  const sign = negate ? -1 : 1;
  const months = accumulator.months * sign;
  const days = accumulator.days * sign;
  const micros = accumulator.micros * sign;
  if (Math.abs(months) > 2147483647 || Math.abs(days) > 2147483647 || !Number.isSafeInteger(micros)) throw rangeError(text);
  return { months: months + 0, days: days + 0, micros: micros + 0 };
}

// ---------------------------------------------------------------------------------------------
// Comparison and normalization

const MICROS_PER_MONTH_BIG = 30n * 86_400_000_000n;
const MICROS_PER_DAY_BIG = 86_400_000_000n;

/** The linear span PostgreSQL compares intervals by (months as 30 days, days as 24 hours). */
export function intervalSpan(value: Interval): bigint {
  return BigInt(value.months) * MICROS_PER_MONTH_BIG + BigInt(value.days) * MICROS_PER_DAY_BIG + BigInt(value.micros);
}

export function compareIntervals(a: Interval, b: Interval): number {
  // fast path: spans well inside 2^53
  if (Math.abs(a.months) < 3000 && Math.abs(b.months) < 3000 && Math.abs(a.days) < 90000 && Math.abs(b.days) < 90000 && Math.abs(a.micros) < 2 ** 52 && Math.abs(b.micros) < 2 ** 52) {
    const x = a.months * 2_592_000_000_000 + a.days * MICROS_PER_DAY + a.micros;
    const y = b.months * 2_592_000_000_000 + b.days * MICROS_PER_DAY + b.micros;
    if (Number.isSafeInteger(x) && Number.isSafeInteger(y)) return x < y ? -1 : x > y ? 1 : 0;
  }
  const x = intervalSpan(a);
  const y = intervalSpan(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** justify_hours: whole days out of the time part. */
export function justifyHours(value: Interval): Interval {
  let days = value.days + Math.trunc(value.micros / MICROS_PER_DAY);
  let micros = value.micros % MICROS_PER_DAY;
  if (days > 0 && micros < 0) {
    micros += MICROS_PER_DAY;
    days--;
  } else if (days < 0 && micros > 0) {
    micros -= MICROS_PER_DAY;
    days++;
  }
  return { months: value.months, days: days + 0, micros: micros + 0 };
}

/** justify_days: whole 30-day months out of the days. */
export function justifyDays(value: Interval): Interval {
  let months = value.months + Math.trunc(value.days / 30);
  let days = value.days % 30;
  if (months > 0 && days < 0) {
    days += 30;
    months--;
  } else if (months < 0 && days > 0) {
    days -= 30;
    months++;
  }
  return { months: months + 0, days: days + 0, micros: value.micros };
}

/** justify_interval: both, with the signs made consistent. */
export function justifyInterval(value: Interval): Interval {
  let months = value.months + Math.trunc(value.days / 30);
  let days = value.days % 30;
  let micros = value.micros;
  const wholeDays = Math.trunc(micros / MICROS_PER_DAY);
  days += wholeDays;
  micros -= wholeDays * MICROS_PER_DAY;
  months += Math.trunc(days / 30);
  days %= 30;
  if (months > 0 && (days < 0 || (days === 0 && micros < 0))) {
    days += 30;
    months--;
  } else if (months < 0 && (days > 0 || (days === 0 && micros > 0))) {
    days -= 30;
    months++;
  }
  if (days > 0 && micros < 0) {
    micros += MICROS_PER_DAY;
    days--;
  } else if (days < 0 && micros > 0) {
    micros -= MICROS_PER_DAY;
    days++;
  }
  return { months: months + 0, days: days + 0, micros: micros + 0 };
}

/** interval * factor exactly as PostgreSQL 15's interval_mul (fractions cascade down, TSROUND). */
export function multiplyInterval(value: Interval, factor: number): Interval {
  const monthsProduct = value.months * factor;
  const daysProduct = value.days * factor;
  if (!Number.isFinite(monthsProduct) || !Number.isFinite(daysProduct) || Math.abs(monthsProduct) > 2147483647 || Math.abs(daysProduct) > 2147483647) {
    throw new SqlError(SqlState.datetimeFieldOverflow, 'interval out of range');
  }
  const tsRound = (x: number) => rint(x * 1e6) / 1e6;
  const months = Math.trunc(monthsProduct);
  let days = Math.trunc(daysProduct);
  const monthRemainderDays = tsRound((value.months * factor - months) * 30);
  let secondRemainder = tsRound((value.days * factor - days + monthRemainderDays - Math.trunc(monthRemainderDays)) * 86400);
  if (Math.abs(secondRemainder) >= 86400) {
    days += Math.trunc(secondRemainder / 86400);
    secondRemainder -= Math.trunc(secondRemainder / 86400) * 86400;
  }
  days += Math.trunc(monthRemainderDays);
  const micros = rint(value.micros * factor + secondRemainder * MICROS_PER_SECOND);
  if (!Number.isFinite(micros) || Math.abs(micros) > 9.223372036854776e18) throw new SqlError(SqlState.datetimeFieldOverflow, 'interval out of range');
  return { months: months + 0, days: days + 0, micros: micros + 0 };
}
