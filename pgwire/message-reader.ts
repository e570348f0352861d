// Reads the fields of one frontend message payload, with bounds checks: a field that runs past the
// end of the message is the client's protocol error (08P01), never an exception from Buffer.

import { SqlError, SqlState } from '../sql/errors.js';

export class MessageReader {
  private offset = 0;

  constructor(
    readonly payload: Buffer,
    /** The message name for error texts ("Bind", "Parse"...). */
    private readonly messageName: string,
  ) {}

  get remaining(): number {
    return this.payload.length - this.offset;
  }

  int16(): number {
    this.need(2);
    const value = this.payload.readInt16BE(this.offset);
    this.offset += 2;
    return value;
  }

  int32(): number {
    this.need(4);
    const value = this.payload.readInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  uint32(): number {
    this.need(4);
    const value = this.payload.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  byte(): number {
    this.need(1);
    return this.payload[this.offset++]!;
  }

  cstring(): string {
    const end = this.payload.indexOf(0, this.offset);
    if (end < 0) throw this.invalid('invalid string in message');
    const value = this.payload.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return value;
  }

  /** `length` bytes, as a view into the payload (no copy). */
  bytes(length: number): Buffer {
    this.need(length);
    const value = this.payload.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }

  /** PostgreSQL checks that a message was consumed exactly ("invalid message format"). */
  expectEnd(): void {
    if (this.offset !== this.payload.length) throw this.invalid('invalid message format');
  }

  private need(size: number): void {
    if (size < 0 || this.offset + size > this.payload.length) throw this.invalid('invalid message format');
  }

  private invalid(message: string): SqlError {
    return new SqlError(SqlState.protocolViolation, message, { detail: `in ${this.messageName} message` });
  }
}
