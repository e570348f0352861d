// StreamWatermarkFilter alone: rows behind the watermark as it was before their batch are dropped
// and counted, the rest pass with their signs and, over an append-only source, their row ids (a
// hash join side of plan version 9 above is stored by them: an id given to another row would
// overwrite that row's state).

import { describe, expect, it } from 'vitest';
import { type as scalar } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import type { WatermarkFilter } from '../../../planner/stream/stream-plan.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { StreamContext } from '../stream-context.js';
import { LATE_ROW_MESSAGE, StreamWatermarkFilterNode } from '../watermark-filter.js';

const SECOND = 1_000_000; // timestamps are microseconds

function filterNode(errors: string[]): StreamWatermarkFilterNode {
  const columns = [
    { name: 'ts', type: scalar('timestamp'), tableOid: 0, columnNumber: 0 },
    { name: 'v', type: scalar('int4'), tableOid: 0, columnNumber: 0 },
  ];
  const plan: WatermarkFilter = {
    kind: 'StreamWatermarkFilter',
    property: 'stateful',
    inputs: [{ kind: 'StreamTableScan', property: 'linear', relation: undefined as never, projection: [0, 1], stateTables: [], columns }],
    column: 0,
    delay: '5 seconds',
    stateTables: [{ tableId: 7, purpose: 'watermark', columnTypes: [scalar('int4'), scalar('timestamp')], primaryKey: [0] }],
    columns,
  };
  const context = new StreamContext(createMemoryStateStore(), 1, { record: (_viewId, message) => void errors.push(message) });
  return new StreamWatermarkFilterNode(plan, context);
}

describe('StreamWatermarkFilter', () => {
  it('drops the rows behind the watermark before their batch and keeps each passing row with its own id', () => {
    const errors: string[] = [];
    const node = filterNode(errors);
    const batch = (seconds: readonly number[], firstId: number): { rows: Row[]; signs: number[]; ids: Value[] } => ({
      rows: seconds.map((s, i) => [s * SECOND, firstId + i]),
      signs: seconds.map(() => 1),
      ids: seconds.map((_, i) => BigInt(firstId + i)),
    });
    // No watermark yet: every row passes; the watermark becomes 20 - 5 = 15 s.
    const first = node.apply(0, batch([10, 20, 3], 100));
    expect(first.rows.map((row) => row[1])).toEqual([100, 101, 102]);
    expect(first.ids).toEqual([100n, 101n, 102n]);
    // 12 s and 14 s are behind 15 s: dropped, counted; the others keep their own ids.
    const second = node.apply(0, batch([12, 16, 14, 30, 15], 200));
    expect(second.rows.map((row) => row[1])).toEqual([201, 203, 204]);
    expect(second.ids).toEqual([201n, 203n, 204n]);
    expect(second.signs).toEqual([1, 1, 1]);
    expect(errors).toEqual([LATE_ROW_MESSAGE, LATE_ROW_MESSAGE]);
    // A table's rows carry no ids: none out.
    const plain = node.apply(0, { rows: [[40 * SECOND, 1]], signs: [1] });
    expect(plain.ids).toBeUndefined();
    expect(plain.rows).toEqual([[40 * SECOND, 1]]);
  });
});
