// ORDER BY: materializes the input, computes each row's sort keys once, and sorts stably with
// NULLS FIRST / LAST as asked (PostgreSQL's default: NULLs sort as larger than any value). The
// sort is a bottom-up merge sort over runs that Array.sort orders, pausing (runtime.ts) between
// runs and inside merges, so a cancel or statement_timeout stops a sort of millions of rows.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/functions.js';
import type { PlanOf, SortKey } from '../../planner/plan.js';
import { BATCH_SIZE, PAUSE, checkDeadline, sliceUsed, type Batches, type Runtime } from './runtime.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { gather, runPlan } from './operator.js';

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

/** Rows per run that Array.sort orders in one go (a few milliseconds of work). */
const RUN = 4096;

function* pauseIfDue(runtime: Runtime): Generator<Row[], void> {
  if (sliceUsed(runtime)) {
    checkDeadline(runtime);
    yield PAUSE;
  }
}

/**
 * Sorts `items` (stable when `order` breaks ties): runs of RUN items by Array.sort, then merge
 * passes of doubling width; pauses between runs and every RUN merged items.
 */
function* mergeSort<T>(items: T[], order: (a: T, b: T) => number, runtime: Runtime): Generator<Row[], T[]> {
  const n = items.length;
  if (n <= RUN) return items.sort(order);
  for (let start = 0; start < n; start += RUN) {
    const run = items.slice(start, Math.min(n, start + RUN)).sort(order);
    for (let i = 0; i < run.length; i++) items[start + i] = run[i]!;
    yield* pauseIfDue(runtime);
  }
  let source = items;
  let target: T[] = new Array<T>(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let low = 0; low < n; low += 2 * width) {
      const middle = Math.min(n, low + width);
      const high = Math.min(n, low + 2 * width);
      let i = low;
      let j = middle;
      let k = low;
      while (i < middle && j < high) {
        target[k++] = order(source[j]!, source[i]!) < 0 ? source[j++]! : source[i++]!;
        if ((k & (RUN - 1)) === 0) yield* pauseIfDue(runtime);
      }
      while (i < middle) target[k++] = source[i++]!;
      while (j < high) target[k++] = source[j++]!;
    }
    const swap = source;
    source = target;
    target = swap;
    yield* pauseIfDue(runtime);
  }
  return source;
}

/** Rows sorted by keys evaluated over each row (stable), pausing as it goes. */
export function* sortRowsPausing(rows: readonly Row[], keys: readonly SortKey[], runtime: Runtime): Generator<Row[], Row[]> {
  const evaluators = keys.map((k) => compile(k.expression));
  const decorated: Decorated[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    decorated[i] = decorate(rows[i]!, i, evaluators, runtime);
    if ((i & (RUN - 1)) === RUN - 1) yield* pauseIfDue(runtime);
  }
  const compare = keyComparator(keys);
  const sorted = yield* mergeSort(decorated, (a, b) => compare(a.key, b.key) || a.index - b.index, runtime);
  return sorted.map((d) => d.row);
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
function* topRows(plan: PlanOf<'Sort'>, runtime: Runtime, wanted: number): Generator<Row[], Row[]> {
  const evaluators = plan.keys.map((k) => compile(k.expression));
  const compare = keyComparator(plan.keys);
  const order = (a: Decorated, b: Decorated) => compare(a.key, b.key) || a.index - b.index;
  let buffer: Decorated[] = [];
  let index = 0;
  for (const batch of runPlan(plan.input, runtime)) {
    if (batch.length === 0) yield batch;
    for (const row of batch) {
      buffer.push(decorate(row, index++, evaluators, runtime));
      if (buffer.length >= 2 * wanted + BATCH_SIZE) {
        buffer = (yield* mergeSort(buffer, order, runtime)).slice(0, wanted);
      }
    }
  }
  buffer = yield* mergeSort(buffer, order, runtime);
  return buffer.slice(0, wanted).map((d) => d.row);
}

export function* sort(plan: PlanOf<'Sort'>, runtime: Runtime): Batches {
  let sorted: Row[];
  if (plan.topN !== undefined) {
    const limit = count(compile(plan.topN.limit)([], runtime));
    const offset = plan.topN.offset === undefined ? 0 : count(compile(plan.topN.offset)([], runtime));
    sorted = Number.isFinite(limit + offset) ? yield* topRows(plan, runtime, limit + offset) : yield* sortRowsPausing(yield* gather(plan.input, runtime), plan.keys, runtime);
  } else {
    sorted = yield* sortRowsPausing(yield* gather(plan.input, runtime), plan.keys, runtime);
  }
  for (let i = 0; i < sorted.length; i += BATCH_SIZE) yield sorted.slice(i, i + BATCH_SIZE);
}
