// Binds AST expressions to typed Expressions: column references through scopes, literals
// (unknown-typed strings resolved by context), operators, functions, casts, CASE, COALESCE,
// NULLIF, GREATEST/LEAST, IN lists, BETWEEN, subqueries. Aggregate and window calls are handed
// to the collectors the SELECT binder passes in, which return placeholder columns.

import type { Node, FuncCall, A_Expr, SubLink, A_Const } from '@pgsql/types';
import { type as scalar, arrayOf, typeOid } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Expression } from '../expression.js';
import type { Plan } from '../plan.js';
import { type BinderContext, positionOf } from './context.js';
import type { Scope } from './scope.js';
import { dataTypeOf, displayTypeName } from './type-name.js';
import { planUsesOuter } from '../walk.js';
import { isWindowOnly } from './aggregate.js';
import { inlineFunctionCall } from './sql-function.js';
import { subscriptFunction } from './subscript.js';

const BOOL = scalar('bool');
const UNKNOWN = scalar('unknown');

/** Receives aggregate / window calls found while binding; returns the placeholder expression. */
export interface CallCollector {
  aggregate?(call: FuncCall, scope: Scope, position: number | undefined): Expression;
  window?(call: FuncCall, scope: Scope, position: number | undefined): Expression;
  /** generate_series / unnest in a select list. */
  setReturning?(call: FuncCall, scope: Scope, position: number | undefined): Expression;
  /** GROUPING(args) (select list, HAVING, ORDER BY of a grouped query). */
  grouping?(args: readonly Node[], scope: Scope, position: number | undefined): Expression;
  /** Why aggregates are not allowed here (the clause name), when they are not. */
  readonly clause: string;
}

export type SubqueryBinder = (select: Node, outer: Scope) => Plan;

export const AGGREGATE_NAMES = new Set(['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg']);

export class ExpressionBinder {
  constructor(
    readonly context: BinderContext,
    readonly bindSubquery: SubqueryBinder,
  ) {}

  bind(node: Node, scope: Scope, collector: CallCollector): Expression {
    const [tag, body] = Object.entries(node)[0] as [string, any];
    switch (tag) {
      case 'ColumnRef': {
        const fields = (body.fields as Node[]).map((f) => ('String' in f ? (f as any).String.sval as string : '*'));
        if (fields.includes('*')) throw new SqlError(SqlState.syntaxError, 'row expansion via "*" is not supported here', { position: positionOf(body.location) });
        return scope.resolve(fields, positionOf(body.location));
      }
      case 'A_Const':
        return this.constant(body as A_Const);
      case 'ParamRef':
        return this.context.parameter(body.number, positionOf(body.location));
      case 'TypeCast': {
        const target = dataTypeOf(body.typeName);
        let input = this.bind(body.arg, scope, collector);
        input = intervalQualified(input, body.typeName);
        return this.context.coerce(input, target, 'explicit', positionOf(body.location ?? body.typeName?.location));
      }
      case 'A_Expr':
        return this.operatorExpression(body as A_Expr, scope, collector);
      case 'BoolExpr': {
        const args = (body.args as Node[]).map((a) => this.condition(a, scope, collector, body.boolop === 'NOT_EXPR' ? 'NOT' : body.boolop === 'AND_EXPR' ? 'AND' : 'OR'));
        if (body.boolop === 'NOT_EXPR') return { kind: 'Not', arg: args[0]!, type: BOOL };
        return { kind: body.boolop === 'AND_EXPR' ? 'And' : 'Or', args, type: BOOL };
      }
      case 'NullTest': {
        const arg = this.bind(body.arg, scope, collector);
        return { kind: 'IsNull', arg, negated: body.nulltesttype === 'IS_NOT_NULL', type: BOOL };
      }
      case 'BooleanTest': {
        const arg = this.condition(body.arg, scope, collector, 'IS');
        const test = body.booltesttype as string;
        return {
          kind: 'IsBoolean',
          arg,
          test: test.includes('TRUE') ? 'true' : test.includes('FALSE') ? 'false' : 'unknown',
          negated: test.startsWith('IS_NOT'),
          type: BOOL,
        };
      }
      case 'CaseExpr':
        return this.caseExpression(body, scope, collector);
      case 'CoalesceExpr': {
        const args = (body.args as Node[]).map((a) => this.bind(a, scope, collector));
        const type = this.context.commonTypeOf(args.map((a) => a.type), 'COALESCE', positionOf(body.location));
        return { kind: 'Coalesce', args: args.map((a) => this.context.coerce(a, type, 'implicit', positionOf(body.location))), type };
      }
      case 'MinMaxExpr': {
        const which = body.op === 'IS_GREATEST' ? 'greatest' : 'least';
        const args = (body.args as Node[]).map((a) => this.bind(a, scope, collector));
        const type = this.context.commonTypeOf(args.map((a) => a.type), which.toUpperCase(), positionOf(body.location));
        return { kind: 'MinMax', which, args: args.map((a) => this.context.coerce(a, type, 'implicit', positionOf(body.location))), type };
      }
      case 'FuncCall':
        return this.functionCall(body as FuncCall, scope, collector);
      case 'GroupingFunc': {
        const position = positionOf(body.location);
        if (collector.grouping === undefined) throw new SqlError(SqlState.groupingError, `grouping operations are not allowed in ${collector.clause}`, { position });
        return collector.grouping((body.args ?? []) as Node[], scope, position);
      }
      case 'SubLink':
        return this.subLink(body as SubLink, scope, collector);
      case 'SQLValueFunction':
        return this.valueFunction(body.op as string, positionOf(body.location));
      case 'A_ArrayExpr': {
        const elements = ((body.elements ?? []) as Node[]).map((e) => this.bind(e, scope, collector));
        const elementType = this.context.commonTypeOf(elements.map((e) => e.type), 'ARRAY', positionOf(body.location));
        return { kind: 'Array', elements: elements.map((e) => this.context.coerce(e, elementType, 'implicit')), type: arrayOf(elementType) };
      }
      case 'CollateClause':
        return this.bind(body.arg, scope, collector);
      case 'A_Indirection':
        return this.indirection(body, scope, collector);
      default:
        throw new SqlError(SqlState.featureNotSupported, `expression ${tag} is not supported`, { position: positionOf(body?.location) });
    }
  }

