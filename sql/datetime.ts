// date, time, timestamp and timestamptz: PostgreSQL 15's text output (DateStyle ISO, MDY) and text
// input (ISO 8601 with ' ' or 'T', MDY numeric dates, month names, BC/AD, AM/PM, time zone suffixes,
// the special words epoch/infinity/now/today/tomorrow/yesterday/allballs), with PostgreSQL's error
// messages: 22007 for syntax, 22008 for a field out of range. Values follow value.ts: days since
// 1970-01-01, microseconds since midnight, microseconds since 1970-01-01 UTC.

import { SqlError, SqlState } from './errors.js';
import {
  MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
  civilFromDays, daysFromCivil, daysInMonth, splitTimestamp,
  MIN_DATE_DAYS, MAX_DATE_DAYS, MIN_TIMESTAMP_MICROS, END_TIMESTAMP_MICROS,
} from './calendar.js';
import { formatSeconds } from './interval.js';
import { formatOffset, localToUtc, resolveTimeZone, tryResolveTimeZone, type TimeZone } from './time-zone.js';

/** Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01. */
export const POSTGRES_EPOCH_MICROS = 946_684_800_000_000;

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

function formatYmd(days: number): string {
  const { year, month, day } = civilFromDays(days);
  const bc = year <= 0;
  return `${pad(bc ? 1 - year : year, 4)}-${pad(month, 2)}-${pad(day, 2)}${bc ? ' BC' : ''}`;
}

function formatClock(timeMicros: number): string {
  const hours = Math.floor(timeMicros / MICROS_PER_HOUR);
  const minutes = Math.floor((timeMicros % MICROS_PER_HOUR) / MICROS_PER_MINUTE);
  const seconds = Math.floor((timeMicros % MICROS_PER_MINUTE) / MICROS_PER_SECOND);
  const fraction = timeMicros % MICROS_PER_SECOND;
  return `${pad(hours, 2)}:${pad(minutes, 2)}:${formatSeconds(seconds, fraction)}`;
}

export function formatDate(days: number): string {
  if (days === Infinity) return 'infinity';
  if (days === -Infinity) return '-infinity';
  return formatYmd(days);
}

export function formatTime(micros: number): string {
  return formatClock(micros);
}

export function formatTimestamp(micros: number): string {
  if (micros === Infinity) return 'infinity';
  if (micros === -Infinity) return '-infinity';
  const { days, timeMicros } = splitTimestamp(micros);
  const ymd = formatYmd(days);
  if (ymd.endsWith(' BC')) return `${ymd.slice(0, -3)} ${formatClock(timeMicros)} BC`;
  return `${ymd} ${formatClock(timeMicros)}`;
}

export function formatTimestamptz(micros: number, timeZone: string): string {
  if (micros === Infinity) return 'infinity';
  if (micros === -Infinity) return '-infinity';
  const zone = resolveTimeZone(timeZone);
  const offset = zone.offsetAt(micros);
  const { days, timeMicros } = splitTimestamp(micros + offset * MICROS_PER_SECOND);
  const ymd = formatYmd(days);
  const suffix = formatOffset(offset);
  if (ymd.endsWith(' BC')) return `${ymd.slice(0, -3)} ${formatClock(timeMicros)}${suffix} BC`;
  return `${ymd} ${formatClock(timeMicros)}${suffix}`;
}

/** The wall-clock time of a timestamptz in a zone, as a timestamp (timestamptz -> timestamp). */
export function toLocal(micros: number, timeZone: string, usage: 'setting' | 'expression' = 'setting'): number {
  if (!Number.isFinite(micros)) return micros;
  return micros + resolveTimeZone(timeZone, usage).offsetAt(micros) * MICROS_PER_SECOND;
}

/** The instant of a wall-clock timestamp in a zone (timestamp -> timestamptz). */
export function fromLocal(micros: number, timeZone: string, usage: 'setting' | 'expression' = 'setting'): number {
  if (!Number.isFinite(micros)) return micros;
  return localToUtc(micros, resolveTimeZone(timeZone, usage));
}

