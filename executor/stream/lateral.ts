// StreamLateral (linear): a LATERAL join whose right side reads no table (HOP's window starts,
// unnest, generate_series over the row's values). The inserted rows and the deleted rows each run
// through the batch template (the NestedLoopJoin over a placeholder left input); the output keeps
// the sign of the rows it came from.

import type { Row } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { collect } from '../batch/operator.js';
import { appendChanges, emptyChanges, withSign, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamLateralNode implements StreamNode {
  constructor(
    private readonly plan: Extract<StreamPlan, { kind: 'StreamLateral' }>,
    private readonly context: StreamContext,
  ) {}

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
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
        for (const row of rows) {
          try {
            appendChanges(out, withSign(collect(this.plan.template, this.context.setTemplateInputs([[row]])), sign));
          } catch (rowError) {
            this.context.recordError(rowError);
          }
        }
        void error;
      }
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
