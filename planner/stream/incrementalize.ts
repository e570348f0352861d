// The incrementalization pass: an optimized, physical plan (planner/stages.ts) in, a streaming plan
// (stream-plan.ts) out. Linear nodes (scan, filter, project, UNION ALL, a LATERAL join over a table
// function) map one to one; every other node becomes a keyed stateful operator that keeps its input
// grouped by a key and recomputes a changed key group with the batch node as its template:
//
//   Aggregate           retractable calls: StreamHashAggregate (aggregate.ts), one state row per
//                       group; otherwise key: the group keys (no keys: one group, so count(*) of
//                       nothing is 0)
//   HashJoin            with equi-keys: StreamHashJoin (incremental: a change probes the other
//                       side's key group; degrees for outer / semi / anti); without keys, or in a
//                       view created before plan version 2: keyed recompute (StreamRecomputeJoin)
//   NestedLoopJoin      key: none (a cross or non-equi join recomputes against the whole other side)
//   Window              key: the common PARTITION BY; a filter right above it (row_number() <= N)
//                       runs in its template, so a partition outputs only the rows that pass;
//                       over an append-only input (plan version 7), row_number() <= N alone:
//                       StreamAppendOnlyGroupTopN, which keeps N rows per partition; a window
//                       whose calls run forward over an input that mostly inserts (plan version
//                       8): StreamAppendOnlyOverWindow, which computes rows added after a
//                       partition's last from a summary row and recomputes the others
//   Limit over Sort     key: none (top-N); a Sort elsewhere is dropped: a view's rows have no order
//   Distinct [ON]       key: the whole row, or the ON expressions (with the Sort below it)
//   INTERSECT / EXCEPT / UNION (distinct)   key: the whole row
//
// State table ids come from `allocateStateTableId` (the catalog's id counter), in a fixed order, so
// planning the same definition again (a restart) with the stored ids rebuilds the same dataflow.

import { SqlError, SqlState, type SqlStateCode } from '../../sql/errors.js';
import { type as scalar, type DataType } from '../../sql/types.js';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { children, column, mapChildren, type Expression } from '../expression.js';
import type { OutputColumn, Plan, PlanOf } from '../plan.js';
import { callsSequenceFunction, proctimeCall, columnsNeeded, hasSubquery, isVolatile, nodeExpressions, outerColumnsOf, remapColumns, remapOuterInPlan } from '../walk.js';
import { keysAsColumns, retractableAggregate } from './aggregate.js';
import { findDynamicConjunct, mentionsNow, type DynamicConjunct } from './dynamic-filter.js';
import { deriveExpression, windowColumn } from './watermark.js';
import { correlatedAggregateAsJoin } from './correlated-scalar.js';
import { carriesRowIds, insertsOnly, uniqueKey } from './unique-key.js';
import { STREAM_PLAN_VERSION, streamInputRelationId, streamInputs, type KeyedOperator, type KeyedOperatorKind, type StateCleaning, type StateTableDeclaration, type StreamPlan } from './stream-plan.js';

/** Name of the hidden last column of a materialized view: the number of a duplicate row. */
export const DUPLICATE_COLUMN = '_oxbow_duplicate';

export interface IncrementalizeOptions {
  /** The view's relation id (its rows' state table id). */
  readonly relationId: number;
  readonly name: string;
  /** Hands out the next state table id (the catalog's counter, or the stored ids on a restart). */
  allocateStateTableId(): number;
  /** EMIT ON WINDOW CLOSE: rows are emitted once their window closes (watermark.ts). */
  readonly emitOnWindowClose?: boolean;
  /**
   * The view's stored plan version (`STREAM_PLAN_VERSION`; undefined: the current one). Below 2,
   * hash joins are planned as the keyed recompute they were created with, so their state reads right.
   */
  readonly planVersion?: number;
  /**
   * The view's stored primary key (its relation's `primaryKey`), when planning a stored view again
   * at a restart: from plan version 3 the view is stored by it as it was at creation, whatever
   * `uniqueKey` derives today. Undefined: derive it (CREATE).
   */
  readonly storedKey?: readonly number[];
  /** The secondary indexes of a relation (CatalogReader.indexesOf): a temporal join may look its right side up by one. */
  readonly indexesOf?: (relationId: number) => readonly RelationDef[];
}

const int8 = scalar('int8');

function unsupported(message: string): SqlError {
  return new SqlError(SqlState.featureNotSupported, `${message} is not supported in a materialized view`);
}

/** The placeholder scan that stands for input `index` of a keyed operator's template. */
/**
 * A projection over a LATERAL table function (HOP's windows) that keeps only some of the left
 * row's columns: the same projection over a LATERAL whose left input is first narrowed to the
 * columns the projection and the function read. The LATERAL copies its left row into every row it
 * makes (five windows per bid in Nexmark q5), so it then copies two columns instead of nine.
 * Undefined when nothing can be dropped. The dropped columns never reach state: the plan's state
 * tables and their ids do not change.
 */
function pruneUnderLateral(plan: PlanOf<'Project'>): PlanOf<'Project'> | undefined {
  const join = plan.input;
  if (join.kind !== 'NestedLoopJoin' || !join.lateral || join.joinType !== 'inner' || join.condition !== undefined) return undefined;
  const width = join.left.columns.length;
  if (join.columns.length < width) return undefined;
  const needed = new Set<number>();
  for (const expression of plan.expressions) columnsNeeded(expression, needed);
  const kept = new Set<number>([...needed].filter((index) => index < width));
  outerColumnsOf(join.right, 1, kept);
  if (kept.size >= width) return undefined;
  const columns = [...kept].sort((a, b) => a - b);
  const position: number[] = new Array(width).fill(-1);
  columns.forEach((index, at) => (position[index] = at));
  const left: Plan = { kind: 'Project', input: join.left, expressions: columns.map((index) => column(index, join.left.columns[index]!.type)), columns: columns.map((index) => join.left.columns[index]!) };
  const right = remapOuterInPlan(join.right, 1, (index) => position[index]!);
  const narrowed: Plan = { ...join, left, right, columns: [...left.columns, ...join.columns.slice(width)] };
  const map = join.columns.map((_, index) => (index < width ? position[index]! : columns.length + index - width));
  return { ...plan, input: narrowed, expressions: plan.expressions.map((expression) => remapColumns(expression, map)) };
}

/**
 * A temporal join's left side with its primary key: a table or materialized view scanned without
 * it gets its key columns back, after the others. A left side that retracts is told apart by its
 * rows (the join's memo), so two rows of a table that agree in the columns the view reads stay two
 * rows, each retracted with the right row it joined. Any other left side is returned as it is.
 */
