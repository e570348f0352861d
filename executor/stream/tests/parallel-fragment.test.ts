// Fragments of joins and aggregates run by worker threads at --parallelism 2 and 4
// (executor/stream/PARALLEL.md): joins exchanged on their key with the aggregates, projections and
// filters above them, HOP and TUMBLE with the aggregate over them. After every statement each view
// equals its query recomputed by the batch executor, the views' contents do not depend on the
// parallelism, and a restart at another parallelism keeps them. On RocksDB; the worker script is
// the build's (npm run build first).
import { describe, expect, it } from 'vitest';
import { expectViewsEqualQueries, runCheckingViews, type Harness } from './stream-harness.js';
import { expectAbortLeavesViews, expectViewsAcrossRestarts, openAtParallelism as open, runtimeOf, temporaryDirectories, viewContents } from './rocks-harness.js';
import { seededRandom } from '../../../test/support/seeded-random.js';

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-fragment-', async () => {
  await h?.close();
  h = undefined;
});

const TABLES = [
  'create table a (k int primary key, g int, v int, t text)',
  'create table b (k int primary key, g int, w int, big bigint)',
  'create table e (k int primary key, g int, ts timestamp)',
];

const VIEWS: readonly (readonly [string, string])[] = [
  // A join and the aggregate over it grouped by the join key: one fragment.
  ['j_agg', 'select a.g, count(*) as n, sum(b.w) as s, max(a.v) as hi, min(b.w) as lo from a join b on a.g = b.g group by a.g'],
  // Grouped by the join key and more (Nexmark q4's max per auction and category), then again by another column (a second exchange).
  ['j_agg_agg', 'select t, avg(hi) as a, count(*) as n from (select a.g, a.t, max(b.w) as hi from a join b on a.g = b.g where b.w > a.v - 20 group by a.g, a.t) as q group by t'],
  // Joins of every type, with a residual, two keys.
  ['j_inner', 'select a.k, a.g, b.k as bk, b.w from a join b on a.g = b.g and a.v < b.w'],
  ['j_left', 'select a.k, a.v, b.k as bk, b.w from a left join b on a.g = b.g'],
  ['j_right', 'select a.k, b.k as bk, b.g from a right join b on a.g = b.g'],
  ['j_full', 'select coalesce(a.g, b.g) as g, count(*) as n, count(a.k) as na, count(b.k) as nb from a full join b on a.g = b.g group by coalesce(a.g, b.g)'],
  ['j_semi', 'select k, g, v from a where exists (select 1 from b where b.g = a.g and b.w > 10)'],
  ['j_anti', 'select k, g, v from a where not exists (select 1 from b where b.w = a.v)'],
  ['j_two_keys', 'select a.g, a.v, count(*) as n from a join b on a.g = b.g and a.v = b.w group by a.g, a.v'],
  // The int4 key is cast to int8: a join key that is not an input column runs on the main thread.
  ['j_int8', 'select a.k, b.k as bk from a join b on a.g = b.big'],
  // HOP and TUMBLE with the aggregate over them: the exchange before the windows, by g.
  ['hop', "select window_start, g, count(*) as n from hop(e, ts, interval '2' second, interval '10' second) group by window_start, g"],
  ['tumble', "select window_end, g, count(*) as n, max(ts) as last from tumble(e, ts, interval '5' second) group by window_end, g"],
  // The windows' counts joined with the largest per window (Nexmark q5's shape).
  [
    'hot',
    "select c.g, c.n from (select g, count(*) as n, window_start as ws from hop(e, ts, interval '2' second, interval '6' second) group by window_start, g) as c join (select max(n) as m, ws from (select count(*) as n, window_start as ws from hop(e, ts, interval '2' second, interval '6' second) group by g, window_start) as x group by ws) as top on c.ws = top.ws and c.n >= top.m",
  ],
];

/** Random DML over a, b and e: inserts, updates moving rows between join keys, deletes. */
function statements(seed: number, count: number): string[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const out: string[] = [];
  let nextKey = 1;
  for (let i = 0; i < count; i++) {
    const choice = random();
    const table = ['a', 'b', 'e'][int(3)]!;
    if (choice < 0.55) {
      const rows: string[] = [];
      for (let r = 1 + int(25); r > 0; r--) {
        const k = nextKey++;
        const g = random() < 0.05 ? 'null' : String(int(12));
        if (table === 'a') rows.push(`(${k}, ${g}, ${int(40)}, '${'xyz'[int(3)]}')`);
        else if (table === 'b') rows.push(`(${k}, ${g}, ${random() < 0.1 ? 'null' : int(40)}, ${int(12)})`);
        else rows.push(`(${k}, ${g}, timestamp '2024-01-01 00:00:00' + interval '1 second' * ${int(40)} + interval '1 millisecond' * ${int(1000)})`);
      }
      out.push(`insert into ${table} values ${rows.join(', ')}`);
    } else if (choice < 0.8) {
      const set = table === 'a' ? `g = (g + ${1 + int(3)}) % 12, v = v + 1` : table === 'b' ? `g = (g + ${1 + int(3)}) % 12, w = w - 1` : `ts = ts + interval '3 seconds'`;
      out.push(`update ${table} set ${set} where k % ${2 + int(6)} = ${int(2)}`);
    } else {
      out.push(`delete from ${table} where k % ${3 + int(9)} = ${int(3)}`);
    }
  }
  return out;
}

