// Rule projection_pushdown: each node asks its inputs only for the columns it needs, so scans
// read narrower rows and projections drop unused expressions. Works top-down with a "required
// columns" set; a node whose columns move renumbers the expressions above it (including
// correlated subqueries' references to its row). Nodes whose semantics depend on every column
// (DISTINCT, set operations, DML) or that are not worth the bookkeeping (LATERAL left sides,
// VALUES, table functions) keep all of their input. A window keeps the input columns its calls read
// and those above it need: a streaming over-window stores its input rows, so each column it
// carries unread costs state and hashing per row.

import type { Expression } from '../expression.js';
import type { Plan } from '../plan.js';
import { columnsNeeded, mapPlanExpressions, mapPlanInputs, mapSubqueryPlans, remapColumns } from '../walk.js';

interface Pruned {
  readonly plan: Plan;
  /** Old output position to new position (-1: dropped). */
  readonly map: readonly number[];
}

function identity(width: number): number[] {
  return Array.from({ length: width }, (_, i) => i);
}

function needed(expressions: readonly Expression[], into: Set<number> = new Set()): Set<number> {
  for (const e of expressions) columnsNeeded(e, into);
  return into;
}

/** Prunes subquery plans inside a node's expressions (each subquery keeps all its outputs). */
function pruneSubqueries(plan: Plan): Plan {
  return mapPlanExpressions(plan, (e) => mapSubqueryPlans(e, (sub) => prune(sub, allOf(sub)).plan));
}

function allOf(plan: Plan): Set<number> {
  return new Set(identity(plan.columns.length));
}

/** Keeps every column of the node and its inputs' outputs (recursing below). */
function keepAll(plan: Plan): Pruned {
  const withInputs = mapPlanInputs(plan, (input) => prune(input, allOf(input)).plan);
  return { plan: pruneSubqueries(withInputs), map: identity(plan.columns.length) };
}

