// Source fragments at --parallelism 2 and 4 (executor/stream/PARALLEL.md, "Source fragments"):
// views whose plan is a Nexmark source read through filters and projections into blind inserts run
// in N workers that generate their share of each split range. While the source runs, each view
// equals its query recomputed by the batch executor at every snapshot a check lands on (one
// statement, one snapshot), the views do not depend on N, and a restart at another N keeps them
// with no row lost or doubled. On RocksDB (the workers read the shared database); the worker
// script is the build's (npm run build first).
import { describe, expect, it } from 'vitest';
import type { Harness } from './stream-harness.js';
import type { EngineCore } from '../../engine/engine-core.js';
import { bidSource, committedEvents, difference, openOnRocks, runtimeOf, temporaryDirectories, untilCommitted } from './rocks-harness.js';

/**
 * The tests' own deadline: on a loaded machine (load 40-60 on 2 cores) a case runs for minutes, a
 * round of checks for tens of seconds; a stream that stops fails sooner, at untilCommitted's STALL_MS.
 */
const LOADED_TIMEOUT_MS = 900_000;

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-parallel-source-', async () => {
  await h?.close();
  h = undefined;
});

/** `cores` 8 by default: a view runs as a source fragment of N workers on any machine (min(N, cores - 1)). */
function open(dir: string, parallelism: number, cores = 8): Promise<Harness> {
  return openOnRocks(dir, { tuning: { parallelism, cores }, barrierIntervalMs: 40 });
}

async function explainLines(harness: Harness, statement: string): Promise<string> {
  return (await harness.run(`explain ${statement}`)).rows.map((row) => String(row[0])).join('\n');
}

/** Nexmark q0, q1, q2, q10, q21, q22 over `bid` (the bench's forms), and a filter with a row error. */
function fragmentViews(bid: string, prefix: string): [string, string][] {
  return [
    [`${prefix}q0`, `select auction, bidder, price, date_time from ${bid}`],
    [`${prefix}q1`, `select auction, bidder, 0.908 * price as price, date_time from ${bid}`],
    [`${prefix}q2`, `select auction, price from ${bid} where auction % 123 = 0 or auction = 1007`],
    [`${prefix}q10`, `select auction, bidder, price, date_time, extra, to_char(date_time, 'YYYY-MM-DD') as dt, to_char(date_time, 'HH24:MI') as hm from ${bid}`],
    [`${prefix}q21`, `select auction, bidder, price, channel, case when lower(channel) = 'apple' then '0' when lower(channel) = 'google' then '1' when lower(channel) = 'facebook' then '2' when lower(channel) = 'baidu' then '3' else (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] end as channel_id from ${bid} where (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] is not null or lower(channel) in ('apple', 'google', 'facebook', 'baidu')`],
    [`${prefix}q22`, `select auction, bidder, price, channel, split_part(url, '/', 4) as dir1, split_part(url, '/', 5) as dir2, split_part(url, '/', 6) as dir3 from ${bid}`],
  ];
}

/**
 * Checks every view against its query as the sources go on, a round at least every `total / 8`
 * events they commit (and once they committed all `total`); returns the checks made.
 */
async function checkWhileRunning(harness: Harness, views: readonly (readonly [string, string])[], total: number): Promise<number> {
  let checks = 0;
  const round = async (committed: number) => {
    for (const [name, query] of views) {
      expect(await difference(harness, name, query), `${name} at ${committed} events`).toBe(0);
      checks++;
    }
  };
  await untilCommitted(harness, total, round, { step: Math.ceil(total / 8) });
  return checks;
}

