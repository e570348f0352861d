// Rule predicate_pushdown: moves each conjunct of a filter as close to the scans as it can go:
// through projections (substituting the projected expressions), sorts, DISTINCT and grouping
// keys; into inner joins (one-sided conjuncts to their side, two-sided ones into the join
// condition), into the preserved side of outer joins, and finally into the scan's own filter.
// Conjuncts with subqueries or volatile functions stay where they are (moving them would change
// how often they run, and correlated subqueries read their host's row layout).

import { type as scalar } from '../../sql/types.js';
import { type Expression, columnsUsed, conjuncts, mapChildren, rewriteColumns } from '../expression.js';
import type { Plan } from '../plan.js';
import { hasSubquery, isVolatile, mapPlanInputs, mapPlanExpressions } from '../walk.js';

const BOOL = scalar('bool');

function and(list: readonly Expression[]): Expression | undefined {
  if (list.length === 0) return undefined;
  return list.length === 1 ? list[0]! : { kind: 'And', args: list, type: BOOL };
}

function movable(e: Expression): boolean {
  return !hasSubquery(e) && !isVolatile(e);
}

function withFilter(plan: Plan, predicates: readonly Expression[]): Plan {
  const predicate = and(predicates);
  if (predicate === undefined) return plan;
  if (plan.kind === 'Scan') {
    return { ...plan, filter: plan.filter === undefined ? predicate : and([...conjuncts(plan.filter), ...predicates])! };
  }
  return { kind: 'Filter', input: plan, predicate, columns: plan.columns };
}

/** Pushes `predicates` (over plan's output) into `plan`; returns the new plan. */
function push(plan: Plan, predicates: readonly Expression[]): Plan {
  const stay: Expression[] = [];
  const go: Expression[] = [];
  for (const p of predicates) (movable(p) ? go : stay).push(p);
  return withFilter(pushMovable(plan, go), stay);
}

function pushMovable(plan: Plan, predicates: readonly Expression[]): Plan {
  switch (plan.kind) {
    case 'Filter':
      return push(plan.input, [...conjuncts(plan.predicate), ...predicates]);
    case 'Scan': {
      return withFilter(plan, predicates);
    }
    case 'Project': {
      const down: Expression[] = [];
      const stay: Expression[] = [];
      for (const p of predicates) {
        const used = [...columnsUsed(p)];
        if (used.every((i) => movable(plan.expressions[i]!))) down.push(rewriteColumns(p, (i) => plan.expressions[i]!));
        else stay.push(p);
      }
      return withFilter({ ...plan, input: push(plan.input, down) }, stay);
    }
    case 'Sort':
      return { ...plan, input: push(plan.input, predicates) };
    case 'Distinct':
      if (plan.on !== undefined) return withFilter(descend(plan), predicates);
      return { ...plan, input: push(plan.input, predicates) };
    case 'Aggregate': {
      const keys = plan.groupKeys.length;
      const down: Expression[] = [];
      const stay: Expression[] = [];
      for (const p of predicates) {
        const used = [...columnsUsed(p)];
        // with grouping sets a key is NULL in the rows of sets without it: nothing moves below
        if (keys > 0 && plan.groupingSets === undefined && used.every((i) => i < keys)) down.push(rewriteColumns(p, (i) => plan.groupKeys[i]!));
        else stay.push(p);
      }
      return withFilter({ ...plan, input: push(plan.input, down) }, stay);
    }
    case 'Join':
      return pushIntoJoin(plan, predicates);
    default:
      return withFilter(descend(plan), predicates);
  }
}

/** Continues the rule below a node that takes no predicates. */
function descend(plan: Plan): Plan {
  return mapPlanInputs(plan, (input) => push(input, []));
}

function pushIntoJoin(join: Extract<Plan, { kind: 'Join' }>, predicates: readonly Expression[]): Plan {
  const leftWidth = join.left.columns.length;
  const left: Expression[] = [];
  const right: Expression[] = [];
  const condition: Expression[] = [];
  const stay: Expression[] = [];
  const side = (e: Expression): 'left' | 'right' | 'both' | 'none' => {
    const used = [...columnsUsed(e)];
    if (used.length === 0) return 'none';
    if (used.every((i) => i < leftWidth)) return 'left';
    if (used.every((i) => i >= leftWidth)) return 'right';
    return 'both';
  };
  const toRight = (e: Expression) => rewriteColumns(e, (i, type) => ({ kind: 'Column', index: i - leftWidth, type }));
  const type = join.joinType;
  // Predicates from above the join.
  for (const p of predicates) {
    const s = side(p);
    if (type === 'inner' && (s === 'left' || s === 'none')) left.push(p);
    else if (type === 'inner' && s === 'right' && !join.lateral) right.push(toRight(p));
    else if (type === 'inner') condition.push(p);
    else if ((type === 'left' || type === 'semi' || type === 'anti') && s === 'left') left.push(p);
    else if (type === 'right' && s === 'right' && !join.lateral) right.push(toRight(p));
    else stay.push(p);
  }
  // The join's own condition: one-sided conjuncts of an inner join go down; for a left join the
  // conjuncts on the right (nullable) side may filter the right input.
  for (const c of join.condition === undefined ? [] : conjuncts(join.condition)) {
    const s = side(c);
    if (!movable(c)) condition.push(c);
    else if (type === 'inner' && s === 'left') left.push(c);
    else if ((type === 'inner' || type === 'left' || type === 'semi' || type === 'anti') && s === 'right' && !join.lateral) right.push(toRight(c));
    else if (type === 'right' && s === 'left') left.push(c);
    else condition.push(c);
  }
  const newCondition = and(condition);
  const result: Plan = {
    ...join,
    left: push(join.left, left),
    right: push(join.right, right),
    ...(newCondition === undefined ? {} : { condition: newCondition }),
  };
  if (newCondition === undefined && 'condition' in result) delete (result as { condition?: Expression }).condition;
  return withFilter(result, stay);
}

export function pushDownPredicates(plan: Plan): Plan {
  const root = push(plan, []);
  // Subquery plans are separate trees: push inside them too.
  return mapSubqueries(root);
}

function mapSubqueries(plan: Plan): Plan {
  const mapExpression = (e: Expression): Expression => {
    if (e.kind === 'Subquery') return { ...e, plan: pushDownPredicates(e.plan), ...(e.test ? { test: mapExpression(e.test) } : {}) };
    return e.kind === 'Literal' || e.kind === 'Column' ? e : mapChildren(e, mapExpression);
  };
  return mapPlanInputs(mapPlanExpressions(plan, mapExpression), mapSubqueries);
}
