// Calendar arithmetic on the value representation of value.ts: days since 1970-01-01 to and from
// proleptic Gregorian year/month/day (year 0 is 1 BC, as PostgreSQL's internal years), and the
// split of microsecond timestamps into date and time of day. Pure integer math, no Date objects,
// so it is exact over PostgreSQL's whole range (4713 BC .. 294276 AD).

export const MICROS_PER_SECOND = 1_000_000;
export const MICROS_PER_MINUTE = 60_000_000;
export const MICROS_PER_HOUR = 3_600_000_000;
export const MICROS_PER_DAY = 86_400_000_000;
export const DAYS_PER_MONTH = 30; // PostgreSQL's interval month for justify/comparison
export const MONTHS_PER_YEAR = 12;

export interface CivilDate {
  year: number;
  month: number; // 1..12
  day: number; // 1..31
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const monthIndex = month > 2 ? month - 3 : month + 9;
  const dayOfYear = Math.floor((153 * monthIndex + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** The proleptic Gregorian date of a day number (inverse of daysFromCivil). */
export function civilFromDays(days: number): CivilDate {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const dayOfEra = z - era * 146097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36524) - Math.floor(dayOfEra / 146096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return { year, month, day };
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const monthLengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : monthLengths[month - 1]!;
}

/** 0 = Sunday .. 6 = Saturday. */
export function dayOfWeek(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

/** Splits microseconds since 1970 into whole days and microseconds of the day (>= 0). */
export function splitTimestamp(micros: number): { days: number; timeMicros: number } {
  const days = Math.floor(micros / MICROS_PER_DAY);
  return { days, timeMicros: micros - days * MICROS_PER_DAY };
}

/** Adds months to a date the way PostgreSQL does: the day is clamped to the month's last day. */
export function addMonthsToCivil(date: CivilDate, months: number): CivilDate {
  const total = date.year * 12 + (date.month - 1) + months;
  const year = Math.floor(total / 12);
  const month = total - year * 12 + 1;
  return { year, month, day: Math.min(date.day, daysInMonth(year, month)) };
}

// PostgreSQL's limits: dates from 4714-11-24 BC (Julian day 0) to 5874897-12-31,
// timestamps to 294276-12-31 23:59:59.999999.
export const MIN_DATE_DAYS = daysFromCivil(-4713, 11, 24);
export const MAX_DATE_DAYS = daysFromCivil(5874897, 12, 31);
export const MIN_TIMESTAMP_MICROS = MIN_DATE_DAYS * MICROS_PER_DAY;
export const END_TIMESTAMP_MICROS = daysFromCivil(294277, 1, 1) * MICROS_PER_DAY;
