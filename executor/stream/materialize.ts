// StreamMaterialize (stateful): applies the view's changes to its contents, the view's relation
// table (read by batch SELECT like any table, AS OF included). The output is the relation's own
// changes (full rows with the hidden last column), which feed the views defined on this view. The
// view's secondary indexes (CREATE INDEX on it) get the entries of the rows written, in the same
// epoch. Three layouts, chosen by the planner (planner/stream/incrementalize.ts, `plan.key`):
//
// Keyed (plan version 3, the query's unique key known: planner/stream/unique-key.ts): the table is
// stored by that key, one row per key, the hidden column 0. A batch's changes are netted per key:
// the key's before and after rows are each unique, so what is left is at most one delete (the old
// row) and one insert (the new row); an insert is one upsert of the new row, a delete alone deletes
// the key. No read and no row counts: the old row is in the change itself. A key left with more is
// a wrong key (a planner bug): XX000, never a silent overwrite.
//
// Counted (no key known): `row ++ duplicate number` and the count of each distinct row. A row
// inserted when c copies exist becomes (row, c); a delete removes (row, c - 1).
//
// Blind inserts: over an append-only source's rows (a scan of a source without a primary key, then
// filters and projections: `carriesRowIds`), every row arrives with its source row's unique id
// (`ChangeBatch.ids`), and the row is stored as `row ++ id` with no lookup and no row count: the id
// stands in for the duplicate number (and, from plan version 3, is the table's whole key). Ids are
// unique within their source (the process's RowIdAllocator, at least 2^20 x the wall-clock
// milliseconds, or a replayed generator source's unit numbers: executor/connectors/source-replay.ts); a
// blind view reads one source and every batch of its plan carries ids (the backfill too), so its
// table never holds a counted duplicate number; two copies of one row keep two ids. The rows are
// not written through to the row cache (`writeAround`): nothing here reads them back by key. Inserts
// are appended (StateTable.append): encoded for the commit as they arrive, so the rows die young.
//
// Numbered (plan version 8, `plan.numbered`): over an input that only inserts but carries no row
// ids (an inner join of append-only sources, UNION ALL, LATERAL: planner/stream/unique-key.ts
// `insertsOnly`), each row is stored as `row ++ n` under a number n the view allocates, with no
// read of a row count: one write per row, appended and written around the row cache as blind
// inserts are. The next number is a state row of its own (`stateTables[1]`), read once per batch
// and written in the same epoch as the rows it numbered: a restart, or an epoch that fails and is
// retried, numbers from the last committed value, so no number is given to two stored rows. A
// delete would need the number of a copy of its row (a planner bug on an append-only input): XX000.
//
// A sink AS query's dataflow (StreamContext.sinkOutput) also writes its output, every change in
// order, to the sink's change log (change-log.ts), which its deliveries read, or, for a target
// that needs no log (a blackhole), to its DirectChanges. An append-only sink (blind inserts) keeps
// no rows at all.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { StateTable } from '../../storage/state-table.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { KeyMap, keysEqual } from '../expr/row-hash.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import { carriesRowIds } from './scan.js';
import { ChangeLogWriter, type ChangeCounter } from './change-log.js';
import type { StreamContext, ViewIndex } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** The key of the numbered layout's one state row. */
const NEXT_NUMBER_KEY: Row = [0];

