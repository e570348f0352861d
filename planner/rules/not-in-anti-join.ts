// Rule not_in_as_anti_joins (materialized views only, planner/stream/index.ts): an uncorrelated
// `x NOT IN (SELECT y ...)` (or `x <> ALL (...)`) conjunct of a filter becomes three anti joins with
// equi-keys, so the streaming planner can keep it up to date as both sides change. PostgreSQL's
// NULL semantics, where a row passes only when the predicate is true:
//
//   S empty                          true (even for x NULL)
//   some y = x                       false
//   otherwise, x NULL or a NULL y    NULL (the row does not pass)
//   otherwise                        true
//
// i.e. the row passes iff no y satisfies `y = x OR y IS NULL OR x IS NULL`, which is
//
//   L  ANTI JOIN S                        ON x = y                 -- a match
//      ANTI JOIN (S WHERE y IS NULL)      ON true = true           -- a NULL in S drops every row
//      ANTI JOIN S                        ON (x IS NULL) = true    -- x NULL and S not empty
//
// The constant sides are projected columns, so every condition is an equality of one column (or
// expression) of each side: hashable (physical.ts), and incremental in a view. Batch queries keep
// the executor's hashed NOT IN (one evaluation of S per statement), so this rule is not in RULES.
//
// A correlated subquery (`x NOT IN (SELECT y FROM s WHERE s.k = l.k)`, a projection over filters
// as subquery_decorrelation accepts) is the same with S replaced by S_l, the rows the correlation
// predicates c(l, s) pick for each l; the three joins carry c in their conditions, keyed by its
// equalities:
//
//   L  ANTI JOIN S                     ON c AND x = y
//      ANTI JOIN (S WHERE y IS NULL)   ON c
//      ANTI JOIN S                     ON c AND x IS NULL

import { type as scalar } from '../../sql/types.js';
import { resolveOperator } from '../../sql/functions.js';
import { conjuncts, hasOuterReference, type Expression } from '../expression.js';
import type { OutputColumn, Plan } from '../plan.js';
import { hasSubquery, transformPlan } from '../walk.js';
import { bodyOf, toJoinRow } from './subquery-decorrelation.js';

const BOOL = scalar('bool');
const TRUE: Expression = { kind: 'Literal', value: true, type: BOOL };
const FLAG: OutputColumn = { name: 'not_in_flag', type: BOOL, tableOid: 0, columnNumber: 0 };

type SubqueryExpression = Extract<Expression, { kind: 'Subquery' }>;

/** The subquery of `x NOT IN (subquery)` / `x <> ALL (subquery)` when the rule applies to it. */
function notInSubquery(conjunct: Expression): SubqueryExpression | undefined {
  let subquery: Expression;
  if (conjunct.kind === 'Not' && conjunct.arg.kind === 'Subquery' && conjunct.arg.mode === 'any' && conjunct.arg.operator === '=') subquery = conjunct.arg;
  else if (conjunct.kind === 'Subquery' && conjunct.mode === 'all' && conjunct.operator === '<>') subquery = conjunct;
  else return undefined;
  if (subquery.test === undefined || subquery.compare === undefined) return undefined;
  if (hasOuterReference(subquery.test) || hasSubquery(subquery.test)) return undefined;
  return subquery;
}

function and(conditions: readonly Expression[]): Expression {
  return conditions.length === 1 ? conditions[0]! : { kind: 'And', args: conditions, type: BOOL };
}

/** The correlated form: three anti joins whose conditions carry the correlation; undefined when the subquery's shape does not allow it. */
function rewriteCorrelated(input: Plan, subquery: SubqueryExpression): Plan | undefined {
  const body = bodyOf(subquery.plan, false);
  if (body === undefined) return undefined;
  const width = input.columns.length;
  const correlation = body.correlation.map((c) => toJoinRow(c, width));
  const output = body.outputs[0]!;
  const y = toJoinRow(output, width);
  const x = subquery.test!;
  const match = antiJoin(input, body.inner, and([...correlation, { kind: 'Call', fn: subquery.compare!, args: [x, y], type: BOOL, operator: '=' }]));
  const nulls: Plan = { kind: 'Filter', input: body.inner, predicate: { kind: 'IsNull', arg: output, negated: false, type: BOOL }, columns: body.inner.columns };
  const noNull = antiJoin(match, nulls, and(correlation));
  return antiJoin(noNull, body.inner, and([...correlation, { kind: 'IsNull', arg: x, negated: false, type: BOOL }]));
}

