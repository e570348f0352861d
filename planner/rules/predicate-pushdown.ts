// Rule predicate-pushdown: placeholder until the rule lands (identity).
import type { Plan } from '../plan.js';

export function pushDownPredicates(plan: Plan): Plan {
  return plan;
}
