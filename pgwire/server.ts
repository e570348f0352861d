// The PostgreSQL wire protocol server: listens on a TCP address, admits up to maxConnections
// clients (the next ones get PostgreSQL's 53300 "sorry, too many clients already" after their
// startup packet, and a CancelRequest still works when full), runs one Connection per socket,
// and on close tells every client the server is shutting down (57P01).

import { createServer, type Server, type Socket } from 'node:net';
import type { Engine } from '../executor/engine/engine.js';
import { Connection } from './connection.js';
import { scramVerifier } from './scram.js';
import type { TlsSettings } from './tls.js';

export interface PgServerOptions {
  readonly engine: Engine;
  readonly host: string;
  /** 0: an ephemeral port (see `address` after listen). */
  readonly port: number;
  /** Enables SCRAM-SHA-256 for `user`; without it every client is trusted (loopback only: the CLI checks). */
  readonly password?: string | undefined;
  /** The user that logs in with the password; default `oxbow`. */
  readonly user?: string;
  /** Default 100, as PostgreSQL's max_connections. */
  readonly maxConnections?: number;
  /** Largest frontend message accepted; default 64 MiB. */
  readonly maxMessageBytes?: number;
  /** Startup plus authentication time limit; default 60 s (PostgreSQL's authentication_timeout). */
  readonly authenticationTimeoutMs?: number;
  /** The certificate and key (tls.ts loadTlsSettings): SSLRequest is answered 'S'; without it, 'N'. */
  readonly tls?: TlsSettings | undefined;
}

/** Sockets beyond maxConnections + this many are closed without a word (they would only get 53300). */
const REJECTED_SOCKET_ALLOWANCE = 256;

export class PgServer {
  private readonly server: Server;
  private readonly connections = new Set<Connection>();
  private admittedCount = 0;
  private readonly maxConnections: number;
  private readonly settings: ConstructorParameters<typeof Connection>[1];

  constructor(private readonly options: PgServerOptions) {
    this.maxConnections = options.maxConnections ?? 100;
    this.settings = {
      engine: options.engine,
      verifier: options.password === undefined ? undefined : scramVerifier(options.password),
      maxMessageBytes: options.maxMessageBytes ?? 64 * 1024 * 1024,
      authenticationTimeoutMs: options.authenticationTimeoutMs ?? 60_000,
      user: options.user ?? 'oxbow',
      tls: options.tls,
    };
    this.server = createServer((socket) => this.accept(socket));
    this.server.maxConnections = this.maxConnections + REJECTED_SOCKET_ALLOWANCE;
  }

  /** Starts listening; resolves with the bound address (the real port when port was 0). */
  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        if (address === null || typeof address === 'string') {
          reject(new Error('oxbow: the server has no TCP address'));
          return;
        }
        resolve({ host: this.options.host, port: address.port });
      });
    });
  }

  /** Connected clients (admitted ones and those being turned away). */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Stops accepting, tells every client (57P01) and closes them. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const connection of [...this.connections]) connection.terminate();
    await closed;
  }

  private accept(socket: Socket): void {
    const admitted = this.admittedCount < this.maxConnections;
    if (admitted) this.admittedCount++;
    const connection = new Connection(socket, this.settings, admitted, (closedConnection) => {
      if (!this.connections.delete(closedConnection)) return;
      if (admitted) this.admittedCount--;
    });
    this.connections.add(connection);
    void connection.run();
  }
}
