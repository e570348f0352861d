// The planner's named stages, in order: bind (AST to logical plan), optimize (named rules),
// physical (join algorithms for the batch executor). EXPLAIN prints any of them:
//   EXPLAIN stmt                 the physical plan
//   EXPLAIN (LOGICAL) stmt       the bound plan before any rule
//   EXPLAIN (OPTIMIZED) stmt     after the optimizer rules
//   EXPLAIN (PHYSICAL) stmt      same as plain EXPLAIN
//   EXPLAIN (VERBOSE) stmt       adds output column names and types to each node

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../sql/errors.js';
import type { PlannedStatement } from './context.js';
import type { OutputColumn, Plan } from './plan.js';
import { BinderContext } from './binder/context.js';
import { SelectBinder } from './binder/select.js';
import { DmlBinder } from './binder/dml.js';
import { optimize, RULES, type Rule } from './optimizer.js';
import { toPhysical } from './physical.js';
import { markParallelAggregates } from './parallel-aggregate.js';

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
  const physical = toPhysical(optimized);
  const workersFor = binder.planner.parallelScanWorkers;
  if (bound.kind !== 'query' || workersFor === undefined) return { ...bound, plan: physical };
  return { ...bound, plan: markParallelAggregates(physical, (relation) => workersFor.call(binder.planner, relation)) };
}
