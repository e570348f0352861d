// A parsed statement through the stages (stages.ts) to a planned statement; EXPLAIN prints any
// stage, EXPLAIN CREATE MATERIALIZED VIEW the streaming plan (stream/explain-create.ts), EXPLAIN
// ANALYZE hands the physical plan to the executor to run with counters.

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../sql/errors.js';
import { type as scalar } from '../sql/types.js';
import type { ParsedStatement } from '../sql/parser/ast.js';
import type { PlannedColumn, PlannedStatement, PlannerContext } from './context.js';
import type { OutputColumn } from './plan.js';
import { BinderContext } from './binder/context.js';
import { explainPlan } from './explain.js';
import { explainMaterializedView } from './stream/explain-create.js';
import { planToStage, type Stage } from './stages.js';

function explainOptions(options: readonly Node[] | undefined): { stage: Stage; verbose: boolean; analyze: boolean } {
  let stage: Stage = 'physical';
  let verbose = false;
  let analyze = false;
  for (const option of options ?? []) {
    const element = (option as any).DefElem;
    const name = String(element.defname).toLowerCase();
    const value = element.arg === undefined ? true : (element.arg.String?.sval ?? element.arg.Boolean?.boolval ?? element.arg.A_Const?.boolval?.boolval ?? 'true');
    const on = value === true || value === 'true' || value === 'on' || value === '1';
    switch (name) {
      case 'logical':
      case 'optimized':
      case 'physical':
        if (on) stage = name;
        break;
      case 'verbose':
        verbose = on;
        break;
      case 'costs':
      case 'format':
      case 'summary':
      case 'timing':
        break;
      case 'analyze':
        analyze = on;
        break;
      default:
        throw new SqlError(SqlState.syntaxError, `unrecognized EXPLAIN option "${name}"`);
    }
  }
  return { stage, verbose, analyze };
}

function plannedColumns(columns: readonly OutputColumn[] | null): PlannedColumn[] | null {
  return columns === null ? null : columns.map((c) => ({ name: c.name, type: c.type, tableOid: c.tableOid, columnNumber: c.columnNumber }));
}

export function planStatementStages(statement: ParsedStatement, context: PlannerContext): PlannedStatement {
  const node = statement.node as Node;
  const binder = new BinderContext(context);
  const tag = Object.keys(node)[0];
  if (tag === 'ExplainStmt') {
    const explain = (node as any).ExplainStmt;
    const { stage, verbose, analyze } = explainOptions(explain.options);
    if (analyze) return planExplainAnalyze(explain.query, binder, verbose);
    // EXPLAIN CREATE MATERIALIZED VIEW prints the streaming plan (planner/stream/).
    const lines = explainMaterializedView(explain.query, binder) ?? explainPlan(planToStage(explain.query, binder, stage).plan, { verbose });
    const text = scalar('text');
    const columns: OutputColumn[] = [{ name: 'QUERY PLAN', type: text, tableOid: 0, columnNumber: 0 }];
    return {
      kind: 'explain',
      columns: plannedColumns(columns),
      parameterTypes: binder.finalParameterTypes(),
      plan: { kind: 'Values', rows: lines.map((line) => [{ kind: 'Literal', value: line, type: text }]), columns },
    };
  }
  const bound = planToStage(node, binder, 'physical');
  return {
    kind: bound.kind,
    columns: plannedColumns(bound.columns),
    parameterTypes: binder.finalParameterTypes(),
    plan: bound.plan,
    ...(bound.targetRelation === undefined ? {} : { targetRelation: bound.targetRelation }),
  };
}

/**
 * EXPLAIN ANALYZE of a query: the executor runs the physical plan with counters per node (rows
 * and time) and prints the plan with them. Only queries: PostgreSQL would run the INSERT, UPDATE
 * or DELETE for real, which oxbow does not do under EXPLAIN.
 */
function planExplainAnalyze(query: Node, binder: BinderContext, verbose: boolean): PlannedStatement {
  const tag = Object.keys(query)[0];
  if (tag !== 'SelectStmt') {
    const what = tag === 'CreateTableAsStmt' ? 'CREATE MATERIALIZED VIEW (use EXPLAIN ANALYZE view_name on the running view)' : tag === 'InsertStmt' ? 'INSERT' : tag === 'UpdateStmt' ? 'UPDATE' : tag === 'DeleteStmt' ? 'DELETE' : 'this statement';
    throw new SqlError(SqlState.featureNotSupported, `EXPLAIN ANALYZE of ${what} is not supported`);
  }
  const bound = planToStage(query, binder, 'physical');
  const text = scalar('text');
  const columns: OutputColumn[] = [{ name: 'QUERY PLAN', type: text, tableOid: 0, columnNumber: 0 }];
  return {
    kind: 'explain',
    columns: plannedColumns(columns),
    parameterTypes: binder.finalParameterTypes(),
    plan: { kind: 'Values', rows: [], columns },
    analyze: { plan: bound.plan, verbose },
  };
}
