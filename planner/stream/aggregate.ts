// The aggregate case of the incrementalization pass: an Aggregate whose every call is retractable
// becomes a `StreamHashAggregate` (one state row per group updated in O(changes), value tables for
// min / max / DISTINCT; see RetractableCall in stream-plan.ts); any other (string_agg, array_agg,
// float sums, min/max of types whose key encoding does not order like compareValues, ...) stays
// the keyed recompute with the batch template (`StreamRecomputeAggregate`).

import { type as scalar, type DataType } from '../../sql/types.js';
import type { AggregateCall, OutputColumn, PlanOf } from '../plan.js';
import type { Expression } from '../expression.js';
import type { RetractableCall, StateTableDeclaration, StreamPlan } from './stream-plan.js';

const int8 = scalar('int8');
const numeric = scalar('numeric');
const text = scalar('text');

/**
 * Types whose memcomparable key order (the value table's order) equals compareValues and whose
 * equal values are indistinguishable in output, so min / max / DISTINCT over a value table agree
 * with the batch aggregate.
 */
const ORDERED_TYPES = new Set(['int2', 'int4', 'int8', 'numeric', 'text', 'varchar', 'date', 'time', 'timestamp', 'timestamptz', 'bool']);

type Mode = RetractableCall['mode'];

interface Shape {
  readonly mode: Mode;
  readonly arithmetic?: 'int' | 'int8' | 'numeric';
  readonly distinct: boolean;
  readonly needsValues: boolean;
  readonly columns: readonly DataType[];
}

function arithmeticOf(type: DataType | undefined): 'int' | 'int8' | 'numeric' | undefined {
  switch (type?.name) {
    case 'int2':
    case 'int4':
      return 'int';
    case 'int8':
      return 'int8';
    case 'numeric':
      return 'numeric';
    default:
      return undefined;
  }
}

/** How a call keeps its state, or undefined when it is not retractable here. */
function shapeOf(call: AggregateCall): Shape | undefined {
  const argument = call.args[0]?.type;
  if (call.args.length > 1) return undefined;
  const ordered = argument !== undefined && ORDERED_TYPES.has(argument.name);
  switch (call.name) {
    case 'count':
      if (call.distinct && !ordered) return undefined;
      return { mode: 'count', distinct: call.distinct, needsValues: call.distinct, columns: [int8] };
    case 'sum':
    case 'avg': {
      const arithmetic = arithmeticOf(argument);
      if (arithmetic === undefined) return undefined;
      // DISTINCT numeric: equal values of different scales are one value; which one the batch
      // aggregate keeps depends on input order.
      if (call.distinct && arithmetic === 'numeric') return undefined;
      const columns = arithmetic === 'numeric' ? [numeric, int8, text] : [numeric, int8];
      return { mode: call.name, arithmetic, distinct: call.distinct, needsValues: call.distinct, columns };
    }
    case 'bool_and':
    case 'every':
      return { mode: 'bool_and', distinct: false, needsValues: false, columns: [int8, int8] };
    case 'bool_or':
      return { mode: 'bool_or', distinct: false, needsValues: false, columns: [int8, int8] };
    case 'min':
    case 'max':
      if (!ordered) return undefined;
      return { mode: call.name, distinct: false, needsValues: true, columns: [argument] };
    case 'string_agg':
    case 'array_agg':
      return undefined;
  }
}

/** JSON of an expression for sameness: bigints as text, source positions left out. */
function identityReplacer(key: string, value: unknown): unknown {
  if (key === 'position') return undefined;
  return typeof value === 'bigint' ? `${value}n` : value;
}

/**
 * `plan` with each group key that is not an input column computed by a projection below it
 * (plan version 10): the projection passes the input's columns and appends the computed keys, the
 * aggregate groups by columns of it (its calls read the same columns as before). Its output and
 * state rows are the same; only the key's values are computed one node lower, where an exchange
 * can hash them by column (parallel.ts: a key that is an expression keeps an aggregate on the main
 * thread). `plan` itself when every key is a column already, or with GROUPING SETS.
 */
export function keysAsColumns(plan: PlanOf<'Aggregate'>): PlanOf<'Aggregate'> {
  if (plan.groupingSets !== undefined || plan.groupingCalls !== undefined) return plan;
  if (plan.groupKeys.every((key) => key.kind === 'Column')) return plan;
  const expressions: Expression[] = plan.input.columns.map((column, index) => ({ kind: 'Column', index, type: column.type }));
  const columns: OutputColumn[] = [...plan.input.columns];
  const groupKeys = plan.groupKeys.map((key, position): Expression => {
    if (key.kind === 'Column') return key;
    expressions.push(key);
    columns.push({ name: plan.columns[position]!.name, type: key.type, tableOid: 0, columnNumber: 0 });
    return { kind: 'Column', index: expressions.length - 1, type: key.type };
  });
  return { ...plan, input: { kind: 'Project', input: plan.input, expressions, columns }, groupKeys };
}

/**
 * The incremental aggregate for `plan`, or undefined when some call is not retractable (the
 * caller then builds the keyed recompute). `convertInput` converts the input (state ids of the
 * input are allocated first, as for every stateful node).
 */
export function retractableAggregate(
  plan: PlanOf<'Aggregate'>,
  convertInput: () => StreamPlan,
  allocateStateTableId: () => number,
  template: PlanOf<'Aggregate'>,
): StreamPlan | undefined {
  // GROUPING SETS are refused before this pass; keep them away from the one-set state layout anyway.
  if (plan.groupingSets !== undefined || plan.groupingCalls !== undefined) return undefined;
  const shapes = plan.aggregates.map(shapeOf);
  if (shapes.some((shape) => shape === undefined)) return undefined;
  const input = convertInput();
  const keyTypes = plan.groupKeys.map((key) => key.type);
  const stateColumns: DataType[] = [...keyTypes, int8];
  const valueTables: { readonly identity: string; readonly type: DataType; readonly purpose: string }[] = [];
  const calls: RetractableCall[] = plan.aggregates.map((call, index) => {
    const shape = shapes[index]!;
    const column = stateColumns.length;
    stateColumns.push(...shape.columns);
    let valueTable: number | undefined;
    if (shape.needsValues) {
      const identity = JSON.stringify([call.args[0], call.filter ?? null], identityReplacer);
      let found = valueTables.findIndex((table) => table.identity === identity);
      if (found < 0) found = valueTables.push({ identity, type: call.args[0]!.type, purpose: `argument values of call ${index + 1} (${call.name}) by key` }) - 1;
      valueTable = found + 1;
    }
    return {
      call,
      mode: shape.mode,
      ...(shape.arithmetic === undefined ? {} : { arithmetic: shape.arithmetic }),
      distinct: shape.distinct,
      column,
      ...(valueTable === undefined ? {} : { valueTable }),
    };
  });
  const groups: StateTableDeclaration = {
    tableId: allocateStateTableId(),
    purpose: 'accumulators by key',
    columnTypes: stateColumns,
    primaryKey: keyTypes.map((_, i) => i),
  };
  const values = valueTables.map((table): StateTableDeclaration => ({
    tableId: allocateStateTableId(),
    purpose: table.purpose,
    columnTypes: [...keyTypes, table.type, int8],
    primaryKey: [...keyTypes.keys(), keyTypes.length],
  }));
  return {
    kind: 'StreamHashAggregate',
    property: 'stateful',
    inputs: [input],
    groupKeys: plan.groupKeys,
    calls,
    template,
    stateTables: [groups, ...values],
    columns: plan.columns,
  };
}
