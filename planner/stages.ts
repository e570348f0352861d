// The planner's named stages, in order: bind (AST to logical plan), optimize (named rules),
// physical (join algorithms for the batch executor). EXPLAIN prints any of them:
//   EXPLAIN stmt                 the physical plan
//   EXPLAIN (LOGICAL) stmt       the bound plan before any rule
//   EXPLAIN (OPTIMIZED) stmt     after the optimizer rules
//   EXPLAIN (PHYSICAL) stmt      same as plain EXPLAIN
//   EXPLAIN (VERBOSE) stmt       adds output column names and types to each node

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../sql/errors.js';
import { type as scalar } from '../sql/types.js';
import type { ParsedStatement } from '../sql/parser/ast.js';
import type { PlannedColumn, PlannedStatement, PlannerContext } from './index.js';
import type { OutputColumn, Plan } from './plan.js';
import { BinderContext } from './binder/context.js';
import { SelectBinder } from './binder/select.js';
import { DmlBinder } from './binder/dml.js';
import { optimize, RULES, type Rule } from './optimizer.js';
import { toPhysical } from './physical.js';
import { explainPlan } from './explain.js';
import { explainMaterializedView } from './stream/explain-create.js';

export type Stage = 'logical' | 'optimized' | 'physical';

interface Bound {
  readonly kind: PlannedStatement['kind'];
  readonly plan: Plan;
  readonly columns: readonly OutputColumn[] | null;
  readonly targetRelation?: PlannedStatement['targetRelation'];
}

function bind(node: Node, binder: BinderContext): Bound {
  const select = new SelectBinder(binder);
  const dml = new DmlBinder(binder, select);
  const [tag, body] = Object.entries(node)[0] as [string, any];
  switch (tag) {
    case 'SelectStmt': {
      const plan = select.bindQuery(node, undefined);
      return { kind: 'query', plan, columns: plan.columns };
    }
    case 'InsertStmt': {
      const bound = dml.bindInsert(body);
      return { kind: 'insert', plan: bound.plan, columns: bound.columns, targetRelation: bound.relation };
    }
    case 'UpdateStmt': {
      const bound = dml.bindUpdate(body);
      return { kind: 'update', plan: bound.plan, columns: bound.columns, targetRelation: bound.relation };
    }
    case 'DeleteStmt': {
      const bound = dml.bindDelete(body);
      return { kind: 'delete', plan: bound.plan, columns: bound.columns, targetRelation: bound.relation };
    }
    default:
      throw new SqlError(SqlState.featureNotSupported, `${tag} is not a query the planner handles`);
  }
}

/** Runs the stages up to `stage` (`rules`: the optimizer's, or the streaming list, optimizer.ts). */
export function planToStage(node: Node, binder: BinderContext, stage: Stage, rules: readonly Rule[] = RULES): Bound {
  const bound = bind(node, binder);
  if (stage === 'logical') return bound;
  const optimized = optimize(bound.plan, rules, binder.planner.catalog);
  if (stage === 'optimized') return { ...bound, plan: optimized };
  return { ...bound, plan: toPhysical(optimized) };
}

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
