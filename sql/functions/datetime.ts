// Date/time functions: now() and friends (stable: the statement time from the EvalContext),
// date_trunc, extract/date_part (numeric results with PostgreSQL 15's scales; date_part as float8),
// make_date/make_time/make_timestamp(tz)/make_interval, to_timestamp, age, justify_*, date_bin,
// AT TIME ZONE (timezone()), isfinite, to_char (to-char.ts). Wall-clock fields of a timestamptz are
// taken in the session time zone.

import { SqlError, SqlState } from '../errors.js';
import type { DataType } from '../types.js';
import type { Interval, Value } from '../value.js';
import type { EvalContext } from '../eval-context.js';
import { Numeric } from '../numeric.js';
import {
  MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
  civilFromDays, daysFromCivil, daysInMonth, dayOfWeek, splitTimestamp,
} from '../calendar.js';
import { fromLocal, toLocal } from '../datetime.js';
import { resolveTimeZone, localToUtc } from '../time-zone.js';
import { justifyDays, justifyHours, justifyInterval } from '../interval.js';
import { age, checkDate, checkTimestamp, timestampOutOfRange } from '../datetime-arithmetic.js';
import { defineFunction } from './registry.js';
import { formatDateTimePattern, formatIntervalPattern, formatNumberPattern } from './to-char.js';

// ---------------------------------------------------------------------------------------------
// current time (stable within a statement)

defineFunction('now', { args: [], returns: 'timestamptz', volatility: 'stable', impl: (_, c) => c.statementTimeMicros });
// proctime() (Flink's and RisingWave's PROCTIME()): the time a row is processed. In a view it is
// the time of the batch of changes that carries the row (one clock read per batch); in a query it
// is the statement's time, as now(). A view with proctime() is not a function of its inputs, so it
// never equals its query recomputed; rows replayed after a restart get new processing times.
defineFunction('proctime', { args: [], returns: 'timestamptz', volatility: 'stable', impl: (_, c) => c.processingTimeMicros ?? c.statementTimeMicros });
for (const name of ['current_timestamp', 'transaction_timestamp', 'statement_timestamp']) {
  defineFunction(name, { args: [], returns: 'timestamptz', volatility: 'stable', impl: (_, c) => c.statementTimeMicros });
}
defineFunction('clock_timestamp', { args: [], returns: 'timestamptz', volatility: 'volatile', impl: () => Date.now() * 1000 });
defineFunction('localtimestamp', { args: [], returns: 'timestamp', volatility: 'stable', impl: (_, c) => toLocal(c.statementTimeMicros, c.timeZone) });
defineFunction('current_date', { args: [], returns: 'date', volatility: 'stable', impl: (_, c) => Math.floor(toLocal(c.statementTimeMicros, c.timeZone) / MICROS_PER_DAY) });
defineFunction('current_time', { args: [], returns: 'time', volatility: 'stable', impl: (_, c) => {
  const local = toLocal(c.statementTimeMicros, c.timeZone);
  return local - Math.floor(local / MICROS_PER_DAY) * MICROS_PER_DAY;
} });
defineFunction('localtime', { args: [], returns: 'time', volatility: 'stable', impl: (_, c) => {
  const local = toLocal(c.statementTimeMicros, c.timeZone);
  return local - Math.floor(local / MICROS_PER_DAY) * MICROS_PER_DAY;
} });

// ---------------------------------------------------------------------------------------------
// field access

interface WallClock {
  year: number;
  month: number;
  day: number;
  days: number;
  timeMicros: number;
}

function wallClock(micros: number): WallClock {
  const { days, timeMicros } = splitTimestamp(micros);
  const { year, month, day } = civilFromDays(days);
  return { year, month, day, days, timeMicros };
}

/** ISO 8601 week number and ISO year of a day number. */
export function isoWeek(days: number): { week: number; year: number } {
  const weekday = (dayOfWeek(days) + 6) % 7; // Monday = 0
  const thursday = days - weekday + 3;
  const { year } = civilFromDays(thursday);
  const firstThursday = daysFromCivil(year, 1, 1);
  return { week: Math.floor((thursday - firstThursday) / 7) + 1, year };
}

function unsupported(unit: string, typeName: string): SqlError {
  return new SqlError(SqlState.featureNotSupported, `unit "${unit}" not supported for type ${typeName}`);
}

