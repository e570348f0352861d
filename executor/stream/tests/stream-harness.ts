// Test helpers: an engine over the in-memory state store (or a given store), one session, and
// `run(sql)` returning the last statement's rows as text (PostgreSQL's output format) or its tag,
// `rows(sql)` its raw rows, `failure(sql)` the SqlError it raises. Below them, the set-up of the
// cache tests that run a view's dataflow without an engine (join-cache, agg-cache, join-row-id):
// a catalog of fixed relations, `planView`, `CachedViewRun` (a StreamManager under a memory limit
// stepping one epoch at a time: commit, abort, restart, the view's accumulated rows), the cache
// regimes they share and the nested-loop join they are checked against.

import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StateStore } from '../../../storage/state-table.js';
import { openEngine, type OxbowEngine } from '../../engine/open-engine.js';
import type { Session } from '../../engine/engine.js';
import type { EngineSettings } from '../../engine/engine-core.js';
import type { Row } from '../../../sql/value.js';
import { formatValue } from '../../../sql/functions.js';
import { SqlError } from '../../../sql/errors.js';
import type { RelationDef } from '../../../sql/catalog.js';
import { type as scalar } from '../../../sql/types.js';
import { nextEpoch, type Epoch } from '../../../sql/epoch.js';
import { parse } from '../../../sql/parser/index.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import { planStream } from '../../../planner/stream/index.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { StreamManager } from '../stream-manager.js';
import { appendChanges, emptyChanges, type ChangeBatch } from '../change-batch.js';
import type { Dataflow } from '../dataflow.js';
import fc from 'fast-check';
import { afterEach, beforeEach, expect } from 'vitest';

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

