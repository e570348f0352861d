// Differential: PostgreSQL's text input and output of every type, oxbow vs a real PostgreSQL 15.
// Random inputs (fast-check, fixed seeds) and edge cases are parsed and printed by oxbow
// (parseValue then formatValue) and by PostgreSQL (`SELECT $x::type`, its output text); the text
// must match byte for byte, and errors must match in SQLSTATE and message.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { formatValue, parseValue, DEFAULT_EVAL_CONTEXT, type EvalContext } from '../../sql/functions.js';
import { arrayOf, type, type DataType } from '../../sql/types.js';
import { mismatches, ours, theirs } from './differential.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const SEED = 20261129;

async function compare(sqlType: string, dataType: DataType, inputs: (string | null)[], timeZone = 'UTC'): Promise<void> {
  await server.query(`SET TimeZone = '${timeZone}'`);
  const context: EvalContext = { ...DEFAULT_EVAL_CONTEXT, timeZone };
  const mine = inputs.map((input) => ours(() => (input === null ? null : formatValue(parseValue(input, dataType, context), dataType, context))));
  const reference = await theirs(server, `$x::${sqlType}`, inputs);
  expect(mismatches(inputs, mine, reference)).toEqual([]);
}

function sample<T>(arbitrary: fc.Arbitrary<T>, count: number): T[] {
  return fc.sample(arbitrary, { numRuns: count, seed: SEED });
}

const pad = (value: number, width: number) => String(value).padStart(width, '0');

describe('integers', () => {
  it('int2, int4, int8 in and out of range, and bad syntax', async () => {
    const edge = ['0', '-0', '+5', ' 42 ', '12a', '', ' ', '1.5', '1e3', '--1', '0x1f', '007', '32767', '32768', '-32768', '-32769',
      '2147483647', '2147483648', '-2147483648', '-2147483649', '9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809', '99999999999999999999999'];
    const random = sample(fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }), 300).map(String);
    const small = sample(fc.integer({ min: -70000, max: 70000 }), 200).map(String);
    for (const [sqlType, name] of [['int2', 'int2'], ['int4', 'int4'], ['int8', 'int8']] as const) {
      await compare(sqlType, type(name), [...edge, ...random, ...small]);
    }
  });
});

describe('floats', () => {
  it('float8 shortest round-trip output, specials and errors', async () => {
    const doubles = sample(fc.double(), 1500);
    const inputs = doubles.map((d) => (Number.isNaN(d) ? 'NaN' : d === Infinity ? 'Infinity' : d === -Infinity ? '-Infinity' : Object.is(d, -0) ? '-0' : d.toPrecision(17)));
    inputs.push('1e100', '1e15', '1e14', '123456789012345', '1234567890123456', '0.0001', '0.00001', '-0', 'inf', '-inf', 'nan', ' 1.5 ', 'abc', '1e400', '1e-400', '4.9e-324', '1.7976931348623157e308', '.5', '5.', '', '1e', '100', '1e16');
    await compare('float8', type('float8'), inputs);
  });
  it('float4 shortest round-trip output', async () => {
    const floats = sample(fc.float({ noNaN: false }), 1500);
    const inputs = floats.map((f) => (Number.isNaN(f) ? 'NaN' : f === Infinity ? 'Infinity' : f === -Infinity ? '-Infinity' : Object.is(f, -0) ? '-0' : f.toPrecision(9)));
    inputs.push('1000000', '100000', '123456789', '1e38', '3.5e38', '1e-46', '0.1', '16777217', '1e6', '999999', '9999999');
    await compare('float4', type('float4'), inputs);
  });
});

