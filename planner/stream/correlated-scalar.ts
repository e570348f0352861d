// A correlated scalar aggregate subquery in a view's filter (TPC-H q17:
// `l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)`) becomes
// a LEFT hash join of the filter's input with the subquery's aggregate grouped by the correlated
// columns, so the view follows changes of both sides with keyed state:
//
//   Filter(c(subquery))                 Project(input columns)
//     input                      =>       Filter(c(agg column))
//                                           HashJoin left  input.outer = key
//                                             input
//                                             Project(key, outputs)  Aggregate group by key
//
// Applies when the subquery is [Project over] a keyless Aggregate over a Scan, Filters or inner
// hash joins over Scans (TPC-H q2: the correlation pushed into one scan of a join tree) whose correlated predicates are all `inner = outer` equalities of the same type, and no
// aggregate is a count (a group that does not exist must give what the subquery gives over no
// rows: NULL for sum / avg / min / max, but 0 for count).

import { type Expression, conjuncts, hasOuterReference } from '../expression.js';
import type { OutputColumn, Plan, PlanOf } from '../plan.js';
import { planUsesOuter, remapColumns } from '../walk.js';

type SubqueryExpression = Extract<Expression, { kind: 'Subquery' }>;

function correlatedScalar(expression: Expression): SubqueryExpression | undefined {
  if (expression.kind === 'Subquery') return expression.mode === 'scalar' && expression.correlated ? expression : undefined;
  for (const child of childrenOf(expression)) {
    const found = correlatedScalar(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

function childrenOf(expression: Expression): Expression[] {
  switch (expression.kind) {
    case 'Call':
    case 'And':
    case 'Or':
    case 'Coalesce':
    case 'MinMax':
      return [...expression.args];
    case 'Cast':
      return [expression.input];
    case 'Not':
    case 'IsNull':
    case 'IsBoolean':
      return [expression.arg];
    default:
      return [];
  }
}

function replace(expression: Expression, target: Expression, by: Expression): Expression {
  if (expression === target) return by;
  switch (expression.kind) {
    case 'Call':
      return { ...expression, args: expression.args.map((arg) => replace(arg, target, by)) };
    case 'And':
    case 'Or':
    case 'Coalesce':
    case 'MinMax':
      return { ...expression, args: expression.args.map((arg) => replace(arg, target, by)) } as Expression;
    case 'Cast':
      return { ...expression, input: replace(expression.input, target, by) };
    case 'Not':
    case 'IsNull':
    case 'IsBoolean':
      return { ...expression, arg: replace(expression.arg, target, by) } as Expression;
    default:
      return expression;
  }
}

interface Correlation {
  /** Over the subquery body's columns. */
  readonly inner: Expression;
  /** Index into the enclosing row. */
  readonly outer: number;
}

function correlationOf(predicate: Expression): Correlation | undefined {
  if (predicate.kind !== 'Call' || predicate.operator !== '=' || predicate.args.length !== 2) return undefined;
  const [a, b] = predicate.args as [Expression, Expression];
  for (const [inner, outer] of [
    [a, b],
    [b, a],
  ] as const) {
    if (outer.kind === 'OuterColumn' && outer.depth === 1 && !hasOuterReference(inner) && inner.type.name === outer.type.name) return { inner, outer: outer.index };
  }
  return undefined;
}

function and(predicates: readonly Expression[], type: Expression['type']): Expression | undefined {
  if (predicates.length === 0) return undefined;
  return predicates.length === 1 ? predicates[0]! : { kind: 'And', args: predicates, type };
}

/** The body without its correlated equalities, and those equalities; undefined for other shapes. */
function uncorrelate(plan: Plan, found: Correlation[]): Plan | undefined {
  const split = (predicate: Expression): Expression | undefined | null => {
    const rest: Expression[] = [];
    for (const conjunct of conjuncts(predicate)) {
      if (!hasOuterReference(conjunct)) {
        rest.push(conjunct);
        continue;
      }
      const correlation = correlationOf(conjunct);
      if (correlation === undefined) return null;
      found.push(correlation);
    }
    return and(rest, predicate.type);
  };
  if (plan.kind === 'Scan') {
    if (plan.filter === undefined) return plan;
    const rest = split(plan.filter);
    if (rest === null) return undefined;
    const { filter: _filter, ...scan } = plan;
    return rest === undefined ? scan : { ...scan, filter: rest };
  }
  if (plan.kind === 'Filter') {
    const input = uncorrelate(plan.input, found);
    const rest = split(plan.predicate);
    if (input === undefined || rest === null) return undefined;
    return rest === undefined ? input : { ...plan, input, predicate: rest };
  }
  if (plan.kind === 'HashJoin' && plan.joinType === 'inner') {
    // TPC-H q2: the correlation pushed into one scan of an inner join tree; the join's own keys and
    // residual must not read the outer row. A right side's correlations move to the join's row.
    const own = [...plan.leftKeys, ...plan.rightKeys, ...(plan.residual === undefined ? [] : [plan.residual])];
    if (own.some(hasOuterReference)) return undefined;
    const leftFound: Correlation[] = [];
    const rightFound: Correlation[] = [];
    const left = uncorrelate(plan.left, leftFound);
    const right = uncorrelate(plan.right, rightFound);
    if (left === undefined || right === undefined) return undefined;
    const width = plan.left.columns.length;
    const shift = Array.from({ length: plan.right.columns.length }, (_, i) => i + width);
    found.push(...leftFound, ...rightFound.map((c) => ({ inner: remapColumns(c.inner, shift), outer: c.outer })));
    return { ...plan, left, right };
  }
  return undefined;
}

/** The rewrite of the first correlated scalar aggregate subquery in a filter, or undefined. */
export function correlatedAggregateAsJoin(plan: PlanOf<'Filter'>): Plan | undefined {
  const all = conjuncts(plan.predicate);
  const index = all.findIndex((conjunct) => correlatedScalar(conjunct) !== undefined);
  if (index < 0) return undefined;
  const subquery = correlatedScalar(all[index]!)!;
  let project: PlanOf<'Project'> | undefined;
  let aggregate: Plan = subquery.plan;
  if (aggregate.kind === 'Project') {
    project = aggregate;
    aggregate = aggregate.input;
  }
  if (aggregate.kind !== 'Aggregate' || aggregate.groupKeys.length > 0 || aggregate.groupingSets !== undefined || aggregate.groupingCalls !== undefined) return undefined;
  if (aggregate.aggregates.some((call) => call.name === 'count' || hasOuterReference(call.filter ?? { kind: 'Literal', value: null, type: call.type }) || call.args.some(hasOuterReference))) return undefined;
  if (project !== undefined && project.expressions.some(hasOuterReference)) return undefined;
  const correlations: Correlation[] = [];
  const body = uncorrelate(aggregate.input, correlations);
  if (body === undefined || correlations.length === 0 || planUsesOuter(body, 1)) return undefined;
  const left = plan.input;
  const width = left.columns.length;
  const keys = correlations.length;
  const keyColumns: OutputColumn[] = correlations.map((correlation, i) => ({ name: `correlated_key${i + 1}`, type: correlation.inner.type, tableOid: 0, columnNumber: 0 }));
  const grouped: Plan = { ...aggregate, input: body, groupKeys: correlations.map((correlation) => correlation.inner), columns: [...keyColumns, ...aggregate.columns] };
  const shift = Array.from({ length: aggregate.columns.length }, (_, i) => i + keys);
  const keyRefs: Expression[] = keyColumns.map((column, i) => ({ kind: 'Column', index: i, type: column.type }));
  const right: Plan =
    project === undefined
      ? grouped
      : { kind: 'Project', input: grouped, expressions: [...keyRefs, ...project.expressions.map((e) => remapColumns(e, shift))], columns: [...keyColumns, ...project.columns] };
  const joined: Plan = {
    kind: 'HashJoin',
    joinType: 'left',
    left,
    right,
    leftKeys: correlations.map((correlation) => ({ kind: 'Column', index: correlation.outer, type: correlation.inner.type })),
    rightKeys: keyRefs,
    columns: [...left.columns, ...right.columns],
  };
  const value: Expression = { kind: 'Column', index: width + keys, type: subquery.type };
  const predicate = and(
    all.map((conjunct, i) => (i === index ? replace(conjunct, subquery, value) : conjunct)),
    plan.predicate.type,
  )!;
  const filtered: Plan = { kind: 'Filter', input: joined, predicate, columns: joined.columns };
  return { kind: 'Project', input: filtered, expressions: left.columns.map((column, i) => ({ kind: 'Column', index: i, type: column.type })), columns: left.columns };
}
