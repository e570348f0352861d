// Hash aggregates run by worker threads at --parallelism 2 and 4 (executor/stream/PARALLEL.md):
// after every statement each view equals its query recomputed by the batch executor, the views'
// contents do not depend on the parallelism, and a restart (with the same or another parallelism)
// keeps them. On RocksDB (the workers read the shared database); the worker script is the build's
// (npm run build first).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Numeric } from '../../../sql/numeric.js';
import { type as scalar } from '../../../sql/types.js';
import type { Row } from '../../../sql/value.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { decodeChanges, encodeChanges } from '../parallel/batch-codec.js';
import { ownerOf, VNODE_COUNT, vnodeOf } from '../parallel/vnode.js';
import { expectViewsEqualQueries, runCheckingViews, type Harness } from './stream-harness.js';
import { expectAbortLeavesViews, expectViewsAcrossRestarts, openAtParallelism as open, runtimeOf, temporaryDirectories, viewContents } from './rocks-harness.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { streamPlanDefaults } from '../../ddl/create-materialized-view.js';
import { STREAM_PLAN_VERSION } from '../../../planner/stream/index.js';

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-parallel-', async () => {
  await h?.close();
  h = undefined;
});

const VIEWS: readonly (readonly [string, string])[] = [
  ['by_g', 'select g, count(*) as n, sum(v) as s, min(v) as lo, max(v) as hi from t group by g'],
  ['by_g_h', 'select g, h, count(v) as n, avg(v) as a, count(distinct v) as d from t group by g, h'],
  // An aggregate over an aggregate: both run in parallel, each behind its own exchange.
  ['by_n', 'select n, count(*) as groups from (select g, count(*) as n from t group by g) as q group by n'],
  // Not in parallel (no group key): runs on the main thread as at parallelism 1.
  ['total', 'select count(*) as n, sum(v) as s from t'],
  // Group keys that are expressions, computed by a projection below the aggregate (plan version
  // 10): both keys computed, the exchange hashes them above the projection; DISTINCT and FILTER.
  ['by_expr', "select g % 7 as g7, upper(h) as hu, count(*) as n, count(distinct v) as d, count(*) filter (where v > 5) as big, count(distinct v) filter (where v < 20) as dl, max(v) as hi from t group by g % 7, upper(h)"],
  // One key a column, one computed: the exchange hashes the column, the workers compute the other.
  ['by_h_expr', 'select h, g / 4 as g4, sum(v) filter (where v % 2 = 0) as se, count(distinct g) as dg, count(distinct g) filter (where v is not null) as dgv from t group by h, g / 4'],
];

/** Nexmark query `name` as the benchmark runs it (bench/nexmark), without its CREATE. */
function nexmarkQuery(name: string): string {
  const text = readFileSync(join(import.meta.dirname, `../../../bench/nexmark/${name}.sql`), 'utf8').replace(/--.*$/gm, '');
  return text.replace(/^\s*CREATE MATERIALIZED VIEW \w+ AS/, '').replace(/;\s*$/, '');
}

/** Random DML over t (k primary key, g, h, v): inserts, updates moving rows between groups, deletes. */
function statements(seed: number, count: number): string[] {
  const random = seededRandom(seed);
  const out: string[] = [];
  const live = new Set<number>();
  let nextKey = 1;
  for (let i = 0; i < count; i++) {
    const choice = random();
    if (choice < 0.5 || live.size === 0) {
      const rows: string[] = [];
      const n = 1 + Math.floor(random() * 40);
      for (let r = 0; r < n; r++) {
        const k = nextKey++;
        live.add(k);
        const v = random() < 0.1 ? 'null' : String(Math.floor(random() * 50) - 10);
        rows.push(`(${k}, ${Math.floor(random() * 30)}, '${'abc'[Math.floor(random() * 3)]}', ${v})`);
      }
      out.push(`insert into t values ${rows.join(', ')}`);
    } else if (choice < 0.8) {
      out.push(`update t set g = (g + ${1 + Math.floor(random() * 5)}) % 30, v = v + 1 where k % ${2 + Math.floor(random() * 7)} = ${Math.floor(random() * 2)}`);
    } else {
      const keys = [...live];
      const k = keys[Math.floor(random() * keys.length)]!;
      live.delete(k);
      out.push(random() < 0.5 ? `delete from t where k = ${k}` : `delete from t where g = ${Math.floor(random() * 30)}`);
    }
  }
  return out;
}

