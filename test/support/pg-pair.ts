// A real oxbow server and a real PostgreSQL 15, each with a connected `pg` client that leaves every
// value as the server printed it (identity type parsers), so the two sides compare as text: the
// setup the differential client tests share.
import pg from 'pg';
import { startPostgres, type PostgresServer } from './postgres.js';
import { startOxbow, type OxbowServer } from './server.js';

/** Every type parser is the identity: text values (and binary results as Buffers) as sent. */
export const rawTypes = { getTypeParser: () => (value: string | Buffer) => value } as unknown as pg.CustomTypesConfig;

export interface PgPair {
  readonly postgres: PostgresServer;
  readonly oxbow: OxbowServer;
  readonly onOxbow: pg.Client;
  readonly onPostgres: pg.Client;
  /** Closes both clients and stops both servers (whatever started). */
  stop(): Promise<void>;
}

/** Starts both servers, connects a client to each and runs `setup` on both, statement by statement. */
export async function startPgPair(setup: readonly string[] = []): Promise<PgPair> {
  const [postgres, oxbow] = await Promise.all([startPostgres(), startOxbow()]);
  const onOxbow = new pg.Client({ connectionString: oxbow.url, types: rawTypes });
  const onPostgres = new pg.Client({ connectionString: postgres.url, types: rawTypes });
  const stop = async () => {
    await Promise.allSettled([onOxbow.end(), onPostgres.end()]);
    await Promise.all([oxbow.stop(), postgres.stop()]);
  };
  try {
    await Promise.all([onOxbow.connect(), onPostgres.connect()]);
    for (const sql of setup) await Promise.all([onOxbow.query(sql), onPostgres.query(sql)]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { postgres, oxbow, onOxbow, onPostgres, stop };
}