/** `left = right` of two booleans. */
function equals(left: Expression, right: Expression): Expression {
  const resolved = resolveOperator('=', BOOL, BOOL);
  if (resolved === undefined) throw new Error('no boolean = operator');
  return { kind: 'Call', fn: resolved.fn, args: [left, right], type: BOOL, operator: '=' };
}

function antiJoin(left: Plan, right: Plan, condition: Expression): Plan {
  return { kind: 'Join', joinType: 'anti', left, right, condition, lateral: false, columns: left.columns };
}

/** `plan` with one more column, the constant true. */
function withFlag(plan: Plan): Plan {
  return {
    kind: 'Project',
    input: plan,
    expressions: [...plan.columns.map((c, index): Expression => ({ kind: 'Column', index, type: c.type })), TRUE],
    columns: [...plan.columns, FLAG],
  };
}

/** `plan`'s first `width` columns. */
function firstColumns(plan: Plan, width: number): Plan {
  const columns = plan.columns.slice(0, width);
  return { kind: 'Project', input: plan, expressions: columns.map((c, index): Expression => ({ kind: 'Column', index, type: c.type })), columns };
}

function rewrite(input: Plan, subquery: SubqueryExpression): Plan {
  const width = input.columns.length;
  const set = subquery.plan;
  const y: Expression = { kind: 'Column', index: width, type: set.columns[0]!.type };
  // 1. a match: x = y (the comparison the query bound, the subquery column moved to the join row)
  const match = antiJoin(input, set, { kind: 'Call', fn: subquery.compare!, args: [subquery.test!, y], type: BOOL, operator: '=' });
  // 2. a NULL y drops every row: (L ++ true) ANTI JOIN (true FROM S WHERE y IS NULL) ON flag = flag
  const nulls: Plan = {
    kind: 'Project',
    input: { kind: 'Filter', input: set, predicate: { kind: 'IsNull', arg: { kind: 'Column', index: 0, type: set.columns[0]!.type }, negated: false, type: BOOL }, columns: set.columns },
    expressions: [TRUE],
    columns: [FLAG],
  };
  const noNull = firstColumns(antiJoin(withFlag(match), nulls, equals({ kind: 'Column', index: width, type: BOOL }, { kind: 'Column', index: width + 1, type: BOOL })), width);
  // 3. x NULL and S not empty: L ANTI JOIN (true FROM S) ON (x IS NULL) = true
  const any: Plan = { kind: 'Project', input: set, expressions: [TRUE], columns: [FLAG] };
  return antiJoin(noNull, any, equals({ kind: 'IsNull', arg: subquery.test!, negated: false, type: BOOL }, { kind: 'Column', index: width, type: BOOL }));
}

export function notInAsAntiJoins(plan: Plan): Plan {
  return transformPlan(plan, (node) => {
    if (node.kind !== 'Filter') return node;
    let input = node.input;
    const remaining: Expression[] = [];
    for (const c of conjuncts(node.predicate)) {
      const subquery = notInSubquery(c);
      const rewritten = subquery === undefined ? undefined : subquery.correlated ? rewriteCorrelated(input, subquery) : rewrite(input, subquery);
      if (rewritten === undefined) remaining.push(c);
      else input = rewritten;
    }
    if (input === node.input) return node;
    if (remaining.length === 0) return input;
    return { kind: 'Filter', input, predicate: remaining.length === 1 ? remaining[0]! : { kind: 'And', args: remaining, type: BOOL }, columns: node.columns };
  });
}
