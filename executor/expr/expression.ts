// Compiles bound expressions (planner/expression.ts) into evaluator functions once per plan, so a
// row costs one call per expression node and no dispatch on the node kind. Three-valued logic as
// PostgreSQL: AND is false if any operand is false, else NULL if any is NULL; strict functions
// return NULL on a NULL argument without being called. Subqueries run their plan through the
// operator table; an uncorrelated one runs once per execution.

import type { Row, SqlArray, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { compareValues } from '../../sql/functions.js';
import type { Expression } from '../../planner/expression.js';
import type { EvalContext } from '../../sql/functions.js';
import type { Plan } from '../../planner/plan.js';
import { KeyMap } from './row-hash.js';

/**
 * What a compiled expression reads while it runs; the batch executor's Runtime extends it, and
 * supplies `runPlan`, through which a subquery's plan runs.
 */
export interface EvalRuntime {
  readonly parameters: readonly Value[];
  readonly evalContext: EvalContext;
  /** Enclosing rows, innermost last: OuterColumn depth d reads outer[outer.length - d]. */
  readonly outer: Row[];
  /** Results of uncorrelated subqueries, computed once per execution. */
  readonly subqueryCache: Map<object, unknown>;
  runPlan(plan: Plan, runtime: this): Iterable<Row[]>;
}

type Runtime = EvalRuntime;

export type Evaluator = (row: Row, runtime: Runtime) => Value;

const cache = new WeakMap<Expression, Evaluator>();

export function compile(expression: Expression): Evaluator {
  let evaluator = cache.get(expression);
  if (evaluator === undefined) {
    evaluator = compileUncached(expression);
    cache.set(expression, evaluator);
  }
  return evaluator;
}

/** Evaluates a predicate: only true passes (NULL and false do not). */
export function compilePredicate(expression: Expression): (row: Row, runtime: Runtime) => boolean {
  const evaluate = compile(expression);
  return (row, runtime) => evaluate(row, runtime) === true;
}

function compileUncached(e: Expression): Evaluator {
  switch (e.kind) {
    case 'Literal': {
      const value = e.value;
      return () => value;
    }
    case 'Column': {
      const index = e.index;
      return (row) => row[index]!;
    }
    case 'OuterColumn': {
      const { depth, index } = e;
      return (_row, runtime) => runtime.outer[runtime.outer.length - depth]![index]!;
    }
    case 'Parameter': {
      const index = e.index;
      return (_row, runtime) => {
        if (index >= runtime.parameters.length) throw new SqlError(SqlState.undefinedParameter, `there is no parameter $${index + 1}`);
        return runtime.parameters[index]!;
      };
    }
    case 'Call':
      return compileCall(e);
    case 'Cast': {
      const input = compile(e.input);
      const impl = e.impl;
      return (row, runtime) => {
        const value = input(row, runtime);
        return value === null ? null : impl(value, runtime.evalContext);
      };
    }
    case 'And': {
      const args = e.args.map(compile);
      return (row, runtime) => {
        let sawNull = false;
        for (let i = 0; i < args.length; i++) {
          const value = args[i]!(row, runtime);
          if (value === false) return false;
          if (value === null) sawNull = true;
        }
        return sawNull ? null : true;
      };
    }
    case 'Or': {
      const args = e.args.map(compile);
      return (row, runtime) => {
        let sawNull = false;
        for (let i = 0; i < args.length; i++) {
          const value = args[i]!(row, runtime);
          if (value === true) return true;
          if (value === null) sawNull = true;
        }
        return sawNull ? null : false;
      };
    }
    case 'Not': {
      const arg = compile(e.arg);
      return (row, runtime) => {
        const value = arg(row, runtime);
        return value === null ? null : !value;
      };
    }
    case 'IsNull': {
      const arg = compile(e.arg);
      const negated = e.negated;
      return (row, runtime) => (arg(row, runtime) === null) !== negated;
    }
    case 'IsBoolean': {
      const arg = compile(e.arg);
      const expected = e.test === 'true' ? true : e.test === 'false' ? false : null;
      const negated = e.negated;
      return (row, runtime) => (arg(row, runtime) === expected) !== negated;
    }
    case 'IsDistinct': {
      const left = compile(e.left);
      const right = compile(e.right);
      const equals = e.equals.impl;
      const negated = e.negated;
      return (row, runtime) => {
        const a = left(row, runtime);
        const b = right(row, runtime);
        let distinct: boolean;
        if (a === null || b === null) distinct = a !== b;
        else distinct = equals([a, b], runtime.evalContext) !== true;
        return distinct !== negated;
      };
    }
    case 'Case': {
      const conditions = e.whens.map((w) => compile(w.condition));
      const results = e.whens.map((w) => compile(w.result));
      const otherwise = compile(e.otherwise);
      return (row, runtime) => {
        for (let i = 0; i < conditions.length; i++) if (conditions[i]!(row, runtime) === true) return results[i]!(row, runtime);
        return otherwise(row, runtime);
      };
    }
    case 'Coalesce': {
      const args = e.args.map(compile);
      return (row, runtime) => {
        for (let i = 0; i < args.length; i++) {
          const value = args[i]!(row, runtime);
          if (value !== null) return value;
        }
        return null;
      };
    }
    case 'NullIf': {
      const left = compile(e.left);
      const right = compile(e.right);
      const equals = e.equals.impl;
      return (row, runtime) => {
        const a = left(row, runtime);
        if (a === null) return null;
        const b = right(row, runtime);
        if (b === null) return a;
        return equals([a, b], runtime.evalContext) === true ? null : a;
      };
    }
    case 'MinMax': {
      const args = e.args.map(compile);
      const type = e.type;
      const sign = e.which === 'greatest' ? 1 : -1;
      return (row, runtime) => {
        let best: Value = null;
        for (let i = 0; i < args.length; i++) {
          const value = args[i]!(row, runtime);
          if (value === null) continue;
          if (best === null || sign * compareValues(value, best, type) > 0) best = value;
        }
        return best;
      };
    }
    case 'Array': {
      const elements = e.elements.map(compile);
      return (row, runtime): SqlArray => ({ kind: 'array', elements: elements.map((element) => element(row, runtime)) });
    }
    case 'ArrayCompare': {
      const test = compile(e.test);
      const array = compile(e.array);
      const compare = e.compare.impl;
      const all = e.all;
      return (row, runtime) => {
        const list = array(row, runtime) as SqlArray | null;
        if (list === null) return null;
        const value = test(row, runtime);
        let sawNull = false;
        for (const element of list.elements) {
          const result = value === null || element === null ? null : compare([value, element], runtime.evalContext);
          if (result === null) sawNull = true;
          else if (result === !all) return !all;
        }
        return sawNull ? null : all;
      };
    }
    case 'Subquery':
      return compileSubquery(e);
  }
}

function compileCall(e: Extract<Expression, { kind: 'Call' }>): Evaluator {
  const args = e.args.map(compile);
  const fn = e.fn;
  const impl = fn.impl;
  const strict = fn.strict;
  if (args.length === 2) {
    const [a, b] = args as [Evaluator, Evaluator];
    if (fn.argumentsBorrowed === true) {
      // An operator (ScalarFunction.argumentsBorrowed): one argument array for every row, filled
      // after both arguments are evaluated and emptied after the call, not a new pair per row.
      const pair: Value[] = [null, null];
      return (row, runtime) => {
        const x = a(row, runtime);
        const y = b(row, runtime);
        if (strict && (x === null || y === null)) return null;
        pair[0] = x;
        pair[1] = y;
        const result = impl(pair, runtime.evalContext);
        pair[0] = null;
        pair[1] = null;
        return result;
      };
    }
    return (row, runtime) => {
      const x = a(row, runtime);
      const y = b(row, runtime);
      if (strict && (x === null || y === null)) return null;
      return impl([x, y], runtime.evalContext);
    };
  }
  if (fn.argumentsBorrowed === true) {
    // One argument array for every row, as for an operator above: emptied after the call (and
    // where a NULL stops a strict call), so it holds no row's values between calls.
    const values: Value[] = new Array<Value>(args.length).fill(null);
    const count = args.length;
    return (row, runtime) => {
      for (let i = 0; i < count; i++) {
        const value = args[i]!(row, runtime);
        if (strict && value === null) {
          for (let j = 0; j < i; j++) values[j] = null;
          return null;
        }
        values[i] = value;
      }
      const result = impl(values, runtime.evalContext);
      for (let i = 0; i < count; i++) values[i] = null;
      return result;
    };
  }
  return (row, runtime) => {
    const values: Value[] = new Array(args.length);
    for (let i = 0; i < args.length; i++) {
      const value = args[i]!(row, runtime);
      if (strict && value === null) return null;
      values[i] = value;
    }
    return impl(values, runtime.evalContext);
  };
}

/** All rows of a subquery plan, with `row` pushed as the enclosing row. */
function subqueryRows(plan: Extract<Expression, { kind: 'Subquery' }>['plan'], row: Row, runtime: Runtime, limit: number): Row[] {
  runtime.outer.push(row);
  try {
    const rows: Row[] = [];
    for (const batch of runtime.runPlan(plan, runtime)) {
      for (const r of batch) {
        rows.push(r);
        if (rows.length >= limit) return rows;
      }
    }
    return rows;
  } finally {
    runtime.outer.pop();
  }
}

interface InSet {
  readonly values: KeyMap<true>;
  readonly hasNull: boolean;
}

function compileSubquery(e: Extract<Expression, { kind: 'Subquery' }>): Evaluator {
  const plan = e.plan;
  const correlated = e.correlated;
  const once = <T>(runtime: Runtime, compute: () => T): T => {
    if (runtime.subqueryCache.has(e)) return runtime.subqueryCache.get(e) as T;
    const value = compute();
    runtime.subqueryCache.set(e, value);
    return value;
  };
  switch (e.mode) {
    case 'exists':
      return (row, runtime) => (correlated ? subqueryRows(plan, row, runtime, 1).length > 0 : once(runtime, () => subqueryRows(plan, row, runtime, 1).length > 0));
    case 'array': {
      const compute = (row: Row, runtime: Runtime): Value => ({ kind: 'array', elements: subqueryRows(plan, row, runtime, Infinity).map((r) => r[0]!) });
      return (row, runtime) => (correlated ? compute(row, runtime) : once(runtime, () => compute(row, runtime)));
    }
    case 'scalar': {
      const compute = (row: Row, runtime: Runtime): Value => {
        const rows = subqueryRows(plan, row, runtime, 2);
        if (rows.length > 1) throw new SqlError(SqlState.cardinalityViolation, 'more than one row returned by a subquery used as an expression');
        return rows.length === 0 ? null : rows[0]![0]!;
      };
      return (row, runtime) => (correlated ? compute(row, runtime) : once(runtime, () => compute(row, runtime)));
    }
    case 'any':
    case 'all': {
      const test = compile(e.test!);
      const compare = e.compare!;
      const any = e.mode === 'any';
      const type: DataType = plan.columns[0]!.type;
      const hashable = any && isEquality(e) && type.name === e.test!.type.name;
      if (hashable && !correlated) {
        return (row, runtime) => {
          const value = test(row, runtime);
          const set = once<InSet>(runtime, () => {
            const values = new KeyMap<true>([type]);
            let hasNull = false;
            for (const r of subqueryRows(plan, row, runtime, Infinity)) {
              if (r[0] === null) hasNull = true;
              else if (values.indexOf([r[0]!]) < 0) values.add([r[0]!], true);
            }
            return { values, hasNull };
          });
          if (value === null) return set.values.size === 0 && !set.hasNull ? false : null;
          if (set.values.indexOf([value]) >= 0) return true;
          return set.hasNull ? null : false;
        };
      }
      return (row, runtime) => {
        const value = test(row, runtime);
        const rows = correlated ? subqueryRows(plan, row, runtime, Infinity) : once(runtime, () => subqueryRows(plan, row, runtime, Infinity));
        let sawNull = false;
        for (const r of rows) {
          const other = r[0]!;
          const result = value === null || other === null ? null : compare.impl([value, other], runtime.evalContext);
          if (result === null) sawNull = true;
          else if (result === any) return any;
        }
        return sawNull ? null : !any;
      };
    }
  }
}

function isEquality(e: Extract<Expression, { kind: 'Subquery' }>): boolean {
  return e.operator === '=';
}
