// What every batch operator sees while running: table access, parameters, the session's
// evaluation context, the stack of enclosing rows (for correlated subqueries and LATERAL), and the
// cancellation signal. One Runtime per statement execution.

import type { Row } from '../../sql/value.js';
import type { PlanProfiler, TableAccess } from './index.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { EvalRuntime } from '../expr/expression.js';
import type { Plan } from '../../planner/plan.js';

/** Rows per batch: large enough to amortise per-batch work, small enough to stay in cache. */
export const BATCH_SIZE = 1024;

/**
 * The most rows a statement may hold in memory at once (a result, or the input of a sort, join
 * build side or window): beyond it the statement fails with 54000 instead of exhausting the heap
 * and taking the server down.
 */
export const MAX_MATERIALIZED_ROWS = 20_000_000;

export function tooManyRows(): SqlError {
  return new SqlError(SqlState.programLimitExceeded, `statement holds more than ${MAX_MATERIALIZED_ROWS} rows in memory`, {
    hint: 'Add a LIMIT or a more selective WHERE clause.',
  });
}

export interface Runtime extends EvalRuntime {
  readonly tables: TableAccess;
  readonly signal: AbortSignal;
  /** The operator table (operator.ts's runPlan): subqueries and nested plans run through it. */
  runPlan(plan: Plan, runtime: Runtime): Batches;
  /** EXPLAIN ANALYZE's counters; absent: plans run unobserved. */
  readonly profiler?: PlanProfiler;
  /** WITH RECURSIVE: the rows the current round reads, per RecursiveUnion id. */
  readonly workTables: Map<number, Row[]>;
  /** Date.now() limit from ExecuteContext.deadlineMillis; absent: none. */
  readonly deadlineMillis?: number;
  /**
   * When the current turn of the event loop began (run.ts resets it after every pause); absent
   * (the streaming executor's runtimes): operators never pause.
   */
  readonly slice?: { start: number };
  /** Seconds of pg_sleep() owed by expressions evaluated since the last pause (run.ts sleeps them, cancellably). */
  sleepSeconds?: number;
  /** The rows of the aggregates worker threads computed before the plan ran (parallel-aggregate.ts). */
  parallelResults?: ReadonlyMap<Plan, Row[]>;
}

/** How long an operator may compute before it yields to the event loop (so a cancel, a timer or another session gets in). */
export const SLICE_MILLIS = 10;

/**
 * The batch that carries no rows: an operator's way of saying "my time slice is used up". Every
 * operator passes an empty batch up unchanged (`if (batch.length === 0) { yield batch; continue; }`);
 * run.ts then yields to the event loop and checks for cancellation, and the whole generator chain
 * resumes where it stopped. Synchronous consumers (collect, subqueries) simply skip it.
 */
export const PAUSE: Row[] = Object.freeze([]) as unknown as Row[];

/** True when the slice is used up (or a pg_sleep is owed): the caller should `yield PAUSE`. */
export function sliceUsed(runtime: Runtime): boolean {
  const slice = runtime.slice;
  if (slice === undefined) return false;
  return Date.now() - slice.start >= SLICE_MILLIS || (runtime.sleepSeconds ?? 0) > 0;
}

/** Called by row sources and loops once per batch: the statement_timeout inside synchronous work. */
export function checkDeadline(runtime: Runtime): void {
  if (runtime.deadlineMillis !== undefined && Date.now() > runtime.deadlineMillis) {
    throw new SqlError(SqlState.queryCanceled, 'canceling statement due to statement timeout');
  }
}

export type Batches = Iterable<Row[]>;
