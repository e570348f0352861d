// The reading side of a sink's change log (executor/stream/change-log.ts: a sink AS query's
// dataflow writes every change of its rows there, keyed by a sequence that grows in commit order).
// A delivery reads the entries above the last one it delivered, up to the committed epoch, with
// each entry's epoch (its version's validFrom): its cost is the changes since, however large the
// sink's relation. What the target acknowledged is trimmed (one range delete below the first
// sequence not acknowledged) in the commit of the sink's progress.
//
// Per epoch the entries are netted by the relation's stored key, as the relation's versions would
// show them: a key's first change, when a delete, is the row it had before the epoch; its last,
// when an insert, the row after. An epoch of inserts only (an append-only query's) needs no map.
//
// The log does not depend on the relation's history: no hold, and a sink away for any length of
// time finds its changes here (they are trimmed only once delivered).

import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { RowVersion, StateStore, StateTable } from '../../storage/state-table.js';
import { KeyMap } from '../expr/row-hash.js';
import { changeLogSchema, LOG_ROW_OFFSET } from '../stream/change-log.js';
import type { EpochChanges, KeyedChanges } from './sink-changes.js';

/** Above every sequence (int8's largest): a trim below it deletes the whole log. */
const MAX_SEQUENCE = (1n << 63n) - 1n;

export class SinkLog {
  private readonly table: StateTable;
  /** The relation's rows are kept besides the log (its first delivery scans them); false: the log holds the contents. */
  readonly rowsKept: boolean;
  private readonly key: readonly number[];
  private readonly keyTypes: readonly DataType[];
  /** The first sequence not delivered; undefined: not known yet (read from the log's start, by epoch). */
  private cursor: bigint | undefined;
  /** What the last read reached: the cursor once its delivery succeeds (delivered()). */
  private reached: bigint | undefined;
  /** Per delivered epoch, the first sequence after it: what a trim through that epoch may delete. */
  private marks: { readonly epoch: Epoch; readonly next: bigint }[] = [];

  constructor(
    private readonly store: StateStore,
    relation: RelationDef,
  ) {
    const changeLog = relation.stream!.changeLog!;
    this.table = store.table(changeLogSchema(changeLog.tableId, relation.columns.map((column) => column.type)));
    this.rowsKept = changeLog.rowsKept;
    this.key = relation.primaryKey;
    this.keyTypes = relation.primaryKey.map((position) => relation.columns[position]!.type);
  }

  /** The changes committed in (from, to], per epoch in order, each netted per key; `from` undefined: every entry up to `to`. */
  changes(from: Epoch | undefined, to: Epoch): EpochChanges[] {
    const out: EpochChanges[] = [];
    let epoch: Epoch | undefined;
    let rows: Row[] = [];
    let signs: number[] = [];
    let last: bigint | undefined;
    for (const version of this.read(from, to)) {
      const entry = version.row;
      last = entry[0] as bigint;
      if (from !== undefined && version.validFrom <= from) continue;
      if (version.validFrom !== epoch) {
        if (epoch !== undefined) out.push(this.net(epoch, rows, signs));
        epoch = version.validFrom;
        rows = [];
        signs = [];
      }
      rows.push(entry.slice(LOG_ROW_OFFSET));
      signs.push(entry[1] as number);
    }
    if (epoch !== undefined) out.push(this.net(epoch, rows, signs));
    this.reached = last === undefined ? this.cursor : last + 1n;
    return out;
  }

  /**
   * For an upsert target: per key (`key`, positions in the rows, of `keyTypes`) the last change in
   * (from, to] in one pass over the entries in order, with no per-epoch netting: what applying
   * every change leaves (a key deleted last is a delete, else its last row an upsert).
   */
  lastChanges(from: Epoch, to: Epoch, key: readonly number[], keyTypes: readonly DataType[]): KeyedChanges {
    const keys = new KeyMap<number>(keyTypes);
    const last: Row[] = [];
    const lastSign: number[] = [];
    const width = key.length;
    let reachedSeq: bigint | undefined;
    for (const version of this.read(from, to)) {
      const entry = version.row;
      reachedSeq = entry[0] as bigint;
      if (version.validFrom <= from) continue;
      const probe: Row = new Array(width);
      for (let column = 0; column < width; column++) probe[column] = entry[key[column]! + LOG_ROW_OFFSET]!;
      let slot = keys.indexOf(probe);
      if (slot < 0) {
        slot = keys.add(probe, 0);
        last.push(entry);
        lastSign.push(0);
      }
      last[slot] = entry;
      lastSign[slot] = entry[1] as number;
    }
    this.reached = reachedSeq === undefined ? this.cursor : reachedSeq + 1n;
    const upserts: Row[] = [];
    const deletes: Row[] = [];
    for (let slot = 0; slot < last.length; slot++) (lastSign[slot]! > 0 ? upserts : deletes).push(last[slot]!.slice(LOG_ROW_OFFSET));
    return { upserts, deletes };
  }

