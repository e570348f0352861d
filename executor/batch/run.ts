// Runs a planned statement: pulls batches from the root operator, checks for cancellation between
// batches (yielding to the event loop now and then so a cancel can arrive), and builds
// PostgreSQL's command tag.

import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { ExecuteContext, ExecuteResult } from './index.js';
import { MAX_MATERIALIZED_ROWS, tooManyRows, type Runtime } from './runtime.js';
import { runPlan } from './operator.js';
import { affectedRows } from './affected.js';

/** Batches between two turns of the event loop. */
const BATCHES_PER_TURN = 16;

function cancelled(): SqlError {
  return new SqlError(SqlState.queryCanceled, 'canceling statement due to user request');
}

export async function runPlanned(planned: PlannedStatement, context: ExecuteContext): Promise<ExecuteResult> {
  const runtime: Runtime = {
    tables: context.tables,
    parameters: context.parameters,
    evalContext: context.evalContext,
    signal: context.signal,
    outer: [],
    subqueryCache: new Map(),
    workTables: new Map(),
    ...(context.deadlineMillis === undefined ? {} : { deadlineMillis: context.deadlineMillis }),
  };
  if (context.signal.aborted) throw cancelled();
  const rows: Row[] = [];
  let batches = 0;
  for (const batch of runPlan(planned.plan, runtime)) {
    if (rows.length + batch.length > MAX_MATERIALIZED_ROWS) throw tooManyRows();
    for (const row of batch) rows.push(row);
    if (++batches % BATCHES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (context.signal.aborted) throw cancelled();
  }
  switch (planned.kind) {
    case 'query':
    case 'explain':
      return { rows, rowCount: rows.length, commandTag: `SELECT ${rows.length}` };
    case 'insert': {
      const count = affectedRows(runtime);
      return { rows, rowCount: count, commandTag: `INSERT 0 ${count}` };
    }
    case 'update': {
      const count = affectedRows(runtime);
      return { rows, rowCount: count, commandTag: `UPDATE ${count}` };
    }
    case 'delete': {
      const count = affectedRows(runtime);
      return { rows, rowCount: count, commandTag: `DELETE ${count}` };
    }
  }
}
