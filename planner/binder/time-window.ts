// RisingWave's time window table functions in FROM:
//   TUMBLE(table, time_col, size [, offset])        each row once, in the window containing it
//   HOP(table, time_col, slide, size [, offset])    each row once per window (size / slide of them)
// Both add window_start and window_end (the time column's type) after the table's columns. TUMBLE is
// a projection over the table; HOP is a LATERAL join of the table with generate_series over the
// window starts. Window sizes are intervals without months (a fixed length), as in RisingWave.

import type { Node } from '@pgsql/types';
import { type DataType, type as scalar } from '../../sql/types.js';
import type { Interval, Value } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { ScalarFunction } from '../../sql/functions.js';
import type { Expression } from '../expression.js';
import type { OutputColumn, Plan } from '../plan.js';
import { type BinderContext, positionOf } from './context.js';
import type { ExpressionBinder } from './expression.js';
import { Scope, type ScopeRelation } from './scope.js';

const MICROS_PER_DAY = 86_400_000_000;
const INTERVAL = scalar('interval');

function lengthMicros(interval: Interval, what: string): number {
  if (interval.months !== 0) throw new SqlError(SqlState.invalidParameterValue, `the ${what} of a time window must not contain months or years`);
  const micros = interval.days * MICROS_PER_DAY + interval.micros;
  if (micros <= 0) throw new SqlError(SqlState.invalidParameterValue, `the ${what} of a time window must be positive`);
  return micros;
}

function floorTo(time: number, sizeMicros: number, offsetMicros: number): number {
  const shifted = time - offsetMicros;
  return time - (((shifted % sizeMicros) + sizeMicros) % sizeMicros);
}

function windowFunction(name: string, argumentTypes: DataType[], returnType: DataType, impl: (args: Value[]) => Value): ScalarFunction {
  return Object.freeze({ name, argumentTypes, returnType, strict: true, volatility: 'immutable', impl, oid: 0 });
}

/** tumble_start(time, size, offset): the start of the window containing `time`. */
function tumbleStart(type: DataType): ScalarFunction {
  return windowFunction('tumble_start', [type, INTERVAL, INTERVAL], type, ([time, size, offset]) =>
    floorTo(time as number, lengthMicros(size as Interval, 'size'), (offset as Interval).days * MICROS_PER_DAY + (offset as Interval).micros));
}

/** hop_first_start(time, slide, size, offset): the earliest window start whose window holds `time`. */
function hopFirstStart(type: DataType): ScalarFunction {
  return windowFunction('hop_first_start', [type, INTERVAL, INTERVAL, INTERVAL], type, ([time, slide, size, offset]) => {
    const slideMicros = lengthMicros(slide as Interval, 'slide');
    const sizeMicros = lengthMicros(size as Interval, 'size');
    if (sizeMicros % slideMicros !== 0) throw new SqlError(SqlState.invalidParameterValue, 'the size of a HOP window must be a multiple of its slide');
    const last = floorTo(time as number, slideMicros, (offset as Interval).days * MICROS_PER_DAY + (offset as Interval).micros);
    return last - sizeMicros + slideMicros;
  });
}

function windowEnd(type: DataType): ScalarFunction {
  return windowFunction('window_end', [type, INTERVAL], type, ([start, size]) => (start as number) + lengthMicros(size as Interval, 'size'));
}

function windowLast(type: DataType): ScalarFunction {
  return windowFunction('hop_last_start', [type, INTERVAL, INTERVAL], type, ([time, slide, offset]) =>
    floorTo(time as number, lengthMicros(slide as Interval, 'slide'), (offset as Interval).days * MICROS_PER_DAY + (offset as Interval).micros));
}

/** The window function `name` over times of `type`, as the binder makes it (another thread's copy of a plan: planner/stream/plan-transfer.ts). */
export function timeWindowFunction(name: string, type: DataType): ScalarFunction | undefined {
  switch (name) {
    case 'tumble_start':
      return tumbleStart(type);
    case 'hop_first_start':
      return hopFirstStart(type);
    case 'window_end':
      return windowEnd(type);
    case 'hop_last_start':
      return windowLast(type);
    default:
      return undefined;
  }
}

export interface TimeWindowItem {
  readonly plan: Plan;
  readonly relations: ScopeRelation[];
}

