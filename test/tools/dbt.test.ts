// dbt (dbt-core with dbt-postgres ~=1.9.0, in the venv scripts/dbt-venv.sh makes) over oxbow,
// against PostgreSQL 15: the project in test/tools/dbt/ (a seed, a table model, a view model over
// it, a materialized_view model, unique and not_null tests) runs `dbt seed`, `dbt run` and
// `dbt test` on both servers; every seed's and model's rows on oxbow equal PostgreSQL's. Then the
// seed loads again (TRUNCATE), the table model changes and `dbt run` replaces it (dbt's create-as,
// rename, drop cascade; the materialized view is refreshed), and the rows still agree, also after
// oxbow restarts. A missing venv fails the test naming the script that makes it.

import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROJECT = join(ROOT, 'test', 'tools', 'dbt');
const RELATIONS = ['orders', 'paid_orders', 'customer_totals', 'status_counts'];

function dbtExecutable(): string {
  const venv = process.env.OXBOW_DBT_VENV ?? join(ROOT, '.cache', 'dbt');
  const dbt = join(venv, 'bin', 'dbt');
  if (!existsSync(dbt)) throw new Error(`no dbt venv at ${venv}: run \`bash scripts/dbt-venv.sh\` (it installs dbt-core and dbt-postgres ~=1.9.0 from PyPI)`);
  return dbt;
}

interface Target {
  readonly port: number;
  readonly user: string;
  readonly dbname: string;
  readonly project: string;
}

function dbt(command: string, target: Target): Promise<string> {
  const env = {
    ...process.env,
    OXBOW_DBT_HOST: '127.0.0.1',
    OXBOW_DBT_PORT: String(target.port),
    OXBOW_DBT_USER: target.user,
    OXBOW_DBT_DBNAME: target.dbname,
    DBT_TARGET_PATH: join(target.project, 'target'),
    DBT_LOG_PATH: join(target.project, 'logs'),
    DBT_SEND_ANONYMOUS_USAGE_STATS: 'false',
  };
  return new Promise((resolve, reject) => {
    execFile(dbtExecutable(), [command, '--profiles-dir', target.project, '--project-dir', target.project], { env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`dbt ${command} on port ${target.port} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Values exactly as the server prints them. */
const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

async function rows(target: Target): Promise<Record<string, { columns: string[]; rows: string[][] }>> {
  const client = new pg.Client({ connectionString: `postgresql://${target.user}@127.0.0.1:${target.port}/${target.dbname}`, types: rawTypes });
  await client.connect();
  try {
    const result: Record<string, { columns: string[]; rows: string[][] }> = {};
    for (const relation of RELATIONS) {
      const read = await client.query({ text: `select * from analytics.${relation}`, rowMode: 'array' });
      result[relation] = {
        columns: read.fields.map((field) => field.name),
        rows: (read.rows as (string | null)[][]).map((row) => row.map((value) => value ?? '<null>')).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      };
    }
    return result;
  } finally {
    await client.end();
  }
}

/** The table model, changed: the pending orders too, and a doubled amount. */
const CHANGED_MODEL = `{{ config(materialized='table') }}
select order_id, customer, amount, amount * 2 as doubled
from {{ ref('orders') }}
where status in ('paid', 'pending')
`;

describe('dbt', () => {
  let oxbow: OxbowServer | undefined;
  let postgres: PostgresServer | undefined;
  let ours: Target;
  let theirs: Target;
  const dirs: string[] = [];

  function copyProject(): string {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-dbt-'));
    dirs.push(dir);
    cpSync(PROJECT, dir, { recursive: true, filter: (path) => !/[/\\](target|logs)$/.test(path) });
    return dir;
  }

  beforeAll(async () => {
    dbtExecutable();
    [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
    ours = { port: oxbow.port, user: 'oxbow', dbname: 'oxbow', project: copyProject() };
    theirs = { port: postgres.port, user: 'postgres', dbname: 'postgres', project: copyProject() };
  }, 120_000);

  afterAll(async () => {
    await Promise.all([oxbow?.stop(), postgres?.stop()]);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('seed, run and test pass, and the models hold what PostgreSQL 15 computes', async () => {
    for (const target of [theirs, ours]) {
      expect(await dbt('seed', target)).toMatch(/Completed successfully/);
      expect(await dbt('run', target)).toMatch(/PASS=3 WARN=0 ERROR=0 SKIP=0 TOTAL=3/);
      expect(await dbt('test', target)).toMatch(/PASS=7 WARN=0 ERROR=0 SKIP=0 TOTAL=7/);
    }
    const expected = await rows(theirs);
    expect(expected.paid_orders!.rows).toHaveLength(4);
    expect(expected.status_counts!.rows).toEqual([['paid', '4'], ['pending', '1'], ['refunded', '1']]);
    expect(await rows(ours)).toEqual(expected);
  }, 600_000);

  it('a changed model is replaced by the next dbt run', async () => {
    for (const target of [theirs, ours]) {
      writeFileSync(join(target.project, 'models', 'paid_orders.sql'), CHANGED_MODEL);
      // A second seed empties the seed's table (TRUNCATE) and loads it again.
      expect(await dbt('seed', target)).toMatch(/Completed successfully/);
      expect(await dbt('run', target)).toMatch(/PASS=3 WARN=0 ERROR=0 SKIP=0 TOTAL=3/);
      expect(await dbt('test', target)).toMatch(/PASS=7 WARN=0 ERROR=0 SKIP=0 TOTAL=7/);
    }
    const expected = await rows(theirs);
    expect(expected.paid_orders!.columns).toEqual(['order_id', 'customer', 'amount', 'doubled']);
    expect(expected.paid_orders!.rows).toHaveLength(5);
    expect(await rows(ours)).toEqual(expected);
    // The renamed relations and the views that read them are planned again from their text after a restart.
    const dataDir = oxbow!.dataDir;
    dirs.push(dataDir);
    await oxbow!.kill('SIGTERM');
    oxbow = await startOxbow({ dataDir });
    ours = { ...ours, port: oxbow.port };
    expect(await rows(ours)).toEqual(expected);
  }, 600_000);
});
