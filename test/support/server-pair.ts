// The setup the differential suites over the wire share: an oxbow server and a real PostgreSQL 15
// started together before the file's tests and both stopped after them.

import { afterAll, beforeAll } from 'vitest';
import { startPostgres, type PostgresServer } from './postgres.js';
import { startOxbow, type OxbowServer } from './server.js';

export interface ServerPair {
  /** The oxbow server (from beforeAll on). */
  readonly oxbow: OxbowServer;
  /** The PostgreSQL 15 oracle (from beforeAll on). */
  readonly postgres: PostgresServer;
}

/** Registers the file's beforeAll / afterAll for both servers; read them inside the tests. */
export function oxbowAndPostgres(): ServerPair {
  let oxbow: OxbowServer | undefined;
  let postgres: PostgresServer | undefined;
  beforeAll(async () => {
    [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([oxbow?.stop(), postgres?.stop()]);
  });
  return {
    get oxbow(): OxbowServer {
      if (oxbow === undefined) throw new Error('the oxbow server is not started yet (use it inside a test)');
      return oxbow;
    },
    get postgres(): PostgresServer {
      if (postgres === undefined) throw new Error('PostgreSQL is not started yet (use it inside a test)');
      return postgres;
    },
  };
}
