// Starts pgwire's server in-process over the engine double (port 0, loopback) and opens raw
// protocol connections that have completed startup.

import { serialize } from 'pg-protocol';
import { afterAll, beforeAll } from 'vitest';
import { PgServer, type PgServerOptions } from '../../pgwire/server.js';
import { EngineDouble } from './engine-double.js';
import { RawClient, type BackendMessage } from './raw-client.js';

export interface DoubleServer {
  readonly engine: EngineDouble;
  readonly server: PgServer;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startDoubleServer(options: Partial<Omit<PgServerOptions, 'engine' | 'host' | 'port'>> = {}): Promise<DoubleServer> {
  const engine = new EngineDouble();
  const server = new PgServer({ engine, host: '127.0.0.1', port: 0, ...options });
  const { port } = await server.listen();
  return { engine, server, port, stop: () => server.close() };
}

/** Connects and completes startup (trust); returns the client and the startup messages. */
export async function connectReady(port: number, parameters: Record<string, string> = {}): Promise<{ client: RawClient; startup: BackendMessage[] }> {
  const client = await RawClient.connect(port);
  client.send(serialize.startup({ user: 'oxbow', database: 'oxbow', ...parameters }));
  const startup = await client.readUntil('Z');
  return { client, startup };
}

/**
 * The setup the protocol suites share: one double server for the file and one client that has
 * completed startup, made before its tests and closed after them. Read them inside the tests.
 */
export function doubleServerWithClient(): { readonly server: DoubleServer; readonly client: RawClient } {
  let server: DoubleServer | undefined;
  let client: RawClient | undefined;
  beforeAll(async () => {
    server = await startDoubleServer();
    ({ client } = await connectReady(server.port));
  });
  afterAll(async () => {
    client?.end();
    await server?.stop();
  });
  return {
    get server(): DoubleServer {
      if (server === undefined) throw new Error('the double server is not started yet (use it inside a test)');
      return server;
    },
    get client(): RawClient {
      if (client === undefined) throw new Error('the client is not connected yet (use it inside a test)');
      return client;
    },
  };
}

export function types(messages: readonly BackendMessage[]): string {
  return messages.map((message) => message.type).join('');
}
