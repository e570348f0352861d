// A raw PostgreSQL protocol client for pgwire's tests: sends bytes (built with pg-protocol's
// serializer or by hand) and reads backend messages as type + payload, with their exact bytes.

import { connect, type Socket } from 'node:net';

export interface BackendMessage {
  readonly type: string;
  readonly payload: Buffer;
  /** The whole message: type, length, payload. */
  readonly bytes: Buffer;
}

export class RawClient {
  private buffered = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  closed = false;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk] as unknown as Uint8Array[]);
      this.wake();
    });
    this.closedPromise = new Promise((resolve) => {
      socket.on('close', () => {
        this.closed = true;
        this.wake();
        resolve();
      });
    });
    socket.on('error', () => {});
  }

  /** A client over a socket already connected (a TLS socket after SSLRequest). */
  static over(socket: Socket): RawClient {
    return new RawClient(socket);
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  send(...buffers: Buffer[]): void {
    for (const buffer of buffers) this.socket.write(buffer as unknown as Uint8Array);
  }

  /** One raw byte (the answer to SSLRequest). */
  async readByte(): Promise<string> {
    await this.waitFor(() => this.buffered.length >= 1);
    const byte = String.fromCharCode(this.buffered[0]!);
    this.buffered = this.buffered.subarray(1);
    return byte;
  }

  async readMessage(): Promise<BackendMessage> {
    await this.waitFor(() => this.buffered.length >= 5 && this.buffered.length >= 1 + this.buffered.readInt32BE(1));
    const length = this.buffered.readInt32BE(1);
    const bytes = this.buffered.subarray(0, 1 + length);
    this.buffered = this.buffered.subarray(1 + length);
    return { type: String.fromCharCode(bytes[0]!), payload: bytes.subarray(5), bytes };
  }

  /** Messages up to and including the first of type `type`. */
  async readUntil(type: string): Promise<BackendMessage[]> {
    const messages: BackendMessage[] = [];
    for (;;) {
      const message = await this.readMessage();
      messages.push(message);
      if (message.type === type) return messages;
    }
  }

  /** Messages until the server closes the connection. */
  async readToEnd(): Promise<BackendMessage[]> {
    const messages: BackendMessage[] = [];
    for (;;) {
      try {
        messages.push(await this.readMessage());
      } catch {
        return messages;
      }
    }
  }

  end(): void {
    this.socket.end();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  private async waitFor(ready: () => boolean): Promise<void> {
    while (!ready()) {
      if (this.closed) throw new Error('connection closed by the server');
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

/** Parses ErrorResponse/NoticeResponse fields into a map of field code to value. */
export function fields(message: BackendMessage): Map<string, string> {
  const out = new Map<string, string>();
  let offset = 0;
  const payload = message.payload;
  while (offset < payload.length && payload[offset] !== 0) {
    const code = String.fromCharCode(payload[offset]!);
    const end = payload.indexOf(0, offset + 1);
    out.set(code, payload.toString('utf8', offset + 1, end));
    offset = end + 1;
  }
  return out;
}

// Independent builders of expected backend bytes (not pgwire's MessageWriter).
/**
 * A backend message as a comparable line, for tests that send the same frames to oxbow and to
 * PostgreSQL: errors and notices by severity, SQLSTATE and (unless `withErrorText` is false)
 * message; command tags; DataRow, ParameterDescription, ReadyForQuery and CopyData as hex;
 * RowDescription by each column's name, type OID, size, typmod and format (table OIDs differ
 * between servers); any other message by its type.
 */
export function summarize(backend: BackendMessage, withErrorText = true): string {
  switch (backend.type) {
    case 'E':
    case 'N': {
      const reported = fields(backend);
      return `${backend.type} ${reported.get('S')} ${reported.get('C')}${withErrorText ? ` ${reported.get('M')}` : ''}`;
    }
    case 'C':
      return `C ${backend.payload.toString('utf8', 0, backend.payload.length - 1)}`;
    case 'D':
    case 't':
    case 'Z':
    case 'd':
      return `${backend.type} ${backend.payload.toString('hex')}`;
    case 'T': {
      const count = backend.payload.readInt16BE(0);
      const columns: string[] = [];
      let offset = 2;
      for (let i = 0; i < count; i++) {
        const end = backend.payload.indexOf(0, offset);
        const name = backend.payload.toString('utf8', offset, end);
        offset = end + 1;
        const typeOid = backend.payload.readInt32BE(offset + 6);
        const typeSize = backend.payload.readInt16BE(offset + 10);
        const typmod = backend.payload.readInt32BE(offset + 12);
        const format = backend.payload.readInt16BE(offset + 16);
        columns.push(`${name}:${typeOid}:${typeSize}:${typmod}:${format}`);
        offset += 18;
      }
      return `T ${columns.join(',')}`;
    }
    default:
      return backend.type;
  }
}

export function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
}

export function int16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeInt16BE(value);
  return buffer;
}

export function cstring(text: string): Buffer {
  return Buffer.from(`${text}\0`, 'utf8');
}

export function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts as unknown as Uint8Array[]);
  return Buffer.concat([Buffer.from(type), int32(body.length + 4), body] as unknown as Uint8Array[]);
}
