// to_char's template language, PostgreSQL's formatting.c for the common patterns: dates and times
// (YYYY, MM, DD, HH24, HH12, MI, SS, MS, US, AM/PM, Mon/Month/Day/Dy in three capitalizations,
// DDD, D, ID, IW, WW, W, Q, CC, J, IYYY, TZ, OF, FF1-FF6, SSSS, BC/AD; the FM prefix drops padding,
// the TH/th suffix adds an ordinal; double-quoted text and backslash escapes are literal) and
// numbers (9, 0, '.', ',', D, G, S, MI, PL, SG, PR, FM, EEEE, V).

import { SqlError, SqlState } from '../errors.js';
import type { Interval } from '../value.js';
import type { EvalContext } from '../eval-context.js';
import { Numeric } from '../numeric.js';
import { MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND, civilFromDays, daysFromCivil, dayOfWeek, splitTimestamp } from '../calendar.js';
import { resolveTimeZone, formatOffset } from '../time-zone.js';

const monthNames = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const romanMonths = ['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X', 'XI', 'XII'];

// longest first, so that HH24 wins over HH and MONTH over MON
const patterns = [
  'HH24', 'HH12', 'HH', 'MI', 'SSSSS', 'SSSS', 'SS', 'MS', 'US', 'FF1', 'FF2', 'FF3', 'FF4', 'FF5', 'FF6',
  'A.M.', 'a.m.', 'P.M.', 'p.m.', 'AM', 'am', 'PM', 'pm',
  'Y,YYY', 'YYYY', 'YYY', 'YY', 'Y', 'IYYY', 'IYY', 'IY', 'I',
  'B.C.', 'b.c.', 'A.D.', 'a.d.', 'BC', 'bc', 'AD', 'ad',
  'MONTH', 'Month', 'month', 'MON', 'Mon', 'mon', 'MM',
  'DAY', 'Day', 'day', 'DY', 'Dy', 'dy', 'DDD', 'IDDD', 'DD', 'D', 'ID',
  'WW', 'W', 'IW', 'CC', 'J', 'Q', 'RM', 'rm', 'TZH', 'TZM', 'TZ', 'tz', 'OF',
  // numeric fields are accepted in lower case too
  'hh24', 'hh12', 'hh', 'mi', 'sssss', 'ssss', 'ss', 'ms', 'us', 'ff1', 'ff2', 'ff3', 'ff4', 'ff5', 'ff6',
  'y,yyy', 'yyyy', 'yyy', 'yy', 'y', 'iyyy', 'iyy', 'iy', 'i', 'mm', 'ddd', 'iddd', 'dd', 'd', 'id', 'ww', 'w', 'iw', 'cc', 'j', 'q', 'tzh', 'tzm', 'of',
].sort((a, b) => b.length - a.length);

function ordinal(value: number, upper: boolean): string {
  const last2 = Math.abs(value) % 100;
  const last = Math.abs(value) % 10;
  let suffix = 'th';
  if (last2 < 11 || last2 > 13) {
    if (last === 1) suffix = 'st';
    else if (last === 2) suffix = 'nd';
    else if (last === 3) suffix = 'rd';
  }
  return upper ? suffix.toUpperCase() : suffix;
}

function isoWeekInfo(days: number): { week: number; year: number; dayOfYear: number } {
  const weekday = (dayOfWeek(days) + 6) % 7;
  const thursday = days - weekday + 3;
  const { year } = civilFromDays(thursday);
  const firstThursday = daysFromCivil(year, 1, 1);
  const week = Math.floor((thursday - firstThursday) / 7) + 1;
  // ISO day of year: days since the Monday of ISO week 1
  const jan4 = daysFromCivil(year, 1, 4);
  const week1Monday = jan4 - ((dayOfWeek(jan4) + 6) % 7);
  return { week, year, dayOfYear: days - week1Monday + 1 };
}

function capitalize(text: string, style: 'upper' | 'title' | 'lower'): string {
  if (style === 'upper') return text.toUpperCase();
  if (style === 'lower') return text.toLowerCase();
  return text;
}

function styleOf(pattern: string): 'upper' | 'title' | 'lower' {
  if (pattern === pattern.toUpperCase()) return 'upper';
  if (pattern === pattern.toLowerCase()) return 'lower';
  return 'title';
}

interface Parts {
  year: number; // astronomical
  month: number;
  day: number;
  days: number;
  hour: number;
  minute: number;
  second: number;
  micros: number;
  offsetSeconds: number | undefined;
  zoneAbbreviation: string | undefined;
}

