// Views numbered by row (plan version 8, materialize.ts's numbered layout): a view whose input only
// inserts but carries no source row ids (an inner join of two append-only sources, a UNION ALL of
// them, q20's join under a filter) stores each row under a number it allocates, with no row count.
// Over two append-only inputs fed random inserts (few keys and values: rows equal in every visible
// column abound), with aborted epochs and restarts over the same store: after every committed epoch
// the view's relation table, read back from the store, holds exactly the query's multiset
// recomputed in the test from the two inputs, each row under a distinct number, and the dataflow's
// output adds up to the same. By hand: the layout (the hidden column the key, a 'next row number'
// state table, no row counts), a view of plan version 7 keeping its counted layout, a delete
// refused with XX000. Through the engine on RocksDB: views joining two datagen sources, streamed
// and backfilled, equal their queries in one snapshot while the sources read and after a restart
// in the middle of their reading, their numbers distinct; an index on one answers as the join
// does; EXPLAIN says `stored by row number`.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import { nextEpoch, type Epoch } from '../../../sql/epoch.js';
import type { StateStore } from '../../../storage/state-table.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { StreamManager } from '../stream-manager.js';
import type { ChangeBatch } from '../change-batch.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { CachedViewRun, fixedCatalog, planView, sourceRelation, textLine, type Harness } from './stream-harness.js';
import { openOnRocks } from './rocks-harness.js';

const A = 100;
const B = 101;
const VIEW = 900;
const relations: RelationDef[] = [
  sourceRelation(A, 'a', ['id', 'k', 'v']),
  sourceRelation(B, 'b', ['id', 'k', 'v']),
];
const catalog = fixedCatalog(relations);

type Materialize = Extract<StreamPlan, { kind: 'StreamMaterialize' }>;

interface Case {
  readonly name: string;
  readonly sql: string;
  /** The query over the inputs' visible rows ([id, k, v]), as text lines: the oracle. */
  readonly recompute: (a: readonly Row[], b: readonly Row[]) => string[];
}

const innerJoin = (a: readonly Row[], b: readonly Row[], keep: (l: Row, r: Row) => boolean): string[] =>
  a.flatMap((l) => b.filter((r) => l[1] !== null && l[1] === r[1] && keep(l, r)).map((r) => textLine([l[0], l[2], r[0], r[2]])));

const CASES: Case[] = [
  { name: 'inner join of two append-only inputs', sql: 'select a.id, a.v, b.id, b.v from a join b on a.k = b.k', recompute: (a, b) => innerJoin(a, b, () => true) },
  {
    name: "q20's shape: a join under a filter of one side",
    sql: 'select a.id, a.v, b.id, b.v from a join b on a.k = b.k where b.v < 6',
    recompute: (a, b) => innerJoin(a, b, (_l, r) => (r[2] as number) < 6),
  },
  { name: 'UNION ALL of two append-only inputs', sql: 'select id, v from a union all select id, v from b', recompute: (a, b) => [...a, ...b].map((row) => textLine([row[0], row[2]])) },
];

function materialize(stream: StreamPlan): Materialize {
  if (stream.kind !== 'StreamMaterialize') throw new Error('expected StreamMaterialize');
  return stream;
}

/** The view's relation table as stored: visible columns as sorted lines, and its hidden numbers. */
function stored(store: StateStore, plan: Materialize): { lines: string[]; numbers: bigint[] } {
  const declaration = plan.stateTables[0]!;
  const table = store.table({ tableId: declaration.tableId, columnTypes: declaration.columnTypes, primaryKey: declaration.primaryKey });
  const rows = [...table.scan()];
  return { lines: rows.map((row) => textLine(row.slice(0, -1))).sort(), numbers: rows.map((row) => row[row.length - 1] as bigint) };
}

