// ORDER BY: materializes the input, computes each row's sort keys once, and sorts stably with
// NULLS FIRST / LAST as asked (PostgreSQL's default: NULLs sort as larger than any value).

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/functions.js';
import type { PlanOf, SortKey } from '../../planner/plan.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { compile } from './expression.js';
import { collect } from './operator.js';

/** A comparator over precomputed key tuples. */
export function keyComparator(keys: readonly SortKey[]): (a: readonly Value[], b: readonly Value[]) => number {
  const types: DataType[] = keys.map((k) => k.expression.type);
  return (a, b) => {
    for (let i = 0; i < keys.length; i++) {
      const x = a[i]!;
      const y = b[i]!;
      const key = keys[i]!;
      let order: number;
      if (x === null || y === null) {
        if (x === y) continue;
        order = x === null ? (key.nullsFirst ? -1 : 1) : key.nullsFirst ? 1 : -1;
        return order;
      }
      order = compareValues(x, y, types[i]!);
      if (order !== 0) return key.descending ? -order : order;
    }
    return 0;
  };
}

/** Rows sorted by keys evaluated over each row (stable). */
export function sortRows(rows: readonly Row[], keys: readonly SortKey[], runtime: Runtime): Row[] {
  const evaluators = keys.map((k) => compile(k.expression));
  const decorated = rows.map((row, index) => ({ row, index, key: evaluators.map((evaluate) => evaluate(row, runtime)) }));
  const compare = keyComparator(keys);
  decorated.sort((a, b) => compare(a.key, b.key) || a.index - b.index);
  return decorated.map((d) => d.row);
}

export function* sort(plan: PlanOf<'Sort'>, runtime: Runtime): Batches {
  const sorted = sortRows(collect(plan.input, runtime), plan.keys, runtime);
  for (let i = 0; i < sorted.length; i += BATCH_SIZE) yield sorted.slice(i, i + BATCH_SIZE);
}
