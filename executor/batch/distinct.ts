// DISTINCT (whole rows, NULLs equal) and DISTINCT ON (the first row of each key; the input is
// sorted by the keys then ORDER BY, so "first" is PostgreSQL's).

import type { Row, Value } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { runPlan } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';

export function* distinct(plan: PlanOf<'Distinct'>, runtime: Runtime): Batches {
  const keyEvaluators = plan.on?.map(compile);
  const types = plan.on?.map((e) => e.type) ?? plan.columns.map((c) => c.type);
  const seen = new KeyMap<true>(types);
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    const out: Row[] = [];
    for (const row of batch) {
      const key: Value[] = keyEvaluators === undefined ? row : keyEvaluators.map((evaluate) => evaluate(row, runtime));
      if (seen.indexOf(key) >= 0) continue;
      seen.add(key, true);
      out.push(row);
    }
    if (out.length > 0) yield out;
  }
}
