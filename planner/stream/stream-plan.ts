// Streaming plan nodes: what the incrementalization pass (incrementalize.ts) makes of an optimized,
// physical plan, and what executor/stream/ builds a dataflow from. A readonly tagged union like
// planner/plan.ts. Every node declares whether it is linear (an output change depends on one input
// change only, so it keeps no state) or stateful, and the state tables it keeps (one per piece of
// state, ids allocated through the catalog, so a restart finds them again).
//
// Stateful operators keep their input changes grouped by a key (the group key of an aggregate, the
// equi-join key of a join, the partition of a window, the whole row of DISTINCT) and, when a key's
// input changes, recompute that key's output with the batch operator (`template`: the batch plan
// node whose inputs are `StreamInput` scans) and emit the difference. So every batch operator's
// semantics carry over exactly, and the cost of a change is the size of its key group, not of the
// whole input.

import type { DataType } from '../../sql/types.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { Expression } from '../expression.js';
import type { AggregateCall, JoinType, OutputColumn, Plan, SortKey } from '../plan.js';

export type StreamProperty = 'linear' | 'stateful';

export interface StateTableDeclaration {
  readonly tableId: number;
  /** What the table holds, for EXPLAIN and system tables. */
  readonly purpose: string;
  readonly columnTypes: readonly DataType[];
  readonly primaryKey: readonly number[];
  /**
   * The columns (of the table's rows, all key columns) hashed for each key's vnode byte
   * (storage/state-table.ts `vnodeColumns`): a keyed fragment's state in a view of plan version 11
   * or later, the columns its exchange routes the table's rows by (parallel.ts, `stateVnodes`).
   */
  readonly vnodeColumns?: readonly number[];
}

/** The id given to the placeholder relation that stands for input `index` inside a template. */
export function streamInputRelationId(index: number): number {
  return -1 - index;
}

/**
 * Kinds of stateful operators that recompute a key group with a batch template. StreamRecomputeJoin:
 * a hash join without equi-keys (uncorrelated EXISTS), and every hash join of a view created before
 * StreamHashJoin existed (its state has no degrees; `STREAM_PLAN_VERSION`).
 */
export type KeyedOperatorKind =
  | 'StreamRecomputeAggregate'
  | 'StreamRecomputeJoin'
  | 'StreamNestedLoopJoin'
  | 'StreamDistinct'
  | 'StreamTopN'
  | 'StreamOverWindow'
  | 'StreamSetOperation'
  | 'StreamAppendOnlyGroupTopN'
  | 'StreamAppendOnlyOverWindow';

/**
 * The group top-N of an append-only input (executor/stream/group-top-n.ts): `row_number() OVER
 * (PARTITION BY keys ORDER BY orderBy) <= limit` over rows that are only ever inserted. Its state
 * table keeps at most `limit` rows per partition (`key ++ row ++ count`, the layout of the
 * keyed recompute; keyed by the partition alone when `limit` is 1 and there is a partition): a
 * row ranked below the limit never returns, since no row above it can leave.
 */
export interface GroupTopN {
  /** The window's ORDER BY, over the input's rows. */
  readonly orderBy: readonly SortKey[];
  /** The number of rows kept per partition (>= 0). */
  readonly limit: number;
}

export interface KeyedOperator {
  readonly kind: KeyedOperatorKind;
  readonly property: 'stateful';
  readonly inputs: readonly StreamPlan[];
  /** Per input: the key expressions over that input's rows (same types across inputs). */
  readonly keys: readonly (readonly Expression[])[];
  /** The batch plan recomputing one key group; its leaves are Scans of `streamInputRelationId(i)`. */
  readonly template: Plan;
  /**
   * Per input: rows grouped by key, `key columns ++ row ++ count int8`. StreamAppendOnlyOverWindow
   * has a second one after its input's: per partition its last row and running values
   * (executor/stream/over-window.ts).
   */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
  /** StreamAppendOnlyGroupTopN: what it ranks by and how many rows it keeps. */
  readonly groupTopN?: GroupTopN;
}

