// Differential test: random tables and random queries (query-generator.ts) run on oxbow's planner
// and batch executor and on a real PostgreSQL 15 server; the text of every result must match (as a
// multiset of rows, since SQL leaves row order open without ORDER BY; LIMIT queries order by every
// output column, so their rows are determined), and when PostgreSQL fails, oxbow must fail with the
// same SQLSTATE. A failing seed is appended to differential-seeds.json and replayed on every run.
// DIFFERENTIAL_SEEDS=n runs n fresh seeds (default 12, each with 25 queries).

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';
import { type as scalar, type DataType } from '../../../sql/types.js';
import { SqlError } from '../../../sql/errors.js';
import { MemoryDatabase } from './memory-tables.js';
import { ready, run, text } from './harness.js';
import { Random, createStatements, generateQueries, generateTables, type GeneratedTable } from './query-generator.js';

const SEEDS_FILE = join(import.meta.dirname, 'differential-seeds.json');
const QUERIES_PER_SEED = 25;

let postgres: PostgresServer;

beforeAll(async () => {
  await ready();
  postgres = await startPostgres();
});

afterAll(async () => {
  await postgres?.stop();
});

function savedSeeds(): number[] {
  try {
    return JSON.parse(readFileSync(SEEDS_FILE, 'utf8')) as number[];
  } catch {
    return [];
  }
}

function keepSeed(seed: number): void {
  const seeds = savedSeeds();
  if (!seeds.includes(seed)) writeFileSync(SEEDS_FILE, `${JSON.stringify([...seeds, seed])}\n`);
}

async function setUp(tables: readonly GeneratedTable[]): Promise<MemoryDatabase> {
  const db = new MemoryDatabase();
  await postgres.query('DROP TABLE IF EXISTS t1, t2, t3');
  for (const table of tables) {
    for (const statement of createStatements(table)) await postgres.query(statement);
    db.createTable(
      table.name,
      table.columns.map((c, i) => ({ name: c.name, type: scalar(c.type) as DataType, nullable: i !== 0 })),
      ['id'],
    );
    const insert = createStatements(table)[1];
    if (insert !== undefined) await run(db, insert);
  }
  return db;
}

type Outcome = { ok: true; rows: string[] } | { ok: false; code: string; message: string };

async function ours(db: MemoryDatabase, sql: string): Promise<Outcome> {
  try {
    const rows = await text(db, sql);
    return { ok: true, rows: rows.map((r) => JSON.stringify(r)).sort() };
  } catch (error) {
    if (error instanceof SqlError) return { ok: false, code: error.code, message: error.message };
    throw error;
  }
}

async function theirs(sql: string): Promise<Outcome> {
  const outcome = await postgres.tryQuery(sql);
  if (!outcome.ok) return { ok: false, code: outcome.code, message: outcome.message };
  return { ok: true, rows: outcome.rows.map((r) => JSON.stringify(r)).sort() };
}

async function checkSeed(seed: number): Promise<string[]> {
  const random = new Random(seed);
  const tables = generateTables(random);
  const db = await setUp(tables);
  const mismatches: string[] = [];
  for (const sql of generateQueries(random, tables, QUERIES_PER_SEED)) {
    const expected = await theirs(sql);
    const actual = await ours(db, sql);
    const same = expected.ok && actual.ok ? JSON.stringify(expected.rows) === JSON.stringify(actual.rows) : !expected.ok && !actual.ok && expected.code === actual.code;
    if (!same) mismatches.push(`seed ${seed}: ${sql}\n  postgres: ${JSON.stringify(expected)}\n  oxbow:    ${JSON.stringify(actual)}`);
  }
  return mismatches;
}

describe('differential: oxbow vs PostgreSQL 15', () => {
  it('replays the kept failing seeds', async () => {
    const mismatches: string[] = [];
    for (const seed of savedSeeds()) mismatches.push(...(await checkSeed(seed)));
    expect(mismatches).toEqual([]);
  });

  it('agrees on fresh random seeds', async () => {
    const count = Number(process.env.DIFFERENTIAL_SEEDS ?? 12);
    const base = Number(process.env.DIFFERENTIAL_BASE_SEED ?? Date.now() % 1_000_000);
    const mismatches: string[] = [];
    for (let i = 0; i < count; i++) {
      const seed = base + i;
      const found = await checkSeed(seed);
      if (found.length > 0) keepSeed(seed);
      mismatches.push(...found);
    }
    expect(mismatches).toEqual([]);
  });
});