function unrecognized(unit: string, typeName: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, `unit "${unit}" not recognized for type ${typeName}`);
}

const fieldAliases: Record<string, string> = {
  microsecond: 'microseconds', microseconds: 'microseconds', us: 'microseconds', usec: 'microseconds', usecs: 'microseconds', useconds: 'microseconds',
  millisecond: 'milliseconds', milliseconds: 'milliseconds', ms: 'milliseconds', msec: 'milliseconds', msecs: 'milliseconds', mseconds: 'milliseconds',
  second: 'second', seconds: 'second', s: 'second', sec: 'second', secs: 'second',
  minute: 'minute', minutes: 'minute', m: 'minute', min: 'minute', mins: 'minute',
  hour: 'hour', hours: 'hour', h: 'hour', hr: 'hour', hrs: 'hour',
  day: 'day', days: 'day', d: 'day',
  week: 'week', weeks: 'week', w: 'week',
  month: 'month', months: 'month', mon: 'month', mons: 'month',
  quarter: 'quarter', qtr: 'quarter',
  year: 'year', years: 'year', y: 'year', yr: 'year', yrs: 'year',
  decade: 'decade', decades: 'decade', dec: 'decade', decs: 'decade',
  century: 'century', centuries: 'century', c: 'century', cent: 'century',
  millennium: 'millennium', millennia: 'millennium', millenniums: 'millennium', mil: 'millennium', mils: 'millennium',
  dow: 'dow', isodow: 'isodow', doy: 'doy', isoyear: 'isoyear', epoch: 'epoch', julian: 'julian', j: 'julian', jd: 'julian',
  timezone: 'timezone', timezone_hour: 'timezone_hour', timezone_minute: 'timezone_minute',
};

function normalizeField(field: string): string | undefined {
  // Most fields come lower-case (the parser's extract(hour FROM ...)): no new string for them.
  return fieldAliases[field] ?? fieldAliases[field.toLowerCase()];
}

function numericScaled(value: bigint, scale: number): Numeric {
  return new Numeric(value, scale);
}

function yearField(year: number): number {
  return year > 0 ? year : year - 1;
}

/** Fields shared by date and timestamp (local wall clock); undefined when not a date field. */
function dateField(field: string, clock: WallClock): Numeric | undefined {
  const { year, month, day, days } = clock;
  switch (field) {
    case 'day': return Numeric.fromInteger(day);
    case 'month': return Numeric.fromInteger(month);
    case 'quarter': return Numeric.fromInteger(Math.floor((month - 1) / 3) + 1);
    case 'week': return Numeric.fromInteger(isoWeek(days).week);
    case 'year': return Numeric.fromInteger(yearField(year));
    case 'decade': return Numeric.fromInteger(year >= 0 ? Math.floor(year / 10) : -Math.floor((8 - (year - 1)) / 10));
    case 'century': return Numeric.fromInteger(year > 0 ? Math.floor((year + 99) / 100) : -Math.floor((99 - (year - 1)) / 100));
    case 'millennium': return Numeric.fromInteger(year > 0 ? Math.floor((year + 999) / 1000) : -Math.floor((999 - (year - 1)) / 1000));
    case 'dow': return Numeric.fromInteger(dayOfWeek(days));
    case 'isodow': return Numeric.fromInteger(dayOfWeek(days) === 0 ? 7 : dayOfWeek(days));
    case 'doy': return Numeric.fromInteger(days - daysFromCivil(year, 1, 1) + 1);
    case 'isoyear': {
      const isoYear = isoWeek(days).year;
      return Numeric.fromInteger(isoYear > 0 ? isoYear : isoYear - 1);
    }
    default: return undefined;
  }
}

const JULIAN_OF_EPOCH = 2440588; // Julian day number of 1970-01-01

function timeField(field: string, timeMicros: number): Numeric | undefined {
  const secondMicros = timeMicros % MICROS_PER_MINUTE;
  switch (field) {
    case 'microseconds': return Numeric.fromInteger(secondMicros);
    case 'milliseconds': return numericScaled(BigInt(secondMicros), 3);
    case 'second': return numericScaled(BigInt(secondMicros), 6);
    case 'minute': return Numeric.fromInteger(Math.floor((timeMicros % MICROS_PER_HOUR) / MICROS_PER_MINUTE));
    case 'hour': return Numeric.fromInteger(Math.floor(timeMicros / MICROS_PER_HOUR));
    default: return undefined;
  }
}