describe('numeric', () => {
  it('random and edge numerics', async () => {
    const random = sample(
      fc.tuple(fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: 0, max: 30 }), fc.integer({ min: -20, max: 20 }), fc.boolean()),
      800,
    ).map(([unscaled, scale, exponent, useExponent]) => {
      const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
      const text = `${unscaled < 0n ? '-' : ''}${digits.slice(0, digits.length - scale)}${scale > 0 ? '.' + digits.slice(digits.length - scale) : ''}`;
      return useExponent ? `${text}e${exponent}` : text;
    });
    const edge = ['NaN', 'nan', 'Infinity', '-Infinity', 'inf', '-inf', '+inf', '0', '-0', '-0.000', '0.0', '.5', '5.', '-.5', '1e-5', '1E+5', '1.50', ' 3.14 ', 'abc', '', '1e', '1.2.3', '--1', '+1', '1e-1000', '0.' + '0'.repeat(999) + '1', '1' + '0'.repeat(100)];
    await compare('numeric', type('numeric'), [...random, ...edge]);
  });
});

describe('bool, text, bytea', () => {
  it('boolean words', async () => {
    const words = ['t', 'f', 'true', 'false', 'TRUE', 'yes', 'no', 'y', 'n', 'on', 'off', 'of', 'o', '1', '0', ' true ', 'tr', 'fa', 'ye', 'maybe', '', '2', 'truee'];
    await compare('bool', type('bool'), words);
  });
  it('bytea hex and escape input', async () => {
    const random = sample(fc.uint8Array({ maxLength: 40 }), 300).map((bytes) => '\\x' + Buffer.from(bytes).toString('hex'));
    const edge = ['\\x', '\\xAbCd', '\\x0', '\\xzz', 'abc', 'a\\\\b', 'a\\001b', 'a\\9', '\\x 01 02', ''];
    await compare('bytea', type('bytea'), [...random, ...edge]);
  });
});

const zones = ['UTC', 'America/New_York', 'Europe/Paris', 'Asia/Kolkata', 'Australia/Lord_Howe', 'America/Sao_Paulo', '+02', '-5', 'UTC+3', '-03:30'];
// Not 'EST5EDT': ICU links it to America/New_York (with LMT before 1883), Debian's tzdata that
// PostgreSQL reads keeps the old rule-only zone.

