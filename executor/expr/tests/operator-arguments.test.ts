// The argument array of built-in operators and of the functions marked so (sql/functions.ts
// `argumentsBorrowed`: length, replace, split_part, extract, date_part): a compiled call (expression.ts
// compileCall) passes one array to every row's call. That is right only while the impl keeps no
// reference to the array: checked here for every registered binary operator and every marked
// function over sample values of its argument types (its result does not change when the array
// it was given is overwritten), and the compiled call row after row (NULLs, a row whose call
// throws, the same subexpression as both arguments) against the impl called with a new array per
// row.

import { describe, expect, it } from 'vitest';
import { allFunctions, allOperators, DEFAULT_EVAL_CONTEXT, parseValue, resolveOperator } from '../../../sql/functions.js';
import { arrayOf, type, type DataType } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import type { Expression } from '../../../planner/expression.js';
import { compile, type EvalRuntime } from '../expression.js';

/** Values of a type, as text (parseValue reads them). */
const SAMPLES: Record<string, readonly string[]> = {
  bool: ['t', 'f'],
  int2: ['7', '-3'],
  int4: ['7', '-3'],
  int8: ['7', '-9000000000'],
  numeric: ['1.5', '-20'],
  float4: ['2.5', '-1'],
  float8: ['2.5', '-1e10'],
  text: ['ab', 'ba'],
  varchar: ['ab', 'c'],
  bpchar: ['ab', 'c'],
  name: ['ab', 'c'],
  date: ['2020-01-02', '1999-12-31'],
  time: ['03:04:05', '23:00:00'],
  timestamp: ['2020-01-02 03:04:05', '1999-12-31 23:59:59'],
  timestamptz: ['2020-01-02 03:04:05+00', '1999-12-31 23:59:59+00'],
  interval: ['1 day 02:00:00', '-3 months'],
  jsonb: ['{"a": [1, 2], "b": "x"}', '[1, "a", null]'],
  json: ['{"a": [1, 2]}', '[1]'],
  bytea: ['\\x0102', '\\xff'],
  uuid: ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '00000000-0000-0000-0000-000000000001'],
};

function samples(t: DataType): Value[] | undefined {
  if (t.name === 'array') {
    const element = t.element === undefined ? undefined : SAMPLES[t.element.name];
    // Arrays of the element samples that need no quoting in an array literal (not the vector types, written otherwise).
    if (element === undefined || !element.every((text) => /^[\w.:-]+$/.test(text))) return undefined;
    try {
      return [parseValue(`{${element.join(',')}}`, t)];
    } catch {
      return undefined;
    }
  }
  return SAMPLES[t.name]?.map((text) => parseValue(text, t));
}

const runtime: EvalRuntime = {
  parameters: [],
  evalContext: DEFAULT_EVAL_CONTEXT,
  outer: [],
  subqueryCache: new Map(),
  runPlan: () => {
    throw new Error('no plans here');
  },
};

