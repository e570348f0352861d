// The operator table: one batch operator per physical plan node kind, in a table typed by the
// plan's kinds so a new node kind does not compile until it has an operator. Each operator is a
// generator of row batches pulling from its inputs' generators.

import { assert } from '../../sql/errors.js';
import type { Plan, PlanKind, PlanOf } from '../../planner/plan.js';
import { MAX_MATERIALIZED_ROWS, tooManyRows, type Batches, type Runtime } from './runtime.js';
import type { Row } from '../../sql/value.js';
import { scan } from './scan.js';
import { values } from './values.js';
import { tableFunction } from './table-function.js';
import { filter } from './filter.js';
import { project } from './project.js';
import { hashJoin } from './hash-join.js';
import { nestedLoopJoin } from './nested-loop-join.js';
import { aggregate } from './aggregate.js';
import { window } from './window.js';
import { sort } from './sort.js';
import { limit } from './limit.js';
import { distinct } from './distinct.js';
import { setOperation } from './set-operation.js';
import { recursiveUnion, workTable } from './recursive-union.js';
import { insert } from './insert.js';
import { update } from './update.js';
import { deleteRows } from './delete.js';

type Operators = { [K in PlanKind]: (plan: PlanOf<K>, runtime: Runtime) => Batches };

const OPERATORS: Operators = {
  Scan: scan,
  Values: values,
  TableFunction: tableFunction,
  Filter: filter,
  Project: project,
  Join: () => {
    assert(false, 'a logical Join reached the batch executor: plan through the physical stage');
  },
  HashJoin: hashJoin,
  NestedLoopJoin: nestedLoopJoin,
  Aggregate: aggregate,
  Window: window,
  Sort: sort,
  Limit: limit,
  Distinct: distinct,
  SetOperation: setOperation,
  RecursiveUnion: recursiveUnion,
  WorkTable: workTable,
  Insert: insert,
  Update: update,
  Delete: deleteRows,
};

export function runPlan(plan: Plan, runtime: Runtime): Batches {
  const batches = (OPERATORS[plan.kind] as (plan: Plan, runtime: Runtime) => Batches)(plan, runtime);
  // EXPLAIN ANALYZE counts each node's batches (the profiler of metrics/explain-analyze.ts).
  return runtime.profiler === undefined ? batches : runtime.profiler.batches(plan, batches);
}

/**
 * Every row of a plan, in one array, passing pauses up (operators that must see all input):
 * `const rows = yield* gather(plan, runtime)`.
 */
export function* gather(plan: Plan, runtime: Runtime): Generator<Row[], Row[]> {
  const rows: Row[] = [];
  for (const batch of runPlan(plan, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    if (rows.length + batch.length > MAX_MATERIALIZED_ROWS) throw tooManyRows();
    for (const row of batch) rows.push(row);
  }
  return rows;
}

/** Every row of a plan, in one array, without pausing (subqueries, LATERAL, the streaming executor). */
export function collect(plan: Plan, runtime: Runtime): Row[] {
  const rows: Row[] = [];
  for (const batch of runPlan(plan, runtime)) {
    if (rows.length + batch.length > MAX_MATERIALIZED_ROWS) throw tooManyRows();
    for (const row of batch) rows.push(row);
  }
  return rows;
}
