// Aggregates the planner marked `parallel` (planner/parallel-aggregate.ts): before the plan runs,
// the scan under each is cut into one key range per worker (storage/key-ranges.ts), each worker
// (batch-workers.ts, batch-worker.ts) reads its range at the statement's epoch (or the AS OF
// epoch), runs the filters and projections and feeds partial accumulators, and this thread merges
// the partials into the aggregate's one row, which aggregate.ts then yields in place of reading
// its input. The partial of avg(x) is sum(x) and count(x); the merge adds exact integers and
// numerics and divides as the serial avg does (numeric / numeric), so every result, type and
// rounding is the serial path's. An error in a worker stops the others and reaches the client as
// the serial path's SqlError; a cancel or statement_timeout stops every worker within a batch,
// and this thread waits for all of them before it throws, so no range outlives its statement.
//
// The serial path runs instead when the table access cannot share the scan (no workers, a memory
// store, a source that stores no rows, range deletes not yet in RocksDB: StoreTableAccess.sharedScan)
// or the plan cannot travel to the workers (plan-transfer.ts).

import { SqlError, SqlState } from '../../sql/errors.js';
import { Numeric } from '../../sql/numeric.js';
import { compareValues, resolveOperator, type ScalarImpl } from '../../sql/functions.js';
import { type as scalar, type DataType } from '../../sql/types.js';
import type { Row, Value } from '../../sql/value.js';
import { tableKeySplits } from '../../storage/key-ranges.js';
import { parallelAggregates, parallelScanOf } from '../../planner/parallel-aggregate.js';
import type { AggregateCall, Plan, PlanOf } from '../../planner/plan.js';
import { toTransfer, fromTransfer } from '../../planner/stream/plan-transfer.js';
import type { RangeAnswer, RangeRequest, WorkerError } from './batch-workers.js';
import type { Runtime } from './runtime.js';
import { epochOf } from './scan.js';

const NUMERIC = scalar('numeric');
const INT8 = scalar('int8');
const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

function operator(name: string, type: DataType): ScalarImpl {
  const resolved = resolveOperator(name, type, type);
  if (resolved === undefined) throw new SqlError(SqlState.internalError, `operator ${type.name} ${name} ${type.name} is missing`);
  return resolved.fn.impl;
}

/** The calls the workers run for one call: avg(x) as sum(x) and count(x), any other as itself. */
function partialCalls(call: AggregateCall): AggregateCall[] {
  if (call.name !== 'avg') return [call];
  return [
    { ...call, name: 'sum', type: NUMERIC },
    { ...call, name: 'count', type: INT8 },
  ];
}

/** The aggregate's input with its scan's FOR SYSTEM_TIME removed (the workers get the epoch itself). */
function withoutSystemTime(plan: Plan): Plan {
  switch (plan.kind) {
    case 'Filter':
    case 'Project':
      return { ...plan, input: withoutSystemTime(plan.input) };
    case 'Scan': {
      const { systemTime: _, ...rest } = plan;
      return rest;
    }
    default:
      throw new SqlError(SqlState.internalError, `oxbow internal assertion: ${plan.kind} under a parallel aggregate`);
  }
}

/** The plain fields of the session's evaluation context (its functions stay on this thread). */
function plainFields(context: object): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(context)) if (typeof value === 'string' || typeof value === 'number') out[key] = value;
  return out;
}

/** The signal's reason when it is an SqlError (statement_timeout), else the user-request cancel. */
function abortError(signal: AbortSignal): SqlError {
  const reason = signal.reason as unknown;
  return reason instanceof SqlError ? reason : new SqlError(SqlState.queryCanceled, 'canceling statement due to user request');
}

function sqlError(error: WorkerError): SqlError {
  return new SqlError(error.code, error.message, {
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    ...(error.position === undefined ? {} : { position: error.position }),
  });
}

/** Sum of exact partial sums: bigints (sum of int2/int4), numerics (int8, numeric); null when every part is. */
function mergeSum(parts: readonly Value[], call: AggregateCall, runtime: Runtime): Value {
  const type = call.args[0]!.type.name;
  if (type === 'int2' || type === 'int4') {
    let total: bigint | undefined;
    for (const part of parts) if (part !== null) total = (total ?? 0n) + (part as bigint);
    if (total === undefined) return null;
    if (total > INT8_MAX || total < INT8_MIN) throw new SqlError(SqlState.numericValueOutOfRange, 'bigint out of range');
    return total;
  }
  const plus = operator('+', NUMERIC);
  let total: Value = null;
  for (const part of parts) if (part !== null) total = total === null ? part : plus([total, part], runtime.evalContext);
  return total;
}