function withPrimaryKey(left: Plan): Plan {
  if (left.kind !== 'Scan' || left.systemTime !== undefined || (left.relation.kind !== 'table' && left.relation.kind !== 'materialized_view')) return left;
  const relation = left.relation;
  const missing = relation.primaryKey.filter((column) => !left.projection.includes(column));
  if (missing.length === 0) return left;
  const columns = missing.map((column): OutputColumn => ({ name: relation.columns[column]!.name, type: relation.columns[column]!.type, tableOid: relation.id, columnNumber: column + 1 }));
  return { ...left, projection: [...left.projection, ...missing], columns: [...left.columns, ...columns] };
}

/** The scan under a temporal join's right side (a scan AS OF PROCTIME(), maybe under a filter), or undefined. */
function proctimeScan(plan: Plan): PlanOf<'Scan'> | undefined {
  if (plan.kind === 'Scan') return plan.systemTime?.kind === 'proctime' ? plan : undefined;
  return undefined;
}

function inputScan(index: number, columns: readonly OutputColumn[]): Plan {
  const relation: RelationDef = {
    id: streamInputRelationId(index),
    kind: 'table',
    schema: '',
    name: `stream_input_${index}`,
    columns: columns.map((column): ColumnDef => ({ name: column.name, type: column.type, nullable: true, hidden: false })),
    primaryKey: [],
    dependsOn: [],
  };
  return { kind: 'Scan', relation, projection: columns.map((_, i) => i), columns };
}

function allColumns(columns: readonly OutputColumn[]): Expression[] {
  return columns.map((column, index) => ({ kind: 'Column', index, type: column.type }));
}

class Incrementalizer {
  /** EMIT ON WINDOW CLOSE: the watermark state table of each watermarked relation scanned. */
  readonly watermarkTables = new Map<number, StateTableDeclaration>();

  constructor(private readonly options: IncrementalizeOptions) {}

  /** One state table per keyed input: key columns, the row, its multiplicity. */
  private inputState(keys: readonly Expression[], columns: readonly OutputColumn[], purpose: string): StateTableDeclaration {
    const columnTypes: DataType[] = [...keys.map((k) => k.type), ...columns.map((c) => c.type), int8];
    return {
      tableId: this.options.allocateStateTableId(),
      purpose,
      columnTypes,
      primaryKey: columnTypes.slice(0, -1).map((_, i) => i),
    };
  }

  private keyed(kind: KeyedOperatorKind, plan: Plan, inputs: readonly Plan[], keys: readonly (readonly Expression[])[], template: Plan): StreamPlan {
    return this.keyedOver(kind, plan, inputs, inputs.map((input) => this.convert(input)), keys, template);
  }

  /** `keyed` over inputs already converted (`streams`), whose state tables come after theirs. */
  private keyedOver(kind: KeyedOperatorKind, plan: Plan, inputs: readonly Plan[], streams: readonly StreamPlan[], keys: readonly (readonly Expression[])[], template: Plan): KeyedOperator {
    const stateTables = inputs.map((input, i) => this.inputState(keys[i]!, input.columns, inputs.length === 1 ? 'input rows by key' : `input ${i} rows by key`));
    return { kind, property: 'stateful', inputs: streams, keys, template, stateTables, columns: plan.columns };
  }

  private checkExpressions(plan: Plan): void {
    for (const expression of nodeExpressions(plan)) {
      if (hasSubquery(expression)) throw unsupported('a subquery that is not a join (scalar subquery, NOT IN, correlated aggregate)');
      // A volatile call over rows that never change (no relation below: SELECT random()) runs once,
      // at creation, and its values are stored; over a relation's changes a retraction would compute
      // another value than the insertion did.
      // A sequence's values belong to sessions and change it: never in a view, even over constant rows.
      if (callsSequenceFunction(expression)) throw unsupported('a sequence function (nextval(), currval(), lastval(), setval())');
      if (isVolatile(expression) && readsRelation(plan)) throw unsupported('a volatile function (random(), nextval()) over a table or source');
      // proctime() is evaluated by a projection, once per batch (executor/stream/project.ts).
      if (plan.kind !== 'Project') refuseProctime(expression);
    }
  }