describe('parallel fragments', () => {
  it('equal their queries after every statement at parallelism 1, 2 and 4, whatever the parallelism', async () => {
    const script = statements(3, 45);
    const results: string[][][] = [];
    for (const parallelism of [1, 2, 4]) {
      h = await open(freshDirectory(), parallelism);
      for (const table of TABLES) await h.run(table);
      await h.run(script.slice(0, 6).join(';'));
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      if (parallelism > 1) expect(runtimeOf(h)!.workers).toBeGreaterThan(0);
      else expect(runtimeOf(h)?.workers ?? 0).toBe(0);
      await expectViewsEqualQueries(h, VIEWS, 'the backfill');
      await runCheckingViews(h, VIEWS, script.slice(6), (statement) => `${statement} at parallelism ${parallelism}`);
      results.push(await viewContents(h, VIEWS));
      await h.close();
      h = undefined;
    }
    expect(VIEWS.filter((_, index) => results[0]![index]!.length === 0).map(([name]) => name)).toEqual([]);
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  }, 300_000);

  it('keeps the views across restarts at another parallelism', async () => {
    const dir = freshDirectory();
    const script = statements(5, 32);
    h = await open(dir, 2);
    for (const table of TABLES) await h.run(table);
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    for (const statement of script.slice(0, 8)) await h.run(statement);
    await expectViewsEqualQueries(h, VIEWS, 'before the restart');
    const reopen = async (parallelism: number) => {
      await h!.close();
      return (h = await open(dir, parallelism));
    };
    await expectViewsAcrossRestarts(reopen, VIEWS, script, [
      [4, 8, 14],
      [1, 14, 20],
      [3, 20, 26],
      [2, 26, 32],
    ]);
  }, 300_000);

  it('an aborted statement leaves the workers state as it was', async () => {
    h = await open(freshDirectory(), 2);
    for (const table of TABLES) await h.run(table);
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    await h.run("insert into a values (1, 1, 5, 'x'), (2, 2, 6, 'y'); insert into b values (1, 1, 30, 1), (2, 2, 3, 2)");
    // The second row repeats a key: the statement fails after the first row reached the views' changes.
    await expectAbortLeavesViews(h, VIEWS, 'insert into b values (3, 1, 40, 1), (1, 9, 9, 9)', 'insert into b values (3, 1, 41, 1)');
  }, 60_000);

  it('EXPLAIN prints an exchange above each fragment input', async () => {
    h = await open(freshDirectory(), 2);
    for (const table of TABLES) await h.run(table);
    const explain = (sql: string) => h!.run(`explain ${sql}`).then((result) => result.rows.map((row) => String(row[0])));
    const exchanges = (lines: string[]) => lines.filter((line) => line.includes('StreamExchange')).map((line) => line.trim());
    // Every view of the suite but j_int8 runs (partly) in workers.
    for (const [name, query] of VIEWS) {
      const text = (await explain(`create materialized view x as ${query}`)).join('\n');
      if (name === 'j_int8') expect(text, name).not.toContain('StreamExchange');
      else expect(text, name).toContain('StreamExchange');
    }
    // A join with the aggregate over it: each side exchanged by its key, nothing between them.
    const joined = await explain(`create materialized view x as ${VIEWS[0]![1]}`);
    expect(exchanges(joined)).toEqual(['StreamExchange dist by (g) (2 workers)', 'StreamExchange dist by (g) (2 workers)']);
    const join = joined.findIndex((line) => line.includes('StreamHashJoin'));
    expect(joined[join - 1]).toContain('StreamHashAggregate');
    expect(joined[join + 1]).toContain('StreamExchange');
    // HOP in the workers: the exchange below the LATERAL, by g alone.
    const hop = await explain(`create materialized view x as ${VIEWS[10]![1]}`);
    expect(exchanges(hop)).toEqual(['StreamExchange dist by (g) (2 workers)']);
    expect(hop.findIndex((line) => line.includes('StreamLateral'))).toBeLessThan(hop.findIndex((line) => line.includes('StreamExchange')));
    // The second aggregate of j_agg_agg, by t, behind its own exchange.
    expect(exchanges(await explain(`create materialized view x as ${VIEWS[1]![1]}`))).toEqual([
      'StreamExchange dist by (t) (2 workers)',
      'StreamExchange dist by (g) (2 workers)',
      'StreamExchange dist by (g) (2 workers)',
    ]);
    await h.run(`create materialized view j_agg as ${VIEWS[0]![1]}`);
    await h.run("insert into a values (1, 1, 5, 'x'); insert into b values (1, 1, 30, 1)");
    const analyzed = (await h.run('explain analyze j_agg')).rows.map((row) => String(row[0]));
    // The fragment's root counts the exchange; the nodes below it run in the workers.
    expect(analyzed.find((line) => line.includes('StreamProject'))).toContain('StreamExchange dist by (g), (g) to 2 workers');
    expect(analyzed.find((line) => line.includes('StreamHashAggregate'))).toContain('(in the workers)');
    expect(analyzed.find((line) => line.includes('StreamHashJoin'))).toContain('(in the workers)');
    expect(analyzed.filter((line) => line.includes('StreamTableScan')).every((line) => line.includes('actual id='))).toBe(true);
  }, 60_000);
});
