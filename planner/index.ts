// The planner's entry point: a parsed statement in, a planned statement out. Stages: bind (names,
// types, functions) to a logical plan, optimize with named rules, choose physical operators for
// the batch executor; EXPLAIN prints any stage. The engine (executor/session.ts) calls
// planStatement for SELECT / VALUES / INSERT / UPDATE / DELETE / EXPLAIN; other statement kinds
// are the engine's own.

import type { DataType } from '../sql/types.js';
import type { EvalContext, Resolved } from '../sql/functions.js';
import type { FunctionDef, RelationDef } from '../sql/catalog.js';
import type { ParsedStatement } from '../sql/parser/ast.js';
import type { CatalogReader } from './catalog-reader.js';
import type { Plan } from './plan.js';
import { planStatementStages } from './stages.js';
import { SqlError, SqlState } from '../sql/errors.js';
import { BinderContext } from './binder/context.js';
import { bindFunctionBody } from './binder/sql-function.js';

export type { Plan, OutputColumn } from './plan.js';
export type { Expression } from './expression.js';
export type { CatalogReader } from './catalog-reader.js';

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
export function planStatement(statement: ParsedStatement, context: PlannerContext): PlannedStatement {
  try {
    return planStatementStages(statement, context);
  } catch (error) {
    // Binding and the rules recurse over the tree: a pathologically deep statement is PostgreSQL's
    // 54001, not an internal error.
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      throw new SqlError(SqlState.statementTooComplex, 'stack depth limit exceeded', { hint: 'The statement nests expressions or subqueries too deeply.' });
    }
    throw error;
  }
}

/**
 * Checks a SQL function's body as CREATE FUNCTION does (PostgreSQL's check_function_bodies): it
 * binds over arguments of the declared types and fits the return type. `context.catalog` should
 * hold the function itself, so a body that reaches it is refused as recursive. Error positions
 * are 1-based in the body text.
 */
export function validateSqlFunction(fn: FunctionDef, context: PlannerContext): void {
  bindFunctionBody(new BinderContext(context), fn, fn.argumentTypes.map((type) => ({ kind: 'Literal', value: null, type })));
}
