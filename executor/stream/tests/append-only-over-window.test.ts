// StreamAppendOnlyOverWindow (executor/stream/over-window.ts): over-windows of forward calls over
// an append-only source. Random epochs of inserted rows (several partitions, ties on the ORDER BY,
// rows arriving before their partition's last row, NULL partitions, order keys and arguments,
// duplicates, aborted epochs, restarts between epochs) are pushed into each view; after every
// epoch the view equals a recomputation written in this test and the same view planned at version
// 7 (StreamOverWindow, the keyed recompute). Which windows take the node, and Nexmark q11 through
// the engine: EXPLAIN, and streamed and backfilled views equal to their query after a restart.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StateStore } from '../../../storage/state-table.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { streamInputs } from '../../../planner/stream/stream-plan.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { querySql, sourceDdl } from '../../../bench/nexmark.js';
import { CachedViewRun, fixedCatalog, planView, sourceRelation, tableRelation, textLine, type Harness } from './stream-harness.js';
import { openOnRocks } from './rocks-harness.js';

const EV = 100;
const TABLE = 101;
const VIEW = 900;
// ev: p (partition), t (order), v (argument), w (not read by the windows).
const relations: RelationDef[] = [
  sourceRelation(EV, 'ev', ['p', 't', 'v', 'w']),
  tableRelation(TABLE, 'tev', ['p', 't', 'v', 'w']),
];
const catalog = fixedCatalog(relations);

beforeAll(async () => {
  await initParser();
});

function kinds(plan: StreamPlan): string[] {
  return [plan.kind, ...streamInputs(plan).flatMap(kinds)];
}

type N = number | null;
/** A row of ev as the windows read it: p, t, v. */
type Ev = readonly [p: N, t: N, v: N];

/** Ascending with NULLs last (PostgreSQL's ASC default); `descending` flips both. */
function compareNullable(a: N, b: N, descending = false): number {
  if (a === b) return 0;
  const order = a === null ? 1 : b === null ? -1 : a - b;
  return descending ? -order : order;
}

/** Rows tied on the ORDER BY go in their key encoding's order: lexicographic, NULLs last. */
function compareRows(a: readonly N[], b: readonly N[]): number {
  for (let i = 0; i < a.length; i++) {
    const order = compareNullable(a[i]!, b[i]!);
    if (order !== 0) return order;
  }
  return 0;
}

type Call = 'row_number' | 'rank' | 'dense_rank' | 'lag' | 'lagDefault' | 'sum' | 'count' | 'countStar' | 'min' | 'max';

/**
 * One window over rows of numbers: PARTITION BY column `partition`, ORDER BY column `order`
 * (descending or not), each call over column `argument` with a RANGE (peers included) or ROWS
 * frame from UNBOUNDED PRECEDING to CURRENT ROW. Output: each row followed by its calls' values.
 */
function windowOf(rows: readonly (readonly N[])[], partition: number, order: number, descending: boolean, argument: number, calls: readonly Call[], frame: 'range' | 'rows'): N[][] {
  const groups = new Map<string, (readonly N[])[]>();
  for (const row of rows) {
    const key = String(row[partition]);
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = []));
    group.push(row);
  }
  const out: N[][] = [];
  for (const group of groups.values()) {
    group.sort((a, b) => compareNullable(a[order]!, b[order]!, descending) || compareRows(a, b));
    const n = group.length;
    const firstPeer: number[] = [];
    const lastPeer: number[] = [];
    for (let i = 0; i < n; i++) firstPeer[i] = i > 0 && group[i - 1]![order] === group[i]![order] ? firstPeer[i - 1]! : i;
    for (let i = n - 1; i >= 0; i--) lastPeer[i] = i < n - 1 && group[i + 1]![order] === group[i]![order] ? lastPeer[i + 1]! : i;
    let dense = 0;
    for (let i = 0; i < n; i++) {
      if (firstPeer[i] === i) dense++;
      const end = frame === 'rows' ? i : lastPeer[i]!;
      const frameValues = group.slice(0, end + 1).map((row) => row[argument]!);
      const present = frameValues.filter((value): value is number => value !== null);
      const values = calls.map((call): N => {
        switch (call) {
          case 'row_number':
            return i + 1;
          case 'rank':
            return firstPeer[i]! + 1;
          case 'dense_rank':
            return dense;
          case 'lag':
            return i > 0 ? group[i - 1]![argument]! : null;
          case 'lagDefault':
            return i > 0 ? group[i - 1]![argument]! : -1;
          case 'sum':
            return present.length === 0 ? null : present.reduce((a, b) => a + b, 0);
          case 'count':
            return present.length;
          case 'countStar':
            return frameValues.length;
          case 'min':
            return present.length === 0 ? null : Math.min(...present);
          case 'max':
            return present.length === 0 ? null : Math.max(...present);
        }
      });
      out.push([...group[i]!, ...values]);
    }
  }
  return out;
}

interface Case {
  readonly name: string;
  readonly sql: string;
  readonly recompute: (rows: readonly Ev[]) => string[];
}

