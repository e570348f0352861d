// DELETE: reads every matching row first (once per key, even when USING matches several rows),
// then deletes them.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { gather } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';
import { primaryKeyOf } from './constraints.js';
import { recordAffected } from './affected.js';

export function* deleteRows(plan: PlanOf<'Delete'>, runtime: Runtime): Batches {
  const relation = plan.relation;
  const width = relation.columns.length;
  const seen = new KeyMap<true>(relation.primaryKey.map((i) => relation.columns[i]!.type));
  const deleted: Row[] = [];
  const inputs: Row[] = [];
  for (const input of yield* gather(plan.input, runtime)) {
    const row = input.slice(0, width);
    const key = primaryKeyOf(relation, row);
    if (seen.indexOf(key) >= 0) continue;
    seen.add(key, true);
    deleted.push(row);
    inputs.push(input);
  }
  for (const row of deleted) runtime.tables.delete(relation, row);
  recordAffected(runtime, deleted.length);
  if (plan.returning !== undefined) {
    const evaluators = plan.returning.map(compile);
    yield inputs.map((row) => evaluators.map((evaluate) => evaluate(row, runtime)));
  }
}
