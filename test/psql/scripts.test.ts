// psql scripts run by real psql 15 against oxbow and against a real PostgreSQL 15: every
// `*-script.sql` in this folder must print the same output on both, byte for byte (results,
// command tags, ERROR / DETAIL / HINT / CONTEXT / NOTICE lines with psql's file:line prefixes).
//   copy-script.sql  COPY in text and CSV, escapes, NULLs, HEADER, every kind of bad row
//   ddl-script.sql   DDL errors and notices (dependencies, CASCADE, IF EXISTS, duplicates),
//                    transaction status messages, SET/SHOW validation
//   function-script.sql  \sf and pg_get_functiondef of SQL functions; DROP FUNCTION that a
//                    DEFAULT, a CHECK or a view uses (2BP01 DETAIL, CASCADE)
//   sequence-script.sql  \ds, \d of sequences and of tables with serial, identity, UNIQUE and
//                    FOREIGN KEY columns; COPY into serial columns; sequence errors, DROP
//                    SEQUENCE dependencies
// Both servers are reached as user `oxbow`, database `oxbow`, each script on a fresh database.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgresAsOxbow, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { runPsql } from './psql.js';

let postgres: PostgresServer;
let oxbow: OxbowServer | undefined;
const folder = import.meta.dirname;
const scripts = readdirSync(folder).filter((name) => name.endsWith('-script.sql')).sort();

beforeAll(async () => {
  postgres = await startPostgresAsOxbow();
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  await postgres?.stop();
});

describe('psql scripts', () => {
  for (const script of scripts) {
    it(`${script} prints what PostgreSQL prints`, async () => {
      await postgres.query('drop database if exists oxbow');
      await postgres.query('create database oxbow owner oxbow');
      await oxbow?.stop();
      oxbow = await startOxbow();
      const expected = runPsql(postgres.port, ['-f', join(folder, script)]);
      // The oracle really ran the script (psql reached the server and printed command tags).
      expect(expected).toMatch(/^CREATE TABLE$/m);
      expect(runPsql(oxbow.port, ['-f', join(folder, script)])).toBe(expected);
    });
  }
});
