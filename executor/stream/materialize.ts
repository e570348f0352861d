// StreamMaterialize (stateful): applies the view's changes to its contents. Two state tables: the
// view's relation table (`row ++ duplicate number`, read by batch SELECT like any table, AS OF
// included) and the count of each distinct row. A row inserted when c copies exist becomes
// (row, c); a delete removes (row, c - 1). The output is the relation's own changes (full rows
// with the duplicate number), which feed the views defined on this view. The view's secondary
// indexes (CREATE INDEX on it) get the entries of the rows written, in the same epoch.
//
// Blind inserts: over an append-only source's rows (a scan of a source without a primary key, then
// filters and projections: `carriesRowIds`), every row arrives with its source row's unique id
// (`ChangeBatch.ids`), and the row is stored as `row ++ id` with no lookup and no row count: the id
// stands in for the duplicate number. Ids are unique within their source (the process's
// RowIdAllocator, at least 2^20 x the wall-clock milliseconds, or a replayed generator source's
// unit numbers: executor/source/source-replay.ts); a blind view reads one source and every batch
// of its plan carries ids (the backfill too), so its table never holds a counted duplicate number;
// two copies of one row keep two ids. Everywhere a key can repeat the counted path stays. The rows
// are not written through to the row cache (`writeAround`): nothing here reads them back by key.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { StateTable } from '../../storage/state-table.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { KeyMap } from '../batch/row-hash.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import { carriesRowIds } from './scan.js';
import type { StreamContext, ViewIndex } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamMaterializeNode implements StreamNode {
  private readonly rows: StateTable;
  private readonly counts: StateTable;
  private readonly types: readonly DataType[];
  /** The view's secondary indexes for this batch (CREATE INDEX on the view): entries written beside its rows. */
  private indexes: readonly ViewIndex[] = [];
  /** The input's batches carry unique row ids: blind inserts (see the header). */
  private readonly blind: boolean;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamMaterialize' }>, private readonly context: StreamContext) {
    this.rows = context.stateTable(plan.stateTables[0]!);
    this.counts = context.stateTable(plan.stateTables[1]!);
    this.types = plan.columns.map((column) => column.type);
    this.blind = carriesRowIds(plan.input);
    // Blind rows are written once and not read back by key by this dataflow: no cache write-through.
    if (this.blind) this.rows.writeAround?.();
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.blind && changes.ids !== undefined) return this.applyBlind(changes, changes.ids);
    const net = new KeyMap<number>(this.types);
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const index = net.indexOf(row);
      if (index >= 0) net.values[index]! += changes.signs[i]!;
      else net.add(row, changes.signs[i]!);
    }
    const out = emptyChanges();
    this.indexes = this.context.viewIndexes();
    for (let i = 0; i < net.size; i++) {
      const delta = net.values[i]!;
      if (delta === 0) continue;
      const row = net.keys[i]!;
      const stored = this.counts.get(row);
      const before = stored === undefined ? 0 : Number(stored[row.length] as bigint);
      const after = Math.max(before + delta, 0);
      for (let n = before; n < after; n++) this.emit(out, row, n, 1);
      for (let n = before - 1; n >= after; n--) this.emit(out, row, n, -1);
      if (after > 0) this.counts.insert([...row, BigInt(after)]);
      else if (before > 0) this.counts.delete([...row, 0n]);
    }
    return out;
  }

  /** Rows keyed by their source row id: `row ++ id` written (or deleted) as is, no read. */
  private applyBlind(changes: ChangeBatch, ids: readonly Value[]): ChangeBatch {
    const indexes = (this.indexes = this.context.viewIndexes());
    const rows = changes.rows;
    const signs = changes.signs;
    const table = this.rows;
    for (let i = 0; i < rows.length; i++) {
      // The batch owns its rows (fresh arrays from the scan or a projection): the id goes on in place.
      const full = rows[i]!;
      full.push(ids[i]!);
      if (signs[i]! > 0) table.insert(full);
      else table.delete(full);
      for (const index of indexes) {
        if (signs[i]! > 0) index.table.insert(index.entry(full));
        else index.table.delete(index.entry(full));
      }
    }
    return { rows, signs };
  }

  private emit(out: ChangeBatch, row: Row, duplicate: number, sign: number): void {
    const full = [...row, BigInt(duplicate)];
    if (sign > 0) this.rows.insert(full);
    else this.rows.delete(full);
    for (const index of this.indexes) {
      if (sign > 0) index.table.insert(index.entry(full));
      else index.table.delete(index.entry(full));
    }
    out.rows.push(full);
    out.signs.push(sign);
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