  /** A boolean condition (WHERE, ON, AND/OR operands): unknown literals become bool, others must be bool. */
  condition(node: Node, scope: Scope, collector: CallCollector, clause: string): Expression {
    const bound = this.bind(node, scope, collector);
    if (bound.type.name === 'bool') return bound;
    if (bound.type.name === 'unknown') return this.context.coerce(bound, BOOL, 'implicit', locationOf(node));
    throw new SqlError(SqlState.datatypeMismatch, `argument of ${clause} must be type boolean, not type ${displayTypeName(bound.type)}`, { position: locationOf(node) });
  }

  private constant(body: A_Const): Expression {
    const c = body as any;
    if (c.isnull) return { kind: 'Literal', value: null, type: UNKNOWN };
    if (c.ival !== undefined) return { kind: 'Literal', value: c.ival.ival ?? 0, type: scalar('int4') };
    if (c.boolval !== undefined) return { kind: 'Literal', value: c.boolval.boolval === true, type: BOOL };
    if (c.sval !== undefined) return { kind: 'Literal', value: c.sval.sval ?? '', type: UNKNOWN };
    if (c.bsval !== undefined) return { kind: 'Literal', value: c.bsval.bsval, type: UNKNOWN };
    if (c.fval !== undefined) {
      const text: string = c.fval.fval;
      if (/^[0-9]+$/.test(text)) {
        const big = BigInt(text);
        if (big <= 9223372036854775807n) return { kind: 'Literal', value: big, type: scalar('int8') };
      }
      return this.context.coerce({ kind: 'Literal', value: text, type: UNKNOWN }, scalar('numeric'), 'explicit', positionOf(c.location));
    }
    throw new SqlError(SqlState.featureNotSupported, 'unsupported constant', { position: positionOf(c.location) });
  }

