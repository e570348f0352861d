// What the planner is given (the catalog, the search path, the parameter types, the session's
// functions and settings) and what it returns (a planned statement and its result columns).

import type { DataType } from '../sql/types.js';
import type { EvalContext, Resolved } from '../sql/functions.js';
import type { RelationDef } from '../sql/catalog.js';
import type { CatalogReader } from './catalog-reader.js';
import type { Plan } from './plan.js';

export interface PlannerContext {
  readonly catalog: CatalogReader;
  readonly searchPath: readonly string[];
  /** Declared parameter types ($1 is index 0); undefined entries are inferred. */
  readonly parameterTypes: readonly (DataType | undefined)[];
  /**
   * Session (catalog) functions such as pg_table_is_visible, format_type, current_schema,
   * version: consulted before sql/functions.ts's resolveFunction.
   */
  resolveSessionFunction?(name: string, argumentTypes: readonly DataType[]): Resolved | undefined;
  /**
   * The session's settings (TimeZone, DateStyle, IntervalStyle) for literals converted while
   * planning ('2024-01-01 10:00'::timestamptz); UTC / ISO when absent. Additive, optional.
   */
  readonly evalContext?: EvalContext;
  /** The engine's --parallelism: EXPLAIN of a materialized view shows the exchanges of N > 1. */
  readonly streamParallelism?: number;
  /** The engine's --cores: a view's source fragment takes min(N, cores - 1) workers (parallel-source.ts `sourceFragmentWorkers`); absent: no bound. */
  readonly streamCores?: number;
  /** The engine's --keyed-source-workers: EXPLAIN shows the inputs its keyed fragments' workers generate. */
  readonly keyedSourceWorkers?: boolean;
  /**
   * EXPLAIN of an existing materialized view: the streaming plan version it was created with
   * (`STREAM_PLAN_VERSION`), so EXPLAIN prints the plan the view runs; absent: the current one.
   */
  readonly streamPlanVersion?: number;
  /**
   * Worker threads that would share a batch scan of `relation` (a table or materialized view large
   * enough that splitting it pays), 0 or absent: one thread (parallel-aggregate.ts).
   */
  parallelScanWorkers?(relation: RelationDef): number;
}

export interface PlannedColumn {
  readonly name: string;
  readonly type: DataType;
  readonly tableOid: number;
  readonly columnNumber: number;
}

export interface PlannedStatement {
  readonly kind: 'query' | 'insert' | 'update' | 'delete' | 'explain';
  /** Result columns; null for DML without RETURNING. */
  readonly columns: readonly PlannedColumn[] | null;
  /** Every parameter's type after inference ($1 first). */
  readonly parameterTypes: readonly DataType[];
  /** The physical plan the batch executor runs (for EXPLAIN: a Values node of the text lines). */
  readonly plan: Plan;
  /** The table written by INSERT / UPDATE / DELETE. */
  readonly targetRelation?: RelationDef;
  /**
   * EXPLAIN ANALYZE of a query: the query's own physical plan, which the executor runs with
   * per-node counters and prints with them (`plan` then holds no lines).
   */
  readonly analyze?: { readonly plan: Plan; readonly verbose: boolean };
}

/** Plans one statement; throws SqlError (with a position) on bind errors, 0A000 for other kinds. */
