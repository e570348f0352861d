// Plan nodes: readonly tagged unions shared by the logical, optimized and physical stages (see
// README.md). Every node states its output columns; expressions inside a node read the node's
// input row by position (for a join: left columns then right columns). The logical stage has
// `Join`; the physical stage replaces every Join by `HashJoin` or `NestedLoopJoin`, and the batch
// executor refuses a logical Join. A new node kind does not compile until every visitor table
// (explain, executor) handles it.

import type { DataType } from '../sql/types.js';
import type { RelationDef } from '../sql/catalog.js';
import type { Expression } from './expression.js';
import type { ScalarFunction } from '../sql/functions.js';

export interface OutputColumn {
  readonly name: string;
  readonly type: DataType;
  /** pg_class OID / attribute number when the column comes straight from a relation, else 0. */
  readonly tableOid: number;
  readonly columnNumber: number;
}

export interface SortKey {
  readonly expression: Expression;
  readonly descending: boolean;
  readonly nullsFirst: boolean;
}

/** The set-returning functions of a select list or FROM. */
export type SetReturningName = 'generate_series' | 'unnest' | 'generate_subscripts' | '_pg_expandarray';

export type AggregateName = 'count' | 'sum' | 'avg' | 'min' | 'max' | 'bool_and' | 'bool_or' | 'every' | 'string_agg' | 'array_agg';

export interface AggregateCall {
  readonly name: AggregateName;
  /** Empty for count(*). */
  readonly args: readonly Expression[];
  readonly distinct: boolean;
  readonly filter?: Expression;
  /** ORDER BY inside the call (string_agg(x, ',' ORDER BY x)). */
  readonly orderBy?: readonly SortKey[];
  readonly type: DataType;
}

export type WindowFunctionName =
  | 'row_number' | 'rank' | 'dense_rank' | 'percent_rank' | 'cume_dist' | 'ntile'
  | 'lag' | 'lead' | 'first_value' | 'last_value' | 'nth_value'
  | AggregateName;

/**
 * A RANGE offset (`RANGE BETWEEN INTERVAL '1 hour' PRECEDING AND CURRENT ROW`): the bound is the
 * current row's ORDER BY value minus / plus `value`, computed with the resolved operators.
 */
export interface RangeOffset {
  readonly value: Expression;
  readonly minus: ScalarFunction;
  readonly plus: ScalarFunction;
}

export interface WindowFrame {
  readonly mode: 'rows' | 'range';
  /** `offset`: a count of rows ('rows'); `range`: a value distance ('range', one ORDER BY key). */
  readonly start: { readonly kind: 'unboundedPreceding' | 'currentRow' | 'preceding' | 'following'; readonly offset?: number; readonly range?: RangeOffset };
  readonly end: { readonly kind: 'unboundedFollowing' | 'currentRow' | 'preceding' | 'following'; readonly offset?: number; readonly range?: RangeOffset };
}

export interface WindowCall {
  readonly name: WindowFunctionName;
  readonly args: readonly Expression[];
  readonly partitionBy: readonly Expression[];
  readonly orderBy: readonly SortKey[];
  readonly frame: WindowFrame;
  readonly filter?: Expression;
  readonly type: DataType;
}

export type JoinType = 'inner' | 'left' | 'right' | 'full' | 'semi' | 'anti';

/** FOR SYSTEM_TIME on a scan: a field of the scan, not an operator. */
export type SystemTime =
  | { readonly kind: 'asOf'; readonly at: Expression }
  /** Adds oxbow_valid_from / oxbow_valid_to (timestamptz) after the relation's columns. */
  | { readonly kind: 'between'; readonly from: Expression; readonly to: Expression }
  /**
   * `AS OF PROCTIME()`: the table as it is when each row of the other side of a join arrives. In a
   * materialized view or sink the right side of a temporal join (StreamTemporalJoin); in a batch
   * query the table's current rows (a plain scan). `position`: the clause's, for errors.
   */
  | { readonly kind: 'proctime'; readonly position?: number };