  convert(plan: Plan): StreamPlan {
    if (plan.kind === 'Scan' && plan.filter !== undefined && (hasSubquery(plan.filter) || mentionsNow(plan.filter))) {
      // A pushed-down IN (subquery) comes back up as a filter, which may become a semi join (or a
      // dynamic / temporal filter).
      const { filter, ...scan } = plan;
      return this.convert({ kind: 'Filter', input: scan, predicate: filter, columns: plan.columns });
    }
    if (plan.kind === 'Filter') {
      const semiJoin = uncorrelatedInAsSemiJoin(plan);
      if (semiJoin !== undefined) return this.convert(semiJoin);
    }
    if (plan.kind === 'Filter') {
      const dynamic = findDynamicConjunct(plan.predicate);
      if (dynamic !== undefined) return this.dynamicFilter(plan, dynamic);
      const decorrelated = correlatedAggregateAsJoin(plan);
      if (decorrelated !== undefined) return this.convert(decorrelated);
    }
    if (plan.kind === 'Filter' || plan.kind === 'Project') {
      const joined = scalarSubqueriesAsJoins(plan);
      if (joined !== undefined) return this.convert(joined);
    }
    this.checkExpressions(plan);
    switch (plan.kind) {
      case 'Scan':
        return this.scan(plan);
      case 'Values':
      case 'TableFunction':
        return { kind: 'StreamValues', property: 'linear', plan, stateTables: [], columns: plan.columns };
      case 'Filter': {
        if (plan.input.kind === 'Window') {
          // The filter joins the over-window's template: a partition's recompute then outputs only
          // the rows that pass (row_number() <= N: N rows), not every row of the partition, whose
          // ranks all shift when a row enters above them.
          const window = plan.input;
          this.checkExpressions(window);
          const input = this.convert(window.input);
          const bound = (this.options.planVersion ?? STREAM_PLAN_VERSION) >= 7 && insertsOnly(input) ? rowNumberBound(plan, window) : undefined;
          if (bound !== undefined) return this.groupTopN(plan, window, input, bound);
          return this.keyedOver('StreamOverWindow', plan, [window.input], [input], [commonPartition(window)], { ...plan, input: { ...window, input: inputScan(0, window.input.columns) } });
        }
        return { kind: 'StreamFilter', property: 'linear', input: this.convert(plan.input), predicate: plan.predicate, stateTables: [], columns: plan.columns };
      }
      case 'Project': {
        const pruned = pruneUnderLateral(plan);
        if (pruned !== undefined) return this.convert(pruned);
        const input = this.convert(plan.input);
        // A retraction must carry the processing time of its insertion, which is not stored: only
        // over an append-only input (a source, never a table's updates and deletes).
        if (!insertsOnly(input)) for (const expression of plan.expressions) refuseProctime(expression);
        return { kind: 'StreamProject', property: 'linear', input, expressions: plan.expressions, stateTables: [], columns: plan.columns };
      }
      case 'HashJoin':
        return this.hashJoin(plan);
      case 'NestedLoopJoin':
        return this.nestedLoopJoin(plan);
      case 'Aggregate': {
        if (plan.groupingSets !== undefined || plan.groupingCalls !== undefined) {
          throw new SqlError(SqlState.featureNotSupported, 'GROUPING SETS, ROLLUP, CUBE and GROUPING() are not supported in materialized views');
        }
        // From plan version 10 a group key that is an expression is computed by a projection below
        // the aggregate (keysAsColumns), so an exchange can hash it by column (parallel.ts); the
        // keyed recompute keeps its input rows, so it keeps the plain input.
        const keyed = (this.options.planVersion ?? STREAM_PLAN_VERSION) >= 10 ? keysAsColumns(plan) : plan;
        const template: PlanOf<'Aggregate'> = { ...keyed, input: inputScan(0, keyed.input.columns) };
        const aggregate = retractableAggregate(keyed, () => this.convert(keyed.input), () => this.options.allocateStateTableId(), template);
        if (aggregate === undefined) return this.keyed('StreamRecomputeAggregate', plan, [plan.input], [plan.groupKeys], { ...plan, input: inputScan(0, plan.input.columns) });
        if (aggregate.kind !== 'StreamHashAggregate') return aggregate;
        const clean = this.cleaning([keyed.groupKeys], [keyed.input], aggregate.inputs);
        return { ...aggregate, stateTables: this.cleanedFirst(aggregate.stateTables, clean), ...optional('clean', clean) };
      }
      case 'Window': {
        const input = this.convert(plan.input);
        const template: Plan = { ...plan, input: inputScan(0, plan.input.columns) };
        if ((this.options.planVersion ?? STREAM_PLAN_VERSION) < 8 || !mostlyInserts(input) || !forwardWindow(plan)) return this.keyedOver('StreamOverWindow', plan, [plan.input], [input], [commonPartition(plan)], template);
        const partition = plan.calls[0]!.partitionBy;
        const operator = this.keyedOver('StreamAppendOnlyOverWindow', plan, [plan.input], [input], [partition], template);
        const summaryTypes: DataType[] = [...partition.map((key) => key.type), ...plan.input.columns.map((c) => c.type), int8, int8, ...plan.calls.map((call) => call.type)];
        const summary: StateTableDeclaration = {
          tableId: this.options.allocateStateTableId(),
          purpose: 'last row and running values by partition',
          columnTypes: summaryTypes,
          primaryKey: partition.map((_, i) => i),
        };
        return { ...operator, stateTables: [...operator.stateTables, summary] };
      }
      case 'Sort':
        // Rows of a view have no order; ORDER BY matters only under LIMIT or DISTINCT ON.
        return this.convert(plan.input);
      case 'Limit':
        return this.topN(plan);
      case 'Distinct':
        return this.distinct(plan);
      case 'SetOperation':
        if (plan.operation === 'union' && plan.all) {
          return { kind: 'StreamUnion', property: 'linear', inputs: [this.convert(plan.left), this.convert(plan.right)], stateTables: [], columns: plan.columns };
        }
        return this.keyed('StreamSetOperation', plan, [plan.left, plan.right], [allColumns(plan.left.columns), allColumns(plan.right.columns)], {
          ...plan,
          left: inputScan(0, plan.left.columns),
          right: inputScan(1, plan.right.columns),
        });
      case 'RecursiveUnion':
      case 'WorkTable':
        throw unsupported('WITH RECURSIVE');
      case 'Join':
        throw new SqlError(SqlState.internalError, 'a logical Join reached the incrementalization pass');
      case 'Insert':
      case 'Update':
      case 'Delete':
        throw unsupported('a data-modifying statement');
    }
  }

  /** `key op (scalar subquery)` or `key op now() ± c`: the other conjuncts filter below it. */
  private dynamicFilter(plan: PlanOf<'Filter'>, found: DynamicConjunct): StreamPlan {
    const rest = found.rest;
    const below: Plan =
      rest.length === 0 ? plan.input : { kind: 'Filter', input: plan.input, predicate: rest.length === 1 ? rest[0]! : { kind: 'And', args: rest, type: plan.predicate.type }, columns: plan.input.columns };
    const inputs = [this.convert(below), ...(found.subquery === undefined ? [] : [this.convert(found.subquery.plan)])];
    const rowTypes = below.columns.map((column) => column.type);
    const keyType = found.key.type;
    const rows: StateTableDeclaration = {
      tableId: this.options.allocateStateTableId(),
      purpose: 'input rows by compared value',
      columnTypes: [keyType, ...rowTypes, int8],
      primaryKey: [0, ...rowTypes.map((_, i) => i + 1)],
    };
    const bound: StateTableDeclaration =
      found.subquery === undefined
        ? { tableId: this.options.allocateStateTableId(), purpose: 'temporal bound', columnTypes: [scalar('int4'), keyType], primaryKey: [0] }
        : { tableId: this.options.allocateStateTableId(), purpose: 'subquery rows', columnTypes: [keyType, int8], primaryKey: [0] };
    const predicate = found.now !== undefined ? found.conjunct : replaceExpressions(found.conjunct, new Map([[found.bound, { kind: 'Column', index: rowTypes.length, type: keyType }]]));
    return {
      kind: 'StreamDynamicFilter',
      property: 'stateful',
      inputs,
      key: found.key,
      operator: found.operator,
      ...(found.now === undefined ? {} : { now: found.now }),
      predicate,
      stateTables: [rows, bound],
      columns: plan.columns,
    };
  }

