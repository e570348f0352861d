// Keyed fragments whose workers generate their sources (executor/stream/PARALLEL.md, "Sources in
// keyed fragments"): Nexmark q4's join of auction and bid on the auction id and its max per
// auction run in N workers that each generate their share of both sources' split ranges and send
// each row to the worker owning its auction id. Each view equals its query recomputed by the batch
// executor at every snapshot a check lands on and after the sources stop, does not depend on N,
// and a restart at another N in the middle of the stream keeps every event once. On RocksDB (the
// workers read the shared database); the worker scripts are the build's (npm run build first).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { openHarness, type Harness } from './stream-harness.js';

const directories: string[] = [];
let h: Harness | undefined;
afterEach(async () => {
  delete process.env['OXBOW_TEST_WORKER_EXIT_UNITS'];
  await h?.close();
  h = undefined;
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-parallel-keyed-source-'));
  directories.push(directory);
  return directory;
}

/** An engine at `parallelism` with the keyed fragments generating their sources (`keyedSourceWorkers`, off by default). */
function open(dir: string, parallelism: number): Promise<Harness> {
  return openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }), { tuning: { parallelism, keyedSourceWorkers: true }, barrierIntervalMs: 40 });
}

const COLUMNS = {
  bid: 'auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar',
  auction: 'id bigint, item_name varchar, description varchar, initial_bid bigint, reserve bigint, date_time timestamp, expires timestamp, seller bigint, category bigint, extra varchar',
};

function source(table: 'bid' | 'auction', events: number, splits: number, gapNs = 0, name: string = table): string {
  const type = table === 'bid' ? 'Bid' : 'Auction';
  return `create source ${name} (${COLUMNS[table]}) with (connector = 'nexmark', nexmark.table.type = '${type}', nexmark.event.num = '${events}', nexmark.split.num = '${splits}', nexmark.max.chunk.size = '256', nexmark.min.event.gap.in.ns = '${gapNs}')`;
}

const INNER = 'select a.id, a.category, max(b.price) as final from auction as a join bid as b on a.id = b.auction where b.date_time between a.date_time and a.expires group by a.id, a.category';
const VIEWS: [string, string][] = [
  // q4's inner fragment alone, and q4 (its average per category a fragment fed by the main thread).
  ['q4_inner', INNER],
  ['q4', `select q.category, avg(q.final) as avg from (${INNER}) as q group by q.category`],
  // q5: the count per auction and window in the workers, its bids generated there; its join and max per window on the main thread.
  [
    'q5',
    "select ab.auction, ab.num from (select auction, count(*) as num, window_start as starttime from hop(bid5, date_time, interval '2' second, interval '10' second) group by window_start, auction) as ab join (select max(cb.num) as maxn, cb.starttime_c from (select count(*) as num, window_start as starttime_c from hop(bid5, date_time, interval '2' second, interval '10' second) group by auction, window_start) as cb group by cb.starttime_c) as mb on ab.starttime = mb.starttime_c and ab.num >= mb.maxn",
  ],
  // q7: its max per window reads its bids on the main thread, so their rows reach the join's workers from there.
  [
    'q7',
    "select b.auction, b.price, b.bidder, b.date_time from bid7 as b join (select max(price) as maxprice, window_end as date_time from tumble(bid7, date_time, interval '10' second) group by window_end) as b1 on b.price = b1.maxprice where b.date_time between b1.date_time - interval '10' second and b1.date_time",
  ],
];

/** One statement (one snapshot): the rows of the view missing from its query's, and the query's missing from the view's. */
async function difference(harness: Harness, name: string, query: string): Promise<number> {
  const rows = await harness.run(`select (select count(*) from ((select * from ${name}) except all (${query})) as a) + (select count(*) from ((${query}) except all (select * from ${name})) as b)`);
  return Number(rows.rows[0]![0]);
}

async function committedOf(harness: Harness, table: string): Promise<number> {
  return Number((await harness.run(`select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = '${table}'`)).rows[0]![0]);
}