function numberField(value: number, width: number, fillMode: boolean): string {
  if (fillMode) return String(value);
  const negative = value < 0;
  const digits = String(Math.abs(value)).padStart(width, '0');
  return negative ? '-' + digits : digits;
}

/** A template's piece: literal text, or a field pattern with its FM prefix and TH/th suffix. */
type Token =
  | { readonly literal: string }
  | { readonly literal?: undefined; readonly pattern: string; readonly key: string; readonly fillMode: boolean; readonly ordinalSuffix: 'TH' | 'th' | undefined };

/** Templates already split into tokens: a column formats every row with the same template. */
const tokenCache = new Map<string, readonly Token[]>();
const TOKEN_CACHE_LIMIT = 256;

function tokensOf(template: string): readonly Token[] {
  const cached = tokenCache.get(template);
  if (cached !== undefined) return cached;
  const tokens: Token[] = [];
  const literal = (text: string): void => {
    const last = tokens[tokens.length - 1];
    if (last !== undefined && last.literal !== undefined) tokens[tokens.length - 1] = { literal: last.literal + text };
    else tokens.push({ literal: text });
  };
  let i = 0;
  while (i < template.length) {
    let fillMode = false;
    if (template.startsWith('FM', i) || template.startsWith('fm', i)) {
      fillMode = true;
      i += 2;
    }
    if (template.startsWith('FX', i)) {
      i += 2;
      continue;
    }
    const c = template[i]!;
    if (c === '"') {
      const end = template.indexOf('"', i + 1);
      literal((end < 0 ? template.slice(i + 1) : template.slice(i + 1, end)).replace(/\\(.)/g, '$1'));
      i = end < 0 ? template.length : end + 1;
      continue;
    }
    if (c === '\\' && i + 1 < template.length) {
      literal(template[i + 1]!);
      i += 2;
      continue;
    }
    const pattern = patterns.find((candidate) => template.startsWith(candidate, i));
    if (pattern === undefined) {
      literal(`${c}`);
      i++;
      continue;
    }
    i += pattern.length;
    let ordinalSuffix: 'TH' | 'th' | undefined;
    if (template.startsWith('TH', i)) ordinalSuffix = 'TH';
    else if (template.startsWith('th', i)) ordinalSuffix = 'th';
    if (ordinalSuffix !== undefined) i += 2;
    const key = /^(MONTH|Month|month|MON|Mon|mon|DAY|Day|day|DY|Dy|dy|AM|am|PM|pm|A\.M\.|a\.m\.|P\.M\.|p\.m\.|BC|bc|AD|ad|B\.C\.|b\.c\.|A\.D\.|a\.d\.|RM|rm|TZ|tz)$/.test(pattern) ? pattern : pattern.toUpperCase();
    tokens.push({ pattern, key, fillMode, ordinalSuffix });
  }
  if (tokenCache.size >= TOKEN_CACHE_LIMIT) tokenCache.clear();
  tokenCache.set(template, tokens);
  return tokens;
}