  private scan(plan: PlanOf<'Scan'>): StreamPlan {
    const relation = plan.relation;
    if (plan.systemTime?.kind === 'proctime') {
      const position = plan.systemTime.position;
      throw new SqlError(SqlState.featureNotSupported, 'FOR SYSTEM_TIME AS OF PROCTIME() is supported only on the right side of a join whose ON clause equates the primary key of the table (a temporal join)', position === undefined ? {} : { position });
    }
    if (plan.systemTime !== undefined) throw unsupported('FOR SYSTEM_TIME');
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source') {
      throw unsupported(`reading ${relation.kind === 'system' ? 'a system relation' : `a ${relation.kind.replace('_', ' ')}`} ("${relation.name}")`);
    }
    const watermarkColumn = relation.watermark === undefined ? -1 : plan.projection.indexOf(relation.watermark.column);
    if (this.options.emitOnWindowClose === true && watermarkColumn >= 0) return this.watermarkFilter(plan, watermarkColumn);
    return {
      kind: 'StreamTableScan',
      property: 'linear',
      relation,
      projection: plan.projection,
      ...(plan.filter === undefined ? {} : { filter: plan.filter }),
      stateTables: [],
      columns: plan.columns,
    };
  }

  /** The scan's rows through the relation's watermark (every row moves it), then its pushed filter. */
  private watermarkFilter(plan: PlanOf<'Scan'>, column: number): StreamPlan {
    const scan: StreamPlan = { kind: 'StreamTableScan', property: 'linear', relation: plan.relation, projection: plan.projection, stateTables: [], columns: plan.columns };
    const state: StateTableDeclaration = {
      tableId: this.options.allocateStateTableId(),
      purpose: 'watermark',
      columnTypes: [scalar('int4'), plan.columns[column]!.type],
      primaryKey: [0],
    };
    if (!this.watermarkTables.has(plan.relation.id)) this.watermarkTables.set(plan.relation.id, state);
    const filtered: StreamPlan = { kind: 'StreamWatermarkFilter', property: 'stateful', inputs: [scan], column, delay: plan.relation.watermark!.delay, stateTables: [state], columns: plan.columns };
    if (plan.filter === undefined) return filtered;
    return { kind: 'StreamFilter', property: 'linear', input: filtered, predicate: plan.filter, stateTables: [], columns: plan.columns };
  }

  /**
   * Under EMIT ON WINDOW CLOSE: the first key (`keys[i]` over `inputs[i]`, one per input) that follows
   * a watermark on every input, with the watermark filters' tables it is derived from (watermark.ts):
   * the operator deletes the state of keys that closed. None over a dynamic filter (a temporal
   * filter retracts rows of closed windows) or a watermark filter not planned.
   */
  private cleaning(keys: readonly (readonly Expression[])[], inputs: readonly Plan[], streams: readonly StreamPlan[]): StateCleaning | undefined {
    if (this.options.emitOnWindowClose !== true || streams.some(hasDynamicFilter)) return undefined;
    for (let key = 0; key < keys[0]!.length; key++) {
      const derived = inputs.map((input, i) => deriveExpression(keys[i]![key]!, input));
      if (derived.some((one) => one === undefined)) continue;
      const bounds = derived.flatMap((one) => [{ scan: one!.scan, derive: one!.derive }, ...one!.also]).map((bound) => ({ watermarkTable: this.watermarkTables.get(bound.scan.relation.id), derive: bound.derive }));
      if (bounds.some((bound) => bound.watermarkTable === undefined)) continue;
      return { key, bounds: bounds as StateCleaning['bounds'] };
    }
    return undefined;
  }

  /**
   * The state tables of an operator cleaned by watermark keyed by the cleaned key column first (from
   * plan version 5): a closed window's rows are then one key range, deleted by one range delete
   * (state-cleaning.ts). The rows keep their column order; only the key order moves.
   */
  private cleanedFirst(tables: readonly StateTableDeclaration[], clean: StateCleaning | undefined): StateTableDeclaration[] {
    if (clean === undefined || clean.key === 0 || (this.options.planVersion ?? STREAM_PLAN_VERSION) < 5) return [...tables];
    return tables.map((table) => {
      const key = table.primaryKey;
      return { ...table, primaryKey: [key[clean.key]!, ...key.slice(0, clean.key), ...key.slice(clean.key + 1)] };
    });
  }

  /**
   * An equi-join: StreamHashJoin, one state table per side (`key ++ row ++ count`, `++ degree` on a
   * side whose output depends on its rows' matches; from plan version 4 a side over an append-only
   * source is `key ++ row ++ row id ++ count` keyed by (key, row id)). Keyless joins and views of
   * plan version 1 recompute key groups (StreamRecomputeJoin).
   */
  private hashJoin(plan: PlanOf<'HashJoin'>): StreamPlan {
    if (proctimeScan(plan.right) !== undefined) return this.temporalJoin(plan);
    const template: Plan = { ...plan, left: inputScan(0, plan.left.columns), right: inputScan(1, plan.right.columns) };
    const keys = [plan.leftKeys, plan.rightKeys];
    if (plan.leftKeys.length === 0 || (this.options.planVersion ?? STREAM_PLAN_VERSION) < 2) return this.keyed('StreamRecomputeJoin', plan, [plan.left, plan.right], keys, template);
    const type = plan.joinType;
    const degrees = [type === 'left' || type === 'full' || type === 'semi' || type === 'anti', type === 'right' || type === 'full'];
    const inputs = [this.convert(plan.left), this.convert(plan.right)];
    const byRowId = (this.options.planVersion ?? STREAM_PLAN_VERSION) >= 4;
    // Plan version 9: a side over a watermark filter (an EMIT ON WINDOW CLOSE view's) is stored by row id too.
    const throughWatermark = (this.options.planVersion ?? STREAM_PLAN_VERSION) >= 9;
    const rowIds = inputs.map((input) => byRowId && carriesRowIds(input, throughWatermark));
    const stateTables = [plan.left, plan.right].map((side, i): StateTableDeclaration => {
      const keyWidth = keys[i]!.length;
      const width = side.columns.length;
      const columnTypes: DataType[] = [...keys[i]!.map((k) => k.type), ...side.columns.map((c) => c.type), ...(rowIds[i] ? [int8] : []), int8, ...(degrees[i] ? [int8] : [])];
      return {
        tableId: this.options.allocateStateTableId(),
        purpose: `${i === 0 ? 'left' : 'right'} rows by key${rowIds[i] ? ' and source row id' : ''}${degrees[i] ? ' with degree' : ''}`,
        columnTypes,
        // By row id: the key columns, then the id after the row.
        primaryKey: rowIds[i] ? [...keys[i]!.map((_, c) => c), keyWidth + width] : columnTypes.slice(0, keyWidth + width).map((_, c) => c),
      };
    });
    const clean = this.cleaning(keys, [plan.left, plan.right], inputs);
    return {
      kind: 'StreamHashJoin',
      property: 'stateful',
      inputs,
      joinType: type,
      keys,
      nullSafe: plan.nullSafe ?? plan.leftKeys.map(() => false),
      ...(plan.residual === undefined ? {} : { residual: plan.residual }),
      degrees,
      ...(byRowId ? { rowIds } : {}),
      template,
      ...optional('clean', clean),
      stateTables: this.cleanedFirst(stateTables, clean),
      columns: plan.columns,
    };
  }

  /**
   * `JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON ...` (RisingWave's temporal join): the right side a
   * table or materialized view whose primary key the ON equalities cover, looked up per left change
   * (stream-plan.ts `TemporalJoinOperator`). Its relation's changes reach the operator only to keep
   * its copy of a small table current (input 1, the whole rows); they emit nothing.
   */
  private temporalJoin(plan: PlanOf<'HashJoin'>): StreamPlan {
    const scan = proctimeScan(plan.right)!;
    const position = scan.systemTime?.kind === 'proctime' ? scan.systemTime.position : undefined;
    const relation = scan.relation;
    const fail = (message: string, state: SqlStateCode = SqlState.featureNotSupported): SqlError => new SqlError(state, message, position === undefined ? {} : { position });
    if (plan.joinType !== 'inner' && plan.joinType !== 'left') {
      throw fail(`a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) must be an INNER or LEFT OUTER join, not ${plan.joinType.toUpperCase()}`);
    }
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view') {
      throw fail(`a temporal join needs a table or materialized view on its right side, and "${relation.name}" is ${relation.kind === 'source' ? 'a source' : `a ${relation.kind.replace('_', ' ')}`}`, SqlState.wrongObjectType);
    }
    const hiddenKey = relation.primaryKey.length === 0 || relation.primaryKey.some((column) => relation.columns[column]?.hidden === true);
    // Each primary-key column (else each column of a secondary index) must equal a left key
    // expression (a plain column of the right scan of the same type).
    const cover = (columns: readonly number[]): { lookupKeys: Expression[]; used: Set<number> } | undefined => {
      const lookupKeys: Expression[] = [];
      const used = new Set<number>();
      for (const keyColumn of columns) {
        const at = plan.rightKeys.findIndex((key) => key.kind === 'Column' && scan.projection[key.index] === keyColumn && key.type.name === relation.columns[keyColumn]!.type.name);
        if (at < 0) return undefined;
        used.add(at);
        lookupKeys.push(plan.leftKeys[at]!);
      }
      return { lookupKeys, used };
    };
    let index: RelationDef | undefined;
    let covered = hiddenKey ? undefined : cover(relation.primaryKey);
    if (covered === undefined) {
      for (const candidate of this.options.indexesOf?.(relation.id) ?? []) {
        covered = candidate.indexOn === undefined ? undefined : cover(candidate.indexOn.columns);
        if (covered !== undefined) {
          index = candidate;
          break;
        }
      }
    }
    if (covered === undefined) {
      const which = hiddenKey ? `"${relation.name}" has no primary key, and the ON clause covers none of its indexes` : `the ON clause covers neither the primary key (${relation.primaryKey.map((column) => relation.columns[column]!.name).join(', ')}) of "${relation.name}" nor any of its indexes`;
      throw fail(`a temporal join requires the ON clause's equalities to cover the primary key or an index of its lookup table: ${which}`);
    }
    const { lookupKeys, used } = covered;
    // ON equalities beyond the key: compared on the looked-up row.
    const others = plan.leftKeys.map((_, at) => at).filter((at) => !used.has(at));
    const widened = withPrimaryKey(plan.left);
    const left = this.convert(widened);
    const added = widened.columns.length - plan.left.columns.length;
    const whole: StreamPlan = {
      kind: 'StreamTableScan',
      property: 'linear',
      relation,
      projection: relation.columns.map((_, i) => i),
      stateTables: [],
      columns: relation.columns.map((column, i) => ({ name: column.name, type: column.type, tableOid: relation.id, columnNumber: i + 1 })),
    };
    const stateTables: StateTableDeclaration[] = [];
    if (!carriesRowIds(left)) {
      const columnTypes: DataType[] = [...widened.columns.map((c) => c.type), ...scan.columns.map((c) => c.type), int8];
      stateTables.push({ tableId: this.options.allocateStateTableId(), purpose: 'left rows with the right row they joined', columnTypes, primaryKey: columnTypes.slice(0, -1).map((_, i) => i) });
    }
    const leftWidth = plan.left.columns.length;
    const shift = plan.columns.map((_, i) => (i < leftWidth ? i : i + added));
    const join: StreamPlan = {
      kind: 'StreamTemporalJoin',
      property: 'stateful',
      inputs: [left, whole],
      joinType: plan.joinType,
      relation,
      projection: scan.projection,
      ...(scan.filter === undefined ? {} : { filter: scan.filter }),
      lookupKeys,
      ...(index === undefined ? {} : { index }),
      ...(others.length === 0 ? {} : { otherKeys: [others.map((at) => plan.leftKeys[at]!), others.map((at) => plan.rightKeys[at]!)], otherNullSafe: others.map((at) => plan.nullSafe?.[at] ?? false) }),
      ...(plan.residual === undefined ? {} : { residual: added === 0 ? plan.residual : remapColumns(plan.residual, shift) }),
      stateTables,
      columns: [...widened.columns, ...plan.columns.slice(leftWidth)],
    };
    if (added === 0) return join;
    // The key columns the left scan got back stay below: the join's own columns, as planned.
    return { kind: 'StreamProject', property: 'linear', input: join, expressions: plan.columns.map((column, i) => ({ kind: 'Column', index: shift[i]!, type: column.type })), stateTables: [], columns: plan.columns };
  }

  private nestedLoopJoin(plan: PlanOf<'NestedLoopJoin'>): StreamPlan {
    if (plan.lateral) {
      if (readsRelation(plan.right)) throw unsupported('a LATERAL subquery that reads a table');
      return { kind: 'StreamLateral', property: 'linear', input: this.convert(plan.left), template: { ...plan, left: inputScan(0, plan.left.columns) }, stateTables: [], columns: plan.columns };
    }
    return this.keyed('StreamNestedLoopJoin', plan, [plan.left, plan.right], [[], []], {
      ...plan,
      left: inputScan(0, plan.left.columns),
      right: inputScan(1, plan.right.columns),
    });
  }

  /**
   * `row_number() <= N` over an append-only input (`bound`, from rowNumberBound): the window and
   * that conjunct as StreamAppendOnlyGroupTopN, keeping N rows per partition; the filter's other
   * conjuncts filter its output.
   */
  private groupTopN(plan: PlanOf<'Filter'>, window: PlanOf<'Window'>, input: StreamPlan, bound: RowNumberBound): StreamPlan {
    const call = window.calls[0]!;
    const template: Plan = { ...plan, predicate: bound.conjunct, input: { ...window, input: inputScan(0, window.input.columns) } };
    const operator = this.keyedOver('StreamAppendOnlyGroupTopN', window, [window.input], [input], [call.partitionBy], template);
    // Top-1 by a partition: one state row per partition, keyed by the partition alone (a point
    // read, not a range scan, per changed partition).
    const [table] = operator.stateTables;
    const byPartition = bound.limit === 1 && call.partitionBy.length > 0;
    const stateTables = byPartition ? [{ ...table!, purpose: 'top row by partition', primaryKey: call.partitionBy.map((_, i) => i) }] : operator.stateTables;
    const topN: KeyedOperator = { ...operator, stateTables, groupTopN: { orderBy: call.orderBy, limit: bound.limit } };
    if (bound.rest.length === 0) return topN;
    const predicate: Expression = bound.rest.length === 1 ? bound.rest[0]! : { kind: 'And', args: bound.rest, type: plan.predicate.type };
    return { kind: 'StreamFilter', property: 'linear', input: topN, predicate, stateTables: [], columns: plan.columns };
  }

  private topN(plan: PlanOf<'Limit'>): StreamPlan {
    const below = plan.input;
    if (below.kind === 'Sort') {
      const template: Plan = { ...plan, input: { ...below, input: inputScan(0, below.input.columns) } };
      return this.keyed('StreamTopN', plan, [below.input], [[]], template);
    }
    return this.keyed('StreamTopN', plan, [below], [[]], { ...plan, input: inputScan(0, below.columns) });
  }

  private distinct(plan: PlanOf<'Distinct'>): StreamPlan {
    if (plan.on === undefined) {
      return this.keyed('StreamDistinct', plan, [plan.input], [allColumns(plan.input.columns)], { ...plan, input: inputScan(0, plan.input.columns) });
    }
    const below = plan.input;
    if (below.kind === 'Sort') {
      const template: Plan = { ...plan, input: { ...below, input: inputScan(0, below.input.columns) } };
      return this.keyed('StreamDistinct', plan, [below.input], [plan.on], template);
    }
    return this.keyed('StreamDistinct', plan, [below], [plan.on], { ...plan, input: inputScan(0, below.columns) });
  }
}

