// StreamLateral (linear): a LATERAL join whose right side reads no table (HOP's window starts,
// unnest, generate_series over the row's values). The inserted rows and the deleted rows each run
// through the batch template (the NestedLoopJoin over a placeholder left input); the output keeps
// the sign of the rows it came from.
//
// HOP's shape, `input LATERAL generate_series(first(row), last(row), constant step)` over
// timestamps, runs without the template: the series bounds are evaluated on the row itself and
// each window start appended to a copy of it (`SeriesLateral`), with what generate_series and the
// timestamp + interval operator compute. A row whose window bounds are infinite (an infinite time)
// has no window: it is dropped and recorded as 22008 (the template would step from NaN forever).
//
// `output` (set by the dataflow when the node's only parent is a projection of plain columns, which
// then passes rows through: dataflow.ts): the joined row's columns to emit, so HOP's rows are built
// once at their final width instead of joined, then copied by the projection.

import type { Interval, Row, Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import type { Expression } from '../../planner/expression.js';
import type { Plan } from '../../planner/plan.js';
import { streamInputRelationId } from '../../planner/stream/stream-plan.js';
import { timestampPlusInterval, timestamptzPlusInterval } from '../../sql/datetime-arithmetic.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { collect } from '../batch/operator.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { appendChanges, emptyChanges, withSign, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** generate_series(first, last, step) over timestamps with a constant step, laterally over the input row. */
interface SeriesLateral {
  readonly first: Evaluator;
  readonly last: Evaluator;
  readonly step: Interval;
  readonly plus: (micros: number, step: Interval) => number;
}

/** An expression over the outer (left) row as one over the row itself; undefined if it has other parts. */
function overRow(expression: Expression): Expression | undefined {
  switch (expression.kind) {
    case 'Literal':
      return expression;
    case 'OuterColumn':
      return expression.depth === 1 ? { kind: 'Column', index: expression.index, type: expression.type } : undefined;
    case 'Call': {
      const args = expression.args.map(overRow);
      return args.every((arg) => arg !== undefined) ? { ...expression, args: args as Expression[] } : undefined;
    }
    case 'Cast': {
      const input = overRow(expression.input);
      return input === undefined ? undefined : { ...expression, input };
    }
    default:
      return undefined;
  }
}

function seriesLateral(template: Plan, inputWidth: number): SeriesLateral | undefined {
  if (template.kind !== 'NestedLoopJoin' || template.joinType !== 'inner' || !template.lateral || template.condition !== undefined) return undefined;
  const { left, right } = template;
  if (left.kind !== 'Scan' || left.relation.id !== streamInputRelationId(0) || left.filter !== undefined || left.lookup !== undefined || left.systemTime !== undefined) return undefined;
  if (left.projection.length !== inputWidth || left.projection.some((position, i) => position !== i)) return undefined;
  if (right.kind !== 'TableFunction' || right.name !== 'generate_series' || right.withOrdinality || right.args.length !== 3) return undefined;
  if (template.columns.length !== inputWidth + 1) return undefined;
  const type = right.args[0]!.type.name;
  const stepArg = right.args[2]!;
  if (right.args[1]!.type.name !== type || stepArg.kind !== 'Literal' || stepArg.type.name !== 'interval' || stepArg.value === null) return undefined;
  const step = stepArg.value as Interval;
  // A positive fixed step: the series ascends and ends (a zero or negative one keeps the template's errors and order).
  if (step.months !== 0 || step.days < 0 || step.micros < 0 || (step.days === 0 && step.micros === 0)) return undefined;
  let plus: (micros: number, step: Interval) => number;
  if (type === 'timestamp') plus = timestampPlusInterval;
  // timestamptz + interval uses the zone only for months and days.
  else if (type === 'timestamptz' && step.days === 0) plus = (micros, by) => timestamptzPlusInterval(micros, by, 'UTC');
  else return undefined;
  const first = overRow(right.args[0]!);
  const last = overRow(right.args[1]!);
  if (first === undefined || last === undefined) return undefined;
  return { first: compile(first), last: compile(last), step, plus };
}

export class StreamLateralNode implements StreamNode {
  private readonly series: SeriesLateral | undefined;
  /** The series path's output columns: `output`, or the whole joined row (input columns, then the window start). */
  private readonly seriesOutput: Int32Array;
  /** `seriesOutput` as the input columns each output column copies, and where the window start goes (none, once, or more). */
  private readonly seriesColumns: { readonly copied: Int32Array; readonly windowAt: Int32Array };

  constructor(
    private readonly plan: Extract<StreamPlan, { kind: 'StreamLateral' }>,
    private readonly context: StreamContext,
    private readonly output?: Int32Array,
  ) {
    this.series = seriesLateral(plan.template, plan.input.columns.length);
    const inputWidth = plan.input.columns.length;
    this.seriesOutput = output ?? Int32Array.from({ length: inputWidth + 1 }, (_, i) => i);
    // The window start is column `inputWidth` of the joined row: its slot copies column 0, then is overwritten.
    const windowAt: number[] = [];
    this.seriesOutput.forEach((column, at) => column === inputWidth && windowAt.push(at));
    this.seriesColumns = { copied: this.seriesOutput.map((column) => (column === inputWidth ? 0 : column)), windowAt: Int32Array.from(windowAt) };
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.series !== undefined) return this.applySeries(this.series, changes, this.seriesOutput);
    const joined = this.applyJoined(changes);
    if (this.output === undefined) return joined;
    const output = this.output;
    const rows: Row[] = new Array(joined.rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = joined.rows[i]!;
      const projected: Row = new Array(output.length);
      for (let c = 0; c < output.length; c++) projected[c] = row[output[c]!]!;
      rows[i] = projected;
    }
    return { rows, signs: joined.signs };
  }

  private applyJoined(changes: ChangeBatch): ChangeBatch {
    const deleted: Row[] = [];
    const inserted: Row[] = [];
    for (let i = 0; i < changes.rows.length; i++) (changes.signs[i]! > 0 ? inserted : deleted).push(changes.rows[i]!);
    const out = emptyChanges();
    for (const [rows, sign] of [[deleted, -1], [inserted, 1]] as const) {
      if (rows.length === 0) continue;
      try {
        appendChanges(out, withSign(collect(this.plan.template, this.context.setTemplateInputs([rows])), sign));
      } catch (error) {
        // One failing row must not lose the others: retry row by row, dropping only the failing ones.
        for (const row of rows) this.applyTemplate(row, sign, out);
        void error;
      }
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  /** One row through the batch template; its error recorded and the row dropped. */
  private applyTemplate(row: Row, sign: number, out: ChangeBatch): void {
    try {
      appendChanges(out, withSign(collect(this.plan.template, this.context.setTemplateInputs([[row]])), sign));
    } catch (error) {
      this.context.recordError(error);
    }
  }

  /**
   * Each input row's windows: one row per window start, built at its final width (`output`: the
   * joined row's columns to emit, the window start being column `width`; without a projection
   * above, every column of the row and then the window start).
   */
  private applySeries(series: SeriesLateral, changes: ChangeBatch, output: Int32Array): ChangeBatch {
    const out = emptyChanges();
    const runtime = this.context.runtime;
    const { first, last, step, plus } = series;
    const rows = changes.rows;
    const signs = changes.signs;
    const outWidth = output.length;
    const { copied, windowAt } = this.seriesColumns;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const sign = signs[i]!;
      let from: Value;
      let to: Value;
      try {
        from = first(row, runtime);
        to = last(row, runtime);
      } catch (error) {
        this.context.recordError(error);
        continue;
      }
      if (from === null || to === null) continue;
      if (typeof from !== 'number' || typeof to !== 'number') {
        const joined = emptyChanges();
        // Not numbers (the template's casts and errors apply): the joined rows, projected.
        this.applyTemplate(row, sign, joined);
        for (let j = 0; j < joined.rows.length; j++) {
          const projected: Row = new Array(outWidth);
          for (let c = 0; c < outWidth; c++) projected[c] = joined.rows[j]![output[c]!]!;
          out.rows.push(projected);
          out.signs.push(joined.signs[j]!);
        }
        continue;
      }
      if (!Number.isFinite(from) || !Number.isFinite(to)) {
        // An infinite time has no window (the template would step from NaN forever): dropped, recorded.
        this.context.recordError(new SqlError(SqlState.datetimeFieldOverflow, 'timestamp out of range'));
        continue;
      }
      const start = out.rows.length;
      try {
        for (let current = from; current <= to; current = plus(current, step)) {
          // Every column from the row (a window start's slot reads column 0), then the window start.
          const projected: Row = new Array(outWidth);
          for (let c = 0; c < outWidth; c++) projected[c] = row[copied[c]!]!;
          for (let w = 0; w < windowAt.length; w++) projected[windowAt[w]!] = current;
          out.rows.push(projected);
          out.signs.push(sign);
        }
      } catch (error) {
        // Past the timestamp range: the template fails on this row too; drop what it began.
        out.rows.length = start;
        out.signs.length = start;
        this.context.recordError(error);
      }
    }
    return out;
  }
}
