// The physical stage for the batch executor: every logical Join becomes a HashJoin when its
// condition has equality conjuncts between the two sides (keys cast to a common type so equal
// values hash alike), otherwise a NestedLoopJoin (also for LATERAL, whose right side is re-run per
// left row). Everything else passes through unchanged.

import { sameType, type as scalar } from '../sql/types.js';
import { commonType, resolveCast } from '../sql/functions.js';
import { type Expression, conjuncts, mapChildren, columnsUsed, hasOuterReference, rewriteColumns } from './expression.js';
import type { Plan } from './plan.js';
import { mapPlanInputs, mapPlanExpressions } from './walk.js';

export function toPhysical(plan: Plan): Plan {
  const withInputs = mapPlanInputs(plan, (input) => toPhysical(input));
  const withSubqueries = mapPlanExpressions(withInputs, physicalSubqueries);
  if (withSubqueries.kind === 'Limit' && withSubqueries.input.kind === 'Sort' && withSubqueries.limit !== undefined && withSubqueries.withTies !== true) {
    // ORDER BY ... LIMIT n: the sort keeps only the first limit + offset rows (top-N).
    const sort = withSubqueries.input;
    const topN = { limit: withSubqueries.limit, ...(withSubqueries.offset ? { offset: withSubqueries.offset } : {}) };
    return { ...withSubqueries, input: { ...sort, topN } };
  }
  if (withSubqueries.kind !== 'Join') return withSubqueries;
  return chooseJoin(withSubqueries);
}

function physicalSubqueries(expression: Expression): Expression {
  if (expression.kind === 'Subquery') {
    return { ...expression, plan: toPhysical(expression.plan), ...(expression.test ? { test: physicalSubqueries(expression.test) } : {}) };
  }
  switch (expression.kind) {
    case 'Literal':
    case 'Column':
    case 'OuterColumn':
    case 'Parameter':
      return expression;
    default:
      return mapChildren(expression, physicalSubqueries);
  }
}

function chooseJoin(join: Extract<Plan, { kind: 'Join' }>): Plan {
  const leftWidth = join.left.columns.length;
  if (!join.lateral && join.condition !== undefined) {
    const leftKeys: Expression[] = [];
    const rightKeys: Expression[] = [];
    const nullSafe: boolean[] = [];
    const residual: Expression[] = [];
    for (const conjunct of conjuncts(join.condition)) {
      const keys = equiKeys(conjunct, leftWidth);
      if (keys === undefined) {
        residual.push(conjunct);
        continue;
      }
      leftKeys.push(keys.left);
      rightKeys.push(keys.right);
      nullSafe.push(keys.nullSafe);
    }
    if (leftKeys.length > 0) {
      return {
        kind: 'HashJoin',
        joinType: join.joinType,
        left: join.left,
        right: join.right,
        leftKeys,
        rightKeys,
        ...(nullSafe.some((x) => x) ? { nullSafe } : {}),
        ...(residual.length === 0 ? {} : { residual: residual.length === 1 ? residual[0]! : { kind: 'And', args: residual, type: scalar('bool') } }),
        columns: join.columns,
      };
    }
  }
  return {
    kind: 'NestedLoopJoin',
    joinType: join.joinType,
    left: join.left,
    right: join.right,
    ...(join.condition === undefined ? {} : { condition: join.condition }),
    lateral: join.lateral,
    columns: join.columns,
  };
}

/**
 * `a = b` (or `a IS NOT DISTINCT FROM b`, NULL-safe) with a over the left side only and b over
 * the right only (either order).
 */
function equiKeys(conjunct: Expression, leftWidth: number): { left: Expression; right: Expression; nullSafe: boolean } | undefined {
  let a: Expression;
  let b: Expression;
  let nullSafe = false;
  if (conjunct.kind === 'Call' && conjunct.operator === '=' && conjunct.args.length === 2) [a, b] = conjunct.args as [Expression, Expression];
  else if (conjunct.kind === 'IsDistinct' && conjunct.negated) {
    [a, b] = [conjunct.left, conjunct.right];
    nullSafe = true;
  } else return undefined;
  if (hasOuterReference(a) || hasOuterReference(b)) return undefined;
  const side = (e: Expression): 'left' | 'right' | undefined => {
    const used = [...columnsUsed(e)];
    if (used.length === 0) return undefined;
    if (used.every((i) => i < leftWidth)) return 'left';
    if (used.every((i) => i >= leftWidth)) return 'right';
    return undefined;
  };
  const sa = side(a);
  const sb = side(b);
  let left: Expression;
  let right: Expression;
  if (sa === 'left' && sb === 'right') [left, right] = [a, b];
  else if (sa === 'right' && sb === 'left') [left, right] = [b, a];
  else return undefined;
  right = rewriteColumns(right, (index, type) => ({ kind: 'Column', index: index - leftWidth, type }));
  if (!sameType(left.type, right.type)) {
    const common = commonType([left.type, right.type]);
    if (common === undefined) return undefined;
    const castLeft = sameType(left.type, common) ? undefined : resolveCast(left.type, common, 'implicit');
    const castRight = sameType(right.type, common) ? undefined : resolveCast(right.type, common, 'implicit');
    if ((!sameType(left.type, common) && castLeft === undefined) || (!sameType(right.type, common) && castRight === undefined)) return undefined;
    if (castLeft) left = { kind: 'Cast', input: left, impl: castLeft, type: common };
    if (castRight) right = { kind: 'Cast', input: right, impl: castRight, type: common };
  }
  return { left, right, nullSafe };
}