export class StreamMaterializeNode implements StreamNode {
  private readonly rows: StateTable;
  /** The counted layout's row counts; undefined when the view is stored by its key. */
  private readonly counts: StateTable | undefined;
  private readonly types: readonly DataType[];
  /** Keyed layout: positions of the key's columns in the query's rows (none: a one-row view). */
  private readonly keyColumns: readonly number[] | undefined;
  private readonly keyTypes: readonly DataType[];
  private readonly name: string;
  /** The view's secondary indexes for this batch (CREATE INDEX on the view): entries written beside its rows. */
  private indexes: readonly ViewIndex[] = [];
  /** The input's batches carry unique row ids: blind inserts (see the header). */
  private readonly blind: boolean;
  /** The numbered layout's next row number (`int4 0, int8 next`); undefined in the other layouts. */
  private readonly numbers: StateTable | undefined;
  /** Numbered layout: the input's rows are fresh arrays only this node holds (a projection's), so the number goes on in place. */
  private readonly ownsRows: boolean;
  /** A sink's change log (its output in order); undefined for a view. */
  private readonly log: ChangeCounter | undefined;
  /** Whether the rows are written to the relation's table (not for an append-only sink, whose log holds them). */
  private readonly keepRows: boolean;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamMaterialize' }>, private readonly context: StreamContext) {
    this.rows = context.stateTable(plan.stateTables[0]!);
    this.types = plan.columns.map((column) => column.type);
    this.name = plan.name;
    this.blind = carriesRowIds(plan.input);
    const width = plan.columns.length;
    this.keyColumns = plan.key?.filter((column) => column < width);
    this.keyTypes = (this.keyColumns ?? []).map((column) => this.types[column]!);
    this.counts = plan.key === undefined ? context.stateTable(plan.stateTables[1]!) : undefined;
    this.numbers = plan.numbered === true ? context.stateTable(plan.stateTables[1]!) : undefined;
    // A projection (not one a LATERAL emits through) builds a new array per row; nothing else reads the view's input.
    this.ownsRows = plan.input.kind === 'StreamProject' && plan.input.input.kind !== 'StreamLateral';
    // Blind, numbered and keyed rows are not read back by key by this dataflow (a keyed view's
    // upserts and deletes are blind; a statement reads the view at its snapshot, past the row
    // cache): no cache write-through. Only the counted layout reads its counts (`counts.get`).
    if (this.blind || this.numbers !== undefined || this.counts === undefined) this.rows.writeAround?.();
    const output = context.sinkOutput;
    this.log = output === undefined ? undefined : output.kind === 'direct' ? context.directChanges : new ChangeLogWriter(context.store, output.tableId, plan.stateTables[0]!.columnTypes);
    this.keepRows = output === undefined || output.rowsKept || !this.blind;
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    const out = this.applyChanges(slot, changes);
    if (this.context.sinkOutput?.paused !== true) this.log?.write(out);
    return out;
  }

  private applyChanges(_slot: number, changes: ChangeBatch): ChangeBatch {
    if (this.blind && changes.ids !== undefined) return this.applyBlind(changes, changes.ids);
    if (this.numbers !== undefined) return this.applyNumbered(changes, this.numbers);
    if (this.counts === undefined) return this.applyKeyed(changes, this.keyColumns!);
    const counts = this.counts;
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
      const stored = counts.get(row);
      const before = stored === undefined ? 0 : Number(stored[row.length] as bigint);
      const after = Math.max(before + delta, 0);
      for (let n = before; n < after; n++) this.emit(out, row, n, 1);
      for (let n = before - 1; n >= after; n--) this.emit(out, row, n, -1);
      if (after > 0) counts.insert([...row, BigInt(after)]);
      else if (before > 0) counts.delete([...row, 0n]);
    }
    return out;
  }

  /**
   * The keyed layout: the batch's changes netted per key (equal rows cancel), then per key one
   * upsert of the new row, or a delete of the old one; the output is the old row's retraction and
   * the new row, each with the hidden column 0.
   */
  private applyKeyed(changes: ChangeBatch, keyColumns: readonly number[]): ChangeBatch {
    const keys = new KeyMap<number>(this.keyTypes);
    // Per change in key order of first appearance: its key's slot; then per distinct row of a slot
    // (a slot's rows chained through `nextRow`) its net sign.
    const slotFirst: number[] = [];
    const rows: Row[] = [];
    const nets: number[] = [];
    const nextRow: number[] = [];
    const types = this.types;
    const width = keyColumns.length;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      const key: Row = new Array(width);
      for (let k = 0; k < width; k++) key[k] = row[keyColumns[k]!]!;
      let slot = keys.indexOf(key);
      if (slot < 0) {
        slot = keys.add(key, 0);
        slotFirst.push(-1);
      }
      let found = -1;
      for (let r = slotFirst[slot]!; r >= 0; r = nextRow[r]!) {
        if (keysEqual(rows[r]!, row, types)) {
          found = r;
          break;
        }
      }
      if (found >= 0) nets[found]! += changes.signs[i]!;
      else {
        rows.push(row);
        nets.push(changes.signs[i]!);
        nextRow.push(slotFirst[slot]!);
        slotFirst[slot] = rows.length - 1;
      }
    }
    const out = emptyChanges();
    const indexes = (this.indexes = this.context.viewIndexes());
    for (let slot = 0; slot < slotFirst.length; slot++) {
      let removed: Row | undefined;
      let added: Row | undefined;
      for (let r = slotFirst[slot]!; r >= 0; r = nextRow[r]!) {
        const net = nets[r]!;
        if (net === 0) continue;
        if (net === -1 && removed === undefined) removed = [...rows[r]!, 0n];
        else if (net === 1 && added === undefined) added = [...rows[r]!, 0n];
        else throw new SqlError(SqlState.internalError, `materialized view "${this.name}": its changes repeat a key it is stored by`);
      }
      if (added !== undefined) this.rows.insert(added);
      else if (removed !== undefined) this.rows.delete(removed);
      for (const index of indexes) {
        if (removed !== undefined) index.table.delete(index.entry(removed));
        if (added !== undefined) index.table.insert(index.entry(added));
      }
      if (removed !== undefined) {
        out.rows.push(removed);
        out.signs.push(-1);
      }
      if (added !== undefined) {
        out.rows.push(added);
        out.signs.push(1);
      }
    }
    return out;
  }

  /** Rows keyed by their source row id: `row ++ id` written (or deleted) as is, no read. */
  private applyBlind(changes: ChangeBatch, ids: readonly Value[]): ChangeBatch {
    const indexes = (this.indexes = this.context.viewIndexes());
    const rows = changes.rows;
    const signs = changes.signs;
    const table = this.rows;
    const append = table.append === undefined ? undefined : table.append.bind(table);
    if (!this.keepRows) {
      for (let i = 0; i < rows.length; i++) rows[i]!.push(ids[i]!);
      return { rows, signs };
    }
    for (let i = 0; i < rows.length; i++) {
      // The batch owns its rows (fresh arrays from the scan or a projection): the id goes on in place.
      const full = rows[i]!;
      full.push(ids[i]!);
      // An insert under a fresh id: appended, keyed only by the commit (storage/state-table.ts).
      if (signs[i]! > 0) {
        if (append !== undefined) append(full);
        else table.insert(full);
      } else table.delete(full);
      for (const index of indexes) {
        if (signs[i]! > 0) index.table.insert(index.entry(full));
        else index.table.delete(index.entry(full));
      }
    }
    return { rows, signs };
  }

  /** Each inserted row stored as `row ++ n` under the next row number, no read; the next number written once. */
  private applyNumbered(changes: ChangeBatch, numbers: StateTable): ChangeBatch {
    const indexes = (this.indexes = this.context.viewIndexes());
    const rows = changes.rows;
    const signs = changes.signs;
    if (rows.length === 0) return emptyChanges();
    const table = this.rows;
    const append = table.append === undefined ? undefined : table.append.bind(table);
    const stored = numbers.get(NEXT_NUMBER_KEY);
    let next = stored === undefined ? 0n : (stored[1] as bigint);
    const out: Row[] = this.ownsRows ? rows : new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      if (signs[i]! < 0) throw new SqlError(SqlState.internalError, `materialized view "${this.name}": its input deleted a row, and it numbers the rows of an input that only inserts`);
      const full = this.ownsRows ? rows[i]! : rows[i]!.slice();
      full.push(next++);
      out[i] = full;
      if (append !== undefined) append(full);
      else table.insert(full);
      for (const index of indexes) index.table.insert(index.entry(full));
    }
    numbers.insert([0, next]);
    return { rows: out, signs };
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
