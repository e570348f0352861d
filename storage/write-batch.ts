// Builds the packed write batch the addon applies atomically: entries of
// [u8 operation][u32le keyLength][key][u32le valueLength][value]. Keys and values are written in
// place (no Buffer per entry): a key is begun, its bytes appended, then closed.

import { ByteWriter } from './byte-writer.js';
import type { Bytes } from './byte-writer.js';

export const BATCH_PUT = 1;
export const BATCH_DELETE = 2;
export const BATCH_DELETE_RANGE = 3;

export class WriteBatchBuilder {
  readonly writer = new ByteWriter(64 * 1024);
  private lengthAt = 0;
  count = 0;

  reset(): void {
    this.writer.reset();
    this.count = 0;
  }

  /** Starts an entry; append the key bytes to `writer`, then call beginValue(). */
  beginKey(operation: number): void {
    this.writer.byte(operation);
    this.lengthAt = this.writer.length;
    this.writer.uint32LittleEndian(0);
    this.count++;
  }

  /** Ends the key; append the value bytes to `writer`, then call endValue(). */
  beginValue(): void {
    this.writer.patchUint32LittleEndian(this.lengthAt, this.writer.length - this.lengthAt - 4);
    this.lengthAt = this.writer.length;
    this.writer.uint32LittleEndian(0);
  }

  endValue(): void {
    this.writer.patchUint32LittleEndian(this.lengthAt, this.writer.length - this.lengthAt - 4);
  }

  put(key: Bytes, value: Bytes): void {
    this.beginKey(BATCH_PUT);
    this.writer.bytes(key);
    this.beginValue();
    this.writer.bytes(value);
    this.endValue();
  }

  delete(key: Bytes): void {
    this.beginKey(BATCH_DELETE);
    this.writer.bytes(key);
    this.beginValue();
    this.endValue();
  }

  deleteRange(start: Bytes, end: Bytes): void {
    this.beginKey(BATCH_DELETE_RANGE);
    this.writer.bytes(start);
    this.beginValue();
    this.writer.bytes(end);
    this.endValue();
  }

  view(): Buffer {
    return this.writer.view();
  }
}

/** Calls visit(operation, buffer, keyStart, keyEnd, valueStart, valueEnd) for each entry. */
export function forEachBatchEntry(
  packed: Buffer,
  visit: (operation: number, buffer: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void,
): void {
  let offset = 0;
  while (offset < packed.length) {
    const operation = packed[offset]!;
    const keyLength = packed.readUInt32LE(offset + 1);
    const keyStart = offset + 5;
    const keyEnd = keyStart + keyLength;
    const valueLength = packed.readUInt32LE(keyEnd);
    const valueStart = keyEnd + 4;
    const valueEnd = valueStart + valueLength;
    visit(operation, packed, keyStart, keyEnd, valueStart, valueEnd);
    offset = valueEnd;
  }
}