/**
 * `x IN (uncorrelated subquery)` and uncorrelated `EXISTS (...)` conjuncts of a filter become semi
 * joins, so the view follows changes of the subquery's tables too (the batch executor evaluates
 * them once per statement instead). Keys of different types are left alone (unsupported).
 */
function uncorrelatedInAsSemiJoin(plan: PlanOf<'Filter'>): Plan | undefined {
  const conjuncts = plan.predicate.kind === 'And' ? plan.predicate.args : [plan.predicate];
  const index = conjuncts.findIndex(
    (c) =>
      c.kind === 'Subquery' &&
      !c.correlated &&
      ((c.mode === 'any' && (c.operator === '=' || c.compare?.name === '=') && c.test !== undefined && c.test.type.name === c.plan.columns[0]?.type.name && !hasSubquery(c.test)) || c.mode === 'exists'),
  );
  if (index < 0) return undefined;
  const subquery = conjuncts[index] as Extract<Expression, { kind: 'Subquery' }>;
  const rest = conjuncts.filter((_, i) => i !== index);
  const left: Plan =
    rest.length === 0
      ? plan.input
      : { kind: 'Filter', input: plan.input, predicate: rest.length === 1 ? rest[0]! : { kind: 'And', args: rest, type: plan.predicate.type }, columns: plan.columns };
  const keyed = subquery.mode === 'any';
  return {
    kind: 'HashJoin',
    joinType: 'semi',
    left,
    right: subquery.plan,
    leftKeys: keyed ? [subquery.test!] : [],
    rightKeys: keyed ? [{ kind: 'Column', index: 0, type: subquery.plan.columns[0]!.type }] : [],
    columns: plan.columns,
  };
}

