// The per-epoch combine of the hash aggregate (executor/stream/hash-aggregate.ts, Dataflow.pushChunk
// / seal): inside an epoch the changes come in chunks, an aggregate folds them into its dirty groups
// and emits each group's net change once, at the barrier (or when its dirty set reaches
// `aggregateCombine.maxGroups`). Oracle: after every epoch each view equals its query recomputed by
// the batch executor, with every epoch pushed in chunks of 1-3 changes (`chunkEpochs`), with a bound
// of two dirty groups (early outputs mid-epoch) and without combining; views over aggregates of
// every kind: count / sum / min / max, a join over an aggregate, an aggregate over an aggregate, a
// keyless one, a view on a view, a shared subtree (Nexmark q5's shape); statements that touch one
// group in many chunks, empty groups and refill them, delete the current min / max, and fail after
// their changes were pushed. The number of changes the aggregate emits is counted by hand (EXPLAIN
// ANALYZE): one per group and epoch. A Nexmark source in chunks of 64 rows ends equal to its query.

import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, runAndCompareViews, type Harness } from './stream-harness.js';
import { chunkEpochs } from './property-workload.js';
import { aggregateCombine } from '../hash-aggregate.js';
import { sourceChunks } from '../../connectors/source-manager.js';
import { backfillDefaults } from '../../ddl/create-materialized-view.js';

const SCHEMA = ['create table t (id int primary key, g int, v int check (v is null or v < 1000))', 'create table u (g int primary key, label text)'];

const VIEWS: readonly (readonly [string, string])[] = [
  ['c_kinds', 'select g, count(*) as n, sum(v) as s, min(v) as lo, max(v) as hi, count(distinct v) as dv from t group by g'],
  ['c_join', 'select a.g, a.n, u.label from (select g, count(*) as n, sum(v) as s from t group by g) as a join u on a.g = u.g'],
  ['c_nested', 'select n, count(*) as groups, max(s) as top from (select g, count(*) as n, sum(v) as s from t group by g) as x group by n'],
  ['c_keyless', 'select count(*) as n, sum(v) as s, max(v) as hi from t'],
  ['c_on_view', 'select n % 3 as m, count(*) as groups, sum(s) as s from c_kinds group by n % 3'],
  // q5's shape: one aggregate shared by both sides of a join, the other side an aggregate over it.
  ['c_shared', 'select a.g, a.n from (select g, count(*) as n from t group by g) as a join (select max(c.n) as mx from (select g, count(*) as n from t group by g) as c) as m on a.n >= m.mx'],
];

const STATEMENTS = [
  "insert into u values (1, 'one'), (2, 'two'), (3, 'three'), (5, 'five')",
  // One group touched in every chunk of the epoch.
  'insert into t select i, 1, i % 17 from generate_series(1, 40) as i',
  'insert into t select i, i % 4, i from generate_series(41, 80) as i',
  'update t set v = v + 1 where g = 1',
  // The current max of group 1 and min of group 0 deleted.
  'delete from t where g = 1 and v = (select max(v) from t where g = 1)',
  'delete from t where g = 0 and v = (select min(v) from t where g = 0)',
  // Rows move between groups, some groups empty out.
  'update t set g = 5 where g = 2',
  'delete from t where g = 3',
  // Its first rows are written and pushed before the CHECK fails: the epoch aborts.
  'insert into t select i, 1, case when i = 95 then 5000 else i end from generate_series(90, 96) as i',
  // Groups emptied and refilled inside one epoch (each update is a retraction and an insert).
  'insert into t select i, 6 + i % 2, i from generate_series(100, 110) as i',
  'update t set g = case when g = 6 then 7 else 6 end where g in (6, 7)',
  'update t set v = v * 2 where g in (6, 7)',
  "update u set label = 'uno' where g = 1",
  'delete from t where id % 2 = 0',
  'update t set v = null where g = 5',
  'delete from t',
  'insert into t select i, i % 3, -i from generate_series(1, 30) as i',
];

let h: Harness | undefined;
const maxGroups = aggregateCombine.maxGroups;

afterEach(async () => {
  aggregateCombine.maxGroups = maxGroups;
  await h?.close();
  h = undefined;
});

/** Runs the statements (each an epoch, pushed in chunks of 1-3 changes) and compares every view after each. */
async function runChunked(): Promise<void> {
  h = await openHarness();
  for (const statement of SCHEMA) await h.run(statement);
  let turn = 0;
  chunkEpochs(h, () => 1 + (turn++ % 3));
  const failing = STATEMENTS.filter((statement) => statement.includes('5000'));
  for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
  for (const statement of STATEMENTS) {
    if (failing.includes(statement)) await expect(h.run(statement)).rejects.toThrow(/check constraint/);
    else await h.run(statement);
    for (const [name, query] of VIEWS) expect(await h.lines(`select * from ${name}`), `${name} after ${statement}`).toEqual(await h.lines(query));
  }
}

/** The rows the aggregate under `view` (its first StreamHashAggregate) emitted so far. */
async function aggregateRowsOut(view: string): Promise<number> {
  const lines = (await h!.run(`explain analyze ${view}`)).rows.map((row) => String(row[0]));
  const line = lines.find((text) => text.includes('StreamHashAggregate'));
  const match = / out=(\d+) /.exec(line ?? '');
  if (match === null) throw new Error(`no aggregate in EXPLAIN ANALYZE ${view}: ${lines.join('\n')}`);
  return Number(match[1]);
}

