// Test helpers: an engine over the in-memory state store (or a given store), one session, and
// `run(sql)` returning the last statement's rows as text (PostgreSQL's output format) or its tag,
// `rows(sql)` its raw rows, `failure(sql)` the SqlError it raises.

import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StateStore } from '../../../storage/state-table.js';
import { openEngine, type OxbowEngine } from '../../open-engine.js';
import type { Session } from '../../engine.js';
import type { Row } from '../../../sql/value.js';
import { formatValue } from '../../../sql/functions.js';
import { SqlError } from '../../../sql/errors.js';
import fc from 'fast-check';
import { expect } from 'vitest';

export interface Harness {
  readonly engine: OxbowEngine;
  readonly session: Session;
  run(sql: string): Promise<{ rows: Row[]; tag: string }>;
  /** The rows of a query as sorted text lines (`a | b`), NULL as `NULL`. */
  lines(sql: string): Promise<string[]>;
  /** The raw rows (oxbow's values, not text) of the last statement of `sql` that returned rows. */
  rows(sql: string): Promise<Row[]>;
  /** The SqlError `sql` must raise. */
  failure(sql: string): Promise<SqlError>;
  close(): Promise<void>;
}

export async function openHarness(store: StateStore = createMemoryStateStore()): Promise<Harness> {
  const engine = await openEngine(store, { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  const session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  const run = async (sql: string) => {
    let last: { rows: Row[]; tag: string } = { rows: [], tag: '' };
    for (const statement of session.prepareMany(sql)) {
      const result = await session.execute(statement, { parameters: [] });
      if (result.kind === 'rows') {
        const rows = await result.cursor.next(0);
        const texts = rows.map((row) => row.map((value, i) => (value === null ? null : formatValue(value, result.columns[i]!.type))));
        last = { rows: texts, tag: result.commandTag(rows.length) };
      } else if (result.kind === 'command') last = { rows: [], tag: result.commandTag };
    }
    return last;
  };
  const rows = async (sql: string): Promise<Row[]> => {
    let last: Row[] = [];
    for (const statement of session.prepareMany(sql)) {
      const result = await session.execute(statement, { parameters: [] });
      if (result.kind === 'rows') last = await result.cursor.next(0);
    }
    return last;
  };
  return {
    engine,
    session,
    run,
    rows,
    failure: async (sql) => {
      try {
        await rows(sql);
      } catch (error) {
        if (error instanceof SqlError) return error;
        throw error;
      }
      throw new Error(`expected ${sql} to fail`);
    },
    lines: async (sql) => (await run(sql)).rows.map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')).sort(),
    close: () => engine.close(),
  };
}

/**
 * Each view of `views` ([name, query]) equals its query recomputed by the batch executor now; a
 * failure names the view and `step` (the statement just run).
 */
export async function expectViewsEqualQueries(h: Harness, views: readonly (readonly [string, string])[], step = ''): Promise<void> {
  for (const [name, query] of views) expect(await h.lines(`select * from ${name}`), step === '' ? name : `${name} after ${step}`).toEqual(await h.lines(query));
}

/** Creates the views, then runs each statement and checks every view against its query after it. */
export async function runAndCompareViews(h: Harness, views: readonly (readonly [string, string])[], statements: readonly string[]): Promise<void> {
  for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
  for (const statement of statements) {
    await h.run(statement);
    await expectViewsEqualQueries(h, views, statement);
  }
}

/**
 * The property that defines a view's correctness, over random workloads: the statements of
 * `before` run, the views are created (backfilled), then each statement of `after` runs; after the
 * backfill and after every statement each view equals its query recomputed by the batch executor.
 * Runs STREAM_PROPERTY_RUNS cases (8 by default), each on a fresh engine.
 */
export async function assertViewsEqualRecomputation<Op>(options: {
  readonly schema: string;
  readonly op: fc.Arbitrary<Op>;
  readonly sql: (op: Op) => string;
  readonly views: readonly (readonly [string, string])[];
  /** Statements run once the views exist (CREATE INDEX on a view). */
  readonly afterViews?: readonly string[];
  /** More pairs compared after each step: a query over the views and its recomputation over the tables. */
  readonly checks?: readonly (readonly [string, string])[];
}): Promise<void> {
  const { schema, op, sql, views } = options;
  const checks = [...views.map(([name, query]): readonly [string, string] => [`select * from ${name}`, query]), ...(options.checks ?? [])];
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 10 }), fc.array(op, { minLength: 1, maxLength: 25 }), async (before, after) => {
      const h = await openHarness();
      try {
        await h.run(schema);
        for (const o of before) await h.run(sql(o));
        for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
        for (const statement of options.afterViews ?? []) await h.run(statement);
        for (const step of ['backfill', ...after.map(sql)]) {
          if (step !== 'backfill') await h.run(step);
          for (const [read, query] of checks) expect(await h.lines(read), `${read} after ${step}`).toEqual(await h.lines(query));
        }
      } finally {
        await h.close();
      }
    }),
    { numRuns: Number(process.env.STREAM_PROPERTY_RUNS ?? 8), endOnFailure: true },
  );
}
