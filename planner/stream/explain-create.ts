// EXPLAIN CREATE MATERIALIZED VIEW: the view's query through the stages and the incrementalization
// pass, printed as the streaming plan. State table ids are numbered from 1 here (the real ids are
// allocated by the catalog when the view is created), so the text is deterministic.

import type { Node } from '@pgsql/types';
import type { BinderContext } from '../binder/context.js';
import { planToStage } from '../stages.js';
import { STREAM_RULES, STREAM_RULES_KEEPING_WINDOWS } from '../optimizer.js';
import { incrementalize } from './incrementalize.js';
import { explainStreamPlan } from './explain-stream.js';
import { shareSubplans } from './share.js';

/** The streaming plan's lines when `statement` is CREATE MATERIALIZED VIEW, else undefined. */
export function explainMaterializedView(statement: Node, binder: BinderContext): string[] | undefined {
  const body = (statement as { CreateTableAsStmt?: { objtype?: string; query?: Node; into?: { rel?: { relname?: string; schemaname?: string } } } }).CreateTableAsStmt;
  if (body === undefined || body.objtype !== 'OBJECT_MATVIEW' || body.query === undefined) return undefined;
  // An existing view's EXPLAIN plans at the version the view was created with (planStream's rules).
  const planVersion = binder.planner.streamPlanVersion;
  const bound = planToStage(body.query, binder, 'physical', planVersion !== undefined && planVersion < 6 ? STREAM_RULES_KEEPING_WINDOWS : STREAM_RULES);
  let next = 1;
  const relation = body.into?.rel;
  const name = relation?.schemaname === undefined ? (relation?.relname ?? '') : `${relation.schemaname}.${relation.relname ?? ''}`;
  const emitOnWindowClose = (body.query as { SelectStmt?: { oxbowEmitOnWindowClose?: boolean } }).SelectStmt?.oxbowEmitOnWindowClose === true;
  const catalog = binder.planner.catalog;
  const indexesOf = catalog.indexesOf === undefined ? {} : { indexesOf: (relationId: number) => catalog.indexesOf!(relationId) };
  const stream = incrementalize(bound.plan, { relationId: 0, name, allocateStateTableId: () => next++, ...(planVersion === undefined ? {} : { planVersion }), ...indexesOf, ...(emitOnWindowClose ? { emitOnWindowClose } : {}) });
  return explainStreamPlan(shareSubplans(stream), binder.planner.streamParallelism ?? 1, binder.planner.keyedSourceWorkers === true, binder.planner.streamCores ?? Number.POSITIVE_INFINITY);
}