const infiniteFields = new Set(['year', 'decade', 'century', 'millennium', 'julian', 'isoyear', 'epoch']);

function infiniteResult(field: string, value: number): Numeric | null {
  if (!infiniteFields.has(field)) return null;
  return value > 0 ? Numeric.Infinity : Numeric.NegativeInfinity;
}

function extractTimestamp(unit: string, micros: number, withZone: boolean, context: EvalContext): Numeric | null {
  const typeName = withZone ? 'timestamp with time zone' : 'timestamp without time zone';
  const field = normalizeField(unit);
  if (field === undefined) throw unrecognized(unit, typeName);
  if (!Number.isFinite(micros)) return infiniteResult(field, micros);
  if (field === 'epoch') return numericScaled(BigInt(micros), 6);
  let offsetSeconds = 0;
  let local = micros;
  if (withZone) {
    offsetSeconds = resolveTimeZone(context.timeZone).offsetAt(micros);
    local = micros + offsetSeconds * MICROS_PER_SECOND;
  }
  if (field === 'timezone' || field === 'timezone_hour' || field === 'timezone_minute') {
    if (!withZone) throw unsupported(unit, typeName);
    if (field === 'timezone') return Numeric.fromInteger(offsetSeconds);
    if (field === 'timezone_hour') return Numeric.fromInteger(Math.trunc(offsetSeconds / 3600));
    return Numeric.fromInteger(Math.trunc((offsetSeconds % 3600) / 60));
  }
  // A field of the time of day (Nexmark q14's hour) needs no calendar date.
  const time = timeField(field, splitTimestamp(local).timeMicros);
  if (time !== undefined) return time;
  const clock = wallClock(local);
  if (field === 'julian') {
    const dayPart = Numeric.fromInteger(clock.days + JULIAN_OF_EPOCH);
    return dayPart.add(Numeric.fromInteger(clock.timeMicros).divide(Numeric.fromInteger(MICROS_PER_DAY)));
  }
  const result = dateField(field, clock);
  if (result === undefined) throw unsupported(unit, typeName);
  return result;
}

function extractDate(unit: string, days: number): Numeric | null {
  const field = normalizeField(unit);
  if (field === undefined) throw unrecognized(unit, 'date');
  if (dateField(field, { ...civilFromDays(0), days: 0, timeMicros: 0 }) === undefined && field !== 'epoch' && field !== 'julian') throw unsupported(unit, 'date');
  if (!Number.isFinite(days)) return infiniteResult(field, days);
  if (field === 'epoch') return Numeric.fromInteger(days * 86400);
  if (field === 'julian') return Numeric.fromInteger(days + JULIAN_OF_EPOCH);
  const result = dateField(field, { ...civilFromDays(days), days, timeMicros: 0 });
  if (result === undefined) throw unsupported(unit, 'date');
  return result;
}

function extractTime(unit: string, micros: number): Numeric {
  const field = normalizeField(unit);
  if (field === undefined) throw unrecognized(unit, 'time without time zone');
  if (field === 'epoch') return numericScaled(BigInt(micros), 6);
  const result = timeField(field, micros);
  if (result === undefined) throw unsupported(unit, 'time without time zone');
  return result;
}

