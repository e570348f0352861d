// A batch aggregate's range, a job on a pooled thread (batch-workers.ts, worker-pool.ts): it
// attaches to the main thread's RocksDB, reads the range's committed rows at the request's epoch
// (storage/key-ranges.ts), runs the aggregate's input plan over them with the batch operators of
// the main thread (scan.ts's projection and filter, filter.ts, project.ts: the same compiled
// expressions) and feeds the partial calls' accumulators (aggregate.ts), then answers the partial
// results, or the first error as an SqlError's fields, on the job's port, and gives the thread back.

import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import { DEFAULT_EVAL_CONTEXT, type EvalContext } from '../../sql/eval-context.js';
import type { Row } from '../../sql/value.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import { committedRowsInRange } from '../../storage/key-ranges.js';
import { fromTransfer, toTransfer } from '../../planner/stream/plan-transfer.js';
import type { AggregateCall, Plan } from '../../planner/plan.js';
import type { RelationDef } from '../../sql/catalog.js';
import { compileCall, feed, newAccumulators } from './aggregate.js';
import type { RangeAnswer, RangeJob, RangeMessage } from './batch-workers.js';
import type { RunJob } from './pool-worker.js';
import type { TableAccess } from './index.js';
import { runPlan } from './operator.js';
import type { Runtime } from './runtime.js';

function unsupported(): never {
  throw new SqlError(SqlState.internalError, 'oxbow internal assertion: a batch scan worker reads only its key range');
}

function runRange(message: RangeMessage): RangeAnswer {
  const cancel = new Int32Array(message.cancel);
  const database = RocksDatabase.attach(message.token, message.path);
  try {
    let rows = 0;
    const deadline = message.deadlineMillis;
    const width = message.width;
    // The range's rows for the plan's one Scan, padded to the relation's width, checking for a cancel per batch.
    function* rangeRows(): Iterable<Row> {
      for (const batch of committedRowsInRange(database, Buffer.from(message.lower), Buffer.from(message.upper), message.epoch)) {
        if (Atomics.load(cancel, 0) !== 0) throw new SqlError(SqlState.queryCanceled, 'canceling statement due to user request');
        if (deadline !== undefined && Date.now() > deadline) throw new SqlError(SqlState.queryCanceled, 'canceling statement due to statement timeout');
        rows += batch.length;
        for (const row of batch) {
          if (row.length < width) while (row.length < width) row.push(null);
          yield row;
        }
      }
    }
    const tables: TableAccess = {
      scan: (_relation: RelationDef) => rangeRows(),
      versions: unsupported,
      get: unsupported,
      insert: unsupported,
      delete: unsupported,
      nextRowId: unsupported,
      epochAt: unsupported,
    };
    const evalContext: EvalContext = { ...DEFAULT_EVAL_CONTEXT, ...message.evalContext };
    const runtime: Runtime = {
      tables,
      parameters: [],
      evalContext,
      signal: new AbortController().signal,
      outer: [],
      subqueryCache: new Map(),
      runPlan,
      workTables: new Map(),
    };
    const input = fromTransfer<Plan>(message.input);
    const calls = fromTransfer<AggregateCall[]>(message.calls).map(compileCall);
    const accumulators = newAccumulators(calls, runtime);
    for (const batch of runPlan(input, runtime)) {
      for (let r = 0; r < batch.length; r++) feed(calls, accumulators, batch[r]!, runtime);
    }
    return { partials: toTransfer(accumulators.map((accumulator) => accumulator.result())), rows };
  } finally {
    // No flush or compaction runs through this wrapper: the close is immediate.
    void database.close();
  }
}

/** The range's answer: its partial results, or the first error as an SqlError's fields. */
function answerRange(message: RangeMessage): RangeAnswer {
  try {
    return runRange(message);
  } catch (caught) {
    const error = toSqlError(caught);
    return {
      error: {
        code: error.code,
        message: error.message,
        ...(error.detail === undefined ? {} : { detail: error.detail }),
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        ...(error.position === undefined ? {} : { position: error.position }),
      },
    };
  }
}

/** Runs one range as a pooled job: answers on the job's port, then the thread goes back to the pool. */
export const runJob: RunJob = (data, end) => {
  const job = data as RangeJob;
  job.port.postMessage(answerRange(job.range));
  job.port.close();
  end();
};
