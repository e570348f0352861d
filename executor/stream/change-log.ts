// A sink's change log (a sink AS query: executor/ddl/create-sink.ts): the changes its dataflow's
// StreamMaterialize emits, written in the same epoch as the dataflow's other state, as rows
// `(sequence int8, sign int4, ...the sink's row)` keyed by the sequence. Sequences grow in the
// order the changes are made, so in commit order: a delivery reads the entries above the last one
// it delivered, with their epochs (StateTable.versions, each entry one version), and what the
// target acknowledged is trimmed by one range delete (StateTable.truncate). The reader is
// executor/connectors/sink-log.ts. As RisingWave's log store between a sink's dataflow and its
// writer: a delivery costs its changes, not the size of the sink's relation.
//
// A sink whose target delivers locally, cannot fail and has nothing to deliver after a crash (a
// blackhole: executor/connectors/sink-target.ts, `direct`) has no log, as RisingWave's sink
// executor writes a chunk straight to a writer that is not decoupled: `DirectChanges` counts the
// changes as the dataflow makes them, in memory, and gives them to the delivery once their epoch
// is committed; an aborted epoch's are dropped. Nothing of it is stored, so nothing of it survives
// a restart. A direct sink that runs as a source fragment (parallel/source-fragment.ts) has its
// workers count their own changes per epoch (`ChangeCounter`); each worker's counts come back with
// its epoch batch and join the main thread's DirectChanges under that epoch (`counted`).

import { type } from '../../sql/types.js';
import type { DataType } from '../../sql/types.js';
import type { Epoch } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { StateStore, StateTable, StateTableSchema } from '../../storage/state-table.js';
import type { ChangeBatch } from './change-batch.js';

/** Where an entry's own columns end and the sink's row begins. */
export const LOG_ROW_OFFSET = 2;

/** The log's state table: the sequence, the sign, then the sink relation's columns (`columnTypes`). */
export function changeLogSchema(tableId: number, columnTypes: readonly DataType[]): StateTableSchema {
  return { tableId, columnTypes: [type('int8'), type('int4'), ...columnTypes], primaryKey: [0] };
}

/** Where a direct sink's StreamMaterialize counts its output: DirectChanges, or a source fragment's worker's counts of its open epoch. */
export interface ChangeCounter {
  write(changes: ChangeBatch): void;
}

/**
 * A direct sink's changes (see the header): per epoch the number of rows inserted and deleted,
 * taken by the delivery once the epoch is committed. Changes are told apart by epoch without a
 * hook at the seal: those made while the store's last sealed epoch is L belong to the first epoch
 * sealed after L, so they are committed once an epoch above L is.
 */
export class DirectChanges implements ChangeCounter {
  /** The store's last sealed epoch when the open run of changes began; undefined: none yet. */
  private openAfter: Epoch | undefined;
  private openInserts = 0;
  private openDeletes = 0;
  /** Runs of changes whose epoch was sealed, in order: `after` the last epoch sealed before it. */
  private sealed: { after: Epoch; inserts: number; deletes: number }[] = [];
  /** Changes counted elsewhere (a source fragment's workers), each run under the epoch it was sealed as. */
  private elsewhere: { epoch: Epoch; inserts: number; deletes: number }[] = [];

  constructor(private readonly store: StateStore) {}

  /** The changes of a batch of the open epoch (only counted: the batch is not kept). */
  write(changes: ChangeBatch): void {
    const rows = changes.rows.length;
    if (rows === 0) return;
    const after = this.store.latestEpoch;
    if (after !== this.openAfter) {
      if (this.openAfter !== undefined && this.openInserts + this.openDeletes > 0) this.sealed.push({ after: this.openAfter, inserts: this.openInserts, deletes: this.openDeletes });
      this.openAfter = after;
      this.openInserts = 0;
      this.openDeletes = 0;
    }
    const signs = changes.signs;
    let inserts = 0;
    for (let i = 0; i < rows; i++) if (signs[i]! > 0) inserts++;
    this.openInserts += inserts;
    this.openDeletes += rows - inserts;
  }

  /** The open epoch was aborted: its changes are gone (those of epochs sealed before it stay). */
  discard(): void {
    if (this.openAfter !== this.store.latestEpoch) return;
    this.openInserts = 0;
    this.openDeletes = 0;
  }

  /**
   * Changes a source fragment's worker counted in the epoch it sealed as `epoch` (handed over with
   * its batch, before `epoch` can be committed). An epoch that fails is never committed, so its
   * counts are never taken.
   */
  counted(epoch: Epoch, inserts: number, deletes: number): void {
    if (inserts + deletes > 0) this.elsewhere.push({ epoch, inserts, deletes });
  }

  /** The rows inserted and deleted in the epochs up to `to` (a committed epoch) not taken yet; taken now. */
  take(to: Epoch): { inserts: number; deletes: number } {
    let inserts = 0;
    let deletes = 0;
    if (this.elsewhere.length > 0) {
      const kept: { epoch: Epoch; inserts: number; deletes: number }[] = [];
      for (const run of this.elsewhere) {
        if (run.epoch > to) kept.push(run);
        else {
          inserts += run.inserts;
          deletes += run.deletes;
        }
      }
      this.elsewhere = kept;
    }
    let taken = 0;
    while (taken < this.sealed.length && this.sealed[taken]!.after < to) {
      inserts += this.sealed[taken]!.inserts;
      deletes += this.sealed[taken]!.deletes;
      taken++;
    }
    if (taken > 0) this.sealed = this.sealed.slice(taken);
    if (this.sealed.length === 0 && this.openAfter !== undefined && this.openAfter < to) {
      inserts += this.openInserts;
      deletes += this.openDeletes;
      this.openInserts = 0;
      this.openDeletes = 0;
    }
    return { inserts, deletes };
  }
}

/** Appends a dataflow's changes to its log; the next sequence follows the log's last entry. */
export class ChangeLogWriter {
  private readonly table: StateTable;
  private next: bigint;

  constructor(store: StateStore, tableId: number, columnTypes: readonly DataType[]) {
    this.table = store.table(changeLogSchema(tableId, columnTypes));
    // Entries are read by the sink in ranges, never by key: no cache write-through.
    this.table.writeAround?.();
    let last = 0n;
    for (const row of this.table.scan({ reverse: true, limit: 1 })) last = row[0] as bigint;
    // Above the clock's 2^20 x milliseconds too: a log trimmed empty and a writer built again in
    // the same process (its sink's cursor still in memory) never reuse a sequence.
    const clock = BigInt(Date.now()) << 20n;
    this.next = last + 1n > clock ? last + 1n : clock;
  }

  write(changes: ChangeBatch): void {
    const table = this.table;
    const append = table.append === undefined ? undefined : table.append.bind(table);
    const rows = changes.rows;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const entry: Row = new Array(row.length + LOG_ROW_OFFSET);
      entry[0] = this.next++;
      entry[1] = changes.signs[i]!;
      for (let column = 0; column < row.length; column++) entry[column + LOG_ROW_OFFSET] = row[column]!;
      // A fresh sequence each: a blind insert (storage/state-table.ts, append).
      if (append !== undefined) append(entry);
      else table.insert(entry);
    }
  }
}
