// Sessions on a cluster's nodes for the tests of this folder: a `pg` client on a node, the same
// once the node accepts one (a standby before its first followed checkpoint refuses with 57P03),
// a setting's value, and rows as one comparable string.
import pg from 'pg';
import type { OxbowServer } from '../support/server.js';

export async function connect(node: OxbowServer): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: node.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A session on the node once it accepts one, else an error with the node's stderr after `timeoutMs`. */
export async function connectWhenServing(node: OxbowServer, timeoutMs = 30_000): Promise<pg.Client> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await connect(node);
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${node.url} accepted no session: ${(error as Error).message}\n${node.stderr()}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }
}

export async function show(client: pg.Client, name: string): Promise<string> {
  return (await client.query({ text: `show ${name}`, rowMode: 'array' })).rows[0][0] as string;
}

/** The rows of `sql` as arrays, in one JSON string. */
export async function rowsOf(client: pg.Client, sql: string): Promise<string> {
  return JSON.stringify((await client.query({ text: sql, rowMode: 'array' })).rows);
}