/** Checks the views against their queries until both sources committed `target` events each (capped at their last event by the caller). */
async function checkUntil(harness: Harness, target: number, step: string, views: readonly (readonly [string, string])[] = VIEWS, extra: readonly string[] = []): Promise<number> {
  const deadline = Date.now() + 120_000;
  let checks = 0;
  for (;;) {
    const bid = await committedOf(harness, 'bid');
    const auction = await committedOf(harness, 'auction');
    const others = await Promise.all(extra.map((name) => committedOf(harness, name)));
    for (const [name, query] of views) {
      expect(await difference(harness, name, query), `${name} at ${bid} bid and ${auction} auction events, ${step}`).toBe(0);
      checks++;
    }
    if (bid >= target && auction >= target && others.every((events) => events >= target)) return checks;
    if (Date.now() > deadline) throw new Error(`${step}: waiting for ${target} events of each source, bid committed ${bid}, auction ${auction}`);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

describe('keyed fragments generating their sources in the workers', () => {
  it('equal their queries at parallelism 1, 2 and 4, whatever the parallelism', async () => {
    const EVENTS = 30_000;
    const results: string[][][] = [];
    for (const parallelism of [1, 2, 4]) {
      h = await open(freshDirectory(), parallelism);
      // 3 splits: fewer than 4 workers, more than 2.
      await h.run(source('auction', EVENTS, 3));
      await h.run(source('bid', EVENTS, 3));
      await h.run(source('bid', EVENTS, 2, 0, 'bid5'));
      await h.run(source('bid', EVENTS, 1, 0, 'bid7'));
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      const explain = async (view: string) => (await h!.run(`explain ${view}`)).rows.map((row) => String(row[0])).join('\n');
      if (parallelism === 1) expect(await explain('q4_inner')).not.toContain('StreamSourceFragment');
      else {
        expect(await explain('q4_inner')).toContain(`StreamExchange dist by (auction) (${parallelism} workers, worker to worker)`);
        expect(await explain('q4_inner')).toContain(`StreamSourceFragment bid split across ${parallelism} workers`);
        expect(await explain('q4_inner')).toContain(`StreamSourceFragment auction split across ${parallelism} workers`);
        expect(await explain('q5')).toContain(`StreamSourceFragment bid5 split across ${parallelism} workers`);
        expect(await explain('q7')).toContain(`StreamExchange dist by (price) (${parallelism} workers)`);
        expect(await explain('q7')).not.toContain('StreamSourceFragment');
      }
      expect(await checkUntil(h, EVENTS, `parallelism ${parallelism}`, VIEWS, ['bid5', 'bid7'])).toBeGreaterThan(VIEWS.length);
      if (parallelism > 1) {
        // The sources' units were generated in the workers, not on the main thread.
        const analyzed = (await h.run('explain analyze q4_inner')).rows.map((row) => String(row[0])).join('\n');
        const units = Number(/(\d+) source units generated in the workers/.exec(analyzed)?.[1] ?? 0);
        expect(units, analyzed).toBeGreaterThan(EVENTS);
        expect(units).toBeLessThanOrEqual(2 * EVENTS);
      }
      const out: string[][] = [];
      for (const [name] of VIEWS) out.push(await h.lines(`select * from ${name}`));
      results.push(out);
      await h.close();
      h = undefined;
    }
    expect(results[0]![0]!.length).toBeGreaterThan(100);
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  }, 300_000);

  it('keeps every event once across restarts at another parallelism in the middle of the stream', async () => {
    const EVENTS = 40_000;
    const dir = freshDirectory();
    let committed = 0;
    // Paced (2 splits x 4,000 units/s each source): each engine stops after 5,000 more events of
    // each source, mid-stream unless checks under load let the stream run to its end.
    for (const parallelism of [2, 4, 1, 3]) {
      h = await open(dir, parallelism);
      if (parallelism === 2) {
        await h.run(source('auction', EVENTS, 2, 250_000));
        await h.run(source('bid', EVENTS, 2, 250_000));
        for (const [name, query] of VIEWS.slice(0, 2)) await h.run(`create materialized view ${name} as ${query}`);
      }
      const target = Math.min(committed + 5_000, EVENTS);
      await checkUntil(h, target, `parallelism ${parallelism}`, VIEWS.slice(0, 2));
      committed = Math.min(await committedOf(h, 'bid'), await committedOf(h, 'auction'));
      await h.close();
      h = undefined;
    }
    h = await open(dir, 2);
    await checkUntil(h, EVENTS, 'finishing at parallelism 2', VIEWS.slice(0, 2));
    // Every auction of the 40,000 events once: the view's groups are the auctions with a bid in
    // their window, each once (a group twice would fail the comparison above).
    expect(Number((await h.run('select count(*) from q4_inner')).rows[0]![0])).toBeGreaterThan(0);
    expect(await committedOf(h, 'bid')).toBe(EVENTS);
    expect(await committedOf(h, 'auction')).toBe(EVENTS);
  }, 480_000);

  it('a worker that dies in the middle of an epoch fails it without a hang; a restart recovers every event once', async () => {
    const EVENTS = 40_000;
    const dir = freshDirectory();
    // Worker 1's thread ends after it generated 3,000 units (OXBOW_TEST_WORKER_EXIT_UNITS, read by fragment-runner.ts).
    process.env['OXBOW_TEST_WORKER_EXIT_UNITS'] = '3000';
    h = await open(dir, 2);
    await h.run(source('auction', EVENTS, 2, 250_000));
    await h.run(source('bid', EVENTS, 2, 250_000));
    await h.run(`create materialized view q4_inner as ${INNER}`);
    // The sources stop committing (every epoch with the dead worker's share fails) well before their end.
    const deadline = Date.now() + 60_000;
    let last = -1;
    let since = Date.now();
    for (;;) {
      const now = (await committedOf(h, 'bid')) + (await committedOf(h, 'auction'));
      if (now !== last) {
        last = now;
        since = Date.now();
      } else if (Date.now() - since > 4000) break;
      if (Date.now() > deadline) throw new Error(`waiting for the sources to stop committing after worker 1 ended: they committed ${now} events`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(last).toBeLessThan(2 * EVENTS);
    expect(await difference(h, 'q4_inner', INNER)).toBe(0);
    // The close does not wait for the dead worker.
    const closing = Date.now();
    await h.close();
    h = undefined;
    expect(Date.now() - closing).toBeLessThan(15_000);
    delete process.env['OXBOW_TEST_WORKER_EXIT_UNITS'];
    h = await open(dir, 2);
    await checkUntil(h, EVENTS, 'after the restart', VIEWS.slice(0, 1));
  }, 240_000);
});