function extractInterval(unit: string, interval: Interval): Numeric {
  const field = normalizeField(unit);
  if (field === undefined) throw unrecognized(unit, 'interval');
  const years = Math.trunc(interval.months / 12);
  const months = interval.months % 12;
  const hours = Math.trunc(interval.micros / MICROS_PER_HOUR);
  const minuteMicros = interval.micros % MICROS_PER_HOUR;
  const secondMicros = interval.micros % MICROS_PER_MINUTE;
  switch (field) {
    case 'microseconds': return Numeric.fromInteger(secondMicros);
    case 'milliseconds': return numericScaled(BigInt(secondMicros), 3);
    case 'second': return numericScaled(BigInt(secondMicros), 6);
    case 'minute': return Numeric.fromInteger(Math.trunc(minuteMicros / MICROS_PER_MINUTE));
    case 'hour': return Numeric.fromInteger(hours);
    case 'day': return Numeric.fromInteger(interval.days);
    case 'month': return Numeric.fromInteger(months);
    case 'quarter': return Numeric.fromInteger(Math.trunc(months / 3) + 1);
    case 'year': return Numeric.fromInteger(years);
    case 'decade': return Numeric.fromInteger(Math.trunc(years / 10));
    case 'century': return Numeric.fromInteger(Math.trunc(years / 100));
    case 'millennium': return Numeric.fromInteger(Math.trunc(years / 1000));
    case 'epoch': {
      // PostgreSQL: a year is 365.25 days, a month 30 days
      const seconds = (1461n * BigInt(years) + 120n * BigInt(months) + 4n * BigInt(interval.days)) * 21600n;
      return numericScaled(seconds * 1000000n + BigInt(interval.micros), 6);
    }
    default: throw unsupported(unit, 'interval');
  }
}

defineFunction('extract', { args: ['text', 'timestamp'], returns: 'numeric', argumentsBorrowed: true, impl: ([f, v], c) => extractTimestamp(f as string, v as number, false, c) });
defineFunction('extract', { args: ['text', 'timestamptz'], returns: 'numeric', volatility: 'stable', argumentsBorrowed: true, impl: ([f, v], c) => extractTimestamp(f as string, v as number, true, c) });
defineFunction('extract', { args: ['text', 'date'], returns: 'numeric', impl: ([f, v]) => extractDate(f as string, v as number) });
defineFunction('extract', { args: ['text', 'time'], returns: 'numeric', impl: ([f, v]) => extractTime(f as string, v as number) });
defineFunction('extract', { args: ['text', 'interval'], returns: 'numeric', impl: ([f, v]) => extractInterval(f as string, v as Interval) });

function toFloat(value: Numeric | null): number | null {
  return value === null ? null : value.toNumber();
}
defineFunction('date_part', { args: ['text', 'timestamp'], returns: 'float8', argumentsBorrowed: true, impl: ([f, v], c) => toFloat(extractTimestamp(f as string, v as number, false, c)) });
defineFunction('date_part', { args: ['text', 'timestamptz'], returns: 'float8', volatility: 'stable', argumentsBorrowed: true, impl: ([f, v], c) => toFloat(extractTimestamp(f as string, v as number, true, c)) });
defineFunction('date_part', { args: ['text', 'date'], returns: 'float8', impl: ([f, v], c) => toFloat(extractTimestamp(f as string, Number.isFinite(v) ? (v as number) * MICROS_PER_DAY : (v as number), false, c)) });
defineFunction('date_part', { args: ['text', 'time'], returns: 'float8', impl: ([f, v]) => toFloat(extractTime(f as string, v as number)) });
defineFunction('date_part', { args: ['text', 'interval'], returns: 'float8', impl: ([f, v]) => toFloat(extractInterval(f as string, v as Interval)) });

// ---------------------------------------------------------------------------------------------
// date_trunc

/** Truncates local wall-clock microseconds to a unit; undefined for an unknown unit. */
function truncateLocal(field: string, local: number): number | undefined {
  const clock = wallClock(local);
  let { year, month, day } = clock;
  const time = clock.timeMicros;
  switch (field) {
    case 'microseconds': return local;
    case 'milliseconds': return clock.days * MICROS_PER_DAY + time - (time % 1000);
    case 'second': return clock.days * MICROS_PER_DAY + time - (time % MICROS_PER_SECOND);
    case 'minute': return clock.days * MICROS_PER_DAY + time - (time % MICROS_PER_MINUTE);
    case 'hour': return clock.days * MICROS_PER_DAY + time - (time % MICROS_PER_HOUR);
    case 'day': return clock.days * MICROS_PER_DAY;
    case 'week': return (clock.days - ((dayOfWeek(clock.days) + 6) % 7)) * MICROS_PER_DAY;
    case 'month': day = 1; break;
    case 'quarter': month = Math.floor((month - 1) / 3) * 3 + 1; day = 1; break;
    case 'year': month = 1; day = 1; break;
    case 'decade':
      year = year > 0 ? Math.floor(year / 10) * 10 : -Math.floor((8 - (year - 1)) / 10) * 10;
      month = 1; day = 1; break;
    case 'century':
      year = year > 0 ? Math.floor((year + 99) / 100) * 100 - 99 : -Math.floor((99 - (year - 1)) / 100) * 100 + 1;
      month = 1; day = 1; break;
    case 'millennium':
      year = year > 0 ? Math.floor((year + 999) / 1000) * 1000 - 999 : -Math.floor((999 - (year - 1)) / 1000) * 1000 + 1;
      month = 1; day = 1; break;
    default: return undefined;
  }
  return daysFromCivil(year, month, day) * MICROS_PER_DAY;
}