type SubqueryExpression = Extract<Expression, { kind: 'Subquery' }>;

function uncorrelatedScalarSubqueries(expression: Expression, into: SubqueryExpression[]): void {
  if (expression.kind === 'Subquery' && expression.mode === 'scalar' && !expression.correlated) {
    into.push(expression);
    return;
  }
  for (const child of children(expression)) uncorrelatedScalarSubqueries(child, into);
}

function replaceExpressions(expression: Expression, replacements: ReadonlyMap<Expression, Expression>): Expression {
  const replacement = replacements.get(expression);
  if (replacement !== undefined) return replacement;
  return mapChildren(expression, (child) => replaceExpressions(child, replacements));
}

/**
 * Uncorrelated scalar subqueries in a filter or projection (`v > (SELECT avg(v) FROM t)`): the
 * subquery becomes the right side of a LEFT join without condition (no row: NULL, as the scalar
 * subquery), and the expression reads its column. The join has no key, so a change of either side
 * recomputes the whole join (a dynamic filter would do better).
 */
function scalarSubqueriesAsJoins(plan: PlanOf<'Filter'> | PlanOf<'Project'>): Plan | undefined {
  const expressions = plan.kind === 'Filter' ? [plan.predicate] : plan.expressions;
  const found: SubqueryExpression[] = [];
  for (const expression of expressions) uncorrelatedScalarSubqueries(expression, found);
  if (found.length === 0) return undefined;
  const width = plan.input.columns.length;
  let input: Plan = plan.input;
  const replacements = new Map<Expression, Expression>();
  found.forEach((subquery, index) => {
    const column = subquery.plan.columns[0]!;
    input = { kind: 'NestedLoopJoin', joinType: 'left', left: input, right: subquery.plan, lateral: false, columns: [...input.columns, column] };
    replacements.set(subquery, { kind: 'Column', index: width + index, type: subquery.type });
  });
  if (plan.kind === 'Project') {
    return { kind: 'Project', input, expressions: plan.expressions.map((e) => replaceExpressions(e, replacements)), columns: plan.columns };
  }
  const filtered: Plan = { kind: 'Filter', input, predicate: replaceExpressions(plan.predicate, replacements), columns: input.columns };
  return { kind: 'Project', input: filtered, expressions: allColumns(plan.columns), columns: plan.columns };
}

