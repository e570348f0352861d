// Rule subquery_decorrelation: a correlated `EXISTS (subquery)`, `NOT EXISTS (subquery)` or
// `x IN (subquery)` conjunct of a filter becomes a semi (anti) join of the filter's input with the
// subquery's body, the correlation predicates becoming the join condition, so the physical stage
// can hash it instead of re-running the subquery per row. Applies when the subquery is a
// projection over filters over an uncorrelated plan (no aggregate, limit or set operation in
// between, which would change the meaning), and the correlation predicates read only the
// immediately enclosing row. NOT IN is left alone: its NULL semantics are not an anti join's (a
// materialized view rewrites it into three anti joins: not-in-anti-join.ts, which reuses bodyOf). A LEFT JOIN in the body
// whose right side nothing above reads is its left side (withoutUnreadLeftJoins).

import { type as scalar } from '../../sql/types.js';
import { type Expression, columnsUsed, conjuncts, hasOuterReference, mapChildren } from '../expression.js';
import type { Plan } from '../plan.js';
import { hasSubquery, planUsesOuter, transformPlan } from '../walk.js';

const BOOL = scalar('bool');
const MAX_DEPTH_CHECKED = 8;

export interface Body {
  /** The plan under the subquery's projection and correlated filters. */
  readonly inner: Plan;
  /** The subquery's output expressions over `inner`'s columns. */
  readonly outputs: readonly Expression[];
  /** Predicates reading the enclosing row (OuterColumn depth 1) and `inner`'s columns. */
  readonly correlation: readonly Expression[];
}

function usesDeeperOuter(plan: Plan): boolean {
  for (let depth = 2; depth <= MAX_DEPTH_CHECKED; depth++) if (planUsesOuter(plan, depth)) return true;
  return false;
}

function readsOnlyHostRow(e: Expression): boolean {
  if (e.kind === 'OuterColumn') return e.depth === 1;
  if (e.kind === 'Subquery') return false;
  let ok = true;
  mapChildren(e, (child) => {
    if (!readsOnlyHostRow(child)) ok = false;
    return child;
  });
  return ok;
}

/**
 * `L LEFT JOIN R ON c` whose R columns nothing above reads is L for a semi join: every L row comes
 * out at least once, with its own columns, whatever `c` says (even when `c` reads the host row, as
 * in `EXISTS (SELECT ... FROM t2 LEFT JOIN t3 ON ... AND t1.y = t3.y WHERE t1.x = t2.x)`). Only the
 * existence of a matching row matters to EXISTS / IN, not how many.
 */
function withoutUnreadLeftJoins(plan: Plan, readers: readonly Expression[]): Plan {
  let current = plan;
  while (current.kind === 'Join' && current.joinType === 'left' && !current.lateral) {
    const leftWidth = current.left.columns.length;
    if (readers.some((e) => [...columnsUsed(e)].some((index) => index >= leftWidth))) break;
    current = current.left;
  }
  return current;
}

/** Splits a subquery plan into its body, or undefined when the rule does not apply. */
export function bodyOf(plan: Plan, exists: boolean): Body | undefined {
  if (plan.kind !== 'Project' || plan.expressions.some(hasOuterReference)) return undefined;
  let current = plan.input;
  const correlation: Expression[] = [];
  const kept: Expression[] = [];
  while (current.kind === 'Filter') {
    for (const c of conjuncts(current.predicate)) {
      if (!hasOuterReference(c)) kept.push(c);
      else if (!hasSubquery(c) && readsOnlyHostRow(c)) correlation.push(c);
      else return undefined;
    }
    current = current.input;
  }
  // Only where it decorrelates (an ON condition reads the outer row): other plans stay as they were
  // planned, so a stored view's dataflow and state tables rebuild the same at restart.
  if (planUsesOuter(current, 1)) current = withoutUnreadLeftJoins(current, [...kept, ...correlation, ...(exists ? [] : plan.expressions)]);
  if (correlation.length === 0 || planUsesOuter(current, 1) || usesDeeperOuter(current)) return undefined;
  const inner: Plan = kept.length === 0 ? current : { kind: 'Filter', input: current, predicate: kept.length === 1 ? kept[0]! : { kind: 'And', args: kept, type: BOOL }, columns: current.columns };
  return { inner, outputs: plan.expressions, correlation };
}

/** Moves an expression from "subquery over inner, host row as outer" to "join row: host ++ inner". */
export function toJoinRow(e: Expression, hostWidth: number): Expression {
  if (e.kind === 'Column') return { ...e, index: e.index + hostWidth };
  if (e.kind === 'OuterColumn') return { kind: 'Column', index: e.index, type: e.type };
  return mapChildren(e, (child) => toJoinRow(child, hostWidth));
}

function decorrelate(conjunct: Expression, input: Plan): Plan | undefined {
  let negated = false;
  let subquery = conjunct;
  if (subquery.kind === 'Not') {
    negated = true;
    subquery = subquery.arg;
  }
  if (subquery.kind !== 'Subquery' || !subquery.correlated) return undefined;
  if (subquery.mode !== 'exists' && !(subquery.mode === 'any' && subquery.operator === '=' && !negated)) return undefined;
  const body = bodyOf(subquery.plan, subquery.mode === 'exists');
  if (body === undefined) return undefined;
  const hostWidth = input.columns.length;
  const condition = body.correlation.map((c) => toJoinRow(c, hostWidth));
  if (subquery.mode === 'any') {
    if (hasOuterReference(subquery.test!) || hasSubquery(subquery.test!)) return undefined;
    condition.push({ kind: 'Call', fn: subquery.compare!, args: [subquery.test!, toJoinRow(body.outputs[0]!, hostWidth)], type: BOOL, operator: '=' });
  }
  return {
    kind: 'Join',
    joinType: negated ? 'anti' : 'semi',
    left: input,
    right: body.inner,
    condition: condition.length === 1 ? condition[0]! : { kind: 'And', args: condition, type: BOOL },
    lateral: false,
    columns: input.columns,
  };
}

export function decorrelateSubqueries(plan: Plan): Plan {
  return transformPlan(plan, (node) => {
    if (node.kind !== 'Filter') return node;
    let input = node.input;
    const remaining: Expression[] = [];
    for (const c of conjuncts(node.predicate)) {
      const joined = decorrelate(c, input);
      if (joined === undefined) remaining.push(c);
      else input = joined;
    }
    if (input === node.input) return node;
    if (remaining.length === 0) return input;
    return { kind: 'Filter', input, predicate: remaining.length === 1 ? remaining[0]! : { kind: 'And', args: remaining, type: BOOL }, columns: node.columns };
  });
}
