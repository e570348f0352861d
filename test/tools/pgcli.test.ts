// pgcli against oxbow, PostgreSQL 15 the oracle: test/tools/pgcli/refresh.py runs pgcli's own
// code (PGExecute, the completion refreshers pgcli runs at start and after DDL, pgspecial's
// backslash commands) against both servers with the schema of jdbc/metadata-run.ts. Every step
// must succeed on oxbow, and what the completions read from the public schema (relations,
// columns, functions, search path) and what \d-commands list must equal PostgreSQL's. pgcli comes
// from PyPI into the venv of scripts/python-tools.sh (.ci/run calls it).
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';
import { SCHEMA } from './jdbc/metadata-run.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = 'test/tools/pgcli/refresh.py';

interface Step {
  readonly step: string;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: string;
}

function pgcliPython(): string {
  const result = spawnSync('bash', ['scripts/python-tools.sh'], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`scripts/python-tools.sh failed (python3 with venv needed; .ci/run installs it): ${result.stderr}${result.error?.message ?? ''}`);
  return result.stdout.trim().split('\n').pop()!;
}

function runRefresh(python: string, port: number, user: string, database: string): Promise<Map<string, Step>> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT, '127.0.0.1', String(port), user, database], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${SCRIPT} exited ${code}: ${stderr}`));
      const steps = stdout.trim().split('\n').map((line) => JSON.parse(line) as Step);
      resolve(new Map(steps.map((step) => [step.step, step])));
    });
  });
}

let pair: PgPair;
let onPostgres: Map<string, Step>;
let onOxbow: Map<string, Step>;

beforeAll(async () => {
  const python = pgcliPython();
  pair = await startPgPair(SCHEMA);
  [onPostgres, onOxbow] = await Promise.all([runRefresh(python, pair.postgres.port, 'postgres', 'postgres'), runRefresh(python, pair.oxbow.port, 'oxbow', 'oxbow')]);
}, 240_000);

afterAll(async () => {
  await pair?.stop();
});

const publicOnly = (result: unknown) => (result as string[][]).filter((row) => row[0] === 'public');

describe('pgcli against PostgreSQL 15', () => {
  it('runs every refresher, metadata query and backslash command on both servers', () => {
    expect([...onOxbow.keys()]).toEqual([...onPostgres.keys()]);
    expect([...onPostgres.values()].filter((step) => !step.ok)).toEqual([]);
    for (const step of onOxbow.values()) expect(step.error, step.step).toBeUndefined();
    expect(onOxbow.get('select 1')!.result).toEqual([[1]]);
  });

  it('completes the same relations, columns, functions and search path', () => {
    for (const step of ['tables', 'views', 'table_columns', 'view_columns']) {
      expect(publicOnly(onOxbow.get(step)!.result), step).toEqual(publicOnly(onPostgres.get(step)!.result));
    }
    expect(publicOnly(onOxbow.get('tables')!.result).map((row) => row[1])).toEqual(['customers', 'lines', 'orders']);
    // foreignkeys: pgcli zips unnest(conkey) with generate_subscripts(conkey, 1) over scalar subqueries.
    for (const step of ['functions', 'datatypes', 'search_path', 'foreignkeys']) expect(onOxbow.get(step)!.result, step).toEqual(onPostgres.get(step)!.result);
  });

  it('lists the same objects with \\dt, \\dv, \\dm, \\di, \\df, \\dT and \\d', () => {
    for (const command of ['\\dt', '\\dv', '\\dm', '\\di', '\\df', '\\dT', '\\d customers', '\\d+ orders', '\\d big_orders']) {
      expect(onOxbow.get(command)!.result, command).toEqual(onPostgres.get(command)!.result);
    }
  });
});
