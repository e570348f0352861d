// Changes as bytes, for the exchange between threads: per change one sign byte (0: delete,
// 1: insert) and the row in the state's row encoding (storage/row-codec.ts), which carries every
// value type exactly (bigint, numeric, timestamps...). The bytes go in a transferred ArrayBuffer:
// no structured clone of row objects.

import type { Row, Value } from '../../../sql/value.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { decodeRowValue, encodeRow, encodeRowValue, ROW_PUT, RowReader, writeVarint } from '../../../storage/row-codec.js';
import type { ChangeBatch } from '../change-batch.js';
import type { EncodedChanges } from './protocol.js';

/** Appends a change (its sign and row) to `writer`. */
export function encodeChange(writer: ByteWriter, row: Row, sign: number): void {
  writer.byte(sign > 0 ? 1 : 0);
  encodeRow(writer, row);
}

/** As `encodeChange`, the row's source row id (`ChangeBatch.ids`) after its columns: one column more. */
export function encodeChangeWithId(writer: ByteWriter, row: Row, sign: number, id: Value): void {
  writer.byte(sign > 0 ? 1 : 0);
  writer.byte(ROW_PUT);
  writeVarint(writer, row.length + 1);
  for (let index = 0; index < row.length; index++) encodeRowValue(writer, row[index]!);
  encodeRowValue(writer, id);
}

/** The writer's bytes as a transferable message part (a copy in its own ArrayBuffer). */
export function takeEncoded(writer: ByteWriter, count: number): EncodedChanges {
  const bytes = new ArrayBuffer(writer.length);
  new Uint8Array(bytes).set(writer.buffer.subarray(0, writer.length));
  return { bytes, length: writer.length, count };
}

export function encodeChanges(changes: ChangeBatch, writer = new ByteWriter(1024)): EncodedChanges {
  writer.reset();
  for (let i = 0; i < changes.rows.length; i++) encodeChange(writer, changes.rows[i]!, changes.signs[i]!);
  return takeEncoded(writer, changes.rows.length);
}

/** The changes `encoded` holds; `withIds`: each row's last value is its source row id (`encodeChangeWithId`), taken into `ids`. */
export function decodeChanges(encoded: EncodedChanges, withIds = false): ChangeBatch {
  const rows: Row[] = new Array<Row>(encoded.count);
  const signs: number[] = new Array<number>(encoded.count);
  const ids: Value[] | undefined = withIds ? new Array<Value>(encoded.count) : undefined;
  const reader = new RowReader(Buffer.from(encoded.bytes, 0, encoded.length));
  const buffer = reader.buffer;
  for (let i = 0; i < encoded.count; i++) {
    signs[i] = buffer[reader.offset++] === 1 ? 1 : -1;
    // encodeRow: the put byte, the column count, then each value.
    reader.offset++;
    const width = reader.varint();
    const row: Value[] = new Array<Value>(width);
    for (let column = 0; column < width; column++) row[column] = decodeRowValue(reader);
    if (ids !== undefined) ids[i] = row.pop()!;
    rows[i] = row;
  }
  return ids === undefined ? { rows, signs } : { rows, signs, ids };
}
