// Rule constant-folding: placeholder until the rule lands (identity).
import type { Plan } from '../plan.js';

export function foldConstants(plan: Plan): Plan {
  return plan;
}