function prune(plan: Plan, required: ReadonlySet<number>): Pruned {
  switch (plan.kind) {
    case 'Scan': {
      const keep = needed(plan.filter ? [plan.filter] : [], new Set(required));
      if (keep.size === plan.columns.length) return { plan: pruneSubqueries(plan), map: identity(plan.columns.length) };
      const positions = [...keep].sort((a, b) => a - b);
      const map = new Array<number>(plan.columns.length).fill(-1);
      positions.forEach((p, i) => (map[p] = i));
      const pruned: Plan = {
        ...plan,
        projection: positions.map((p) => plan.projection[p]!),
        columns: positions.map((p) => plan.columns[p]!),
        ...(plan.filter ? { filter: remapColumns(plan.filter, map) } : {}),
      };
      return { plan: pruneSubqueries(pruned), map };
    }
    case 'Project': {
      const kept = [...required].sort((a, b) => a - b);
      const expressions = kept.map((i) => plan.expressions[i]!);
      const child = prune(plan.input, needed(expressions));
      const map = new Array<number>(plan.columns.length).fill(-1);
      kept.forEach((p, i) => (map[p] = i));
      let input = child.plan;
      let mapped = expressions.map((e) => remapColumns(e, child.map));
      // A projection over a pure renaming projection (join ordering leaves one): compose them.
      if (input.kind === 'Project' && input.expressions.every((e) => e.kind === 'Column')) {
        const inner = input.expressions;
        mapped = mapped.map((e) => remapColumns(e, inner.map((c) => (c as { index: number }).index)));
        input = input.input;
      }
      const pruned: Plan = { kind: 'Project', input, expressions: mapped, columns: kept.map((i) => plan.columns[i]!) };
      return { plan: pruneSubqueries(pruned), map };
    }
    case 'Filter': {
      const child = prune(plan.input, needed([plan.predicate], new Set(required)));
      const pruned: Plan = { ...plan, input: child.plan, predicate: remapColumns(plan.predicate, child.map), columns: child.plan.columns };
      return { plan: pruneSubqueries(pruned), map: child.map };
    }
    case 'Sort': {
      const child = prune(plan.input, needed(plan.keys.map((k) => k.expression), new Set(required)));
      const pruned: Plan = { ...plan, input: child.plan, keys: plan.keys.map((k) => ({ ...k, expression: remapColumns(k.expression, child.map) })), columns: child.plan.columns };
      return { plan: pruneSubqueries(pruned), map: child.map };
    }
    case 'Limit': {
      const child = prune(plan.input, required);
      return { plan: pruneSubqueries({ ...plan, input: child.plan, columns: child.plan.columns }), map: child.map };
    }
    case 'Aggregate': {
      const inputs = needed([...plan.groupKeys, ...plan.aggregates.flatMap((a) => [...a.args, ...(a.filter ? [a.filter] : []), ...(a.orderBy ?? []).map((k) => k.expression)])]);
      const child = prune(plan.input, inputs);
      const remap = (e: Expression) => remapColumns(e, child.map);
      const pruned: Plan = {
        ...plan,
        input: child.plan,
        groupKeys: plan.groupKeys.map(remap),
        aggregates: plan.aggregates.map((a) => ({
          ...a,
          args: a.args.map(remap),
          ...(a.filter ? { filter: remap(a.filter) } : {}),
          ...(a.orderBy ? { orderBy: a.orderBy.map((k) => ({ ...k, expression: remap(k.expression) })) } : {}),
        })),
      };
      return { plan: pruneSubqueries(pruned), map: identity(plan.columns.length) };
    }
    case 'Window': {
      if (!pruneWindows) return keepAll(plan);
      // Output: the input's columns, then one per call.
      const width = plan.input.columns.length;
      const inputs = needed(
        plan.calls.flatMap((c) => [...c.args, ...c.partitionBy, ...c.orderBy.map((k) => k.expression), ...(c.filter ? [c.filter] : [])]),
        new Set([...required].filter((i) => i < width)),
      );
      const child = prune(plan.input, inputs);
      if (child.plan.columns.length === width) return keepAll(plan);
      const remap = (e: Expression) => remapColumns(e, child.map);
      const newWidth = child.plan.columns.length;
      const map = [...child.map, ...plan.calls.map((_, j) => newWidth + j)];
      const pruned: Plan = {
        ...plan,
        input: child.plan,
        calls: plan.calls.map((c) => ({
          ...c,
          args: c.args.map(remap),
          partitionBy: c.partitionBy.map(remap),
          orderBy: c.orderBy.map((k) => ({ ...k, expression: remap(k.expression) })),
          ...(c.filter ? { filter: remap(c.filter) } : {}),
        })),
        columns: [...child.plan.columns, ...plan.columns.slice(width)],
      };
      return { plan: pruneSubqueries(pruned), map };
    }
    case 'Join': {
      if (plan.lateral) return keepAll(plan);
      const leftWidth = plan.left.columns.length;
      const all = needed(plan.condition ? [plan.condition] : [], new Set(required));
      if (plan.joinType === 'semi' || plan.joinType === 'anti') {
        // Output: the left row only; the right side is read by the condition alone.
        const left = prune(plan.left, new Set([...all].filter((i) => i < leftWidth)));
        const right = prune(plan.right, new Set([...all].filter((i) => i >= leftWidth).map((i) => i - leftWidth)));
        const conditionMap = [...left.map, ...right.map.map((i) => (i < 0 ? -1 : i + left.plan.columns.length))];
        const pruned: Plan = {
          ...plan,
          left: left.plan,
          right: right.plan,
          ...(plan.condition ? { condition: remapColumns(plan.condition, conditionMap) } : {}),
          columns: left.plan.columns,
        };
        return { plan: pruneSubqueries(pruned), map: left.map };
      }
      const leftRequired = new Set([...all].filter((i) => i < leftWidth));
      const rightRequired = new Set([...all].filter((i) => i >= leftWidth).map((i) => i - leftWidth));
      const left = prune(plan.left, leftRequired);
      const right = prune(plan.right, rightRequired);
      const newLeftWidth = left.plan.columns.length;
      const map = [...left.map, ...right.map.map((i) => (i < 0 ? -1 : i + newLeftWidth))];
      const pruned: Plan = {
        ...plan,
        left: left.plan,
        right: right.plan,
        ...(plan.condition ? { condition: remapColumns(plan.condition, map) } : {}),
        columns: [...left.plan.columns, ...right.plan.columns],
      };
      return { plan: pruneSubqueries(pruned), map };
    }
    default:
      return keepAll(plan);
  }
}

/** Whether a window's input is pruned (pruneProjectionsKeepingWindows turns it off for one call). */
let pruneWindows = true;

export function pruneProjections(plan: Plan): Plan {
  return prune(plan, allOf(plan)).plan;
}

/**
 * The rule as views of streaming plan version 5 and before were planned: a window keeps all of its
 * input, which their over-windows' state rows hold (planner/stream/stream-plan.ts).
 */
export function pruneProjectionsKeepingWindows(plan: Plan): Plan {
  pruneWindows = false;
  try {
    return prune(plan, allOf(plan)).plan;
  } finally {
    pruneWindows = true;
  }
}