interface RowNumberBound {
  /** The number of rows of each partition that pass. */
  readonly limit: number;
  /** The conjunct bounding row_number(). */
  readonly conjunct: Expression;
  /** The filter's other conjuncts. */
  readonly rest: readonly Expression[];
}

/**
 * The bound a filter right above a window puts on its row_number(), when the window computes
 * row_number() alone and a conjunct of the filter is `rn <= N`, `rn < N` or `rn = N` with N an
 * integer constant (`N >= rn`, `N > rn` too); `rn = N` bounds by N only for N = 1. Undefined when
 * the filter is anything else.
 */
function rowNumberBound(filter: PlanOf<'Filter'>, window: PlanOf<'Window'>): RowNumberBound | undefined {
  if (window.calls.length !== 1 || window.calls[0]!.name !== 'row_number') return undefined;
  const rn = window.input.columns.length;
  const conjuncts = filter.predicate.kind === 'And' ? filter.predicate.args : [filter.predicate];
  for (let i = 0; i < conjuncts.length; i++) {
    const limit = rowNumberLimit(conjuncts[i]!, rn);
    if (limit !== undefined) return { limit, conjunct: conjuncts[i]!, rest: conjuncts.filter((_, j) => j !== i) };
  }
  return undefined;
}

const FLIPPED: Readonly<Record<string, string>> = { '<=': '>=', '<': '>', '=': '=', '>=': '<=', '>': '<' };

/** N of a conjunct `column rn <= N` (`< N`: N - 1; `= 1`: 1) or its mirror; else undefined. */
function rowNumberLimit(conjunct: Expression, rn: number): number | undefined {
  if (conjunct.kind !== 'Call' || conjunct.args.length !== 2 || conjunct.operator === undefined) return undefined;
  const [a, b] = conjunct.args as [Expression, Expression];
  const isRn = (e: Expression) => e.kind === 'Column' && e.index === rn;
  const operator = isRn(a) ? conjunct.operator : isRn(b) ? FLIPPED[conjunct.operator] : undefined;
  const value = integerConstant(isRn(a) ? b : a);
  if (operator === undefined || value === undefined) return undefined;
  switch (operator) {
    case '<=':
      return Math.max(value, 0);
    case '<':
      return Math.max(value - 1, 0);
    case '=':
      return value === 1 ? 1 : undefined;
    default:
      return undefined;
  }
}

/** The value of an integer literal, possibly cast; undefined for anything else. */
function integerConstant(expression: Expression): number | undefined {
  const inner = expression.kind === 'Cast' ? expression.input : expression;
  if (inner.kind !== 'Literal') return undefined;
  const value = typeof inner.value === 'bigint' ? Number(inner.value) : inner.value;
  return typeof value === 'number' && Number.isSafeInteger(value) && value <= 1_000_000 ? value : undefined;
}

/**
 * True when `plan` outputs insertions but for rare retractions: an append-only input (insertsOnly),
 * or such an input through StreamAppendOnlyOverWindow (which retracts only when a row arrives
 * before its partition's last), filters, projections and shared subtrees.
 */
function mostlyInserts(plan: StreamPlan): boolean {
  if (insertsOnly(plan)) return true;
  switch (plan.kind) {
    case 'StreamFilter':
    case 'StreamProject':
      return mostlyInserts(plan.input);
    case 'StreamShared':
      return mostlyInserts(plan.source);
    case 'StreamAppendOnlyOverWindow':
      return mostlyInserts(plan.inputs[0]!);
    default:
      return false;
  }
}

const SUMMED_TYPES = new Set(['int2', 'int4', 'int8', 'float4', 'float8', 'numeric']);

/**
 * True when every call of the window can compute a row added after its partition's last rows from
 * those rows' summary (executor/stream/over-window.ts): the calls share a non-empty PARTITION BY and
 * a non-empty ORDER BY, and each is row_number(), rank(), dense_rank(), lag(x [, 1 [, default]]),
 * or count / sum / min / max without FILTER over a frame from UNBOUNDED PRECEDING to CURRENT ROW.
 */
function forwardWindow(plan: PlanOf<'Window'>): boolean {
  const [first] = plan.calls;
  if (first === undefined || first.partitionBy.length === 0 || first.orderBy.length === 0) return false;
  const partition = JSON.stringify(first.partitionBy, withoutPositions);
  const order = JSON.stringify(first.orderBy, withoutPositions);
  return plan.calls.every((call) => {
    if (JSON.stringify(call.partitionBy, withoutPositions) !== partition || JSON.stringify(call.orderBy, withoutPositions) !== order || call.filter !== undefined) return false;
    switch (call.name) {
      case 'row_number':
      case 'rank':
      case 'dense_rank':
        return true;
      case 'lag':
        return call.args.length >= 1 && (call.args.length === 1 || integerConstant(call.args[1]!) === 1);
      case 'count':
      case 'sum':
      case 'min':
      case 'max':
        if (call.frame.start.kind !== 'unboundedPreceding' || call.frame.end.kind !== 'currentRow') return false;
        return call.name !== 'sum' || SUMMED_TYPES.has(call.args[0]?.type.name ?? '');
      default:
        return false;
    }
  });
}

/** The PARTITION BY shared by every window call, else none (one group). */
function commonPartition(plan: PlanOf<'Window'>): readonly Expression[] {
  const first = plan.calls[0]?.partitionBy ?? [];
  const text = JSON.stringify(first, bigintSafe);
  return plan.calls.every((call) => JSON.stringify(call.partitionBy, bigintSafe) === text) ? first : [];
}

/** bigintSafe, and without the source positions, which differ between equal expressions. */
function withoutPositions(key: string, value: unknown): unknown {
  return key === 'position' ? undefined : bigintSafe(key, value);
}

function bigintSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}

/** Throws 0A000 at a proctime() call outside a projection over an append-only input. */
function refuseProctime(expression: Expression): void {
  const call = proctimeCall(expression);
  if (call === undefined) return;
  const position = call.position;
  throw new SqlError(
    SqlState.featureNotSupported,
    'proctime() is supported in a materialized view only in the select list over an append-only source (a table\'s updates and deletes would need the processing time of each row stored)',
    position === undefined ? {} : { position },
  );
}

function readsRelation(plan: Plan): boolean {
  if (plan.kind === 'Scan') return true;
  switch (plan.kind) {
    case 'Values':
    case 'TableFunction':
    case 'WorkTable':
      return false;
    case 'HashJoin':
    case 'NestedLoopJoin':
    case 'Join':
    case 'SetOperation':
      return readsRelation(plan.left) || readsRelation(plan.right);
    case 'RecursiveUnion':
      return readsRelation(plan.base) || readsRelation(plan.recursive);
    default:
      return readsRelation(plan.input);
  }
}

