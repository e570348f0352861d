// The planner's entry point: a parsed statement in, a planned statement out. Stages: bind (names,
// types, functions) to a logical plan, optimize with named rules, choose physical operators for
// the batch executor; EXPLAIN prints any stage. The engine's sessions call
// planStatement for SELECT / VALUES / INSERT / UPDATE / DELETE / EXPLAIN; other statement kinds
// are the engine's own.

import type { FunctionDef } from '../sql/catalog.js';
import type { ParsedStatement } from '../sql/parser/ast.js';
import { planStatementStages } from './statement.js';
import { SqlError, SqlState } from '../sql/errors.js';
import { BinderContext } from './binder/context.js';
import { bindFunctionBody } from './binder/sql-function.js';

export type { Plan, OutputColumn } from './plan.js';
export type { Expression } from './expression.js';
export type { CatalogReader } from './catalog-reader.js';
export type { PlannerContext, PlannedColumn, PlannedStatement } from './context.js';
import type { PlannerContext, PlannedStatement } from './context.js';

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
