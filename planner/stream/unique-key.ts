// The unique key of a streaming plan's output, where one is known: the columns no two rows of the
// output share (NULLs compared as equal, as GROUP BY and the state store's keys compare them). A
// materialized view with such a key is stored by it (incrementalize.ts, `viewKey`): one state row
// per key, each change an upsert, no row counts (RisingWave materializes by the view's stream key
// the same way). Where no key is known the view keeps its `row ++ duplicate number` layout.
//
//   scan            a table's or materialized view's primary key, when the projection keeps it
//   filter          its input's key (dynamic, temporal and watermark filters, EMIT ON WINDOW CLOSE:
//                   they pass or hold back whole rows)
//   project         its input's key, when every key column is passed through as a plain column
//   aggregate       its group keys (output first); no group keys: at most one row (the empty key)
//   inner join      both sides' keys: a pair of rows is unique when each side's row is
//   left / right    both sides' keys too: a preserved row is either NULL-padded once (the other
//                   side's key all NULL) or joined to distinct rows of the other side, never both;
//                   when the join's keys on one side cover that side's key, the other key alone
//   full join       none: a left row padded with NULLs and a right row padded with NULLs may agree
//                   on every key column when both sides have a NULL key
//   semi / anti     the left side's key (the output is left rows, each at most once)
//   DISTINCT        its columns; DISTINCT ON: the ON columns when they are output as plain columns
//   UNION / INTERSECT / EXCEPT (not ALL)   all columns
//   top-N, window   their input's key (a subset of the input's rows; a window adds columns)
//   append-only group top-N   its partition columns and row_number(), or the partition alone for a top-1
//   VALUES          at most one row: the empty key
//   UNION ALL, LATERAL (table functions may repeat a row), recursion: none
//   a shared subtree (share.ts)    its source's key, through its column map
//
// Separately, a view over an append-only source through filters and projections (`carriesRowIds`)
// is stored by the hidden row id each row carries (blind inserts, executor/stream/materialize.ts),
// and from plan version 8 a view over another input that only inserts (`insertsOnly`) with no key
// known by a row number it allocates (incrementalize.ts `numbersRows`).

import type { RelationDef } from '../../sql/catalog.js';
import type { Expression } from '../expression.js';
import type { Plan } from '../plan.js';
import type { StreamPlan } from './stream-plan.js';

/** Positions of output columns forming a unique key; `[]`: at most one row; undefined: none known. */
export type UniqueKey = readonly number[] | undefined;

/**
 * The position of the hidden row id of a source whose rows are only appended (no primary key:
 * DML is refused, its connector only inserts, each row with a new id). The planner's twin of
 * executor/stream/change-batch.ts `appendOnlyRowId`: both must say the same.
 */
export function appendOnlyRowIdColumn(relation: RelationDef): number | undefined {
  if (relation.kind !== 'source' || relation.primaryKey.length !== 1) return undefined;
  const position = relation.primaryKey[0]!;
  const column = relation.columns[position];
  return column !== undefined && column.hidden === true && column.type.name === 'int8' ? position : undefined;
}

/**
 * True when every batch `plan` outputs carries row ids: a scan of an append-only source, then only
 * filters and projections (the planner's twin of executor/stream/scan.ts `carriesRowIds`). With
 * `throughWatermark` (a hash join side of plan version 9), watermark filters too: they drop late
 * rows and pass the others with their ids (executor/stream/watermark-filter.ts).
 */
export function carriesRowIds(plan: StreamPlan, throughWatermark = false): boolean {
  switch (plan.kind) {
    case 'StreamTableScan':
      return appendOnlyRowIdColumn(plan.relation) !== undefined;
    case 'StreamFilter':
    case 'StreamProject':
      return carriesRowIds(plan.input, throughWatermark);
    case 'StreamWatermarkFilter':
      return throughWatermark && carriesRowIds(plan.inputs[0]!, throughWatermark);
    case 'StreamTemporalJoin':
      // At most one output row per left row when its lookup is by the table's primary key.
      return plan.index === undefined && carriesRowIds(plan.inputs[0]!, throughWatermark);
    default:
      return false;
  }
}

/**
 * True when `plan` only ever outputs insertions: a scan of an append-only source (no primary key:
 * DML refused, its connector only inserts), through filters, projections, LATERAL table functions,
 * UNION ALL, shared subtrees, inner hash joins whose inputs are all append-only and temporal joins
 * whose left side is. The planner chooses the group top-N by it; the aggregates' append-only state
 * and the parallel workers' plans use it too. With `throughWatermark` (the aggregates' min / max,
 * hash-aggregate.ts: their state rows are alike either way), watermark filters too: they only drop
 * late rows. The plans the planner chooses by it do not look through them (their state layouts
 * would change under existing views).
 */
export function insertsOnly(plan: StreamPlan, throughWatermark = false): boolean {
  const each = (input: StreamPlan): boolean => insertsOnly(input, throughWatermark);
  switch (plan.kind) {
    case 'StreamTableScan':
      return appendOnlyRowIdColumn(plan.relation) !== undefined;
    case 'StreamFilter':
    case 'StreamProject':
    case 'StreamLateral':
      return each(plan.input);
    case 'StreamWatermarkFilter':
      return throughWatermark && each(plan.inputs[0]!);
    case 'StreamUnion':
      return plan.inputs.every(each);
    case 'StreamHashJoin':
      return plan.joinType === 'inner' && plan.inputs.every(each);
    case 'StreamTemporalJoin':
      // The side table's changes never reach the output: each left insert makes inserts.
      return each(plan.inputs[0]!);
    case 'StreamShared':
      return each(plan.source);
    default:
      return false;
  }
}

