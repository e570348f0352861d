// LIMIT / OFFSET: stops pulling input once enough rows passed (WITH TIES: once a row differs from the
// last counted one on the Sort's keys). Negative counts are PostgreSQL's
// 2201W / 2201X errors.

import type { PlanOf } from '../../planner/plan.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { runPlan } from './operator.js';
import { keyComparator } from './sort.js';
import type { Row, Value } from '../../sql/value.js';

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
  const input = runPlan(plan.input, runtime)[Symbol.iterator]();
  for (let next = input.next(); !next.done; next = input.next()) {
    const batch = next.value;
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
    if (remaining <= 0 && plan.withTies === true) {
      yield* withTies(plan, batch, start, end, input, runtime);
      return;
    }
    yield start === 0 && end === batch.length ? batch : batch.slice(start, end);
    if (remaining <= 0) return;
  }
}

/** FETCH FIRST n ROWS WITH TIES: after the n-th row (batch[end - 1]), the rows equal to it on the Sort's keys. */
function* withTies(plan: PlanOf<'Limit'>, batch: Row[], start: number, end: number, input: Iterator<Row[]>, runtime: Runtime): Batches {
  const sort = plan.input;
  if (sort.kind !== 'Sort') throw new SqlError(SqlState.internalError, 'a Limit WITH TIES without a Sort below it');
  const evaluators = sort.keys.map((key) => compile(key.expression));
  const compare = keyComparator(sort.keys);
  const keyOf = (row: Row): Value[] => evaluators.map((evaluate) => evaluate(row, runtime));
  const last = keyOf(batch[end - 1]!);
  let stop = end;
  while (stop < batch.length && compare(keyOf(batch[stop]!), last) === 0) stop++;
  yield start === 0 && stop === batch.length ? batch : batch.slice(start, stop);
  if (stop < batch.length) return;
  for (let next = input.next(); !next.done; next = input.next()) {
    const rows = next.value;
    if (rows.length === 0) {
      yield rows;
      continue;
    }
    let tied = 0;
    while (tied < rows.length && compare(keyOf(rows[tied]!), last) === 0) tied++;
    if (tied > 0) yield tied === rows.length ? rows : rows.slice(0, tied);
    if (tied < rows.length) return;
  }
}