  private operatorExpression(body: A_Expr, scope: Scope, collector: CallCollector): Expression {
    const position = positionOf(body.location);
    const name = ((body.name ?? []) as Node[]).map((n) => (n as any).String.sval as string).pop() ?? '';
    const bindSide = (node: Node | undefined) => (node === undefined ? undefined : this.bind(node, scope, collector));
    switch (body.kind) {
      case 'AEXPR_OP':
      case 'AEXPR_LIKE':
      case 'AEXPR_ILIKE':
      case 'AEXPR_SIMILAR':
        return this.context.operator(name, bindSide(body.lexpr), bindSide(body.rexpr)!, position);
      case 'AEXPR_DISTINCT':
      case 'AEXPR_NOT_DISTINCT': {
        const equals = this.context.operator('=', bindSide(body.lexpr), bindSide(body.rexpr)!, position) as Extract<Expression, { kind: 'Call' }>;
        return { kind: 'IsDistinct', left: equals.args[0]!, right: equals.args[1]!, equals: equals.fn, negated: body.kind === 'AEXPR_NOT_DISTINCT', type: BOOL };
      }
      case 'AEXPR_NULLIF': {
        const left = bindSide(body.lexpr)!;
        const equals = this.context.operator('=', left, bindSide(body.rexpr)!, position) as Extract<Expression, { kind: 'Call' }>;
        return { kind: 'NullIf', left: equals.args[0]!, right: equals.args[1]!, equals: equals.fn, type: equals.args[0]!.type };
      }
      case 'AEXPR_IN': {
        const left = bindSide(body.lexpr)!;
        const items = ((body.rexpr as any).List.items as Node[]).map((n) => this.bind(n, scope, collector));
        const type = this.context.commonTypeOf([left.type, ...items.map((i) => i.type)], 'IN', position);
        const coercedLeft = this.context.coerce(left, type, 'implicit', position);
        const tests = items.map((item) => this.context.operator('=', coercedLeft, this.context.coerce(item, type, 'implicit', position), position));
        const any: Expression = tests.length === 1 ? tests[0]! : { kind: 'Or', args: tests, type: BOOL };
        return name === '<>' ? { kind: 'Not', arg: any, type: BOOL } : any;
      }
      case 'AEXPR_BETWEEN':
      case 'AEXPR_NOT_BETWEEN':
      case 'AEXPR_BETWEEN_SYM':
      case 'AEXPR_NOT_BETWEEN_SYM': {
        const value = bindSide(body.lexpr)!;
        const [low, high] = ((body.rexpr as any).List.items as Node[]).map((n) => this.bind(n, scope, collector));
        const inside = (a: Expression, b: Expression): Expression => ({
          kind: 'And',
          args: [this.context.operator('>=', value, a, position), this.context.operator('<=', value, b, position)],
          type: BOOL,
        });
        let test = inside(low!, high!);
        if (body.kind.endsWith('_SYM')) test = { kind: 'Or', args: [test, inside(high!, low!)], type: BOOL };
        return body.kind.startsWith('AEXPR_NOT') ? { kind: 'Not', arg: test, type: BOOL } : test;
      }
      case 'AEXPR_OP_ANY':
      case 'AEXPR_OP_ALL': {
        const left = bindSide(body.lexpr)!;
        const array = bindSide(body.rexpr)!;
        if (array.kind === 'Array') {
          const tests = array.elements.map((e) => this.context.operator(name, left, e, position));
          return { kind: body.kind === 'AEXPR_OP_ANY' ? 'Or' : 'And', args: tests, type: BOOL };
        }
        return this.arrayCompare(name, left, array, body.kind === 'AEXPR_OP_ALL', position);
      }
      default:
        throw new SqlError(SqlState.featureNotSupported, `operator form ${body.kind} is not supported`, { position });
    }
  }

