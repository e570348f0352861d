// The optimizer: named rewrite rules (one per file in rules/), applied in a fixed order, each a
// pure function from plan to plan. The order matters: constants are folded first so pushdown sees
// simple predicates; correlated EXISTS / IN become semi and anti joins before pushdown places them; predicates are pushed into joins and scans before join ordering looks at the
// join graph; projections are pruned once every filter sits where it stays; last, scans whose
// filter pins the primary key get point lookups.

import type { CatalogReader } from './catalog-reader.js';
import type { Plan } from './plan.js';
import { foldConstants } from './rules/constant-folding.js';
import { decorrelateSubqueries } from './rules/subquery-decorrelation.js';
import { pushDownPredicates } from './rules/predicate-pushdown.js';
import { orderJoins } from './rules/join-ordering.js';
import { pruneProjections, pruneProjectionsKeepingWindows } from './rules/projection-pushdown.js';
import { chooseIndexLookups } from './rules/index-lookup.js';
import { notInAsAntiJoins } from './rules/not-in-anti-join.js';
import { groupingSetsAsExpand } from './rules/grouping-sets-expand.js';

export interface Rule {
  readonly name: string;
  apply(plan: Plan, catalog?: CatalogReader): Plan;
}

export const RULES: readonly Rule[] = [
  { name: 'constant_folding', apply: foldConstants },
  { name: 'subquery_decorrelation', apply: decorrelateSubqueries },
  { name: 'predicate_pushdown', apply: pushDownPredicates },
  { name: 'join_ordering', apply: orderJoins },
  { name: 'predicate_pushdown_after_join_ordering', apply: pushDownPredicates },
  { name: 'projection_pushdown', apply: pruneProjections },
  { name: 'index_lookup', apply: chooseIndexLookups },
];

/**
 * Materialized views: the same rules plus rewrites that make a query incremental at a cost a batch
 * query need not pay (NOT IN as anti joins instead of one hashed evaluation; GROUPING SETS as an expand
 * below one plain aggregate instead of one pass).
 */
export const STREAM_RULES: readonly Rule[] = [
  { name: 'grouping_sets_as_expand', apply: groupingSetsAsExpand },
  ...RULES.flatMap((rule) => (rule.name === 'subquery_decorrelation' ? [rule, { name: 'not_in_as_anti_joins', apply: notInAsAntiJoins }] : [rule])),
];

/** STREAM_RULES as views of streaming plan version 5 and before were planned: windows keep all of their input. */
export const STREAM_RULES_KEEPING_WINDOWS: readonly Rule[] = STREAM_RULES.map((rule) => (rule.name === 'projection_pushdown' ? { name: rule.name, apply: pruneProjectionsKeepingWindows } : rule));

export function optimize(plan: Plan, rules: readonly Rule[] = RULES, catalog?: CatalogReader): Plan {
  let current = plan;
  for (const rule of rules) current = rule.apply(current, catalog);
  return current;
}