function run(testCase: Case, seed: number, abortChance: number, restartChance: number): void {
  const next = seededRandom(seed);
  const plan = materialize(planView(catalog, testCase.sql, { viewId: VIEW }));
  expect(plan.numbered).toBe(true);
  const store = createMemoryStateStore();
  const view = new CachedViewRun(store, VIEW, plan, { memoryLimitBytes: 64 << 20, completeLoadRows: 40 });
  let nextRowId = 1n;
  const rows = new Map<number, Row[]>([
    [A, []],
    [B, []],
  ]);
  for (let step = 0; step < 30; step++) {
    const batches = new Map<number, ChangeBatch>();
    const added = new Map<number, Row[]>([
      [A, []],
      [B, []],
    ]);
    const changes = Math.floor(next() * 12);
    for (let c = 0; c < changes; c++) {
      const relation = next() < 0.5 ? A : B;
      // Few ids, keys and values: equal rows, many rows per key; key 0 is NULL.
      const key = Math.floor(next() * 4);
      const row: Row = [Math.floor(next() * 3), key === 0 ? null : key, Math.floor(next() * 10), nextRowId++];
      added.get(relation)!.push(row);
      let batch = batches.get(relation);
      if (batch === undefined) batches.set(relation, (batch = { rows: [], signs: [] }));
      batch.rows.push(row);
      batch.signs.push(1);
    }
    // The dataflow may take a batch's rows as its own: it gets copies.
    const pushed = new Map([...batches].map(([id, batch]) => [id, { rows: batch.rows.map((row) => [...row]), signs: [...batch.signs] }]));
    const where = `${testCase.name}, seed ${seed}, step ${step}`;
    if (!view.step(pushed, next() < abortChance)) continue;
    for (const [id, list] of added) rows.get(id)!.push(...list);
    const visible = (id: number) => rows.get(id)!.map((row) => row.slice(0, 3));
    const expected = testCase.recompute(visible(A), visible(B)).sort();
    const table = stored(store, plan);
    expect(table.lines, where).toEqual(expected);
    expect(new Set(table.numbers).size, `${where}: distinct numbers`).toBe(table.numbers.length);
    expect(view.contents(), where).toEqual(expected);
    if (next() < restartChance) view.restart();
  }
}

beforeAll(async () => {
  await initParser();
});

describe('a view numbered by row equals its query recomputed after every epoch', () => {
  for (const [name, abortChance, restartChance] of [
    ['committed epochs', 0, 0],
    ['aborted epochs and restarts', 0.2, 0.2],
  ] as const) {
    it(name, () => {
      for (const testCase of CASES) for (let seed = 1; seed <= 4; seed++) run(testCase, seed, abortChance, restartChance);
    }, 60_000);
  }
});

describe('the numbered layout', () => {
  it('is keyed by the hidden column with a next row number and no row counts; plan version 7 keeps counting', () => {
    const sql = CASES[0]!.sql;
    const numbered = materialize(planView(catalog, sql, { viewId: VIEW }));
    expect(numbered.key).toEqual([4]);
    expect(numbered.stateTables.map((table) => table.purpose)).toEqual(['view rows', 'next row number']);
    expect(numbered.stateTables[0]!.primaryKey).toEqual([4]);
    const counted = materialize(planView(catalog, sql, { viewId: VIEW, planVersion: 7 }));
    expect(counted.key).toBeUndefined();
    expect(counted.numbered).toBeUndefined();
    expect(counted.stateTables.map((table) => table.purpose)).toEqual(['view rows', 'row counts']);
    // A source read through filters and projections keeps its source row ids (blind inserts).
    const blind = materialize(planView(catalog, 'select id, v from a where k > 1', { viewId: VIEW }));
    expect(blind.numbered).toBeUndefined();
    expect(blind.key).toEqual([2]);
  });

  it('numbers rows 0, 1, 2 ... across batches and epochs, and a delete fails with XX000', () => {
    const store = createMemoryStateStore();
    const plan = materialize(planView(catalog, CASES[0]!.sql, { viewId: VIEW }));
    let epoch: Epoch = 1n;
    const commit = () => store.commit((epoch = nextEpoch(epoch, Date.now())));
    const manager = new StreamManager(store, undefined, undefined, 64 << 20);
    const flow = manager.build(VIEW, plan);
    manager.install(flow);
    flow.initialize();
    const out = flow.pushAll(new Map([[B, { rows: [[1, 1, 5, 1n]], signs: [1] }]]));
    expect(out.rows).toEqual([]);
    // Two equal left rows: two view rows, numbers 0 and 1.
    const first = flow.pushAll(new Map([[A, { rows: [[7, 1, 2, 2n], [7, 1, 2, 3n]], signs: [1, 1] }]]));
    expect(first.rows).toEqual([
      [7, 2, 1, 5, 0n],
      [7, 2, 1, 5, 1n],
    ]);
    commit();
    const second = flow.pushAll(new Map([[B, { rows: [[2, 1, 6, 4n]], signs: [1] }]]));
    expect(second.rows.map((row) => row[4])).toEqual([2n, 3n]);
    commit();
    expect(stored(store, plan).numbers.sort()).toEqual([0n, 1n, 2n, 3n]);
    expect(() => flow.pushAll(new Map([[A, { rows: [[7, 1, 2, 2n]], signs: [-1] }]]))).toThrow(expect.objectContaining({ code: 'XX000' }));
  });
});

