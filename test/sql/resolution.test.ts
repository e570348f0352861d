// Differential: which operator/function PostgreSQL 15 picks (seen through the result type,
// pg_typeof) and select_common_type, vs sql/function-resolution.ts; ORDER BY order vs
// compareValues; hashValue agrees with compareValues (property test).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { commonType, compareValues, hashValue, parseValue, resolveFunction, resolveOperator } from '../../sql/functions.js';
import { type, type DataType } from '../../sql/types.js';
import { Numeric } from '../../sql/numeric.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const displayNames: Record<string, string> = {
  int2: 'smallint', int4: 'integer', int8: 'bigint', float4: 'real', float8: 'double precision', numeric: 'numeric', text: 'text', bool: 'boolean',
  date: 'date', time: 'time without time zone', timestamp: 'timestamp without time zone', timestamptz: 'timestamp with time zone', interval: 'interval',
  jsonb: 'jsonb', varchar: 'character varying', bytea: 'bytea', unknown: 'unknown',
};
const display = (t: DataType) => (t.name === 'array' ? `${displayNames[t.element!.name]}[]` : displayNames[t.name]!);
/** A SQL expression of the type: a typed NULL, or an untyped literal for 'unknown'. */
const operand = (t: DataType) => (t.name === 'unknown' ? "'1'" : `NULL::${t.name}`);

async function pgTypeOf(expression: string): Promise<string> {
  const outcome = await server.tryQuery(`SELECT pg_typeof(${expression})::text`);
  return outcome.ok ? outcome.rows[0]![0]! : `error ${outcome.code}`;
}

