// Filter: keeps the rows for which the predicate is true (not NULL, not false). Empty batches
// (pauses, runtime.ts) pass up.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compilePredicate } from '../expr/expression.js';
import { runPlan } from './operator.js';

export function* filter(plan: PlanOf<'Filter'>, runtime: Runtime): Batches {
  const test = compilePredicate(plan.predicate);
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    const out: Row[] = [];
    for (let i = 0; i < batch.length; i++) if (test(batch[i]!, runtime)) out.push(batch[i]!);
    if (out.length > 0) yield out;
  }
}
