// LIMIT / OFFSET: stops pulling input once enough rows passed. Negative counts are PostgreSQL's
// 2201W / 2201X errors.

import type { PlanOf } from '../../planner/plan.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from './expression.js';
import { runPlan } from './operator.js';

function count(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  return Number(value as bigint | number);
}

export function* limit(plan: PlanOf<'Limit'>, runtime: Runtime): Batches {
  const limitCount = plan.limit === undefined ? undefined : count(compile(plan.limit)([], runtime));
  let skip = plan.offset === undefined ? 0 : count(compile(plan.offset)([], runtime)) ?? 0;
  if (limitCount !== undefined && limitCount < 0) throw new SqlError(SqlState.invalidRowCountInLimitClause, 'LIMIT must not be negative');
  if (skip < 0) throw new SqlError(SqlState.invalidRowCountInResultOffsetClause, 'OFFSET must not be negative');
  let remaining = limitCount ?? Infinity;
  if (remaining === 0) return;
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) {
      yield batch;
      continue;
    }
    let start = 0;
    if (skip > 0) {
      start = Math.min(skip, batch.length);
      skip -= start;
    }
    if (start >= batch.length) continue;
    const end = Math.min(batch.length, start + remaining);
    remaining -= end - start;
    yield start === 0 && end === batch.length ? batch : batch.slice(start, end);
    if (remaining <= 0) return;
  }
}