function dateTrunc(unit: string, micros: number, zone: string | undefined, typeName: string, explicitZone = false): number {
  const field = normalizeField(unit);
  if (field === undefined) throw unrecognized(unit, typeName);
  if (!Number.isFinite(micros)) return micros;
  if (zone === undefined) {
    const result = truncateLocal(field, micros);
    if (result === undefined) throw unsupported(unit, typeName);
    return result;
  }
  const timeZone = resolveTimeZone(zone, explicitZone ? 'expression' : 'setting');
  const offset = timeZone.offsetAt(micros);
  const result = truncateLocal(field, micros + offset * MICROS_PER_SECOND);
  if (result === undefined) throw unsupported(unit, typeName);
  // units of a day and more find the zone offset anew; smaller units keep the original offset
  const smallUnit = ['microseconds', 'milliseconds', 'second', 'minute', 'hour'].includes(field);
  return smallUnit ? result - offset * MICROS_PER_SECOND : localToUtc(result, timeZone);
}

defineFunction('date_trunc', { args: ['text', 'timestamp'], returns: 'timestamp', impl: ([f, v]) => dateTrunc(f as string, v as number, undefined, 'timestamp without time zone') });
defineFunction('date_trunc', { args: ['text', 'timestamptz'], returns: 'timestamptz', volatility: 'stable', impl: ([f, v], c) => dateTrunc(f as string, v as number, c.timeZone, 'timestamp with time zone') });
defineFunction('date_trunc', { args: ['text', 'timestamptz', 'text'], returns: 'timestamptz', impl: ([f, v, z]) => dateTrunc(f as string, v as number, z as string, 'timestamp with time zone', true) });
defineFunction('date_trunc', { args: ['text', 'interval'], returns: 'interval', impl: ([f, v]) => {
  const field = normalizeField(f as string);
  const interval = v as Interval;
  if (field === undefined) throw unrecognized(f as string, 'interval');
  const years = Math.trunc(interval.months / 12);
  const truncateMicros = (unit: number) => interval.micros - (interval.micros % unit);
  switch (field) {
    case 'microseconds': return interval;
    case 'milliseconds': return { ...interval, micros: truncateMicros(1000) };
    case 'second': return { ...interval, micros: truncateMicros(MICROS_PER_SECOND) };
    case 'minute': return { ...interval, micros: truncateMicros(MICROS_PER_MINUTE) };
    case 'hour': return { ...interval, micros: truncateMicros(MICROS_PER_HOUR) };
    case 'day': return { ...interval, micros: 0 };
    case 'month': return { months: interval.months, days: 0, micros: 0 };
    case 'quarter': return { months: years * 12 + Math.trunc((interval.months % 12) / 3) * 3, days: 0, micros: 0 };
    case 'year': return { months: years * 12, days: 0, micros: 0 };
    case 'decade': return { months: Math.trunc(years / 10) * 120, days: 0, micros: 0 };
    case 'century': return { months: Math.trunc(years / 100) * 1200, days: 0, micros: 0 };
    case 'millennium': return { months: Math.trunc(years / 1000) * 12000, days: 0, micros: 0 };
    default: throw unsupported(f as string, 'interval');
  }
} });

// ---------------------------------------------------------------------------------------------
// construction

function makeDate(year: number, month: number, day: number): number {
  const astronomical = year < 0 ? year + 1 : year;
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(astronomical, month)) {
    throw new SqlError(SqlState.datetimeFieldOverflow, `date field value out of range: ${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`);
  }
  return checkDate(daysFromCivil(astronomical, month, day));
}

