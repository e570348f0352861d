// SQL function errors against the real PostgreSQL 15: the same statements on an oxbow session and
// on PostgreSQL fail with the same SQLSTATE, message and position (a call that fits no overload,
// at the call; an error inside a body at CREATE FUNCTION, in the statement's text for both the
// $$ form and the RETURN form).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../engine/create-engine.js';
import type { Engine, Session } from '../../engine/engine.js';
import { SqlError } from '../../../sql/errors.js';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';

const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sql-function-errors-'));
let postgres: PostgresServer;
let engine: Engine;
let session: Session;

beforeAll(async () => {
  postgres = await startPostgres();
  engine = await createEngine({ dataDir, checkpointUrl: `file://${dataDir}/checkpoints`, barrierIntervalMs: 1000, checkpointIntervalMs: 600_000, timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

type Outcome = { ok: true } | { ok: false; code: string; message: string; position: number | undefined };

async function onOxbow(sql: string): Promise<Outcome> {
  try {
    for (const statement of session.prepareMany(sql)) {
      const result = await session.execute(statement, { parameters: [] });
      if (result.kind === 'rows') await result.cursor.next(0);
    }
    return { ok: true };
  } catch (error) {
    if (!(error instanceof SqlError)) throw error;
    return { ok: false, code: error.code, message: error.message, position: error.position };
  }
}

async function onPostgres(sql: string): Promise<Outcome> {
  const outcome = await postgres.tryQuery(sql);
  return outcome.ok ? { ok: true } : { ok: false, code: outcome.code, message: outcome.message, position: outcome.position };
}

const STATEMENTS = [
  "CREATE FUNCTION pe_count(s varchar, c varchar) RETURNS int LANGUAGE SQL AS $$SELECT LENGTH(s) - LENGTH(REPLACE(s, c, ''))$$",
  'CREATE FUNCTION pe_plus(int, int) RETURNS int LANGUAGE SQL IMMUTABLE RETURN $1 + $2',
  "SELECT 1 + pe_count('a')",
  'SELECT pe_count(1, 2)',
  "SELECT x, pe_count(x, 'c') FROM (VALUES (1)) v(x)",
  'SELECT pe_plus(1.5, 2)',
  'SELECT pe_plus(1)',
  'CREATE FUNCTION pe_bad(int) RETURNS int LANGUAGE SQL AS $$SELECT nope$$',
  'CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL AS $$SELECT x + $2$$',
  'CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL RETURN x + nope',
  'CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL IMMUTABLE RETURN pe_nope(x)',
  'CREATE FUNCTION pe_bad(x int)\n  RETURNS int LANGUAGE SQL\n  AS $$\n    SELECT x +\n      nope $$',
  "CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL AS 'SELECT x + nope'",
  'CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL AS $$SELEC x$$',
  "CREATE FUNCTION pe_bad(x int) RETURNS int LANGUAGE SQL AS $$SELECT 'a'::text$$",
  'CREATE FUNCTION pe_plus(int, int) RETURNS int LANGUAGE SQL RETURN 0',
  'DROP FUNCTION pe_plus(int)',
  'DROP FUNCTION pe_nope',
];

describe('SQL function errors', () => {
  for (const sql of STATEMENTS) {
    it(`${sql.replace(/\s+/g, ' ')} fails (or not) as on PostgreSQL`, async () => {
      expect(await onOxbow(sql)).toEqual(await onPostgres(sql));
    });
  }
});