  /** The log's entries up to `to` from the cursor on (all of them when it is not known), any of them at or before `from`. */
  private read(from: Epoch | undefined, to: Epoch): Iterable<RowVersion> {
    // Entries are written once and never replaced: any readable epoch at or after `from` shows them all.
    const oldest = this.store.readableWindow(this.table.schema.tableId).oldest;
    let lower = from === undefined || from < oldest ? oldest : from;
    if (lower > to) lower = to;
    return this.table.versions(lower, to, this.cursor === undefined ? {} : { start: [this.cursor] });
  }

  /** The relation's rows at `to` from the log alone (its whole history is there until delivered): the first delivery of a sink that keeps no rows. */
  contents(to: Epoch): EpochChanges[] {
    const rows: Row[] = [];
    const signs: number[] = [];
    for (const change of this.changes(undefined, to)) {
      for (const row of change.deletes) {
        rows.push(row);
        signs.push(-1);
      }
      for (const row of change.inserts) {
        rows.push(row);
        signs.push(1);
      }
    }
    return [{ epoch: to, deletes: [], inserts: this.net(to, rows, signs).inserts }];
  }

  /** The delivery of the last read, up to `to`, succeeded: the next reads after it. */
  delivered(to: Epoch): void {
    if (this.reached === undefined) return;
    this.cursor = this.reached;
    // Nothing new read: the mark already there keeps the lower epoch (an acknowledgement at or above it trims).
    if (this.marks[this.marks.length - 1]?.next !== this.reached) this.marks.push({ epoch: to, next: this.reached });
  }

  /**
   * Buffers, in the open epoch, the trim of every entry delivered up to `acknowledged` (the
   * target holds it); the caller commits. Returns whether there was anything to trim.
   */
  trim(acknowledged: Epoch): boolean {
    let bound: bigint | undefined;
    for (const mark of this.marks) if (mark.epoch <= acknowledged) bound = mark.next;
    if (bound === undefined || this.table.truncate === undefined) return false;
    this.table.truncate([bound]);
    return true;
  }

  /** Whether the log holds any entry. */
  holdsEntries(): boolean {
    for (const _ of this.table.scan({ limit: 1 })) return true;
    return false;
  }

  /** Buffers, in the open epoch, the deletion of every entry (the caller commits): a log nothing reads. */
  clear(): void {
    this.table.truncate?.([MAX_SEQUENCE]);
    this.marks = [];
    this.cursor = this.reached = undefined;
  }

  /** The trim through `acknowledged` committed: its marks go. */
  trimmed(acknowledged: Epoch): void {
    let first = 0;
    while (first < this.marks.length && this.marks[first]!.epoch <= acknowledged) first++;
    if (first > 0) this.marks = this.marks.slice(first);
  }

  /** One epoch's changes in order, netted per stored key: the row before (a first change that deletes) and the row after (a last change that inserts). */
  private net(epoch: Epoch, rows: Row[], signs: number[]): EpochChanges {
    let inserts = 0;
    for (const sign of signs) if (sign > 0) inserts++;
    if (inserts === 0) return { epoch, deletes: rows, inserts: [] };
    if (inserts === rows.length) return { epoch, deletes: [], inserts: rows };
    const keys = new KeyMap<number>(this.keyTypes);
    const first: number[] = [];
    const final: number[] = [];
    const width = this.key.length;
    for (let index = 0; index < rows.length; index++) {
      const row = rows[index]!;
      const key: Row = new Array(width);
      for (let column = 0; column < width; column++) key[column] = row[this.key[column]!]!;
      const slot = keys.indexOf(key);
      if (slot < 0) {
        keys.add(key, 0);
        first.push(index);
        final.push(index);
      } else final[slot] = index;
    }
    const deletes: Row[] = [];
    const inserted: Row[] = [];
    for (let slot = 0; slot < first.length; slot++) {
      if (signs[first[slot]!]! < 0) deletes.push(rows[first[slot]!]!);
      if (signs[final[slot]!]! > 0) inserted.push(rows[final[slot]!]!);
    }
    return { epoch, deletes, inserts: inserted };
  }
}
