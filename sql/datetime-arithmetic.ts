// Date/time arithmetic with PostgreSQL's semantics: timestamp +- interval (months first with the
// day clamped to the month's end, then days, then microseconds; for timestamptz the months and
// days move the local wall-clock time in the session zone), timestamp - timestamp (an interval
// with whole days split out, as timestamp_mi's justify_hours), age() (symbolic year/month/day
// difference), and the range checks (22008 "timestamp out of range", "date out of range").

import { SqlError, SqlState } from './errors.js';
import {
  MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
  addMonthsToCivil, civilFromDays, daysFromCivil, daysInMonth, splitTimestamp,
  MIN_DATE_DAYS, MAX_DATE_DAYS, MIN_TIMESTAMP_MICROS, END_TIMESTAMP_MICROS,
} from './calendar.js';
import { resolveTimeZone, localToUtc } from './time-zone.js';
import { justifyHours } from './interval.js';
import type { Interval } from './value.js';

export function timestampOutOfRange(): SqlError {
  return new SqlError(SqlState.datetimeFieldOverflow, 'timestamp out of range');
}

export function dateOutOfRange(): SqlError {
  return new SqlError(SqlState.datetimeFieldOverflow, 'date out of range');
}

export function intervalOutOfRange(): SqlError {
  return new SqlError(SqlState.datetimeFieldOverflow, 'interval out of range');
}

export function checkTimestamp(micros: number): number {
  if (Number.isFinite(micros) && (micros < MIN_TIMESTAMP_MICROS || micros >= END_TIMESTAMP_MICROS)) throw timestampOutOfRange();
  return micros;
}

export function checkDate(days: number): number {
  if (Number.isFinite(days) && (days < MIN_DATE_DAYS || days > MAX_DATE_DAYS)) throw dateOutOfRange();
  return days;
}

function addMonthsAndDaysLocal(localMicros: number, months: number, days: number): number {
  let { days: dayNumber, timeMicros } = splitTimestamp(localMicros);
  if (months !== 0) {
    const moved = addMonthsToCivil(civilFromDays(dayNumber), months);
    dayNumber = daysFromCivil(moved.year, moved.month, moved.day);
  }
  dayNumber += days;
  return dayNumber * MICROS_PER_DAY + timeMicros;
}

/** timestamp + interval. */
export function timestampPlusInterval(micros: number, interval: Interval): number {
  if (!Number.isFinite(micros)) return micros;
  return checkTimestamp(addMonthsAndDaysLocal(micros, interval.months, interval.days) + interval.micros);
}

/** timestamptz + interval: months and days in local time of the zone, micros in absolute time. */
export function timestamptzPlusInterval(micros: number, interval: Interval, timeZone: string): number {
  if (!Number.isFinite(micros)) return micros;
  let result = micros;
  if (interval.months !== 0 || interval.days !== 0) {
    const zone = resolveTimeZone(timeZone);
    const local = micros + zone.offsetAt(micros) * MICROS_PER_SECOND;
    result = localToUtc(addMonthsAndDaysLocal(local, interval.months, interval.days), zone);
  }
  return checkTimestamp(result + interval.micros);
}

export function negateInterval(interval: Interval): Interval {
  return { months: -interval.months + 0, days: -interval.days + 0, micros: -interval.micros + 0 };
}

/** timestamp - timestamp (and timestamptz - timestamptz). */
export function timestampDifference(a: number, b: number): Interval {
  if (!Number.isFinite(a) || !Number.isFinite(b)) throw new SqlError(SqlState.datetimeFieldOverflow, 'cannot subtract infinite timestamps');
  const difference = a - b;
  if (Number.isSafeInteger(difference)) return justifyHours({ months: 0, days: 0, micros: difference });
  // beyond 2^53 microseconds the double difference rounds: split into days exactly in bigint
  const exact = BigInt(a) - BigInt(b);
  const microsPerDay = BigInt(MICROS_PER_DAY);
  return { months: 0, days: Number(exact / microsPerDay), micros: Number(exact % microsPerDay) };
}

export function addIntervals(a: Interval, b: Interval): Interval {
  const months = a.months + b.months;
  const days = a.days + b.days;
  const micros = a.micros + b.micros;
  if (Math.abs(months) > 2147483647 || Math.abs(days) > 2147483647 || !Number.isSafeInteger(micros)) throw intervalOutOfRange();
  return { months, days, micros };
}

interface Fields {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  micros: number;
}

function fieldsOf(micros: number): Fields {
  const { days, timeMicros } = splitTimestamp(micros);
  const { year, month, day } = civilFromDays(days);
  return {
    year, month, day,
    hour: Math.floor(timeMicros / MICROS_PER_HOUR),
    minute: Math.floor((timeMicros % MICROS_PER_HOUR) / MICROS_PER_MINUTE),
    second: Math.floor((timeMicros % MICROS_PER_MINUTE) / MICROS_PER_SECOND),
    micros: timeMicros % MICROS_PER_SECOND,
  };
}

/** age(a, b) on local wall-clock times: PostgreSQL's symbolic difference. */
export function age(a: number, b: number): Interval {
  if (!Number.isFinite(a) || !Number.isFinite(b)) throw new SqlError(SqlState.datetimeFieldOverflow, 'cannot subtract infinite timestamps');
  const x = fieldsOf(a);
  const y = fieldsOf(b);
  let micros = x.micros - y.micros;
  let second = x.second - y.second;
  let minute = x.minute - y.minute;
  let hour = x.hour - y.hour;
  let day = x.day - y.day;
  let month = x.month - y.month;
  let year = x.year - y.year;
  const flip = a < b;
  if (flip) {
    micros = -micros; second = -second; minute = -minute; hour = -hour; day = -day; month = -month; year = -year;
  }
  while (micros < 0) { micros += MICROS_PER_SECOND; second--; }
  while (second < 0) { second += 60; minute--; }
  while (minute < 0) { minute += 60; hour--; }
  while (hour < 0) { hour += 24; day--; }
  while (day < 0) {
    const reference = flip ? x : y;
    day += daysInMonth(reference.year, reference.month);
    month--;
  }
  while (month < 0) { month += 12; year--; }
  if (flip) {
    micros = -micros; second = -second; minute = -minute; hour = -hour; day = -day; month = -month; year = -year;
  }
  return {
    months: year * 12 + month + 0,
    days: day + 0,
    micros: hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + second * MICROS_PER_SECOND + micros + 0,
  };
}
