// What the protocol handlers (simple query, extended query, COPY) need from a connection: the
// output buffer with flushing and back-pressure, the next incoming frame, and the session. The
// connection (connection.ts) implements it; keeping it an interface keeps the handlers small and
// separately readable.

import type { Session } from '../executor/engine/engine.js';
import type { SqlError } from '../sql/errors.js';
import type { EvalContext } from '../sql/functions.js';
import type { Frame } from './framer.js';
import type { MessageWriter } from './message-writer.js';

export interface Wire {
  readonly writer: MessageWriter;
  readonly session: Session;
  /** Sends what the writer holds. */
  flush(): void;
  /** Sends when the writer holds a lot, and waits while the socket's buffer is full (slow readers). */
  flushIfLarge(): Promise<void>;
  /** Sends what the writer holds and waits while the socket's buffer is full (rejects when the client is gone). */
  flushAndDrain(): Promise<void>;
  /** The next message from the client (rejects when the connection closes). */
  nextFrame(): Promise<Frame>;
  /**
   * True when the frames already received hold a Sync before any further Execute or Query: the
   * Execute being handled is alone in its transaction (false when unknown: not all arrived yet).
   */
  syncBeforeNextExecute(): boolean;
  /** The session's formatting context (TimeZone, DateStyle...), read once per statement. */
  evalContext(): EvalContext;
  /** Writes an ErrorResponse for anything thrown (non-SqlErrors become XX000 and are logged). */
  writeError(error: unknown): SqlError;
  /**
   * Writes ReadyForQuery with the session's transaction status, preceded by a ParameterStatus for
   * each reported setting changed since the last one (PostgreSQL reports them there, after the
   * CommandComplete of the SET).
   */
  readyForQuery(): void;
}

/** Thrown by nextFrame() when the client has gone away. */
export class ConnectionClosed extends Error {
  constructor() {
    super('connection closed');
  }
}
