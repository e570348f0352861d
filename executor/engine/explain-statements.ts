// EXPLAIN statements the session runs itself (the planner plans plain EXPLAIN of a query):
// EXPLAIN ANALYZE [MATERIALIZED VIEW] name (a running view's or sink AS query's operators with their counters),
// EXPLAIN [MATERIALIZED VIEW] name (a view's plan, as EXPLAIN of its definition prints it) and
// EXPLAIN ANALYZE SELECT ... (the query run with counters on every plan node). The lines are
// metrics/explain-analyze.ts's.

import type { OxbowExplainAnalyzeView } from '../../sql/parser/ast.js';
import { parse } from '../../sql/parser/index.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { EvalContext } from '../../sql/functions.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import { planStatement, type PlannedStatement, type PlannerContext } from '../../planner/index.js';
import { executePlanned } from '../batch/index.js';
import type { StoreTableAccess } from '../batch/table-access.js';
import { quoteIdentifier } from '../catalog/object-names.js';
import { expandViews } from '../catalog/view-expansion.js';
import { explainAnalyzedDataflow, explainAnalyzedPlan, profilePlan } from '../metrics/explain-analyze.js';
import type { ExecuteResult } from './engine.js';
import type { EngineCore } from './engine-core.js';
import { QUERY_PLAN_COLUMNS, rowsResult } from './statement-kinds.js';

/** What the session hands an EXPLAIN statement. */
export interface ExplainHost {
  readonly core: EngineCore;
  searchPath(): string[];
  plannerContext(parameterTypes: readonly (DataType | undefined)[]): PlannerContext;
  tableAccess(): StoreTableAccess;
  evalContext(): EvalContext;
}

/** EXPLAIN [ANALYZE] [MATERIALIZED VIEW] name: its lines as a QUERY PLAN result. */
export function explainViewResult(node: OxbowExplainAnalyzeView, location: number, host: ExplainHost): ExecuteResult {
  const lines = explainAnalyzeView(node, location, host);
  return rowsResult(QUERY_PLAN_COLUMNS, lines.map((line) => [line]), () => 'EXPLAIN');
}

/** EXPLAIN ANALYZE [MATERIALIZED VIEW] name: the running view's operators with their counters. */
function explainAnalyzeView(node: OxbowExplainAnalyzeView, location: number, host: ExplainHost): string[] {
  const relation = node.relation;
  const catalog = host.core.catalog.snapshot;
  const found = catalog.resolveRelation(relation.schemaname, relation.relname!, host.searchPath());
  const name = relation.schemaname === undefined ? relation.relname! : `${relation.schemaname}.${relation.relname!}`;
  const position = (relation.location ?? 0) + location + 1;
  if (found === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position });
  if (node.analyze === false) return explainExistingView(found, name, position, host);
  // A sink AS a query runs a dataflow of its own, as a materialized view does.
  const sinkAsQuery = found.kind === 'sink' && found.stream !== undefined;
  if (found.kind !== 'materialized_view' && !sinkAsQuery) throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a materialized view`, { position, hint: 'EXPLAIN ANALYZE of a query is EXPLAIN ANALYZE SELECT ...' });
  const dataflow = host.core.streams.all.find((candidate) => candidate.viewId === found.id);
  if (dataflow === undefined) throw new SqlError(SqlState.objectNotInPrerequisiteState, `${sinkAsQuery ? 'sink' : 'materialized view'} "${name}" has no running dataflow`);
  return explainAnalyzedDataflow(dataflow);
}

/**
 * EXPLAIN [MATERIALIZED VIEW] name: a materialized view's streaming plan, as EXPLAIN CREATE
 * MATERIALIZED VIEW prints it for its definition; a view's query plan.
 */
function explainExistingView(view: RelationDef, name: string, position: number, host: ExplainHost): string[] {
  if ((view.kind !== 'materialized_view' && view.kind !== 'view') || view.definition === undefined) {
    throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a view or materialized view`, { position, hint: 'EXPLAIN of a query is EXPLAIN SELECT ...' });
  }
  const qualified = host.searchPath().includes(view.schema) ? quoteIdentifier(view.name) : `${quoteIdentifier(view.schema)}.${quoteIdentifier(view.name)}`;
  const text = view.kind === 'materialized_view' ? `EXPLAIN CREATE MATERIALIZED VIEW ${qualified} AS ${view.definition}` : `EXPLAIN ${view.definition}`;
  const [parsed] = parse(text);
  // A materialized view runs the plan of the version it was created with (create-materialized-view.ts).
  const context = view.kind === 'materialized_view' && view.stream !== undefined ? { ...host.plannerContext([]), streamPlanVersion: view.stream.planVersion ?? 1 } : host.plannerContext([]);
  const planned = planStatement(expandViews(parsed!, host.core.catalog, host.searchPath()), context);
  if (planned.plan.kind !== 'Values') throw new SqlError(SqlState.internalError, 'EXPLAIN of a view did not plan to its lines');
  return planned.plan.rows.map((row) => String((row[0] as { value?: unknown }).value ?? ''));
}

/** EXPLAIN ANALYZE SELECT ...: runs the query with counters on every plan node, returns the annotated plan. */
export async function explainAnalyzeQuery(planned: PlannedStatement, parameters: readonly Value[], host: ExplainHost, signal: AbortSignal): Promise<ExecuteResult> {
  const analyze = planned.analyze!;
  const profile = profilePlan(analyze.plan);
  const started = performance.now();
  const result = await executePlanned({ kind: 'query', columns: null, parameterTypes: planned.parameterTypes, plan: analyze.plan }, {
    tables: host.tableAccess(),
    parameters,
    evalContext: host.evalContext(),
    signal,
    profiler: profile,
  });
  const resultRows = result.rows.length;
  const lines = explainAnalyzedPlan(analyze.plan, profile.stats, analyze.verbose, performance.now() - started, resultRows);
  return rowsResult(planned.columns ?? QUERY_PLAN_COLUMNS, lines.map((line) => [line]), () => 'EXPLAIN');
}