describe('source fragments', () => {
  it('equal their queries at every checked epoch at parallelism 1, 2 and 4, whatever the parallelism', async () => {
    const EVENTS = 20_000;
    // bid: read only by source fragments (its rows are generated in the workers); mixed: also by
    // an aggregate on the main thread (its rows are generated there and reach the fragments as rows).
    const views = [...fragmentViews('bid', ''), ...fragmentViews('mixed', 'm_')];
    const serial: [string, string][] = [['m_count', 'select channel, count(*) as n, sum(price) as total from mixed group by channel']];
    const results: string[][][] = [];
    for (const parallelism of [1, 2, 4]) {
      h = await open(freshDirectory(), parallelism);
      // 3 splits: fewer than 4 workers, more than 2.
      await h.run(bidSource('bid', EVENTS, 3));
      await h.run(bidSource('mixed', EVENTS, 1));
      for (const [name, query] of [...views, ...serial]) await h.run(`create materialized view ${name} as ${query}`);
      expect(runtimeOf(h)?.sourceFragments.workers ?? 0).toBe(parallelism === 1 ? 0 : views.length * parallelism);
      const explain = (await h.run('explain create materialized view e as select auction, 0.908 * price as p from bid where price > 10')).rows.map((row) => String(row[0])).join('\n');
      if (parallelism === 1) expect(explain).not.toContain('StreamSourceFragment');
      else expect(explain).toContain(`StreamSourceFragment bid split across ${parallelism} workers`);
      const checks = await checkWhileRunning(h, [...views, ...serial], 2 * EVENTS);
      expect(checks).toBeGreaterThan(views.length);
      if (parallelism > 1) {
        // The fragments over bid generated the rows in their workers: every unit went to one of them.
        const fragment = runtimeOf(h)!.sourceFragments;
        const viewId = Number((await h.run("select oid from pg_class where relname = 'q0'")).rows[0]![0]);
        const units = fragment.fragment(viewId)!.workers.reduce((sum, worker) => sum + worker.units, 0);
        expect(units).toBeGreaterThan(EVENTS / 2);
        expect(units).toBeLessThanOrEqual(EVENTS);
      }
      const out: string[][] = [];
      for (const [name] of [...views, ...serial]) out.push(await h.lines(`select * from ${name}`));
      results.push(out);
      await h.close();
      h = undefined;
    }
    // All bids of 40,000 events (46 of every 50 events), once each.
    expect(results[0]![0]!.length).toBe(18_400);
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  }, LOADED_TIMEOUT_MS);

  it('keeps every row exactly once across restarts at another parallelism', async () => {
    const EVENTS = 60_000;
    const dir = freshDirectory();
    const views = fragmentViews('bid', '');
    let committed = 0;
    // Paced (2 splits x 4,000 units/s): each server stops after 6,000 more events, mid-stream
    // unless checks under load let the stream run to its end; the next goes on at another N.
    for (const parallelism of [2, 4, 1, 3]) {
      h = await open(dir, parallelism);
      if (parallelism === 2) {
        await h.run(bidSource('bid', EVENTS, 2, 250_000));
        for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
      }
      const target = Math.min(committed + 6_000, EVENTS);
      const harness = h;
      committed = await untilCommitted(
        harness,
        target,
        async (seen) => {
          for (const [name, query] of views) expect(await difference(harness, name, query), `${name} at ${seen} events, parallelism ${parallelism}`).toBe(0);
        },
        { step: 2_000 },
      );
      await h.close();
      h = undefined;
    }
    h = await open(dir, 2);
    await checkWhileRunning(h, views, EVENTS);
    // The bids of all 60,000 events, each once (row ids are event numbers: none twice).
    expect((await h.run('select count(*) from q0')).rows[0]).toEqual(['55200']);
  }, LOADED_TIMEOUT_MS);
  it('on 2 cores a view at parallelism 2 runs as at 1, a direct sink as a fragment; restarts across the choice keep every row once', async () => {
    const EVENTS = 60_000;
    const dir = freshDirectory();
    const views = fragmentViews('bid', '').slice(0, 3);
    const viewQuery = 'create materialized view e as select auction, 0.908 * price as p from bid where price > 10';
    // EXPLAIN of an engine at parallelism 1, the plan a view at 2 on 2 cores must have.
    h = await open(freshDirectory(), 1);
    await h.run(bidSource('bid', 10, 1));
    const serialPlan = await explainLines(h, viewQuery);
    await h.close();
    h = undefined;
    expect(serialPlan).not.toContain('StreamSourceFragment');
    let committed = 0;
    // cores 2, 8, 2: the view runs on the main thread, then as a fragment of 2 workers, then on
    // the main thread again, each server stopping after 8,000 more events (paced: mid-stream).
    for (const cores of [2, 8, 2]) {
      h = await open(dir, 2, cores);
      if (committed === 0) {
        await h.run(bidSource('bid', EVENTS, 2, 250_000));
        // A source only a blackhole sink reads: its rows are generated in the sink's workers.
        await h.run(bidSource('sbid', 20_000, 2));
        for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
        await h.run("create sink s_q0 as select auction, bidder, price, date_time from sbid with (connector = 'blackhole')");
      }
      const plan = await explainLines(h, viewQuery);
      const q1 = await explainLines(h, 'analyze q1');
      const sink = await explainLines(h, 'analyze s_q0');
      expect(sink, `the sink at cores ${cores}`).toContain('StreamSourceFragment sbid split across 2 workers');
      if (cores === 2) {
        expect(plan).toBe(serialPlan);
        expect(q1).not.toContain('StreamSourceFragment');
        // Only the sink's two workers.
        expect(runtimeOf(h)!.sourceFragments.workers).toBe(2);
        if (committed === 0) {
          // The sink's 20,000 events (18,400 bids), generated in its workers and counted once.
          const delivered = async () => Number((await h!.lines("select rows_delivered from oxbow_catalog.sink_status where sink_name = 's_q0'"))[0] ?? 0);
          const sinkDeadline = Date.now() + 60_000;
          while ((await delivered()) < 18_400 && Date.now() < sinkDeadline) await new Promise((resolve) => setTimeout(resolve, 25));
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(await delivered()).toBe(18_400);
          const sinkId = (h.engine as unknown as { core: EngineCore }).core.catalog.snapshot.relations().find((relation) => relation.name === 's_q0')!.id;
          expect(runtimeOf(h)!.sourceFragments.fragment(sinkId)!.workers.reduce((sum, worker) => sum + worker.units, 0)).toBe(20_000);
        }
      } else {
        expect(plan).toContain('StreamSourceFragment bid split across 2 workers');
        expect(q1).toContain('StreamSourceFragment bid split across 2 workers');
        expect(runtimeOf(h)!.sourceFragments.workers).toBe(2 * views.length + 2);
      }
      const target = Math.min(committed + 8_000, EVENTS);
      const harness = h;
      committed = await untilCommitted(
        harness,
        target,
        async (seen) => {
          for (const [name, query] of views) expect(await difference(harness, name, query), `${name} at ${seen} events, cores ${cores}`).toBe(0);
        },
        { source: 'bid', step: 2_000 },
      );
      await h.close();
      h = undefined;
    }
    h = await open(dir, 2, 2);
    await checkWhileRunning(h, views, EVENTS + 20_000);
    // The bids of all 60,000 events (46 of every 50), each once (row ids are event numbers).
    expect((await h.run('select count(*) from q0')).rows[0]).toEqual(['55200']);
  }, LOADED_TIMEOUT_MS);
  it('switch between ranges and rows as views over them come and go, over nexmark and datagen', async () => {
    h = await open(freshDirectory(), 2);
    // Paced: 2 splits x 5,000 events a second, about 15 s of stream.
    await h.run(bidSource('bid', 150_000, 2, 200_000));
    await h.run(
      "create source gen (id int, v int, name varchar) with (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '30000', fields.v.min = '0', fields.v.max = '99', fields.name.length = '4', datagen.rows.per.second = '10000', datagen.split.num = '3')",
    );
    const views: [string, string][] = [
      ['q1', 'select auction, bidder, 0.908 * price as price, date_time from bid'],
      ['g', "select id, v * 2 as w, upper(name) as n from gen where v % 3 <> 0"],
    ];
    for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
    const fragments = runtimeOf(h)!.sourceFragments;
    const units = async (name: string): Promise<number> => {
      const viewId = Number((await h!.run(`select oid from pg_class where relname = '${name}'`)).rows[0]![0]);
      return fragments.fragment(viewId)!.workers.reduce((sum, worker) => sum + worker.units, 0);
    };
    const check = async (all: readonly (readonly [string, string])[], step: string) => {
      for (const [name, query] of all) expect(await difference(h!, name, query), `${name} ${step}`).toBe(0);
    };
    const committedOf = (source: string) => committedEvents(h!, source);
    const waitFor = (source: string, events: number) => untilCommitted(h!, events, () => Promise.resolve(), { source });
    await waitFor('bid', 4000);
    await check(views, 'with ranges');
    const before = await units('q1');
    expect(before).toBeGreaterThan(0);
    // A view over q1: the source's rows are needed on the main thread, q1 takes them as rows.
    const over: [string, string] = ['over_q1', 'select auction, count(*) as n from q1 group by auction'];
    await h.run(`create materialized view ${over[0]} as ${over[1]}`);
    // And an index on g: its entries are kept by the main thread's materialize.
    await h.run('create index g_by_w on g (w)');
    const switched = await committedOf('bid');
    const unitsThen = await units('q1');
    await waitFor('bid', switched + 4000);
    await check([...views, over], 'with rows');
    expect(await units('q1')).toBe(unitsThen);
    // One statement, one snapshot: the datagen source may still be producing.
    const [byIndex, fromSource] = (await h.run('select (select count(*) from g where w = 10), (select count(*) from gen where v = 5)')).rows[0]!;
    expect(byIndex).toEqual(fromSource);
    // Dropped again: the workers take ranges again.
    await h.run(`drop materialized view ${over[0]}`);
    await h.run('drop index g_by_w');
    const again = await committedOf('bid');
    await waitFor('bid', again + 4000);
    expect(await units('q1')).toBeGreaterThan(unitsThen);
    await checkWhileRunning(h, views, 150_000 + 30_000);
    expect((await h.run('select count(*) from q1')).rows[0]).toEqual(['138000']);
    const [stored, expected] = (await h.run('select (select count(*) from g), (select count(*) from gen where v % 3 <> 0)')).rows[0]!;
    expect(stored).toEqual(expected);
  }, LOADED_TIMEOUT_MS / 2);
});
