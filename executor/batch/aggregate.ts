// Hash aggregate: groups rows by the key values (NULLs in one group), one accumulator per group
// and aggregate call, FILTER (WHERE ...) applied per call. Without GROUP BY it returns exactly one
// row, even over no input. Aggregates with ORDER BY inside the call buffer their arguments and
// feed them sorted at the end.

import type { Row, Value } from '../../sql/value.js';
import { assert } from '../../sql/errors.js';
import type { AggregateCall, PlanOf } from '../../planner/plan.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { compile, compilePredicate, type Evaluator } from '../expr/expression.js';
import { runPlan } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';
import { type Accumulator, createAccumulator } from '../expr/accumulator.js';
import { keyComparator } from './sort.js';

interface CompiledCall {
  readonly call: AggregateCall;
  readonly first: Evaluator | undefined;
  readonly second: Evaluator | undefined;
  readonly filter: ((row: Row, runtime: Runtime) => boolean) | undefined;
  readonly orderBy: readonly Evaluator[] | undefined;
}

/** An accumulator for a call with ORDER BY: buffers (args, keys), sorts, then feeds. */
class OrderedAccumulator implements Accumulator {
  private readonly buffered: { first: Value; second: Value; key: Value[] }[] = [];
  constructor(private readonly inner: Accumulator, private readonly call: AggregateCall) {}
  add(): void {
    assert(false, 'an ordered aggregate is fed through push()');
  }
  push(first: Value, second: Value, key: Value[]): void {
    this.buffered.push({ first, second, key });
  }
  result(): Value {
    const compare = keyComparator(this.call.orderBy!);
    const sorted = this.buffered.map((b, i) => ({ ...b, i })).sort((a, b) => compare(a.key, b.key) || a.i - b.i);
    for (const b of sorted) this.inner.add(b.first, b.second);
    return this.inner.result();
  }
}

function compileCall(call: AggregateCall): CompiledCall {
  return {
    call,
    first: call.args[0] === undefined ? undefined : compile(call.args[0]),
    second: call.args[1] === undefined ? undefined : compile(call.args[1]),
    filter: call.filter === undefined ? undefined : compilePredicate(call.filter),
    orderBy: call.orderBy?.map((k) => compile(k.expression)),
  };
}

export function newAccumulators(calls: readonly CompiledCall[], runtime: Runtime): Accumulator[] {
  return calls.map((c) => {
    const base = createAccumulator(c.call, runtime.evalContext);
    return c.orderBy === undefined ? base : new OrderedAccumulator(base, c.call);
  });
}

export function feed(calls: readonly CompiledCall[], accumulators: readonly Accumulator[], row: Row, runtime: Runtime): void {
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!;
    if (c.filter !== undefined && !c.filter(row, runtime)) continue;
    const first = c.first === undefined ? null : c.first(row, runtime);
    const second = c.second === undefined ? null : c.second(row, runtime);
    if (c.orderBy !== undefined) {
      (accumulators[i] as OrderedAccumulator).push(first, second, c.orderBy.map((evaluate) => evaluate(row, runtime)));
    } else accumulators[i]!.add(first, second);
  }
}

export { compileCall };

export function* aggregate(plan: PlanOf<'Aggregate'>, runtime: Runtime): Batches {
  if (plan.groupingSets !== undefined || plan.groupingCalls !== undefined) {
    yield* groupingSetsAggregate(plan, runtime);
    return;
  }
  // Computed by worker threads before the plan ran (parallel-aggregate.ts).
  const parallel = runtime.parallelResults?.get(plan);
  if (parallel !== undefined) {
    yield parallel;
    return;
  }
  const calls = plan.aggregates.map(compileCall);
  const keyEvaluators = plan.groupKeys.map(compile);
  const groups = new KeyMap<Accumulator[]>(plan.groupKeys.map((k) => k.type));
  if (keyEvaluators.length === 0) {
    const accumulators = newAccumulators(calls, runtime);
    for (const batch of runPlan(plan.input, runtime)) {
      if (batch.length === 0) yield batch;
      for (const row of batch) feed(calls, accumulators, row, runtime);
    }
    yield [accumulators.map((a) => a.result())];
    return;
  }
  // One scratch key per execution; a copy is kept only when it starts a new group.
  const keyCount = keyEvaluators.length;
  const scratch: Value[] = new Array(keyCount);
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) yield batch;
    for (let r = 0; r < batch.length; r++) {
      const row = batch[r]!;
      for (let k = 0; k < keyCount; k++) scratch[k] = keyEvaluators[k]!(row, runtime);
      let index = groups.indexOf(scratch);
      if (index < 0) index = groups.add(scratch.slice(), newAccumulators(calls, runtime));
      feed(calls, groups.values[index]!, row, runtime);
    }
  }
  let out: Row[] = [];
  for (let i = 0; i < groups.size; i++) {
    const row: Row = [...groups.keys[i]!];
    for (const accumulator of groups.values[i]!) row.push(accumulator.result());
    out.push(row);
    if (out.length >= BATCH_SIZE) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}

/**
 * GROUPING SETS / ROLLUP / CUBE (and GROUPING() calls): one pass over the input, one hash table
 * per set keyed by that set's keys; the output lists each set's groups in turn (PostgreSQL's
 * order of the sets), keys outside the set NULL, then the aggregates, then each GROUPING() call's
 * bits (1 where the argument is not in the row's set, first argument most significant). The empty
 * set yields its one row even over no input, as without GROUP BY.
 */
function* groupingSetsAggregate(plan: PlanOf<'Aggregate'>, runtime: Runtime): Batches {
  const calls = plan.aggregates.map(compileCall);
  const keyEvaluators = plan.groupKeys.map(compile);
  const keyCount = keyEvaluators.length;
  const sets = plan.groupingSets ?? [plan.groupKeys.map((_, i) => i)];
  const groupingCalls = plan.groupingCalls ?? [];
  const tables = sets.map((set) => new KeyMap<Accumulator[]>(set.map((k) => plan.groupKeys[k]!.type)));
  const keys: Value[] = new Array(keyCount);
  for (const batch of runPlan(plan.input, runtime)) {
    for (let r = 0; r < batch.length; r++) {
      const row = batch[r]!;
      for (let k = 0; k < keyCount; k++) keys[k] = keyEvaluators[k]!(row, runtime);
      for (let s = 0; s < sets.length; s++) {
        const set = sets[s]!;
        const scratch = set.map((k) => keys[k]!);
        const table = tables[s]!;
        let index = table.indexOf(scratch);
        if (index < 0) index = table.add(scratch, newAccumulators(calls, runtime));
        feed(calls, table.values[index]!, row, runtime);
      }
    }
  }
  let out: Row[] = [];
  for (let s = 0; s < sets.length; s++) {
    const set = sets[s]!;
    const table = tables[s]!;
    if (set.length === 0 && table.size === 0) table.add([], newAccumulators(calls, runtime));
    const grouping = groupingCalls.map((args) => args.reduce((bits, k) => (bits << 1) | (set.includes(k) ? 0 : 1), 0));
    for (let i = 0; i < table.size; i++) {
      const row: Row = new Array(keyCount).fill(null);
      const values = table.keys[i]!;
      for (let j = 0; j < set.length; j++) row[set[j]!] = values[j]!;
      for (const accumulator of table.values[i]!) row.push(accumulator.result());
      row.push(...grouping);
      out.push(row);
      if (out.length >= BATCH_SIZE) {
        yield out;
        out = [];
      }
    }
  }
  if (out.length > 0) yield out;
}
