// EMIT ON WINDOW CLOSE over a table with a WATERMARK: random append-only workloads; after every
// epoch each view equals its query recomputed by the batch executor over the rows the watermark let
// through, restricted to the windows the watermark has closed (the test tracks both itself: the
// watermark is the largest ts - 5 seconds among accepted rows, a statement's rows are checked
// against the watermark before the statement). Rows behind the watermark are counted in
// oxbow_catalog.view_errors. Also: a restart keeps the buffer and the watermark; a join of two
// watermarked tables on their window key closes at the lesser watermark; a join whose window
// column is one side's alone is refused.

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openHarness, type Harness } from './stream-harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { streamPlanDefaults } from '../../ddl/create-materialized-view.js';
import { STREAM_PLAN_VERSION } from '../../../planner/stream/index.js';
import { tableLowerBound, tableUpperBound } from '../../../storage/mvcc-key.js';
import { ROW_TOMBSTONE } from '../../../storage/row-codec.js';

const BASE = Date.parse('2026-03-01T00:00:00Z');
const DELAY_MS = 5_000;

const VIEWS: readonly (readonly [string, string, (closedBelow: string) => string])[] = [
  [
    'w_count',
    "select window_start, count(*) as n, sum(v) as s from tumble(ev, ts, interval '10 seconds') group by window_start",
    (w) => `having window_start + interval '10 seconds' <= ${w}`,
  ],
  [
    'w_end',
    "select window_end, max(v) as m from tumble(ev, ts, interval '10 seconds') where v > 0 group by window_start, window_end",
    (w) => `having window_start + interval '10 seconds' <= ${w}`,
  ],
  ['w_plain', 'select ts, v from ev where v % 2 = 0', (w) => `and ts < ${w}`],
  [
    'w_hop',
    "select window_start, count(*) as n, sum(v) as s from hop(ev, ts, interval '5 seconds', interval '10 seconds') where v > -100 group by window_start",
    (w) => `having window_start + interval '10 seconds' <= ${w}`,
  ],
  [
    'w_minmax',
    "select v % 3 as k, window_start, min(v) as lo, max(v) as hi, count(*) as n from tumble(ev, ts, interval '10 seconds') group by v % 3, window_start",
    (w) => `having window_start + interval '10 seconds' <= ${w}`,
  ],
  [
    // Nexmark q5's shape: the same relation on both sides of a join keyed by the window.
    'w_hot',
    "select a.window_start, a.k, a.n from (select v % 3 as k, window_start, count(*) as n from tumble(ev, ts, interval '10 seconds') group by v % 3, window_start) as a " +
      "join (select window_start, max(c) as top from (select window_start, v % 3 as k, count(*) as c from tumble(ev, ts, interval '10 seconds') group by window_start, v % 3) as x group by window_start) as b " +
      'on a.window_start = b.window_start and a.n >= b.top',
    (w) => `where a.window_start + interval '10 seconds' <= ${w}`,
  ],
  [
    // Nexmark q7's shape: each row against its window's maximum, joined on the value with a band on
    // the time (an interval join). A row at t joins windows ending in [t, t + 10 s]: final once t is
    // below the start of the watermark's window, i.e. once t's own window ended at the watermark.
    'w_band',
    "select b.ts, b.v from (select * from ev) as b join (select max(v) as m, window_end from tumble(ev, ts, interval '10 seconds') group by window_end) as w " +
      "on b.v = w.m and b.ts between w.window_end - interval '10 seconds' and w.window_end",
    (w) => `where date_bin(interval '10 seconds', b.ts, timestamp '1970-01-01') + interval '10 seconds' <= ${w}`,
  ],
];

const batch = fc.array(fc.record({ seconds: fc.integer({ min: 0, max: 90 }), v: fc.integer({ min: -3, max: 9 }) }), { minLength: 1, maxLength: 3 });

