// to_timestamp(text, template) and to_date(text, template): the reading side of the to_char
// template language, as PostgreSQL's do_to_timestamp for the common fields (YYYY, YY, MM, DD, DDD,
// HH24, HH12/HH with AM/PM, MI, SS, MS, US, FF1-6, Mon/Month, Dy/Day (skipped), TZH, TZM, J, Q
// ignored), with FM and FX accepted. Template separators match any run of non-alphanumeric input
// characters; numeric fields read up to their width (YYYY reads as many digits as are there).

import { SqlError, SqlState } from '../errors.js';
import { MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND, civilFromDays, daysFromCivil, daysInMonth } from '../calendar.js';
import { fromLocal } from '../datetime.js';
import { checkTimestamp } from '../datetime-arithmetic.js';
import { defineFunction } from './registry.js';

const monthNames = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const dayNames = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

const fieldPatterns = [
  'YYYY', 'YYY', 'YY', 'Y', 'IYYY', 'MONTH', 'MON', 'MM', 'DDD', 'DD', 'DAY', 'DY', 'D', 'HH24', 'HH12', 'HH', 'MI', 'SSSSS', 'SSSS', 'SS', 'MS', 'US',
  'FF1', 'FF2', 'FF3', 'FF4', 'FF5', 'FF6', 'AM', 'PM', 'A.M.', 'P.M.', 'BC', 'AD', 'B.C.', 'A.D.', 'TZH', 'TZM', 'TZ', 'J', 'Q', 'IW', 'WW', 'W', 'CC',
].sort((a, b) => b.length - a.length);

const widths: Record<string, number> = {
  YYYY: 0, YYY: 3, YY: 2, Y: 1, IYYY: 4, MM: 2, DDD: 3, DD: 2, D: 1, HH24: 2, HH12: 2, HH: 2, MI: 2, SS: 2, SSSS: 5, SSSSS: 5, MS: 3, US: 6,
  FF1: 1, FF2: 2, FF3: 3, FF4: 4, FF5: 5, FF6: 6, J: 0, Q: 1, IW: 2, WW: 2, W: 1, CC: 0, TZH: 3, TZM: 2,
};

interface Fields {
  year?: number;
  month?: number;
  day?: number;
  dayOfYear?: number;
  hour?: number;
  minute?: number;
  second?: number;
  micros?: number;
  pm?: boolean;
  bc?: boolean;
  julian?: number;
  offsetMinutes?: number;
  offsetSign?: number;
  century?: number;
}

function invalidValue(value: string, field: string): SqlError {
  return new SqlError(SqlState.invalidDatetimeFormat, `invalid value "${value}" for "${field}"`, {
    detail: /^\d*$/.test(value) ? 'Value must be an integer.' : undefined,
  });
}

