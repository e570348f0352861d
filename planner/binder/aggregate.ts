// Aggregate and window function calls: argument checks and PostgreSQL's result types
// (count → bigint, sum(int2/int4) → bigint, sum(int8) → numeric, avg(integer) → numeric,
// avg(float) → double precision, min/max keep the argument type...).

import type { FuncCall, Node } from '@pgsql/types';
import { type DataType, type as scalar, arrayOf } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Expression } from '../expression.js';
import type { AggregateCall, AggregateName, RangeOffset, SortKey, WindowCall, WindowFrame, WindowFunctionName } from '../plan.js';
import { type BinderContext, positionOf } from './context.js';
import { displayTypeName } from './type-name.js';

const TEXT = scalar('text');

export function aggregateResultType(name: AggregateName, argumentTypes: readonly DataType[], position: number | undefined): DataType {
  const t = argumentTypes[0];
  const fail = (): never => {
    throw new SqlError(SqlState.undefinedFunction, `function ${name}(${argumentTypes.map(displayTypeName).join(', ')}) does not exist`, {
      position,
      hint: 'No function matches the given name and argument types. You might need to add explicit type casts.',
    });
  };
  switch (name) {
    case 'count':
      return scalar('int8');
    case 'sum':
      if (t === undefined) return fail();
      if (t.name === 'int2' || t.name === 'int4') return scalar('int8');
      if (t.name === 'int8' || t.name === 'numeric') return scalar('numeric');
      if (t.name === 'float4' || t.name === 'float8' || t.name === 'interval') return scalar(t.name);
      return fail();
    case 'avg':
      if (t === undefined) return fail();
      if (t.name === 'int2' || t.name === 'int4' || t.name === 'int8' || t.name === 'numeric') return scalar('numeric');
      if (t.name === 'float4' || t.name === 'float8') return scalar('float8');
      if (t.name === 'interval') return scalar('interval');
      return fail();
    case 'min':
    case 'max':
      if (t === undefined || t.name === 'json' || t.name === 'bool' || t.name === 'record') return fail();
      return t.typmod < 0 ? t : { ...t, typmod: -1 };
    case 'bool_and':
    case 'bool_or':
    case 'every':
      return scalar('bool');
    case 'string_agg':
      return t?.name === 'bytea' ? scalar('bytea') : TEXT;
    case 'array_agg':
      if (t === undefined) return fail();
      return arrayOf(t.typmod < 0 ? t : { ...t, typmod: -1 });
  }
}

/** Coerces aggregate arguments to what the aggregate takes (unknown → text, bool for bool_*). */
export function coerceAggregateArguments(context: BinderContext, name: AggregateName, args: Expression[], position: number | undefined): Expression[] {
  if (name === 'bool_and' || name === 'bool_or' || name === 'every') return args.map((a) => context.coerce(a, scalar('bool'), 'implicit', position));
  if (name === 'string_agg') {
    if (args.length !== 2) {
      throw new SqlError(SqlState.undefinedFunction, `function string_agg(${args.map((a) => displayTypeName(a.type)).join(', ')}) does not exist`, {
        position,
        hint: 'No function matches the given name and argument types. You might need to add explicit type casts.',
      });
    }
    const target = args[0]!.type.name === 'bytea' ? scalar('bytea') : TEXT;
    return args.map((a) => context.coerce(a, target, 'implicit', position));
  }
  return args.map((a) => (a.type.name === 'unknown' ? context.coerce(a, TEXT, 'implicit', position) : a));
}

export interface SortBinder {
  (sortBy: readonly Node[]): SortKey[];
}

export function bindAggregateCall(
  call: FuncCall,
  name: AggregateName,
  bindArgument: (node: Node) => Expression,
  bindFilter: (node: Node) => Expression,
  bindSort: SortBinder,
  context: BinderContext,
  position: number | undefined,
): AggregateCall {
  if (call.agg_star && name !== 'count') {
    throw new SqlError(SqlState.syntaxError, `${name}(*) is not allowed`, { position });
  }
  let args = call.agg_star ? [] : ((call.args ?? []) as Node[]).map(bindArgument);
  if (name === 'count' && args.length > 1) aggregateResultType('sum', args.map((a) => a.type), position);
  if (name !== 'string_agg' && name !== 'count' && args.length !== 1) {
    throw new SqlError(SqlState.undefinedFunction, `function ${name}(${args.map((a) => displayTypeName(a.type)).join(', ')}) does not exist`, { position });
  }
  args = coerceAggregateArguments(context, name, args, position);
  const type = aggregateResultType(name, args.map((a) => a.type), position);
  return {
    name,
    args,
    distinct: call.agg_distinct === true,
    ...(call.agg_filter !== undefined ? { filter: bindFilter(call.agg_filter) } : {}),
    ...(call.agg_order !== undefined ? { orderBy: bindSort(call.agg_order) } : {}),
    type,
  };
}

