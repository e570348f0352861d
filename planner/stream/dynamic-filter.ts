// Finding dynamic and temporal filters in a view's filter (incrementalize.ts builds the
// StreamDynamicFilter node from what this finds):
//
//   v > (SELECT max(x) FROM t2)          dynamic filter: the bound is an uncorrelated scalar subquery
//   ts > now() - interval '1 hour'       temporal filter: the bound moves with the epoch time
//
// Operators <, <=, >, >=, = (either side; `(SELECT ...) < v` is flipped), BETWEEN (two conjuncts).
// The compared side must not contain a subquery or now() and must have the bound's type (else the
// conjunct is left to the general path: a scalar subquery becomes a keyless join). A temporal bound
// is `now()`, `now() + c` or `now() - c` with a constant c (so it never decreases: a row below a
// lower bound can be forgotten), and `=` with now() is not a temporal filter.

import type { Expression } from '../expression.js';
import { children } from '../expression.js';
import { hasSubquery, isVolatile } from '../walk.js';
import type { DynamicFilterOperator } from './stream-plan.js';

type SubqueryExpression = Extract<Expression, { kind: 'Subquery' }>;

export interface DynamicConjunct {
  /** The compared side, over the filter's input rows. */
  readonly key: Expression;
  readonly operator: DynamicFilterOperator;
  /** A dynamic filter: the uncorrelated scalar subquery. */
  readonly subquery?: SubqueryExpression;
  /** A temporal filter: the bound as an expression of now(). */
  readonly now?: Expression;
  /** The conjunct itself and its bound side (EXPLAIN prints the conjunct with the bound as a column). */
  readonly conjunct: Expression;
  readonly bound: Expression;
  /** The other conjuncts of the filter. */
  readonly rest: readonly Expression[];
}

const FLIPPED: Readonly<Record<DynamicFilterOperator, DynamicFilterOperator>> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=' };

function conjunctsOf(predicate: Expression, into: Expression[] = []): Expression[] {
  if (predicate.kind === 'And') for (const arg of predicate.args) conjunctsOf(arg, into);
  else into.push(predicate);
  return into;
}

/** True when the expression calls now() (CURRENT_TIMESTAMP binds to now()). */
export function mentionsNow(expression: Expression): boolean {
  if (expression.kind === 'Call' && expression.fn.name === 'now') return true;
  if (expression.kind === 'Subquery') return false;
  return children(expression).some(mentionsNow);
}

/** `now()`, `now() + c`, `now() - c` (c a constant, possibly cast): never decreases as time goes on. */
function isNowBound(expression: Expression): boolean {
  if (expression.kind === 'Call' && expression.fn.name === 'now' && expression.args.length === 0) return true;
  if (expression.kind === 'Cast' && expression.input.kind === 'Call' && expression.input.fn.name === 'now') return expression.type.name === 'timestamptz' || expression.type.name === 'timestamp';
  if (expression.kind === 'Call' && (expression.operator === '+' || expression.operator === '-') && expression.args.length === 2) {
    const [left, right] = expression.args as [Expression, Expression];
    return isNowBound(left) && isConstant(right);
  }
  return false;
}

function isConstant(expression: Expression): boolean {
  if (expression.kind === 'Literal') return true;
  if (expression.kind === 'Cast') return isConstant(expression.input);
  return false;
}

function isPlainSide(expression: Expression): boolean {
  return !hasSubquery(expression) && !mentionsNow(expression) && !isVolatile(expression) && hasColumn(expression);
}

function hasColumn(expression: Expression): boolean {
  if (expression.kind === 'Column') return true;
  return children(expression).some(hasColumn);
}

function match(conjunct: Expression): Omit<DynamicConjunct, 'rest' | 'conjunct'> | undefined {
  if (conjunct.kind !== 'Call' || conjunct.args.length !== 2 || conjunct.operator === undefined || !(conjunct.operator in FLIPPED)) return undefined;
  const operator = conjunct.operator as DynamicFilterOperator;
  const [left, right] = conjunct.args as [Expression, Expression];
  for (const [key, bound, op] of [
    [left, right, operator],
    [right, left, FLIPPED[operator]],
  ] as const) {
    if (!isPlainSide(key) || key.type.name !== bound.type.name) continue;
    if (bound.kind === 'Subquery' && bound.mode === 'scalar' && !bound.correlated && bound.plan.columns.length === 1) return { key, operator: op, subquery: bound, bound };
    if (op !== '=' && isNowBound(bound)) return { key, operator: op, now: bound, bound };
  }
  return undefined;
}

/** The first conjunct of a filter predicate that is a dynamic or temporal filter, with the others. */
export function findDynamicConjunct(predicate: Expression): DynamicConjunct | undefined {
  const conjuncts = conjunctsOf(predicate);
  for (let i = 0; i < conjuncts.length; i++) {
    const found = match(conjuncts[i]!);
    if (found !== undefined) return { ...found, conjunct: conjuncts[i]!, rest: conjuncts.filter((_, j) => j !== i) };
  }
  return undefined;
}
