// StreamTableScan (linear): a table's or materialized view's changes (full rows) narrowed to the
// columns the view reads, with the pushed-down filter applied; signs pass through.

import type { Row } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { compile } from '../batch/expression.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamScanNode implements StreamNode {
  private readonly projection: readonly number[];
  private readonly test: ((row: Row) => boolean) | undefined;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamTableScan' }>, private readonly context: StreamContext) {
    this.projection = plan.projection;
    if (plan.filter !== undefined) {
      const evaluate = compile(plan.filter);
      this.test = (row) => {
        try {
          return evaluate(row, context.runtime) === true;
        } catch (error) {
          context.recordError(error);
          return false;
        }
      };
    }
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    const projection = this.projection;
    const width = projection.length;
    for (let i = 0; i < changes.rows.length; i++) {
      const full = changes.rows[i]!;
      const row: Row = new Array(width);
      for (let c = 0; c < width; c++) row[c] = full[projection[c]!] ?? null;
      if (this.test !== undefined && !this.test(row)) continue;
      out.rows.push(row);
      out.signs.push(changes.signs[i]!);
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
