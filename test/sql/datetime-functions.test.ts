// Differential: date/time operators and functions of sql/ vs a real PostgreSQL 15, across time
// zones with DST (gaps, overlaps), leap days, month ends and BC dates.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { type } from '../../sql/types.js';
import { check } from './check.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const SEED = 777;
const pad = (value: number, width = 2) => String(value).padStart(width, '0');
function sample<T>(arbitrary: fc.Arbitrary<T>, count: number): T[] {
  return fc.sample(arbitrary, { numRuns: count, seed: SEED });
}

const timestamps = [
  ...sample(fc.tuple(fc.integer({ min: 1700, max: 2250 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), fc.integer({ min: 0, max: 86399 }), fc.integer({ min: 0, max: 999999 })), 60)
    .map(([y, m, d, s, us]) => `${y}-${pad(m)}-${pad(d)} ${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}.${pad(us, 6)}`),
  '2020-02-29 12:00:00', '2021-01-31 23:59:59.999999', '2021-03-28 01:30:00', '2021-03-28 02:30:00', '2021-10-31 02:30:00', '2018-03-11 02:30:00',
  '2018-11-04 01:30:00', '2000-12-31 00:00:00', '1999-01-01 00:00:00', '2021-01-03 10:00:00', '2020-12-31 10:00:00', '2024-12-30 00:00:00',
];
const intervals = ['1 mon', '1 day', '1 hour', '-1 mon', '1 year 2 mons 3 days 04:05:06.789', '30 days', '-1 day +2 hours', '12 mons', '1 mon -1 day', '0', '25 hours', '2 days 30 minutes'];
const zones = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'];
const fields = ['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year', 'decade', 'century', 'millennium', 'dow', 'isodow', 'doy', 'isoyear', 'epoch', 'julian'];

describe('date/time arithmetic', () => {
  it('timestamp +- interval, timestamp - timestamp, date arithmetic', async () => {
    const rows = timestamps.flatMap((ts) => intervals.map((iv) => [ts, iv]));
    await check(server, { name: '+', operator: true, types: [type('timestamp'), type('interval')] }, rows);
    await check(server, { name: '-', operator: true, types: [type('timestamp'), type('interval')] }, rows);
    const pairs = timestamps.slice(0, 30).flatMap((a) => timestamps.slice(40).map((b) => [a, b]));
    await check(server, { name: '-', operator: true, types: [type('timestamp'), type('timestamp')] }, pairs);
    const dates = ['2020-02-29', '2021-01-31', '0001-01-01', '2000-03-01', '1999-12-31', '5874897-12-30', '4713-11-25 BC', 'infinity'];
    await check(server, { name: '+', operator: true, types: [type('date'), type('int4')] }, dates.flatMap((d) => ['1', '-1', '365', '-730', '2'].map((n) => [d, n])));
    await check(server, { name: '-', operator: true, types: [type('date'), type('date')] }, dates.slice(0, 6).flatMap((a) => dates.slice(0, 6).map((b) => [a, b])));
    await check(server, { name: '+', operator: true, types: [type('date'), type('interval')] }, dates.slice(0, 5).flatMap((d) => intervals.map((iv) => [d, iv])));
    await check(server, { name: '*', operator: true, types: [type('interval'), type('float8')] }, intervals.flatMap((iv) => ['2', '0.5', '-1.5', '1.1', '0.333'].map((f) => [iv, f])));
    await check(server, { name: '+', operator: true, types: [type('interval'), type('interval')] }, intervals.flatMap((a) => intervals.slice(0, 4).map((b) => [a, b])));
  });
  it('timestamptz +- interval moves local time across DST in every zone', async () => {
    const rows = timestamps.flatMap((ts) => intervals.map((iv) => [ts, iv]));
    for (const zone of zones) {
      await check(server, { name: '+', operator: true, types: [type('timestamptz'), type('interval')] }, rows, { timeZone: zone });
      await check(server, { name: '-', operator: true, types: [type('timestamptz'), type('timestamptz')] }, timestamps.slice(0, 20).map((a, i) => [a, timestamps[i + 40]!]), { timeZone: zone });
    }
  });
});

describe('date/time functions', () => {
  it('extract and date_part for every field', async () => {
    const rows = fields.flatMap((field) => timestamps.slice(0, 25).concat(timestamps.slice(60)).map((ts) => [field, ts]));
    await check(server, { name: 'extract', types: [type('text'), type('timestamp')] }, rows, { sql: 'pg_catalog.extract($1, $2)' });
    await check(server, { name: 'date_part', types: [type('text'), type('timestamp')] }, rows);
    for (const zone of ['Europe/Paris', 'Asia/Kolkata']) {
      await check(server, { name: 'extract', types: [type('text'), type('timestamptz')] }, [...rows, ...timestamps.slice(0, 5).map((ts) => ['timezone', ts])], { sql: 'pg_catalog.extract($1, $2)', timeZone: zone });
    }
    const dateFields = ['day', 'week', 'month', 'quarter', 'year', 'decade', 'century', 'millennium', 'dow', 'isodow', 'doy', 'isoyear', 'epoch', 'julian', 'hour'];
    const dates = ['2020-02-29', '2021-01-03', '0001-01-01', '0001-12-31 BC', '0011-06-01 BC', '2000-12-31', '2001-01-01', 'infinity', '-infinity'];
    await check(server, { name: 'extract', types: [type('text'), type('date')] }, dateFields.flatMap((f) => dates.map((d) => [f, d])), { sql: 'pg_catalog.extract($1, $2)' });
    const intervalFields = ['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day', 'month', 'quarter', 'year', 'decade', 'century', 'millennium', 'epoch'];
    await check(server, { name: 'extract', types: [type('text'), type('interval')] }, intervalFields.flatMap((f) => [...intervals, '-1 year -2 mons', '100 years 5 mons 40 days 50:10:05.5'].map((iv) => [f, iv])), { sql: 'pg_catalog.extract($1, $2)' });
    await check(server, { name: 'extract', types: [type('text'), type('time')] }, ['microseconds', 'second', 'minute', 'hour', 'epoch'].map((f) => [f, '13:45:12.345678']), { sql: 'pg_catalog.extract($1, $2)' });
  });
  it('date_trunc, including timestamptz across DST', async () => {
    const units = ['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year', 'decade', 'century', 'millennium'];
    const rows = units.flatMap((unit) => timestamps.slice(0, 15).concat(timestamps.slice(60)).map((ts) => [unit, ts]));
    await check(server, { name: 'date_trunc', types: [type('text'), type('timestamp')] }, rows);
    for (const zone of zones) await check(server, { name: 'date_trunc', types: [type('text'), type('timestamptz')] }, rows, { timeZone: zone });
    await check(server, { name: 'date_trunc', types: [type('text'), type('interval')] }, units.flatMap((unit) => intervals.map((iv) => [unit, iv])));
  });
  it('age, justify, date_bin, make_date, AT TIME ZONE', async () => {
    const pairs = timestamps.slice(0, 40).map((a, i) => [a, timestamps[(i * 7) % timestamps.length]!]);
    await check(server, { name: 'age', types: [type('timestamp'), type('timestamp')] }, pairs);
    for (const name of ['justify_hours', 'justify_days', 'justify_interval']) {
      await check(server, { name, types: [type('interval')] }, [...intervals, '35 days 30 hours', '-35 days 30 hours', '1 mon -40 days -30 hours', '-1 mon 40 days'].map((iv) => [iv]));
    }
    await check(server, { name: 'date_bin', types: [type('interval'), type('timestamp'), type('timestamp')] },
      timestamps.slice(0, 20).flatMap((ts) => [['15 minutes', ts, '2001-01-01'], ['1 day 2 hours', ts, '1999-12-31 05:00'], ['7 days', ts, '2000-01-03']]));
    await check(server, { name: 'make_date', types: [type('int4'), type('int4'), type('int4')] }, [['2020', '2', '29'], ['2021', '2', '29'], ['-44', '3', '15'], ['0', '1', '1'], ['2020', '13', '1']]);
    for (const zone of ['UTC', 'America/New_York', 'Asia/Kolkata', '+03', 'UTC+3']) {
      await check(server, { name: 'timezone', types: [type('text'), type('timestamptz')] }, timestamps.slice(0, 10).map((ts) => [zone, ts]), { sql: '$2 AT TIME ZONE $1', timeZone: 'Europe/Paris' });
      await check(server, { name: 'timezone', types: [type('text'), type('timestamp')] }, timestamps.slice(60).map((ts) => [zone, ts]), { sql: '$2 AT TIME ZONE $1' });
    }
  });
  it('to_char with the common patterns', async () => {
    const templates = ['YYYY-MM-DD HH24:MI:SS', 'YYYY-MM-DD"T"HH24:MI:SS.US', 'DD Mon YYYY', 'FMDD FMMonth YYYY', 'Day, DD Month YYYY', 'HH12:MI AM', 'hh12:mi pm',
      'YYYY-"Q"Q', 'IYYY-IW-ID', 'DDD', 'MS US', 'FMDDth', 'DDTH', 'WW W', 'J', 'CC', 'Y,YYY', 'mon month MON', 'dy DY', 'SSSS', 'FF3', 'YYYY BC', 'RM'];
    const rows = templates.flatMap((template) => timestamps.slice(0, 8).concat(timestamps.slice(60, 66)).map((ts) => [ts, template]));
    await check(server, { name: 'to_char', types: [type('timestamp'), type('text')] }, rows);
    await check(server, { name: 'to_char', types: [type('timestamptz'), type('text')] }, ['YYYY-MM-DD HH24:MI:SS OF', 'HH24:MI TZH:TZM'].flatMap((template) => timestamps.slice(0, 10).map((ts) => [ts, template])), { timeZone: 'Asia/Kolkata' });
    await check(server, { name: 'to_char', types: [type('interval'), type('text')] }, intervals.map((iv) => [iv, 'HH24:MI:SS']));
  });
  it('to_char of numbers', async () => {
    const templates = ['999', '9999.99', 'FM9999.99', '0000', 'FM0000', '9,999', 'FM9,999,999.00', 'S999', '999MI', '999PR', '9.9EEEE', 'FM999.999', '00.00', 'SG999'];
    const values = ['0', '1', '-1', '12.345', '-12.345', '1234.5', '-1234.5', '0.5', '99999', '0.001'];
    await check(server, { name: 'to_char', types: [type('numeric'), type('text')] }, templates.flatMap((template) => values.map((v) => [v, template])));
  });
});

describe('to_timestamp and to_date', () => {
  it('read the common templates', async () => {
    const rows = [
      ['2020-03-05 14:07:09', 'YYYY-MM-DD HH24:MI:SS'], ['05 Mar 2020', 'DD Mon YYYY'], ['March 5, 2020', 'Month DD, YYYY'], ['20200305', 'YYYYMMDD'],
      ['2020-03-05 02:07:09 PM', 'YYYY-MM-DD HH12:MI:SS AM'], ['2020-03-05 12:00 AM', 'YYYY-MM-DD HH:MI AM'], ['2020-03-05 14:07:09.123', 'YYYY-MM-DD HH24:MI:SS.MS'],
      ['2020-03-05 14:07:09.123456', 'YYYY-MM-DD HH24:MI:SS.US'], ['2020/065', 'YYYY/DDD'], ['2020-02-30', 'YYYY-MM-DD'], ['2020-13-01', 'YYYY-MM-DD'],
      ['99-01-02', 'YY-MM-DD'], ['2020-03-05 14:07 +05:30', 'YYYY-MM-DD HH24:MI TZH:TZM'], ['2020-03-05 14:07 -03', 'YYYY-MM-DD HH24:MI TZH'], ['xx', 'YYYY'],
    ];
    for (const zone of ['UTC', 'Europe/Paris']) {
      await check(server, { name: 'to_timestamp', types: [type('text'), type('text')] }, rows, { timeZone: zone });
    }
    await check(server, { name: 'to_date', types: [type('text'), type('text')] }, rows.slice(0, 12));
  });
});