/** Binds TUMBLE / HOP over an already bound table item. */
export function bindTimeWindow(
  kind: 'tumble' | 'hop',
  table: { readonly plan: Plan; readonly relations: ScopeRelation[] },
  args: readonly Node[],
  context: BinderContext,
  expressions: ExpressionBinder,
  position: number | undefined,
  alias: string | undefined,
): TimeWindowItem {
  const expected = kind === 'tumble' ? [3, 4] : [4, 5];
  if (!expected.includes(args.length)) {
    throw new SqlError(SqlState.undefinedFunction, `${kind.toUpperCase()} takes ${expected.join(' or ')} arguments (table, time column, ${kind === 'tumble' ? 'size' : 'slide, size'} [, offset])`, { position });
  }
  const scope = new Scope();
  scope.relations.push(...table.relations);
  const time = expressions.bind(args[1]!, scope, { clause: kind.toUpperCase() });
  if (time.type.name !== 'timestamp' && time.type.name !== 'timestamptz') {
    throw new SqlError(SqlState.datatypeMismatch, `the time column of ${kind.toUpperCase()} must be a timestamp or timestamptz, not ${time.type.name}`, { position });
  }
  const constant = (node: Node): Expression => context.coerce(expressions.bind(node, new Scope(), { clause: kind.toUpperCase() }), INTERVAL, 'implicit', position);
  const zero: Expression = { kind: 'Literal', value: { months: 0, days: 0, micros: 0 }, type: INTERVAL };
  const width = table.plan.columns.length;
  const type = time.type;
  const passThrough: Expression[] = table.plan.columns.map((c, i) => ({ kind: 'Column', index: i, type: c.type }));
  const columns: OutputColumn[] = [
    ...table.plan.columns,
    { name: 'window_start', type, tableOid: 0, columnNumber: 0 },
    { name: 'window_end', type, tableOid: 0, columnNumber: 0 },
  ];
  let plan: Plan;
  // Constant lengths are checked here, so a bad window fails the statement even over no rows.
  const known = (e: Expression, what: string): number | undefined => {
    if (e.kind !== 'Literal' || e.value === null) return undefined;
    try {
      return lengthMicros(e.value as Interval, what);
    } catch (error) {
      if (error instanceof SqlError) throw new SqlError(error.code, error.message, { position });
      throw error;
    }
  };
  if (kind === 'tumble') {
    const size = constant(args[2]!);
    known(size, 'size');
    const offset = args[3] === undefined ? zero : constant(args[3]);
    const start: Expression = { kind: 'Call', fn: tumbleStart(type), args: [time, size, offset], type };
    const end: Expression = { kind: 'Call', fn: windowEnd(type), args: [start, size], type };
    plan = { kind: 'Project', input: table.plan, expressions: [...passThrough, start, end], columns };
  } else {
    const slide = constant(args[2]!);
    const size = constant(args[3]!);
    const slideMicros = known(slide, 'slide');
    const sizeMicros = known(size, 'size');
    if (slideMicros !== undefined && sizeMicros !== undefined && sizeMicros % slideMicros !== 0) {
      throw new SqlError(SqlState.invalidParameterValue, 'the size of a HOP window must be a multiple of its slide', { position });
    }
    const offset = args[4] === undefined ? zero : constant(args[4]);
    const outerTime: Expression = time.kind === 'Column' ? { kind: 'OuterColumn', depth: 1, index: time.index, type } : time;
    if (time.kind !== 'Column') throw new SqlError(SqlState.featureNotSupported, 'the time argument of HOP must be a column', { position });
    const first: Expression = { kind: 'Call', fn: hopFirstStart(type), args: [outerTime, slide, size, offset], type };
    const last: Expression = { kind: 'Call', fn: windowLast(type), args: [outerTime, slide, offset], type };
    const series: Plan = { kind: 'TableFunction', name: 'generate_series', args: [first, last, slide], withOrdinality: false, columns: [{ name: 'window_start', type, tableOid: 0, columnNumber: 0 }] };
    const joinColumns = [...table.plan.columns, series.columns[0]!];
    const join: Plan = { kind: 'Join', joinType: 'inner', left: table.plan, right: series, lateral: true, columns: joinColumns };
    const start: Expression = { kind: 'Column', index: width, type };
    const end: Expression = { kind: 'Call', fn: windowEnd(type), args: [start, size], type };
    plan = { kind: 'Project', input: join, expressions: [...passThrough, start, end], columns };
  }
  const name = alias ?? table.relations[0]?.alias ?? kind;
  const scopeColumns = columns.map((c, i) => ({
    name: c.name,
    type: c.type,
    hidden: i < width ? (table.relations.flatMap((r) => r.columns).find((x) => x.index === i)?.hidden ?? false) : false,
    tableOid: c.tableOid,
    columnNumber: c.columnNumber,
    index: i,
  }));
  return { plan, relations: [{ alias: name, columns: scopeColumns }] };
}

export { positionOf };
