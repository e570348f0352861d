// Rule grouping_sets_as_union (materialized views only, STREAM_RULES in optimizer.ts): an
// Aggregate with GROUPING SETS / ROLLUP / CUBE (or GROUPING() calls) becomes a UNION ALL with one
// plain Aggregate per grouping set, each grouped by that set's keys, projected to the original
// layout: keys outside the set NULL, then the aggregates, then each GROUPING() call's bits as a
// constant (1 where the argument is not in the set, first argument most significant). The empty
// set is a global aggregate, so it keeps its one row over no input, as PostgreSQL's does.
//
// Each branch is an aggregate the streaming planner already keeps incrementally (retractable
// accumulators, min/max state...), so deletes and updates retract from every set's group. The state
// is what an expand below one hash aggregate keyed by (keys, set id) would keep (RisingWave's plan):
// one group per set and key. The difference is the input, which each branch reads on its own (an
// expand reads it once and copies every row per set). Batch queries keep the executor's one-pass
// grouping-sets aggregate (executor/batch/aggregate.ts).

import type { Expression } from '../expression.js';
import type { Plan, PlanOf } from '../plan.js';
import { transformPlan } from '../walk.js';
import { type as scalar } from '../../sql/types.js';

const INT4 = scalar('int4');

function branch(plan: PlanOf<'Aggregate'>, set: readonly number[]): Plan {
  const groupKeys = set.map((k) => plan.groupKeys[k]!);
  const aggregate: Plan = {
    kind: 'Aggregate',
    input: plan.input,
    groupKeys,
    aggregates: plan.aggregates,
    columns: [...set.map((k) => plan.columns[k]!), ...plan.columns.slice(plan.groupKeys.length, plan.groupKeys.length + plan.aggregates.length)],
  };
  const expressions: Expression[] = plan.groupKeys.map((key, k): Expression => {
    const at = set.indexOf(k);
    return at < 0 ? { kind: 'Literal', value: null, type: plan.columns[k]!.type } : { kind: 'Column', index: at, type: plan.columns[k]!.type };
  });
  plan.aggregates.forEach((_, i) => expressions.push({ kind: 'Column', index: set.length + i, type: plan.columns[plan.groupKeys.length + i]!.type }));
  for (const args of plan.groupingCalls ?? []) {
    expressions.push({ kind: 'Literal', value: args.reduce((bits, k) => (bits << 1) | (set.includes(k) ? 0 : 1), 0), type: INT4 });
  }
  return { kind: 'Project', input: aggregate, expressions, columns: plan.columns };
}

export function groupingSetsAsUnion(plan: Plan): Plan {
  return transformPlan(plan, (node) => {
    if (node.kind !== 'Aggregate' || (node.groupingSets === undefined && node.groupingCalls === undefined)) return node;
    const sets = node.groupingSets ?? [node.groupKeys.map((_, k) => k)];
    return sets
      .map((set) => branch(node, set))
      .reduce((left, right): Plan => ({ kind: 'SetOperation', operation: 'union', all: true, left, right, columns: node.columns }));
  });
}
