// Rule join_ordering: in a tree of inner joins, picks an order that never joins two inputs
// without a condition between them when some order can avoid it (no cross products). Greedy and
// stable: it starts from the first input and repeatedly takes the first remaining input in
// written order that shares a condition with those already joined. When the written order is
// already free of avoidable cross products the tree is left exactly as it is; otherwise the
// joins are rebuilt and a projection restores the original column order.

import { type as scalar } from '../../sql/types.js';
import { type Expression, columnsUsed, conjuncts, hasOuterReference, rewriteColumns } from '../expression.js';
import type { OutputColumn, Plan } from '../plan.js';
import { hasSubquery, mapPlanExpressions, mapPlanInputs, mapSubqueryPlans } from '../walk.js';

const BOOL = scalar('bool');

interface Leaf {
  readonly plan: Plan;
  readonly offset: number;
  readonly width: number;
}

function isReorderable(plan: Plan): plan is Extract<Plan, { kind: 'Join' }> {
  return plan.kind === 'Join' && plan.joinType === 'inner' && !plan.lateral;
}

/** Flattens a tree of inner joins into leaves and conjuncts over the concatenated columns. */
function flatten(plan: Plan, offset: number, leaves: Leaf[], predicates: Expression[]): boolean {
  if (!isReorderable(plan)) {
    leaves.push({ plan, offset, width: plan.columns.length });
    return true;
  }
  if (!flatten(plan.left, offset, leaves, predicates)) return false;
  if (!flatten(plan.right, offset + plan.left.columns.length, leaves, predicates)) return false;
  for (const c of plan.condition === undefined ? [] : conjuncts(plan.condition)) {
    if (hasSubquery(c) || hasOuterReference(c)) return false;
    predicates.push(offset === 0 ? c : rewriteColumns(c, (i, type) => ({ kind: 'Column', index: i + offset, type })));
  }
  return true;
}

function leafOf(leaves: readonly Leaf[], column: number): number {
  return leaves.findIndex((l) => column >= l.offset && column < l.offset + l.width);
}

function greedyOrder(leaves: readonly Leaf[], predicates: readonly Expression[]): number[] {
  const touches = predicates.map((p) => new Set([...columnsUsed(p)].map((c) => leafOf(leaves, c))));
  const order = [0];
  const joined = new Set([0]);
  while (order.length < leaves.length) {
    let next = -1;
    for (let candidate = 0; candidate < leaves.length && next < 0; candidate++) {
      if (joined.has(candidate)) continue;
      const connected = touches.some((t) => t.has(candidate) && [...t].some((l) => l !== candidate && joined.has(l)) && [...t].every((l) => l === candidate || joined.has(l)));
      if (connected) next = candidate;
    }
    if (next < 0) next = [...leaves.keys()].find((i) => !joined.has(i))!;
    order.push(next);
    joined.add(next);
  }
  return order;
}

function crossProducts(order: readonly number[], leaves: readonly Leaf[], predicates: readonly Expression[]): number {
  const touches = predicates.map((p) => new Set([...columnsUsed(p)].map((c) => leafOf(leaves, c))));
  let count = 0;
  const joined = new Set([order[0]!]);
  for (const leaf of order.slice(1)) {
    if (!touches.some((t) => t.has(leaf) && [...t].some((l) => l !== leaf && joined.has(l)) && [...t].every((l) => l === leaf || joined.has(l)))) count++;
    joined.add(leaf);
  }
  return count;
}

function rebuild(plan: Extract<Plan, { kind: 'Join' }>, leaves: readonly Leaf[], predicates: readonly Expression[], order: readonly number[]): Plan {
  // New position of every original column.
  const position = new Array<number>(plan.columns.length);
  let next = 0;
  for (const leaf of order) for (let i = 0; i < leaves[leaf]!.width; i++) position[leaves[leaf]!.offset + i] = next++;
  const used = new Array<boolean>(predicates.length).fill(false);
  const joined = new Set<number>([order[0]!]);
  let current: Plan = leaves[order[0]!]!.plan;
  let columns: OutputColumn[] = [...current.columns];
  for (const leaf of order.slice(1)) {
    joined.add(leaf);
    const right = leaves[leaf]!.plan;
    columns = [...columns, ...right.columns];
    const attach: Expression[] = [];
    predicates.forEach((p, i) => {
      if (used[i]) return;
      if ([...columnsUsed(p)].every((c) => joined.has(leafOf(leaves, c)))) {
        used[i] = true;
        attach.push(rewriteColumns(p, (c, type) => ({ kind: 'Column', index: position[c]!, type })));
      }
    });
    const condition = attach.length === 0 ? undefined : attach.length === 1 ? attach[0]! : { kind: 'And' as const, args: attach, type: BOOL };
    current = { kind: 'Join', joinType: 'inner', left: current, right, ...(condition ? { condition } : {}), lateral: false, columns };
  }
  // Conjuncts over no column (constants) were not attached: keep them on the top join.
  const leftovers = predicates.filter((_, i) => !used[i]);
  if (leftovers.length > 0) {
    current = { kind: 'Filter', input: current, predicate: leftovers.length === 1 ? leftovers[0]! : { kind: 'And', args: leftovers, type: BOOL }, columns: current.columns };
  }
  return {
    kind: 'Project',
    input: current,
    expressions: plan.columns.map((c, i) => ({ kind: 'Column', index: position[i]!, type: c.type })),
    columns: plan.columns,
  };
}

export function orderJoins(plan: Plan): Plan {
  if (isReorderable(plan)) {
    const leaves: Leaf[] = [];
    const predicates: Expression[] = [];
    if (flatten(plan, 0, leaves, predicates) && leaves.length >= 3) {
      const order = greedyOrder(leaves, predicates);
      const written = leaves.map((_, i) => i);
      if (crossProducts(order, leaves, predicates) < crossProducts(written, leaves, predicates)) {
        const ordered = leaves.map((leaf) => ({ ...leaf, plan: orderJoins(leaf.plan) }));
        return rebuild(plan, ordered, predicates, order);
      }
      // The written order stays: only the leaves are visited (the inner joins of this tree were
      // part of the decision already, so flattening them again would be quadratic).
      return withOrderedLeaves(plan);
    }
  }
  const withSubqueries = mapPlanExpressions(plan, (e) => mapSubqueryPlans(e, orderJoins));
  return mapPlanInputs(withSubqueries, (input) => orderJoins(input));
}

function withOrderedLeaves(plan: Plan): Plan {
  if (!isReorderable(plan)) return orderJoins(plan);
  const withSubqueries = mapPlanExpressions(plan, (e) => mapSubqueryPlans(e, orderJoins));
  return mapPlanInputs(withSubqueries, (input) => withOrderedLeaves(input));
}