/**
 * The version of the streaming plans the pass makes, stored with each view (`RelationDef.stream`):
 * 2 plans equi-joins as StreamHashJoin (degrees in its state rows); views without a version (1)
 * were created before and keep their joins' keyed recompute, whose state rows have no degree.
 * 3 stores a view by its unique key where one is known (`StreamMaterialize.key`); views of version
 * 2 keep their `row ++ duplicate number` tables and row counts.
 * 4 keeps a StreamHashJoin side over an append-only source by (key, source row id)
 * (`HashJoinOperator.rowIds`); views of version 3 keep their `key ++ row` side tables.
 * 5 keys the state tables of a hash aggregate or hash join cleaned by watermark (`StateCleaning`)
 * by the cleaned column first, so a closed window's state is one key range (a range delete);
 * views of version 4 keep their key order and delete closed windows row by row.
 * 6 prunes a window's input to the columns its calls and the plan above it read
 * (rules/projection-pushdown.ts), so an over-window's state rows hold those; views of version 5
 * and before keep every input column in them.
 * 7 plans `row_number() <= N` over an append-only input as StreamAppendOnlyGroupTopN, whose state
 * keeps N rows per partition; views of version 6 and before keep their StreamOverWindow, whose
 * state holds every input row.
 * 8 plans an over-window whose calls all run forward (row_number, rank, dense_rank, lag by 1,
 * count / sum / min / max from UNBOUNDED PRECEDING to CURRENT ROW) over an input that mostly
 * inserts as StreamAppendOnlyOverWindow, which adds a second state table (one summary row per
 * partition); views of version 7 and before keep their StreamOverWindow.
 * 8 also stores a view whose input only inserts (`insertsOnly`) but carries no source row ids (an inner
 * join of append-only sources, a UNION ALL, a LATERAL) by a row number the view allocates
 * (`StreamMaterialize.numbered`); views of version 7 and before keep their `row ++ duplicate
 * number` tables and row counts.
 * 9 keeps a StreamHashJoin side over a watermark filter over an append-only source by (key, source
 * row id) as version 4 does without one (an EMIT ON WINDOW CLOSE view's join: Nexmark q7's bids);
 * views of version 8 keep their `key ++ row` side tables.
 * 10 computes a StreamHashAggregate's group keys that are expressions (`to_char(date_time, ...)`,
 * `a % 10`) in a StreamProject below it (aggregate.ts, `keysAsColumns`), so the aggregate groups by
 * input columns and runs in a parallel fragment (parallel.ts); its state tables are laid out as
 * before, but views of version 9 keep their plan (and run on the main thread).
 * 11 puts the vnode in the keys of a keyed fragment's state tables (`StateTableDeclaration.vnodeColumns`,
 * parallel.ts `withVnodeColumns`), whatever the parallelism the view runs at, so a vnode's state is
 * one key range per table; views of version 10 keep every key under vnode 0.
 */
export const STREAM_PLAN_VERSION = 11;

/**
 * The incremental symmetric hash join (executor/stream/hash-join.ts): each side's rows by equi-key
 * in its state table (`key ++ row ++ count`, then `++ degree` on a side whose rows' output depends
 * on whether they match: the preserved side of an outer join, the left side of semi / anti). A
 * change on one side probes the other side's key group and emits the joined changes; a row's degree
 * (its number of matches, residual included) going 0 <-> 1 retracts / re-emits its NULL-padded row
 * (outer) or the row itself (semi, anti). Rows with a NULL in a plain (not NULL-safe) key never
 * match and keep no state.
 */
export interface HashJoinOperator {
  readonly kind: 'StreamHashJoin';
  readonly property: 'stateful';
  /** [left, right]. */
  readonly inputs: readonly StreamPlan[];
  readonly joinType: JoinType;
  /** [left keys over left rows, right keys over right rows]. */
  readonly keys: readonly (readonly Expression[])[];
  /** Per key: IS NOT DISTINCT FROM (NULL matches NULL). */
  readonly nullSafe: readonly boolean[];
  /** Over left ++ right columns. */
  readonly residual?: Expression;
  /** Per side: its state rows end with a degree column. */
  readonly degrees: readonly boolean[];
  /**
   * Per side (plan version 4; absent before): the side's input carries source row ids (an
   * append-only source through filters and projections), so its state rows are
   * `key ++ row ++ row id ++ count (1) [++ degree]` keyed by (key, row id): an insert is one blind
   * put (no read of an existing count) and two equal rows are two state rows.
   */
  readonly rowIds?: readonly boolean[];
  /** The batch HashJoin over placeholder inputs: for EXPLAIN only. */
  readonly template: Plan;
  /** Under EMIT ON WINDOW CLOSE: an equi-key following the watermarks of both sides, whose closed keys' rows both sides delete. */
  readonly clean?: StateCleaning;
  /** [left rows, right rows]. */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
}