function dateText(year: number, month: number, day: number): string {
  return year <= 0 ? `${pad(1 - year, 4)}-${pad(month, 2)}-${pad(day, 2)} BC` : `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

const dateParts = fc.tuple(fc.integer({ min: -4000, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }));
const timeParts = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 9999999 }), fc.integer({ min: 0, max: 8 }));

function timeText([hour, minute, second, fraction, digits]: [number, number, number, number, number]): string {
  const fractionText = digits === 0 ? '' : '.' + pad(fraction, 7).slice(0, digits);
  return `${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}${fractionText}`;
}

describe('date and time', () => {
  it('dates, including BC, leap days and invalid days', async () => {
    const random = sample(dateParts, 600).map(([y, m, d]) => dateText(y, m, d));
    const edge = ['2020-02-29', '2019-02-29', '2000-02-29', '1900-02-29', '0001-01-01', '0001-12-31 BC', '4713-11-24 BC', '4714-11-23 BC', '5874897-12-31', '5874898-01-01',
      'infinity', '-infinity', 'epoch', '1999-01-08', 'January 8, 1999', '1/8/1999', '1999-Jan-08', 'Jan-08-1999', '08-Jan-1999', '19990108', '990108', '1999.008',
      '2020-13-01', '2020-00-10', '2020-01-32', 'abc', '', '2020-01-01 10:00', '2020-01-01T10:00:00Z', '  2020-01-01  ', 'Jan 8 99', '12/31/69', '12/31/70', '2020-1-1'];
    await compare('date', type('date'), [...random, ...edge]);
  });
  it('times', async () => {
    const random = sample(timeParts, 400).map(timeText);
    const edge = ['24:00:00', '24:00:01', '23:59:60', '23:59:61', '25:00', '10:00', '10:00 PM', '12:00 AM', '12:30 pm', 'allballs', '1:2:3', '10:00:00.1234565', '10:00:00.1234575', 'abc', '', '2020-01-01 10:11:12'];
    await compare('time', type('time'), [...random, ...edge]);
  });
  it('timestamps, with fractional rounding and BC', async () => {
    // value.ts: timestamps are exact to the microsecond for years 1685..2255; farther ones use whole seconds
    const random = sample(fc.tuple(dateParts, timeParts, fc.boolean()), 600).map(([[y, m, d], time, useT]) => {
      if (y < 1686 || y > 2254) time = [time[0], time[1], time[2], 0, 0];
      const date = dateText(y, m, d);
      const bc = date.endsWith(' BC');
      const base = bc ? date.slice(0, -3) : date;
      return `${base}${useT && !bc ? 'T' : ' '}${timeText(time)}${bc ? ' BC' : ''}`;
    });
    const edge = ['2020-01-01 00:00:00.5', '2020-01-01 23:59:59.9999995', '1999-12-31 23:59:59.9999995', '1970-01-01 00:00:00.0000005', '1969-12-31 23:59:59.9999995',
      '294277-01-01 00:00:00', 'infinity', '-infinity', 'epoch', '2020-01-01 10:00:00+05', '2020-01-01 10:00 America/New_York',
      'Jan 8 1999 04:05:06 PM', '2020-01-01 24:00:00', 'abc', '', '2020-02-30 00:00', '2020-01-01 10:61:00'];
    await compare('timestamp', type('timestamp'), [...random, ...edge]);
  });
  it('timestamptz across time zones, DST gaps and overlaps', async () => {
    const offsets = ['', '', '+00', '-05', '+05:30', '+0530', 'Z', ' UTC', ' Europe/Berlin', '-12', '+14', '+00:19:32'];
    const random = sample(fc.tuple(fc.integer({ min: 1800, max: 2100 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), timeParts, fc.constantFrom(...offsets)), 150)
      .map(([y, m, d, time, offset]) => `${dateText(y, m, d)} ${timeText(time)}${offset}`);
    const dst = ['2018-03-11 02:30', '2018-03-11 01:59:59', '2018-03-11 03:00', '2018-11-04 01:30', '2018-11-04 00:59:59', '2018-11-04 02:00',
      '2021-03-28 02:30', '2021-10-31 02:30', '2021-10-03 02:15', '2021-04-04 01:45', '1883-11-18 12:00', '1900-01-01 00:00', '1911-03-11 00:00',
      '2038-01-19 03:14:08', '2100-07-01 12:00', '0500-01-01 00:00', '2020-01-01 00:00 BC', 'infinity', 'epoch'];
    for (const zone of zones) await compare('timestamptz', type('timestamptz'), [...random, ...dst], zone);
  });
});

describe('interval', () => {
  it('verbose, ISO 8601, SQL-standard and fractional forms', async () => {
    const units = ['year', 'mon', 'day', 'hour', 'minute', 'second', 'week', 'ms', 'us', 'decade', 'century'];
    const random = sample(fc.array(fc.tuple(fc.integer({ min: -1000, max: 1000 }), fc.constantFrom(...units), fc.constantFrom('', '.5', '.25', '.001')), { minLength: 1, maxLength: 4 }), 400)
      .map((parts) => parts.map(([value, unit, fraction]) => `${value}${fraction} ${unit}`).join(' '));
    const edge = ['1 year 2 mons 3 days 04:05:06.789', '@ 1 day ago', '1 day -00:00:01', '-1 days +02:03:00', '00:00:00', '0', '10', '1:30', '-1:30:15.5', '1-2', '-1-2',
      'P1Y2M3DT4H5M6S', 'P1.5Y', 'PT1.5S', 'P1W', 'PT36H', '1.5 months', '1.5 days', '2 weeks 3 days', '3 days ago', '1 day 1 hour ago', '100 hours', '-100:00:00',
      '1 millennium', 'abc', '', '1 parsec', '5 d 4 h', '1 yr 2 mon', '178000000 years', '2147483647 days', '2147483648 days', '1 day 25:00:00', '1 2'];
    await compare('interval', type('interval'), [...random, ...edge]);
  });
});

describe('jsonb', () => {
  it('random documents print with jsonb key order and spacing', async () => {
    const random = sample(fc.jsonValue({ maxDepth: 3 }), 400).map((value) => JSON.stringify(value));
    const edge = ['{"b": 1, "a": 2, "aa": 3, "a": 4}', '[1.50, 1e2, -0, 0.0, 1E-3, 12345678901234567890123]', '"\\u00e9\\n\\t\\"x\\""', '{}', '[]', 'null', 'true',
      '{"a": {"b": [1, {"c": null}]}}', '  [ 1 , 2 ]  ', '{"é": 1, "z": 2, "ab": 3}', '"\\u0001"', 'nul', '{"a" 1}', '[1,]', '', '01', '1.', '-', '"\\u0000"', '"\\ud83d\\ude00"', '{"\\u00e9":1}'];
    await compare('jsonb', type('jsonb'), [...random, ...edge]);
  });
});

describe('arrays', () => {
  it('int4[] and text[] with NULLs and quoting', async () => {
    const ints = sample(fc.array(fc.option(fc.integer(), { nil: null }), { maxLength: 6 }), 200).map((items) => `{${items.map((item) => (item === null ? 'NULL' : String(item))).join(',')}}`);
    await compare('int4[]', arrayOf(type('int4')), [...ints, '{}', '{{1,2},{3,4}}', '{ 1 , 2 }', '{1,2', '{{1},{2,3}}', '1,2', '{"1"}', '{null,NULL,"NULL"}']);
    const strings = sample(fc.array(fc.option(fc.string({ maxLength: 6 }), { nil: null }), { maxLength: 5 }), 200)
      .map((items) => `{${items.map((item) => (item === null ? 'NULL' : '"' + item.replace(/[\\"]/g, '\\$&') + '"')).join(',')}}`);
    await compare('text[]', arrayOf(type('text')), [...strings, '{a,b c,"d,e","",NULL,"null"," x "}', '{"a\\"b","\\\\"}', '{{a,b},{c,d}}']);
  });
});

describe('session settings', () => {
  it('extra_float_digits and IntervalStyle iso_8601 change the output as in PostgreSQL', async () => {
    const doubles = sample(fc.double({ noNaN: true }), 200).map((d) => d.toPrecision(17)).concat(['0.1', '1e100', '123456.789', '1e-5', '-0']);
    for (const digits of [0, -3, 3]) {
      await server.query(`SET extra_float_digits = ${digits}`);
      const context: EvalContext = { ...DEFAULT_EVAL_CONTEXT, extraFloatDigits: digits };
      for (const [sqlType, name] of [['float8', 'float8'], ['float4', 'float4']] as const) {
        const mine = doubles.map((input) => ours(() => formatValue(parseValue(input, type(name), context), type(name), context)));
        const reference = await theirs(server, `$x::${sqlType}`, doubles);
        expect(mismatches(doubles, mine, reference), `${sqlType} extra_float_digits=${digits}`).toEqual([]);
      }
    }
    await server.query('RESET extra_float_digits');
    await server.query('SET IntervalStyle = iso_8601');
    const intervals = ['1 year 2 mons 3 days 04:05:06.789', '-1 day +02:00', '0', '1.5 seconds', '-3 mons', '-00:00:01.5', '10 days'];
    const context: EvalContext = { ...DEFAULT_EVAL_CONTEXT, intervalStyle: 'iso_8601' };
    const mine = intervals.map((input) => ours(() => formatValue(parseValue(input, type('interval'), context), type('interval'), context)));
    const reference = await theirs(server, '$x::interval', intervals);
    await server.query('RESET IntervalStyle');
    expect(mismatches(intervals, mine, reference)).toEqual([]);
  });
});