const lines = (rows: readonly (readonly N[])[]) => rows.map((row) => textLine(row)).sort();

const CASES: Case[] = [
  {
    name: 'every call over a RANGE frame (peers included)',
    sql: `select p, t, v, row_number() over (partition by p order by t) as rn, rank() over (partition by p order by t) as rk,
      dense_rank() over (partition by p order by t) as dr, lag(v) over (partition by p order by t) as prev,
      sum(v) over (partition by p order by t) as s, count(v) over (partition by p order by t) as c,
      count(*) over (partition by p order by t) as cs, min(v) over (partition by p order by t) as mn,
      max(v) over (partition by p order by t) as mx from ev`,
    recompute: (rows) => lines(windowOf(rows, 0, 1, false, 2, ['row_number', 'rank', 'dense_rank', 'lag', 'sum', 'count', 'countStar', 'min', 'max'], 'range')),
  },
  {
    name: 'aggregates over a ROWS frame, lag with a default',
    sql: `select p, t, v, ${['sum(v)', 'count(*)', 'min(v)', 'max(v)', 'lag(v, 1, -1)'].map((call) => `${call} over (partition by p order by t rows between unbounded preceding and current row)`).join(', ')} from ev`,
    recompute: (rows) => lines(windowOf(rows, 0, 1, false, 2, ['sum', 'countStar', 'min', 'max', 'lagDefault'], 'rows')),
  },
  {
    name: 'a descending ORDER BY (NULLs first): rows mostly arrive before the last, recomputed',
    sql: 'select p, t, v, row_number() over (partition by p order by t desc) as rn, sum(v) over (partition by p order by t desc) as s from ev',
    recompute: (rows) => lines(windowOf(rows, 0, 1, true, 2, ['row_number', 'sum'], 'range')),
  },
  {
    name: 'ties that leave the RANGE values as they are: peers after the last row, no recompute',
    sql: `select p, t, q, row_number() over (partition by p order by t) as rn, lag(q) over (partition by p order by t) as prev,
      sum(q) over (partition by p order by t) as s, max(q) over (partition by p order by t) as mx,
      count(q) over (partition by p order by t rows between unbounded preceding and current row) as c
      from (select p, t, v / 4 as q from ev) as quartered`,
    recompute: (rows) => {
      const quartered = rows.map(([p, t, v]) => [p, t, v === null ? null : Math.trunc(v / 4)]);
      const range = windowOf(quartered, 0, 1, false, 2, ['row_number', 'lag', 'sum', 'max'], 'range');
      const counted = new Map(windowOf(quartered, 0, 1, false, 2, ['count', 'row_number'], 'rows').map((row) => [`${textLine(row.slice(0, 3))}#${row[4]}`, row[3]!]));
      return lines(range.map((row) => [...row, counted.get(`${textLine(row.slice(0, 3))}#${row[3]}`)!]));
    },
  },
  {
    name: "q11's shape: a running sum over a lag's output",
    sql: `select p, t, starts, sum(starts) over (partition by p order by t) as session from (
      select p, t, case when lag(t) over (partition by p order by t) > t - 3 then 0 else 1 end as starts from ev) as marked`,
    recompute: (rows) => {
      const marked = windowOf(rows.map((row) => [row[0], row[1]]), 0, 1, false, 1, ['lag'], 'range').map(([p, t, previous]) => {
        const starts = previous !== null && t !== null && previous! > t - 3 ? 0 : 1;
        return [p!, t!, starts] as N[];
      });
      return lines(windowOf(marked, 0, 1, false, 2, ['sum'], 'range'));
    },
  },
];

/**
 * A row of ev: partition 0-3 (NULL now and then); t runs forward from its partition's last t, a
 * tie now and then, before it now and then, NULL now and then; v 0-9 or NULL.
 */
function randomEv(next: () => number, clock: Map<N, number>): Ev {
  const p = next() < 0.08 ? null : Math.floor(next() * 4);
  const last = clock.get(p) ?? 0;
  const roll = next();
  const t = roll < 0.06 ? null : roll < 0.2 ? last : roll < 0.3 ? Math.max(0, last - 1 - Math.floor(next() * 4)) : last + 1 + Math.floor(next() * 3);
  if (t !== null && t > last) clock.set(p, t);
  const v = next() < 0.1 ? null : Math.floor(next() * 10);
  return [p, t, v];
}

