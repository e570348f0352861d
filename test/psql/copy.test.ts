// COPY through real psql 15, against oxbow and a real PostgreSQL 15: the same script (inline COPY
// data in text and CSV, escapes, NULLs, HEADER, and every kind of bad row: duplicate key, NOT NULL,
// bad value, extra and missing columns, unterminated CSV quote) must print the same output, errors
// with the same CONTEXT lines, and a failed COPY must leave nothing behind.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;
const script = join(import.meta.dirname, 'copy-script.sql');

beforeAll(async () => {
  postgres = await startPostgres();
  await postgres.query('create role oxbow superuser login');
  await postgres.query('create database oxbow owner oxbow');
  oxbow = await startOxbow();
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  await postgres?.stop();
});

function runScript(port: number): string {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', '-f', script], {
    encoding: 'utf8',
    env: { ...process.env, PGTZ: 'UTC' },
  });
  return `${result.stdout}${result.stderr}`;
}

describe('COPY through psql', () => {
  it('prints what PostgreSQL prints, errors and CONTEXT included', () => {
    const expected = runScript(postgres.port);
    // The oracle really ran the script: a few landmarks of PostgreSQL's own output.
    expect(expected).toContain('CONTEXT:  COPY ct, line 3, column id: "three"');
    expect(expected).toContain('(2 rows)');
    expect(runScript(oxbow.port)).toBe(expected);
  });
});
