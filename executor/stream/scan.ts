// StreamTableScan (linear): a table's or materialized view's changes (full rows) narrowed to the
// columns the view reads, with the pushed-down filter applied; signs pass through. Over an
// append-only source the output carries each row's hidden row id (`ChangeBatch.ids`).

import type { Row, Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { compile } from '../expr/expression.js';
import { appendOnlyRowId, arrayFor, emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamScanNode implements StreamNode {
  private readonly projection: readonly number[];
  private readonly test: ((row: Row) => boolean) | undefined;
  /** Position of the append-only source's row id in the full rows, when the output carries ids. */
  private readonly rowId: number | undefined;

  /** A row's narrowed values while it is narrowed in place. */
  private readonly scratch: Value[];
  /** The slots of a full row of the relation (an owned row's array: ChangeBatch.rowCapacity). */
  private readonly fullWidth: number;

  /** A parallel fragment's input in its worker (planner/stream/parallel.ts `workerPlan`): its rows arrive as the fragment reads them. */
  private readonly placeholder: boolean;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamTableScan' }>, context: StreamContext) {
    this.projection = plan.projection;
    this.placeholder = plan.relation.id < 0;
    this.rowId = appendOnlyRowId(plan.relation);
    this.scratch = new Array<Value>(plan.projection.length).fill(null);
    this.fullWidth = plan.relation.columns.length;
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

  /** Whether each output row is a new array only the output batch holds (not a fragment's placeholder, which passes its input on). */
  get newRows(): boolean {
    return !this.placeholder;
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.placeholder) return changes;
    if (changes.rowsOwned === true) return this.narrowInPlace(changes);
    const rowId = this.rowId;
    const projection = this.projection;
    const width = projection.length;
    const test = this.test;
    const rows = changes.rows;
    const signs = changes.signs;
    const count = rows.length;
    // With ids, a row is made one slot longer and that slot popped: the capacity stays, so the
    // blind materialize appends the id in place (materialize.ts) without growing the array
    // (a push past a full array allocates a store of 1.5x + 16 slots and copies the row).
    const capacity = rowId === undefined ? width : width + 1;
    if (test === undefined) {
      // Every row passes: the batch's arrays at their final length, the signs copied at once.
      const outRows = arrayFor<Row>(count);
      for (let i = 0; i < count; i++) outRows[i] = narrow(rows[i]!, projection, width, capacity);
      if (rowId === undefined) return { rows: outRows, signs: signs.slice() };
      const ids = arrayFor<Value>(count);
      for (let i = 0; i < count; i++) ids[i] = rows[i]![rowId]!;
      return { rows: outRows, signs: signs.slice(), ids };
    }
    const ids: Value[] | undefined = rowId === undefined ? undefined : [];
    const out: ChangeBatch = ids === undefined ? emptyChanges() : { rows: [], signs: [], ids };
    for (let i = 0; i < count; i++) {
      const full = rows[i]!;
      const row = narrow(full, projection, width, capacity);
      if (!test(row)) continue;
      out.rows.push(row);
      out.signs.push(signs[i]!);
      if (ids !== undefined) ids.push(full[rowId!]!);
    }
    return out;
  }

  /**
   * A batch only this scan reads, whose rows nothing else holds (ChangeBatch.rowsOwned): each row
   * narrowed in place (its columns into the scratch row first: the projection may reorder them),
   * the batch's own arrays compacted past the rows the filter drops. A row keeps its capacity, so
   * the blind materialize appends the id without growing it, and a wider projection above writes
   * into it (`rowCapacity`: the relation's full width).
   */
  private narrowInPlace(changes: ChangeBatch): ChangeBatch {
    const rowId = this.rowId;
    const projection = this.projection;
    const width = projection.length;
    const test = this.test;
    const rows = changes.rows;
    const signs = changes.signs;
    const count = rows.length;
    const ids = rowId === undefined ? undefined : arrayFor<Value>(count);
    const scratch = this.scratch;
    let kept = 0;
    for (let i = 0; i < count; i++) {
      const full = rows[i]!;
      for (let c = 0; c < width; c++) scratch[c] = full[projection[c]!] ?? null;
      if (test !== undefined && !test(scratch)) continue;
      if (ids !== undefined) ids[kept] = full[rowId!]!;
      for (let c = 0; c < width; c++) full[c] = scratch[c]!;
      full.length = width;
      rows[kept] = full;
      signs[kept] = signs[i]!;
      kept++;
    }
    for (let c = 0; c < width; c++) scratch[c] = null;
    if (kept < count) {
      rows.length = kept;
      signs.length = kept;
      if (ids !== undefined) ids.length = kept;
    }
    const rowCapacity = this.fullWidth;
    return ids === undefined ? { rows, signs, rowCapacity } : { rows, signs, ids, rowCapacity };
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}

/** The columns `projection` of `full`, in a new row with room for `capacity` values. */
function narrow(full: Row, projection: readonly number[], width: number, capacity: number): Row {
  const row: Row = new Array(capacity);
  for (let c = 0; c < width; c++) row[c] = full[projection[c]!] ?? null;
  if (capacity > width) row.pop();
  return row;
}

/**
 * True when every batch `plan` outputs carries row ids (`ChangeBatch.ids`): a scan of an
 * append-only source, then only filters and projections (each output row is one input row).
 */
export function carriesRowIds(plan: StreamPlan): boolean {
  switch (plan.kind) {
    case 'StreamTableScan':
      return appendOnlyRowId(plan.relation) !== undefined;
    case 'StreamFilter':
    case 'StreamProject':
      return carriesRowIds(plan.input);
    case 'StreamTemporalJoin':
      // At most one output row per left row when its lookup is by the table's primary key.
      return plan.index === undefined && carriesRowIds(plan.inputs[0]!);
    default:
      return false;
  }
}