/**
 * A temporal join (`JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON ...`, inner or left): each left
 * change looks up the right table's rows by primary key as they are in the epoch it arrives in and
 * emits the joined rows; changes of the right table do not reach the view, so the right side keeps
 * no state. The ON equalities pin every primary-key column of the table, so a
 * left row has at most one match (the output carries the left row's source row id, if any).
 * A left side that can retract (anything but an append-only source) keeps what each left row
 * joined with (`memo`), so a retraction emits the very rows its insert emitted.
 */
export interface TemporalJoinOperator {
  readonly kind: 'StreamTemporalJoin';
  readonly property: 'stateful';
  /**
   * [left, the right relation's whole rows]: the right changes only keep the operator's copy of a
   * small table current, and emit nothing.
   */
  readonly inputs: readonly StreamPlan[];
  readonly joinType: 'inner' | 'left';
  /** The right table (or materialized view), read by its primary key. */
  readonly relation: RelationDef;
  /** The right table's columns the join reads (the right scan's projection). */
  readonly projection: readonly number[];
  /** The right scan's pushed filter, over its projected row. */
  readonly filter?: Expression;
  /**
   * A secondary index (CREATE INDEX) the join looks the table up by, when the ON equalities cover
   * its columns but not the primary key: a left row may then match several right rows.
   */
  readonly index?: RelationDef;
  /** Per primary-key column of the table (or column of `index`), in key order: the expression over left rows it equals. */
  readonly lookupKeys: readonly Expression[];
  /** ON equalities beyond the primary key: [over left rows, over projected right rows], compared per looked-up row. */
  readonly otherKeys?: readonly (readonly Expression[])[];
  /** Per other key: IS NOT DISTINCT FROM. */
  readonly otherNullSafe?: readonly boolean[];
  /** Over left ++ projected right columns: ON conjuncts other than the key equalities. */
  readonly residual?: Expression;
  /** [memo]: a left side with retractions: `left row ++ right row (NULLs: none) ++ count`, keyed by both rows. */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
}

/**
 * State cleaning by watermark, in a view that EMITs ON WINDOW CLOSE (watermark.ts): key column `key`
 * of an operator's state tables (a group key of StreamHashAggregate, an equi-key of StreamHashJoin,
 * first in every state row) follows watermarks on every input. Its watermark is the least of
 * `bounds`, each `derive` of a StreamWatermarkFilter's watermark (over one column) read from that
 * filter's state table. Once it passes a key, no change with the key can arrive any more (the
 * filters drop rows behind their watermarks), so the operator deletes the key's state rows and
 * cache entries.
 */
export interface StateCleaning {
  readonly key: number;
  readonly bounds: readonly { readonly watermarkTable: StateTableDeclaration; readonly derive: Expression }[];
}

export type DynamicFilterOperator = '<' | '<=' | '>' | '>=' | '=';

/**
 * In a view that EMITs ON WINDOW CLOSE, above the scan of a relation with a WATERMARK
 * (watermark-filter.ts): the watermark is the largest `column - delay` seen (kept in the state
 * table); rows whose column is behind it are dropped and counted.
 */
export interface WatermarkFilter {
  readonly kind: 'StreamWatermarkFilter';
  readonly property: 'stateful';
  readonly inputs: readonly StreamPlan[];
  /** Index of the watermark column in the input rows. */
  readonly column: number;
  /** Interval text. */
  readonly delay: string;
  /** `0 ++ watermark`. */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
}

/**
 * EMIT ON WINDOW CLOSE (eowc.ts): the input's net rows wait in a buffer ordered by `column` until the
 * column's watermark (`derive` of the relation's watermark, read from `watermarkTable`) passes them;
 * then they are emitted once, final. Changes to rows already emitted are dropped.
 */
export interface EmitOnWindowClose {
  readonly kind: 'StreamEmitOnWindowClose';
  readonly property: 'stateful';
  readonly inputs: readonly StreamPlan[];
  readonly column: number;
  /** Over one column (the relation's watermark): the watermark of `column`. */
  readonly derive: Expression;
  /** The StreamWatermarkFilter's state table it reads (not its own). */
  readonly watermarkTable: StateTableDeclaration;
  /** Further watermarks `column` follows (a join key's other side): its watermark is the least of all. */
  readonly also?: readonly { readonly watermarkTable: StateTableDeclaration; readonly derive: Expression }[];
  /** Buffer (`column ++ row ++ count`), the watermark emitted up to (`0 ++ value`). */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
}

