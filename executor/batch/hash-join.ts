// Hash join: builds a hash table over the right input's keys, probes it with each left batch.
// Equality keys never match on NULL (IS NOT DISTINCT FROM keys do); the residual condition is checked on the joined row. Right
// and full joins remember which right rows matched and emit the others NULL-padded at the end.

import type { Row, Value } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { BATCH_SIZE, PAUSE, checkDeadline, sliceUsed } from './runtime.js';
import { compile, compilePredicate } from '../expr/expression.js';
import { gather, runPlan } from './operator.js';
import { HashIndex, hashKey, keysEqual } from '../expr/row-hash.js';
import { concatRows, nullRow } from './join-output.js';

export function* hashJoin(plan: PlanOf<'HashJoin'>, runtime: Runtime): Batches {
  const types = plan.leftKeys.map((k) => k.type);
  const leftKeyEvaluators = plan.leftKeys.map(compile);
  const rightKeyEvaluators = plan.rightKeys.map(compile);
  const residual = plan.residual === undefined ? undefined : compilePredicate(plan.residual);
  // A NULL in a plain key never matches; in an IS NOT DISTINCT FROM key it matches NULL.
  const nullSafe = plan.nullSafe ?? plan.leftKeys.map(() => false);
  const unmatchable = (key: readonly Value[]): boolean => {
    for (let i = 0; i < key.length; i++) if (key[i] === null && !nullSafe[i]) return true;
    return false;
  };
  const rightRows = yield* gather(plan.right, runtime);
  // Index positions are the right rows' positions among those with matchable keys.
  const rightKeys: Value[][] = [];
  const rowOf: number[] = [];
  const table = new HashIndex(rightRows.length);
  for (let i = 0; i < rightRows.length; i++) {
    const key = rightKeyEvaluators.map((evaluate) => evaluate(rightRows[i]!, runtime));
    if (unmatchable(key)) continue;
    table.add(hashKey(key, types));
    rightKeys.push(key);
    rowOf.push(i);
    if ((i & 1023) === 1023 && sliceUsed(runtime)) {
      checkDeadline(runtime);
      yield PAUSE;
    }
  }
  const joinType = plan.joinType;
  const matchedRight = joinType === 'right' || joinType === 'full' ? new Uint8Array(rightRows.length) : undefined;
  const leftWidth = plan.left.columns.length;
  const rightWidth = plan.right.columns.length;
  const rightPadding = nullRow(rightWidth);
  const keyCount = leftKeyEvaluators.length;
  const key: Value[] = new Array(keyCount);
  for (const batch of runPlan(plan.left, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    const out: Row[] = [];
    for (const left of batch) {
      for (let k = 0; k < keyCount; k++) key[k] = leftKeyEvaluators[k]!(left, runtime);
      let matched = false;
      if (!unmatchable(key)) {
        const hash = hashKey(key, types);
        for (let position = table.first(hash); position >= 0; position = table.following(position, hash)) {
          if (!keysEqual(key, rightKeys[position]!, types)) continue;
          const index = rowOf[position]!;
          const right = rightRows[index]!;
          const joined = concatRows(left, right);
          if (residual !== undefined && !residual(joined, runtime)) continue;
          matched = true;
          if (matchedRight !== undefined) matchedRight[index] = 1;
          if (joinType === 'semi') break;
          if (joinType !== 'anti') out.push(joined);
        }
      }
      if (joinType === 'semi' && matched) out.push(left);
      else if (joinType === 'anti' && !matched) out.push(left);
      else if (!matched && (joinType === 'left' || joinType === 'full')) out.push(concatRows(left, rightPadding));
    }
    if (out.length > 0) yield out;
    if (sliceUsed(runtime)) {
      checkDeadline(runtime);
      yield PAUSE;
    }
  }
  if (matchedRight !== undefined) {
    const leftPadding = nullRow(leftWidth);
    let out: Row[] = [];
    for (let i = 0; i < rightRows.length; i++) {
      if (matchedRight[i]) continue;
      out.push(concatRows(leftPadding, rightRows[i]!));
      if (out.length >= BATCH_SIZE) {
        yield out;
        out = [];
      }
    }
    if (out.length > 0) yield out;
  }
}