/** Merges each call's partial results (one array per range, in the order partialCalls lists them). */
function merge(calls: readonly AggregateCall[], ranges: readonly (readonly Value[])[], runtime: Runtime): Row {
  const row: Value[] = [];
  let at = 0;
  for (const call of calls) {
    const parts = ranges.map((partials) => partials[at]!);
    switch (call.name) {
      case 'count':
        row.push(parts.reduce<bigint>((total, part) => total + (part as bigint), 0n));
        at += 1;
        break;
      case 'sum':
        row.push(mergeSum(parts, call, runtime));
        at += 1;
        break;
      case 'min':
      case 'max': {
        const sign = call.name === 'max' ? 1 : -1;
        let best: Value = null;
        for (const part of parts) if (part !== null && (best === null || sign * compareValues(part, best, call.args[0]!.type) > 0)) best = part;
        row.push(best);
        at += 1;
        break;
      }
      case 'avg': {
        const count = ranges.reduce<bigint>((total, partials) => total + (partials[at + 1] as bigint), 0n);
        if (count === 0n) row.push(null);
        else {
          let sum = mergeSum(parts, call, runtime);
          if (typeof sum === 'bigint') sum = new Numeric(sum, 0);
          row.push(operator('/', NUMERIC)([sum, new Numeric(count, 0)], runtime.evalContext));
        }
        at += 2;
        break;
      }
      default:
        throw new SqlError(SqlState.internalError, `oxbow internal assertion: ${call.name} in a parallel aggregate`);
    }
  }
  return row;
}

/** One marked aggregate run by the workers: its output row, or undefined for the serial path. */
async function runAggregate(aggregate: PlanOf<'Aggregate'>, runtime: Runtime): Promise<Row[] | undefined> {
  const scan = parallelScanOf(aggregate.input);
  if (scan === undefined || runtime.tables.sharedScan === undefined) return undefined;
  const asOf = scan.systemTime?.kind === 'asOf' ? epochOf(scan.systemTime.at, runtime) : undefined;
  const shared = runtime.tables.sharedScan(scan.relation, asOf === undefined ? {} : { asOf });
  if (shared === undefined) return undefined;
  const input = toTransfer(withoutSystemTime(aggregate.input));
  const calls = toTransfer(aggregate.aggregates.flatMap(partialCalls));
  if (input === undefined || calls === undefined) return undefined;
  const { workers, tableId, epoch } = shared;
  const bounds = tableKeySplits(workers.database, tableId, workers.size);
  const evalContext = plainFields(runtime.evalContext);
  const requests: RangeRequest[] = [];
  for (let part = 0; part + 1 < bounds.length; part++) {
    requests.push({
      lower: bounds[part]!,
      upper: bounds[part + 1]!,
      epoch,
      width: scan.relation.columns.length,
      input,
      calls,
      evalContext,
      ...(runtime.deadlineMillis === undefined ? {} : { deadlineMillis: runtime.deadlineMillis }),
    });
  }
  const cancel = new SharedArrayBuffer(4);
  const flag = new Int32Array(cancel);
  const stop = (): void => void Atomics.store(flag, 0, 1);
  runtime.signal.addEventListener('abort', stop, { once: true });
  let answers: RangeAnswer[];
  try {
    // The first range to fail stops the others (its error is the statement's).
    answers = await Promise.all(workers.run(requests, cancel).map((answer) => answer.then((a) => ('error' in a ? (stop(), a) : a))));
  } finally {
    runtime.signal.removeEventListener('abort', stop);
  }
  if (runtime.signal.aborted) throw abortError(runtime.signal);
  const failures = answers.flatMap((answer) => ('error' in answer ? [answer.error] : []));
  if (failures.length > 0) throw sqlError(failures.find((failure) => failure.code !== SqlState.queryCanceled) ?? failures[0]!);
  const partials = answers.map((answer) => fromTransfer<Value[]>((answer as { partials: unknown }).partials));
  return [merge(aggregate.aggregates, partials, runtime)];
}

/** The rows of each aggregate of the plan the workers ran (aggregate.ts yields them), or undefined. */
export async function runParallelAggregates(plan: Plan, runtime: Runtime): Promise<Map<Plan, Row[]> | undefined> {
  const marked = parallelAggregates(plan);
  if (marked.length === 0) return undefined;
  const results = new Map<Plan, Row[]>();
  for (const aggregate of marked) {
    const rows = await runAggregate(aggregate, runtime);
    if (rows !== undefined) results.set(aggregate, rows);
  }
  return results;
}
