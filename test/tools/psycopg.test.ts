// psycopg 3 on its own over oxbow, against PostgreSQL 15: named cursors (DECLARE with bound
// parameters, a Describe of the cursor's portal, FETCH FORWARD), a binary one, a WITH HOLD one
// read after COMMIT, and nested transaction() blocks whose inner one fails (ROLLBACK TO SAVEPOINT
// makes the outer block usable again), binary COPY FROM into a table with a serial column; no server
// NOTICE or WARNING.

import { describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { runPython } from './python.js';

describe('psycopg 3', () => {
  it('named cursors and savepoints as on PostgreSQL 15', async () => {
    let oxbow: OxbowServer | undefined;
    let postgres: PostgresServer | undefined;
    let ours: Record<string, unknown>;
    let theirs: Record<string, unknown>;
    try {
      [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
      ours = await runPython('psycopg_flow.py', [`postgresql://oxbow@${oxbow.host}:${oxbow.port}/oxbow`]);
      theirs = await runPython('psycopg_flow.py', [`postgresql://postgres@127.0.0.1:${postgres.port}/postgres`]);
    } finally {
      await Promise.all([oxbow?.stop(), postgres?.stop()]);
    }
    expect(ours.named_columns).toEqual(['g', 'twice']);
    expect(ours.named).toEqual([[[1, 2], [2, 4]], [[3, 6], [4, 8], [5, 10]]]);
    expect(ours.binary).toEqual([[1, 'x1'], [2, 'x2'], [3, 'x3']]);
    expect(ours.with_hold).toEqual([[42]]);
    expect(ours.after_savepoint).toEqual([[1, 'outer'], [3, 'after']]);
    expect(ours.binary_copy_serial).toEqual([[1, 'a'], [2, 'b'], [3, 'c']]);
    expect(ours.notices).toEqual([]);
    expect(ours).toEqual(theirs);
  }, 240_000);
});
