// COPY FROM STDIN in PostgreSQL's binary file format (asyncpg's copy_records_to_table sends it):
// the 19-byte header ("PGCOPY\n\377\r\n\0", flags, header extension), then per tuple a 16-bit
// field count and each field as a 32-bit length (-1: NULL) and the type's binary (receive) bytes,
// then the trailer (field count -1). CopyData messages may split the stream anywhere; fields are
// decoded with the columns' types as Bind parameters are (binary.ts's readBinary).

import { SqlError, SqlState } from '../sql/errors.js';
import type { EvalContext } from '../sql/functions.js';
import type { DataType } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { readBinary } from './binary.js';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

function badFormat(message: string): SqlError {
  return new SqlError(SqlState.badCopyFileFormat, message);
}

export class BinaryCopyReader {
  private pending: Buffer = Buffer.alloc(0);
  private headerRead = false;
  private ended = false;
  private tuples = 0;

  constructor(
    private readonly types: readonly DataType[],
    private readonly context: EvalContext,
  ) {}

  /** The complete tuples of the data so far (the rest waits for the next CopyData). */
  push(chunk: Uint8Array): Row[] {
    this.pending = this.pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk]);
    const rows: Row[] = [];
    let offset = 0;
    const buffer = this.pending;
    if (!this.headerRead) {
      if (buffer.length < SIGNATURE.length + 8) return rows;
      if (!buffer.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw badFormat('COPY file signature not recognized');
      const flags = buffer.readInt32BE(SIGNATURE.length);
      if ((flags & 0xffff0000) !== 0) throw badFormat('invalid COPY file header (unrecognized critical flags)');
      const extension = buffer.readInt32BE(SIGNATURE.length + 4);
      if (extension < 0) throw badFormat('invalid COPY file header (missing length)');
      if (buffer.length < SIGNATURE.length + 8 + extension) return rows;
      offset = SIGNATURE.length + 8 + extension;
      this.headerRead = true;
    }
    while (!this.ended && offset + 2 <= buffer.length) {
      const count = buffer.readInt16BE(offset);
      if (count === -1) {
        this.ended = true;
        offset += 2;
        break;
      }
      if (count !== this.types.length) throw badFormat(`row field count is ${count}, expected ${this.types.length}`);
      // The whole tuple first: its fields are decoded only once all are here.
      let end = offset + 2;
      let complete = true;
      for (let field = 0; field < count; field++) {
        if (end + 4 > buffer.length) {
          complete = false;
          break;
        }
        const length = buffer.readInt32BE(end);
        if (length < -1) throw badFormat('invalid field size');
        end += 4 + Math.max(length, 0);
        if (end > buffer.length) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      let position = offset + 2;
      const row: Row = [];
      this.tuples++;
      for (let field = 0; field < count; field++) {
        const length = buffer.readInt32BE(position);
        position += 4;
        if (length === -1) {
          row.push(null);
          continue;
        }
        try {
          row.push(readBinary(buffer.subarray(position, position + length), this.types[field]!, this.context, field + 1));
        } catch (error) {
          if (error instanceof SqlError) error.context = `COPY, line ${this.tuples}, column ${field + 1}`;
          throw error;
        }
        position += length;
      }
      rows.push(row);
      offset = end;
    }
    this.pending = buffer.subarray(offset);
    return rows;
  }

  /** CopyDone: the trailer must have come, and nothing after it. */
  end(): void {
    if (!this.ended) throw badFormat('unexpected EOF in COPY data');
  }
}
