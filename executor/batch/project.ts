// Project: computes the output columns of each row.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { runPlan } from './operator.js';

export function* project(plan: PlanOf<'Project'>, runtime: Runtime): Batches {
  const evaluators = plan.expressions.map(compile);
  const width = evaluators.length;
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    const out: Row[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const input = batch[i]!;
      const row: Row = new Array(width);
      for (let c = 0; c < width; c++) row[c] = evaluators[c]!(input, runtime);
      out[i] = row;
    }
    yield out;
  }
}
