// StreamEmitOnWindowClose (stateful): the view's rows are emitted only once their window has closed,
// and never retracted. The input (the view's query, incrementally maintained as usual) changes
// freely; its net rows wait in a buffer ordered by the window column (`column ++ row ++ count`).
// When the column's watermark (`derive` of the relation's watermark, which the StreamWatermarkFilter
// below keeps in its state table; for a join key, the least of each side's: `also`) moves to w, every buffered row whose column is below w is emitted
// (+) and leaves the buffer; w is remembered (`0 ++ w`) and later changes of rows below it (a closed
// window) are dropped. A row with a NULL window column never closes.
//
// The dataflow calls the node once more after every push (slot EMIT_SLOT, no rows): the watermark
// may move while the rows reaching this node do not change (a WHERE between the two).

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/compare.js';
import type { StateTable } from '../../storage/state-table.js';
import type { EmitOnWindowClose } from '../../planner/stream/stream-plan.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap } from '../expr/row-hash.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** The slot on which the dataflow asks the node to emit what closed, without changes. */
export const EMIT_SLOT = 1;

const KEY: Row = [0];

export class StreamEmitOnWindowCloseNode implements StreamNode {
  private readonly buffer: StateTable;
  private readonly emitted: StateTable;
  /** The watermarks `column` follows, each with its derivation: the least of them all closes windows. */
  private readonly watermarks: readonly { readonly table: StateTable; readonly derive: Evaluator }[];
  private readonly column: number;
  private readonly columnType: DataType;
  private readonly rowTypes: readonly DataType[];

  constructor(plan: EmitOnWindowClose, private readonly context: StreamContext) {
    this.buffer = context.stateTable(plan.stateTables[0]!);
    this.emitted = context.stateTable(plan.stateTables[1]!);
    this.watermarks = [{ watermarkTable: plan.watermarkTable, derive: plan.derive }, ...(plan.also ?? [])].map((bound) => ({ table: context.stateTable(bound.watermarkTable), derive: compile(bound.derive) }));
    this.column = plan.column;
    this.rowTypes = plan.columns.map((column) => column.type);
    this.columnType = this.rowTypes[plan.column]!;
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    const closedBelow = this.emitted.get(KEY)?.[1] ?? null;
    if (slot !== EMIT_SLOT && changes.rows.length > 0) this.buffer_(changes, closedBelow);
    return this.emitClosed(closedBelow);
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  private buffer_(changes: ChangeBatch, closedBelow: Value): void {
    const net = new KeyMap<number>([this.columnType, ...this.rowTypes]);
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const value = row[this.column] ?? null;
      // A change to a window already emitted: final rows are never retracted.
      if (value !== null && closedBelow !== null && compareValues(value, closedBelow, this.columnType) < 0) continue;
      const key = [value, ...row];
      const index = net.indexOf(key);
      if (index < 0) net.add(key, changes.signs[i]!);
      else net.values[index]! += changes.signs[i]!;
    }
    const width = this.rowTypes.length;
    for (let i = 0; i < net.size; i++) {
      const delta = net.values[i]!;
      if (delta === 0) continue;
      const key = net.keys[i]!;
      const count = Number((this.buffer.get(key)?.[width + 1] as bigint | undefined) ?? 0n) + delta;
      if (count > 0) this.buffer.insert([...key, BigInt(count)]);
      else this.buffer.delete([...key, 0n]);
    }
  }

  private emitClosed(closedBelow: Value): ChangeBatch {
    const out = emptyChanges();
    let bound: Value = null;
    for (let i = 0; i < this.watermarks.length; i++) {
      const { table, derive } = this.watermarks[i]!;
      const watermark = table.get(KEY)?.[1] ?? null;
      if (watermark === null) return out;
      let derived: Value;
      try {
        derived = derive([watermark], this.context.runtime);
      } catch (error) {
        this.context.recordError(error);
        return out;
      }
      if (derived === null) return out;
      if (i === 0 || compareValues(derived, bound, this.columnType) < 0) bound = derived;
    }
    if (bound === null || (closedBelow !== null && compareValues(bound, closedBelow, this.columnType) <= 0)) return out;
    const width = this.rowTypes.length;
    const closed: Row[] = [];
    for (const stateRow of this.buffer.scan()) {
      const value = stateRow[0] ?? null;
      if (value === null || compareValues(value, bound, this.columnType) >= 0) break;
      closed.push(stateRow);
      const row = stateRow.slice(1, width + 1);
      for (let n = Number(stateRow[width + 1] as bigint); n > 0; n--) {
        out.rows.push(row);
        out.signs.push(1);
      }
    }
    for (const stateRow of closed) this.buffer.delete(stateRow);
    this.emitted.insert([0, bound]);
    return out;
  }
}
