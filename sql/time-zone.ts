// Time zones: resolving a zone specification (the TimeZone setting, AT TIME ZONE, a suffix in a
// timestamptz literal) to the UTC offset in effect at an instant, and converting local wall-clock
// time to UTC with PostgreSQL's rules for DST gaps and overlaps. IANA zones come from the runtime's
// Intl data (ICU); offsets are cached per 15-minute bucket because Intl calls cost microseconds.
//
// Accepted specifications, as PostgreSQL's TimeZone setting:
//   'UTC', 'GMT', 'Z', IANA names ('Europe/Paris'), a few common abbreviations (EST, CET, ...),
//   a bare number of hours ('+02', '-3', '5.5': ISO sign, east positive),
//   POSIX strings ('UTC+2', 'EST5', '-03:30': POSIX sign, west positive).

import { SqlError, SqlState } from './errors.js';
import { MICROS_PER_SECOND } from './calendar.js';

export interface TimeZone {
  readonly name: string;
  /** Seconds east of UTC in effect at the UTC instant `utcMicros`. */
  offsetAt(utcMicros: number): number;
}

class FixedZone implements TimeZone {
  constructor(
    readonly name: string,
    private readonly offsetSeconds: number,
  ) {}
  offsetAt(): number {
    return this.offsetSeconds;
  }
}

const BUCKET_MS = 15 * 60 * 1000;
const MAX_CACHE_ENTRIES = 50_000;

class IanaZone implements TimeZone {
  private readonly formatter: Intl.DateTimeFormat;
  private readonly cache = new Map<number, number>();

  constructor(readonly name: string) {
    this.formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  offsetAt(utcMicros: number): number {
    const ms = Math.floor(utcMicros / 1000);
    const bucket = Math.floor(ms / BUCKET_MS);
    const cached = this.cache.get(bucket);
    if (cached !== undefined) return cached;
    const start = this.exactOffset(bucket * BUCKET_MS);
    const end = this.exactOffset(bucket * BUCKET_MS + BUCKET_MS - 1000);
    if (start === end) {
      if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
      this.cache.set(bucket, start);
      return start;
    }
    return this.exactOffset(Math.floor(ms / 1000) * 1000);
  }

  private exactOffset(ms: number): number {
    // JS Dates reach +-8.64e15 ms; beyond that use the nearest representable instant
    const clamped = Math.max(-8.64e15, Math.min(8.64e15, ms));
    let year = 0;
    let month = 0;
    let day = 0;
    let hour = 0;
    let minute = 0;
    let second = 0;
    let bc = false;
    for (const part of this.formatter.formatToParts(new Date(clamped))) {
      switch (part.type) {
        case 'year': year = Number(part.value); break;
        case 'month': month = Number(part.value); break;
        case 'day': day = Number(part.value); break;
        case 'hour': hour = Number(part.value); break;
        case 'minute': minute = Number(part.value); break;
        case 'second': second = Number(part.value); break;
        case 'era': bc = part.value.startsWith('B'); break;
        default: break;
      }
    }
    if (bc) year = 1 - year;
    const local = new Date(0);
    local.setUTCFullYear(year, month - 1, day); // setUTCFullYear: years 0..99 are not shifted to 19xx
    local.setUTCHours(hour, minute, second, 0);
    const flooredUtc = Math.floor(clamped / 1000) * 1000;
    return Math.round((local.getTime() - flooredUtc) / 1000);
  }
}

const abbreviations: Record<string, number> = {
  utc: 0, gmt: 0, z: 0, zulu: 0, ut: 0, wet: 0,
  est: -5 * 3600, edt: -4 * 3600, cst: -6 * 3600, cdt: -5 * 3600,
  mst: -7 * 3600, mdt: -6 * 3600, pst: -8 * 3600, pdt: -7 * 3600,
  akst: -9 * 3600, akdt: -8 * 3600, hst: -10 * 3600,
  cet: 3600, cest: 7200, met: 3600, mest: 7200, eet: 7200, eest: 3 * 3600, west: 3600,
  bst: 3600, msk: 3 * 3600, jst: 9 * 3600, kst: 9 * 3600, ist: 2 * 3600,
  aest: 10 * 3600, aedt: 11 * 3600, acst: 9.5 * 3600, awst: 8 * 3600, nzst: 12 * 3600, nzdt: 13 * 3600,
};

const zoneCache = new Map<string, TimeZone>();

function notRecognized(spec: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, `time zone "${spec}" not recognized`);
}