export type Plan =
  | {
      readonly kind: 'Scan';
      readonly relation: RelationDef;
      readonly systemTime?: SystemTime;
      /** Positions in the relation's row (plus the two validity columns for BETWEEN) that the scan outputs. */
      readonly projection: readonly number[];
      /** Predicate over the scan's output, applied while scanning (pushed down). */
      readonly filter?: Expression;
      /**
       * rules/index-lookup.ts: primary-key tuples (constant expressions, in key order) the filter
       * pins; the executor reads just these keys. The filter still applies to the rows read.
       */
      readonly lookup?: readonly (readonly Expression[])[];
      /**
       * rules/index-lookup.ts: a secondary index whose leading columns the filter pins by equality;
       * `keys` are tuples of constants for those leading columns. The executor reads the index
       * entries of each prefix, then the rows by primary key. The filter still applies.
       */
      readonly indexLookup?: { readonly index: RelationDef; readonly keys: readonly (readonly Expression[])[] };
      readonly columns: readonly OutputColumn[];
    }
  | { readonly kind: 'Values'; readonly rows: readonly (readonly Expression[])[]; readonly columns: readonly OutputColumn[] }
  /** generate_series / unnest: arguments may read an enclosing row (LATERAL). */
  | {
      readonly kind: 'TableFunction';
      readonly name: SetReturningName | 'pg_options_to_table' | 'rows_from';
      readonly args: readonly Expression[];
      readonly withOrdinality: boolean;
      readonly columns: readonly OutputColumn[];
      /** rows_from: the functions zipped (PostgreSQL's several set-returning functions in one select list), each taking its share of `args` in order. */
      readonly parts?: readonly { readonly name: SetReturningName; readonly argCount: number }[];
    }
  | { readonly kind: 'Filter'; readonly input: Plan; readonly predicate: Expression; readonly columns: readonly OutputColumn[] }
  | { readonly kind: 'Project'; readonly input: Plan; readonly expressions: readonly Expression[]; readonly columns: readonly OutputColumn[] }
  | {
      readonly kind: 'Join';
      readonly joinType: JoinType;
      readonly left: Plan;
      readonly right: Plan;
      /** Over left ++ right columns; undefined means true (cross join). */
      readonly condition?: Expression;
      /** The right side reads the left row through OuterColumn depth 1 (LATERAL). */
      readonly lateral: boolean;
      readonly columns: readonly OutputColumn[];
    }
  | {
      readonly kind: 'HashJoin';
      readonly joinType: JoinType;
      readonly left: Plan;
      readonly right: Plan;
      /** Equality keys: leftKeys over left columns, rightKeys over right columns; NULL never matches. */
      readonly leftKeys: readonly Expression[];
      readonly rightKeys: readonly Expression[];
      /** Per key: true for IS NOT DISTINCT FROM (NULL matches NULL); absent means all false. */
      readonly nullSafe?: readonly boolean[];
      /** The rest of the condition, over left ++ right columns. */
      readonly residual?: Expression;
      readonly columns: readonly OutputColumn[];
    }
  | {
      readonly kind: 'NestedLoopJoin';
      readonly joinType: JoinType;
      readonly left: Plan;
      readonly right: Plan;
      readonly condition?: Expression;
      readonly lateral: boolean;
      readonly columns: readonly OutputColumn[];
    }
  | {
      readonly kind: 'Aggregate';
      readonly input: Plan;
      /** Output: group keys, then one column per aggregate. No keys: exactly one output row. */
      readonly groupKeys: readonly Expression[];
      readonly aggregates: readonly AggregateCall[];
      /**
       * GROUPING SETS / ROLLUP / CUBE: the sets, each a list of groupKeys positions, in
       * PostgreSQL's order; a key outside the current set outputs NULL. Absent: one set of all keys.
       */
      readonly groupingSets?: readonly (readonly number[])[];
      /** GROUPING(...) calls (groupKeys positions each), output after the aggregates: bit set = key not in the row's set. */
      readonly groupingCalls?: readonly (readonly number[])[];
      /**
       * parallel-aggregate.ts: worker threads that scan, filter and partly aggregate one key range
       * of the input's table each (the main thread merges); absent: one thread.
       */
      readonly parallel?: number;
      readonly columns: readonly OutputColumn[];
    }
  /** Output: input columns, then one column per window call. */
  | { readonly kind: 'Window'; readonly input: Plan; readonly calls: readonly WindowCall[]; readonly columns: readonly OutputColumn[] }
  /** `topN`: only the first limit + offset rows are needed (a Limit sits above): keep a bounded buffer. */
  | { readonly kind: 'Sort'; readonly input: Plan; readonly keys: readonly SortKey[]; readonly topN?: { readonly limit: Expression; readonly offset?: Expression }; readonly columns: readonly OutputColumn[] }
  /** `withTies` (FETCH FIRST n ROWS WITH TIES): the input is a Sort; rows tied with the last one on its keys follow it. */
  | { readonly kind: 'Limit'; readonly input: Plan; readonly limit?: Expression; readonly offset?: Expression; readonly withTies?: boolean; readonly columns: readonly OutputColumn[] }
  /** DISTINCT (on undefined: all columns) or DISTINCT ON (the first row of each key, input sorted). */
  | { readonly kind: 'Distinct'; readonly input: Plan; readonly on?: readonly Expression[]; readonly columns: readonly OutputColumn[] }
  | {
      readonly kind: 'SetOperation';
      readonly operation: 'union' | 'intersect' | 'except';
      readonly all: boolean;
      readonly left: Plan;
      readonly right: Plan;
      readonly columns: readonly OutputColumn[];
    }
  /**
   * WITH RECURSIVE: `base`, then `recursive` re-run over the rows the previous round added (read by
   * the WorkTable leaves with the same id) until a round adds nothing. UNION (not ALL) drops rows
   * already produced.
   */
  | { readonly kind: 'RecursiveUnion'; readonly id: number; readonly all: boolean; readonly base: Plan; readonly recursive: Plan; readonly columns: readonly OutputColumn[] }
  | { readonly kind: 'WorkTable'; readonly id: number; readonly name: string; readonly columns: readonly OutputColumn[] }
  | {
      readonly kind: 'Insert';
      readonly relation: RelationDef;
      /** Rows in the relation's full column order (defaults filled, casts applied). */
      readonly input: Plan;
      readonly onConflict?: OnConflict;
      /** Over the relation's full row. */
      readonly returning?: readonly Expression[];
      readonly columns: readonly OutputColumn[];
    }
  | {
      readonly kind: 'Update';
      readonly relation: RelationDef;
      /** Rows whose first columns are the target's full row (then any FROM columns). */
      readonly input: Plan;
      /** Per target column position: its new value over the input row. */
      readonly assignments: readonly { readonly column: number; readonly value: Expression }[];
      /** Over the new row followed by the input's FROM columns. */
      readonly returning?: readonly Expression[];
      readonly columns: readonly OutputColumn[];
    }
  | {
      readonly kind: 'Delete';
      readonly relation: RelationDef;
      /** Rows whose first columns are the target's full row. */
      readonly input: Plan;
      /** Over the input row (the deleted row, then any USING columns). */
      readonly returning?: readonly Expression[];
      readonly columns: readonly OutputColumn[];
    };

export interface OnConflict {
  readonly action: 'nothing' | 'update';
  /** DO UPDATE SET: over existing row ++ excluded row (the relation's columns twice). */
  readonly assignments: readonly { readonly column: number; readonly value: Expression }[];
  readonly where?: Expression;
}

export type PlanKind = Plan['kind'];
export type PlanOf<K extends PlanKind> = Extract<Plan, { kind: K }>;

/** The direct inputs of a node. */
export function inputs(plan: Plan): readonly Plan[] {
  switch (plan.kind) {
    case 'Scan':
    case 'Values':
    case 'TableFunction':
    case 'WorkTable':
      return [];
    case 'RecursiveUnion':
      return [plan.base, plan.recursive];
    case 'Join':
    case 'HashJoin':
    case 'NestedLoopJoin':
    case 'SetOperation':
      return [plan.left, plan.right];
    default:
      return [plan.input];
  }
}
