// The argument array of built-in operators (sql/functions.ts `argumentsBorrowed`): a compiled call
// of a binary operator (expression.ts compileCall) passes one array to every row's call. That is
// right only while every operator's impl keeps no reference to the array: checked here for every
// registered binary operator over sample values of its argument types (its result does not change
// when the array it was given is overwritten), and the compiled call row after row (NULLs, a row
// whose call throws, the same subexpression as both arguments) against the impl called with a
// new array per row.

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
  it('every operator is marked, and no function', () => {
    expect(allOperators().length).toBeGreaterThan(100);
    for (const fn of allOperators()) expect(fn.argumentsBorrowed, fn.name).toBe(true);
    for (const fn of allFunctions()) expect(fn.argumentsBorrowed, fn.name).toBeUndefined();
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