/** The output columns of `plan` that form a unique key, if one is known (see the header). */
export function uniqueKey(plan: StreamPlan): UniqueKey {
  switch (plan.kind) {
    case 'StreamTableScan':
      return scanKey(plan.relation, plan.projection);
    case 'StreamValues':
      return plan.plan.kind === 'Values' && plan.plan.rows.length <= 1 ? [] : undefined;
    case 'StreamFilter':
      return uniqueKey(plan.input);
    case 'StreamProject':
      return throughProjection(uniqueKey(plan.input), plan.expressions);
    case 'StreamDynamicFilter':
    case 'StreamWatermarkFilter':
    case 'StreamEmitOnWindowClose':
      return uniqueKey(plan.inputs[0]!);
    case 'StreamHashAggregate':
      return plan.groupKeys.map((_, index) => index);
    case 'StreamRecomputeAggregate':
      return plan.template.kind === 'Aggregate' && plan.template.groupingSets === undefined ? plan.template.groupKeys.map((_, index) => index) : undefined;
    case 'StreamHashJoin':
    case 'StreamRecomputeJoin':
    case 'StreamNestedLoopJoin':
      return joinKey(plan.template, plan.inputs);
    case 'StreamDistinct':
      return distinctKey(plan.template, plan.columns.length);
    case 'StreamSetOperation':
      return plan.template.kind === 'SetOperation' && !plan.template.all ? plan.columns.map((_, index) => index) : undefined;
    case 'StreamTopN':
    case 'StreamOverWindow':
    case 'StreamAppendOnlyOverWindow':
      return uniqueKey(plan.inputs[0]!);
    case 'StreamTemporalJoin':
      // At most one match per left row by primary key: the left row's key, first in the output.
      return plan.index === undefined ? uniqueKey(plan.inputs[0]!) : undefined;
    case 'StreamAppendOnlyGroupTopN': {
      // row_number() is unique within a partition: (partition, row_number), or the partition
      // alone when one row per partition passes. Partition columns keep their input positions.
      const partition = plan.keys[0]!;
      if (plan.groupTopN === undefined || !partition.every((key) => key.kind === 'Column')) return uniqueKey(plan.inputs[0]!);
      const columns = partition.map((key) => (key.kind === 'Column' ? key.index : -1));
      return plan.groupTopN.limit <= 1 ? columns : [...columns, plan.inputs[0]!.columns.length];
    }
    case 'StreamShared': {
      // Output column i is the source's column map[i] (identity without a map).
      const key = uniqueKey(plan.source);
      const map = plan.map;
      if (key === undefined || map === undefined) return key;
      const out = key.map((column) => map.indexOf(column));
      return out.includes(-1) ? undefined : out;
    }
    case 'StreamUnion':
    case 'StreamLateral':
    case 'StreamMaterialize':
      return undefined;
  }
}

/** A relation's primary key as positions in the scan's output, when every key column is projected. */
function scanKey(relation: RelationDef, projection: readonly number[]): UniqueKey {
  // A relation without a primary key (none declared in a test's catalog) promises nothing.
  if ((relation.kind !== 'table' && relation.kind !== 'materialized_view') || relation.primaryKey.length === 0) return undefined;
  const key: number[] = [];
  for (const column of relation.primaryKey) {
    const position = projection.indexOf(column);
    if (position < 0) return undefined;
    key.push(position);
  }
  return key;
}

/** The input key's columns as output positions, when each is passed through as a plain column. */
function throughProjection(key: UniqueKey, expressions: readonly Expression[]): UniqueKey {
  if (key === undefined) return undefined;
  const out: number[] = [];
  for (const column of key) {
    const position = expressions.findIndex((expression) => expression.kind === 'Column' && expression.index === column);
    if (position < 0) return undefined;
    out.push(position);
  }
  return out;
}

/**
 * Inner, left, right: left key ++ right key (shifted); semi / anti: the left key; full: none. When
 * the equi-join's keys on one side cover that side's unique key, each row of the other side meets
 * at most one row there, so the other side's key alone is unique (inner; left when the covered
 * side is the right one, right when it is the left one): a fact table joined to a dimension by the
 * dimension's key keeps the fact's key.
 */
function joinKey(template: Plan, inputs: readonly StreamPlan[]): UniqueKey {
  if (template.kind !== 'HashJoin' && template.kind !== 'NestedLoopJoin') return undefined;
  const type = template.joinType;
  const left = uniqueKey(inputs[0]!);
  if (type === 'semi' || type === 'anti') return left;
  if (type === 'full') return undefined;
  const right = uniqueKey(inputs[1]!);
  const width = template.left.columns.length;
  if (template.kind === 'HashJoin') {
    if (left !== undefined && right !== undefined && type !== 'right' && covers(template.rightKeys, right)) return left;
    if (left !== undefined && right !== undefined && type !== 'left' && covers(template.leftKeys, left)) return right.map((column) => column + width);
  }
  if (left === undefined || right === undefined) return undefined;
  return [...left, ...right.map((column) => column + width)];
}

/** The equi-join keys (over one side's columns) include every column of that side's unique key. */
function covers(keys: readonly Expression[], key: readonly number[]): boolean {
  return key.every((column) => keys.some((expression) => expression.kind === 'Column' && expression.index === column));
}

/** DISTINCT: every column; DISTINCT ON: the ON expressions when all are plain output columns. */
function distinctKey(template: Plan, width: number): UniqueKey {
  if (template.kind !== 'Distinct') return undefined;
  if (template.on === undefined) return Array.from({ length: width }, (_, index) => index);
  const key: number[] = [];
  for (const expression of template.on) {
    if (expression.kind !== 'Column') return undefined;
    if (!key.includes(expression.index)) key.push(expression.index);
  }
  return key;
}
