// The form in which decoded changes cross from a Kafka worker (kafka-worker.ts) to the main thread:
// one packed buffer of rows in storage's row encoding (storage/row-codec.ts: self-describing, exact
// for every value type, including numeric, interval, jsonb and arrays) plus one Int8Array of
// kinds. Both are transferred, not copied; nothing per row crosses the thread boundary. The main
// thread rebuilds the rows with one pass over the buffer.

import type { Row, Value } from '../../../sql/value.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { decodeRowValue, encodeRow, RowReader } from '../../../storage/row-codec.js';

/** Changes decoded in the worker: `count` rows packed in `rows`, with their kinds (+1 upsert, -1 delete by key). */
export interface PackedChanges {
  readonly count: number;
  readonly rows: Uint8Array;
  readonly kinds: Int8Array;
}

/** Packs `rows[from..]` and their kinds into fresh, transferable buffers. */
export function packChanges(rows: readonly Row[], kinds: readonly number[], writer: ByteWriter, from = 0): PackedChanges {
  writer.reset();
  const count = rows.length - from;
  const packedKinds = new Int8Array(count);
  for (let i = 0; i < count; i++) {
    encodeRow(writer, rows[from + i]!);
    packedKinds[i] = kinds[from + i]!;
  }
  // A copy of exactly the used bytes: the writer's buffer is reused (and may be Node's pool).
  const packed = new Uint8Array(writer.length);
  packed.set(writer.buffer.subarray(0, writer.length));
  return { count, rows: packed, kinds: packedKinds };
}

/** The rows of `packed`, in order. */
export function unpackRows(packed: PackedChanges): Row[] {
  const bytes = packed.rows;
  const reader = new RowReader(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0);
  const rows: Row[] = new Array<Row>(packed.count);
  for (let i = 0; i < packed.count; i++) {
    reader.offset++; // ROW_PUT
    const width = reader.varint();
    const row: Value[] = new Array<Value>(width);
    for (let c = 0; c < width; c++) row[c] = decodeRowValue(reader);
    rows[i] = row;
  }
  if (reader.offset !== bytes.byteLength) throw new Error(`oxbow internal assertion: packed rows end at ${reader.offset}, buffer holds ${bytes.byteLength}`);
  return rows;
}
