// Rule join-ordering: placeholder until the rule lands (identity).
import type { Plan } from '../plan.js';

export function orderJoins(plan: Plan): Plan {
  return plan;
}