function render(parts: Parts, template: string, isInterval: boolean): string {
  let out = '';
  for (const token of tokensOf(template)) {
    if (token.literal !== undefined) {
      out += token.literal;
      continue;
    }
    const { pattern, key, fillMode, ordinalSuffix } = token;
    const displayYear = parts.year > 0 ? parts.year : 1 - parts.year;
    const hour12 = parts.hour % 12 === 0 ? 12 : parts.hour % 12;
    let text: string;
    let numeric: number | undefined;
    switch (key) {
      case 'HH24': numeric = parts.hour; text = numberField(parts.hour, 2, fillMode); break;
      case 'HH12': case 'HH': numeric = hour12; text = numberField(isInterval ? parts.hour % 12 : hour12, 2, fillMode); break;
      case 'MI': numeric = parts.minute; text = numberField(parts.minute, 2, fillMode); break;
      case 'SS': numeric = parts.second; text = numberField(parts.second, 2, fillMode); break;
      case 'SSSS': case 'SSSSS': numeric = parts.hour * 3600 + parts.minute * 60 + parts.second; text = String(numeric); break;
      case 'MS': numeric = Math.floor(parts.micros / 1000); text = numberField(numeric, 3, fillMode); break;
      case 'US': numeric = parts.micros; text = numberField(parts.micros, 6, fillMode); break;
      case 'FF1': case 'FF2': case 'FF3': case 'FF4': case 'FF5': case 'FF6': {
        const digits = Number(pattern[2]);
        numeric = Math.floor(parts.micros / 10 ** (6 - digits));
        text = numberField(numeric, digits, fillMode);
        break;
      }
      case 'AM': case 'PM': text = parts.hour < 12 ? 'AM' : 'PM'; break;
      case 'am': case 'pm': text = parts.hour < 12 ? 'am' : 'pm'; break;
      case 'A.M.': case 'P.M.': text = parts.hour < 12 ? 'A.M.' : 'P.M.'; break;
      case 'a.m.': case 'p.m.': text = parts.hour < 12 ? 'a.m.' : 'p.m.'; break;
      case 'Y,YYY': text = `${Math.floor(displayYear / 1000)},${String(displayYear % 1000).padStart(3, '0')}`; break;
      case 'YYYY': numeric = displayYear; text = numberField(displayYear, 4, fillMode); break;
      case 'YYY': numeric = displayYear % 1000; text = numberField(displayYear % 1000, 3, fillMode); break;
      case 'YY': numeric = displayYear % 100; text = numberField(displayYear % 100, 2, fillMode); break;
      case 'Y': numeric = displayYear % 10; text = String(displayYear % 10); break;
      case 'IYYY': case 'IYY': case 'IY': case 'I': {
        const isoYear = isoWeekInfo(parts.days).year;
        const width = pattern.length;
        numeric = width === 4 ? isoYear : isoYear % 10 ** width;
        text = numberField(numeric, width, fillMode);
        break;
      }
      case 'BC': case 'AD': text = parts.year <= 0 ? 'BC' : 'AD'; break;
      case 'bc': case 'ad': text = parts.year <= 0 ? 'bc' : 'ad'; break;
      case 'B.C.': case 'A.D.': text = parts.year <= 0 ? 'B.C.' : 'A.D.'; break;
      case 'b.c.': case 'a.d.': text = parts.year <= 0 ? 'b.c.' : 'a.d.'; break;
      case 'MONTH': case 'Month': case 'month': {
        const name = capitalize(monthNames[parts.month - 1]!, styleOf(pattern));
        text = fillMode ? name : name.padEnd(9, ' ');
        break;
      }
      case 'MON': case 'Mon': case 'mon': text = capitalize(monthNames[parts.month - 1]!.slice(0, 3), styleOf(pattern)); break;
      case 'MM': numeric = parts.month; text = numberField(parts.month, 2, fillMode); break;
      case 'DAY': case 'Day': case 'day': {
        const name = capitalize(dayNames[dayOfWeek(parts.days)]!, styleOf(pattern));
        text = fillMode ? name : name.padEnd(9, ' ');
        break;
      }
      case 'DY': case 'Dy': case 'dy': text = capitalize(dayNames[dayOfWeek(parts.days)]!.slice(0, 3), styleOf(pattern)); break;
      case 'DDD': numeric = isInterval ? parts.day : parts.days - daysFromCivil(parts.year, 1, 1) + 1; text = numberField(numeric, 3, fillMode); break;
      case 'IDDD': numeric = isoWeekInfo(parts.days).dayOfYear; text = numberField(numeric, 3, fillMode); break;
      case 'DD': numeric = parts.day; text = numberField(parts.day, 2, fillMode); break;
      case 'D': numeric = dayOfWeek(parts.days) + 1; text = String(numeric); break;
      case 'ID': numeric = dayOfWeek(parts.days) === 0 ? 7 : dayOfWeek(parts.days); text = String(numeric); break;
      case 'WW': numeric = Math.floor((parts.days - daysFromCivil(parts.year, 1, 1)) / 7) + 1; text = numberField(numeric, 2, fillMode); break;
      case 'W': numeric = Math.floor((parts.day - 1) / 7) + 1; text = String(numeric); break;
      case 'IW': numeric = isoWeekInfo(parts.days).week; text = numberField(numeric, 2, fillMode); break;
      case 'CC': {
        const century = parts.year > 0 ? Math.floor((parts.year + 99) / 100) : -Math.floor((99 - (parts.year - 1)) / 100);
        numeric = century;
        text = numberField(century, 2, fillMode);
        break;
      }
      case 'J': numeric = parts.days + 2440588; text = String(numeric); break;
      case 'Q': numeric = Math.floor((parts.month - 1) / 3) + 1; text = String(numeric); break;
      case 'RM': text = fillMode ? romanMonths[parts.month - 1]! : romanMonths[parts.month - 1]!.padEnd(4, ' '); break;
      case 'rm': text = (fillMode ? romanMonths[parts.month - 1]! : romanMonths[parts.month - 1]!.padEnd(4, ' ')).toLowerCase(); break;
      case 'TZ': text = parts.zoneAbbreviation ?? ''; break;
      case 'tz': text = (parts.zoneAbbreviation ?? '').toLowerCase(); break;
      case 'OF': text = parts.offsetSeconds === undefined ? '' : formatOffset(Math.trunc(parts.offsetSeconds / 60) * 60); break;
      case 'TZH': {
        const offset = parts.offsetSeconds ?? 0;
        text = (offset < 0 ? '-' : '+') + String(Math.floor(Math.abs(offset) / 3600)).padStart(2, '0');
        break;
      }
      case 'TZM': text = String(Math.floor((Math.abs(parts.offsetSeconds ?? 0) % 3600) / 60)).padStart(2, '0'); break;
      default: text = pattern;
    }
    if (ordinalSuffix !== undefined && numeric !== undefined) text += ordinal(numeric, ordinalSuffix === 'TH');
    out += text;
  }
  return out;
}