export async function openHarness(store: StateStore = createMemoryStateStore(), settings: Partial<EngineSettings> = {}): Promise<Harness> {
  const engine = await openEngine(store, { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26, ...settings });
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

/** Runs each statement and checks every view against its query after it (`step` names the statement in a failure). */
export async function runCheckingViews(h: Harness, views: readonly (readonly [string, string])[], statements: readonly string[], step: (statement: string) => string = (statement) => statement): Promise<void> {
  for (const statement of statements) {
    await h.run(statement);
    await expectViewsEqualQueries(h, views, step(statement));
  }
}

/** Creates the views, then runs each statement and checks every view against its query after it. */
export async function runAndCompareViews(h: Harness, views: readonly (readonly [string, string])[], statements: readonly string[]): Promise<void> {
  for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
  await runCheckingViews(h, views, statements);
}

/**
 * A harness over the memory store opened before each test of the file and closed after it: the
 * returned Harness stands for the current test's.
 */
export function harnessForEachTest(): Harness {
  let current: Harness | undefined;
  beforeEach(async () => {
    current = await openHarness();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const now = (): Harness => {
    if (current === undefined) throw new Error('the harness is open only inside a test');
    return current;
  };
  return {
    get engine() {
      return now().engine;
    },
    get session() {
      return now().session;
    },
    run: (sql) => now().run(sql),
    lines: (sql) => now().lines(sql),
    rows: (sql) => now().rows(sql),
    failure: (sql) => now().failure(sql),
    close: () => now().close(),
  };
}

/** Waits until `relation` holds at least `count` rows, polling every 20 ms at most `attempts` times. */
export async function waitForRows(h: Harness, relation: string, count: number, attempts: number): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const rows = await h.lines(`SELECT count(*) FROM ${relation}`);
    if (Number(rows[0]) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${relation} never reached ${count} rows`);
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

/** A catalog of fixed relations in schema public, for planning views without an engine. */
/** A fixed append-only source of nullable int4 columns, keyed by the hidden int8 `_row_id` after them. */
export function sourceRelation(id: number, name: string, columns: readonly string[]): RelationDef {
  const rowId = { name: '_row_id', type: scalar('int8'), nullable: false, hidden: true };
  return { id, kind: 'source', schema: 'public', name, columns: [...columns.map(int4Column), rowId], primaryKey: [columns.length], dependsOn: [] };
}

/** A fixed table of nullable int4 columns without a key. */
export function tableRelation(id: number, name: string, columns: readonly string[]): RelationDef {
  return { id, kind: 'table', schema: 'public', name, columns: columns.map(int4Column), primaryKey: [], dependsOn: [] };
}

function int4Column(name: string): RelationDef['columns'][number] {
  return { name, type: scalar('int4'), nullable: true, hidden: false };
}

export function fixedCatalog(relations: readonly RelationDef[]): CatalogReader {
  return {
    resolveRelation: (_schema, name) => relations.find((relation) => relation.name === name),
    relationById: (id) => relations.find((relation) => relation.id === id),
    schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
  };
}

/** The streaming plan of a view (id 900 unless given) of `sql` over `catalog`, state tables numbered from 1000. The parser must be initialized. */
export function planView(catalog: CatalogReader, sql: string, options: { readonly viewId?: number; readonly planVersion?: number } = {}): StreamPlan {
  let next = 1000;
  const view = { relationId: options.viewId ?? 900, name: 'v', allocateStateTableId: () => next++, ...(options.planVersion === undefined ? {} : { planVersion: options.planVersion }) };
  return planStream(parse(sql)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, view).stream;
}

/** A row as a text line: values joined by ` | `, NULL (and a missing value) as `NULL`. */
export function textLine(row: readonly unknown[]): string {
  return row.map((value) => (value === null || value === undefined ? 'NULL' : String(value))).join(' | ');
}

/** A memory limit under which the caches stay complete. */
export const LARGE_BUDGET_BYTES = 64 << 20;
/** A memory limit whose group-cache share holds a few groups: evictions all the time, probes and own rows read the state. */
export const TINY_BUDGET_BYTES = 4 * 1024;

/** How a cache test runs a view: its memory limit, rows committed before the random steps, and each step's chance of an abort and of a restart after it. */
export interface CacheRegime {
  readonly name: string;
  readonly memoryLimitBytes: number;
  /** Rows the test commits before the random steps (more than are loaded whole), then a restart. */
  readonly preload: number;
  readonly abortChance: number;
  readonly restartChance: number;
}

/**
 * The five regimes of the join and aggregate cache tests: a large budget (complete caches), a
 * budget of a few groups (evictions), `preload` rows committed first so that a side or table is
 * too large to load whole, aborted epochs with restarts (the caches start cold over the same
 * store), and aborted epochs with evictions (and restarts, when `evictionRestartChance` is given).
 */
export function cacheRegimes(options: { readonly preload: number; readonly largeName: string; readonly preloadName: string; readonly restartChance: number; readonly evictionRestartChance?: number }): CacheRegime[] {
  const evictionRestartChance = options.evictionRestartChance ?? 0;
  return [
    { name: options.largeName, memoryLimitBytes: LARGE_BUDGET_BYTES, preload: 0, abortChance: 0, restartChance: 0 },
    { name: 'a budget of a few groups (evictions)', memoryLimitBytes: TINY_BUDGET_BYTES, preload: 0, abortChance: 0, restartChance: 0 },
    { name: options.preloadName, memoryLimitBytes: LARGE_BUDGET_BYTES, preload: options.preload, abortChance: 0, restartChance: 0 },
    { name: 'aborted epochs and restarts', memoryLimitBytes: LARGE_BUDGET_BYTES, preload: 0, abortChance: 0.15, restartChance: options.restartChance },
    { name: `aborted epochs with evictions${evictionRestartChance > 0 ? ' and restarts' : ''}`, memoryLimitBytes: TINY_BUDGET_BYTES, preload: 0, abortChance: 0.15, restartChance: evictionRestartChance },
  ];
}

/**
 * One view's dataflow over a state store as the engine runs it, without the engine: a
 * StreamManager under `memoryLimitBytes` with `completeLoadRows` made small, the dataflow
 * installed (so an abort reaches it), its initial output absorbed. `step` pushes one epoch's
 * changes and commits them, or aborts them as AbortHookStore does when a statement fails before
 * its commit; `restart` opens a new manager and dataflow over the same store (cold caches);
 * `contents` is the view's accumulated output as sorted lines (its last column, the count, dropped).
 */
export class CachedViewRun {
  manager!: StreamManager;
  flow!: Dataflow;
  private epoch: Epoch = 1n;
  private readonly view = new Map<string, number>();

  constructor(
    private readonly store: StateStore,
    private readonly viewId: number,
    private readonly stream: StreamPlan,
    private readonly limits: { readonly memoryLimitBytes: number; readonly completeLoadRows: number },
  ) {
    this.restart();
    this.absorb(this.flow.initialize());
  }

  restart(): void {
    this.manager = new StreamManager(this.store, undefined, undefined, this.limits.memoryLimitBytes);
    this.manager.groupCaches.completeLoadRows = this.limits.completeLoadRows;
    this.flow = this.manager.build(this.viewId, this.stream);
    this.manager.install(this.flow);
  }

  /** Pushes `inputs` (relation id to changes) as one epoch: aborted when `abort` (false returned), else absorbed and committed. */
  step(inputs: Map<number, ChangeBatch>, abort = false): boolean {
    const out = this.flow.pushAll(inputs);
    if (abort) {
      this.store.abort();
      this.manager.discard();
      return false;
    }
    this.absorb(out);
    this.store.commit((this.epoch = nextEpoch(this.epoch, Date.now())));
    return true;
  }

  /**
   * As `step`, the epoch's changes in `chunks` as a source's rows come (Dataflow.pushChunk: the
   * holders hold), sealed before the commit; an abort comes before the seal, as a failed statement's.
   */
  stepChunks(chunks: readonly Map<number, ChangeBatch>[], abort = false): boolean {
    const out = emptyChanges();
    for (const chunk of chunks) appendChanges(out, this.flow.pushChunk(chunk));
    if (abort) {
      this.store.abort();
      this.manager.discard();
      return false;
    }
    appendChanges(out, this.flow.seal());
    this.absorb(out);
    this.store.commit((this.epoch = nextEpoch(this.epoch, Date.now())));
    return true;
  }

  contents(): string[] {
    return [...this.view].flatMap(([key, count]) => Array.from({ length: count }, () => key)).sort();
  }

  private absorb(out: ChangeBatch): void {
    out.rows.forEach((row, i) => {
      const key = textLine(row.slice(0, -1));
      const count = (this.view.get(key) ?? 0) + out.signs[i]!;
      if (count === 0) this.view.delete(key);
      else this.view.set(key, count);
    });
  }
}

/**
 * A join of two multisets of [id, key, value] rows recomputed by nested loops: the cache tests'
 * oracle. Joined rows are `l.id | l.value | r.id | r.value` (NULL-padded for outer joins), semi and
 * anti rows `l.id | l.value`; sorted lines.
 */
export function nestedLoopJoin(kind: 'inner' | 'left' | 'right' | 'full' | 'semi' | 'anti', left: readonly Row[], right: readonly Row[], matches: (l: Row, r: Row) => boolean): string[] {
  const out: string[] = [];
  const rightMatched = right.map(() => false);
  for (const l of left) {
    let matched = false;
    right.forEach((r, j) => {
      if (!matches(l, r)) return;
      matched = true;
      rightMatched[j] = true;
      if (kind !== 'semi' && kind !== 'anti') out.push(textLine([l[0], l[2], r[0], r[2]]));
    });
    if (kind === 'semi' && matched) out.push(textLine([l[0], l[2]]));
    if (kind === 'anti' && !matched) out.push(textLine([l[0], l[2]]));
    if ((kind === 'left' || kind === 'full') && !matched) out.push(textLine([l[0], l[2], null, null]));
  }
  if (kind === 'right' || kind === 'full') right.forEach((r, j) => rightMatched[j] || out.push(textLine([null, null, r[0], r[2]])));
  return out.sort();
}