/**
 * A dynamic filter (dynamic-filter.ts): `key operator bound`, where the bound is the one value of an
 * uncorrelated scalar subquery (the second input) or, for a temporal filter, an expression of
 * `now()` that advances with the epoch time (`now`). The input rows are kept ordered by `key`, so
 * when the bound moves only the rows between the old and the new bound are read and emitted.
 */
export interface DynamicFilter {
  readonly kind: 'StreamDynamicFilter';
  readonly property: 'stateful';
  /** [rows] for a temporal filter, [rows, the scalar subquery's one column] otherwise. */
  readonly inputs: readonly StreamPlan[];
  /** Over the input rows: the compared side (same type as the bound). */
  readonly key: Expression;
  readonly operator: DynamicFilterOperator;
  /** Temporal filter: the bound, an expression of now() and constants only. */
  readonly now?: Expression;
  /** For EXPLAIN: `key operator bound` over the input columns and one more column, the bound. */
  readonly predicate: Expression;
  /** Rows by key (`key ++ row ++ count`); then the subquery's rows (`row ++ count`) or the temporal bound (`0 ++ bound`). */
  readonly stateTables: readonly StateTableDeclaration[];
  readonly columns: readonly OutputColumn[];
}

/**
 * How one aggregate call of a `StreamHashAggregate` keeps its accumulator in the group's state row
 * (starting at state column `column`):
 *
 *   count                     [n int8]                          count(*), count(x), count(DISTINCT x)
 *   sum / avg of integers     [total numeric, n int8]           exact, retracted by subtraction
 *   sum / avg of numeric      [total numeric, n int8, text]     text: counts of NaN / +inf / -inf
 *                                                               and of each scale seen (the result's
 *                                                               scale is the largest one present)
 *   bool_and / bool_or        [trues int8, falses int8]
 *   min / max                 [current value]                   the value table finds the next one
 *
 * `valueTable` (an index into the operator's state tables) holds `key ++ value ++ count` of the
 * call's non-null argument values (FILTER applied): min/max read its first / last value when the
 * current one goes, and DISTINCT calls accumulate a value when its count goes 0 -> 1 and retract it
 * when it goes 1 -> 0. Calls on the same argument and FILTER share one value table.
 */
export interface RetractableCall {
  readonly call: AggregateCall;
  readonly mode: 'count' | 'sum' | 'avg' | 'bool_and' | 'bool_or' | 'min' | 'max';
  /** The sum's arithmetic: int2/int4 (result int8), int8 (result numeric), numeric. */
  readonly arithmetic?: 'int' | 'int8' | 'numeric';
  /** DISTINCT count / sum / avg: fed by the value table's 0 <-> 1 transitions. */
  readonly distinct: boolean;
  readonly column: number;
  readonly valueTable?: number;
}

