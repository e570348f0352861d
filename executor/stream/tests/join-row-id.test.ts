// StreamHashJoin sides over an append-only source (plan version 4, `HashJoinOperator.rowIds`): such
// a side is stored by (join key, source row id), an insert is a blind put with no read of an
// existing count, and its cache stops holding every key once the side is larger than
// `completeLoadRows`. Random inserts into a source (many rows per key, rows equal in every visible
// column but their id) and inserts and deletes in a table (deletes of rows sharing a key) go through
// every join type, with the source on either side or on both, and a BETWEEN residual whose bounds
// the values hit exactly, under the cache regimes of join-cache.test.ts (a large budget, a budget of
// a few groups, a side too large to load whole, aborted epochs and restarts). After every step the
// view's accumulated output must equal the join recomputed in the test from the two multisets. By
// hand: the state layout (one state row per source row, count 1) and that a view of plan version 3
// keeps the `key ++ row` layout. Through the engine on RocksDB: views joining a datagen source of
// more rows than a side loaded whole equal their queries, streamed and backfilled, and again after
// a restart while the table side changes (the source side read back from RocksDB by key, degrees
// rewritten under their row ids). q4's shape (both sides by row id, ascending keys): the side the
// other's rows probe caches its new keys at their write, the side probed once per key before its
// rows caches none of them (join-cache.ts's counters).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import { nextEpoch, type Epoch } from '../../../sql/epoch.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { streamInputs } from '../../../planner/stream/stream-plan.js';
import { StreamManager } from '../stream-manager.js';
import type { ChangeBatch } from '../change-batch.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import type { JoinSideCache } from '../join-cache.js';
import { CachedViewRun, cacheRegimes, fixedCatalog, nestedLoopJoin, planView, sourceRelation, tableRelation, textLine as line, type CacheRegime, type Harness } from './stream-harness.js';
import { openOnRocks } from './rocks-harness.js';

/** A side of more rows than this is not loaded whole and stops caching every key it is written. */
const COMPLETE_LOAD_ROWS = 40;

const S = 100;
const S2 = 101;
const T = 102;
const VIEW = 900;
const relations: RelationDef[] = [
  sourceRelation(S, 's', ['id', 'k', 'v']),
  sourceRelation(S2, 's2', ['id', 'k', 'v']),
  tableRelation(T, 't', ['id', 'k', 'v']),
];
const catalog = fixedCatalog(relations);

type Kind = 'inner' | 'left' | 'right' | 'full' | 'semi' | 'anti';
interface Case {
  readonly name: string;
  readonly kind: Kind;
  /** Relation ids of the join's left and right inputs. */
  readonly left: number;
  readonly right: number;
  readonly sql: string;
}

const ON = (a: string, b: string) => `${a}.k = ${b}.k and ${a}.v between ${b}.v - 2 and ${b}.v`;
const CASES: Case[] = [
  { name: 'inner, source left', kind: 'inner', left: S, right: T, sql: `select s.id, s.v, t.id, t.v from s join t on ${ON('s', 't')}` },
  { name: 'left, source left (degree by row id)', kind: 'left', left: S, right: T, sql: `select s.id, s.v, t.id, t.v from s left join t on ${ON('s', 't')}` },
  { name: 'right, source left', kind: 'right', left: S, right: T, sql: `select s.id, s.v, t.id, t.v from s right join t on ${ON('s', 't')}` },
  { name: 'full, source left', kind: 'full', left: S, right: T, sql: `select s.id, s.v, t.id, t.v from s full join t on ${ON('s', 't')}` },
  { name: 'semi, source left', kind: 'semi', left: S, right: T, sql: `select s.id, s.v from s where exists (select 1 from t where ${ON('s', 't')})` },
  { name: 'anti, source left', kind: 'anti', left: S, right: T, sql: `select s.id, s.v from s where not exists (select 1 from t where ${ON('s', 't')})` },
  { name: 'inner, source right', kind: 'inner', left: T, right: S, sql: `select t.id, t.v, s.id, s.v from t join s on ${ON('t', 's')}` },
  { name: 'left, source right', kind: 'left', left: T, right: S, sql: `select t.id, t.v, s.id, s.v from t left join s on ${ON('t', 's')}` },
  { name: 'right, source right (degree by row id)', kind: 'right', left: T, right: S, sql: `select t.id, t.v, s.id, s.v from t right join s on ${ON('t', 's')}` },
  { name: 'semi, source right', kind: 'semi', left: T, right: S, sql: `select t.id, t.v from t where exists (select 1 from s where ${ON('t', 's')})` },
  { name: 'inner, two sources', kind: 'inner', left: S, right: S2, sql: `select s.id, s.v, s2.id, s2.v from s join s2 on ${ON('s', 's2')}` },
  { name: 'full, two sources', kind: 'full', left: S, right: S2, sql: `select s.id, s.v, s2.id, s2.v from s full join s2 on ${ON('s', 's2')}` },
];