/** Abbreviation of a zone at an instant, as PostgreSQL prints for TZ (UTC, CET, EST; else the offset). */
function zoneAbbreviation(zone: string, micros: number, offsetSeconds: number): string {
  try {
    const name = new Intl.DateTimeFormat('en-US', { timeZone: resolveTimeZone(zone).name, timeZoneName: 'short' })
      .formatToParts(new Date(Math.max(-8.64e15, Math.min(8.64e15, micros / 1000))))
      .find((part) => part.type === 'timeZoneName')?.value;
    if (name !== undefined && /^[A-Z]{2,5}$/.test(name)) return name;
  } catch {
    // fall through to the offset
  }
  return formatOffset(offsetSeconds);
}

export function formatDateTimePattern(micros: number, template: string, timeZone: string | undefined, context: EvalContext): string | null {
  if (!Number.isFinite(micros)) return null;
  void context;
  let local = micros;
  let offsetSeconds: number | undefined;
  if (timeZone !== undefined) {
    offsetSeconds = resolveTimeZone(timeZone).offsetAt(micros);
    local = micros + offsetSeconds * MICROS_PER_SECOND;
  }
  const { days, timeMicros } = splitTimestamp(local);
  const { year, month, day } = civilFromDays(days);
  return render({
    year, month, day, days,
    hour: Math.floor(timeMicros / MICROS_PER_HOUR),
    minute: Math.floor((timeMicros % MICROS_PER_HOUR) / MICROS_PER_MINUTE),
    second: Math.floor((timeMicros % MICROS_PER_MINUTE) / MICROS_PER_SECOND),
    micros: timeMicros % MICROS_PER_SECOND,
    offsetSeconds,
    zoneAbbreviation: timeZone === undefined ? undefined : zoneAbbreviation(timeZone, micros, offsetSeconds!),
  }, template, false);
}

export function formatIntervalPattern(interval: Interval, template: string): string {
  const micros = interval.micros;
  return render({
    year: Math.trunc(interval.months / 12),
    month: interval.months % 12,
    day: interval.days,
    days: 0,
    hour: Math.trunc(micros / MICROS_PER_HOUR),
    minute: Math.trunc((micros % MICROS_PER_HOUR) / MICROS_PER_MINUTE),
    second: Math.trunc((micros % MICROS_PER_MINUTE) / MICROS_PER_SECOND),
    micros: micros % MICROS_PER_SECOND,
    offsetSeconds: undefined,
    zoneAbbreviation: undefined,
  }, template, true);
}

void MICROS_PER_DAY;

// ---------------------------------------------------------------------------------------------
// numbers

/**
 * to_char(number, template) for the common numeric patterns, modelled on PostgreSQL's
 * NUM_processor: digit slots filled right-aligned ('9' pads with spaces, '0' and every slot after
 * the first '0' with zeros), a zero integer part left empty when there is a fraction, group
 * separators only after a printed digit, '#' everywhere on overflow, and the sign placed just left
 * of the first printed character (S, default), at a fixed place (SG, PL), trailing (MI, S at the
 * end) or as angle brackets (PR). FM drops the padding and trailing fractional zeros of '9' slots.
 */
