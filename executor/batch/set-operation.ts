// UNION / INTERSECT / EXCEPT [ALL] with PostgreSQL's multiset rules: UNION ALL concatenates;
// INTERSECT ALL keeps min(m, n) copies, EXCEPT ALL max(m - n, 0); without ALL, each distinct row
// once. Rows compare with NULLs equal.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { runPlan } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';

export function* setOperation(plan: PlanOf<'SetOperation'>, runtime: Runtime): Batches {
  const types = plan.columns.map((c) => c.type);
  if (plan.operation === 'union' && plan.all) {
    yield* runPlan(plan.left, runtime);
    yield* runPlan(plan.right, runtime);
    return;
  }
  // Counts per distinct row: [left count, right count].
  const counts = new KeyMap<[number, number]>(types);
  const add = (side: 0 | 1, row: Row) => {
    const index = counts.indexOf(row);
    if (index >= 0) counts.values[index]![side]++;
    else counts.add(row, side === 0 ? [1, 0] : [0, 1]);
  };
  for (const side of [0, 1] as const) {
    for (const batch of runPlan(side === 0 ? plan.left : plan.right, runtime)) {
      if (batch.length === 0) yield batch;
      for (const row of batch) add(side, row);
    }
  }
  let out: Row[] = [];
  for (let i = 0; i < counts.size; i++) {
    const [left, right] = counts.values[i]!;
    let copies: number;
    if (plan.operation === 'union') copies = 1;
    else if (plan.operation === 'intersect') copies = plan.all ? Math.min(left, right) : left > 0 && right > 0 ? 1 : 0;
    else copies = plan.all ? Math.max(left - right, 0) : left > 0 && right === 0 ? 1 : 0;
    for (let c = 0; c < copies; c++) out.push(c === 0 ? counts.keys[i]! : [...counts.keys[i]!]);
    if (out.length >= BATCH_SIZE) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}
