// StreamProject (linear): computes the output columns of each changed row, sign unchanged. An
// expression that fails on a row (division by zero, a bad cast) yields NULL for that column, as
// RisingWave does, and the error is recorded for the view: a running view never stops. Output
// columns that are input columns are copied by index (no evaluator call); row ids
// (`ChangeBatch.ids`) follow their rows. proctime() reads the clock once per batch: every row of
// the batch gets the same processing time.

import type { Row, Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { proctimeCall } from '../../planner/walk.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { arrayFor, emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamProjectNode implements StreamNode {
  /** Per output column: the evaluator, or undefined where `columns` copies an input column. */
  private readonly evaluators: readonly (Evaluator | undefined)[];
  /** Per output column: the input column it copies, or -1 where an evaluator computes it. */
  private readonly columns: Int32Array;
  /** True when some expression calls proctime(). */
  private readonly proctime: boolean;
  /**
   * The input's rows are fresh arrays only this node reads (`takeInputRows`): rewritten in place,
   * no array per row, when each has room for the output's columns (and a row id): the output is
   * as wide as the input, or the batch's rows were made wider (ChangeBatch.rowCapacity).
   */
  private inPlace = false;
  /** The input's width when its rows are this node's to rewrite. */
  private inputWidth = -1;
  /** In place: a row's output values, computed before any of its columns is overwritten. */
  private readonly scratch: Value[];

  constructor(plan: Extract<StreamPlan, { kind: 'StreamProject' }>, private readonly context: StreamContext) {
    this.columns = Int32Array.from(plan.expressions, (expression) => (expression.kind === 'Column' ? expression.index : -1));
    this.evaluators = plan.expressions.map((expression) => (expression.kind === 'Column' ? undefined : compile(expression)));
    this.proctime = plan.expressions.some((expression) => proctimeCall(expression) !== undefined);
    this.scratch = new Array<Value>(plan.expressions.length).fill(null);
  }

  /**
   * Called by the dataflow when the input is a table scan whose output no other node reads: its
   * rows are new arrays of `inputWidth` values (and room for a row id), so when the output is as
   * wide (the same layout as a new row: a row an operator keeps costs what it did), or the batch
   * says its rows have room for a wider one (`rowCapacity`), each row is rewritten in place and
   * the batch passed on with its signs and ids.
   */
  takeInputRows(inputWidth: number): void {
    this.inPlace = this.evaluators.length === inputWidth;
    this.inputWidth = inputWidth;
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.inPlace) return this.applyInPlace(changes);
    // A wider output written into rows the scan narrowed in place (Nexmark q22: five columns read,
    // seven written): each row has the slots, so it grows into them without a new array.
    const slots = changes.rowCapacity;
    if (this.inputWidth >= 0 && slots !== undefined && this.evaluators.length + (changes.ids === undefined ? 0 : 1) <= slots) return this.applyInPlace(changes);
    const rows = changes.rows;
    // One output row per input row: arrays at their final length, the signs (and ids) copied at once.
    const outRows = arrayFor<Row>(rows.length);
    const out: ChangeBatch = changes.ids === undefined ? { rows: outRows, signs: changes.signs.slice() } : { rows: outRows, signs: changes.signs.slice(), ids: changes.ids.slice() };
    let runtime = this.context.runtime;
    if (this.proctime && changes.rows.length > 0) {
      runtime = { ...runtime, evalContext: { ...runtime.evalContext, processingTimeMicros: this.context.clock() * 1000 } };
    }
    const evaluators = this.evaluators;
    const columns = this.columns;
    const width = evaluators.length;
    // With ids, one spare slot (popped below) for the id a blind materialize appends (scan.ts).
    const capacity = changes.ids === undefined ? width : width + 1;
    for (let i = 0; i < rows.length; i++) {
      const input = rows[i]!;
      const row: Row = new Array(capacity);
      for (let c = 0; c < width; c++) {
        const column = columns[c]!;
        if (column >= 0) {
          row[c] = input[column] as Value;
          continue;
        }
        try {
          row[c] = evaluators[c]!(input, runtime);
        } catch (error) {
          this.context.recordError(error);
          row[c] = null;
        }
      }
      if (capacity > width) row.pop();
      outRows[i] = row;
    }
    return out;
  }

  /** Each row's output values into the scratch row, then over the row's own columns (grown or cut to the output's width). */
  private applyInPlace(changes: ChangeBatch): ChangeBatch {
    const rows = changes.rows;
    let runtime = this.context.runtime;
    if (this.proctime && rows.length > 0) {
      runtime = { ...runtime, evalContext: { ...runtime.evalContext, processingTimeMicros: this.context.clock() * 1000 } };
    }
    const evaluators = this.evaluators;
    const columns = this.columns;
    const width = evaluators.length;
    const scratch = this.scratch;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      for (let c = 0; c < width; c++) {
        const column = columns[c]!;
        if (column >= 0) {
          scratch[c] = row[column] as Value;
          continue;
        }
        try {
          scratch[c] = evaluators[c]!(row, runtime);
        } catch (error) {
          this.context.recordError(error);
          scratch[c] = null;
        }
      }
      for (let c = 0; c < width; c++) row[c] = scratch[c]!;
      // A narrower output than the scan's columns (over rows with room): the rest cut off.
      if (row.length > width) row.length = width;
    }
    for (let c = 0; c < width; c++) scratch[c] = null;
    return changes;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
