// The planner's named stages, in order: bind (AST to logical plan), optimize (named rules),
// physical (join algorithms for the batch executor). EXPLAIN prints any of them.

import { SqlError, SqlState } from '../sql/errors.js';
import type { ParsedStatement } from '../sql/parser/ast.js';
import type { PlannedStatement, PlannerContext } from './index.js';

export function planStatementStages(statement: ParsedStatement, _context: PlannerContext): PlannedStatement {
  throw new SqlError(SqlState.featureNotSupported, `statement not supported by the planner yet: ${statement.text}`);
}
