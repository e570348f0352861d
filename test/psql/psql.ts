// What the psql suites share: real psql 15 run against a server on loopback as user `oxbow`,
// database `oxbow` (its output and errors as one text), and a PostgreSQL 15 oracle beside an oxbow
// server (`startPostgresAsOxbow`), both reached that way, with the same statements run on both
// through psql.

import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { startPostgresAsOxbow, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

/** Runs psql with `args` against the server on `port`; stdout then stderr. */
export function runPsql(port: number, args: readonly string[]): string {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', ...args], {
    encoding: 'utf8',
    env: { ...process.env, PGTZ: 'UTC', PAGER: '', PSQL_PAGER: '' },
  });
  return `${result.stdout}${result.stderr}`;
}

/** Runs one psql command (`-c`), after the options `extra`. */
export function psql(port: number, command: string, extra: readonly string[] = []): string {
  return runPsql(port, [...extra, '-c', command]);
}

export interface PsqlPair {
  readonly postgres: PostgresServer;
  readonly oxbow: OxbowServer;
}

/**
 * Registers the file's beforeAll / afterAll: PostgreSQL 15 and oxbow, `statements` run through psql
 * on both (an ERROR fails the file). `postgresOnly` runs on PostgreSQL first (what oxbow has
 * built in). The servers are read from the returned object once beforeAll has run.
 */
export function usePsqlPair(statements: readonly string[], postgresOnly: readonly string[] = []): PsqlPair {
  const pair: { postgres?: PostgresServer; oxbow?: OxbowServer } = {};
  beforeAll(async () => {
    const postgres = (pair.postgres = await startPostgresAsOxbow());
    for (const statement of postgresOnly) psql(postgres.port, statement);
    const oxbow = (pair.oxbow = await startOxbow());
    for (const statement of statements) {
      for (const port of [postgres.port, oxbow.port]) {
        const output = psql(port, statement);
        if (/ERROR/.test(output)) throw new Error(`${statement} on port ${port}: ${output}`);
      }
    }
  }, 120_000);
  afterAll(async () => {
    await pair.oxbow?.stop();
    await pair.postgres?.stop();
  });
  return {
    get postgres() {
      if (pair.postgres === undefined) throw new Error('PostgreSQL is not started (read it inside a test)');
      return pair.postgres;
    },
    get oxbow() {
      if (pair.oxbow === undefined) throw new Error('oxbow is not started (read it inside a test)');
      return pair.oxbow;
    },
  };
}