  /** `array[i]` (one-dimensional subscripts; slices and field selection are not supported). */
  private indirection(body: any, scope: Scope, collector: CallCollector): Expression {
    const position = positionOf(body.location) ?? locationOf(body.arg);
    let current = this.bind(body.arg, scope, collector);
    for (const step of body.indirection as Node[]) {
      const field = (step as any).String?.sval as string | undefined;
      if (field !== undefined) {
        current = this.recordField(current, field, position);
        continue;
      }
      const indices = (step as any).A_Indices;
      if (indices === undefined || indices.is_slice) throw new SqlError(SqlState.featureNotSupported, 'only array subscripts are supported here', { position });
      if (current.type.name === 'name') {
        // A name is a fixed char array to PostgreSQL: name[i] is its i-th byte from 0 (pg_dump's typname[0]).
        const index = this.context.coerce(this.bind(indices.uidx, scope, collector), scalar('int4'), 'implicit', position);
        const from = this.context.operator('+', index, { kind: 'Literal', value: 1, type: scalar('int4') }, position);
        const text = this.context.coerce(current, scalar('text'), 'explicit', position);
        current = this.context.coerce(this.context.function('substr', [text, from, { kind: 'Literal', value: 1, type: scalar('int4') }], position), scalar('char'), 'explicit', position);
        continue;
      }
      if (current.type.name !== 'array' || current.type.element === undefined) {
        throw new SqlError(SqlState.datatypeMismatch, `cannot subscript type ${displayTypeName(current.type)} because it does not support subscripting`, { position });
      }
      const index = this.context.coerce(this.bind(indices.uidx, scope, collector), scalar('int4'), 'implicit', position);
      current = { kind: 'Call', fn: subscriptFunction(current.type), args: [current, index], type: current.type.element };
    }
    return current;
  }

  /**
   * `(record).field` of a record that oxbow carries as an array of same-typed fields (the (x, n) of
   * information_schema._pg_expandarray): the field's element, n read as int4. A field of anything
   * else is not supported (oxbow has no composite types).
   */
  private recordField(record: Expression, field: string, position: number | undefined): Expression {
    const fields = record.type.fields;
    if (record.type.name !== 'array' || fields === undefined || record.type.element === undefined) {
      throw new SqlError(SqlState.featureNotSupported, `field selection (.${field}) on type ${displayTypeName(record.type)} is not supported: oxbow has no composite types`, { position });
    }
    const at = fields.indexOf(field);
    if (at < 0) throw new SqlError(SqlState.undefinedColumn, `column "${field}" not found in data type record`, { position });
    const element = record.type.element;
    const value: Expression = record.kind === 'Array'
      ? record.elements[at]!
      : { kind: 'Call', fn: subscriptFunction(record.type), args: [record, { kind: 'Literal', value: at + 1, type: scalar('int4') }], type: element };
    return field === 'n' && element.name !== 'int4' ? this.context.coerce(value, scalar('int4'), 'explicit', position) : value;
  }

  /** `x op ANY|ALL (array value)`: an untyped array ('{1,2}', $1) takes the array type of x. */
  private arrayCompare(name: string, test: Expression, array: Expression, all: boolean, position: number | undefined): Expression {
    let typedArray = array;
    if (array.type.name === 'unknown') {
      const element = test.type.name === 'unknown' ? scalar('text') : test.type;
      typedArray = this.context.coerce(array, arrayOf(element), 'implicit', position);
    }
    if (typedArray.type.name !== 'array' || typedArray.type.element === undefined) {
      throw new SqlError(SqlState.wrongObjectType, `op ANY/ALL (array) requires array on right side`, { position });
    }
    const placeholder: Expression = { kind: 'Column', index: 0, type: typedArray.type.element };
    const call = this.context.operator(name, test, placeholder, position);
    if (call.kind !== 'Call' || call.args[1]!.kind !== 'Column' || call.fn.returnType.name !== 'bool') {
      throw new SqlError(SqlState.featureNotSupported, `${name} ANY/ALL needing a cast of the array elements is not supported`, { position });
    }
    return { kind: 'ArrayCompare', test: call.args[0]!, array: typedArray, compare: call.fn, all, type: BOOL };
  }

  private caseExpression(body: any, scope: Scope, collector: CallCollector): Expression {
    const position = positionOf(body.location);
    const operand = body.arg === undefined ? undefined : this.bind(body.arg, scope, collector);
    const whens = (body.args as Node[]).map((w) => {
      const when = (w as any).CaseWhen;
      const condition = operand === undefined
        ? this.condition(when.expr, scope, collector, 'CASE/WHEN')
        : this.context.operator('=', operand, this.bind(when.expr, scope, collector), positionOf(when.location));
      return { condition, result: this.bind(when.result, scope, collector) };
    });
    const otherwise: Expression = body.defresult === undefined ? { kind: 'Literal', value: null, type: UNKNOWN } : this.bind(body.defresult, scope, collector);
    const type = this.context.commonTypeOf([...whens.map((w) => w.result.type), otherwise.type], 'CASE', position);
    return {
      kind: 'Case',
      whens: whens.map((w) => ({ condition: w.condition, result: this.context.coerce(w.result, type, 'implicit', position) })),
      otherwise: this.context.coerce(otherwise, type, 'implicit', position),
      type,
    };
  }

