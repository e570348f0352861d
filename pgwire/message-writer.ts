// The output buffer of one connection: backend messages are appended to one growing Buffer and
// written to the socket in one call per batch (a flush at Sync, Flush, ReadyForQuery or when the
// buffer passes a threshold), never one socket write per message or per row.
//
// A message is `type byte | int32 length (including itself) | payload`. `begin()` reserves the
// length and `end()` patches it, so message writers never compute sizes up front.
import { asBytes } from './node-buffer.js';

const INITIAL_CAPACITY_BYTES = 16 * 1024;
const SHORT_STRING_CHARACTERS = 32;

export class MessageWriter {
  private buffer: Buffer = Buffer.allocUnsafe(INITIAL_CAPACITY_BYTES);
  private offset = 0;
  private messageStart = -1;

  /** Bytes written and not yet taken. */
  get length(): number {
    return this.offset;
  }

  /** Starts a message of the given type (a character such as 'D'). */
  begin(type: string): this {
    this.ensure(5);
    this.buffer[this.offset] = type.charCodeAt(0);
    this.messageStart = this.offset + 1;
    this.offset += 5;
    return this;
  }

  /**
   * Drops a message that begin() opened and end() never closed (an encoder threw halfway through
   * a DataRow), so an ErrorResponse can follow on a well-formed stream.
   */
  abandonOpenMessage(): void {
    if (this.messageStart < 0) return;
    this.offset = this.messageStart - 1;
    this.messageStart = -1;
  }

  /** Patches the length of the message opened by begin(). */
  end(): this {
    this.buffer.writeInt32BE(this.offset - this.messageStart, this.messageStart);
    this.messageStart = -1;
    return this;
  }

  int8(value: number): this {
    this.ensure(1);
    this.buffer[this.offset++] = value & 0xff;
    return this;
  }

  int16(value: number): this {
    this.ensure(2);
    this.buffer.writeInt16BE(value, this.offset);
    this.offset += 2;
    return this;
  }

  int32(value: number): this {
    this.ensure(4);
    this.buffer.writeInt32BE(value | 0, this.offset);
    this.offset += 4;
    return this;
  }

  /** A NUL-terminated UTF-8 string. */
  cstring(value: string): this {
    this.ensure(value.length * 3 + 1);
    this.offset += this.buffer.write(value, this.offset, 'utf8');
    this.buffer[this.offset++] = 0;
    return this;
  }

  /** UTF-8 text without terminator (the caller wrote its length). */
  text(value: string): this {
    this.ensure(value.length * 3);
    this.offset += this.buffer.write(value, this.offset, 'utf8');
    return this;
  }

  /** An int32 length followed by the UTF-8 bytes of `value` (a DataRow column in text format). */
  lengthPrefixedText(value: string): this {
    const length = value.length;
    this.ensure(4 + length * 3);
    const buffer = this.buffer;
    const start = this.offset;
    // Short ASCII strings (most column values) are copied by hand: Buffer.write's native call
    // costs more than the loop for them.
    if (length <= SHORT_STRING_CHARACTERS) {
      let at = start + 4;
      let i = 0;
      for (; i < length; i++) {
        const code = value.charCodeAt(i);
        if (code >= 0x80) break;
        buffer[at++] = code;
      }
      if (i === length) {
        buffer.writeInt32BE(length, start);
        this.offset = at;
        return this;
      }
    }
    const written = buffer.write(value, start + 4, 'utf8');
    buffer.writeInt32BE(written, start);
    this.offset = start + 4 + written;
    return this;
  }

  bytes(value: Uint8Array): this {
    this.ensure(value.length);
    this.buffer.set(value, this.offset);
    this.offset += value.length;
    return this;
  }

  /** Reserves `size` bytes and returns the offset of the reservation (for binary encoders). */
  reserve(size: number): number {
    this.ensure(size);
    const at = this.offset;
    this.offset += size;
    return at;
  }

  /** The underlying buffer, valid until the next write (binary encoders write into a reservation). */
  get raw(): Buffer {
    return this.buffer;
  }

  /** Takes the written bytes (a copy owned by the caller) and empties the writer. */
  take(): Buffer {
    const out = Buffer.from(asBytes(this.buffer.subarray(0, this.offset)));
    this.offset = 0;
    if (this.buffer.length > 1024 * 1024) this.buffer = Buffer.allocUnsafe(INITIAL_CAPACITY_BYTES);
    return out;
  }

  private ensure(size: number): void {
    const needed = this.offset + size;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const next = Buffer.allocUnsafe(capacity);
    this.buffer.copy(asBytes(next), 0, 0, this.offset);
    this.buffer = next;
  }
}
