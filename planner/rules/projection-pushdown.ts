// Rule projection-pushdown: placeholder until the rule lands (identity).
import type { Plan } from '../plan.js';

export function pruneProjections(plan: Plan): Plan {
  return plan;
}
