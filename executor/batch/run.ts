// Runs a planned statement: pulls batches from the root operator, checks for cancellation between
// batches, and builds PostgreSQL's command tag.

import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { ExecuteContext, ExecuteResult } from './index.js';

export async function runPlanned(_planned: PlannedStatement, _context: ExecuteContext): Promise<ExecuteResult> {
  throw new SqlError(SqlState.featureNotSupported, 'batch executor not ready yet');
}
