// State cleaning by watermark (in views that EMIT ON WINDOW CLOSE): a hash aggregate grouped by, or
// a hash join keyed by, a column that follows watermarks (`StateCleaning`, planner/stream/watermark.ts)
// deletes the state rows of the keys its watermark has passed: no change with such a key can arrive
// any more, since the watermark filters drop the rows behind their watermarks.
//
// The bound is the least derived watermark as of the last committed epoch, not the open one's: a
// watermark filter moves its watermark with each batch, and the batch's rows (behind the new
// watermark, not behind the old) may still be on their way to this operator (the other side of a
// join, a later push of the epoch). Every row of this epoch or a later one is at or above the
// committed watermark. The operator cleans when that bound moves: one read per watermark table and
// committed epoch. A state table keyed by the cleaned column first (plan version 5 keys it so:
// planner/stream/incrementalize.ts `cleanedFirst`) then deletes every closed key with one range
// delete (`StateTable.deleteBelow`): one record per table and watermark advance, no tombstone per
// key, no row read; the operator drops the closed keys from its own cache. A table keyed otherwise
// (a view of plan version 4) has its closed rows found (a complete cache's rows, else a scan of the
// whole table) and deleted one by one, each a version in the MVCC store until its GC passes it.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { Epoch } from '../../sql/epoch.js';
import { compareValues } from '../../sql/compare.js';
import type { StateTable } from '../../storage/state-table.js';
import { assert } from '../../sql/errors.js';
import type { StateCleaning } from '../../planner/stream/stream-plan.js';
import { compile, type Evaluator } from '../expr/expression.js';
import type { StreamContext } from './stream-context.js';

const WATERMARK_KEY: Row = [0];

export class WatermarkCleaner {
  private readonly bounds: readonly { readonly table: StateTable; readonly derive: Evaluator }[];
  /** Index of the key column in the state rows. */
  readonly column: number;
  private readonly type: DataType;
  /** The committed epoch the bound was last read at, and the bound cleaned up to. */
  private readAt: Epoch | undefined;
  private cleanedBelow: Value = null;
  /** The bound before the last move: rows below it were deleted already (a scan starts there, past their tombstones). */
  private previous: Value = null;

  constructor(
    clean: StateCleaning,
    type: DataType,
    private readonly context: StreamContext,
  ) {
    this.bounds = clean.bounds.map((bound) => ({ table: context.stateTable(bound.watermarkTable), derive: compile(bound.derive) }));
    this.column = clean.key;
    this.type = type;
  }

  /** The bound below which keys closed, when it moved past what was cleaned since the last committed epoch; else null. */
  advance(): Value {
    const epoch = this.context.store.committedEpoch;
    if (epoch === this.readAt) return null;
    this.readAt = epoch;
    let bound: Value = null;
    for (let i = 0; i < this.bounds.length; i++) {
      const { table, derive } = this.bounds[i]!;
      const watermark = table.get(WATERMARK_KEY, epoch)?.[1] ?? null;
      if (watermark === null) return null;
      let derived: Value;
      try {
        derived = derive([watermark], this.context.runtime);
      } catch {
        // The EMIT ON WINDOW CLOSE node records the same error.
        return null;
      }
      if (derived === null) return null;
      if (i === 0 || compareValues(derived, bound, this.type) < 0) bound = derived;
    }
    if (bound === null || (this.cleanedBelow !== null && compareValues(bound, this.cleanedBelow, this.type) <= 0)) return null;
    this.previous = this.cleanedBelow;
    this.cleanedBelow = bound;
    return bound;
  }

  /** `table` is keyed by the cleaned column first and deletes a range: `deleteBelow([bound])` cleans it. */
  ranged(table: StateTable): boolean {
    return table.schema.primaryKey[0] === this.column && table.deleteBelow !== undefined;
  }

  /** A key value the watermark closed (below `bound`; never NULL: a NULL key never closes). */
  closes(value: Value, bound: Value): boolean {
    return value !== null && compareValues(value, bound, this.type) < 0;
  }

  /** The rows of `table` whose key column is below `bound` (never NULL: a NULL key never closes). */
  closedRows(table: StateTable, bound: Value): Row[] {
    if (table.schema.primaryKey[0] === this.column) {
      const rows: Row[] = [];
      // The deleted rows' versions stay in the store within its retention: start past them.
      for (const row of table.scan(this.previous === null ? { end: [bound] } : { start: [this.previous], end: [bound] })) {
        const value = row[0] ?? null;
        if (value !== null) rows.push(row);
      }
      return rows;
    }
    return this.closedOf(table.scan(), bound);
  }

  /** Of `rows` (a complete cache's: every row of the table), those whose key column is below `bound`. */
  closedOf(rows: Iterable<Row>, bound: Value): Row[] {
    const column = this.column;
    const type = this.type;
    const closed: Row[] = [];
    for (const row of rows) {
      const value = row[column] ?? null;
      if (value !== null && compareValues(value, bound, type) < 0) closed.push(row);
    }
    return closed;
  }

  /** The open epoch was aborted (its deletes with it): clean again from the next bound read. */
  reset(): void {
    this.readAt = undefined;
    this.cleanedBelow = null;
    this.previous = null;
  }
}

/**
 * Where a cleaned operator's state table moved its cleaned key column (plan version 5 keys it first,
 * `cleanedFirst`): the column's position among the operator's key columns, or -1 when the table
 * keeps the operator's key order (the operator's key values are then the table's key prefix as is).
 */
export function movedKeyColumn(clean: StateCleaning | undefined, table: StateTable): number {
  if (clean === undefined || clean.key === 0 || table.schema.primaryKey[0] !== clean.key) return -1;
  return clean.key;
}

/** `values` (the operator's key order, then anything after it) rotated in place into the table's key order: the value at `moved` first. */
export function toTableOrder(values: Value[], moved: number): Value[] {
  assert(moved < values.length, 'a cleaned key column beyond the key');
  const value = values[moved]!;
  for (let i = moved; i > 0; i--) values[i] = values[i - 1]!;
  values[0] = value;
  return values;
}
