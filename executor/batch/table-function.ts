// Table functions in FROM: generate_series (integers, bigints, numerics, timestamps with an
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

export function* tableFunction(plan: PlanOf<'TableFunction'>, runtime: Runtime): Batches {
  const empty: Row = [];
  const args = plan.args.map((a) => compile(a)(empty, runtime));
  const values: Iterable<Value> = plan.name === 'generate_series' ? series(plan, args, runtime) : args[0] === null ? [] : (args[0] as SqlArray).elements;
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
