// A sink's change log (a sink AS query: executor/ddl/create-sink.ts): the changes its dataflow's
// StreamMaterialize emits, written in the same epoch as the dataflow's other state, as rows
// `(sequence int8, sign int4, ...the sink's row)` keyed by the sequence. Sequences grow in the
// order the changes are made, so in commit order: a delivery reads the entries above the last one
// it delivered, with their epochs (StateTable.versions, each entry one version), and what the
// target acknowledged is trimmed by one range delete (StateTable.truncate). The reader is
// executor/connectors/sink-log.ts. As RisingWave's log store between a sink's dataflow and its
// writer: a delivery costs its changes, not the size of the sink's relation.

import { type } from '../../sql/types.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { StateStore, StateTable, StateTableSchema } from '../../storage/state-table.js';
import type { ChangeBatch } from './change-batch.js';

/** Where an entry's own columns end and the sink's row begins. */
export const LOG_ROW_OFFSET = 2;

/** The log's state table: the sequence, the sign, then the sink relation's columns (`columnTypes`). */
export function changeLogSchema(tableId: number, columnTypes: readonly DataType[]): StateTableSchema {
  return { tableId, columnTypes: [type('int8'), type('int4'), ...columnTypes], primaryKey: [0] };
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
