// Generic walks over plans and their expressions, aware of nesting: an expression inside a
// subquery plan, or on the right side of a LATERAL join, sits one query level deeper, so an
// OuterColumn of depth d there reaches d - 1 levels above its host.

import { children, mapChildren, type Expression } from './expression.js';
import type { Plan } from './plan.js';

/** The expressions a node evaluates itself (not its inputs'). */
export function nodeExpressions(plan: Plan): Expression[] {
  switch (plan.kind) {
    case 'Scan': {
      const list: Expression[] = plan.filter === undefined ? [] : [plan.filter];
      if (plan.systemTime?.kind === 'asOf') list.push(plan.systemTime.at);
      if (plan.systemTime?.kind === 'between') list.push(plan.systemTime.from, plan.systemTime.to);
      return list;
    }
    case 'Values':
      return plan.rows.flat();
    case 'TableFunction':
      return [...plan.args];
    case 'Filter':
      return [plan.predicate];
    case 'Project':
      return [...plan.expressions];
    case 'Join':
    case 'NestedLoopJoin':
      return plan.condition === undefined ? [] : [plan.condition];
    case 'HashJoin':
      return [...plan.leftKeys, ...plan.rightKeys, ...(plan.residual === undefined ? [] : [plan.residual])];
    case 'Aggregate':
      return [...plan.groupKeys, ...plan.aggregates.flatMap((a) => [...a.args, ...(a.filter ? [a.filter] : []), ...(a.orderBy ?? []).map((k) => k.expression)])];
    case 'Window':
      return plan.calls.flatMap((c) => [...c.args, ...c.partitionBy, ...c.orderBy.map((k) => k.expression), ...(c.filter ? [c.filter] : [])]);
    case 'Sort':
      return [...plan.keys.map((k) => k.expression), ...(plan.topN ? [plan.topN.limit, ...(plan.topN.offset ? [plan.topN.offset] : [])] : [])];
    case 'Limit':
      return [...(plan.limit ? [plan.limit] : []), ...(plan.offset ? [plan.offset] : [])];
    case 'Distinct':
      return [...(plan.on ?? [])];
    case 'SetOperation':
    case 'RecursiveUnion':
    case 'WorkTable':
      return [];
    case 'Insert':
      return [...(plan.returning ?? []), ...(plan.onConflict?.assignments.map((a) => a.value) ?? []), ...(plan.onConflict?.where ? [plan.onConflict.where] : [])];
    case 'Update':
      return [...plan.assignments.map((a) => a.value), ...(plan.returning ?? [])];
    case 'Delete':
      return [...(plan.returning ?? [])];
  }
}

/** The inputs of a node with the query-level offset each is evaluated at (1 for a LATERAL right side). */
export function nestedInputs(plan: Plan): { readonly plan: Plan; readonly levelOffset: number }[] {
  switch (plan.kind) {
    case 'Scan':
    case 'Values':
    case 'TableFunction':
    case 'WorkTable':
      return [];
    case 'RecursiveUnion':
      return [{ plan: plan.base, levelOffset: 0 }, { plan: plan.recursive, levelOffset: 0 }];
    case 'Join':
    case 'NestedLoopJoin':
      return [{ plan: plan.left, levelOffset: 0 }, { plan: plan.right, levelOffset: plan.lateral ? 1 : 0 }];
    case 'HashJoin':
    case 'SetOperation':
      return [{ plan: plan.left, levelOffset: 0 }, { plan: plan.right, levelOffset: 0 }];
    default:
      return [{ plan: plan.input, levelOffset: 0 }];
  }
}

function expressionUsesOuter(expression: Expression, depth: number): boolean {
  if (expression.kind === 'OuterColumn') return expression.depth === depth;
  if (expression.kind === 'Subquery' && planUsesOuter(expression.plan, depth + 1)) return true;
  return children(expression).some((c) => expressionUsesOuter(c, depth));
}

/** True when some expression in `plan` reads the row `depth` levels above the plan. */
export function planUsesOuter(plan: Plan, depth: number): boolean {
  if (nodeExpressions(plan).some((e) => expressionUsesOuter(e, depth))) return true;
  return nestedInputs(plan).some((input) => planUsesOuter(input.plan, depth + input.levelOffset));
}

/**
 * Renumbers OuterColumn references that reach `depth` levels above `plan` (the host's row),
 * after the host's input row layout changed. Returns a new plan when anything changed.
 */
