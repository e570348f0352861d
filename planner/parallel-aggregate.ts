// Batch aggregates split across worker threads by key range (executor/batch/parallel-aggregate.ts):
// an aggregate without GROUP BY over a full scan of one table or materialized view, through
// filters and projections, whose calls merge from partial results (count, sum and avg of integers
// and numerics, min and max of scalar types), gets `parallel: N` when the engine says a scan of
// that relation pays to split (`PlannerContext.parallelScanWorkers`: its size against a threshold).
// Only aggregates that run once per statement: the plan's root through projections, filters,
// sorts, limits and DISTINCT, not under a join or in a subquery. Every expression the workers
// evaluate must be plain data they can receive (built-in functions, no parameter, no subquery,
// no outer column, nothing volatile). EXPLAIN prints `ParallelAggregate ... (N workers, by key range)`.

import type { RelationDef } from '../sql/catalog.js';
import { children, type Expression } from './expression.js';
import type { AggregateCall, Plan, PlanOf } from './plan.js';
import { isVolatile } from './walk.js';

const WORKER_KINDS = new Set<Expression['kind']>(['Literal', 'Column', 'Call', 'Cast', 'And', 'Or', 'Not', 'IsNull', 'IsBoolean', 'IsDistinct', 'Case', 'Coalesce', 'NullIf', 'MinMax']);
const EXACT_SUMS = new Set(['int2', 'int4', 'int8', 'numeric']);
const EXTREMES = new Set(['int2', 'int4', 'int8', 'numeric', 'float4', 'float8', 'text', 'varchar', 'bpchar', 'date', 'timestamp', 'timestamptz', 'time']);

function workerExpression(expression: Expression): boolean {
  if (!WORKER_KINDS.has(expression.kind)) return false;
  if (expression.kind === 'Call' && isVolatile(expression)) return false;
  return children(expression).every(workerExpression);
}

function mergeable(call: AggregateCall): boolean {
  if (call.distinct || call.orderBy !== undefined) return false;
  if (call.filter !== undefined && !workerExpression(call.filter)) return false;
  if (!call.args.every(workerExpression)) return false;
  const type = call.args[0]?.type.name;
  switch (call.name) {
    case 'count':
      return true;
    case 'sum':
    case 'avg':
      return type !== undefined && EXACT_SUMS.has(type);
    case 'min':
    case 'max':
      return type !== undefined && EXTREMES.has(type);
    default:
      return false;
  }
}

/** The scan under an aggregate's input of filters and projections the workers can run, or undefined. */
export function parallelScanOf(input: Plan): PlanOf<'Scan'> | undefined {
  let plan = input;
  for (;;) {
    switch (plan.kind) {
      case 'Filter':
        if (!workerExpression(plan.predicate)) return undefined;
        plan = plan.input;
        continue;
      case 'Project':
        if (!plan.expressions.every(workerExpression)) return undefined;
        plan = plan.input;
        continue;
      case 'Scan': {
        if (plan.lookup !== undefined || plan.indexLookup !== undefined) return undefined;
        if (plan.systemTime !== undefined && plan.systemTime.kind !== 'asOf') return undefined;
        if (plan.filter !== undefined && !workerExpression(plan.filter)) return undefined;
        const kind = plan.relation.kind;
        return kind === 'table' || kind === 'materialized_view' ? plan : undefined;
      }
      default:
        return undefined;
    }
  }
}

function markAggregate(plan: PlanOf<'Aggregate'>, workersFor: (relation: RelationDef) => number): Plan {
  if (plan.groupingSets !== undefined || plan.groupingCalls !== undefined || plan.groupKeys.length > 0) return plan;
  if (!plan.aggregates.every(mergeable)) return plan;
  const scan = parallelScanOf(plan.input);
  if (scan === undefined) return plan;
  const workers = workersFor(scan.relation);
  return workers >= 2 ? { ...plan, parallel: workers } : plan;
}

/** The plan with its aggregates that pay to split marked `parallel` (see the top of this file). */
export function markParallelAggregates(plan: Plan, workersFor: (relation: RelationDef) => number): Plan {
  switch (plan.kind) {
    case 'Aggregate':
      return markAggregate(plan, workersFor);
    case 'Project':
    case 'Filter':
    case 'Sort':
    case 'Limit':
    case 'Distinct': {
      const input = markParallelAggregates(plan.input, workersFor);
      return input === plan.input ? plan : { ...plan, input };
    }
    default:
      return plan;
  }
}

/** The aggregates a plan marked `parallel`, in the order markParallelAggregates visits them. */
export function parallelAggregates(plan: Plan): PlanOf<'Aggregate'>[] {
  switch (plan.kind) {
    case 'Aggregate':
      return plan.parallel === undefined ? [] : [plan];
    case 'Project':
    case 'Filter':
    case 'Sort':
    case 'Limit':
    case 'Distinct':
      return parallelAggregates(plan.input);
    default:
      return [];
  }
}
