// The batch executor's entry point: runs a planned statement (planner/) over tables reached
// through TableAccess, batch by batch, and returns the result rows and PostgreSQL's command tag.
// The engine implements TableAccess over the state store (and system tables) and owns the epoch:
// when executePlanned throws, the engine drops the statement's buffered writes.

import type { Row, Value } from '../../sql/value.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import type { EvalContext } from '../../sql/functions.js';
import type { RowVersion } from '../../storage/state-table.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { Plan } from '../../planner/plan.js';
import { runPlanned } from './run.js';
import type { BatchWorkers } from './batch-workers.js';
import { SqlError, SqlState } from '../../sql/errors.js';

export interface TableAccess {
  /** Full rows in the relation's column order (hidden columns included); AS OF raises 72000 outside the window. */
  scan(relation: RelationDef, options: { readonly asOf?: Epoch }): Iterable<Row>;
  /** Every version valid at some point in [from, to] (FOR SYSTEM_TIME BETWEEN). */
  versions(relation: RelationDef, from: Epoch, to: Epoch): Iterable<RowVersion>;
  /** The current row with this primary key (key columns in primary-key order). */
  get(relation: RelationDef, key: Row): Row | undefined;
  /**
   * Optional: the row with this primary key as `scan` with the same options would return it (the
   * statement's snapshot, or AS OF); a Scan with a `lookup` uses it instead of reading everything.
   */
  lookup?(relation: RelationDef, key: Row, options: { readonly asOf?: Epoch }): Row | undefined;
  /**
   * Optional: the primary keys of the rows whose leading `index` columns equal `prefix`, read from
   * the secondary index in the same snapshot `scan` would read (a Scan with an `indexLookup`);
   * undefined when the index cannot answer for that snapshot (an AS OF before it was built).
   */
  indexKeys?(relation: RelationDef, index: RelationDef, prefix: Row, options: { readonly asOf?: Epoch }): Iterable<Row> | undefined;
  insert(relation: RelationDef, row: Row): void;
  delete(relation: RelationDef, row: Row): void;
  /** A fresh value for the hidden row id of a table without a primary key. */
  nextRowId(relation: RelationDef): bigint;
  /** The epoch to read for `AS OF` a timestamp (microseconds since 1970 UTC). */
  epochAt(timestampMicros: number): Epoch;
  /**
   * Optional: called with the plan before it runs, for reads that must be fetched asynchronously
   * first (a Kafka source that stores no rows replays its topic: executor/connectors/kafka/kafka-replay.ts);
   * undefined when there is nothing to fetch (no await on the statement's path). `parameters`
   * let a filter on a parameter narrow what is fetched (`WHERE _row_id = $1`).
   */
  prepare?(plan: PlannedStatement, signal: AbortSignal, parameters: readonly Value[]): Promise<void> | undefined;
  /**
   * Optional: where worker threads read the relation's rows as `scan` with these options would
   * (the workers, the table id and the epoch; AS OF outside the window raises 72000 here), for
   * aggregates the planner marked parallel (parallel-aggregate.ts); undefined: only `scan` can.
   */
  sharedScan?(relation: RelationDef, options: { readonly asOf?: Epoch }): SharedScan | undefined;
}

/** A scan worker threads can share: RocksDB table `tableId` at committed epoch `epoch`. */
export interface SharedScan {
  readonly workers: BatchWorkers;
  readonly tableId: number;
  readonly epoch: Epoch;
}

export interface ExecuteContext {
  readonly tables: TableAccess;
  readonly parameters: readonly Value[];
  readonly evalContext: EvalContext;
  readonly signal: AbortSignal;
  /**
   * Additive, optional: Date.now() after which the statement fails with 57014 (statement_timeout).
   * Checked inside operators at every batch, so a long synchronous stretch (a big sort, a huge
   * generate_series) stops too, which the signal alone cannot do (it flips only between turns
   * of the event loop).
   */
  readonly deadlineMillis?: number;
  /** EXPLAIN ANALYZE's counters: every plan node's batches pass through it (metrics/explain-analyze.ts). */
  readonly profiler?: PlanProfiler;
}

/** Sees the batches each plan node yields, in the order the consumer pulls them. */
export interface PlanProfiler {
  batches(plan: Plan, batches: Iterable<Row[]>): Iterable<Row[]>;
}

export interface ExecuteResult {
  readonly rows: Row[];
  readonly rowCount: number;
  readonly commandTag: string;
}

/** Runs the statement; throws SqlError (57014 when `signal` aborts between batches). */
export async function executePlanned(planned: PlannedStatement, context: ExecuteContext): Promise<ExecuteResult> {
  try {
    const preparing = context.tables.prepare?.(planned, context.signal, context.parameters);
    if (preparing !== undefined) await preparing;
    return await runPlanned(planned, context);
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      throw new SqlError(SqlState.statementTooComplex, 'stack depth limit exceeded', { hint: 'The statement nests expressions or subqueries too deeply.' });
    }
    throw error;
  }
}
