// Rule constant_folding: evaluates at plan time every expression whose inputs are all literals
// and whose functions are immutable (stable ones such as now() are left for execution, as a
// prepared statement may run later). A folding that raises an error (1/0) is left in place, so
// the error happens only if execution reaches it (CASE WHEN false THEN 1/0 must not fail).
// Also simplifies AND/OR with constant operands and drops filters that are constant true.

import { DEFAULT_EVAL_CONTEXT } from '../../sql/functions.js';
import { type Expression, mapChildren } from '../expression.js';
import type { Plan } from '../plan.js';
import { mapPlanExpressions, transformPlan } from '../walk.js';
import { sessionDependentCast } from '../binder/context.js';

const BOOL = { name: 'bool', typmod: -1 } as const;

function isLiteral(e: Expression): e is Extract<Expression, { kind: 'Literal' }> {
  return e.kind === 'Literal';
}

function attempt(e: Expression, compute: () => Expression['type'] extends never ? never : import('../../sql/value.js').Value): Expression {
  try {
    return { kind: 'Literal', value: compute(), type: e.type };
  } catch {
    return e;
  }
}

export function foldExpression(expression: Expression): Expression {
  const e = mapChildren(expression, foldExpression);
  switch (e.kind) {
    case 'Call': {
      if (e.fn.volatility !== 'immutable' || !e.args.every(isLiteral)) return e;
      const values = e.args.map((a) => (a as Extract<Expression, { kind: 'Literal' }>).value);
      if (e.fn.strict && values.includes(null)) return { kind: 'Literal', value: null, type: e.type };
      return attempt(e, () => e.fn.impl(values, DEFAULT_EVAL_CONTEXT));
    }
    case 'Cast':
      if (!isLiteral(e.input) || sessionDependentCast(e.input.type, e.type)) return e;
      if (e.input.value === null) return { kind: 'Literal', value: null, type: e.type };
      return attempt(e, () => e.impl((e.input as Extract<Expression, { kind: 'Literal' }>).value, DEFAULT_EVAL_CONTEXT));
    case 'And':
    case 'Or': {
      const absorbing = e.kind === 'Or';
      if (e.args.some((a) => isLiteral(a) && a.value === absorbing)) return { kind: 'Literal', value: absorbing, type: BOOL };
      const rest = e.args.filter((a) => !(isLiteral(a) && a.value === !absorbing));
      if (rest.length === 0) return { kind: 'Literal', value: !absorbing, type: BOOL };
      if (rest.length === 1 && !(isLiteral(rest[0]!) && rest[0]!.value === null)) return rest[0]!;
      if (rest.every(isLiteral)) return { kind: 'Literal', value: null, type: BOOL };
      return rest.length === e.args.length ? e : { ...e, args: rest };
    }
    case 'Not':
      return isLiteral(e.arg) ? { kind: 'Literal', value: e.arg.value === null ? null : !e.arg.value, type: BOOL } : e;
    case 'IsNull':
      return isLiteral(e.arg) ? { kind: 'Literal', value: (e.arg.value === null) !== e.negated, type: BOOL } : e;
    case 'Coalesce': {
      const firstNonNull = e.args.findIndex((a) => !(isLiteral(a) && a.value === null));
      if (firstNonNull < 0) return { kind: 'Literal', value: null, type: e.type };
      if (isLiteral(e.args[firstNonNull]!)) return e.args[firstNonNull]!;
      return firstNonNull === 0 ? e : { ...e, args: e.args.slice(firstNonNull) };
    }
    case 'Case': {
      const whens = e.whens.filter((w) => !(isLiteral(w.condition) && w.condition.value !== true));
      if (whens.length > 0 && isLiteral(whens[0]!.condition) && whens[0]!.condition.value === true) return whens[0]!.result;
      if (whens.length === 0) return e.otherwise;
      return whens.length === e.whens.length ? e : { ...e, whens };
    }
    default:
      return e;
  }
}

export function foldConstants(plan: Plan): Plan {
  return transformPlan(plan, (node) => {
    const folded = mapPlanExpressions(node, foldExpression);
    if (folded.kind === 'Filter' && folded.predicate.kind === 'Literal' && folded.predicate.value === true) return folded.input;
    if (folded.kind === 'Scan' && folded.filter?.kind === 'Literal' && folded.filter.value === true) {
      const { filter: _, ...rest } = folded;
      return rest;
    }
    return folded;
  });
}
