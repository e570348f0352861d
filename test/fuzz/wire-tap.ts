// A TCP proxy between a PostgreSQL client (sqlsmith) and oxbow that reads the wire protocol going
// through it: each simple Query ('Q'), how long until its ReadyForQuery ('Z'), and the SQLSTATE and
// message of every ErrorResponse ('E'). sqlsmith itself only reports error texts; the tap gives
// the SQLSTATEs, the statements and their durations, whatever the client.
//
// Only what sqlsmith speaks is parsed: an optional SSLRequest (answered by one byte), the startup
// message, then typed messages both ways; the extended protocol is passed through unobserved.

import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TappedStatement {
  readonly sql: string;
  /** Milliseconds from the Query message to ReadyForQuery (undefined while unanswered). */
  durationMs?: number;
  error?: { readonly code: string; readonly message: string; readonly severity: string };
}

export interface WireTap {
  readonly port: number;
  /** Every Query seen so far, in order over all connections. */
  readonly statements: TappedStatement[];
  /** Statements sent and not answered yet (a hang shows here). */
  pending(): TappedStatement[];
  close(): Promise<void>;
}

/** Splits a byte stream into messages; `typed` false until the startup phase is over. */
class MessageReader {
  private buffer: Buffer = Buffer.alloc(0);
  constructor(private typed: boolean, private skipOneByte: () => boolean) {}
  push(chunk: Buffer, onMessage: (type: string, body: Buffer) => void): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (this.skipOneByte()) {
        if (this.buffer.length < 1) return;
        this.buffer = this.buffer.subarray(1);
        continue;
      }
      if (!this.typed) {
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) return;
        const code = this.buffer.readInt32BE(4);
        onMessage(code === 80877103 ? 'ssl' : code === 196608 ? 'startup' : 'other', this.buffer.subarray(8, length));
        this.buffer = this.buffer.subarray(length);
        if (code === 196608) this.typed = true;
        continue;
      }
      if (this.buffer.length < 5) return;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < 1 + length) return;
      onMessage(String.fromCharCode(this.buffer[0]!), this.buffer.subarray(5, 1 + length));
      this.buffer = this.buffer.subarray(1 + length);
    }
  }
}

function errorFields(body: Buffer): Map<string, string> {
  const fields = new Map<string, string>();
  let offset = 0;
  while (offset < body.length && body[offset] !== 0) {
    const code = String.fromCharCode(body[offset]!);
    const end = body.indexOf(0, offset + 1);
    fields.set(code, body.subarray(offset + 1, end).toString('utf8'));
    offset = end + 1;
  }
  return fields;
}

export async function startWireTap(targetHost: string, targetPort: number): Promise<WireTap> {
  const statements: TappedStatement[] = [];
  const open = new Set<TappedStatement>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    let sslAnswerDue = false;
    const inFlight: { statement: TappedStatement; started: number }[] = [];
    const fromClient = new MessageReader(false, () => false);
    const fromServer = new MessageReader(false, () => {
      if (!sslAnswerDue) return false;
      sslAnswerDue = false;
      return true;
    });
    // The server reader turns typed once the client's startup message went out.
    let serverTyped = false;
    client.on('data', (chunk: Buffer) => {
      fromClient.push(chunk, (type, body) => {
        if (type === 'ssl') sslAnswerDue = true;
        else if (type === 'startup') serverTyped = true;
        else if (type === 'Q') {
          const statement: TappedStatement = { sql: body.subarray(0, body.length - 1).toString('utf8') };
          statements.push(statement);
          open.add(statement);
          inFlight.push({ statement, started: performance.now() });
        }
      });
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (serverTyped) typedServer.push(chunk, onServerMessage);
      else fromServer.push(chunk, () => undefined);
      client.write(chunk);
    });
    const typedServer = new MessageReader(true, () => {
      if (!sslAnswerDue) return false;
      sslAnswerDue = false;
      return true;
    });
    const onServerMessage = (type: string, body: Buffer): void => {
      const current = inFlight[0];
      if (type === 'E' && current !== undefined && current.statement.error === undefined) {
        const fields = errorFields(body);
        current.statement.error = { code: fields.get('C') ?? '', message: fields.get('M') ?? '', severity: fields.get('V') ?? fields.get('S') ?? '' };
      } else if (type === 'Z' && current !== undefined) {
        inFlight.shift();
        current.statement.durationMs = performance.now() - current.started;
        open.delete(current.statement);
      }
    };
    const close = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    statements,
    pending: () => [...open],
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
