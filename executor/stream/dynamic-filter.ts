// StreamDynamicFilter (stateful): `key op bound`, where the bound is the one value of an
// uncorrelated scalar subquery (input 1: `v > (SELECT max(x) FROM t2)`) or, for a temporal filter,
// an expression of now() evaluated at the epoch time (`ts > now() - interval '1 hour'`; the dataflow
// hands the epoch time in on slot 1 once per epoch, `TEMPORAL_TICK_SLOT`).
//
// State: the input rows ordered by the compared value (`key ++ row ++ count`), and the subquery's
// rows (`value ++ count`) or the temporal bound (`0 ++ bound`). A changed input row passes or not
// against the current bound; when the bound moves from b0 to b1, only the rows whose key lies
// between them are read (one range scan) and those whose result flips are emitted: no recompute.
//
// A temporal lower bound (`>`, `>=`) never decreases, so a row below it never passes again: such
// rows are not kept (an insert below the bound is dropped, a row the bound passes is deleted), and
// the state holds only the rows in the window. With more than one subquery row the bound is NULL
// (nothing passes) and the error is recorded for the view (a batch query fails with 21000).

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/compare.js';
import type { StateTable } from '../../storage/state-table.js';
import type { DynamicFilter } from '../../planner/stream/stream-plan.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap } from '../expr/row-hash.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** The slot on which a temporal filter receives the epoch time (one row: milliseconds as a number). */
export const TEMPORAL_TICK_SLOT = 1;

const BOUND_KEY: Row = [0];

export class StreamDynamicFilterNode implements StreamNode {
  private readonly rows: StateTable;
  private readonly boundState: StateTable;
  private readonly keyOf: Evaluator;
  private readonly keyType: DataType;
  private readonly rowTypes: readonly DataType[];
  private readonly boundAt: Evaluator | undefined;
  /** A temporal lower bound: rows below it are forgotten. */
  private readonly forgets: boolean;

  constructor(
    private readonly plan: DynamicFilter,
    private readonly context: StreamContext,
  ) {
    this.rows = context.stateTable(plan.stateTables[0]!);
    this.boundState = context.stateTable(plan.stateTables[1]!);
    this.keyOf = compile(plan.key);
    this.keyType = plan.key.type;
    this.rowTypes = plan.inputs[0]!.columns.map((column) => column.type);
    this.boundAt = plan.now === undefined ? undefined : compile(plan.now);
    this.forgets = plan.now !== undefined && (plan.operator === '>' || plan.operator === '>=');
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    const perSlot: (ChangeBatch | undefined)[] = [undefined, undefined];
    perSlot[slot] = changes;
    return this.applyAll(perSlot);
  }

  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const out = emptyChanges();
    const before = this.bound();
    let after = before;
    const boundChanges = changesPerSlot[1];
    if (boundChanges !== undefined && boundChanges.rows.length > 0) {
      if (this.boundAt !== undefined) {
        const candidate = this.evaluateBound(boundChanges.rows[boundChanges.rows.length - 1]![0] as number);
        // now() never goes back; a clock that does must not bring forgotten rows back.
        if (candidate !== null && (before === null || compareValues(candidate, before, this.keyType) > 0)) {
          after = candidate;
          this.boundState.insert([0, after]);
        }
      } else {
        this.applySubqueryRows(boundChanges);
        after = this.bound();
      }
    }
    const rowChanges = changesPerSlot[0];
    if (rowChanges !== undefined && rowChanges.rows.length > 0) this.applyRows(rowChanges, before, out);
    if (!sameBound(before, after, this.keyType)) this.move(before, after, out);
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  private evaluateBound(millis: number): Value {
    const runtime = { ...this.context.runtime, evalContext: { ...this.context.runtime.evalContext, statementTimeMicros: millis * 1000 } };
    try {
      return this.boundAt!([], runtime);
    } catch (error) {
      this.context.recordError(error);
      return null;
    }
  }

  /** The current bound: the subquery's one value (NULL without a row or with several), or the stored temporal bound. */
  private bound(): Value {
    if (this.boundAt !== undefined) {
      const stored = this.boundState.get(BOUND_KEY);
      if (stored !== undefined) return stored[1]!;
      // The first change of a new view: the bound at the current epoch time.
      const bound = this.evaluateBound(this.context.clock());
      if (bound !== null) this.boundState.insert([0, bound]);
      return bound;
    }
    let total = 0;
    let value: Value = null;
    for (const row of this.boundState.scan()) {
      const count = Number(row[1] as bigint);
      if (count <= 0) continue;
      total += count;
      value = row[0]!;
      if (total > 1) break;
    }
    if (total > 1) {
      this.context.recordError(new Error('more than one row returned by a subquery used as an expression'));
      return null;
    }
    return total === 1 ? value : null;
  }