export function remapOuterInPlan(plan: Plan, depth: number, remap: (index: number) => number): Plan {
  if (!planUsesOuter(plan, depth)) return plan;
  const mapExpression = (e: Expression) => remapOuterInExpression(e, depth, remap);
  let result = mapPlanExpressions(plan, mapExpression);
  result = mapPlanInputs(result, (input, levelOffset) => remapOuterInPlan(input, depth + levelOffset, remap));
  return result;
}

export function remapOuterInExpression(expression: Expression, depth: number, remap: (index: number) => number): Expression {
  if (expression.kind === 'OuterColumn') return expression.depth === depth ? { ...expression, index: remap(expression.index) } : expression;
  if (expression.kind === 'Subquery') {
    const plan = remapOuterInPlan(expression.plan, depth + 1, remap);
    const test = expression.test === undefined ? undefined : remapOuterInExpression(expression.test, depth, remap);
    return { ...expression, plan, ...(test === undefined ? {} : { test }) };
  }
  return mapChildren(expression, (c) => remapOuterInExpression(c, depth, remap));
}

/** Rebuilds a node with every expression it evaluates mapped (inputs untouched). */
export function mapPlanExpressions(plan: Plan, map: (e: Expression) => Expression): Plan {
  const keys = (list: readonly { expression: Expression; descending: boolean; nullsFirst: boolean }[]) => list.map((k) => ({ ...k, expression: map(k.expression) }));
  switch (plan.kind) {
    case 'Scan': {
      const systemTime = plan.systemTime === undefined || plan.systemTime.kind === 'proctime' ? plan.systemTime
        : plan.systemTime.kind === 'asOf' ? { kind: 'asOf' as const, at: map(plan.systemTime.at) }
        : { kind: 'between' as const, from: map(plan.systemTime.from), to: map(plan.systemTime.to) };
      return { ...plan, ...(plan.filter ? { filter: map(plan.filter) } : {}), ...(systemTime ? { systemTime } : {}) };
    }
    case 'Values':
      return { ...plan, rows: plan.rows.map((r) => r.map(map)) };
    case 'TableFunction':
      return { ...plan, args: plan.args.map(map) };
    case 'Filter':
      return { ...plan, predicate: map(plan.predicate) };
    case 'Project':
      return { ...plan, expressions: plan.expressions.map(map) };
    case 'Join':
    case 'NestedLoopJoin':
      return plan.condition === undefined ? plan : { ...plan, condition: map(plan.condition) };
    case 'HashJoin':
      return { ...plan, leftKeys: plan.leftKeys.map(map), rightKeys: plan.rightKeys.map(map), ...(plan.residual ? { residual: map(plan.residual) } : {}) };
    case 'Aggregate':
      return {
        ...plan,
        groupKeys: plan.groupKeys.map(map),
        aggregates: plan.aggregates.map((a) => ({ ...a, args: a.args.map(map), ...(a.filter ? { filter: map(a.filter) } : {}), ...(a.orderBy ? { orderBy: keys(a.orderBy) } : {}) })),
      };
    case 'Window':
      return {
        ...plan,
        calls: plan.calls.map((c) => ({ ...c, args: c.args.map(map), partitionBy: c.partitionBy.map(map), orderBy: keys(c.orderBy), ...(c.filter ? { filter: map(c.filter) } : {}) })),
      };
    case 'Sort':
      return {
        ...plan,
        keys: keys(plan.keys),
        ...(plan.topN ? { topN: { limit: map(plan.topN.limit), ...(plan.topN.offset ? { offset: map(plan.topN.offset) } : {}) } } : {}),
      };
    case 'Limit':
      return { ...plan, ...(plan.limit ? { limit: map(plan.limit) } : {}), ...(plan.offset ? { offset: map(plan.offset) } : {}) };
    case 'Distinct':
      return plan.on === undefined ? plan : { ...plan, on: plan.on.map(map) };
    case 'SetOperation':
    case 'RecursiveUnion':
    case 'WorkTable':
      return plan;
    case 'Insert':
      return {
        ...plan,
        ...(plan.returning ? { returning: plan.returning.map(map) } : {}),
        ...(plan.onConflict ? { onConflict: { ...plan.onConflict, assignments: plan.onConflict.assignments.map((a) => ({ ...a, value: map(a.value) })), ...(plan.onConflict.where ? { where: map(plan.onConflict.where) } : {}) } } : {}),
      };
    case 'Update':
      return { ...plan, assignments: plan.assignments.map((a) => ({ ...a, value: map(a.value) })), ...(plan.returning ? { returning: plan.returning.map(map) } : {}) };
    case 'Delete':
      return plan.returning ? { ...plan, returning: plan.returning.map(map) } : plan;
  }
}

