// StreamWatermarkFilter (stateful, in views that EMIT ON WINDOW CLOSE): above the scan of a relation
// with `WATERMARK FOR ts AS ts - interval 'd'`. The watermark is the largest `ts - d` of the rows
// seen so far, kept in a one-row state table (`0 ++ watermark`) so it survives restarts. A batch of
// changes is checked against the watermark as it was before the batch (RisingWave checks per
// chunk): rows whose ts is behind it are dropped and counted as the view's error "row behind the
// watermark dropped" (oxbow_catalog.view_errors); then the batch's rows move the watermark forward.
// Row ids (`ChangeBatch.ids`) follow their rows.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { compareValues } from '../../sql/compare.js';
import { parseInterval } from '../../sql/interval.js';
import { negateInterval, timestampPlusInterval, timestamptzPlusInterval } from '../../sql/datetime-arithmetic.js';
import type { Interval } from '../../sql/value.js';
import type { StateTable } from '../../storage/state-table.js';
import type { WatermarkFilter } from '../../planner/stream/stream-plan.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

const WATERMARK_KEY: Row = [0];

export const LATE_ROW_MESSAGE = 'row behind the watermark dropped';

export class StreamWatermarkFilterNode implements StreamNode {
  private readonly state: StateTable;
  private readonly column: number;
  private readonly type: DataType;
  private readonly minusDelay: Interval;

  constructor(plan: WatermarkFilter, private readonly context: StreamContext) {
    this.state = context.stateTable(plan.stateTables[0]!);
    this.column = plan.column;
    this.type = plan.inputs[0]!.columns[plan.column]!.type;
    this.minusDelay = negateInterval(parseInterval(plan.delay));
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const watermark = this.state.get(WATERMARK_KEY)?.[1] ?? null;
    // Row ids (`ChangeBatch.ids`, an append-only source's) follow their rows: a hash join side of
    // plan version 9 above is stored by them.
    const inIds = changes.ids;
    const ids: Value[] | undefined = inIds === undefined ? undefined : [];
    const out: ChangeBatch = ids === undefined ? emptyChanges() : { rows: [], signs: [], ids };
    let latest: Value = null;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const time = row[this.column] ?? null;
      if (time !== null && watermark !== null && compareValues(time, watermark, this.type) < 0) {
        this.context.recordError(new Error(LATE_ROW_MESSAGE));
        continue;
      }
      out.rows.push(row);
      out.signs.push(changes.signs[i]!);
      if (ids !== undefined) ids.push(inIds![i]!);
      if (time !== null && changes.signs[i]! > 0 && (latest === null || compareValues(time, latest, this.type) > 0)) latest = time;
    }
    if (latest !== null) {
      let candidate: Value;
      try {
        candidate = this.type.name === 'timestamptz' ? timestamptzPlusInterval(latest as number, this.minusDelay, 'UTC') : timestampPlusInterval(latest as number, this.minusDelay);
      } catch (error) {
        this.context.recordError(error);
        candidate = null;
      }
      if (candidate !== null && (watermark === null || compareValues(candidate, watermark, this.type) > 0)) this.state.insert([0, candidate]);
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