export type StreamPlan =
  /** Changes of a table or materialized view, projected and filtered. */
  | {
      readonly kind: 'StreamTableScan';
      readonly property: 'linear';
      readonly relation: RelationDef;
      readonly projection: readonly number[];
      readonly filter?: Expression;
      readonly stateTables: readonly StateTableDeclaration[];
      readonly columns: readonly OutputColumn[];
    }
  /** Constant rows (VALUES, generate_series without a table): inserted once, when the view is created. */
  | { readonly kind: 'StreamValues'; readonly property: 'linear'; readonly plan: Plan; readonly stateTables: readonly StateTableDeclaration[]; readonly columns: readonly OutputColumn[] }
  | { readonly kind: 'StreamFilter'; readonly property: 'linear'; readonly input: StreamPlan; readonly predicate: Expression; readonly stateTables: readonly StateTableDeclaration[]; readonly columns: readonly OutputColumn[] }
  | { readonly kind: 'StreamProject'; readonly property: 'linear'; readonly input: StreamPlan; readonly expressions: readonly Expression[]; readonly stateTables: readonly StateTableDeclaration[]; readonly columns: readonly OutputColumn[] }
  /** UNION ALL: both inputs' changes as they come. */
  | { readonly kind: 'StreamUnion'; readonly property: 'linear'; readonly inputs: readonly StreamPlan[]; readonly stateTables: readonly StateTableDeclaration[]; readonly columns: readonly OutputColumn[] }
  /**
   * A LATERAL join whose right side reads no table (HOP windows, unnest, generate_series over a
   * row's values): each changed row is joined on its own by the batch template, sign kept.
   */
  | { readonly kind: 'StreamLateral'; readonly property: 'linear'; readonly input: StreamPlan; readonly template: Plan; readonly stateTables: readonly StateTableDeclaration[]; readonly columns: readonly OutputColumn[] }
  | KeyedOperator
  | HashJoinOperator
  | TemporalJoinOperator
  | DynamicFilter
  | WatermarkFilter
  | EmitOnWindowClose
  /**
   * The incremental hash aggregate: one state row per group (`key ++ row count ++ accumulators`,
   * see RetractableCall) updated from the changes in O(changes), value tables for min / max /
   * DISTINCT; emits the old and the new output row of each changed group. `template` (the batch
   * Aggregate over a placeholder input) is for EXPLAIN only.
   */
  | {
      readonly kind: 'StreamHashAggregate';
      readonly property: 'stateful';
      readonly inputs: readonly StreamPlan[];
      readonly groupKeys: readonly Expression[];
      readonly calls: readonly RetractableCall[];
      readonly template: Plan;
      /** [0]: group state rows; then the value tables. */
      readonly stateTables: readonly StateTableDeclaration[];
      readonly columns: readonly OutputColumn[];
      /** Under EMIT ON WINDOW CLOSE: a group key following a watermark, whose closed groups' rows (value tables too) are deleted. */
      readonly clean?: StateCleaning;
    }
  /**
   * The view's contents: the relation's state table (`row ++ hidden column`, so a batch SELECT
   * reads it like a table and AS OF works). With `key` (plan version 3, a unique key known:
   * planner/stream/unique-key.ts) it is stored by that key, one row per key, and a change is an
   * upsert; without, by the whole row and a duplicate number, with the count of each distinct row
   * in a second state table.
   */
  | {
      readonly kind: 'StreamMaterialize';
      readonly property: 'stateful';
      readonly input: StreamPlan;
      readonly relationId: number;
      readonly name: string;
      /**
       * Positions in the view's relation columns (the query's columns, then the hidden one) of the
       * key its rows are stored by: the query's unique key, or the hidden column alone (a source row
       * id of blind inserts, the view's own row number (`numbered`), or 0 in a view of at most one
       * row). Undefined: `row ++ duplicate number`.
       */
      readonly key?: readonly number[];
      /**
       * Plan version 8, an input that only inserts and carries no row ids: each row is stored under
       * a row number the materialize allocates (`key` the hidden column), the next number kept in
       * `stateTables[1]` (`int4 0, int8 next`), written in the epoch of the rows it numbered.
       */
      readonly numbered?: true;
      readonly stateTables: readonly StateTableDeclaration[];
      readonly columns: readonly OutputColumn[];
    }
  /**
   * A repeated subtree's output taken from its first occurrence (share.ts): `source` is that
   * subtree, the same object where it sits in the plan (placed and run once); `map` (when the
   * columns differ in order: an aggregate's group keys) says which source column each output column
   * is. No inputs of its own; `stateTables` are the replaced subtree's, allocated and unused.
   */
  | {
      readonly kind: 'StreamShared';
      readonly property: 'linear';
      readonly source: StreamPlan;
      readonly map?: readonly number[];
      readonly stateTables: readonly StateTableDeclaration[];
      readonly columns: readonly OutputColumn[];
    };

export type StreamPlanKind = StreamPlan['kind'];

/** The direct inputs of a streaming node. */
export function streamInputs(plan: StreamPlan): readonly StreamPlan[] {
  switch (plan.kind) {
    case 'StreamTableScan':
    case 'StreamValues':
    case 'StreamShared':
      return [];
    case 'StreamFilter':
    case 'StreamProject':
    case 'StreamLateral':
    case 'StreamMaterialize':
      return [plan.input];
    default:
      return plan.inputs;
  }
}

/** Every state table of a streaming plan, in a fixed (pre-order) order. */
export function allStateTables(plan: StreamPlan): StateTableDeclaration[] {
  const out: StateTableDeclaration[] = [...plan.stateTables];
  for (const input of streamInputs(plan)) out.push(...allStateTables(input));
  return out;
}

/** Ids of the relations whose changes feed the plan. */
export function sourceRelationIds(plan: StreamPlan): number[] {
  if (plan.kind === 'StreamTableScan') return [plan.relation.id];
  return [...new Set(streamInputs(plan).flatMap(sourceRelationIds))];
}
