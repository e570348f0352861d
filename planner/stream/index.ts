// The streaming stage's entry point: plans a materialized view's query through the ordinary stages
// (bind, optimize, physical) and then the incrementalization pass, for CREATE MATERIALIZED VIEW
// (executor/stream/) and for EXPLAIN CREATE MATERIALIZED VIEW (planner/stages.ts).

import type { Node } from '@pgsql/types';
import type { PlannerContext } from '../context.js';
import { BinderContext } from '../binder/context.js';
import { planToStage } from '../stages.js';
import { STREAM_RULES, STREAM_RULES_KEEPING_WINDOWS } from '../optimizer.js';
import type { OutputColumn, Plan } from '../plan.js';
import { incrementalize, type IncrementalizeOptions } from './incrementalize.js';
import { STREAM_PLAN_VERSION, type StreamPlan } from './stream-plan.js';
import { withVnodeColumns } from './parallel.js';
import { shareSubplans } from './share.js';

export type { StreamPlan, StateTableDeclaration, KeyedOperator, HashJoinOperator, StreamProperty } from './stream-plan.js';
export { allStateTables, sourceRelationIds, streamInputs, streamInputRelationId, STREAM_PLAN_VERSION } from './stream-plan.js';
export { explainStreamPlan } from './explain-stream.js';
export { DUPLICATE_COLUMN, materializedViewColumns, incrementalize } from './incrementalize.js';

export interface PlannedStream {
  /** The physical plan of the query (a batch recompute of the view runs it). */
  readonly query: Plan;
  readonly columns: readonly OutputColumn[];
  readonly stream: StreamPlan;
}

/** Plans a view's query (a SelectStmt node, views already expanded) to its streaming plan. */
export function planStream(query: Node, context: PlannerContext, options: IncrementalizeOptions): PlannedStream {
  const binder = new BinderContext(context);
  // A view keeps the state layout of the plan version it was created with: before 6, its
  // over-windows' state rows hold every column of their input.
  const bound = planToStage(query, binder, 'physical', (options.planVersion ?? STREAM_PLAN_VERSION) < 6 ? STREAM_RULES_KEEPING_WINDOWS : STREAM_RULES);
  if (bound.kind !== 'query') throw new Error('planStream expects a query');
  const emitOnWindowClose = (query as { SelectStmt?: { oxbowEmitOnWindowClose?: boolean } }).SelectStmt?.oxbowEmitOnWindowClose === true;
  const catalog = context.catalog;
  const withIndexes: IncrementalizeOptions = catalog.indexesOf === undefined || options.indexesOf !== undefined ? options : { ...options, indexesOf: (relationId) => catalog.indexesOf!(relationId) };
  const stream = shareSubplans(incrementalize(bound.plan, emitOnWindowClose ? { ...withIndexes, emitOnWindowClose } : withIndexes));
  // From version 11 a keyed fragment's state keys carry their vnode (stream-plan.ts).
  return { query: bound.plan, columns: bound.plan.columns, stream: (options.planVersion ?? STREAM_PLAN_VERSION) >= 11 ? withVnodeColumns(stream) : stream };
}
