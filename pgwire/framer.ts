// Splits the byte stream of one connection into messages. Before startup completes a packet has no
// type byte (`int32 length | payload`); afterwards every message is `type | int32 length | payload`.
//
// Limits are checked from the header alone, before any of the body is buffered, so an oversized or
// garbage length never makes the server allocate it. A large message that arrives in many chunks is
// copied once into its own buffer (no repeated concatenation).

import { SqlError, SqlState } from '../sql/errors.js';
import { asBytes } from './node-buffer.js';

/** PostgreSQL's MAX_STARTUP_PACKET_LENGTH. */
export const MAX_STARTUP_PACKET_BYTES = 10_000;

export interface Frame {
  /** The type byte as a character; '' for a startup-phase packet. */
  readonly type: string;
  readonly payload: Buffer;
}

export class FrameError extends Error {
  constructor(readonly error: SqlError) {
    super(error.message);
  }
}

export class MessageFramer {
  private buffered: Buffer = Buffer.alloc(0);
  private offset = 0;
  /** A message body being filled from several chunks. */
  private filling: { type: string; body: Buffer; filled: number } | undefined;
  private startupPhase = true;

  constructor(private readonly maxMessageBytes: number) {}

  /** After the startup packet: messages carry a type byte. */
  endStartupPhase(): void {
    this.startupPhase = false;
  }

  /** Bytes received and not yet returned as frames. */
  get bufferedBytes(): number {
    return this.buffered.length - this.offset + (this.filling?.filled ?? 0);
  }

  push(chunk: Buffer): void {
    if (this.filling !== undefined) {
      const { body } = this.filling;
      const take = Math.min(chunk.length, body.length - this.filling.filled);
      chunk.copy(asBytes(body), this.filling.filled, 0, take);
      this.filling.filled += take;
      if (take < chunk.length) this.append(chunk.subarray(take));
      return;
    }
    this.append(chunk);
  }

  /** The next complete frame, or undefined when more bytes are needed. Throws FrameError on bad framing. */
  next(): Frame | undefined {
    if (this.filling !== undefined) {
      if (this.filling.filled < this.filling.body.length) return undefined;
      const frame = { type: this.filling.type, payload: this.filling.body };
      this.filling = undefined;
      return frame;
    }
    const available = this.buffered.length - this.offset;
    const headerBytes = this.startupPhase ? 4 : 5;
    if (available < headerBytes) return undefined;
    const type = this.startupPhase ? '' : String.fromCharCode(this.buffered[this.offset]!);
    const length = this.buffered.readInt32BE(this.offset + headerBytes - 4);
    this.check(type, length);
    const bodyBytes = length - 4;
    const bodyStart = this.offset + headerBytes;
    if (available - headerBytes >= bodyBytes) {
      const payload = this.buffered.subarray(bodyStart, bodyStart + bodyBytes);
      this.offset = bodyStart + bodyBytes;
      return { type, payload };
    }
    // Not all here yet: large bodies get their own buffer so later chunks are copied once.
    if (bodyBytes > 64 * 1024) {
      const body = Buffer.allocUnsafe(bodyBytes);
      const have = this.buffered.length - bodyStart;
      this.buffered.copy(asBytes(body), 0, bodyStart);
      this.filling = { type, body, filled: have };
      this.buffered = Buffer.alloc(0);
      this.offset = 0;
    }
    return undefined;
  }

  private append(chunk: Buffer): void {
    if (this.offset >= this.buffered.length) {
      this.buffered = chunk;
    } else {
      this.buffered = Buffer.concat([asBytes(this.buffered.subarray(this.offset)), asBytes(chunk)]);
    }
    this.offset = 0;
  }

  private check(type: string, length: number): void {
    if (this.startupPhase) {
      if (length < 8 || length > MAX_STARTUP_PACKET_BYTES) {
        throw new FrameError(new SqlError(SqlState.protocolViolation, 'invalid length of startup packet', { severity: 'FATAL' }));
      }
      return;
    }
    if (length < 4) {
      throw new FrameError(
        new SqlError(SqlState.protocolViolation, `invalid message length ${length} in message type "${printable(type)}"`, { severity: 'FATAL' }),
      );
    }
    if (length > this.maxMessageBytes) {
      throw new FrameError(
        new SqlError(SqlState.programLimitExceeded, `message of type "${printable(type)}" is ${length} bytes, more than the limit of ${this.maxMessageBytes} bytes`, {
          severity: 'FATAL',
          hint: 'Send large data in several messages (COPY sends one row per CopyData message).',
        }),
      );
    }
  }
}

function printable(type: string): string {
  const code = type.charCodeAt(0);
  return code >= 0x20 && code < 0x7f ? type : `0x${code.toString(16).padStart(2, '0')}`;
}
