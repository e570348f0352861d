// StreamShared (linear): a repeated subtree's output taken from its first occurrence
// (planner/stream/share.ts). The dataflow (dataflow.ts) runs the shared subtree once and hands its
// output batch to this node as its one input; the node passes it on as it is, or with its columns
// reordered (`map`: an aggregate whose group keys are the same set in another order). Rows are
// never changed in place by the nodes above, so both parents read the same row arrays.

import type { Row, Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamNode } from './stream-node.js';

export class StreamSharedNode implements StreamNode {
  private readonly map: Int32Array | undefined;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamShared' }>) {
    this.map = plan.map === undefined ? undefined : Int32Array.from(plan.map);
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const map = this.map;
    if (map === undefined) return changes;
    const width = map.length;
    const rows = changes.rows;
    const out: Row[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const input = rows[i]!;
      const row: Row = new Array(width);
      for (let c = 0; c < width; c++) row[c] = input[map[c]!] as Value;
      out[i] = row;
    }
    return { rows: out, signs: changes.signs.slice() };
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