function recompute(query: string, accepted: readonly number[], tail: string): string {
  const ids = accepted.length === 0 ? 'false' : `id in (${accepted.join(', ')})`;
  // The restriction to accepted rows goes into the WHERE (or becomes it), the window condition after.
  const withIds = query.includes(' where ') ? query.replace(' where ', ` where ${ids} and `) : query.replaceAll(' from tumble(ev, ts, interval \'10 seconds\')', ` from tumble(ev, ts, interval '10 seconds') where ${ids}`).replace(' from ev', ` from ev where ${ids}`);
  const grouped = withIds.includes(' group by ');
  return grouped ? `${withIds} ${tail}` : `${withIds} ${tail}`;
}

const stamp = (millis: number) => `timestamp '${new Date(millis).toISOString().replace('T', ' ').replace('Z', '')}'`;

async function check(batches: { seconds: number; v: number }[][], restartAt: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-eowc-'));
  const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
  let h: Harness = await open();
  try {
    await h.run("create table ev (id int primary key, ts timestamp, v int, watermark for ts as ts - interval '5 seconds')");
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query} emit on window close`);
    const accepted: number[] = [];
    let watermark: number | null = null;
    let late = 0;
    let id = 0;
    for (let step = 0; step < batches.length; step++) {
      if (step === restartAt) {
        await h.close();
        h = await open();
        // view_errors counts are committed with the epoch (stream-manager.ts): they survive the restart.
      }
      const rows = batches[step]!.map((row) => ({ id: id++, ts: BASE + row.seconds * 1000, v: row.v }));
      await h.run(`insert into ev values ${rows.map((row) => `(${row.id}, ${stamp(row.ts)}, ${row.v})`).join(', ')}`);
      let latest: number | null = null;
      for (const row of rows) {
        if (watermark !== null && row.ts < watermark) {
          late++;
          continue;
        }
        accepted.push(row.id);
        latest = latest === null ? row.ts : Math.max(latest, row.ts);
      }
      if (latest !== null && (watermark === null || latest - DELAY_MS > watermark)) watermark = latest - DELAY_MS;
      for (const [name, query, closed] of VIEWS) {
        const expected = watermark === null ? [] : await h.lines(recompute(query, accepted, closed(stamp(watermark))));
        expect(await h.lines(`select * from ${name}`), `${name} after step ${step}`).toEqual(expected);
        const errors = await h.lines(`select error_count from oxbow_catalog.view_errors where view_name = '${name}'`);
        expect(errors, `late rows counted for ${name}`).toEqual(late === 0 ? [] : [String(late)]);
      }
    }
  } finally {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('EMIT ON WINDOW CLOSE', () => {
  it('emits a window once the watermark passes its end, never retracts, drops late rows', async () => {
    await check(
      [
        [{ seconds: 1, v: 1 }, { seconds: 3, v: 2 }],
        [{ seconds: 12, v: 3 }],
        [{ seconds: 16, v: 4 }],
        [{ seconds: 2, v: 5 }],
        [{ seconds: 40, v: 6 }, { seconds: 11, v: 7 }],
      ],
      -1,
    );
  });

  it('equals the batch recomputation over accepted rows and closed windows (random workloads, one restart)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(batch, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 12 }), check),
      { numRuns: Number(process.env.STREAM_PROPERTY_RUNS ?? 8), endOnFailure: true },
    );
  }, 120_000);

  it('closes a join of two watermarked tables on their window key at the lesser watermark (random workloads)', async () => {
    // Windows of `ev` and `ev2` joined on window_start: a window is final only once both tables'
    // watermarks have passed it. Each step inserts into one table; the expected rows are the join
    // recomputed over the rows each table's watermark let through, in windows closed below the
    // lesser of the two watermarks.
    const step = fc.record({ second: fc.boolean(), rows: batch });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const h = await openHarness();
        try {
          await h.run("create table ev (id int primary key, ts timestamp, v int, watermark for ts as ts - interval '5 seconds')");
          await h.run("create table ev2 (id int primary key, ts timestamp, v int, watermark for ts as ts - interval '5 seconds')");
          const query =
            "select a.window_start, a.n, b.m from (select window_start, count(*) as n from tumble(ev, ts, interval '10 seconds') group by window_start) as a " +
            "join (select window_start, max(v) as m from tumble(ev2, ts, interval '10 seconds') group by window_start) as b on a.window_start = b.window_start";
          await h.run(`create materialized view w_join as ${query} emit on window close`);
          const state = [
            { table: 'ev', accepted: [] as number[], watermark: null as number | null },
            { table: 'ev2', accepted: [] as number[], watermark: null as number | null },
          ];
          let id = 0;
          for (const { second, rows: batchRows } of steps) {
            const side = state[second ? 1 : 0]!;
            const rows = batchRows.map((row) => ({ id: id++, ts: BASE + row.seconds * 1000, v: row.v }));
            await h.run(`insert into ${side.table} values ${rows.map((row) => `(${row.id}, ${stamp(row.ts)}, ${row.v})`).join(', ')}`);
            let latest: number | null = null;
            for (const row of rows) {
              if (side.watermark !== null && row.ts < side.watermark) continue;
              side.accepted.push(row.id);
              latest = latest === null ? row.ts : Math.max(latest, row.ts);
            }
            if (latest !== null && (side.watermark === null || latest - DELAY_MS > side.watermark)) side.watermark = latest - DELAY_MS;
            const [one, two] = state;
            let expected: string[] = [];
            if (one!.watermark !== null && two!.watermark !== null) {
              const closedBelow = stamp(Math.min(one!.watermark, two!.watermark));
              const ids = (accepted: number[]) => (accepted.length === 0 ? 'false' : `id in (${accepted.join(', ')})`);
              const restricted = query
                .replace("tumble(ev, ts, interval '10 seconds')", `tumble(ev, ts, interval '10 seconds') where ${ids(one!.accepted)}`)
                .replace("tumble(ev2, ts, interval '10 seconds')", `tumble(ev2, ts, interval '10 seconds') where ${ids(two!.accepted)}`);
              expected = await h.lines(`${restricted} where a.window_start + interval '10 seconds' <= ${closedBelow}`);
            }
            expect(await h.lines('select * from w_join')).toEqual(expected);
          }
        } finally {
          await h.close();
        }
      }),
      {
        numRuns: Number(process.env.STREAM_PROPERTY_RUNS ?? 8),
        endOnFailure: true,
        // ev's watermark passes window 0 before ev2's first row for it arrives.
        examples: [[[{ second: false, rows: [{ seconds: 1, v: 1 }] }, { second: false, rows: [{ seconds: 40, v: 2 }] }, { second: true, rows: [{ seconds: 2, v: 3 }] }, { second: true, rows: [{ seconds: 50, v: 4 }] }]]],
      },
    );
  }, 120_000);

  /** Tombstones left in the backend by the cleaned operators of the view below, per stream plan version. */
  const tombstonesByVersion = new Map<number, number>();

  it.each([5, 4])('deletes the state of closed windows: the aggregates and the join keep only open windows (100 windows, plan version %i)', async (version) => {
    // Nexmark q5's shape over HOP, with min / max (value tables). Each statement is one epoch of rows
    // 5 seconds later than the last: after every epoch the view equals its query over the closed
    // windows, and the hash aggregates' and the hash join's state rows stay those of the open windows.
    // Version 5 keys the cleaned state by the window first and deletes closed windows by range;
    // version 4 keeps the group key order and deletes them key by key.
    const store = createMemoryStateStore();
    const h = await openHarness(store);
    streamPlanDefaults.version = version;
    try {
      await h.run("create table ev (id int primary key, ts timestamp, k int, v int, watermark for ts as ts - interval '5 seconds')");
      const hop = "hop(ev, ts, interval '5 seconds', interval '10 seconds')";
      const query =
        `select a.window_start, a.k, a.n, a.lo, a.hi, b.top from (select k, window_start, count(*) as n, min(v) as lo, max(v) as hi from ${hop} group by k, window_start) as a ` +
        `join (select window_start, max(c) as top from (select window_start, k, count(*) as c from ${hop} group by window_start, k) as x group by window_start) as b ` +
        'on a.window_start = b.window_start and a.n >= b.top';
      await h.run(`create materialized view hot as ${query} emit on window close`);
      const flow = h.engine.temporalTicker!.core.streams.all.find((one) => one.operators().some((operator) => operator.plan.kind === 'StreamEmitOnWindowClose'))!;
      const cleaned = flow.operators().filter((operator) => operator.plan.kind === 'StreamHashAggregate' || operator.plan.kind === 'StreamHashJoin');
      expect(cleaned.map((operator) => operator.plan.kind).sort()).toEqual(['StreamHashAggregate', 'StreamHashAggregate', 'StreamHashAggregate', 'StreamHashJoin']);
      // Version 5 keys each cleaned table by the window first: closed windows go by range deletes.
      let windowFirst = 0;
      for (const operator of cleaned) {
        const clean = (operator.plan as { clean?: { key: number } }).clean;
        expect(clean).toBeDefined();
        for (const declaration of operator.plan.stateTables) if (declaration.primaryKey[0] === clean!.key) windowFirst++;
      }
      // The 3 aggregates' 5 tables (2 value tables: min and max share one, and the max over
      // retractions) and the join's 2: at version 4 the 3 of the aggregates grouped by the window
      // first and the join's.
      expect(windowFirst).toBe(version >= 5 ? 7 : 5);
      /** Tombstones (per-key deletes) the backend holds for the cleaned operators' tables. */
      const tombstones = (): number => {
        let count = 0;
        for (const operator of cleaned) {
          for (const declaration of operator.plan.stateTables) {
            const iterator = store.backend.scan({ lowerBound: tableLowerBound(declaration.tableId), upperBound: tableUpperBound(declaration.tableId) });
            try {
              for (let packed = iterator.nextPacked(256); packed !== null; packed = iterator.nextPacked(256)) {
                for (let offset = 0; offset < packed.length; ) {
                  const valueAt = offset + 4 + packed.readUInt32LE(offset) + 4;
                  if (packed[valueAt] === ROW_TOMBSTONE) count++;
                  offset = valueAt + packed.readUInt32LE(valueAt - 4);
                }
              }
            } finally {
              iterator.close();
            }
          }
        }
        return count;
      };
      const stateRows = (): number => {
        let rows = 0;
        for (const operator of cleaned) {
          for (const declaration of operator.plan.stateTables) {
            for (const _ of store.table({ tableId: declaration.tableId, columnTypes: declaration.columnTypes, primaryKey: declaration.primaryKey }).scan()) rows++;
          }
        }
        return rows;
      };
      let id = 0;
      let most = 0;
      for (let step = 0; step < 100; step++) {
        const rows = [0, 1, 2, 3, 4].map((i) => ({ id: id++, ts: BASE + step * 5_000 + i * 900, k: (step + i) % 4, v: (step * 7 + i * 3) % 11 }));
        await h.run(`insert into ev values ${rows.map((row) => `(${row.id}, ${stamp(row.ts)}, ${row.k}, ${row.v})`).join(', ')}`);
        const watermark = BASE + step * 5_000 + 4 * 900 - DELAY_MS;
        const expected = await h.lines(`${query} where a.window_start + interval '10 seconds' <= ${stamp(watermark)}`);
        expect(await h.lines('select * from hot'), `after step ${step}`).toEqual(expected);
        if (step >= 10) most = Math.max(most, stateRows());
      }
      expect((await h.lines('select * from hot')).length).toBeGreaterThan(150);
      // Open windows: at most 4 (2 closing a step behind the committed watermark) of 4 keys. Per
      // window 4 groups in each keyed aggregate with 2 value rows each, 1 group of the maximum
      // (and its value rows), 4 + 1 join rows: about 40 rows a window, 160 in all; without
      // cleaning they grow by 40 a step, to about 4,000.
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThan(250);
      tombstonesByVersion.set(version, tombstones());
      // Retractions (a group's count moving, a joined row replaced) delete keys at both versions;
      // deleting closed windows key by key adds one tombstone per closed group and row.
      if (tombstonesByVersion.size === 2) expect(tombstonesByVersion.get(5)! * 2).toBeLessThan(tombstonesByVersion.get(4)!);
    } finally {
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
      await h.close();
    }
  });

  it('refuses a join whose output window column is neither a key of both sides nor in a band', async () => {
    const h = await openHarness();
    try {
      await h.run("create table ev (id int, ts timestamp, v int, watermark for ts as ts - interval '5' second)");
      // Nexmark q7's shape without the band's lower bound: a row's partners are not bounded in time.
      const unbounded =
        "select b.ts, b.v from ev as b join (select max(v) as m, window_end from tumble(ev, ts, interval '10 seconds') group by window_end) as w " +
        'on b.v = w.m where b.ts <= w.window_end emit on window close';
      await expect(h.run(`create materialized view q7_like as ${unbounded}`)).rejects.toMatchObject({ code: '0A000' });
      await expect(h.run('create materialized view one_side as select a.ts, b.v from ev as a join ev as b on a.id = b.id emit on window close')).rejects.toMatchObject({ code: '0A000' });
    } finally {
      await h.close();
    }
  });

  it('explains the watermark filter and the window close, and refuses a view without a watermark column', async () => {
    const h = await openHarness();
    try {
      await h.run("create table ev (id int, ts timestamp, v int, watermark for ts as ts - interval '5' second); create table plain (ts timestamp)");
      const plan = (await h.run("explain create materialized view m as select window_start, count(*) from tumble(ev, ts, interval '1 minute') group by window_start emit on window close")).rows.map((r) => r[0]).join('\n');
      expect(plan).toMatch(/StreamEmitOnWindowClose on window_start/);
      expect(plan).toMatch(/StreamWatermarkFilter ts - '5 seconds'::interval/);
      expect(plan).toMatch(/StreamHashAggregate .* cleaned by watermark on window_start/);
      const join = (await h.run(
        "explain create materialized view j as select a.window_start from (select window_start, count(*) from tumble(ev, ts, interval '1 minute') group by window_start) as a " +
          "join (select window_start, id, max(v) from tumble(ev, ts, interval '1 minute') group by id, window_start) as b on a.window_start = b.window_start emit on window close",
      )).rows.map((r) => r[0]).join('\n');
      expect(join).toMatch(/StreamHashJoin .* cleaned by watermark on window_start/);
      // id, window_start: the aggregate's second group key follows the watermark.
      expect(join).toMatch(/StreamHashAggregate .*group by id, window_start.* cleaned by watermark on window_start/i);
      // Without EMIT ON WINDOW CLOSE no watermark filter drops late rows: nothing is cleaned.
      const plain = (await h.run("explain create materialized view p as select window_start, count(*) from tumble(ev, ts, interval '1 minute') group by window_start")).rows.map((r) => r[0]).join('\n');
      expect(plain).not.toMatch(/cleaned/);
      await expect(h.run("create materialized view bad as select window_start, count(*) from tumble(plain, ts, interval '1 minute') group by window_start emit on window close")).rejects.toMatchObject({ code: '0A000' });
      await expect(h.run("create table bad_wm (ts int, watermark for ts as ts - 5)")).rejects.toMatchObject({ code: '42804' });
      await expect(h.run("create table bad_wm (ts timestamp, watermark for nope as ts)")).rejects.toMatchObject({ code: '42703' });
      await expect(h.run("create table bad_wm (ts timestamp, watermark for ts as ts + interval '1 second')")).rejects.toMatchObject({ code: '0A000' });
    } finally {
      await h.close();
    }
  });
});
