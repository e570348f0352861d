// asyncpg over oxbow, against PostgreSQL 15 as the oracle: asyncpg speaks the binary protocol
// and introspects types itself; the script (asyncpg_flow.py) writes and reads values of several
// types with parameters, uses a prepared statement twice, COPYs in and out, runs a rolled-back
// transaction and a rolled-back savepoint, and reads through a cursor. Both servers must see the
// same things.

import { describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { runPython } from './python.js';

describe('asyncpg', () => {
  let ours: Record<string, unknown>;
  let theirs: Record<string, unknown>;

  it('runs the whole flow on oxbow and on PostgreSQL 15', async () => {
    let oxbow: OxbowServer | undefined;
    let postgres: PostgresServer | undefined;
    try {
      [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
      ours = await runPython('asyncpg_flow.py', [`postgresql://oxbow@${oxbow.host}:${oxbow.port}/oxbow`]);
      theirs = await runPython('asyncpg_flow.py', [`postgresql://postgres@127.0.0.1:${postgres.port}/postgres`]);
    } finally {
      await Promise.all([oxbow?.stop(), postgres?.stop()]);
    }
  }, 240_000);

  it('binary parameters and results of several types', () => {
    expect(ours.row).toEqual({ id: 1, sensor: 'a', value: 1.5, amount: '12.34', taken: '2024-05-06T07:08:09.123456+00:00', day: '2024-05-06', tags: ['x', 'y'], ok: true });
    expect(ours.filtered).toEqual([[1, 'a'], [2, 'b']]);
    expect(ours.count).toBe(3);
    expect(ours.prepared).toEqual(['b', 'c']);
    // pg_index's int2vector and oidvector, decoded after asyncpg's own type introspection.
    expect(ours.introspected).toEqual([[[1], [1978], [0]]]);
    for (const key of ['row', 'filtered', 'count', 'prepared', 'introspected']) expect(ours[key], key).toEqual(theirs[key]);
  });

  it('copy_records_to_table (binary COPY) and copy_to_table, COPY out', () => {
    expect(ours.copy_in_error).toBeUndefined();
    expect(ours.copy_in).toBe('COPY 2');
    expect(ours.copy_to_table).toBe('COPY 2');
    expect(ours.copy_out).toEqual({ tag: 'COPY 2', text: '10\tcopy1\n11\tcopy2\n' });
    expect(ours.ids).toEqual([1, 2, 3, 10, 11, 20, 21]);
    for (const key of ['copy_in', 'copy_to_table', 'copy_out', 'ids']) expect(ours[key], key).toEqual(theirs[key]);
  });

  it('transactions and savepoints roll back as on PostgreSQL; a cursor reads every row', () => {
    expect(ours.after_transactions).toEqual([30]);
    expect(ours.cursor).toEqual([1, 2, 3, 10, 11, 20, 21, 30]);
    for (const key of ['after_transactions', 'cursor']) expect(ours[key], key).toEqual(theirs[key]);
  });
});