const WINDOW_ONLY = new Set(['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'nth_value']);

// PostgreSQL's FRAMEOPTION_* bits (nodes/parsenodes.h).
const FRAME = {
  nonDefault: 0x1, range: 0x2, rows: 0x4, groups: 0x8,
  startUnboundedPreceding: 0x20, endUnboundedFollowing: 0x100,
  startCurrentRow: 0x200, endCurrentRow: 0x400,
  startOffsetPreceding: 0x800, endOffsetPreceding: 0x1000,
  startOffsetFollowing: 0x2000, endOffsetFollowing: 0x4000,
};

function frameOffset(node: Node | undefined, position: number | undefined): number {
  const constant = (node as { A_Const?: { ival?: { ival?: number } } } | undefined)?.A_Const;
  if (constant?.ival === undefined) throw new SqlError(SqlState.featureNotSupported, 'frame offsets must be integer constants', { position });
  const value = constant.ival.ival ?? 0;
  if (value < 0) throw new SqlError(SqlState.invalidParameterValue, 'frame starting offset must not be negative', { position });
  return value;
}

/** Binds a RANGE offset against the single ORDER BY key. */
export type RangeOffsetBinder = (node: Node) => RangeOffset;

export function bindFrame(
  options: number,
  startOffset: Node | undefined,
  endOffset: Node | undefined,
  position: number | undefined,
  rangeOffset?: RangeOffsetBinder,
): WindowFrame {
  if ((options & FRAME.nonDefault) === 0) {
    return { mode: 'range', start: { kind: 'unboundedPreceding' }, end: { kind: 'currentRow' } };
  }
  if (options & FRAME.groups) throw new SqlError(SqlState.featureNotSupported, 'GROUPS frames are not supported', { position });
  const mode = options & FRAME.rows ? 'rows' : 'range';
  const offset = (node: Node | undefined) => {
    if (mode === 'rows') return { offset: frameOffset(node, position) };
    if (rangeOffset === undefined || node === undefined) throw new SqlError(SqlState.featureNotSupported, 'RANGE frame offsets are not supported here', { position });
    return { range: rangeOffset(node) };
  };
  const start: WindowFrame['start'] = options & FRAME.startUnboundedPreceding ? { kind: 'unboundedPreceding' }
    : options & FRAME.startCurrentRow ? { kind: 'currentRow' }
    : options & FRAME.startOffsetPreceding ? { kind: 'preceding', ...offset(startOffset) }
    : { kind: 'following', ...offset(startOffset) };
  const end: WindowFrame['end'] = options & FRAME.endUnboundedFollowing ? { kind: 'unboundedFollowing' }
    : options & FRAME.endOffsetPreceding ? { kind: 'preceding', ...offset(endOffset) }
    : options & FRAME.endOffsetFollowing ? { kind: 'following', ...offset(endOffset) }
    : { kind: 'currentRow' };
  return { mode, start, end };
}

/** A WindowDef as the parser gives it (an OVER clause or an entry of the WINDOW clause). */
interface WindowDefNode {
  readonly name?: string;
  readonly refname?: string;
  readonly partitionClause?: Node[];
  readonly orderClause?: Node[];
  readonly frameOptions?: number;
  readonly startOffset?: Node;
  readonly endOffset?: Node;
  readonly location?: number;
}

/** The parser's frameOptions of a window without a frame clause (RANGE UNBOUNDED PRECEDING AND CURRENT ROW). */
const FRAME_DEFAULTS = 0x422;

/**
 * The window an OVER clause names, as PostgreSQL resolves it (parse_agg.c, parse_clause.c):
 * `OVER w` is the WINDOW clause's `w` itself, frame included; `OVER (w ...)` and `WINDOW w2 AS (w
 * ...)` copy w's PARTITION BY (which they may not override), its ORDER BY unless they give one (w
 * must have none then), and never its frame: a window with a frame clause cannot be copied, and the
 * copy's frame is its own.
 */
function resolveWindowDef(over: WindowDefNode, namedWindows: ReadonlyMap<string, Node>, callPosition: number | undefined): WindowDefNode {
  // PostgreSQL points at the window definition (the OVER clause or the WINDOW clause's entry).
  const at = (def: WindowDefNode): number | undefined => positionOf(def.location) ?? callPosition;
  const definition = (name: string, seen: ReadonlySet<string>, from: WindowDefNode): WindowDefNode => {
    const entry = namedWindows.get(name);
    if (entry === undefined || seen.has(name)) throw new SqlError(SqlState.undefinedObject, `window "${name}" does not exist`, { position: at(from) });
    const def = (entry as { WindowDef: WindowDefNode }).WindowDef;
    return def.refname === undefined ? def : copied(def, definition(def.refname, new Set([...seen, name]), def), true);
  };
  const copied = (def: WindowDefNode, ref: WindowDefNode, inWindowClause: boolean): WindowDefNode => {
    const position = at(def);
    if ((def.partitionClause?.length ?? 0) > 0) {
      throw new SqlError(SqlState.windowingError, `cannot override PARTITION BY clause of window "${def.refname}"`, { position });
    }
    const ownOrder = (def.orderClause?.length ?? 0) > 0;
    if (ownOrder && (ref.orderClause?.length ?? 0) > 0) {
      throw new SqlError(SqlState.windowingError, `cannot override ORDER BY clause of window "${def.refname}"`, { position });
    }
    if ((ref.frameOptions ?? FRAME_DEFAULTS) !== FRAME_DEFAULTS) {
      const bare = !inWindowClause && !ownOrder && (def.frameOptions ?? FRAME_DEFAULTS) === FRAME_DEFAULTS;
      throw new SqlError(SqlState.windowingError, `cannot copy window "${def.refname}" because it has a frame clause`, {
        position,
        ...(bare ? { hint: 'Omit the parentheses in this OVER clause.' } : {}),
      });
    }
    const order = ownOrder ? def.orderClause : ref.orderClause;
    return {
      ...(ref.partitionClause !== undefined ? { partitionClause: ref.partitionClause } : {}),
      ...(order !== undefined ? { orderClause: order } : {}),
      ...(def.frameOptions !== undefined ? { frameOptions: def.frameOptions } : {}),
      ...(def.startOffset !== undefined ? { startOffset: def.startOffset } : {}),
      ...(def.endOffset !== undefined ? { endOffset: def.endOffset } : {}),
    };
  };
  // `OVER w` names the definition itself (the parser sets `name`); `OVER (w ...)` sets `refname`.
  if (over.name !== undefined) return definition(over.name, new Set(), over);
  if (over.refname !== undefined) return copied(over, definition(over.refname, new Set(), over), false);
  return over;
}

export function bindWindowCall(
  call: FuncCall,
  bindArgument: (node: Node) => Expression,
  bindSort: SortBinder,
  context: BinderContext,
  position: number | undefined,
  namedWindows: ReadonlyMap<string, Node>,
): WindowCall {
  const parts = (call.funcname ?? []).map((n) => (n as { String: { sval: string } }).String.sval);
  const name = parts[parts.length - 1]! as WindowFunctionName;
  const over = resolveWindowDef(call.over as WindowDefNode, namedWindows, position);
  const partitionBy = ((over.partitionClause ?? []) as Node[]).map(bindArgument);
  const orderBy = bindSort((over.orderClause ?? []) as Node[]);
  const rangeOffset: RangeOffsetBinder = (node) => {
    if (orderBy.length !== 1) {
      throw new SqlError(SqlState.windowingError, 'RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column', { position });
    }
    const key = orderBy[0]!.expression;
    const datetime = ['timestamp', 'timestamptz', 'date', 'time'].includes(key.type.name);
    const offsetType = datetime ? scalar('interval') : key.type;
    const value = context.coerce(bindArgument(node), offsetType, 'implicit', position);
    const minus = context.operator('-', key, value, position);
    const plus = context.operator('+', key, value, position);
    if (minus.kind !== 'Call' || plus.kind !== 'Call' || minus.fn.returnType.name !== key.type.name || plus.fn.returnType.name !== key.type.name) {
      throw new SqlError(SqlState.featureNotSupported, `RANGE offsets over type ${displayTypeName(key.type)} are not supported`, { position });
    }
    if (value.kind === 'Literal' && value.value !== null && typeof value.value === 'number' && value.value < 0) {
      throw new SqlError(SqlState.invalidParameterValue, 'invalid preceding or following size in window function', { position });
    }
    return { value, minus: minus.fn, plus: plus.fn };
  };
  const frame = bindFrame(over.frameOptions ?? 0, over.startOffset, over.endOffset, position, rangeOffset);
  let args = ((call.args ?? []) as Node[]).map(bindArgument);
  let type: DataType;
  if (WINDOW_ONLY.has(name)) {
    switch (name) {
      case 'row_number':
      case 'rank':
      case 'dense_rank':
        type = scalar('int8');
        break;
      case 'percent_rank':
      case 'cume_dist':
        type = scalar('float8');
        break;
      case 'ntile':
        args = args.map((a) => context.coerce(a, scalar('int4'), 'implicit', position));
        type = scalar('int4');
        break;
      default: {
        if (args.length === 0) throw new SqlError(SqlState.undefinedFunction, `function ${name}() does not exist`, { position });
        if (args[0]!.type.name === 'unknown') args[0] = context.coerce(args[0]!, TEXT, 'implicit', position);
        if (args[1] !== undefined) args[1] = context.coerce(args[1], scalar('int4'), 'implicit', position);
        if (args[2] !== undefined) args[2] = context.coerce(args[2], args[0]!.type, 'implicit', position);
        type = args[0]!.type;
      }
    }
  } else {
    const aggregate = bindAggregateCall(call, name as AggregateName, bindArgument, bindArgument, bindSort, context, position);
    args = [...aggregate.args];
    type = aggregate.type;
    if (aggregate.distinct) throw new SqlError(SqlState.featureNotSupported, 'DISTINCT is not implemented for window functions', { position });
  }
  return { name, args, partitionBy, orderBy, frame, ...(call.agg_filter !== undefined ? { filter: bindArgument(call.agg_filter) } : {}), type };
}

export function isWindowOnly(name: string): boolean {
  return WINDOW_ONLY.has(name);
}