/** The view's relation columns: the query's columns, then the hidden duplicate number. */
export function materializedViewColumns(columns: readonly { readonly name: string; readonly type: DataType }[]): ColumnDef[] {
  return [
    ...columns.map((column): ColumnDef => ({ name: column.name, type: column.type, nullable: true, hidden: false })),
    { name: DUPLICATE_COLUMN, type: int8, nullable: false, hidden: true },
  ];
}

function hasDynamicFilter(plan: StreamPlan): boolean {
  return plan.kind === 'StreamDynamicFilter' || streamInputs(plan).some(hasDynamicFilter);
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** EMIT ON WINDOW CLOSE over the view's streaming plan: 0A000 without a column that follows a watermark. */
function emitOnWindowClose(plan: Plan, input: StreamPlan, watermarkTables: ReadonlyMap<number, StateTableDeclaration>, options: IncrementalizeOptions): StreamPlan {
  const found = windowColumn(plan);
  const watermarkTable = found === undefined ? undefined : watermarkTables.get(found.derived.scan.relation.id);
  const also = (found?.derived.also ?? []).map((bound) => ({ watermarkTable: watermarkTables.get(bound.scan.relation.id), derive: bound.derive }));
  if (found === undefined || watermarkTable === undefined || also.some((bound) => bound.watermarkTable === undefined)) {
    throw new SqlError(SqlState.featureNotSupported, 'EMIT ON WINDOW CLOSE needs an output column that follows a watermark', {
      hint: "Read a table or source with WATERMARK FOR col AS col - INTERVAL '...' and output col or TUMBLE's window_start / window_end over it (in GROUP BY).",
    });
  }
  const rowTypes = plan.columns.map((column) => column.type);
  const buffer: StateTableDeclaration = {
    tableId: options.allocateStateTableId(),
    purpose: 'rows of open windows',
    columnTypes: [rowTypes[found.column]!, ...rowTypes, int8],
    primaryKey: [0, ...rowTypes.map((_, i) => i + 1)],
  };
  const emitted: StateTableDeclaration = { tableId: options.allocateStateTableId(), purpose: 'emitted up to', columnTypes: [scalar('int4'), rowTypes[found.column]!], primaryKey: [0] };
  return {
    kind: 'StreamEmitOnWindowClose',
    property: 'stateful',
    inputs: [input],
    column: found.column,
    derive: found.derived.derive,
    watermarkTable,
    ...(also.length === 0 ? {} : { also: also as { watermarkTable: StateTableDeclaration; derive: Expression }[] }),
    stateTables: [buffer, emitted],
    columns: plan.columns,
  };
}

/**
 * The key the view's relation table is stored by, as positions in its columns (the query's, then
 * the hidden one), or undefined for `row ++ duplicate number` with row counts. From plan version 3:
 * a view over an append-only source through filters and projections by its rows' source row ids
 * (the hidden column); otherwise by its query's unique key (unique-key.ts), the hidden column (0)
 * when that key is empty (one row at most); from plan version 8, a view whose input only inserts
 * but has neither by a row number of its own (the hidden column, `numbersRows`). A view without
 * visible columns is stored by the key only when blind (the two layouts of its table would look
 * alike). A restart takes the stored key.
 */
function viewStorageKey(input: StreamPlan, width: number, options: IncrementalizeOptions): readonly number[] | undefined {
  if ((options.planVersion ?? STREAM_PLAN_VERSION) < 3) return undefined;
  const stored = options.storedKey;
  if (stored !== undefined && width > 0) return stored.length === width + 1 && stored.every((column, index) => column === index) ? undefined : stored;
  if (carriesRowIds(input)) return [width];
  if (width === 0) return undefined;
  const key = uniqueKey(input);
  if (key === undefined) return numbersRows(input, width, options) ? [width] : undefined;
  return key.length === 0 ? [width] : key;
}

/**
 * Plan version 8: the view numbers its rows itself when its input only inserts (insertsOnly: an
 * inner join of append-only sources, UNION ALL, LATERAL over one) yet neither carries source row
 * ids nor has a unique key. Each insert is then one write under a fresh number, with no read of a
 * row count (the counted layout reads one per distinct row). A number rather than the pair of the
 * join sides' row ids: the view's table keeps its one hidden int8 column (batch reads, AS OF,
 * indexes and views on the view see the layout of a blind view), and it serves inputs whose rows
 * carry no ids at all (UNION ALL, LATERAL, a join one of whose sides is itself a join).
 */
function numbersRows(input: StreamPlan, width: number, options: IncrementalizeOptions): boolean {
  return (options.planVersion ?? STREAM_PLAN_VERSION) >= 8 && width > 0 && !carriesRowIds(input) && uniqueKey(input) === undefined && insertsOnly(input);
}

/** The incrementalization pass: the physical plan of a view's query to its streaming plan. */
export function incrementalize(plan: Plan, options: IncrementalizeOptions): StreamPlan {
  const incrementalizer = new Incrementalizer(options);
  let input = incrementalizer.convert(plan);
  if (options.emitOnWindowClose === true) input = emitOnWindowClose(plan, input, incrementalizer.watermarkTables, options);
  const rowTypes = plan.columns.map((column) => column.type);
  const key = viewStorageKey(input, rowTypes.length, options);
  const viewTable: StateTableDeclaration = {
    tableId: options.relationId,
    purpose: 'view rows',
    columnTypes: [...rowTypes, int8],
    primaryKey: key ?? [...rowTypes.keys(), rowTypes.length],
  };
  const materialize = { kind: 'StreamMaterialize', property: 'stateful', input, relationId: options.relationId, name: options.name, columns: plan.columns } as const;
  // A view stored by its key keeps no row counts: each key holds one row.
  if (key !== undefined && key.length === 1 && key[0] === rowTypes.length && numbersRows(input, rowTypes.length, options)) {
    const next: StateTableDeclaration = { tableId: options.allocateStateTableId(), purpose: 'next row number', columnTypes: [scalar('int4'), int8], primaryKey: [0] };
    return { ...materialize, key, numbered: true, stateTables: [viewTable, next] };
  }
  if (key !== undefined) return { ...materialize, key, stateTables: [viewTable] };
  const counts: StateTableDeclaration = {
    tableId: options.allocateStateTableId(),
    purpose: 'row counts',
    columnTypes: [...rowTypes, int8],
    primaryKey: [...rowTypes.keys()],
  };
  return { ...materialize, stateTables: [viewTable, counts] };
}
