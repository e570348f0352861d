// ORDER BY: materializes the input, computes each row's sort keys once, and sorts stably with
// NULLS FIRST / LAST as asked (PostgreSQL's default: NULLs sort as larger than any value).

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/functions.js';
import type { PlanOf, SortKey } from '../../planner/plan.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { compile, type Evaluator } from './expression.js';
import { collect, runPlan } from './operator.js';

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

interface Decorated {
  readonly row: Row;
  readonly index: number;
  readonly key: Value[];
}

function decorate(row: Row, index: number, evaluators: readonly Evaluator[], runtime: Runtime): Decorated {
  const key: Value[] = new Array(evaluators.length);
  for (let k = 0; k < evaluators.length; k++) key[k] = evaluators[k]!(row, runtime);
  return { row, index, key };
}

/** Rows sorted by keys evaluated over each row (stable). */
export function sortRows(rows: readonly Row[], keys: readonly SortKey[], runtime: Runtime): Row[] {
  const evaluators = keys.map((k) => compile(k.expression));
  const decorated = rows.map((row, index) => decorate(row, index, evaluators, runtime));
  const compare = keyComparator(keys);
  decorated.sort((a, b) => compare(a.key, b.key) || a.index - b.index);
  return decorated.map((d) => d.row);
}

function count(value: Value): number {
  if (value === null) return Infinity;
  const n = Number(value as number | bigint);
  return n < 0 ? 0 : n;
}

/**
 * ORDER BY ... LIMIT n: keeps at most 2n rows, sorting and cutting back to n when full, so the
 * work is O(rows × log n) and the memory O(n). Ties keep input order (the index breaks them).
 */
function topRows(plan: PlanOf<'Sort'>, runtime: Runtime, wanted: number): Row[] {
  const evaluators = plan.keys.map((k) => compile(k.expression));
  const compare = keyComparator(plan.keys);
  const order = (a: Decorated, b: Decorated) => compare(a.key, b.key) || a.index - b.index;
  let buffer: Decorated[] = [];
  let index = 0;
  for (const batch of runPlan(plan.input, runtime)) {
    for (const row of batch) {
      buffer.push(decorate(row, index++, evaluators, runtime));
      if (buffer.length >= 2 * wanted + BATCH_SIZE) {
        buffer.sort(order);
        buffer = buffer.slice(0, wanted);
      }
    }
  }
  buffer.sort(order);
  return buffer.slice(0, wanted).map((d) => d.row);
}

export function* sort(plan: PlanOf<'Sort'>, runtime: Runtime): Batches {
  let sorted: Row[];
  if (plan.topN !== undefined) {
    const limit = count(compile(plan.topN.limit)([], runtime));
    const offset = plan.topN.offset === undefined ? 0 : count(compile(plan.topN.offset)([], runtime));
    sorted = Number.isFinite(limit + offset) ? topRows(plan, runtime, limit + offset) : sortRows(collect(plan.input, runtime), plan.keys, runtime);
  } else {
    sorted = sortRows(collect(plan.input, runtime), plan.keys, runtime);
  }
  for (let i = 0; i < sorted.length; i += BATCH_SIZE) yield sorted.slice(i, i + BATCH_SIZE);
}
