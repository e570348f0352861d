// EMIT ON WINDOW CLOSE: which output column of a view follows a watermark, and how. A relation
// with `WATERMARK FOR ts AS ts - interval 'd'` has a watermark on ts; it carries through projections
// and group keys to columns computed from ts by monotone functions: ts itself, tumble_start(ts, ..)
// (TUMBLE's window_start), window_end(start, size), `+`/`-` a constant. `derive` is that column's
// watermark as an expression of the relation's watermark (Column 0): a view row whose column is below
// it belongs to a closed window and is final. HOP's window_start (a LATERAL generate_series from
// hop_first_start(ts, ..)) follows as hop_first_start of the watermark: a later row's windows all
// start at or above it.
// Through an inner equi-join a column follows only as a join key whose both sides follow a watermark:
// a joined row is final once no row of either side can still arrive with its key, below the least of
// the two (`also` holds the further bounds; the sides may read different relations). A column of one
// side alone follows only through a band on it in the join's residual (an interval join, Nexmark
// q7's `b.date_time BETWEEN w.window_end - INTERVAL '10' SECOND AND w.window_end`): a conjunct
// `c >= r - k` (or `c > r - k`, `c >= r`; `r - k <= c` alike) with r a column of the other side that
// follows a watermark bounds the partners of a row with c = t to r <= t + k; the row is final once
// t is below its own side's watermark and t + k below r's, so its watermark is the least of c's and
// r's minus k. Without such a band the other side may still bring or take its matches.

import { conjuncts, type Expression } from '../expression.js';
import type { Plan, PlanOf } from '../plan.js';

export interface DerivedWatermark {
  /** The scan of the relation whose watermark the column follows. */
  readonly scan: PlanOf<'Scan'>;
  /** The column's watermark, over one column: the relation's watermark. */
  readonly derive: Expression;
  /** Further bounds (a join key's other side): the column's watermark is the least of them all. */
  readonly also: readonly { readonly scan: PlanOf<'Scan'>; readonly derive: Expression }[];
}

const MONOTONE_FUNCTIONS = new Set(['tumble_start', 'window_end', 'hop_first_start']);

function isConstant(expression: Expression): boolean {
  if (expression.kind === 'Literal') return true;
  if (expression.kind === 'Cast') return isConstant(expression.input);
  return false;
}

/** How `expression` over the rows of `input` (a group or join key) follows a watermark, if it does. */
export function deriveExpression(expression: Expression, input: Plan): DerivedWatermark | undefined {
  if (expression.kind === 'Column') return deriveWatermark(input, expression.index);
  if (expression.kind !== 'Call' || expression.args.length === 0) return undefined;
  const monotone = MONOTONE_FUNCTIONS.has(expression.fn.name) || ((expression.operator === '+' || expression.operator === '-') && expression.args.length === 2);
  if (!monotone || !expression.args.slice(1).every(isConstant)) return undefined;
  const inner = deriveExpression(expression.args[0]!, input);
  if (inner === undefined) return undefined;
  const wrap = (derive: Expression): Expression => ({ ...expression, args: [derive, ...expression.args.slice(1)] });
  return { scan: inner.scan, derive: wrap(inner.derive), also: inner.also.map((bound) => ({ scan: bound.scan, derive: wrap(bound.derive) })) };
}

