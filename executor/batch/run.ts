// Runs a planned statement: pulls batches from the root operator and builds PostgreSQL's command
// tag. Operators yield an empty batch (runtime.ts PAUSE) when their time slice is used up; the
// loop then yields to the event loop (so a CancelRequest, the statement_timeout timer and other
// sessions get in), sleeps what pg_sleep() asked for, and checks for cancellation.

import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { ExecuteContext, ExecuteResult } from './index.js';
import { MAX_MATERIALIZED_ROWS, checkDeadline, sliceUsed, tooManyRows, type Runtime } from './runtime.js';
import { runPlan } from './operator.js';
import { affectedRows } from './affected.js';
import { runParallelAggregates } from './parallel-aggregate.js';

function cancelled(): SqlError {
  return new SqlError(SqlState.queryCanceled, 'canceling statement due to user request');
}

/** The signal's reason when it is an SqlError (statement_timeout), else the user-request error. */
function abortError(signal: AbortSignal): SqlError {
  const reason = signal.reason as unknown;
  return reason instanceof SqlError ? reason : cancelled();
}

/** Resolves after `ms` or rejects as soon as the signal aborts or the deadline passes. */
function sleep(ms: number, signal: AbortSignal, deadlineMillis: number | undefined): Promise<void> {
  const until = deadlineMillis === undefined ? ms : Math.min(ms, Math.max(0, deadlineMillis - Date.now()));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      if (until < ms) reject(new SqlError(SqlState.queryCanceled, 'canceling statement due to statement timeout'));
      else resolve();
    }, until);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A turn of the event loop, then the owed pg_sleep, then the cancellation checks. */
async function pause(runtime: Runtime, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  const seconds = runtime.sleepSeconds ?? 0;
  if (seconds > 0) {
    runtime.sleepSeconds = 0;
    if (signal.aborted) throw abortError(signal);
    await sleep(seconds * 1000, signal, runtime.deadlineMillis);
  }
  if (signal.aborted) throw abortError(signal);
  checkDeadline(runtime);
  runtime.slice!.start = Date.now();
}

export async function runPlanned(planned: PlannedStatement, context: ExecuteContext): Promise<ExecuteResult> {
  const runtime: Runtime = {
    tables: context.tables,
    parameters: context.parameters,
    // pg_sleep() records what it owes; pause() sleeps it.
    evalContext: { ...context.evalContext, sleep: (seconds: number) => void (runtime.sleepSeconds = (runtime.sleepSeconds ?? 0) + seconds) },
    signal: context.signal,
    outer: [],
    subqueryCache: new Map(),
    runPlan,
    workTables: new Map(),
    ...(context.deadlineMillis === undefined ? {} : { deadlineMillis: context.deadlineMillis }),
    ...(context.profiler === undefined ? {} : { profiler: context.profiler }),
    slice: { start: Date.now() },
    sleepSeconds: 0,
  };
  if (context.signal.aborted) throw abortError(context.signal);
  if (planned.kind === 'query' && context.tables.sharedScan !== undefined) {
    const parallel = await runParallelAggregates(planned.plan, runtime);
    if (parallel !== undefined) runtime.parallelResults = parallel;
  }
  const rows: Row[] = [];
  for (const batch of runPlan(planned.plan, runtime)) {
    if (rows.length + batch.length > MAX_MATERIALIZED_ROWS) throw tooManyRows();
    for (const row of batch) rows.push(row);
    if (sliceUsed(runtime)) await pause(runtime, context.signal);
  }
  // pg_sleep in the last batch's expressions.
  if ((runtime.sleepSeconds ?? 0) > 0) await pause(runtime, context.signal);
  if (context.signal.aborted) throw abortError(context.signal);
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
