// Rule grouping_sets_as_expand (materialized views only, STREAM_RULES in optimizer.ts): an
// Aggregate with GROUPING SETS / ROLLUP / CUBE (or GROUPING() calls) becomes RisingWave's plan, an
// expand below one plain aggregate:
//
//   Project  keys, aggregates, GROUPING() bits (CASE set_id WHEN j THEN bits of set j)
//     Aggregate  group by masked keys..., set_id
//       Project  input columns, masked keys (CASE WHEN set_id IN (sets holding key k) THEN key k END), set_id
//         LATERAL JOIN input, generate_series(0, sets - 1) AS set_id      -- the expand: one copy per set
//
// The aggregate keeps one group per (set, keys), retractable like any other, so deletes and updates
// retract from every set's group; the input is read once. An empty grouping set `()` keeps its one
// row over no input (PostgreSQL's), which a group keyed by set_id alone would not: each empty set
// is a global aggregate of its own, under a UNION ALL with the expanded one. Batch queries keep the
// executor's one-pass grouping-sets aggregate (executor/batch/aggregate.ts).

import type { Expression } from '../expression.js';
import type { OutputColumn, Plan, PlanOf } from '../plan.js';
import { transformPlan } from '../walk.js';
import { type as scalar } from '../../sql/types.js';
import { resolveOperator } from '../../sql/functions.js';

const INT4 = scalar('int4');
const BOOL = scalar('bool');
const SET_ID: OutputColumn = { name: 'grouping_set', type: INT4, tableOid: 0, columnNumber: 0 };

function int(value: number): Expression {
  return { kind: 'Literal', value, type: INT4 };
}

/** `set_id = j` for each j, OR'ed. */
function setIdIn(setId: Expression, ids: readonly number[]): Expression {
  const equals = resolveOperator('=', INT4, INT4);
  if (equals === undefined) throw new Error('oxbow internal assertion: no int4 = operator');
  const tests = ids.map((id): Expression => ({ kind: 'Call', fn: equals.fn, args: [setId, int(id)], type: BOOL, operator: '=' }));
  return tests.length === 1 ? tests[0]! : { kind: 'Or', args: tests, type: BOOL };
}

/** GROUPING(args) for one set: 1 where the argument is not in the set, first argument most significant. */
function groupingBits(args: readonly number[], set: readonly number[]): number {
  return args.reduce((bits, k) => (bits << 1) | (set.includes(k) ? 0 : 1), 0);
}

/** The non-empty sets, expanded below one aggregate keyed by (masked keys, set id). */
function expanded(plan: PlanOf<'Aggregate'>, sets: readonly (readonly number[])[]): Plan {
  const input = plan.input;
  const width = input.columns.length;
  const keyCount = plan.groupKeys.length;
  const series: Plan = { kind: 'TableFunction', name: 'generate_series', args: [int(0), int(sets.length - 1)], withOrdinality: false, columns: [SET_ID] };
  const join: Plan = { kind: 'Join', joinType: 'inner', left: input, right: series, lateral: true, columns: [...input.columns, SET_ID] };
  const setId: Expression = { kind: 'Column', index: width, type: INT4 };
  const masked = plan.groupKeys.map((key, k): Expression => {
    const holding = sets.flatMap((set, id) => (set.includes(k) ? [id] : []));
    if (holding.length === sets.length) return key;
    const type = plan.columns[k]!.type;
    const nothing: Expression = { kind: 'Literal', value: null, type };
    return holding.length === 0 ? nothing : { kind: 'Case', whens: [{ condition: setIdIn(setId, holding), result: key }], otherwise: nothing, type };
  });
  const expand: Plan = {
    kind: 'Project',
    input: join,
    expressions: [...input.columns.map((c, index): Expression => ({ kind: 'Column', index, type: c.type })), ...masked, setId],
    columns: [...input.columns, ...plan.columns.slice(0, keyCount), SET_ID],
  };
  const aggregateColumns = plan.columns.slice(keyCount, keyCount + plan.aggregates.length);
  const aggregate: Plan = {
    kind: 'Aggregate',
    input: expand,
    groupKeys: [...plan.groupKeys.map((_, k): Expression => ({ kind: 'Column', index: width + k, type: plan.columns[k]!.type })), { kind: 'Column', index: width + keyCount, type: INT4 }],
    aggregates: plan.aggregates,
    columns: [...plan.columns.slice(0, keyCount), SET_ID, ...aggregateColumns],
  };
  const groupedSetId: Expression = { kind: 'Column', index: keyCount, type: INT4 };
  const expressions: Expression[] = plan.groupKeys.map((_, k): Expression => ({ kind: 'Column', index: k, type: plan.columns[k]!.type }));
  aggregateColumns.forEach((c, i) => expressions.push({ kind: 'Column', index: keyCount + 1 + i, type: c.type }));
  for (const args of plan.groupingCalls ?? []) {
    const bits = sets.map((set) => groupingBits(args, set));
    if (bits.every((b) => b === bits[0])) expressions.push(int(bits[0]!));
    else expressions.push({ kind: 'Case', whens: bits.map((b, id) => ({ condition: setIdIn(groupedSetId, [id]), result: int(b) })), otherwise: { kind: 'Literal', value: null, type: INT4 }, type: INT4 });
  }
  return { kind: 'Project', input: aggregate, expressions, columns: plan.columns };
}

/** The empty set: a global aggregate (one row, even over no input), keys NULL. */
function global(plan: PlanOf<'Aggregate'>): Plan {
  const keyCount = plan.groupKeys.length;
  const aggregateColumns = plan.columns.slice(keyCount, keyCount + plan.aggregates.length);
  const aggregate: Plan = { kind: 'Aggregate', input: plan.input, groupKeys: [], aggregates: plan.aggregates, columns: aggregateColumns };
  const expressions: Expression[] = plan.groupKeys.map((_, k): Expression => ({ kind: 'Literal', value: null, type: plan.columns[k]!.type }));
  aggregateColumns.forEach((c, i) => expressions.push({ kind: 'Column', index: i, type: c.type }));
  for (const args of plan.groupingCalls ?? []) expressions.push(int(groupingBits(args, [])));
  return { kind: 'Project', input: aggregate, expressions, columns: plan.columns };
}

export function groupingSetsAsExpand(plan: Plan): Plan {
  return transformPlan(plan, (node) => {
    if (node.kind !== 'Aggregate' || (node.groupingSets === undefined && node.groupingCalls === undefined)) return node;
    const sets = node.groupingSets ?? [node.groupKeys.map((_, k) => k)];
    const keyed = sets.filter((set) => set.length > 0);
    const branches: Plan[] = [];
    if (keyed.length > 0) branches.push(expanded(node, keyed));
    for (const set of sets) if (set.length === 0) branches.push(global(node));
    return branches.reduce((left, right): Plan => ({ kind: 'SetOperation', operation: 'union', all: true, left, right, columns: node.columns }));
  });
}
