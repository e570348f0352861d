// The machinery every stateful operator shares (aggregate, joins, distinct, top-N, over-window,
// INTERSECT/EXCEPT): the input rows grouped by key in one state table per input
// (`key ++ row ++ count`, so a key group is one prefix range), and, when changes arrive for some
// keys, the recompute of exactly those key groups with the batch template:
//
//   for each changed key k:
//     before = template(rows of k in every input)          -- read from the state tables
//     apply the changes to k's rows of the changed input   -- written to the open epoch
//     after  = template(rows of k after the changes)
//     emit difference(before, after)                      -- equal rows cancel
//
// Because the template is the batch operator itself, the view computes exactly what the batch
// query computes (the property test checks it); the cost of a change is its key group's size.
// A key group whose template fails (an error inside an aggregate's argument) outputs nothing and
// the error is recorded for the view.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { StateTable } from '../../storage/state-table.js';
import { ByteWriter } from '../../storage/byte-writer.js';
import { encodeKey } from '../../storage/memcomparable.js';
import type { KeyedOperator } from '../../planner/stream/stream-plan.js';
import { collect } from '../batch/operator.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap, keysEqual } from '../expr/row-hash.js';
import { appendChanges, difference, emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export interface KeyGroupChanges {
  readonly rows: Row[];
  readonly signs: number[];
}

export class KeyedOperatorNode implements StreamNode {
  /** One state table per input (an operator may open more of its `stateTables` itself). */
  protected readonly tables: readonly StateTable[];
  private readonly keyEvaluators: readonly (readonly Evaluator[])[];
  protected readonly keyTypes: readonly DataType[];
  protected readonly inputTypes: readonly (readonly DataType[])[];
  private readonly outputTypes: readonly DataType[];

  constructor(
    protected readonly plan: KeyedOperator,
    protected readonly context: StreamContext,
  ) {
    this.tables = plan.inputs.map((_, input) => context.stateTable(plan.stateTables[input]!));
    this.keyEvaluators = plan.keys.map((keys) => keys.map(compile));
    this.keyTypes = (plan.keys[0] ?? []).map((key) => key.type);
    this.inputTypes = plan.inputs.map((input) => input.columns.map((column) => column.type));
    this.outputTypes = plan.columns.map((column) => column.type);
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    const perSlot: (ChangeBatch | undefined)[] = this.tables.map(() => undefined);
    perSlot[slot] = changes;
    return this.applyAll(perSlot);
  }

  /**
   * Changes of several inputs at once (one epoch's changes of both sides of a join, a backfill):
   * each changed key group is read once, recomputed once, and written once. State writes wait
   * until every group has been read: a scan after a write makes the state table re-sort its
   * buffered keys, once per group.
   */
  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const groups = new KeyMap<KeyGroupChanges[]>(this.keyTypes);
    changesPerSlot.forEach((changes, slot) => {
      if (changes !== undefined && changes.rows.length > 0) this.groupByKey(slot, changes, groups);
    });
    const out = emptyChanges();
    const writes: Row[][] = this.tables.map(() => []);
    for (let g = 0; g < groups.size; g++) appendChanges(out, this.recomputeKey(groups.keys[g]!, groups.values[g]!, writes));
    this.write(writes);
    return out;
  }

  /** Per input, the state rows `recomputeKey` collected: a count above 0 inserts, else deletes. */
  protected write(writes: readonly Row[][]): void {
    writes.forEach((rows, slot) => {
      const table = this.tables[slot]!;
      for (const stateRow of rows) {
        if ((stateRow[stateRow.length - 1] as bigint) > 0n) table.insert(stateRow);
        else table.delete(stateRow);
      }
    });
  }

  /** An operator without key columns outputs its template over empty inputs at creation. */
  initial(): ChangeBatch {
    if (this.keyTypes.length > 0) return emptyChanges();
    const after = this.run(this.plan.inputs.map(() => []));
    return difference([], after, this.outputTypes);
  }

  protected groupByKey(slot: number, changes: ChangeBatch, groups: KeyMap<KeyGroupChanges[]>): void {
    const evaluators = this.keyEvaluators[slot]!;
    const runtime = this.context.runtime;
    const inputs = this.tables.length;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const key: Value[] = new Array(evaluators.length);
      for (let k = 0; k < evaluators.length; k++) {
        try {
          key[k] = evaluators[k]!(row, runtime);
        } catch (error) {
          this.context.recordError(error);
          key[k] = null;
        }
      }
      const index = groups.indexOf(key);
      const perSlot = index >= 0 ? groups.values[index]! : groups.values[groups.add(key, Array.from({ length: inputs }, () => ({ rows: [], signs: [] })))]!;
      perSlot[slot]!.rows.push(row);
      perSlot[slot]!.signs.push(changes.signs[i]!);
    }
  }

  /**
   * The template's output over a key group after its changes (undefined: the template failed), as
   * the recompute found it; `write` has not run yet.
   */
  protected recomputed(_key: Value[], _after: Row[] | undefined): void {}

  protected recomputeKey(key: Value[], changesPerSlot: readonly KeyGroupChanges[], writes: Row[][]): ChangeBatch {
    const before: Row[][] = [];
    const after: Row[][] = [];
    for (let input = 0; input < this.tables.length; input++) {
      const changes = changesPerSlot[input]!;
      if (changes.rows.length === 0) {
        // An input without changes: its rows as they are, no hashing.
        const rows = this.readRows(input, key);
        before.push(rows);
        after.push(rows);
        continue;
      }
      const counts = this.readGroup(input, key);
      const stored = counts.size;
      before.push(expand(counts));
      const touched = new Set<number>();
      for (let i = 0; i < changes.rows.length; i++) {
        const row = changes.rows[i]!;
        let index = counts.indexOf(row);
        if (index < 0) index = counts.add(row, 0);
        counts.values[index]! += changes.signs[i]!;
        touched.add(index);
      }
      for (const index of touched) writes[input]!.push([...key, ...counts.keys[index]!, BigInt(Math.max(counts.values[index]!, 0))]);
      // `before` is in state order; `after` must be too, or a template that keeps the first rows of
      // ties (LIMIT without ORDER BY, ORDER BY ... LIMIT, DISTINCT ON, row_number()) could pick other
      // rows than the next recompute from state does, and the view drifts from its query.
      after.push(expand(counts, stored < counts.size ? this.stateOrder(input, counts, stored) : undefined));
    }
    const old = this.run(before);
    const now = this.tryRun(after);
    this.recomputed(key, now);
    return difference(old, now ?? [], this.outputTypes);
  }

  /**
   * The positions of `counts` in state-table order, given that the first `stored` are (read from the
   * state table); the rows added after them go where the state table's key order puts them.
   */
  private stateOrder(input: number, counts: KeyMap<number>, stored: number): number[] {
    const types = this.inputTypes[input]!;
    const writer = new ByteWriter();
    const encode = (index: number): Buffer => {
      writer.reset();
      encodeKey(writer, counts.keys[index]!, types);
      return writer.copy();
    };
    const storedKeys: (Buffer | undefined)[] = new Array(stored);
    const storedKey = (index: number): Buffer => (storedKeys[index] ??= encode(index));
    const added: { index: number; key: Buffer; at: number }[] = [];
    for (let index = stored; index < counts.size; index++) {
      const encoded = encode(index);
      let low = 0;
      let high = stored;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (Buffer.compare(storedKey(middle), encoded) < 0) low = middle + 1;
        else high = middle;
      }
      added.push({ index, key: encoded, at: low });
    }
    added.sort((a, b) => a.at - b.at || Buffer.compare(a.key, b.key));
    const order: number[] = [];
    let next = 0;
    for (let index = 0; index < stored; index++) {
      while (next < added.length && added[next]!.at === index) order.push(added[next++]!.index);
      order.push(index);
    }
    while (next < added.length) order.push(added[next++]!.index);
    return order;
  }

  /** The rows of one key group of one input, with their multiplicities. */
  private readGroup(input: number, key: Value[]): KeyMap<number> {
    const rows = new KeyMap<number>(this.inputTypes[input]!);
    const keyWidth = key.length;
    const rowWidth = this.inputTypes[input]!.length;
    const scan = keyWidth === 0 ? this.tables[input]!.scan() : this.tables[input]!.scan({ prefix: key });
    for (const stateRow of scan) {
      if (keyWidth > 0 && !keysEqual(stateRow.slice(0, keyWidth), key, this.keyTypes)) break;
      const count = Number(stateRow[keyWidth + rowWidth] as bigint);
      if (count > 0) rows.add(stateRow.slice(keyWidth, keyWidth + rowWidth), count);
    }
    return rows;
  }

  /** The rows of one key group of one input, each repeated by its multiplicity. */
  private readRows(input: number, key: Value[]): Row[] {
    const rows: Row[] = [];
    const keyWidth = key.length;
    const rowWidth = this.inputTypes[input]!.length;
    const scan = keyWidth === 0 ? this.tables[input]!.scan() : this.tables[input]!.scan({ prefix: key });
    for (const stateRow of scan) {
      if (keyWidth > 0 && !keysEqual(stateRow.slice(0, keyWidth), key, this.keyTypes)) break;
      const row = stateRow.slice(keyWidth, keyWidth + rowWidth);
      for (let count = Number(stateRow[keyWidth + rowWidth] as bigint); count > 0; count--) rows.push(row);
    }
    return rows;
  }

  private run(inputs: Row[][]): Row[] {
    return this.tryRun(inputs) ?? [];
  }

  /** The template's output; undefined when it failed (the error recorded for the view). */
  private tryRun(inputs: Row[][]): Row[] | undefined {
    try {
      return collect(this.plan.template, this.context.setTemplateInputs(inputs));
    } catch (error) {
      this.context.recordError(error);
      return undefined;
    }
  }
}

/** The rows each repeated by its multiplicity, in `order` (positions) or in the map's order. */
function expand(counts: KeyMap<number>, order?: readonly number[]): Row[] {
  const rows: Row[] = [];
  for (let j = 0; j < counts.size; j++) {
    const i = order === undefined ? j : order[j]!;
    for (let n = counts.values[i]!; n > 0; n--) rows.push(counts.keys[i]!);
  }
  return rows;
}
