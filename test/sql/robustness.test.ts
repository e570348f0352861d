// Robustness: every function and operator of the library, called with edge values of its
// argument types (extremes, NaN, infinities, empty strings and arrays, odd jsonb), either returns a
// value of its declared shape or throws a SqlError; nothing else escapes (no TypeError, RangeError
// or hang). No oracle needed: the property is "user input never crashes".
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SqlError } from '../../sql/errors.js';
import { ANY, DEFAULT_EVAL_CONTEXT, allFunctions, allOperators, formatValue, parseValue, resolveFunction, type ScalarFunction } from '../../sql/functions.js';
import { arrayOf, type, type DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';

const edges: Record<string, string[]> = {
  bool: ['t', 'f'],
  int2: ['0', '-1', '32767', '-32768'],
  int4: ['0', '1', '-1', '2147483647', '-2147483648', '100000'],
  int8: ['0', '-1', '9223372036854775807', '-9223372036854775808'],
  float4: ['0', '-0', 'NaN', 'Infinity', '-Infinity', '3.4e38', '1e-45'],
  float8: ['0', '-0', 'NaN', 'Infinity', '-Infinity', '1e308', '5e-324', '-1.5'],
  numeric: ['0', 'NaN', 'Infinity', '-Infinity', '1e100', '-0.000001', '123456789.123456789', '1e-1000'],
  text: ['', ' ', 'abc', '%', '\\', '😀', '(', '[', 'a{2,1}', 'year', 'YYYY-MM-DD', '{"a":1}', 'x'.repeat(300)],
  bytea: ['\\x', '\\x00ff'],
  date: ['2020-02-29', 'infinity', '-infinity', '4713-11-24 BC', '5874897-12-31'],
  time: ['00:00', '24:00', '23:59:59.999999'],
  timestamp: ['2020-01-01 00:00', 'infinity', '-infinity', '294276-12-31 23:59:59', '4713-11-24 00:00 BC'],
  timestamptz: ['2020-01-01 00:00+00', 'infinity', '-infinity', '294276-12-30 00:00+00'],
  interval: ['0', '178000000 years', '-178000000 years', '2147483647 days', '1 day 00:00:00.000001'],
  jsonb: ['null', '[]', '{}', '"s"', '1.5', '[1, [2, {"a": null}]]', '{"a": {"b": 1}}'],
};
edges['varchar'] = edges['text']!;
edges['name'] = edges['text']!;

function valuesOf(t: DataType): Value[] {
  if (t.name === 'array') {
    const element = t.element!;
    const items = valuesOf(element);
    return [{ kind: 'array', elements: [] }, { kind: 'array', elements: [items[0] ?? null, null] }, { kind: 'array', elements: items.slice(0, 3) }];
  }
  return (edges[t.name] ?? []).map((text) => parseValue(text, t));
}

function call(fn: ScalarFunction, args: Value[]): void {
  try {
    const result = fn.impl(args, DEFAULT_EVAL_CONTEXT);
    if (result !== null && fn.returnType.name !== 'unknown') formatValue(result, fn.returnType, DEFAULT_EVAL_CONTEXT);
  } catch (error) {
    if (!(error instanceof SqlError)) throw new Error(`${fn.name}(${fn.argumentTypes.map((t) => t.name).join(', ')}) on ${JSON.stringify(args, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}: ${String(error)}`);
  }
}

/** Every combination of edge values, capped so that wide signatures stay cheap. */
function combinations(types: readonly DataType[], limit: number): Value[][] {
  let rows: Value[][] = [[]];
  for (const t of types) {
    const values = valuesOf(t);
    const next: Value[][] = [];
    for (const row of rows) for (const value of values) if (next.length < limit) next.push([...row, value]);
    rows = next;
  }
  return rows;
}

describe('robustness', () => {
  it('functions and operators throw only SqlErrors on edge inputs', () => {
    let calls = 0;
    for (const fn of [...allFunctions(), ...allOperators()]) {
      if (fn.argumentTypes.some((t) => t === ANY) || fn.variadic !== undefined) continue;
      if (fn.volatility === 'volatile') continue;
      for (const args of combinations(fn.argumentTypes, 400)) {
        call(fn, args);
        calls++;
      }
    }
    expect(calls).toBeGreaterThan(5000);
  });
  it('specialized "any" functions too', () => {
    const typesToTry: DataType[][] = [[type('int4'), type('text')], [arrayOf(type('int4')), type('int4')], [type('jsonb')], [type('timestamptz'), type('bool')]];
    for (const name of ['concat', 'format', 'jsonb_build_object', 'jsonb_build_array', 'to_jsonb', 'array_append', 'array_position', 'cardinality', 'num_nulls']) {
      for (const types of typesToTry) {
        const resolved = resolveFunction(name, name === 'format' ? [type('text'), ...types] : name === 'to_jsonb' || name === 'cardinality' ? types.slice(0, 1) : types);
        if (resolved === undefined) continue;
        for (const args of combinations(resolved.argumentCasts, 200)) call(resolved.fn, args);
      }
    }
  });
});

describe('text input robustness', () => {
  it('parseValue throws only SqlErrors on arbitrary text', () => {
    const types: DataType[] = ['bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'bytea', 'date', 'time', 'timestamp', 'timestamptz', 'interval', 'jsonb']
      .map((name) => type(name as never));
    types.push(arrayOf(type('int4')), arrayOf(type('text')));
    const pieces = fc.constantFrom('1', '-', ':', ' ', '.', 'e', 'T', '2020-01-01', '{', '}', '"', '\\', 'x', 'BC', 'infinity', '+05', 'year', '@', 'ago', 'P', '9'.repeat(30), '[', ']', ',', 'null', 'Z', 'America/New_York', 'Foo/Bar');
    fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 30 }), fc.array(pieces, { maxLength: 12 }).map((parts) => parts.join(''))), (text) => {
      for (const t of types) {
        try {
          const value = parseValue(text, t);
          formatValue(value, t);
        } catch (error) {
          if (!(error instanceof SqlError)) throw new Error(`${t.name} ${JSON.stringify(text)}: ${String(error)}`);
        }
      }
    }), { seed: 3, numRuns: 3000 });
  });
});