/**
 * A zone by its specification; 22023 `time zone "x" not recognized` when unknown. `usage`
 * 'setting' is the TimeZone setting, where a bare number is hours east (SET TIME ZONE 2);
 * 'expression' is AT TIME ZONE and zone arguments, where PostgreSQL reads '+03' as a POSIX zone
 * (hours west).
 */
export function resolveTimeZone(spec: string, usage: 'setting' | 'expression' = 'setting'): TimeZone {
  const key = usage === 'setting' ? spec : `\u0000${spec}`;
  const cached = zoneCache.get(key);
  if (cached !== undefined) return cached;
  const zone = lookupZone(spec, usage === 'setting');
  if (zone === undefined) throw notRecognized(spec);
  if (zoneCache.size > 1000) zoneCache.clear();
  zoneCache.set(key, zone);
  return zone;
}

/** As resolveTimeZone, undefined when unknown. */
export function tryResolveTimeZone(spec: string): TimeZone | undefined {
  try {
    return resolveTimeZone(spec);
  } catch {
    return undefined;
  }
}

function lookupZone(spec: string, numbersAreHoursEast: boolean): TimeZone | undefined {
  const trimmed = spec.trim();
  const lower = trimmed.toLowerCase();
  if (lower in abbreviations) return new FixedZone(trimmed, abbreviations[lower]!);
  if (numbersAreHoursEast && /^[+-]?\d+(\.\d+)?$/.test(trimmed)) {
    // A bare number: hours east of UTC (SQL standard SET TIME ZONE n)
    const hours = Number(trimmed);
    if (Math.abs(hours) > 15) return undefined;
    return new FixedZone(trimmed, Math.round(hours * 3600));
  }
  const posix = /^([A-Za-z]{3,}|<[^>]+>)?([+-]?)(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(trimmed);
  if (posix !== null) {
    const seconds = Number(posix[3]) * 3600 + Number(posix[4] ?? 0) * 60 + Number(posix[5] ?? 0);
    if (seconds > 15 * 3600 + 59 * 60) return undefined;
    // POSIX: positive is west of Greenwich
    return new FixedZone(trimmed, posix[2] === '-' ? seconds : -seconds);
  }
  if (lower === 'etc/utc' || lower === 'etc/gmt' || lower === 'universal' || lower === 'zulu') return new FixedZone(trimmed, 0);
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
    return new IanaZone(resolved);
  } catch {
    return undefined;
  }
}

/**
 * The UTC instant of a local wall-clock time in a zone. PostgreSQL's rule at transitions: a time
 * in a spring-forward gap takes the offset in effect before the transition, an ambiguous time in
 * a fall-back overlap the offset after it.
 */
export function localToUtc(localMicros: number, zone: TimeZone): number {
  if (zone instanceof FixedZone) return localMicros - zone.offsetAt() * MICROS_PER_SECOND;
  const day = 86_400 * MICROS_PER_SECOND;
  const before = zone.offsetAt(localMicros - day);
  const after = zone.offsetAt(localMicros + day);
  if (before === after) {
    const guess = localMicros - before * MICROS_PER_SECOND;
    const actual = zone.offsetAt(guess);
    if (actual === before) return guess;
    const second = localMicros - actual * MICROS_PER_SECOND;
    return zone.offsetAt(second) === actual ? second : guess;
  }
  const withBefore = localMicros - before * MICROS_PER_SECOND;
  const withAfter = localMicros - after * MICROS_PER_SECOND;
  const beforeValid = zone.offsetAt(withBefore) === before;
  const afterValid = zone.offsetAt(withAfter) === after;
  if (afterValid) return withAfter; // valid after (or ambiguous: prefer after)
  if (beforeValid) return withBefore;
  return withBefore; // in the gap: the prior offset
}

/** PostgreSQL's offset suffix: +00, -03:30, +00:19:32. */
export function formatOffset(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? '-' : '+';
  const magnitude = Math.abs(offsetSeconds);
  const hours = Math.floor(magnitude / 3600);
  const minutes = Math.floor((magnitude % 3600) / 60);
  const seconds = magnitude % 60;
  let text = sign + String(hours).padStart(2, '0');
  if (minutes !== 0 || seconds !== 0) text += ':' + String(minutes).padStart(2, '0');
  if (seconds !== 0) text += ':' + String(seconds).padStart(2, '0');
  return text;
}
