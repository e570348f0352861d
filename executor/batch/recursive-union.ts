// WITH RECURSIVE: runs the base term, then the recursive term over the previous round's new rows
// (the work table) until a round adds nothing; UNION (without ALL) keeps only rows not produced
// before. The loop is bounded (rounds and rows): beyond the bounds it fails with 54001; a cancel
// arrives at the terms' pauses (runtime.ts).

import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlanOf } from '../../planner/plan.js';
import { checkDeadline, type Batches, type Runtime } from './runtime.js';
import { gather } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';

const MAX_ROUNDS = 100_000;
const MAX_ROWS = 10_000_000;

export function* recursiveUnion(plan: PlanOf<'RecursiveUnion'>, runtime: Runtime): Batches {
  const seen = plan.all ? undefined : new KeyMap<true>(plan.columns.map((c) => c.type));
  const fresh = (rows: Row[]): Row[] => {
    if (seen === undefined) return rows;
    const out: Row[] = [];
    for (const row of rows) {
      if (seen.indexOf(row) >= 0) continue;
      seen.add(row, true);
      out.push(row);
    }
    return out;
  };
  let working = fresh(yield* gather(plan.base, runtime));
  let total = working.length;
  const saved = runtime.workTables.get(plan.id);
  try {
    for (let round = 0; working.length > 0; round++) {
      if (round >= MAX_ROUNDS || total > MAX_ROWS) {
        throw new SqlError(SqlState.statementTooComplex, `recursive query exceeded ${MAX_ROUNDS} rounds or ${MAX_ROWS} rows`, {
          hint: 'Check that the recursive term stops producing rows (a WHERE on the depth, or UNION instead of UNION ALL).',
        });
      }
      checkDeadline(runtime);
      yield working;
      runtime.workTables.set(plan.id, working);
      working = fresh(yield* gather(plan.recursive, runtime));
      total += working.length;
    }
  } finally {
    if (saved === undefined) runtime.workTables.delete(plan.id);
    else runtime.workTables.set(plan.id, saved);
  }
}

export function* workTable(plan: PlanOf<'WorkTable'>, runtime: Runtime): Batches {
  const rows = runtime.workTables.get(plan.id);
  if (rows !== undefined && rows.length > 0) yield rows;
}
