// Table functions in FROM (and a select list's set-returning functions, several zipped as
// rows_from, the shorter padded with NULL): generate_subscripts, _pg_expandarray (select list only), generate_series (integers, bigints, numerics, timestamps with an
// interval step), unnest (one-dimensional arrays, in element order) and pg_options_to_table
// ('name=value' text[] as (option_name, option_value) rows), with ORDINALITY.

import type { Row, SqlArray, Value, Interval } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { resolveOperator, compareValues } from '../../sql/functions.js';
import type { PlanOf } from '../../planner/plan.js';
import { BATCH_SIZE, PAUSE, checkDeadline, sliceUsed, type Batches, type Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';

function* series(plan: PlanOf<'TableFunction'>, args: Value[], runtime: Runtime): Iterable<Value> {
  const type = plan.args[0]!.type;
  const start = args[0]!;
  const stop = args[1]!;
  const step = args[2];
  if (start === null || stop === null || step === null) return;
  if (type.name === 'int4') {
    const by = (step as number | undefined) ?? 1;
    if (by === 0) throw new SqlError(SqlState.invalidParameterValue, 'step size cannot equal zero');
    for (let v = start as number; by > 0 ? v <= (stop as number) : v >= (stop as number); v += by) yield v;
    return;
  }
  if (type.name === 'int8') {
    const by = (step as bigint | undefined) ?? 1n;
    if (by === 0n) throw new SqlError(SqlState.invalidParameterValue, 'step size cannot equal zero');
    for (let v = start as bigint; by > 0n ? v <= (stop as bigint) : v >= (stop as bigint); v += by) yield v;
    return;
  }
  // numeric and timestamps: through the library's + operator; the step's sign says the direction.
  const stepType = plan.args[2]?.type ?? type;
  const plus = plusOf(plan, type, stepType);
  if (plus === undefined) throw new SqlError(SqlState.featureNotSupported, `generate_series over ${type.name} is not supported`);
  if (step === undefined) throw new SqlError(SqlState.featureNotSupported, `generate_series over ${type.name} needs a step`);
  const direction = stepType.name === 'interval' ? intervalSign(step as Interval) : compareValues(step, subtract(step, step, runtime, stepType), stepType);
  if (direction === 0) throw new SqlError(SqlState.invalidParameterValue, 'step size cannot equal zero');
  let current: Value = start;
  for (;;) {
    // Infinite timestamps give NaN bounds (HOP's window start of 'infinity' is infinity - infinity):
    // every comparison with NaN fails, so the series would never end.
    if (Number.isNaN(current) || Number.isNaN(stop)) throw new SqlError(SqlState.datetimeFieldOverflow, 'timestamp out of range');
    const order = compareValues(current, stop, type);
    if (direction > 0 ? order > 0 : order < 0) return;
    yield current;
    current = plus.fn.impl([current, step], runtime.evalContext);
  }
}

/** The `+` of a numeric or timestamp series, resolved once per plan: a streaming HOP runs the series once per row. */
const plusByPlan = new WeakMap<PlanOf<'TableFunction'>, ReturnType<typeof resolveOperator>>();

function plusOf(plan: PlanOf<'TableFunction'>, type: PlanOf<'TableFunction'>['args'][number]['type'], stepType: PlanOf<'TableFunction'>['args'][number]['type']): ReturnType<typeof resolveOperator> {
  if (plusByPlan.has(plan)) return plusByPlan.get(plan);
  const plus = resolveOperator('+', type, stepType);
  plusByPlan.set(plan, plus);
  return plus;
}

function intervalSign(i: Interval): number {
  const approx = i.months * 30 * 86_400_000_000 + i.days * 86_400_000_000 + i.micros;
  return Math.sign(approx);
}

function subtract(a: Value, b: Value, runtime: Runtime, type: PlanOf<'TableFunction'>['args'][number]['type']): Value {
  const minus = resolveOperator('-', type, type);
  if (minus === undefined) throw new SqlError(SqlState.featureNotSupported, `generate_series over ${type.name} is not supported`);
  return minus.fn.impl([a, b], runtime.evalContext);
}

/** generate_subscripts(array, dim [, reverse]): the subscripts of a dimension (1..n; an int2vector's or oidvector's 0..n-1). */
function subscripts(args: Value[], lowerBound: number): Value[] {
  const [array, dim, reverse] = args;
  if (array === null || dim === null || array === undefined) return [];
  const dims = (array as SqlArray).dims ?? [(array as SqlArray).elements.length];
  const length = dims[Number(dim) - 1];
  if (length === undefined) return [];
  const out: Value[] = [];
  for (let i = lowerBound; i < lowerBound + length; i++) out.push(i);
  return reverse === true ? out.reverse() : out;
}

/** _pg_expandarray(a): each element with its 1-based position, as a record (x, n) of a's element type. */
function expanded(array: Value, int8: boolean): Value[] {
  if (array === null) return [];
  return (array as SqlArray).elements.map((x, i): SqlArray => ({ kind: 'array', elements: [x, int8 ? BigInt(i + 1) : i + 1] }));
}

function valuesOf(plan: PlanOf<'TableFunction'>, name: string, args: Value[], runtime: Runtime): Iterable<Value> {
  if (name === 'generate_series') return series(plan, args, runtime);
  if (name === '_pg_expandarray') return expanded(args[0]!, plan.args[0]!.type.element?.name === 'int8');
  if (name === 'generate_subscripts') return subscripts(args, plan.args[0]!.type.vector === undefined ? 1 : 0);
  return args[0] === null ? [] : (args[0] as SqlArray).elements;
}

/** rows_from: each function's values in lockstep, the shorter ones padded with NULL. */
function* zipped(plan: PlanOf<'TableFunction'>, args: Value[], runtime: Runtime): Batches {
  const lists: Value[][] = [];
  let offset = 0;
  for (const part of plan.parts!) {
    const partPlan = { ...plan, name: part.name, args: plan.args.slice(offset, offset + part.argCount) };
    lists.push([...valuesOf(partPlan, part.name, args.slice(offset, offset + part.argCount), runtime)]);
    offset += part.argCount;
  }
  const length = Math.max(0, ...lists.map((list) => list.length));
  let batch: Row[] = [];
  for (let index = 0; index < length; index++) {
    const row: Row = lists.map((list) => (index < list.length ? list[index]! : null));
    if (plan.withOrdinality) row.push(BigInt(index + 1));
    batch.push(row);
    if (batch.length >= BATCH_SIZE) {
      checkDeadline(runtime);
      yield batch;
      batch = [];
      if (sliceUsed(runtime)) yield PAUSE;
    }
  }
  if (batch.length > 0) yield batch;
}

export function* tableFunction(plan: PlanOf<'TableFunction'>, runtime: Runtime): Batches {
  const empty: Row = [];
  const args = plan.args.map((a) => compile(a)(empty, runtime));
  if (plan.name === 'rows_from') {
    yield* zipped(plan, args, runtime);
    return;
  }
  const values: Iterable<Value> = valuesOf(plan, plan.name, args, runtime);
  let batch: Row[] = [];
  let ordinal = 0n;
  for (const value of values) {
    ordinal++;
    if (plan.name === 'pg_options_to_table') {
      if (value === null) continue;
      // 'name=value' (PostgreSQL's reloptions/ftoptions shape): split at the first '='.
      const text = String(value);
      const at = text.indexOf('=');
      const name = at < 0 ? text : text.slice(0, at);
      const optionValue = at < 0 ? null : text.slice(at + 1);
      batch.push(plan.withOrdinality ? [name, optionValue, ordinal] : [name, optionValue]);
    } else batch.push(plan.withOrdinality ? [value, ordinal] : [value]);
    if (batch.length >= BATCH_SIZE) {
      checkDeadline(runtime);
      yield batch;
      batch = [];
      if (sliceUsed(runtime)) yield PAUSE;
    }
  }
  if (batch.length > 0) yield batch;
}