describe('vnodes and the exchange encoding', () => {
  it('gives equal keys one vnode and spreads keys over all of them', () => {
    const types = [scalar('int8'), scalar('text')];
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) {
      const key = [BigInt(i), `k${i % 7}`];
      const vnode = vnodeOf(key, types);
      expect(vnode).toBeGreaterThanOrEqual(0);
      expect(vnode).toBeLessThan(VNODE_COUNT);
      expect(vnodeOf([BigInt(i), `k${i % 7}`], types)).toBe(vnode);
      seen.add(vnode);
    }
    expect(seen.size).toBe(VNODE_COUNT);
    // Numerics equal as state keys (1.0 = 1.00) share a vnode, as do bpchars differing in trailing
    // spaces and an int8 as a bigint or a number.
    expect(vnodeOf([Numeric.parse('1.0')], [scalar('numeric')])).toBe(vnodeOf([Numeric.parse('1.00')], [scalar('numeric')]));
    expect(vnodeOf(['ab  '], [scalar('bpchar')])).toBe(vnodeOf(['ab'], [scalar('bpchar')]));
    for (const n of [0, 1, -7, 2 ** 40]) expect(vnodeOf([BigInt(n)], [scalar('int8')])).toBe(vnodeOf([n], [scalar('int8')]));
    // Every type spreads: timestamps a second apart, short texts, dates.
    for (const [type, make] of [
      ['timestamp', (i: number) => 1_436_918_400_000_000 + i * 1_000_000],
      ['text', (i: number) => `user${i}`],
      ['date', (i: number) => i],
      ['numeric', (i: number) => Numeric.parse(String(i / 4))],
    ] as const) {
      const vnodes = new Set(Array.from({ length: 4000 }, (_, i) => vnodeOf([make(i)], [scalar(type)])));
      expect(vnodes.size, type).toBe(VNODE_COUNT);
    }
    for (const parallelism of [1, 2, 4]) {
      const owners = new Set(Array.from({ length: VNODE_COUNT }, (_, vnode) => ownerOf(vnode, parallelism)));
      expect([...owners].sort()).toEqual(Array.from({ length: parallelism }, (_, i) => i));
    }
  });

  it('carries every change exactly through the bytes', () => {
    const rows: Row[] = [
      [1, 'a', null, 2n ** 62n, Numeric.parse('-12.340'), true, 1.5],
      [0, '', 'ü€', -1n, Numeric.parse('0'), false, -0.25],
    ];
    const changes = { rows, signs: [1, -1] };
    const decoded = decodeChanges(encodeChanges(changes, new ByteWriter(4)));
    expect(decoded.signs).toEqual([1, -1]);
    expect(decoded.rows.map((row) => row.map(String))).toEqual(rows.map((row) => row.map(String)));
  });
});