function plan(sql: string, planVersion?: number): StreamPlan {
  return planView(catalog, sql, { viewId: VIEW, ...(planVersion === undefined ? {} : { planVersion }) });
}

function findJoin(stream: StreamPlan): Extract<StreamPlan, { kind: 'StreamHashJoin' }> {
  const find = (node: StreamPlan): StreamPlan | undefined => (node.kind === 'StreamHashJoin' ? node : streamInputs(node).map(find).find((found) => found !== undefined));
  const join = find(stream);
  if (join === undefined || join.kind !== 'StreamHashJoin') throw new Error('no StreamHashJoin');
  return join;
}

/** The join recomputed from the two multisets (visible columns [id, k, v]): the oracle. */
function recompute(kind: Kind, left: readonly Row[], right: readonly Row[]): string[] {
  return nestedLoopJoin(kind, left, right, (l, r) => l[1] !== null && l[1] === r[1] && (l[2] as number) >= (r[2] as number) - 2 && (l[2] as number) <= (r[2] as number));
}

/** The preload inserts source rows (more than a side loaded whole). */
const REGIMES = cacheRegimes({ preload: COMPLETE_LOAD_ROWS + 1, largeName: 'large budget', preloadName: 'a side too large to load whole', restartChance: 0.15, evictionRestartChance: 0.1 });

function run(testCase: Case, regime: CacheRegime, seed: number): void {
  const next = seededRandom(seed);
  const stream = plan(testCase.sql);
  // Every source side of the case is stored by row id; a table side is not.
  expect(findJoin(stream).rowIds).toEqual([testCase.left !== T, testCase.right !== T]);
  const view = new CachedViewRun(createMemoryStateStore(), VIEW, stream, { memoryLimitBytes: regime.memoryLimitBytes, completeLoadRows: COMPLETE_LOAD_ROWS });
  let nextRowId = 1n;
  // Rows by relation: visible columns, plus the row id for a source.
  const rows = new Map<number, Row[]>([
    [S, []],
    [S2, []],
    [T, []],
  ]);
  const relationIds = [testCase.left, testCase.right];
  const sourceRow = (id: number, k: number | null, v: number): Row => [id, k, v, nextRowId++];
  if (regime.preload > 0) {
    const preloaded: Row[] = Array.from({ length: regime.preload }, (_, i) => sourceRow(i % 3, 1 + (i % 4), i % 10));
    const source = relationIds.find((id) => id !== T)!;
    view.step(new Map([[source, { rows: preloaded, signs: preloaded.map(() => 1) }]]));
    rows.get(source)!.push(...preloaded);
    view.restart();
  }
  for (let step = 0; step < 40; step++) {
    const batches = new Map<number, ChangeBatch>();
    const after = new Map<number, Row[]>([...rows].map(([id, list]) => [id, [...list]]));
    const changes = 1 + Math.floor(next() * 10);
    for (let c = 0; c < changes; c++) {
      const relation = relationIds[next() < 0.5 ? 0 : 1]!;
      const list = after.get(relation)!;
      let batch = batches.get(relation);
      if (batch === undefined) batches.set(relation, (batch = { rows: [], signs: [] }));
      if (relation === T && list.length > 0 && next() < 0.35) {
        const [removed] = list.splice(Math.floor(next() * list.length), 1);
        batch.rows.push(removed!);
        batch.signs.push(-1);
      } else {
        // Few ids, keys and values: equal rows, many rows per key, values on the BETWEEN bounds; key 0 is NULL.
        const key = Math.floor(next() * 5);
        const id = Math.floor(next() * 3);
        const value = Math.floor(next() * 10);
        const row: Row = relation === T ? [id, key === 0 ? null : key, value] : sourceRow(id, key === 0 ? null : key, value);
        list.push(row);
        batch.rows.push(row);
        batch.signs.push(1);
      }
    }
    if (!view.step(batches, next() < regime.abortChance)) continue;
    for (const [id, list] of after) rows.set(id, list);
    const visible = (id: number) => rows.get(id)!.map((row) => row.slice(0, 3));
    expect(view.contents(), `${testCase.name}, ${regime.name}, seed ${seed}, step ${step}`).toEqual(recompute(testCase.kind, visible(testCase.left), visible(testCase.right)));
    if (next() < regime.restartChance) view.restart();
  }
}