describe('operators borrow their argument array', () => {
  it('every operator is marked, and only the functions named above', () => {
    expect(allOperators().length).toBeGreaterThan(100);
    for (const fn of allOperators()) expect(fn.argumentsBorrowed, fn.name).toBe(true);
    const marked = allFunctions()
      .filter((fn) => fn.argumentsBorrowed === true)
      .map((fn) => `${fn.name}(${fn.argumentTypes.map((t) => t.name).join(',')})`)
      .sort();
    expect(marked).toEqual(
      [
        'char_length(text)',
        'character_length(text)',
        'date_part(text,timestamp)',
        'date_part(text,timestamptz)',
        'extract(text,timestamp)',
        'extract(text,timestamptz)',
        'length(text)',
        'replace(text,text,text)',
        'split_part(text,text,int4)',
      ].sort(),
    );
  });

  it("no marked function's result holds on to the array it was given", () => {
    const text = type('text');
    const extra: Record<string, Value[]> = {
      // Fields of extract and date_part, delimiters and URLs for split_part and replace.
      text: ['hour', 'epoch', 'https://a.b/c/d', '/', 'ab'],
      int4: [1, 4, -1, 0],
    };
    let checked = 0;
    for (const fn of allFunctions()) {
      if (fn.argumentsBorrowed !== true) continue;
      const domains = fn.argumentTypes.map((t) => [...(samples(t) ?? []), ...(extra[t.name] ?? [])]);
      let tuples: Value[][] = [[]];
      for (const domain of domains) tuples = tuples.flatMap((tuple) => domain.map((value) => [...tuple, value]));
      for (const tuple of tuples) {
        const args = [...tuple];
        let result: Value;
        try {
          result = fn.impl(args, DEFAULT_EVAL_CONTEXT);
        } catch {
          continue;
        }
        const expected = fn.impl([...tuple], DEFAULT_EVAL_CONTEXT);
        args.fill(null);
        expect(result, `${fn.name}(${tuple.map(String).join(', ')})`).toEqual(expected);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(200);
    // A three-argument call compiled: one array for every row, each row's own result, NULLs and errors.
    const int4 = type('int4');
    const splitPart = allFunctions().find((fn) => fn.name === 'split_part')!;
    const column = (index: number, t: DataType): Expression => ({ kind: 'Column', index, type: t });
    const call = compile({ kind: 'Call', fn: splitPart, args: [column(0, text), column(1, text), column(2, int4)], type: text });
    const rows: Row[] = [
      ['https://www.nexmark.com/a/b/c/item.htm', '/', 4],
      ['x/y', null, 1],
      ['p::q::r', '::', 2],
      ['p::q::r', '::', 0],
      ['a,b,c', ',', -1],
      [null, ',', 1],
      ['a,b,c', ',', 9],
    ];
    const expected = ['a', null, 'q', 'error', 'c', null, ''];
    rows.forEach((row, i) => {
      if (expected[i] === 'error') expect(() => call(row, runtime)).toThrow(/must not be zero/);
      else expect(call(row, runtime)).toBe(expected[i]);
    });
  });

  it("no binary operator's result holds on to the array it was given", () => {
    let checked = 0;
    for (const fn of allOperators()) {
      if (fn.argumentTypes.length !== 2) continue;
      const left = samples(fn.argumentTypes[0]!);
      const right = samples(fn.argumentTypes[1]!);
      if (left === undefined || right === undefined) continue;
      for (const a of left) {
        for (const b of right) {
          const args: Value[] = [a, b];
          let result: Value;
          try {
            result = fn.impl(args, DEFAULT_EVAL_CONTEXT);
          } catch {
            continue;
          }
          const expected = fn.impl([a, b], DEFAULT_EVAL_CONTEXT);
          // Whatever the impl kept of `args` changes now.
          args[0] = null;
          args[1] = null;
          expect(result, `${fn.name}(${fn.argumentTypes.map((t) => t.name).join(', ')})`).toEqual(expected);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('a compiled call gives each row its own result, through NULLs and errors', () => {
    const int8 = type('int8');
    const plus = resolveOperator('+', int8, int8)!.fn;
    const times = resolveOperator('*', int8, int8)!.fn;
    expect(plus.argumentsBorrowed).toBe(true);
    const column = (index: number): Expression => ({ kind: 'Column', index, type: int8 });
    const sum: Expression = { kind: 'Call', fn: plus, args: [column(0), column(1)], type: int8 };
    // The same subexpression as both arguments of the outer call.
    const square: Expression = { kind: 'Call', fn: times, args: [sum, sum], type: int8 };
    const evaluateSum = compile(sum);
    const evaluateSquare = compile(square);
    const max = 2n ** 63n - 1n;
    const rows: Row[] = [[1n, 2n], [null, 5n], [max, 1n], [-4n, 4n], [3n, null], [10n, -3n], [2n ** 31n, 2n ** 31n]];
    for (const row of rows) {
      const [a, b] = row as [bigint | null, bigint | null];
      if (a === null || b === null) {
        expect(evaluateSum(row, runtime)).toBeNull();
        expect(evaluateSquare(row, runtime)).toBeNull();
        continue;
      }
      if (a + b > max) {
        // 22003 bigint out of range, and the next row is its own.
        expect(() => evaluateSum(row, runtime)).toThrow(/out of range/);
        continue;
      }
      expect(evaluateSum(row, runtime)).toBe(a + b);
      if ((a + b) * (a + b) > max) expect(() => evaluateSquare(row, runtime)).toThrow(/out of range/);
      else expect(evaluateSquare(row, runtime)).toBe((a + b) * (a + b));
    }
    // Array results stay the row's own too: array || array, each row's result kept.
    const ints = arrayOf(type('int4'));
    const concat = resolveOperator('||', ints, ints)!.fn;
    const join = compile({ kind: 'Call', fn: concat, args: [{ kind: 'Column', index: 0, type: ints }, { kind: 'Column', index: 1, type: ints }], type: ints });
    const first = join([{ kind: 'array', elements: [1] }, { kind: 'array', elements: [2] }], runtime);
    const second = join([{ kind: 'array', elements: [3] }, { kind: 'array', elements: [4, 5] }], runtime);
    expect(first).toEqual({ kind: 'array', elements: [1, 2] });
    expect(second).toEqual({ kind: 'array', elements: [3, 4, 5] });
  });
});