export function formatNumberPattern(value: Numeric, template: string): string {
  let fillMode = false;
  let body = template;
  if (/^fm/i.test(body)) {
    fillMode = true;
    body = body.slice(2);
  }
  if (/EEEE/i.test(body)) return formatScientific(value, body);
  const upper = body.toUpperCase();
  // the layout without the sign markers (SG's G is not a group separator)
  const layout = upper.replace(/SG|PL|MI|PR|TH|S/g, '');
  const dot = layout.indexOf('.');
  const d = layout.indexOf('D');
  const pointIndex = dot < 0 ? d : d < 0 ? dot : Math.min(dot, d);
  const integerTemplate = pointIndex < 0 ? layout : layout.slice(0, pointIndex);
  const fractionTemplate = pointIndex < 0 ? '' : layout.slice(pointIndex + 1);
  const pre = (integerTemplate.match(/[90]/g) ?? []).length;
  const post = (fractionTemplate.match(/[90]/g) ?? []).length;
  const firstZeroSlot = (() => {
    let slot = 0;
    for (const c of integerTemplate) {
      if (c === '0') return slot;
      if (c === '9') slot++;
    }
    return -1;
  })();
  let number = value;
  const vMatch = /V(9+)/.exec(upper);
  if (vMatch !== null) number = number.multiply(new Numeric(10n ** BigInt(vMatch[1]!.length), 0));
  const rounded = number.special === undefined ? number.round(post) : number;
  const negative = rounded.sign() < 0;
  let integerDigits = '';
  let fractionDigits = '';
  if (rounded.special === undefined) {
    const text = rounded.abs().toString();
    [integerDigits, fractionDigits = ''] = text.split('.') as [string, string?];
    if (integerDigits === '0') integerDigits = '';
  }
  const overflow = rounded.special !== undefined || integerDigits.length > pre;
  // digit slots, left to right; null = nothing to print
  const slots: (string | null)[] = [];
  for (let slot = 0; slot < pre; slot++) {
    const digitIndex = slot - (pre - integerDigits.length);
    if (overflow) slots.push('#');
    else if (digitIndex >= 0) slots.push(integerDigits[digitIndex]!);
    else slots.push(firstZeroSlot >= 0 && slot >= firstZeroSlot ? '0' : null);
  }
  let fraction = '';
  let fractionSlots = '';
  for (const c of fractionTemplate) {
    if (c === '9' || c === '0') {
      fraction += overflow ? '#' : fractionDigits[fractionSlots.length] ?? '0';
      fractionSlots += c;
    }
  }
  if (fillMode && !overflow) {
    while (fraction.endsWith('0') && fractionSlots.endsWith('9')) {
      fraction = fraction.slice(0, -1);
      fractionSlots = fractionSlots.slice(0, -1);
    }
  }
  // a zero value keeps one digit: always without a fraction, and in FM when the fraction vanished
  if (!overflow && pre > 0 && slots[pre - 1] === null && integerDigits === '' && (post === 0 || (fillMode && fraction === ''))) slots[pre - 1] = '0';
  let integerText = '';
  let slot = 0;
  let printedDigit = false;
  for (const c of integerTemplate) {
    if (c === '9' || c === '0') {
      const character = slots[slot++] ?? null;
      if (character === null) integerText += fillMode ? '' : ' ';
      else {
        integerText += character;
        printedDigit = true;
      }
    } else if (c === ',' || c === 'G') {
      integerText += printedDigit ? ',' : fillMode ? '' : ' ';
    }
  }
  const numberText = integerText + (pointIndex >= 0 ? '.' + fraction : '');
  const core = numberText.trimStart();
  const padding = numberText.slice(0, numberText.length - core.length);
  if (upper.includes('PR')) return negative ? `${padding}<${core}>` : fillMode ? core : `${padding} ${core} `;
  if (upper.includes('MI')) return numberText + (negative ? '-' : fillMode ? '' : ' ');
  if (upper.includes('SG') || upper.includes('PL')) {
    const sign = upper.includes('SG') ? (negative ? '-' : '+') : negative ? '-' : '+';
    return sign + (fillMode ? core : numberText);
  }
  if (upper.startsWith('S')) return (fillMode ? '' : padding) + (negative ? '-' : '+') + core;
  if (upper.endsWith('S')) return numberText + (negative ? '-' : '+');
  if (fillMode) return (negative ? '-' : '') + core;
  return padding + (negative ? '-' : ' ') + core;
}

function formatScientific(value: Numeric, template: string): string {
  const fractionDigits = ((template.split('.')[1] ?? '').match(/[90]/g) ?? []).length;
  if (value.special !== undefined) return ' #.' + '#'.repeat(fractionDigits) + 'e+##';
  if (value.unscaled === 0n) return ` 0${fractionDigits > 0 ? '.' + '0'.repeat(fractionDigits) : ''}e+00`;
  // PostgreSQL takes the exponent of the unrounded value, then rounds the mantissa (so 99999
  // with one fractional digit prints 10.0e+04)
  const digits = (value.unscaled < 0n ? -value.unscaled : value.unscaled).toString();
  const exponent = digits.length - 1 - value.scale;
  const mantissa = new Numeric(value.unscaled < 0n ? -value.unscaled : value.unscaled, digits.length - 1).round(fractionDigits);
  const sign = value.unscaled < 0n ? '-' : ' ';
  return `${sign}${mantissa.toString()}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

void SqlError;
void SqlState;