beforeAll(async () => {
  await initParser();
});

describe('StreamHashJoin sides stored by source row id equal the join recomputed', () => {
  for (const regime of REGIMES) {
    it(regime.name, () => {
      for (const testCase of CASES) for (let seed = 1; seed <= 2; seed++) run(testCase, regime, seed);
    }, 60_000);
  }
});

describe('the state of a side stored by source row id', () => {
  it('holds one state row per source row, equal rows included, and a delete on the other side retracts every copy', () => {
    const store = createMemoryStateStore();
    const stream = plan(`select s.id, s.v, t.id, t.v from s left join t on ${ON('s', 't')}`);
    const join = findJoin(stream);
    expect(join.stateTables[0]!.purpose).toBe('left rows by key and source row id with degree');
    expect(join.stateTables[1]!.purpose).toBe('right rows by key');
    let epoch: Epoch = 1n;
    const commit = () => store.commit((epoch = nextEpoch(epoch, Date.now())));
    const manager = new StreamManager(store, undefined, undefined, 64 << 20);
    const flow = manager.build(VIEW, stream);
    manager.install(flow);
    flow.initialize();
    // Five source rows equal in every visible column, one other row of the same key.
    const five: Row[] = [1n, 2n, 3n, 4n, 5n].map((id) => [7, 1, 5, id]);
    const sixth: Row = [8, 1, 9, 6n];
    const changed = (batch: ChangeBatch) => batch.rows.map((row, i) => `${batch.signs[i]! > 0 ? '+' : '-'} ${line(row.slice(0, 4))}`).sort();
    let out = flow.pushAll(new Map([[S, { rows: [...five, sixth], signs: [1, 1, 1, 1, 1, 1] }]]));
    expect(changed(out)).toEqual([...Array.from({ length: 5 }, () => '+ 7 | 5 | NULL | NULL'), '+ 8 | 9 | NULL | NULL']);
    commit();
    const declared = join.stateTables[0]!;
    // Opened as the join opens it (its keys carry their vnode, by the join key).
    expect(declared.vnodeColumns).toEqual([0]);
    const table = store.table({ tableId: declared.tableId, columnTypes: declared.columnTypes, primaryKey: declared.primaryKey, vnodeColumns: declared.vnodeColumns! });
    // key ++ row (id, k, v) ++ row id ++ count ++ degree: one state row per source row, count 1, no match yet.
    expect([...table.scan()]).toEqual([...five.map((row) => [1, 7, 1, 5, row[3], 1n, 0n]), [1, 8, 1, 9, 6n, 1n, 0n]]);
    // A table row matching the five (5 between 5 - 2 and 5; 9 is not): their padded rows leave, joined rows come.
    out = flow.pushAll(new Map([[T, { rows: [[20, 1, 5]], signs: [1] }]]));
    expect(changed(out)).toEqual([...Array.from({ length: 5 }, () => '+ 7 | 5 | 20 | 5'), ...Array.from({ length: 5 }, () => '- 7 | 5 | NULL | NULL')]);
    commit();
    // The degrees went to 1 on the five rows, written back under their row ids.
    expect([...table.scan()]).toEqual([...five.map((row) => [1, 7, 1, 5, row[3], 1n, 1n]), [1, 8, 1, 9, 6n, 1n, 0n]]);
    // Deleting it retracts every copy and brings the padded rows back.
    out = flow.pushAll(new Map([[T, { rows: [[20, 1, 5]], signs: [-1] }]]));
    expect(changed(out)).toEqual([...Array.from({ length: 5 }, () => '+ 7 | 5 | NULL | NULL'), ...Array.from({ length: 5 }, () => '- 7 | 5 | 20 | 5')]);
  });

  it("q4's shape: the side probed by the other's rows caches its new keys, the side probed once per key before its rows caches none", () => {
    // "Auctions" (s: one row per ascending key) and "bids" (s2: rows for the five newest keys),
    // both sides stored by row id, past COMPLETE_LOAD_ROWS so neither is complete. Each auction
    // probes the bids side once, before any bid of its key; each bid probes the auctions side.
    const store = createMemoryStateStore();
    const stream = plan('select s.id, s2.id, s2.v from s join s2 on s.k = s2.k');
    expect(findJoin(stream).rowIds).toEqual([true, true]);
    let epoch: Epoch = 1n;
    const manager = new StreamManager(store, undefined, undefined, 64 << 20);
    manager.groupCaches.completeLoadRows = COMPLETE_LOAD_ROWS;
    const flow = manager.build(VIEW, stream);
    manager.install(flow);
    flow.initialize();
    let id = 0n;
    let joined = 0;
    let expected = 0;
    for (let key = 0; key < 300; key++) {
      const auction: ChangeBatch = { rows: [[key, key, 0, ++id]], signs: [1], ids: [id] };
      joined += flow.pushAll(new Map([[S, auction]])).rows.length;
      const bids: Row[] = [];
      for (let b = 0; b < 4; b++) bids.push([1000 + key * 4 + b, Math.max(0, key - (b % 5)), b, ++id]);
      joined += flow.pushAll(new Map([[S2, { rows: bids, signs: bids.map(() => 1), ids: bids.map((row) => row[3]!) }]])).rows.length;
      expected += bids.length;
      store.commit((epoch = nextEpoch(epoch, Date.now())));
    }
    // Every bid joins its auction.
    expect(joined).toBe(expected);
    const caches = [...(manager.groupCaches as unknown as { caches: Set<JoinSideCache> }).caches];
    expect(caches).toHaveLength(2);
    const [auctions, bids] = caches.sort((a, b) => b.probeHits - a.probeHits);
    // The bids found their auctions in memory (after the first COMPLETE_LOAD_ROWS, new keys cached
    // at their write): at most the whole-side load's reads missed.
    expect(auctions!.probeHits).toBeGreaterThan(expected - 2 * COMPLETE_LOAD_ROWS);
    expect(auctions!.rows).toBe(300);
    // The bids side holds no group made for a probe's empty answer and stops making groups by write:
    // only the keys cached while it was complete (its first COMPLETE_LOAD_ROWS rows) keep taking
    // their bids. Caching all 1,200 bids, which nothing probes again, took the budget the auctions need.
    expect(bids!.rows).toBeLessThan(100);
  });

  it('a view of plan version 3 keeps its sides by key and row; a table side is never by row id', () => {
    const old = findJoin(plan(`select s.id, s.v, t.id, t.v from s join t on ${ON('s', 't')}`, 3));
    expect(old.rowIds).toBeUndefined();
    expect(old.stateTables.map((table) => table.purpose)).toEqual(['left rows by key', 'right rows by key']);
    // key (k) ++ row (id, k, v) ++ count: the whole row is the key.
    expect(old.stateTables[0]!.primaryKey).toEqual([0, 1, 2, 3]);
    const current = findJoin(plan(`select s.id, s.v, t.id, t.v from s join t on ${ON('s', 't')}`));
    // key (k) ++ row (id, k, v) ++ row id ++ count: keyed by k and the row id.
    expect(current.stateTables[0]!.primaryKey).toEqual([0, 4]);
    expect(current.stateTables[0]!.columnTypes.map((type) => type.name)).toEqual(['int4', 'int4', 'int4', 'int4', 'int8', 'int8']);
    expect(findJoin(plan(`select a.id, b.id from t a join t b on a.k = b.k`)).rowIds).toEqual([false, false]);
  });
});