function makeTime(hour: number, minute: number, second: number): number {
  if (hour < 0 || hour > 24 || minute < 0 || minute > 59 || second < 0 || second > 60 || (hour === 24 && (minute > 0 || second > 0))) {
    throw new SqlError(SqlState.datetimeFieldOverflow, `time field value out of range: ${hour}:${String(minute).padStart(2, '0')}:${String(second).padStart(2, '0')}`);
  }
  return hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + Math.round(second * MICROS_PER_SECOND);
}

defineFunction('make_date', { args: ['int4', 'int4', 'int4'], returns: 'date', impl: ([y, m, d]) => makeDate(y as number, m as number, d as number) });
defineFunction('make_time', { args: ['int4', 'int4', 'float8'], returns: 'time', impl: ([h, m, s]) => makeTime(h as number, m as number, s as number) });
defineFunction('make_timestamp', { args: ['int4', 'int4', 'int4', 'int4', 'int4', 'float8'], returns: 'timestamp', impl: ([y, mo, d, h, mi, s]) => {
  return checkTimestamp(makeDate(y as number, mo as number, d as number) * MICROS_PER_DAY + makeTime(h as number, mi as number, s as number));
} });
defineFunction('make_timestamptz', { args: ['int4', 'int4', 'int4', 'int4', 'int4', 'float8'], returns: 'timestamptz', volatility: 'stable', impl: ([y, mo, d, h, mi, s], c) => {
  return checkTimestamp(fromLocal(makeDate(y as number, mo as number, d as number) * MICROS_PER_DAY + makeTime(h as number, mi as number, s as number), c.timeZone));
} });
defineFunction('make_timestamptz', { args: ['int4', 'int4', 'int4', 'int4', 'int4', 'float8', 'text'], returns: 'timestamptz', impl: ([y, mo, d, h, mi, s, z]) => {
  return checkTimestamp(fromLocal(makeDate(y as number, mo as number, d as number) * MICROS_PER_DAY + makeTime(h as number, mi as number, s as number), z as string, 'expression'));
} });
defineFunction('make_interval', {
  args: ['int4', 'int4', 'int4', 'int4', 'int4', 'int4', 'float8'], returns: 'interval', impl: ([years, months, weeks, days, hours, minutes, seconds]) => ({
    months: (years as number) * 12 + (months as number),
    days: (weeks as number) * 7 + (days as number),
    micros: (hours as number) * MICROS_PER_HOUR + (minutes as number) * MICROS_PER_MINUTE + Math.round((seconds as number) * MICROS_PER_SECOND),
  }),
});
defineFunction('to_timestamp', { args: ['float8'], returns: 'timestamptz', impl: ([a]) => {
  const seconds = a as number;
  if (Number.isNaN(seconds)) throw new SqlError(SqlState.invalidParameterValue, 'timestamp cannot be NaN');
  if (!Number.isFinite(seconds)) return seconds;
  const micros = Math.round(seconds * MICROS_PER_SECOND);
  if (micros < -210866803200000000 || micros >= 9224318016000000000) throw new SqlError(SqlState.datetimeFieldOverflow, `timestamp out of range: "${seconds}"`);
  return checkTimestamp(micros);
} });

// ---------------------------------------------------------------------------------------------
// differences and normalization

defineFunction('age', { args: ['timestamp', 'timestamp'], returns: 'interval', impl: ([a, b]) => age(a as number, b as number) });
defineFunction('age', { args: ['timestamptz', 'timestamptz'], returns: 'interval', volatility: 'stable', impl: ([a, b], c) => age(toLocal(a as number, c.timeZone), toLocal(b as number, c.timeZone)) });
defineFunction('age', { args: ['timestamp'], returns: 'interval', volatility: 'stable', impl: ([a], c) => {
  const today = Math.floor(toLocal(c.statementTimeMicros, c.timeZone) / MICROS_PER_DAY) * MICROS_PER_DAY;
  return age(today, a as number);
} });
defineFunction('age', { args: ['timestamptz'], returns: 'interval', volatility: 'stable', impl: ([a], c) => {
  const today = Math.floor(toLocal(c.statementTimeMicros, c.timeZone) / MICROS_PER_DAY) * MICROS_PER_DAY;
  return age(today, toLocal(a as number, c.timeZone));
} });
defineFunction('justify_hours', { args: ['interval'], returns: 'interval', impl: ([a]) => justifyHours(a as Interval) });
defineFunction('justify_days', { args: ['interval'], returns: 'interval', impl: ([a]) => justifyDays(a as Interval) });
defineFunction('justify_interval', { args: ['interval'], returns: 'interval', impl: ([a]) => justifyInterval(a as Interval) });