function parseFields(input: string, template: string): Fields {
  const fields: Fields = {};
  let position = 0;
  let i = 0;
  const upperTemplate = template.toUpperCase();
  while (i < template.length) {
    if (upperTemplate.startsWith('FM', i) || upperTemplate.startsWith('FX', i)) {
      i += 2;
      continue;
    }
    if (template[i] === '"') {
      const end = template.indexOf('"', i + 1);
      const literal = end < 0 ? template.slice(i + 1) : template.slice(i + 1, end);
      position += literal.length;
      i = end < 0 ? template.length : end + 1;
      continue;
    }
    const pattern = fieldPatterns.find((candidate) => upperTemplate.startsWith(candidate, i));
    if (pattern === undefined) {
      // a separator or space in the template skips separators in the input
      const c = template[i]!;
      i++;
      if (/\s/.test(c)) {
        while (position < input.length && /\s/.test(input[position]!)) position++;
      } else if (position < input.length && !/[A-Za-z0-9]/.test(input[position]!)) {
        position++;
      }
      continue;
    }
    i += pattern.length;
    if (upperTemplate.startsWith('TH', i)) i += 2;
    while (position < input.length && /\s/.test(input[position]!) && !/^(TZH)$/.test(pattern)) position++;
    const rest = input.slice(position);
    if (pattern === 'MONTH' || pattern === 'MON') {
      const lower = rest.toLowerCase();
      const index = monthNames.findIndex((name) => lower.startsWith(pattern === 'MONTH' ? name : name.slice(0, 3)));
      if (index < 0) throw invalidValue(rest.split(/[^A-Za-z]/)[0] ?? rest, pattern === 'MONTH' ? 'Month' : 'Mon');
      fields.month = index + 1;
      position += pattern === 'MONTH' ? monthNames[index]!.length : 3;
      continue;
    }
    if (pattern === 'DAY' || pattern === 'DY') {
      const lower = rest.toLowerCase();
      const index = dayNames.findIndex((name) => lower.startsWith(pattern === 'DAY' ? name : name.slice(0, 3)));
      if (index < 0) throw invalidValue(rest.split(/[^A-Za-z]/)[0] ?? rest, pattern === 'DAY' ? 'Day' : 'Dy');
      position += pattern === 'DAY' ? dayNames[index]!.length : 3;
      continue;
    }
    if (pattern === 'AM' || pattern === 'PM' || pattern === 'A.M.' || pattern === 'P.M.') {
      const match = /^([AaPp])\.?[Mm]\.?/.exec(rest);
      if (match === null) throw invalidValue(rest.slice(0, pattern.length), pattern);
      fields.pm = match[1]!.toLowerCase() === 'p';
      position += match[0].length;
      continue;
    }
    if (pattern === 'BC' || pattern === 'AD' || pattern === 'B.C.' || pattern === 'A.D.') {
      const match = /^([AaBb])\.?[DdCc]\.?/.exec(rest);
      if (match === null) throw invalidValue(rest.slice(0, pattern.length), pattern);
      fields.bc = match[1]!.toLowerCase() === 'b';
      position += match[0].length;
      continue;
    }
    if (pattern === 'TZ') {
      const match = /^[A-Za-z]+/.exec(rest);
      position += match === null ? 0 : match[0].length;
      continue;
    }
    let width = widths[pattern] ?? 0;
    // YYYY reads every digit unless another field follows without a separator
    if (width === 0 && pattern === 'YYYY' && /^[A-Za-z]/.test(template.slice(i))) width = 4;
    const numberPattern = pattern === 'TZH' ? /^[+-]?\d{1,2}/ : width === 0 ? /^[+-]?\d+/ : new RegExp(`^[+-]?\\d{1,${width}}`);
    const match = numberPattern.exec(rest);
    if (match === null) {
      throw new SqlError(SqlState.invalidDatetimeFormat, `invalid value "${rest.slice(0, Math.max(width, pattern.length))}" for "${pattern}"`, { detail: 'Value must be an integer.' });
    }
    position += match[0].length;
    const value = Number(match[0]);
    const digits = match[0].replace(/^[+-]/, '');
    switch (pattern) {
      case 'YYYY': case 'IYYY': fields.year = value; break;
      case 'YYY': fields.year = value < 100 ? 2000 + value : value < 1000 ? 1000 + value : value; break;
      case 'YY': fields.year = digits.length <= 2 ? (value < 70 ? 2000 + value : 1900 + value) : value; break;
      case 'Y': fields.year = 2000 + value; break;
      case 'MM': fields.month = value; break;
      case 'DD': fields.day = value; break;
      case 'DDD': fields.dayOfYear = value; break;
      case 'HH24': fields.hour = value; break;
      case 'HH12': case 'HH': fields.hour = value; if (value < 1 || value > 12) {
        throw new SqlError(SqlState.invalidDatetimeFormat, `hour "${value}" is invalid for the 12-hour clock`, { hint: 'Use the 24-hour clock, or give an hour between 1 and 12.' });
      } fields.pm = fields.pm ?? false; break;
      case 'MI': fields.minute = value; break;
      case 'SS': fields.second = value; break;
      case 'SSSS': case 'SSSSS':
        fields.hour = Math.floor(value / 3600); fields.minute = Math.floor(value / 60) % 60; fields.second = value % 60; break;
      case 'MS': fields.micros = (fields.micros ?? 0) + Number(digits.padEnd(3, '0')) * 1000; break;
      case 'US': fields.micros = (fields.micros ?? 0) + Number(digits.padEnd(6, '0')); break;
      case 'FF1': case 'FF2': case 'FF3': case 'FF4': case 'FF5': case 'FF6':
        fields.micros = Number(digits.padEnd(6, '0')); break;
      case 'J': fields.julian = value; break;
      case 'TZH': fields.offsetSign = match[0].startsWith('-') ? -1 : 1; fields.offsetMinutes = (fields.offsetMinutes ?? 0) + Math.abs(value) * 60; break;
      case 'TZM': fields.offsetMinutes = (fields.offsetMinutes ?? 0) + value; break;
      case 'CC': fields.century = value; break;
      default: break; // D, Q, IW, WW, W: read and ignored, as PostgreSQL does for most of them
    }
  }
  return fields;
}

function fieldOverflow(): SqlError {
  return new SqlError(SqlState.datetimeFieldOverflow, 'date/time field value out of range');
}

/** Local wall-clock microseconds of the parsed fields, and whether an explicit offset was given. */
function toLocalMicros(input: string, template: string): { local: number; offsetSeconds: number | undefined } {
  const fields = parseFields(input, template);
  let days: number;
  if (fields.julian !== undefined) {
    days = fields.julian - 2440588;
  } else {
    let year = fields.year ?? (fields.century !== undefined ? (fields.century - 1) * 100 + 1 : 1);
    if (fields.bc) year = 1 - year;
    if (fields.dayOfYear !== undefined && fields.month === undefined) {
      days = daysFromCivil(year, 1, 1) + fields.dayOfYear - 1;
      if (civilFromDays(days).year !== year) throw fieldOverflow();
    } else {
      const month = fields.month ?? 1;
      const day = fields.day ?? 1;
      if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
        throw new SqlError(SqlState.datetimeFieldOverflow, `date/time field value out of range: "${input}"`);
      }
      days = daysFromCivil(year, month, day);
    }
  }
  let hour = fields.hour ?? 0;
  if (fields.pm !== undefined) {
    if (fields.pm && hour < 12) hour += 12;
    else if (!fields.pm && hour === 12) hour = 0;
  }
  const minute = fields.minute ?? 0;
  const second = fields.second ?? 0;
  if (hour > 24 || minute > 59 || second > 60) throw new SqlError(SqlState.datetimeFieldOverflow, `date/time field value out of range: "${input}"`);
  const local = days * MICROS_PER_DAY + hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + second * MICROS_PER_SECOND + (fields.micros ?? 0);
  const offsetSeconds = fields.offsetMinutes === undefined ? undefined : (fields.offsetSign ?? 1) * fields.offsetMinutes * 60;
  return { local, offsetSeconds };
}

defineFunction('to_timestamp', { args: ['text', 'text'], returns: 'timestamptz', volatility: 'stable', impl: ([input, template], context) => {
  const { local, offsetSeconds } = toLocalMicros(input as string, template as string);
  return checkTimestamp(offsetSeconds === undefined ? fromLocal(local, context.timeZone) : local - offsetSeconds * MICROS_PER_SECOND);
} });
defineFunction('to_date', { args: ['text', 'text'], returns: 'date', volatility: 'stable', impl: ([input, template]) => {
  const { local } = toLocalMicros(input as string, template as string);
  return Math.floor(local / MICROS_PER_DAY);
} });