describe('parallel hash aggregates', () => {
  it('equal their queries after every statement at parallelism 1, 2 and 4, whatever the parallelism', async () => {
    const script = statements(7, 40);
    const results: string[][][] = [];
    for (const parallelism of [1, 2, 4]) {
      h = await open(freshDirectory(), parallelism);
      await h.run('create table t (k int primary key, g int, h text, v int)');
      await h.run(script.slice(0, 5).join(';'));
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      // by_g, by_g_h, both aggregates of by_n, by_expr and by_h_expr run in workers.
      expect(runtimeOf(h)?.workers ?? 0).toBe(parallelism === 1 ? 0 : 6 * parallelism);
      await expectViewsEqualQueries(h, VIEWS, 'the backfill');
      await runCheckingViews(h, VIEWS, script.slice(5));
      results.push(await viewContents(h, VIEWS));
      await h.close();
      h = undefined;
    }
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  }, 120_000);

  it('keeps the views across a restart, and across a restart at another parallelism', async () => {
    const dir = freshDirectory();
    const script = statements(11, 30);
    h = await open(dir, 2);
    await h.run('create table t (k int primary key, g int, h text, v int)');
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    for (const statement of script.slice(0, 10)) await h.run(statement);
    await expectViewsEqualQueries(h, VIEWS, 'before the restart');
    const reopen = async (parallelism: number) => {
      await h!.close();
      return (h = await open(dir, parallelism));
    };
    await expectViewsAcrossRestarts(reopen, VIEWS, script, [
      [2, 10, 15],
      [4, 15, 20],
      [1, 20, 25],
      [3, 25, 30],
    ]);
  }, 120_000);

  it('keeps a view of plan version 9 grouped by expressions on the main thread across restarts at other parallelisms', async () => {
    const dir = freshDirectory();
    const script = statements(13, 30);
    const old = VIEWS.filter(([name]) => name === 'by_expr' || name === 'by_h_expr');
    h = await open(dir, 2);
    await h.run('create table t (k int primary key, g int, h text, v int)');
    streamPlanDefaults.version = 9;
    try {
      for (const [name, query] of old) await h.run(`create materialized view ${name} as ${query}`);
    } finally {
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
    }
    const serial = async () => {
      for (const [name] of old) expect((await h!.run(`explain ${name}`)).rows.map((row) => String(row[0])).join('\n')).not.toContain('StreamExchange');
      expect(runtimeOf(h!)?.workers ?? 0).toBe(0);
    };
    await serial();
    for (const statement of script.slice(0, 10)) await h.run(statement);
    await expectViewsEqualQueries(h, old, 'before the restart');
    const reopen = async (parallelism: number) => {
      await h!.close();
      return (h = await open(dir, parallelism));
    };
    await expectViewsAcrossRestarts(reopen, old, script, [
      [4, 10, 15],
      [1, 15, 20],
    ]);
    await reopen(2);
    await serial();
    // The same query made now gets the projection and the exchange.
    await h.run(`create materialized view by_expr_new as ${old[0]![1]}`);
    expect((await h.run('explain by_expr_new')).rows.map((row) => String(row[0])).join('\n')).toContain('StreamExchange dist by (group1, group2) (2 workers)');
    await runCheckingViews(h, [...old, ['by_expr_new', old[0]![1]]], script.slice(20, 30));
  }, 120_000);

  it('EXPLAIN and EXPLAIN ANALYZE name the exchange and the workers of each parallel aggregate', async () => {
    for (const parallelism of [1, 2]) {
      h = await open(freshDirectory(), parallelism);
      await h.run('create table t (k int primary key, g int, h text, v int)');
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      await h.run("insert into t values (1, 1, 'a', 1), (2, 2, 'b', 2)");
      const plan = (name: string) => h!.run(`explain analyze ${name}`).then((result) => result.rows.map((row) => String(row[0])).join('\n'));
      const explain = (sql: string) => h!.run(`explain ${sql}`).then((result) => result.rows.map((row) => String(row[0])));
      if (parallelism === 1) {
        expect(await plan('by_g')).not.toContain('StreamExchange');
        expect((await explain(`create materialized view x as ${VIEWS[2]![1]}`)).join('\n')).not.toContain('StreamExchange');
      } else {
        // Plain EXPLAIN: an exchange line between each parallel aggregate and its input.
        const lines = await explain(`create materialized view x as ${VIEWS[2]![1]}`);
        const exchanges = lines.map((line, index) => [line, index] as const).filter(([line]) => line.includes('StreamExchange'));
        expect(exchanges.map(([line]) => line.trim())).toEqual(['StreamExchange dist by (n) (2 workers)', 'StreamExchange dist by (g) (2 workers)']);
        for (const [line, index] of exchanges) {
          expect(lines[index - 1]).toContain('StreamHashAggregate');
          expect(line.indexOf('S')).toBe(lines[index - 1]!.indexOf('S') + 2);
        }
        expect((await explain('by_g')).join('\n')).toContain('StreamExchange dist by (g) (2 workers)');
        expect((await explain(`create materialized view x as ${VIEWS[3]![1]}`)).join('\n')).not.toContain('StreamExchange');
        expect(await plan('by_g')).toContain('StreamExchange dist by (g) to 2 workers');
        expect(await plan('by_g_h')).toContain('StreamExchange dist by (g, h) to 2 workers');
        expect((await plan('by_n')).match(/StreamExchange dist by \((g|n)\) to 2 workers/g)?.length).toBe(2);
        expect(await plan('total')).not.toContain('StreamExchange');
        // A computed group key: the projection computing it sits below the exchange when every
        // key is computed (the exchange hashes its columns), above it when a key is a column.
        const computed = await explain('by_expr');
        const at = computed.findIndex((line) => line.includes('StreamExchange'));
        expect(computed[at]!.trim()).toBe('StreamExchange dist by (group1, group2) (2 workers)');
        expect(computed[at - 1]).toContain('StreamHashAggregate');
        expect(computed[at + 1]).toMatch(/StreamProject .*\(g % 7\) AS group1, upper\(h\) AS group2/);
        const mixed = await explain('by_h_expr');
        const cut = mixed.findIndex((line) => line.includes('StreamExchange'));
        expect(mixed[cut]!.trim()).toBe('StreamExchange dist by (h) (2 workers)');
        expect(mixed[cut - 1]).toContain('(g / 4) AS group2');
        expect(mixed[cut + 1]).toContain('StreamTableScan');
        expect(await plan('by_expr')).toContain('StreamExchange dist by (group1, group2) to 2 workers');
        // EXPLAIN ANALYZE: the fragment's root carries the running exchange; the projection
        // computing g / 4 runs in the workers, after the exchange by h.
        const analyzed = await plan('by_h_expr');
        expect(analyzed).toContain('StreamExchange dist by (h) to 2 workers');
        expect(analyzed).toMatch(/StreamProject g, h, v, \(g \/ 4\) AS group2 \(linear\)\s+\(in the workers\)\n\s+StreamExchange dist by \(h\) \(2 workers\)/);
      }
      await h.close();
      h = undefined;
    }
  }, 60_000);

  it('DROP stops the workers of a view; the view made again starts new ones', async () => {
    h = await open(freshDirectory(), 2);
    await h.run('create table t (k int primary key, g int, h text, v int)');
    const [name, query] = VIEWS[0]!;
    await h.run(`create materialized view ${name} as ${query}`);
    await h.run("insert into t values (1, 1, 'a', 1), (2, 2, 'b', 2)");
    expect(runtimeOf(h)!.workers).toBe(2);
    await h.run(`drop materialized view ${name}`);
    expect(runtimeOf(h)!.workers).toBe(0);
    await h.run("insert into t values (3, 1, 'a', 5)");
    await h.run(`create materialized view ${name} as ${query}`);
    expect(runtimeOf(h)!.workers).toBe(2);
    await h.run("update t set v = v * 10 where g = 1");
    await expectViewsEqualQueries(h, [[name, query]], 'the view made again');
  }, 60_000);

  it('an aborted statement leaves the workers state as it was', async () => {
    h = await open(freshDirectory(), 2);
    await h.run('create table t (k int primary key, g int, h text, v int)');
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    await h.run("insert into t values (1, 1, 'a', 1), (2, 2, 'b', 2)");
    // The second row repeats a key: the statement fails after the first row reached the views' changes.
    await expectAbortLeavesViews(h, VIEWS, "insert into t values (3, 1, 'a', 5), (1, 9, 'c', 9)", "insert into t values (3, 1, 'a', 7)");
  }, 60_000);

  it('folds Nexmark sources pushed in chunks (held in the workers, sealed at each barrier), q4, q5, q7 and q16 too', async () => {
    const EVENTS = 30_000;
    const source = (name: string, type: string, columns: string) =>
      `create source ${name} (${columns}) with (connector = 'nexmark', nexmark.table.type = '${type}', nexmark.event.num = '${EVENTS}', nexmark.split.num = '2', nexmark.max.chunk.size = '512', nexmark.min.event.gap.in.ns = '0')`;
    const views: [string, string][] = [
      ['q', 'select auction, count(*) as n, max(price) as top, sum(price) as total from bid group by auction'],
      // Nexmark q4: the winning bid per auction (a join, then an aggregate), averaged per category.
      [
        'q4',
        'select q.category, avg(q.final) as avg from (select max(b.price) as final, a.category from auction as a join bid as b on a.id = b.auction where b.date_time between a.date_time and a.expires group by a.id, a.category) as q group by q.category',
      ],
      // Nexmark q5: the count per (window, auction) is a shared subtree, one parallel aggregate feeding two parents.
      [
        'q5',
        "select auction_bids.auction, auction_bids.num from (select auction, count(*) as num, window_start as starttime from hop(bid, date_time, interval '2' second, interval '10' second) group by window_start, auction) as auction_bids join (select max(count_bids.num) as maxn, count_bids.starttime_c from (select count(*) as num, window_start as starttime_c from hop(bid, date_time, interval '2' second, interval '10' second) group by auction, window_start) as count_bids group by count_bids.starttime_c) as max_bids on auction_bids.starttime = max_bids.starttime_c and auction_bids.num >= max_bids.maxn",
      ],
      // Nexmark q7: the bids joined, by price, with the highest price of their TUMBLE window.
      [
        'q7',
        "select b.auction, b.price, b.bidder, b.date_time from bid as b join (select max(price) as maxprice, window_end as date_time from tumble(bid, date_time, interval '10' second) group by window_end) as b1 on b.price = b1.maxprice where b.date_time between b1.date_time - interval '10' second and b1.date_time",
      ],
      // Nexmark q16 as the benchmark runs it: grouped by channel and a day computed from date_time,
      // DISTINCT counts with FILTERs.
      ['q16', nexmarkQuery('q16')],
    ];
    const results: string[][][] = [];
    for (const parallelism of [1, 2]) {
      h = await open(freshDirectory(), parallelism);
      await h.run(source('bid', 'Bid', 'auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar'));
      await h.run(source('auction', 'Auction', 'id bigint, item_name varchar, description varchar, initial_bid bigint, reserve bigint, date_time timestamp, expires timestamp, seller bigint, category bigint, extra varchar'));
      for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
      // Fragments in workers: q's aggregate; q4's join with the max per auction, and the average per
      // category; q5's HOP with the shared count; q7's join. Operators keyed by a window alone (q5's
      // max per window and join, q7's max per window) stay on the main thread; q16's aggregate.
      expect(runtimeOf(h)?.workers ?? 0).toBe(parallelism === 1 ? 0 : 6 * parallelism);
      if (parallelism === 2) {
        const explain = async (query: string) => (await h!.run(`explain create materialized view x as ${query}`)).rows.map((row) => String(row[0])).join('\n');
        // q15, grouped by the day alone, has one key per epoch: it stays on the main thread, as
        // an aggregate keyed by a window does; q17's exchange hashes the auction.
        expect(await explain(nexmarkQuery('q15'))).not.toContain('StreamExchange');
        expect(await explain(nexmarkQuery('q17'))).toContain('StreamExchange dist by (auction) (2 workers)');
        expect(await explain(nexmarkQuery('q16'))).toContain('StreamExchange dist by (channel) (2 workers)');
      }
      const deadline = Date.now() + 60_000;
      for (;;) {
        const rows = (await h.run('select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions')).rows;
        if (Number(rows[0]![0]) >= 2 * EVENTS || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await expectViewsEqualQueries(h, views, `the sources at parallelism ${parallelism}`);
      results.push(await viewContents(h, views));
      await h.close();
      h = undefined;
    }
    expect(results[0]![0]!.length).toBeGreaterThan(100);
    expect(results[0]![1]!.length).toBeGreaterThan(3);
    expect(results[0]![2]!.length).toBeGreaterThan(3);
    expect(results[0]![3]!.length).toBeGreaterThan(0);
    expect(results[0]![4]!.length).toBeGreaterThan(4);
    expect(results[1]).toEqual(results[0]);
  }, 120_000);
});