describe('per-epoch combine of the hash aggregate', () => {
  it('views over aggregates equal their query after every epoch pushed in chunks', async () => {
    await runChunked();
  }, 60_000);

  it('with a bound of two dirty groups (outputs mid-epoch)', async () => {
    aggregateCombine.maxGroups = 2;
    await runChunked();
  }, 60_000);

  it('without combining (a bound of 0)', async () => {
    aggregateCombine.maxGroups = 0;
    await runChunked();
  }, 60_000);

  it('a group touched in every chunk of an epoch emits one change per epoch', async () => {
    h = await openHarness();
    await h.run('create table t (id int primary key, g int, v int)');
    chunkEpochs(h, () => 1);
    await runAndCompareViews(h, [['one', 'select g, count(*) as n, sum(v) as s from t group by g']], []);
    // 50 rows of group 1, each its own chunk: one insert.
    await h.run('insert into t select i, 1, i from generate_series(1, 50) as i');
    expect(await aggregateRowsOut('one')).toBe(1);
    // 50 more rows of group 1 and 50 of group 2: group 1's retraction and insert, group 2's insert.
    await h.run('insert into t select i, 1 + i % 2, i from generate_series(51, 150) as i');
    expect(await aggregateRowsOut('one')).toBe(1 + 2 + 1);
    // Group 2 emptied one row per chunk: one retraction.
    await h.run('delete from t where g = 2');
    expect(await aggregateRowsOut('one')).toBe(4 + 1);
    // Group 1's rows moved out and back within the epoch (a net change of nothing): no output.
    await h.run('update t set v = v where g = 1');
    expect(await aggregateRowsOut('one')).toBe(5);
    expect(await h.lines('select * from one')).toEqual(await h.lines('select g, count(*) as n, sum(v) as s from t group by g'));
    // Without the combine the same epoch emits a retraction and an insert per chunk.
    aggregateCombine.maxGroups = 0;
    await h.run('insert into t select i, 1, i from generate_series(1001, 1010) as i');
    expect(await aggregateRowsOut('one')).toBe(5 + 2 * 10);
  }, 30_000);

  it('a backfill in chunks of 7 rows: one change per group, views equal their query after it and after each epoch', async () => {
    const chunkRows = backfillDefaults.chunkRows;
    backfillDefaults.chunkRows = 7;
    try {
      h = await openHarness();
      for (const statement of SCHEMA) await h.run(statement);
      await h.run("insert into u values (0, 'zero'), (1, 'one'), (2, 'two')");
      await h.run('insert into t select i, i % 5, i % 11 from generate_series(1001, 1200) as i');
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      for (const [name, query] of VIEWS) expect(await h.lines(`select * from ${name}`), `${name} after its backfill`).toEqual(await h.lines(query));
      // 200 rows in 29 chunks, 5 groups: 5 inserts (without the combine: 5 + 2 * 5 * 28 changes).
      expect(await aggregateRowsOut('c_kinds')).toBe(5);
      for (const statement of STATEMENTS.slice(1, 8)) {
        await h.run(statement);
        for (const [name, query] of VIEWS) expect(await h.lines(`select * from ${name}`), `${name} after ${statement}`).toEqual(await h.lines(query));
      }
    } finally {
      backfillDefaults.chunkRows = chunkRows;
    }
  }, 60_000);

  it('a Nexmark source in chunks of 64 rows: every view over its aggregates equals its query', async () => {
    const chunkRows = sourceChunks.rows;
    sourceChunks.rows = 64;
    try {
      h = await openHarness();
      const events = 20_000;
      await h.run(
        `create source bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR) with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '1', nexmark.max.chunk.size = '64', nexmark.min.event.gap.in.ns = '50000')`,
      );
      const views: readonly (readonly [string, string])[] = [
        ['n_count', 'select auction % 13 as a, count(*) as n, sum(price) as s, max(price) as hi, min(bidder) as lo from bid group by auction % 13'],
        ['n_nested', 'select n % 5 as m, count(*) as groups, max(hi) as hi from (select auction % 97 as a, count(*) as n, max(price) as hi from bid group by auction % 97) as x group by n % 5'],
        [
          'n_q5',
          "select a.auction, a.num from (select auction, count(*) as num, window_start as starttime from hop(bid, date_time, interval '2' second, interval '10' second) group by window_start, auction) as a join (select max(num) as maxn, starttime_c from (select count(*) as num, window_start as starttime_c from hop(bid, date_time, interval '2' second, interval '10' second) group by auction, window_start) as c group by starttime_c) as m on a.starttime = m.starttime_c and a.num >= m.maxn",
        ],
      ];
      for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
      for (;;) {
        const rows = (await h.run("select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = 'bid'")).rows;
        if (Number(rows[0]![0]) >= events) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (const [name, query] of views) expect(await h.lines(`select * from ${name}`), name).toEqual(await h.lines(query));
      // 13 groups over a few epochs: far fewer changes than the ~310 chunks' worth.
      expect(await aggregateRowsOut('n_count')).toBeLessThan(2 * 13 * 10);
    } finally {
      sourceChunks.rows = chunkRows;
    }
  }, 60_000);
});
