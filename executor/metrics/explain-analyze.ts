// EXPLAIN ANALYZE, both forms:
//   - of a query (`EXPLAIN ANALYZE SELECT ...`): the batch executor runs the plan with a counter on
//     every plan node (batch-executor generators wrapped per node: rows, batches, loops and the time
//     spent pulling from it, its inputs included, as PostgreSQL's "actual time"), then the plan is
//     printed with them;
//   - of a running materialized view (`EXPLAIN ANALYZE [MATERIALIZED VIEW] name`): its streaming
//     plan printed with each operator's counters since the dataflow was built (the backfill
//     included): rows in and out, batches, and the time spent in the operator itself.

import type { Plan } from '../../planner/plan.js';
import { inputs } from '../../planner/plan.js';
import { explainPlan } from '../../planner/explain.js';
import { explainStreamLines } from '../../planner/stream/explain-stream.js';
import type { Row } from '../../sql/value.js';
import type { Dataflow } from '../stream/dataflow.js';
import type { PlanProfiler } from '../batch/index.js';

export interface PlanNodeStats {
  rows: number;
  batches: number;
  loops: number;
  nanos: bigint;
}

/** Counters on every node of `plan` (through its inputs): the batch executor's profiler for one run. */
export function profilePlan(plan: Plan): PlanProfiler & { readonly stats: Map<Plan, PlanNodeStats> } {
  const stats = new Map<Plan, PlanNodeStats>();
  const visit = (node: Plan): void => {
    stats.set(node, { rows: 0, batches: 0, loops: 0, nanos: 0n });
    for (const input of inputs(node)) visit(input);
  };
  visit(plan);
  return {
    stats,
    batches(node, batches) {
      const entry = stats.get(node);
      return entry === undefined ? batches : countBatches(batches, entry);
    },
  };
}

function* countBatches(batches: Iterable<Row[]>, stats: PlanNodeStats): Generator<Row[], void, undefined> {
  stats.loops++;
  const iterator = batches[Symbol.iterator]();
  let finished = false;
  try {
    for (;;) {
      const start = process.hrtime.bigint();
      const step = iterator.next();
      stats.nanos += process.hrtime.bigint() - start;
      if (step.done === true) {
        finished = true;
        return;
      }
      // An empty batch is the executor's pause marker (a yield point every ~10 ms), not output.
      if (step.value.length > 0) stats.batches++;
      stats.rows += step.value.length;
      yield step.value;
    }
  } finally {
    // A consumer that stops early (LIMIT) closes the node's own generator too.
    if (!finished) iterator.return?.();
  }
}

function milliseconds(nanos: bigint): string {
  return (Number(nanos) / 1e6).toFixed(3);
}

/** The query plan's lines with each node's measured rows, rows in, batches, loops and time. */
export function explainAnalyzedPlan(plan: Plan, stats: ReadonlyMap<Plan, PlanNodeStats>, verbose: boolean, totalMillis: number, resultRows: number): string[] {
  const lines: string[] = [];
  // One line per node, children indented, as EXPLAIN prints them: each node's header is the first
  // line EXPLAIN prints for it (a subquery's plan is not expanded here).
  const print = (node: Plan, depth: number): void => {
    const indent = '  '.repeat(depth);
    const own = explainPlan(node, { verbose });
    const entry = stats.get(node);
    const rowsIn = inputs(node).reduce((sum, input) => sum + (stats.get(input)?.rows ?? 0), 0);
    const inText = inputs(node).length === 0 ? '' : ` in=${rowsIn}`;
    const note = entry === undefined ? '' : `  (actual rows=${entry.rows}${inText} batches=${entry.batches} loops=${entry.loops} time=${milliseconds(entry.nanos)} ms)`;
    lines.push(`${indent}${own[0]!}${note}`);
    if (verbose && own[1] !== undefined && own[1].startsWith('  output: ')) lines.push(`${indent}${own[1]}`);
    for (const input of inputs(node)) print(input, depth + 1);
  };
  print(plan, 0);
  lines.push(`Result rows: ${resultRows}`, `Execution Time: ${totalMillis.toFixed(3)} ms`);
  return lines;
}

/** A running view's streaming plan with each operator's counters. */
export function explainAnalyzedDataflow(dataflow: Dataflow): string[] {
  const operators = dataflow.operators();
  const note = (operator: (typeof operators)[number]): string => {
    const stats = operator.stats;
    const detail = operator.detail === undefined ? '' : ` ${operator.detail}`;
    return `(actual id=${operator.id} rows in=${stats.rowsIn} out=${stats.rowsOut} batches=${stats.batches} time=${(stats.seconds * 1000).toFixed(3)} ms${detail})`;
  };
  // One line per plan node as EXPLAIN prints them (a parallel fragment's exchanges too), each with
  // its operator's counters; a fragment's inner nodes run in its workers, counted at its root.
  const byPlan = new Map(operators.map((operator) => [operator.plan, operator]));
  // The root runs as a source fragment when its node is one (a sink AS such a query may not be).
  const rootFragment = dataflow.workerOperators().some((operator) => operator.id === 1 && operator.workers.some((worker) => worker.kind === 'source fragment'));
  // A sink running as a source fragment is a direct sink (it stores no rows): N workers.
  const entries = explainStreamLines(dataflow.plan, dataflow.parallelism, dataflow.keyedSourceWorkers, rootFragment, dataflow.cores, !dataflow.isSink);
  const placed = entries.filter((entry) => entry.plan !== undefined && byPlan.has(entry.plan)).length;
  const lines =
    placed === operators.length
      ? entries.map((entry) => {
          const operator = entry.plan === undefined ? undefined : byPlan.get(entry.plan);
          if (operator !== undefined) return `${entry.text}  ${note(operator)}`;
          return entry.inWorkers ? `${entry.text}  (in the workers)` : entry.text;
        })
      : [...entries.map((entry) => entry.text), ...operators.map((operator) => `${operator.plan.kind} ${note(operator)}`)];
  const busy = operators.reduce((sum, operator) => sum + operator.stats.seconds, 0);
  lines.push(`Operators: ${operators.length}, busy ${(busy * 1000).toFixed(3)} ms since the dataflow was built (backfill included)`);
  return lines;
}