/** Rebuilds a node with its inputs mapped. */
export function mapPlanInputs(plan: Plan, map: (input: Plan, levelOffset: number) => Plan): Plan {
  switch (plan.kind) {
    case 'Scan':
    case 'Values':
    case 'TableFunction':
    case 'WorkTable':
      return plan;
    case 'RecursiveUnion':
      return { ...plan, base: map(plan.base, 0), recursive: map(plan.recursive, 0) };
    case 'Join':
    case 'NestedLoopJoin':
      return { ...plan, left: map(plan.left, 0), right: map(plan.right, plan.lateral ? 1 : 0) };
    case 'HashJoin':
    case 'SetOperation':
      return { ...plan, left: map(plan.left, 0), right: map(plan.right, 0) };
    default:
      return { ...plan, input: map(plan.input, 0) } as Plan;
  }
}

/** Applies `expressionFn` to every subquery plan inside an expression tree. */
export function mapSubqueryPlans(expression: Expression, planFn: (plan: Plan) => Plan): Expression {
  if (expression.kind === 'Subquery') {
    return { ...expression, plan: planFn(expression.plan), ...(expression.test ? { test: mapSubqueryPlans(expression.test, planFn) } : {}) };
  }
  return mapChildren(expression, (child) => mapSubqueryPlans(child, planFn));
}

/** Rewrites every node bottom-up, subquery plans included; `rewrite` sees a node whose inputs are done. */
export function transformPlan(plan: Plan, rewrite: (plan: Plan) => Plan): Plan {
  const withInputs = mapPlanInputs(plan, (input) => transformPlan(input, rewrite));
  const withSubqueries = mapPlanExpressions(withInputs, (e) => mapSubqueryPlans(e, (sub) => transformPlan(sub, rewrite)));
  return rewrite(withSubqueries);
}

/** True when the expression contains a subquery anywhere. */
export function hasSubquery(expression: Expression): boolean {
  if (expression.kind === 'Subquery') return true;
  return children(expression).some(hasSubquery);
}

/** True when the expression calls a volatile function (random(), nextval...). */
export function isVolatile(expression: Expression): boolean {
  if (expression.kind === 'Call' && expression.fn.volatility === 'volatile') return true;
  return children(expression).some(isVolatile);
}

/** The first proctime() call in the expression (not inside a subquery), or undefined. */
export function proctimeCall(expression: Expression): Extract<Expression, { kind: 'Call' }> | undefined {
  if (expression.kind === 'Call' && expression.fn.name === 'proctime' && expression.args.length === 0) return expression;
  if (expression.kind === 'Subquery') return undefined;
  for (const child of children(expression)) {
    const found = proctimeCall(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

const SEQUENCE_FUNCTIONS = new Set(['nextval', 'currval', 'lastval', 'setval']);

/** True when the expression calls a sequence function (nextval, currval, lastval, setval). */
export function callsSequenceFunction(expression: Expression): boolean {
  if (expression.kind === 'Call' && SEQUENCE_FUNCTIONS.has(expression.fn.name)) return true;
  return children(expression).some(callsSequenceFunction);
}

/** Host-row columns read by OuterColumn references that reach `depth` levels above `plan`. */
export function outerColumnsOf(plan: Plan, depth: number, into: Set<number>): Set<number> {
  for (const e of nodeExpressions(plan)) outerColumnsOfExpression(e, depth, into);
  for (const input of nestedInputs(plan)) outerColumnsOf(input.plan, depth + input.levelOffset, into);
  return into;
}

function outerColumnsOfExpression(e: Expression, depth: number, into: Set<number>): void {
  if (e.kind === 'OuterColumn' && e.depth === depth) into.add(e.index);
  if (e.kind === 'Subquery') outerColumnsOf(e.plan, depth + 1, into);
  for (const child of children(e)) outerColumnsOfExpression(child, depth, into);
}

/** Input columns an expression needs, including those its correlated subqueries read. */
export function columnsNeeded(e: Expression, into: Set<number> = new Set()): Set<number> {
  if (e.kind === 'Column') into.add(e.index);
  if (e.kind === 'Subquery') outerColumnsOf(e.plan, 1, into);
  for (const child of children(e)) columnsNeeded(child, into);
  return into;
}

/** Renumbers an expression's input columns (and its correlated subqueries' references to them). */
export function remapColumns(e: Expression, map: readonly number[]): Expression {
  if (e.kind === 'Column') return { ...e, index: map[e.index]! };
  if (e.kind === 'Subquery') {
    return { ...e, plan: remapOuterInPlan(e.plan, 1, (i) => map[i]!), ...(e.test ? { test: remapColumns(e.test, map) } : {}) };
  }
  return mapChildren(e, (child) => remapColumns(child, map));
}
