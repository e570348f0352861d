// StreamProject (linear): computes the output columns of each changed row, sign unchanged. An
// expression that fails on a row (division by zero, a bad cast) yields NULL for that column, as
// RisingWave does, and the error is recorded for the view: a running view never stops.

import type { Row } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { compile, type Evaluator } from '../batch/expression.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamProjectNode implements StreamNode {
  private readonly evaluators: readonly Evaluator[];

  constructor(plan: Extract<StreamPlan, { kind: 'StreamProject' }>, private readonly context: StreamContext) {
    this.evaluators = plan.expressions.map(compile);
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    const runtime = this.context.runtime;
    const evaluators = this.evaluators;
    const width = evaluators.length;
    for (let i = 0; i < changes.rows.length; i++) {
      const input = changes.rows[i]!;
      const row: Row = new Array(width);
      for (let c = 0; c < width; c++) {
        try {
          row[c] = evaluators[c]!(input, runtime);
        } catch (error) {
          this.context.recordError(error);
          row[c] = null;
        }
      }
      out.rows.push(row);
      out.signs.push(changes.signs[i]!);
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