  private functionCall(call: FuncCall, scope: Scope, collector: CallCollector): Expression {
    const position = positionOf(call.location);
    const parts = (call.funcname ?? []).map((n) => (n as any).String.sval as string);
    const name = parts[parts.length - 1]!;
    if (call.over !== undefined) {
      if (collector.window === undefined) throw new SqlError(SqlState.windowingError, `window functions are not allowed in ${collector.clause}`, { position });
      return collector.window(call, scope, position);
    }
    if (AGGREGATE_NAMES.has(name) && parts.length <= 2) {
      if (collector.aggregate === undefined) throw new SqlError(SqlState.groupingError, `aggregate functions are not allowed in ${collector.clause}`, { position });
      return collector.aggregate(call, scope, position);
    }
    if (call.agg_star || call.agg_distinct || call.agg_filter !== undefined) {
      throw new SqlError(SqlState.wrongObjectType, `${call.agg_star ? `${name}(*)` : name} specified, but ${name} is not an aggregate function`, { position });
    }
    if (name === 'pg_partition_ancestors' && (parts.length === 1 || parts[0] === 'pg_catalog') && (call.args ?? []).length === 1) {
      // No table is partitioned: a relation's only ancestor is itself, so the set-returning call
      // is unnest(ARRAY[relation::oid]) (psql's \d asks it for the tables a foreign key references).
      if (collector.setReturning === undefined) throw new SqlError(SqlState.featureNotSupported, `set-returning functions are not allowed in ${collector.clause}`, { position });
      return collector.setReturning(partitionAncestorsAsUnnest(call), scope, position);
    }
    if (((name === 'generate_series' || name === 'unnest' || name === 'generate_subscripts') && parts.length === 1) || (name === '_pg_expandarray' && (parts.length === 1 || parts[0] === 'information_schema'))) {
      if (collector.setReturning === undefined) throw new SqlError(SqlState.featureNotSupported, `set-returning functions are not allowed in ${collector.clause}`, { position });
      return collector.setReturning(call, scope, position);
    }
    if (isWindowOnly(name)) {
      throw new SqlError(SqlState.wrongObjectType, `window function ${name} requires an OVER clause`, { position });
    }
    const args = ((call.args ?? []) as Node[]).map((a) => this.bind(a, scope, collector));
    if (name === 'pg_typeof' && args.length === 1) {
      // regtype as in PostgreSQL: the argument type's OID, printed by format_type (no typmod).
      return { kind: 'Literal', value: typeOid(args[0]!.type.name === 'unknown' ? scalar('unknown') : args[0]!.type), type: scalar('regtype') };
    }
    return inlineFunctionCall(this.context, parts, args, position) ?? this.context.function(name, args, position);
  }

  private subLink(body: SubLink, scope: Scope, collector: CallCollector): Expression {
    const position = positionOf(body.location);
    const plan = this.bindSubquery(body.subselect!, scope);
    const correlated = planUsesOuter(plan, 1);
    switch (body.subLinkType) {
      case 'EXISTS_SUBLINK':
        return { kind: 'Subquery', mode: 'exists', plan, correlated, type: BOOL };
      case 'ARRAY_SUBLINK': {
        if (plan.columns.length !== 1) throw new SqlError(SqlState.syntaxError, 'subquery must return only one column', { position });
        const element = plan.columns[0]!.type;
        return { kind: 'Subquery', mode: 'array', plan, correlated, type: arrayOf(element.name === 'unknown' ? scalar('text') : element) };
      }
      case 'EXPR_SUBLINK':
        if (plan.columns.length !== 1) throw new SqlError(SqlState.syntaxError, 'subquery must return only one column', { position });
        return { kind: 'Subquery', mode: 'scalar', plan, correlated, type: plan.columns[0]!.type };
      case 'ANY_SUBLINK':
      case 'ALL_SUBLINK': {
        if (plan.columns.length !== 1) throw new SqlError(SqlState.syntaxError, 'subquery has too many columns', { position });
        const operatorName = ((body.operName ?? []) as Node[]).map((n) => (n as any).String.sval as string).pop() ?? '=';
        const test = this.bind(body.testexpr!, scope, collector);
        const placeholder: Expression = { kind: 'Column', index: 0, type: plan.columns[0]!.type };
        const call = this.context.operator(operatorName, test, placeholder, position);
        if (call.kind !== 'Call') throw new SqlError(SqlState.featureNotSupported, 'unsupported subquery comparison', { position });
        if (call.args[1]!.kind !== 'Column') {
          throw new SqlError(SqlState.featureNotSupported, 'subquery comparison needing a cast of the subquery column is not supported', { position });
        }
        return { kind: 'Subquery', mode: body.subLinkType === 'ANY_SUBLINK' ? 'any' : 'all', plan, test: call.args[0]!, compare: call.fn, operator: operatorName, correlated, type: BOOL };
      }
      default:
        throw new SqlError(SqlState.featureNotSupported, `subquery kind ${body.subLinkType} is not supported`, { position });
    }
  }