describe('views joining two datagen sources, on RocksDB', () => {
  const ROWS = 3000;
  const VIEWS: [string, string][] = [
    ['joined', 'select s.g, s.x, u.h from s join u on s.x = u.x'],
    ['filtered', 'select s.g, u.h, u.y from s join u on s.x = u.x where u.y = 2'],
    ['unioned', 'select g, x from s union all select h, x from u'],
  ];

  /** In one statement (one snapshot): the rows of the view and of its query that the other lacks, as a count. */
  const difference = (name: string, query: string) => `select count(*) from ((select * from ${name} except all (${query})) union all ((${query}) except all select * from ${name})) d`;

  async function expectEqualNow(h: Harness, step: string): Promise<void> {
    for (const [name, query] of VIEWS) {
      expect(await h.lines(difference(name, query)), `${name} ${step}`).toEqual(['0']);
      expect(await h.lines(`select count(*) - count(distinct _oxbow_duplicate) from ${name}`), `${name} numbers ${step}`).toEqual(['0']);
    }
  }

  async function count(h: Harness, relation: string): Promise<number> {
    return Number((await h.lines(`select count(*) from ${relation}`))[0]);
  }

  it('equal their queries while the sources read, after a restart in the middle, streamed and backfilled', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-numbered-view-'));
    const open = () => openOnRocks(dir, {});
    let h: Harness | undefined;
    try {
      h = await open();
      const source = (name: string, columns: string, first: string, more = '') =>
        `CREATE SOURCE ${name} (${columns}) WITH (connector = 'datagen', fields.${first}.kind = 'sequence', fields.${first}.start = '1', fields.${first}.end = '${ROWS}', fields.x.min = '1', fields.x.max = '300',${more} datagen.rows.per.second = '600', datagen.split.num = '2')`;
      await h.run(source('s', 'g int, x int', 'g'));
      await h.run(source('u', 'h int, x int, y int', 'h', " fields.y.min = '1', fields.y.max = '3',"));
      // Two views while the sources read (streamed), one after the restart (backfilled).
      for (const [name, query] of VIEWS.slice(0, 2)) await h.run(`create materialized view ${name} as ${query}`);
      const plan = (await h.run(`explain create materialized view probe as ${VIEWS[0]![1]}`)).rows.map((row) => row.join(' ')).join('\n');
      expect(plan).toContain('stored by row number');
      for (let attempt = 0; attempt < 500 && (await count(h, 's')) < ROWS / 4; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const [name, query] of VIEWS.slice(0, 2)) expect(await h.lines(difference(name, query)), `${name} before the restart`).toEqual(['0']);
      // The restart comes in the middle of the sources' reading.
      expect(await count(h, 's')).toBeLessThan(ROWS);
      await h.close();
      h = await open();
      await h.run(`create materialized view ${VIEWS[2]![0]} as ${VIEWS[2]![1]}`);
      // An index on a numbered view: its entries come with the rows (backfilled, then streamed).
      await h.run('create index joined_x on joined (x)');
      for (let attempt = 0; attempt < 1500; attempt++) {
        await expectEqualNow(h, `at attempt ${attempt}`);
        if ((await count(h, 's')) >= ROWS && (await count(h, 'u')) >= ROWS) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await count(h, 's')).toBe(ROWS);
      expect(await count(h, 'u')).toBe(ROWS);
      await expectEqualNow(h, 'at the end');
      // By hand: the union holds every source row once.
      expect(await count(h, 'unioned')).toBe(2 * ROWS);
      // Reads through the index equal the join's rows of that key.
      for (const x of [1, 7, 150]) {
        expect(await h.lines(`select g, h from joined where x = ${x}`), `x = ${x}`).toEqual(await h.lines(`select s.g, u.h from s join u on s.x = u.x where s.x = ${x}`));
      }
      expect((await h.run('explain select g, h from joined where x = 7')).rows.map((row) => row.join(' ')).join('\n')).toContain('joined_x');
      expect(await h.lines("select purpose from oxbow_catalog.state_size where object_name = 'joined' and purpose in ('view rows', 'next row number', 'row counts')")).toEqual(['next row number', 'view rows']);
    } finally {
      await h?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
