// CopyInResponse ('G') and CopyOutResponse ('H'): the overall format (0 text, 1 binary) and a
// format code per column (all equal to the overall format, as PostgreSQL sends them).

import type { MessageWriter } from '../message-writer.js';

export function writeCopyInResponse(writer: MessageWriter, binary: boolean, columnCount: number): void {
  writeCopyResponse(writer, 'G', binary, columnCount);
}

export function writeCopyOutResponse(writer: MessageWriter, binary: boolean, columnCount: number): void {
  writeCopyResponse(writer, 'H', binary, columnCount);
}

function writeCopyResponse(writer: MessageWriter, type: string, binary: boolean, columnCount: number): void {
  const format = binary ? 1 : 0;
  writer.begin(type).int8(format).int16(columnCount);
  for (let i = 0; i < columnCount; i++) writer.int16(format);
  writer.end();
}
