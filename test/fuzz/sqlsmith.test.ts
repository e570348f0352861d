// sqlsmith against a real oxbow server: random statements built from what pg_catalog says oxbow
// has (tables, types, pg_proc functions and aggregates, pg_operator operators). The server must
// never die, every statement must be answered (none hangs: each returns within HANG_MS, far above
// the 1 s statement_timeout sqlsmith sets), and every failure must be a clean ErrorResponse with a
// well-formed SQLSTATE that is not XX000 (internal error). The run's errors by SQLSTATE are
// printed (and written to $TMPDIR/oxbow-sqlsmith-PID.json) for the figures in README.md.
//
// OXBOW_SQLSMITH_QUERIES sets the statements per seed (default 250: 1,000 over the four seeds);
// OXBOW_SQLSMITH_SEEDS a comma-separated seed list.

import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { FUZZ_SCHEMA, SQLSMITH, runSqlsmith, type SqlsmithRun } from './sqlsmith.js';

const QUERIES = Number(process.env.OXBOW_SQLSMITH_QUERIES ?? 250);
const SEEDS = (process.env.OXBOW_SQLSMITH_SEEDS ?? '1,2,3,4').split(',').map(Number);
const HANG_MS = 30_000;

let oxbow: OxbowServer;

beforeAll(async () => {
  oxbow = await startOxbow();
  const client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
  try {
    for (const statement of FUZZ_SCHEMA) await client.query(statement);
  } finally {
    await client.end();
  }
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
});

describe('sqlsmith', () => {
  it('is installed (CI installs Debian\'s sqlsmith)', () => {
    expect(existsSync(SQLSMITH)).toBe(true);
  });

  const runs: SqlsmithRun[] = [];
  for (const seed of SEEDS) {
    it(`seed ${seed}: ${QUERIES} statements, no crash, no hang, no internal error`, async () => {
      const run = await runSqlsmith(oxbow.host, oxbow.port, seed, QUERIES, QUERIES * 2_000 + 60_000);
      runs.push(run);
      const internal = run.errors.XX000?.examples ?? [];
      expect(oxbow.process.exitCode, `oxbow died:\n${oxbow.stderr()}`).toBeNull();
      expect(run.exitCode, `sqlsmith failed: ${run.stderrTail}`).toBe(0);
      expect(run.statements).toBeGreaterThanOrEqual(QUERIES);
      expect(run.unanswered).toEqual([]);
      expect(run.slowest === undefined || run.slowest.ms < HANG_MS, `slowest statement ${run.slowest?.ms} ms: ${run.slowest?.sql}`).toBe(true);
      for (const code of Object.keys(run.errors)) expect(code).toMatch(/^[0-9A-Z]{5}$/);
      expect(internal.map((e) => `${e.message}\n${e.sql}`)).toEqual([]);
      // the server still answers after the run
      const client = new pg.Client({ connectionString: oxbow.url });
      await client.connect();
      try {
        expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await client.end();
      }
    }, QUERIES * 2_000 + 120_000);
  }

  afterAll(() => {
    const byCode: Record<string, number> = {};
    for (const run of runs) for (const [code, { count }] of Object.entries(run.errors)) byCode[code] = (byCode[code] ?? 0) + count;
    const summary = {
      statements: runs.reduce((sum, run) => sum + run.statements, 0),
      failed: runs.reduce((sum, run) => sum + run.failed, 0),
      byCode,
      runs,
    };
    // The process id in the name: runs in other checkouts at the same time write their own.
    const file = join(tmpdir(), `oxbow-sqlsmith-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(summary, null, 1));
    console.log(`sqlsmith: ${summary.statements} statements, ${summary.failed} errors by SQLSTATE ${JSON.stringify(byCode)} (details: ${file})`);
  });
});