function dateBin(stride: Interval, source: number, origin: number): number {
  if (stride.months !== 0) throw new SqlError(SqlState.featureNotSupported, 'timestamps cannot be binned into intervals containing months or years');
  const strideMicros = stride.days * MICROS_PER_DAY + stride.micros;
  if (strideMicros <= 0) throw new SqlError(SqlState.datetimeFieldOverflow, 'stride must be greater than zero');
  if (!Number.isFinite(source)) return source;
  const delta = source - origin;
  let bins = Math.trunc(delta / strideMicros);
  if (delta < 0 && delta % strideMicros !== 0) bins -= 1;
  return checkTimestamp(origin + bins * strideMicros);
}
defineFunction('date_bin', { args: ['interval', 'timestamp', 'timestamp'], returns: 'timestamp', impl: ([s, t, o]) => dateBin(s as Interval, t as number, o as number) });
defineFunction('date_bin', { args: ['interval', 'timestamptz', 'timestamptz'], returns: 'timestamptz', impl: ([s, t, o]) => dateBin(s as Interval, t as number, o as number) });

// AT TIME ZONE
defineFunction('timezone', { args: ['text', 'timestamptz'], returns: 'timestamp', impl: ([z, t]) => (Number.isFinite(t) ? toLocal(t as number, z as string, 'expression') : t) });
defineFunction('timezone', { args: ['text', 'timestamp'], returns: 'timestamptz', impl: ([z, t]) => (Number.isFinite(t) ? checkTimestamp(fromLocal(t as number, z as string, 'expression')) : t) });
defineFunction('timezone', { args: ['interval', 'timestamptz'], returns: 'timestamp', impl: ([z, t]) => (Number.isFinite(t) ? (t as number) + (z as Interval).micros : t) });
defineFunction('timezone', { args: ['interval', 'timestamp'], returns: 'timestamptz', impl: ([z, t]) => (Number.isFinite(t) ? (t as number) - (z as Interval).micros : t) });

defineFunction('isfinite', { args: ['date'], returns: 'bool', impl: ([a]) => Number.isFinite(a) });
defineFunction('isfinite', { args: ['timestamp'], returns: 'bool', impl: ([a]) => Number.isFinite(a) });
defineFunction('isfinite', { args: ['timestamptz'], returns: 'bool', impl: ([a]) => Number.isFinite(a) });
defineFunction('isfinite', { args: ['interval'], returns: 'bool', impl: () => true });

// ---------------------------------------------------------------------------------------------
// to_char

defineFunction('to_char', { args: ['timestamp', 'text'], returns: 'text', impl: ([v, f], c) => formatDateTimePattern(v as number, f as string, undefined, c) });
defineFunction('to_char', { args: ['timestamptz', 'text'], returns: 'text', volatility: 'stable', impl: ([v, f], c) => formatDateTimePattern(v as number, f as string, c.timeZone, c) });
defineFunction('to_char', { args: ['interval', 'text'], returns: 'text', impl: ([v, f]) => formatIntervalPattern(v as Interval, f as string) });
for (const name of ['int4', 'int8', 'float4', 'float8', 'numeric'] as const) {
  defineFunction('to_char', { args: [name, 'text'], returns: 'text', impl: ([v, f]) => formatNumberPattern(toNumeric(v!, name), f as string) });
}

function toNumeric(value: Value, name: DataType['name']): Numeric {
  switch (name) {
    case 'int4': return Numeric.fromInteger(value as number);
    case 'int8': return Numeric.fromBigInt(value as bigint);
    case 'float4': case 'float8': {
      const x = value as number;
      if (!Number.isFinite(x)) return Number.isNaN(x) ? Numeric.NaN : x > 0 ? Numeric.Infinity : Numeric.NegativeInfinity;
      return Numeric.parse(x.toPrecision(name === 'float4' ? 9 : 17));
    }
    default: return value as Numeric;
  }
}

void timestampOutOfRange;
