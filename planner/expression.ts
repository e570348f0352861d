// Bound scalar expressions: what the binder makes of an AST expression once names, types,
// functions and casts are resolved. A readonly tagged union; column references are positions in
// the input row of the plan node that evaluates the expression (or of an enclosing query's row for
// correlated references), so the executor never looks a name up.

import type { DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';
import type { CastImpl, ScalarFunction } from '../sql/functions.js';
import type { Plan } from './plan.js';

export type Expression =
  | { readonly kind: 'Literal'; readonly value: Value; readonly type: DataType }
  /** `position`: where the reference was written (1-based), for errors found after binding. */
  | { readonly kind: 'Column'; readonly index: number; readonly type: DataType; readonly position?: number }
  /** A column of an enclosing query's current row: depth 1 is the immediately enclosing query. */
  | { readonly kind: 'OuterColumn'; readonly depth: number; readonly index: number; readonly type: DataType }
  /** `$n`, 0-based index into the execute-time parameters. */
  | { readonly kind: 'Parameter'; readonly index: number; readonly type: DataType }
  /** `operator` is the SQL operator name when the call came from one (`=`, `+`...), for EXPLAIN and join keys. */
  /** `position`: where the call stands in the statement, kept only for proctime() (a view refuses it there). */
  | { readonly kind: 'Call'; readonly fn: ScalarFunction; readonly args: readonly Expression[]; readonly type: DataType; readonly operator?: string; readonly position?: number }
  | { readonly kind: 'Cast'; readonly input: Expression; readonly impl: CastImpl; readonly type: DataType }
  | { readonly kind: 'And'; readonly args: readonly Expression[]; readonly type: DataType }
  | { readonly kind: 'Or'; readonly args: readonly Expression[]; readonly type: DataType }
  | { readonly kind: 'Not'; readonly arg: Expression; readonly type: DataType }
  | { readonly kind: 'IsNull'; readonly arg: Expression; readonly negated: boolean; readonly type: DataType }
  /** IS [NOT] TRUE / FALSE / UNKNOWN */
  | { readonly kind: 'IsBoolean'; readonly arg: Expression; readonly test: 'true' | 'false' | 'unknown'; readonly negated: boolean; readonly type: DataType }
  /** IS [NOT] DISTINCT FROM, with `equals` the resolved = function. */
  | { readonly kind: 'IsDistinct'; readonly left: Expression; readonly right: Expression; readonly equals: ScalarFunction; readonly negated: boolean; readonly type: DataType }
  | { readonly kind: 'Case'; readonly whens: readonly { readonly condition: Expression; readonly result: Expression }[]; readonly otherwise: Expression; readonly type: DataType }
  | { readonly kind: 'Coalesce'; readonly args: readonly Expression[]; readonly type: DataType }
  | { readonly kind: 'NullIf'; readonly left: Expression; readonly right: Expression; readonly equals: ScalarFunction; readonly type: DataType }
  | { readonly kind: 'MinMax'; readonly which: 'greatest' | 'least'; readonly args: readonly Expression[]; readonly type: DataType }
  | { readonly kind: 'Array'; readonly elements: readonly Expression[]; readonly type: DataType }
  /** `test op ANY|ALL (array)` over an array value; `compare` takes (test, element). */
  | { readonly kind: 'ArrayCompare'; readonly test: Expression; readonly array: Expression; readonly compare: ScalarFunction; readonly all: boolean; readonly type: DataType }
  /**
   * A subquery. scalar: its one value (NULL if no row, 21000 if more than one); exists: whether
   * it has a row; any/all: `test op ANY|ALL (subquery)` with `compare` the resolved operator.
   * `correlated` is false when the plan has no OuterColumn of depth 1 reaching this query, so the
   * executor evaluates it once.
   */
  | {
      readonly kind: 'Subquery';
      readonly mode: 'scalar' | 'exists' | 'any' | 'all' | 'array';
      readonly plan: Plan;
      readonly test?: Expression;
      readonly compare?: ScalarFunction;
      /** The SQL operator of `compare` (`=` lets the executor hash an uncorrelated IN). */
      readonly operator?: string;
      readonly correlated: boolean;
      readonly type: DataType;
    };

export type ExpressionKind = Expression['kind'];

export function literal(value: Value, type: DataType): Expression {
  return { kind: 'Literal', value, type };
}

export function column(index: number, type: DataType): Expression {
  return { kind: 'Column', index, type };
}

/** The direct child expressions (not those inside subquery plans). */
export function children(expression: Expression): readonly Expression[] {
  switch (expression.kind) {
    case 'Literal':
    case 'Column':
    case 'OuterColumn':
    case 'Parameter':
      return [];
    case 'Call':
    case 'And':
    case 'Or':
    case 'Coalesce':
    case 'MinMax':
      return expression.args;
    case 'Array':
      return expression.elements;
    case 'ArrayCompare':
      return [expression.test, expression.array];
    case 'Cast':
      return [expression.input];
    case 'Not':
    case 'IsNull':
    case 'IsBoolean':
      return [expression.arg];
    case 'IsDistinct':
    case 'NullIf':
      return [expression.left, expression.right];
    case 'Case':
      return [...expression.whens.flatMap((w) => [w.condition, w.result]), expression.otherwise];
    case 'Subquery':
      return expression.test === undefined ? [] : [expression.test];
  }
}

/** Rebuilds an expression with its children mapped (same shape, new object when changed). */
export function mapChildren(expression: Expression, map: (child: Expression) => Expression): Expression {
  switch (expression.kind) {
    case 'Literal':
    case 'Column':
    case 'OuterColumn':
    case 'Parameter':
      return expression;
    case 'Call':
    case 'And':
    case 'Or':
    case 'Coalesce':
    case 'MinMax':
      return { ...expression, args: expression.args.map(map) };
    case 'Array':
      return { ...expression, elements: expression.elements.map(map) };
    case 'ArrayCompare':
      return { ...expression, test: map(expression.test), array: map(expression.array) };
    case 'Cast':
      return { ...expression, input: map(expression.input) };
    case 'Not':
    case 'IsNull':
    case 'IsBoolean':
      return { ...expression, arg: map(expression.arg) };
    case 'IsDistinct':
    case 'NullIf':
      return { ...expression, left: map(expression.left), right: map(expression.right) };
    case 'Case':
      return {
        ...expression,
        whens: expression.whens.map((w) => ({ condition: map(w.condition), result: map(w.result) })),
        otherwise: map(expression.otherwise),
      };
    case 'Subquery':
      return expression.test === undefined ? expression : { ...expression, test: map(expression.test) };
  }
}

/** Replaces Column references bottom-up: `replace` returns the new expression for a Column. */
export function rewriteColumns(expression: Expression, replace: (index: number, type: DataType) => Expression): Expression {
  if (expression.kind === 'Column') return replace(expression.index, expression.type);
  return mapChildren(expression, (child) => rewriteColumns(child, replace));
}

/** Input column positions read by the expression (not counting subquery plans' own columns). */
export function columnsUsed(expression: Expression, into: Set<number> = new Set()): Set<number> {
  if (expression.kind === 'Column') into.add(expression.index);
  for (const child of children(expression)) columnsUsed(child, into);
  return into;
}

/** True when the expression reads an enclosing query's row or a correlated subquery. */
export function hasOuterReference(expression: Expression): boolean {
  if (expression.kind === 'OuterColumn') return true;
  if (expression.kind === 'Subquery' && expression.correlated) return true;
  return children(expression).some(hasOuterReference);
}

/** Splits a predicate into its AND-ed conjuncts. */
export function conjuncts(expression: Expression): Expression[] {
  if (expression.kind === 'And') return expression.args.flatMap(conjuncts);
  return [expression];
}