/** How output column `column` of `plan` follows a relation's watermark, if it does. */
export function deriveWatermark(plan: Plan, column: number): DerivedWatermark | undefined {
  switch (plan.kind) {
    case 'Scan': {
      const watermark = plan.relation.watermark;
      if (watermark === undefined || plan.projection[column] !== watermark.column) return undefined;
      return { scan: plan, derive: { kind: 'Column', index: 0, type: plan.columns[column]!.type }, also: [] };
    }
    case 'Project':
      return deriveExpression(plan.expressions[column]!, plan.input);
    case 'Filter':
    case 'Sort':
    case 'Limit':
      return deriveWatermark(plan.input, column);
    case 'Aggregate':
      return column < plan.groupKeys.length ? deriveExpression(plan.groupKeys[column]!, plan.input) : undefined;
    case 'Join':
    case 'NestedLoopJoin': {
      // A table function of each row (HOP's windows): its rows are final once their row is.
      const right = plan.right;
      if (!plan.lateral || plan.joinType !== 'inner' || right.kind !== 'TableFunction') return undefined;
      const width = plan.left.columns.length;
      if (column < width) return deriveWatermark(plan.left, column);
      const first = right.args[0];
      if (right.name !== 'generate_series' || column !== width || first?.kind !== 'Call' || first.fn.name !== 'hop_first_start') return undefined;
      const time = first.args[0];
      if (time?.kind !== 'OuterColumn' || time.depth !== 1) return undefined;
      return deriveExpression({ ...first, args: [{ kind: 'Column', index: time.index, type: time.type }, ...first.args.slice(1)] }, plan.left);
    }
    case 'HashJoin': {
      if (plan.joinType !== 'inner') return undefined;
      const width = plan.left.columns.length;
      const onLeft = column < width;
      const index = onLeft ? column : column - width;
      const keys = onLeft ? plan.leftKeys : plan.rightKeys;
      const at = keys.findIndex((key) => key.kind === 'Column' && key.index === index);
      if (at < 0) return plan.residual === undefined ? undefined : deriveThroughBand(plan, column);
      const own = deriveWatermark(onLeft ? plan.left : plan.right, index);
      const other = deriveExpression((onLeft ? plan.rightKeys : plan.leftKeys)[at]!, onLeft ? plan.right : plan.left);
      if (own === undefined || other === undefined) return undefined;
      return { scan: own.scan, derive: own.derive, also: [...own.also, { scan: other.scan, derive: other.derive }, ...other.also] };
    }
    default:
      return undefined;
  }
}

/**
 * Output column `column` of an inner hash join that is no join key, through a band on it in the
 * residual: `column >= r - k` with r a column of the other side following a watermark (the header).
 */
function deriveThroughBand(plan: PlanOf<'HashJoin'>, column: number): DerivedWatermark | undefined {
  const width = plan.left.columns.length;
  const onLeft = column < width;
  const own = deriveWatermark(onLeft ? plan.left : plan.right, onLeft ? column : column - width);
  if (own === undefined) return undefined;
  const otherSide = (index: number): boolean => (onLeft ? index >= width : index < width);
  for (const conjunct of conjuncts(plan.residual!)) {
    if (conjunct.kind !== 'Call' || conjunct.args.length !== 2) continue;
    const operator = conjunct.operator;
    // Normalized to `column >= bound` (or `>`): the bound is what the partner's r must stay within.
    let bound: Expression | undefined;
    const [a, b] = conjunct.args as [Expression, Expression];
    if ((operator === '>=' || operator === '>') && a.kind === 'Column' && a.index === column) bound = b;
    else if ((operator === '<=' || operator === '<') && b.kind === 'Column' && b.index === column) bound = a;
    if (bound === undefined) continue;
    // `r` or `r - k` (k a constant).
    let partner: Expression = bound;
    let wrap = (derive: Expression): Expression => derive;
    if (bound.kind === 'Call' && bound.operator === '-' && bound.args.length === 2 && isConstant(bound.args[1]!)) {
      const minus = bound;
      partner = minus.args[0]!;
      wrap = (derive) => ({ ...minus, args: [derive, minus.args[1]!] });
    }
    if (partner.kind !== 'Column' || !otherSide(partner.index)) continue;
    const other = deriveWatermark(onLeft ? plan.right : plan.left, onLeft ? partner.index - width : partner.index);
    if (other === undefined) continue;
    return {
      scan: own.scan,
      derive: own.derive,
      also: [...own.also, { scan: other.scan, derive: wrap(other.derive) }, ...other.also.map((one) => ({ scan: one.scan, derive: wrap(one.derive) }))],
    };
  }
  return undefined;
}

/** The first output column of a view's plan that follows a watermark. */
export function windowColumn(plan: Plan): { readonly column: number; readonly derived: DerivedWatermark } | undefined {
  for (let column = 0; column < plan.columns.length; column++) {
    const derived = deriveWatermark(plan, column);
    if (derived !== undefined) return { column, derived };
  }
  return undefined;
}
