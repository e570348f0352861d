// Nested loop join: for conditions without equality keys and for LATERAL (the right input re-run
// per left row, with the left row pushed as the enclosing row). The non-lateral right input is
// materialized once.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { BATCH_SIZE, PAUSE, checkDeadline, sliceUsed } from './runtime.js';
import { compilePredicate } from '../expr/expression.js';
import { collect, gather, runPlan } from './operator.js';
import { concatRows, nullRow } from './join-output.js';

export function* nestedLoopJoin(plan: PlanOf<'NestedLoopJoin'>, runtime: Runtime): Batches {
  const condition = plan.condition === undefined ? undefined : compilePredicate(plan.condition);
  const joinType = plan.joinType;
  const fixedRight = plan.lateral ? undefined : yield* gather(plan.right, runtime);
  const matchedRight = fixedRight !== undefined && (joinType === 'right' || joinType === 'full') ? new Uint8Array(fixedRight.length) : undefined;
  const rightPadding = nullRow(plan.right.columns.length);
  let compared = 0;
  for (const batch of runPlan(plan.left, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    let out: Row[] = [];
    for (const left of batch) {
      let rightRows: Row[];
      if (fixedRight !== undefined) rightRows = fixedRight;
      else {
        runtime.outer.push(left);
        try {
          rightRows = collect(plan.right, runtime);
        } finally {
          runtime.outer.pop();
        }
      }
      let matched = false;
      for (let i = 0; i < rightRows.length; i++) {
        const joined = concatRows(left, rightRows[i]!);
        if (condition !== undefined && !condition(joined, runtime)) continue;
        matched = true;
        if (matchedRight !== undefined) matchedRight[i] = 1;
        if (joinType === 'semi' || joinType === 'anti') break;
        out.push(joined);
      }
      if (joinType === 'semi' && matched) out.push(left);
      else if (joinType === 'anti' && !matched) out.push(left);
      else if (!matched && (joinType === 'left' || joinType === 'full')) out.push(concatRows(left, rightPadding));
      if (out.length >= BATCH_SIZE) {
        yield out;
        out = [];
      }
      // A cross join compares |left| × |right| pairs: look at the clock every ~64k of them.
      compared += rightRows.length + 1;
      if (compared >= 65_536) {
        compared = 0;
        if (sliceUsed(runtime)) {
          checkDeadline(runtime);
          yield PAUSE;
        }
      }
    }
    checkDeadline(runtime);
    if (out.length > 0) yield out;
  }
  if (matchedRight !== undefined && fixedRight !== undefined) {
    const leftPadding = nullRow(plan.left.columns.length);
    const out: Row[] = [];
    for (let i = 0; i < fixedRight.length; i++) if (!matchedRight[i]) out.push(concatRows(leftPadding, fixedRight[i]!));
    if (out.length > 0) yield out;
  }
}
