// VALUES: evaluates each row's expressions (they may read enclosing rows, for LATERAL).

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';

export function* values(plan: PlanOf<'Values'>, runtime: Runtime): Batches {
  const empty: Row = [];
  let batch: Row[] = [];
  for (const expressions of plan.rows) {
    const evaluators = expressions.map(compile);
    batch.push(evaluators.map((evaluate) => evaluate(empty, runtime)));
    if (batch.length >= BATCH_SIZE) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