  private valueFunction(op: string, position: number | undefined): Expression {
    const names: Record<string, string> = {
      SVFOP_CURRENT_DATE: 'current_date',
      SVFOP_CURRENT_TIME: 'current_time',
      SVFOP_CURRENT_TIMESTAMP: 'now',
      SVFOP_LOCALTIME: 'localtime',
      SVFOP_LOCALTIMESTAMP: 'localtimestamp',
      SVFOP_CURRENT_USER: 'current_user',
      SVFOP_CURRENT_ROLE: 'current_user',
      SVFOP_SESSION_USER: 'session_user',
      SVFOP_USER: 'current_user',
      SVFOP_CURRENT_CATALOG: 'current_database',
      SVFOP_CURRENT_SCHEMA: 'current_schema',
    };
    const name = names[op.replace(/_N$/, '')];
    if (name === undefined) throw new SqlError(SqlState.featureNotSupported, `${op} is not supported`, { position });
    if (name === 'current_user' || name === 'session_user') {
      try {
        return this.context.function(name, [], position);
      } catch {
        return { kind: 'Literal', value: 'oxbow', type: scalar('name') };
      }
    }
    if (name === 'current_date') {
      try {
        return this.context.function(name, [], position);
      } catch {
        return this.context.coerce(this.context.function('now', [], position), scalar('date'), 'explicit', position);
      }
    }
    return this.context.function(name, [], position);
  }
}

export function locationOf(node: Node): number | undefined {
  const body = Object.values(node)[0] as { location?: number } | undefined;
  return positionOf(body?.location);
}

// PostgreSQL's interval field masks (utils/datetime.h): a bare number in `interval '30' minute`
// counts units of the qualifier's lowest field.
const INTERVAL_FIELDS: readonly [number, string][] = [
  [1 << 12, 'seconds'],
  [1 << 11, 'minutes'],
  [1 << 10, 'hours'],
  [1 << 3, 'days'],
  [1 << 1, 'months'],
  [1 << 2, 'years'],
];

function intervalQualified(input: Expression, typeName: any): Expression {
  const names = (typeName?.names ?? []).map((n: any) => n.String?.sval);
  if (names[names.length - 1] !== 'interval' || input.kind !== 'Literal' || input.type.name !== 'unknown' || typeof input.value !== 'string') return input;
  const mask = typeName.typmods?.[0]?.A_Const?.ival?.ival;
  if (mask === undefined || !/^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$/.test(input.value)) return input;
  const unit = INTERVAL_FIELDS.find(([bit]) => (mask & bit) !== 0)?.[1];
  return unit === undefined ? input : { ...input, value: `${input.value.trim()} ${unit}` };
}


/**
 * pg_partition_ancestors(rel) as unnest(ARRAY[rel::oid]): no table is partitioned, so a relation's
 * only ancestor is itself (psql's \d binds it in the select list and in FROM).
 */
export function partitionAncestorsAsUnnest(call: FuncCall): FuncCall {
  const argument = { TypeCast: { arg: call.args![0], typeName: { names: [{ String: { sval: 'oid' } }], typemod: -1 } } };
  return { funcname: [{ String: { sval: 'unnest' } }], args: [{ A_ArrayExpr: { elements: [argument] } }], location: call.location } as unknown as FuncCall;
}
