// RowDescription ('T'): per result column its name, source table OID and attribute number, type
// OID, type size, type modifier and format code (0 text, 1 binary).

import type { ColumnDescription } from '../../executor/engine/engine.js';
import { TYPES, typeOid } from '../../sql/types.js';
import type { MessageWriter } from '../message-writer.js';

export function writeRowDescription(writer: MessageWriter, columns: readonly ColumnDescription[], formats: readonly number[]): void {
  writer.begin('T').int16(columns.length);
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i]!;
    const type = column.type;
    writer.cstring(column.name);
    writer.int32(column.tableOid);
    writer.int16(column.columnNumber);
    writer.int32(typeOid(type));
    writer.int16(type.name === 'array' ? -1 : TYPES[type.name].length);
    writer.int32(type.typmod);
    writer.int16(formats[i] ?? 0);
  }
  writer.end();
}
