// SAVEPOINT / RELEASE / ROLLBACK TO, SQL-level PREPARE / EXECUTE / DEALLOCATE, and DECLARE /
// FETCH / MOVE / CLOSE, each script run statement by statement on oxbow and on PostgreSQL 15 in a
// session of its own, compared: command, row count, rows, the SQLSTATE and message of errors, and
// the transaction status after each statement.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawTypes, startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;

beforeAll(async () => {
  pair = await startPgPair(['CREATE TABLE t (a int PRIMARY KEY, b text)', "INSERT INTO t VALUES (1, 'one')"]);
}, 120_000);

afterAll(async () => {
  await pair?.stop();
});

type Step = { sql: string; ok: boolean; command?: string | null; rowCount?: number | null; rows?: unknown[]; code?: string; message?: string; status: string };

async function runScript(url: string, script: readonly string[]): Promise<Step[]> {
  const client = new pg.Client({ connectionString: url, types: rawTypes });
  await client.connect();
  const steps: Step[] = [];
  try {
    for (const sql of script) {
      try {
        const result = await client.query({ text: sql, rowMode: 'array' });
        steps.push({ sql, ok: true, command: result.command, rowCount: result.rowCount, rows: result.rows, status: transactionStatus(client) });
      } catch (error) {
        const failure = error as { code?: string; message: string };
        // pg rejects on ErrorResponse; the status comes with the ReadyForQuery after it.
        const deadline = Date.now() + 2000;
        while (!(client as unknown as { readyForQuery: boolean }).readyForQuery && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
        steps.push({ sql, ok: false, code: failure.code, message: failure.message, status: transactionStatus(client) });
      }
    }
  } finally {
    await client.end();
  }
  return steps;
}

/** The status of the last ReadyForQuery (I, T or E; pg keeps it on the client). */
function transactionStatus(client: pg.Client): string {
  return String((client as unknown as { _txStatus?: string })._txStatus ?? '');
}

async function same(script: readonly string[]): Promise<void> {
  const [ours, theirs] = await Promise.all([runScript(pair.oxbow.url, script), runScript(pair.postgres.url, script)]);
  expect(ours).toEqual(theirs);
}

describe('on oxbow', () => {
  it('two-phase commit is 0A000 naming it, and the session goes on', async () => {
    const steps = await runScript(pair.oxbow.url, ['BEGIN', "PREPARE TRANSACTION 'gid'", 'ROLLBACK', "COMMIT PREPARED 'gid'", 'SELECT 1']);
    expect(steps.map((step) => step.code ?? step.command)).toEqual(['BEGIN', '0A000', 'ROLLBACK', '0A000', 'SELECT']);
    expect(steps[1]!.message).toBe('two-phase commit (PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED) is not supported');
  });

  it('FETCH BACKWARD is 0A000 naming it; the block stays usable after ROLLBACK TO', async () => {
    const steps = await runScript(pair.oxbow.url, ['BEGIN', 'SAVEPOINT s', 'DECLARE c SCROLL CURSOR FOR SELECT 1', 'FETCH BACKWARD 1 FROM c', 'ROLLBACK TO s', 'SELECT 2', 'COMMIT']);
    expect(steps.map((step) => step.code ?? step.command)).toEqual(['BEGIN', 'SAVEPOINT', 'DECLARE', '0A000', 'ROLLBACK', 'SELECT', 'COMMIT']);
    expect(steps[3]!.message).toBe("FETCH BACKWARD is not supported: oxbow's cursors fetch forward only");
  });
});

describe('as PostgreSQL 15', () => {
  it('SAVEPOINT, RELEASE, ROLLBACK TO: rows, settings, errors, a failed block made usable again', async () => {
    await same([
      'SAVEPOINT x',
      'RELEASE x',
      'ROLLBACK TO x',
      'BEGIN',
      "INSERT INTO t VALUES (2, 'two')",
      'SAVEPOINT s1',
      "INSERT INTO t VALUES (3, 'three')",
      "UPDATE t SET b = 'uno' WHERE a = 1",
      "SET application_name = 'inner'",
      'ROLLBACK TO nosuch',
      'SELECT 1',
      'ROLLBACK TO SAVEPOINT s1',
      'SHOW application_name',
      'SELECT * FROM t ORDER BY a',
      'SAVEPOINT s2',
      "INSERT INTO t VALUES (4, 'four')",
      'SAVEPOINT s3',
      'DELETE FROM t WHERE a = 2',
      'RELEASE s2',
      'ROLLBACK TO s3',
      'SELECT * FROM t ORDER BY a',
      'SELECT 1/0',
      'RELEASE s1',
      'ROLLBACK TO s1',
      'SELECT * FROM t ORDER BY a',
      'SAVEPOINT s1',
      "INSERT INTO t VALUES (5, 'five')",
      'SAVEPOINT s1',
      "INSERT INTO t VALUES (6, 'six')",
      'ROLLBACK TO s1',
      'RELEASE s1',
      'SELECT * FROM t ORDER BY a',
      'ROLLBACK TO s1',
      'COMMIT',
      'SELECT * FROM t ORDER BY a',
    ]);
  });

  it('PREPARE, EXECUTE, DEALLOCATE', async () => {
    await same([
      'PREPARE p(int) AS SELECT a, b FROM t WHERE a >= $1 ORDER BY a',
      'EXECUTE p(1)',
      "EXECUTE p('2')",
      'PREPARE p AS SELECT 1',
      'EXECUTE q',
      'EXECUTE p(1, 2)',
      'EXECUTE p',
      "PREPARE ins AS INSERT INTO t VALUES ($1, $2)",
      "EXECUTE ins(10, 'ten')",
      "EXECUTE ins(10, 'ten')",
      'PREPARE upd (text, int) AS UPDATE t SET b = $1 WHERE a = $2',
      "EXECUTE upd('TEN', 10)",
      'SELECT * FROM t WHERE a = 10',
      'SELECT name, statement, parameter_types, from_sql, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name',
      'DEALLOCATE p',
      'DEALLOCATE p',
      'DEALLOCATE PREPARE ins',
      'DEALLOCATE ALL',
      'EXECUTE upd',
      'DELETE FROM t WHERE a = 10',
    ]);
  });

  it('DECLARE, FETCH, MOVE, CLOSE: one snapshot, the block ends the cursor, WITH HOLD outlives COMMIT', async () => {
    await same([
      'DECLARE c CURSOR FOR SELECT * FROM t',
      'BEGIN',
      'DECLARE c NO SCROLL CURSOR FOR SELECT a, b FROM t ORDER BY a',
      'DECLARE c CURSOR FOR SELECT 1',
      "INSERT INTO t VALUES (20, 'twenty')",
      'FETCH 1 FROM c',
      'MOVE 1 IN c',
      'FETCH ALL c',
      'FETCH NEXT FROM c',
      'MOVE FORWARD 5 c',
      'CLOSE c',
      'FETCH c',
      'ROLLBACK',
      'BEGIN',
      'DECLARE d CURSOR FOR SELECT a FROM t ORDER BY a',
      'COMMIT',
      'FETCH d',
      'BEGIN',
      'DECLARE h CURSOR WITH HOLD FOR SELECT a FROM t ORDER BY a',
      'DECLARE n CURSOR FOR SELECT a FROM t ORDER BY a',
      'DECLARE b BINARY CURSOR FOR SELECT 1',
      'SELECT name, statement, is_holdable, is_binary FROM pg_cursors ORDER BY name',
      'COMMIT',
      'SELECT name, statement, is_holdable, is_binary FROM pg_cursors ORDER BY name',
      'FETCH n',
      'FETCH FORWARD 1 FROM h',
      'FETCH 100 h',
      'CLOSE ALL',
      'FETCH h',
      'CLOSE nosuch',
      'BEGIN',
      'DECLARE r CURSOR WITH HOLD FOR SELECT 1',
      'ROLLBACK',
      'FETCH r',
      'BEGIN',
      'SAVEPOINT s',
      'DECLARE after_mark CURSOR FOR SELECT 1',
      'ROLLBACK TO s',
      'FETCH after_mark',
      'ROLLBACK',
    ]);
  });
});