function run(testCase: Case, seed: number, store: StateStore = createMemoryStateStore()): void {
  const next = seededRandom(seed);
  const fast = planView(catalog, testCase.sql, { viewId: VIEW });
  const general = planView(catalog, testCase.sql, { viewId: VIEW + 1, planVersion: 7 });
  expect(kinds(fast)).toContain('StreamAppendOnlyOverWindow');
  expect(kinds(fast)).not.toContain('StreamOverWindow');
  expect(kinds(general)).not.toContain('StreamAppendOnlyOverWindow');
  const limits = { memoryLimitBytes: 64 << 20, completeLoadRows: 40 };
  const views = [new CachedViewRun(store, VIEW, fast, limits), new CachedViewRun(createMemoryStateStore(), VIEW + 1, general, limits)];
  const clock = new Map<N, number>();
  let nextRowId = 1n;
  let rows: Ev[] = [];
  for (let step = 0; step < 40; step++) {
    const batch: Row[] = [];
    const added: Ev[] = [];
    const changes = 1 + Math.floor(next() * (step === 0 ? 20 : 6));
    for (let c = 0; c < changes; c++) {
      const ev = randomEv(next, clock);
      // A row repeated in the same epoch now and then.
      const copies = next() < 0.1 ? 2 : 1;
      for (let n = 0; n < copies; n++) {
        batch.push([...ev, Math.floor(next() * 3), nextRowId++]);
        added.push(ev);
      }
    }
    const abort = next() < 0.08;
    const committed = views.map((view) => view.step(new Map([[EV, { rows: batch.map((row) => [...row]), signs: batch.map(() => 1) }]]), abort));
    expect(committed).toEqual([!abort, !abort]);
    if (!abort) rows = [...rows, ...added];
    const expected = testCase.recompute(rows);
    const where = `${testCase.name}, seed ${seed}, step ${step}`;
    expect(views[0]!.contents(), where).toEqual(expected);
    expect(views[1]!.contents(), `${where} (StreamOverWindow)`).toEqual(expected);
    if (next() < 0.15) views[0]!.restart();
  }
}

describe('planning StreamAppendOnlyOverWindow', () => {
  it('takes forward windows over append-only inputs from plan version 8, and a window over its output', () => {
    for (const testCase of CASES) {
      const plan = kinds(planView(catalog, testCase.sql));
      expect(plan, testCase.name).toContain('StreamAppendOnlyOverWindow');
      expect(plan, testCase.name).not.toContain('StreamOverWindow');
    }
    expect(kinds(planView(catalog, CASES[4]!.sql)).filter((kind) => kind === 'StreamAppendOnlyOverWindow')).toHaveLength(2);
  });

  it('keeps StreamOverWindow for a table, other calls and frames, no PARTITION BY and plan version 7', () => {
    const general = [
      'select p, t, sum(v) over (partition by p order by t) from tev',
      'select p, t, lead(v) over (partition by p order by t) from ev',
      'select p, t, lag(v, 2) over (partition by p order by t) from ev',
      'select p, t, avg(v) over (partition by p order by t) from ev',
      'select p, t, sum(v) over (partition by p) from ev',
      'select p, t, sum(v) over (partition by p order by t rows between 1 preceding and current row) from ev',
      'select p, t, sum(v) filter (where v > 2) over (partition by p order by t) from ev',
      'select p, t, row_number() over (partition by p order by t), row_number() over (partition by p order by v) from ev',
      'select t, row_number() over (order by t) from ev',
    ];
    for (const sql of general) {
      const plan = kinds(planView(catalog, sql));
      expect(plan, sql).toContain('StreamOverWindow');
      expect(plan, sql).not.toContain('StreamAppendOnlyOverWindow');
    }
    expect(kinds(planView(catalog, CASES[0]!.sql, { planVersion: 7 }))).not.toContain('StreamAppendOnlyOverWindow');
  });
});

describe('StreamAppendOnlyOverWindow equals its query recomputed after every epoch', () => {
  for (const testCase of CASES) {
    it(testCase.name, () => {
      for (let seed = 1; seed <= 6; seed++) run(testCase, seed);
    }, 60_000);
  }
});

describe('Nexmark q11 through the engine on RocksDB', () => {
  it('plans both windows as StreamAppendOnlyOverWindow; streamed and backfilled views equal the query after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-over-window-'));
    let h: Harness | undefined;
    const open = async () => (h = await openOnRocks(dir, {}));
    const count = async (): Promise<number> => Number((await h!.lines('select count(*) from bid'))[0]);
    try {
      await open();
      await h!.run(sourceDdl('bid', 8000, 1, 64));
      const query = querySql('q11').select;
      const plan = (await h!.lines(`explain create materialized view x as ${query}`)).join('\n');
      expect(plan.match(/StreamAppendOnlyOverWindow/g), plan).toHaveLength(2);
      expect(plan).not.toMatch(/StreamOverWindow/);
      await h!.run(`create materialized view streamed as ${query}`);
      for (let attempt = 0; attempt < 500 && (await count()) < 1000; attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
      await h!.run(`create materialized view backfilled as ${query}`);
      // A restart while the source still produces: the views go on from their state in RocksDB.
      await h!.close();
      h = undefined;
      await open();
      // Until the source has produced its last bid.
      let seen = -1;
      for (let attempt = 0; attempt < 300; attempt++) {
        const now = await count();
        if (now === seen && now > 1000) break;
        seen = now;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const expected = await h!.lines(query);
      expect(expected.length).toBeGreaterThan(0);
      expect(await h!.lines('select * from streamed')).toEqual(expected);
      expect(await h!.lines('select * from backfilled')).toEqual(expected);
    } finally {
      await h?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