describe('views joining a source, on RocksDB', () => {
  /** More than `completeLoadRows` (10,000): the source side is not loaded whole after the restart. */
  const ROWS = 12_000;
  const VIEWS: [string, string][] = [
    ['inner_j', 'select s.g, s.x, t.w from s join t on s.x = t.k'],
    ['left_j', 'select s.g, t.k, t.w from s left join t on s.x = t.k and s.g between t.w and t.w + 3000'],
    ['right_j', 'select t.k, t.w, s.g from t right join s on s.x = t.k and s.g between t.w and t.w + 3000'],
  ];

  async function settle(h: Harness, step: string): Promise<void> {
    for (let attempt = 0; attempt < 1500; attempt++) {
      let equal = true;
      for (const [name, query] of VIEWS) if (JSON.stringify(await h.lines(`select * from ${name}`)) !== JSON.stringify(await h.lines(query))) equal = false;
      if (equal) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const [name, query] of VIEWS) expect(await h.lines(`select * from ${name}`), `${name} after ${step}`).toEqual(await h.lines(query));
  }

  it('equal their queries, streamed and backfilled, and after a restart while the table changes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-join-row-id-'));
    const open = () => openOnRocks(dir, {});
    let h: Harness | undefined;
    try {
      h = await open();
      await h.run('create table t (k int primary key, w int)');
      await h.run('insert into t values (1, 0), (2, 5000), (3, 9000), (5, 100)');
      await h.run(
        `CREATE SOURCE s (g int, x int) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.x.min = '1', fields.x.max = '6', datagen.rows.per.second = '1000000', datagen.split.num = '2')`,
      );
      // Two views while the source reads (streamed), one after (backfilled).
      for (const [name, query] of VIEWS.slice(0, 2)) await h.run(`create materialized view ${name} as ${query}`);
      for (let attempt = 0; attempt < 1500 && Number((await h.lines('select count(*) from s'))[0]) < ROWS; attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
      const [name, query] = VIEWS[2]!;
      await h.run(`create materialized view ${name} as ${query}`);
      await settle(h, 'the source');
      // Every source row is joined or padded (by hand: left_j keeps each of the ROWS rows at least once).
      expect(Number((await h.lines('select count(distinct g) from left_j'))[0])).toBe(ROWS);
      const plan = (await h.run('explain create materialized view probe as select s.g, t.w from s join t on s.x = t.k')).rows.map((row) => row.join(' ')).join('\n');
      expect(plan).toContain('left rows by key and source row id');
      await h.close();
      h = await open();
      const steps = ['insert into t values (4, 2000), (6, 11000)', 'update t set w = 7000 where k = 2', 'delete from t where k = 1', 'delete from t'];
      for (const step of steps) {
        await h.run(step);
        await settle(h, step);
      }
    } finally {
      await h?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