const names = ['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'text', 'date', 'timestamp', 'timestamptz', 'interval', 'unknown'] as const;

describe('resolution', () => {
  it('binary operators pick the same result type as PostgreSQL', async () => {
    const mismatched: string[] = [];
    for (const op of ['+', '-', '*', '/', '%', '||', '<']) {
      for (const left of names) {
        for (const right of names) {
          if (left === 'unknown' && right === 'unknown') continue;
          const resolved = resolveOperator(op, type(left), type(right));
          const ours = resolved === undefined ? 'error 42883' : display(resolved.fn.returnType);
          const theirs = await pgTypeOf(`${operand(type(left))} ${op} ${operand(type(right))}`);
          // a 22xxx error is PostgreSQL failing to read the literal '1' as a date: resolution succeeded
          if (theirs.startsWith('error 22')) continue;
          if (ours !== theirs && !(theirs.startsWith('error') && ours.startsWith('error'))) mismatched.push(`${left} ${op} ${right}: ours ${ours}, postgres ${theirs}`);
        }
      }
    }
    expect(mismatched).toEqual([]);
  }, 30_000);
  it('functions pick the same overload as PostgreSQL', async () => {
    const calls: [string, DataType[]][] = [
      ['abs', [type('int2')]], ['abs', [type('unknown')]], ['round', [type('int4')]], ['round', [type('float4')]], ['round', [type('numeric'), type('int4')]],
      ['round', [type('unknown')]], ['sqrt', [type('int4')]], ['length', [type('unknown')]], ['substr', [type('unknown'), type('int4')]],
      ['date_trunc', [type('unknown'), type('timestamptz')]], ['date_trunc', [type('unknown'), type('date')]], ['power', [type('int4'), type('int4')]],
      ['power', [type('numeric'), type('int4')]], ['mod', [type('int2'), type('int8')]], ['concat', [type('int4'), type('unknown')]], ['lpad', [type('unknown'), type('int4')]],
      ['extract', [type('unknown'), type('date')]], ['age', [type('timestamp')]], ['floor', [type('int8')]], ['trunc', [type('float4')]],
    ];
    const mismatched: string[] = [];
    for (const [name, args] of calls) {
      const resolved = resolveFunction(name, args);
      const ours = resolved === undefined ? 'error 42883' : display(resolved.fn.returnType);
      const sqlName = name === 'extract' ? 'pg_catalog.extract' : name;
      const theirs = await pgTypeOf(`${sqlName}(${args.map(operand).join(', ')})`);
      if (ours !== theirs) mismatched.push(`${name}(${args.map((a) => a.name).join(', ')}): ours ${ours}, postgres ${theirs}`);
    }
    expect(mismatched).toEqual([]);
  });
  it('commonType is select_common_type', async () => {
    const mismatched: string[] = [];
    for (const a of names) {
      for (const b of names) {
        const ours = commonType([type(a), type(b)]);
        const theirs = await pgTypeOf(`CASE WHEN random() < 2 THEN ${operand(type(a))} ELSE ${operand(type(b))} END`);
        const oursText = ours === undefined ? 'error 42804' : display(ours);
        if (theirs.startsWith('error 22')) continue;
        if (oursText !== theirs && !(a === 'unknown' && b === 'unknown')) mismatched.push(`${a}, ${b}: ours ${oursText}, postgres ${theirs}`);
      }
    }
    expect(mismatched).toEqual([]);
  }, 30_000);
});

describe('ordering and hashing', () => {
  it('compareValues sorts like ORDER BY (C collation)', async () => {
    const cases: [string, string[]][] = [
      ['float8', ['NaN', 'Infinity', '-Infinity', '0', '-0', '1.5', '-2', '1e300', '5e-324']],
      ['numeric', ['NaN', 'Infinity', '-Infinity', '0', '0.00', '1.5', '-2', '1e30', '0.000001', '1.50']],
      ['text', ['', 'a', 'B', 'b', 'ab', 'é', 'z', '😀', '\uFFFD', 'A', ' ', 'a ']],
      ['interval', ['1 mon', '29 days', '31 days', '720 hours', '-1 day', '1 day', '1 year', '360 days']],
      ['jsonb', ['null', '[]', '[1]', '[1, 2]', '{}', '{"a": 1}', '{"b": 1}', '{"aa": 1}', '1', '"a"', 'true', 'false', '[[]]', '{"a": {"b": 1}}']],
      ['bytea', ['\\x', '\\x00', '\\xff', '\\x0001', '\\x01']],
      ['date', ['infinity', '-infinity', '2020-01-01', '0001-01-01 BC', '1970-01-01']],
    ];
    for (const [typeName, values] of cases) {
      const dataType = type(typeName as never);
      const ours = values.map((text) => ({ text, value: parseValue(text, dataType) }))
        .sort((x, y) => compareValues(x.value, y.value, dataType) || values.indexOf(x.text) - values.indexOf(y.text))
        .map((x) => x.text);
      const collate = typeName === 'text' ? ' COLLATE "C"' : '';
      const result = await server.query(`SELECT v FROM unnest($1::text[]) WITH ORDINALITY u(v, n) ORDER BY v::${typeName}${collate}, n`, [values]);
      expect(ours, typeName).toEqual(result.rows.map((row) => row[0]));
    }
  });
  it('hashValue is equal whenever compareValues says equal', () => {
    const numeric = type('numeric');
    fc.assert(fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 }), (unscaled, scale, extra) => {
      const a = new Numeric(unscaled, scale);
      const b = new Numeric(unscaled * 10n ** BigInt(extra), scale + extra);
      expect(compareValues(a, b, numeric)).toBe(0);
      expect(hashValue(a, numeric)).toBe(hashValue(b, numeric));
    }), { seed: 1, numRuns: 300 });
    const interval = type('interval');
    fc.assert(fc.property(fc.integer({ min: -1000, max: 1000 }), (months) => {
      const a = { months, days: 0, micros: 0 };
      const b = { months: 0, days: months * 30, micros: 0 };
      const c = { months: 0, days: 0, micros: months * 30 * 86_400_000_000 };
      expect(hashValue(a, interval)).toBe(hashValue(b, interval));
      expect(hashValue(b, interval)).toBe(hashValue(c, interval));
    }), { seed: 2, numRuns: 200 });
    expect(hashValue(0, type('float8'))).toBe(hashValue(-0, type('float8')));
    expect(hashValue(NaN, type('float8'))).toBe(hashValue(-NaN, type('float8')));
    const jsonb = type('jsonb');
    expect(hashValue(parseValue('{"a": 1.0, "b": [2]}', jsonb), jsonb)).toBe(hashValue(parseValue('{"b": [2.00], "a": 1}', jsonb), jsonb));
    expect(compareValues(parseValue('{"a": 1.0, "b": [2]}', jsonb), parseValue('{"b": [2.00], "a": 1}', jsonb), jsonb)).toBe(0);
    expect(hashValue(1, type('int4'))).toBe(hashValue(1n, type('int8')));
    expect(hashValue('ab  ', type('bpchar'))).toBe(hashValue('ab', type('bpchar')));
  });
});