/** Rounds microseconds to `precision` fractional digits, half away from zero from 2000-01-01 as PostgreSQL. */
export function roundTimestampPrecision(micros: number, precision: number): number {
  if (precision < 0 || precision >= 6 || !Number.isFinite(micros)) return micros;
  const scale = 10 ** (6 - precision);
  const relative = micros - POSTGRES_EPOCH_MICROS;
  const magnitude = Math.floor((Math.abs(relative) + scale / 2) / scale) * scale;
  return (relative < 0 ? -magnitude : magnitude) + POSTGRES_EPOCH_MICROS;
}

export function roundTimePrecision(micros: number, precision: number): number {
  if (precision < 0 || precision >= 6) return micros;
  const scale = 10 ** (6 - precision);
  return Math.floor((micros + scale / 2) / scale) * scale;
}

// ---------------------------------------------------------------------------------------------
// Input

type Kind = 'date' | 'time' | 'timestamp' | 'timestamptz';

const typeNames: Record<Kind, string> = {
  date: 'date',
  time: 'time',
  timestamp: 'timestamp',
  timestamptz: 'timestamp with time zone',
};

function syntaxError(kind: Kind, text: string): SqlError {
  return new SqlError(SqlState.invalidDatetimeFormat, `invalid input syntax for type ${typeNames[kind]}: "${text}"`);
}

function fieldRangeError(text: string): SqlError {
  return new SqlError(SqlState.datetimeFieldOverflow, `date/time field value out of range: "${text}"`);
}

function rangeError(kind: Kind, text: string): SqlError {
  if (kind === 'date') return new SqlError(SqlState.datetimeFieldOverflow, `date out of range: "${text}"`);
  return new SqlError(SqlState.datetimeFieldOverflow, `timestamp out of range: "${text}"`);
}

const monthNames: Record<string, number> = {
  jan: 1, january: 1, feb: 2, february: 2, mar: 3, march: 3, apr: 4, april: 4, may: 5, jun: 6, june: 6,
  jul: 7, july: 7, aug: 8, august: 8, sep: 9, sept: 9, september: 9, oct: 10, october: 10,
  nov: 11, november: 11, dec: 12, december: 12,
};

const dayNames = new Set([
  'sun', 'sunday', 'mon', 'monday', 'tue', 'tues', 'tuesday', 'wed', 'wednesday', 'thu', 'thur', 'thurs', 'thursday', 'fri', 'friday', 'sat', 'saturday',
]);

interface Parsed {
  year?: number;
  month?: number;
  day?: number;
  hour?: number;
  minute?: number;
  second?: number;
  micros?: number;
  bc: boolean;
  pm?: boolean;
  am?: boolean;
  /** Explicit zone: a fixed offset in seconds east, or a zone. */
  offsetSeconds?: number;
  zone?: TimeZone;
  special?: 'epoch' | 'infinity' | '-infinity' | 'now' | 'today' | 'tomorrow' | 'yesterday' | 'allballs';
}

interface ParseEnvironment {
  readonly timeZone: string;
  readonly statementTimeMicros: number;
}

const specials = new Set(['epoch', 'infinity', '+infinity', '-infinity', 'now', 'today', 'tomorrow', 'yesterday', 'allballs']);

function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const difference = value - floor;
  if (difference !== 0.5) return Math.round(value);
  return floor % 2 === 0 ? floor : floor + 1;
}

function parseFraction(digits: string | undefined): number {
  if (digits === undefined || digits.length === 0) return 0;
  // round to microseconds as PostgreSQL: rint, half to even
  return roundHalfEven(Number(`0.${digits}`) * MICROS_PER_SECOND);
}