  private applySubqueryRows(changes: ChangeBatch): void {
    const net = new KeyMap<number>([this.keyType]);
    for (let i = 0; i < changes.rows.length; i++) {
      const key = [changes.rows[i]![0]!];
      const index = net.indexOf(key);
      if (index < 0) net.add(key, changes.signs[i]!);
      else net.values[index]! += changes.signs[i]!;
    }
    for (let i = 0; i < net.size; i++) {
      const delta = net.values[i]!;
      if (delta === 0) continue;
      const key = net.keys[i]!;
      const count = Number((this.boundState.get(key)?.[1] as bigint | undefined) ?? 0n) + delta;
      if (count > 0) this.boundState.insert([key[0]!, BigInt(count)]);
      else this.boundState.delete([key[0]!, 0n]);
    }
  }

  private passes(key: Value, bound: Value): boolean {
    if (key === null || bound === null) return false;
    const order = compareValues(key, bound, this.keyType);
    switch (this.plan.operator) {
      case '<':
        return order < 0;
      case '<=':
        return order <= 0;
      case '>':
        return order > 0;
      case '>=':
        return order >= 0;
      case '=':
        return order === 0;
    }
  }

  /** Input changes against the bound as it was: stored by compared value, emitted when they pass. */
  private applyRows(changes: ChangeBatch, bound: Value, out: ChangeBatch): void {
    const net = new KeyMap<number>([this.keyType, ...this.rowTypes]);
    const runtime = this.context.runtime;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      let key: Value;
      try {
        key = this.keyOf(row, runtime);
      } catch (error) {
        this.context.recordError(error);
        key = null;
      }
      const stateKey = [key, ...row];
      const index = net.indexOf(stateKey);
      if (index < 0) net.add(stateKey, changes.signs[i]!);
      else net.values[index]! += changes.signs[i]!;
    }
    const width = this.rowTypes.length;
    for (let i = 0; i < net.size; i++) {
      const delta = net.values[i]!;
      if (delta === 0) continue;
      const stateKey = net.keys[i]!;
      const pass = this.passes(stateKey[0]!, bound);
      if (this.forgets && !pass) continue;
      const count = Number((this.rows.get(stateKey)?.[width + 1] as bigint | undefined) ?? 0n) + delta;
      if (count > 0) this.rows.insert([...stateKey, BigInt(count)]);
      else this.rows.delete([...stateKey, 0n]);
      if (pass) emit(out, stateKey.slice(1), delta);
    }
  }

  /** The bound moved: the rows between the old and the new bound whose result flips. */
  private move(before: Value, after: Value, out: ChangeBatch): void {
    let low: Value = null;
    let high: Value = null;
    if (before !== null && after !== null) {
      const order = compareValues(before, after, this.keyType);
      low = order <= 0 ? before : after;
      high = order <= 0 ? after : before;
    }
    const width = this.rowTypes.length;
    const forgotten: Row[] = [];
    const scan = low === null ? this.rows.scan() : this.rows.scan({ start: [low] });
    for (const stateRow of scan) {
      const key = stateRow[0]!;
      // NULLs sort last and never pass.
      if (key === null) break;
      if (high !== null && compareValues(key, high, this.keyType) > 0) break;
      const was = this.passes(key, before);
      const is = this.passes(key, after);
      if (was === is) continue;
      const count = Number(stateRow[width + 1] as bigint);
      emit(out, stateRow.slice(1, width + 1), is ? count : -count);
      if (this.forgets && !is) forgotten.push(stateRow);
    }
    for (const stateRow of forgotten) this.rows.delete(stateRow);
  }
}

function emit(out: ChangeBatch, row: Row, delta: number): void {
  const sign = delta > 0 ? 1 : -1;
  for (let n = Math.abs(delta); n > 0; n--) {
    out.rows.push(row);
    out.signs.push(sign);
  }
}

function sameBound(a: Value, b: Value, type: DataType): boolean {
  if (a === null || b === null) return a === b;
  return compareValues(a, b, type) === 0;
}
