// CopyData ('d') and CopyDone ('c') in the backend direction (COPY TO STDOUT).

import type { MessageWriter } from '../message-writer.js';

export function writeCopyData(writer: MessageWriter, data: Uint8Array): void {
  writer.begin('d').bytes(data).end();
}

export function writeCopyDone(writer: MessageWriter): void {
  writer.begin('c').end();
}