/** Splits a date/time string into PostgreSQL-like fields. Returns undefined on bad syntax. */
function decode(text: string, kind: Kind): Parsed | undefined {
  const result: Parsed = { bc: false };
  let rest = text.trim().toLowerCase();
  if (rest.length === 0) return undefined;
  if (specials.has(rest)) {
    result.special = (rest === '+infinity' ? 'infinity' : rest) as Parsed['special'];
    return result;
  }
  // ISO 'T' separator between date and time
  rest = rest.replace(/^(\d{4,}-\d{1,2}-\d{1,2})t(?=\d)/, '$1 ').replace(/^(\d{8})t(?=\d)/, '$1 ');
  const pattern = /\s+|,|(\d+[-/.]\d+[-/.]\d+)|(\d+[-/][a-z]+[-/]\d+)|([a-z]+[-/]\d+[-/]\d+)|(\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?)|(\d+(?:\.\d*)?)|([a-z][a-z_/+\-0-9]*)|([+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)|(\S)/gy;
  const numbers: string[] = [];
  let match: RegExpExecArray | null;
  let haveTime = false;
  let haveDate = false;
  while ((match = pattern.exec(rest)) !== null) {
    const [token, dateToken, dayMonthYear, monthDayYear, timeToken, numberToken, word, offsetToken, other] = match;
    if (other !== undefined) return undefined;
    if (token.trim() === '' || token === ',') continue;
    if (dateToken !== undefined) {
      if (haveDate) return undefined;
      haveDate = true;
      const parts = dateToken.split(/[-/.]/);
      const [a, b, c] = parts as [string, string, string];
      if (a.length >= 3) {
        result.year = Number(a);
        result.month = Number(b);
        result.day = Number(c);
      } else {
        // MDY
        result.month = Number(a);
        result.day = Number(b);
        result.year = expandYear(c);
      }
      continue;
    }
    if (dayMonthYear !== undefined || monthDayYear !== undefined) {
      if (haveDate) return undefined;
      haveDate = true;
      const parts = (dayMonthYear ?? monthDayYear)!.split(/[-/]/);
      const monthIndex = dayMonthYear !== undefined ? 1 : 0;
      const month = monthNames[parts[monthIndex]!];
      if (month === undefined) return undefined;
      result.month = month;
      if (dayMonthYear !== undefined) {
        if (parts[0]!.length >= 3) {
          result.year = Number(parts[0]);
          result.day = Number(parts[2]);
        } else {
          result.day = Number(parts[0]);
          result.year = expandYear(parts[2]!);
        }
      } else {
        result.day = Number(parts[1]);
        result.year = expandYear(parts[2]!);
      }
      continue;
    }
    if (timeToken !== undefined) {
      if (haveTime) return undefined;
      haveTime = true;
      const timeMatch = /^(\d+):(\d+)(?::(\d+)(?:\.(\d*))?)?$/.exec(timeToken)!;
      result.hour = Number(timeMatch[1]);
      result.minute = Number(timeMatch[2]);
      result.second = Number(timeMatch[3] ?? 0);
      result.micros = parseFraction(timeMatch[4]);
      if (result.minute > 59 || result.second > 60) return { ...result, hour: -1 };
      continue;
    }
    if (numberToken !== undefined) {
      numbers.push(numberToken);
      continue;
    }
    if (offsetToken !== undefined) {
      if (!haveTime && !haveDate && numbers.length === 0) return undefined;
      const offset = /^([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(offsetToken)!;
      const seconds = Number(offset[2]) * 3600 + Number(offset[3] ?? 0) * 60 + Number(offset[4] ?? 0);
      result.offsetSeconds = offset[1] === '-' ? -seconds : seconds;
      continue;
    }
    if (word !== undefined) {
      if (word in monthNames) {
        if (result.month !== undefined) return undefined;
        result.month = monthNames[word];
        continue;
      }
      if (dayNames.has(word)) continue;
      if (word === 'bc') {
        result.bc = true;
        continue;
      }
      if (word === 'ad') continue;
      if (word === 'am' || word === 'a.m.') {
        result.am = true;
        continue;
      }
      if (word === 'pm') {
        result.pm = true;
        continue;
      }
      if (word === 't') continue;
      if (word === 'allballs') {
        result.hour = 0;
        result.minute = 0;
        result.second = 0;
        result.micros = 0;
        haveTime = true;
        continue;
      }
      if (word === 'today' || word === 'tomorrow' || word === 'yesterday' || word === 'now' || word === 'epoch') {
        result.special = word;
        continue;
      }
      // a time zone name or abbreviation
      const zone = tryResolveTimeZone(word.includes('/') ? restoreCase(text, word) : word);
      if (zone === undefined || /^[+-]?\d/.test(word)) {
        if (!word.includes('/')) return undefined;
        throw new SqlError(SqlState.invalidParameterValue, `time zone "${word}" not recognized`);
      }
      result.zone = zone;
      continue;
    }
  }
  // plain numbers: compact ISO dates (YYYYMMDD), or day/year with a month name
  for (const number of numbers) {
    if (!haveDate && result.month === undefined && /^\d{6}$/.test(number) && numbers.length === 1) {
      result.year = expandYear(number.slice(0, 2));
      result.month = Number(number.slice(2, 4));
      result.day = Number(number.slice(4, 6));
      haveDate = true;
      continue;
    }
    if (!haveDate && result.month === undefined && /^\d{4}\.\d{3}$/.test(number)) {
      // year.day-of-year
      const dayOfYear = Number(number.slice(5));
      const start = daysFromCivil(Number(number.slice(0, 4)), 1, 1);
      const date = civilFromDays(start + dayOfYear - 1);
      if (dayOfYear < 1 || dayOfYear > 366 || date.year !== Number(number.slice(0, 4))) return { ...result, hour: -1, year: 1, month: 1, day: 1 };
      result.year = date.year;
      result.month = date.month;
      result.day = date.day;
      haveDate = true;
      continue;
    }
    if (!haveDate && result.month === undefined && /^\d{8}$/.test(number)) {
      result.year = Number(number.slice(0, 4));
      result.month = Number(number.slice(4, 6));
      result.day = Number(number.slice(6, 8));
      haveDate = true;
      continue;
    }
    if (haveDate && !haveTime && /^\d{6}(\.\d*)?$/.test(number)) {
      result.hour = Number(number.slice(0, 2));
      result.minute = Number(number.slice(2, 4));
      result.second = Number(number.slice(4, 6));
      result.micros = parseFraction(number.split('.')[1]);
      haveTime = true;
      continue;
    }
    if (number.includes('.')) return undefined;
    if (result.month !== undefined && !haveDate) {
      if (result.day === undefined && number.length <= 2) result.day = Number(number);
      else if (result.year === undefined) result.year = number.length <= 2 ? expandYear(number) : Number(number);
      else return undefined;
      continue;
    }
    if (haveTime && result.offsetSeconds === undefined && result.year === undefined && number.length >= 3) {
      result.year = Number(number);
      continue;
    }
    return undefined;
  }
  if (result.month !== undefined && result.day !== undefined && result.year === undefined && !haveDate && kind !== 'time') return undefined;
  if (result.pm || result.am) {
    if (result.hour === undefined || result.hour > 12) return { ...result, hour: -1 };
    if (result.pm && result.hour !== 12) result.hour += 12;
    if (result.am && result.hour === 12) result.hour = 0;
  }
  return result;
}

function restoreCase(original: string, lowerWord: string): string {
  const index = original.toLowerCase().indexOf(lowerWord);
  return index < 0 ? lowerWord : original.slice(index, index + lowerWord.length);
}

function expandYear(text: string): number {
  const year = Number(text);
  // PostgreSQL: a two-digit year is 1970..2069
  if (text.length <= 2) return year < 70 ? 2000 + year : 1900 + year;
  return year;
}

function validateDate(parsed: Parsed, text: string): number {
  let year = parsed.year!;
  if (parsed.bc) {
    if (year <= 0) throw fieldRangeError(text);
    year = 1 - year;
  } else if (year === 0) {
    throw fieldRangeError(text);
  }
  const month = parsed.month!;
  const day = parsed.day!;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) throw fieldRangeError(text);
  return daysFromCivil(year, month, day);
}

function timeOfDay(parsed: Parsed, text: string): number {
  const hour = parsed.hour ?? 0;
  const minute = parsed.minute ?? 0;
  const second = parsed.second ?? 0;
  const micros = parsed.micros ?? 0;
  if (hour < 0 || hour > 24 || minute > 59 || second > 60 || (hour === 24 && (minute > 0 || second > 0 || micros > 0))) {
    throw fieldRangeError(text);
  }
  return hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + second * MICROS_PER_SECOND + micros;
}

function todayDays(environment: ParseEnvironment): number {
  const local = toLocal(environment.statementTimeMicros, environment.timeZone);
  return Math.floor(local / MICROS_PER_DAY);
}

const isoDate = /^(\d{4})-(\d{2})-(\d{2})$/;
const isoTimestamp = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/** The common ISO forms without the general decoder; undefined when the text needs it. */
function fastIsoDays(year: string, month: string, day: string): number | undefined {
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  if (y === 0 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return undefined;
  return daysFromCivil(y, m, d);
}

function fastTimestamp(text: string, withZone: boolean): number | undefined {
  const match = isoTimestamp.exec(text);
  if (match === null) return undefined;
  const days = fastIsoDays(match[1]!, match[2]!, match[3]!);
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = Number(match[6]);
  if (days === undefined || hour > 23 || minute > 59 || second > 59) return undefined;
  const fraction = match[7] === undefined ? 0 : Number(match[7].padEnd(6, '0'));
  const local = days * MICROS_PER_DAY + hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + second * MICROS_PER_SECOND + fraction;
  const zone = match[8];
  if (zone === undefined) return withZone ? undefined : local;
  if (!withZone) return local;
  if (zone === 'Z') return local;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const offsetSeconds = Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2, 4) || '0') * 60;
  return local - sign * offsetSeconds * MICROS_PER_SECOND;
}

/** date_in. */
export function parseDate(text: string, environment: ParseEnvironment): number {
  const fast = isoDate.exec(text);
  if (fast !== null) {
    const days = fastIsoDays(fast[1]!, fast[2]!, fast[3]!);
    if (days !== undefined) return days;
  }
  const parsed = decode(text, 'date');
  if (parsed === undefined) throw syntaxError('date', text);
  switch (parsed.special) {
    case 'infinity': return Infinity;
    case '-infinity': return -Infinity;
    case 'epoch': return 0;
    case 'today': case 'now': return todayDays(environment);
    case 'tomorrow': return todayDays(environment) + 1;
    case 'yesterday': return todayDays(environment) - 1;
    default: break;
  }
  if (parsed.year === undefined || parsed.month === undefined || parsed.day === undefined) throw syntaxError('date', text);
  if (parsed.hour !== undefined) timeOfDay(parsed, text);
  const days = validateDate(parsed, text);
  if (days < MIN_DATE_DAYS || days > MAX_DATE_DAYS) throw rangeError('date', text);
  return days;
}

/** time_in. */
export function parseTime(text: string, environment: ParseEnvironment): number {
  const parsed = decode(text, 'time');
  if (parsed === undefined) throw syntaxError('time', text);
  if (parsed.special === 'allballs') return 0;
  if (parsed.special === 'now') return toLocal(environment.statementTimeMicros, environment.timeZone) - todayDays(environment) * MICROS_PER_DAY;
  if (parsed.special !== undefined || parsed.hour === undefined) throw syntaxError('time', text);
  return timeOfDay(parsed, text);
}

function parseTimestampKind(text: string, environment: ParseEnvironment, withZone: boolean): number {
  const fast = fastTimestamp(text, withZone);
  if (fast !== undefined) return fast;
  const kind: Kind = withZone ? 'timestamptz' : 'timestamp';
  const parsed = decode(text, kind);
  if (parsed === undefined) throw syntaxError(kind, text);
  const zone = resolveTimeZone(environment.timeZone);
  const startOfDay = (offsetDays: number): number => {
    const localDay = todayDays(environment) + offsetDays;
    return withZone ? localToUtc(localDay * MICROS_PER_DAY, zone) : localDay * MICROS_PER_DAY;
  };
  switch (parsed.special) {
    case 'infinity': return Infinity;
    case '-infinity': return -Infinity;
    case 'epoch': return 0;
    case 'now': return withZone ? environment.statementTimeMicros : toLocal(environment.statementTimeMicros, environment.timeZone);
    case 'today': return startOfDay(0);
    case 'tomorrow': return startOfDay(1);
    case 'yesterday': return startOfDay(-1);
    default: break;
  }
  if (parsed.year === undefined || parsed.month === undefined || parsed.day === undefined) throw syntaxError(kind, text);
  const days = validateDate(parsed, text);
  const local = days * MICROS_PER_DAY + timeOfDay(parsed, text);
  let micros = local;
  if (withZone) {
    if (parsed.offsetSeconds !== undefined) micros = local - parsed.offsetSeconds * MICROS_PER_SECOND;
    else micros = localToUtc(local, parsed.zone ?? zone);
  }
  if (micros < MIN_TIMESTAMP_MICROS || micros >= END_TIMESTAMP_MICROS) throw rangeError(kind, text);
  return micros;
}

/** timestamp_in (a zone in the text is ignored, as PostgreSQL does). */
export function parseTimestamp(text: string, environment: ParseEnvironment): number {
  return parseTimestampKind(text, environment, false);
}

/** timestamptz_in: local time in the session zone unless the text names an offset or zone. */
export function parseTimestamptz(text: string, environment: ParseEnvironment): number {
  return parseTimestampKind(text, environment, true);
}
