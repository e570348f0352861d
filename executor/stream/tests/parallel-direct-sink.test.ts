// Blackhole sinks AS a source fragment's query at --parallelism 2 and 4 (executor/stream/PARALLEL.md,
// "Source fragments"; executor/connectors/SINKS.md, "Direct sinks"): Nexmark q0, q1, q2 and q22 as
// CREATE SINK ... AS <query> WITH (connector = 'blackhole') run in N workers (EXPLAIN ANALYZE names
// the fragment, the runtime holds N workers per sink, and every unit of the source went to them),
// and each sink's delivered rows (oxbow_catalog.sink_status) equal its query's rows over the
// committed events, counted by the batch executor, at parallelism 1, 2 and 4 alike. A sink whose
// target needs its change log (Kafka, PostgreSQL) stays on the main thread: not tested here. Across
// a restart (at the same or another N) a direct sink's counts live in memory, so the new process
// counts exactly the rows it commits: the query's rows at the end less those the old process
// committed, read from the store between the two processes through a view of the same query.
// On RocksDB (the workers read the shared database); the worker script is the build's (npm run
// build first).
import { describe, expect, it } from 'vitest';
import type { EngineCore } from '../../engine/engine-core.js';
import type { Harness } from './stream-harness.js';
import { bidSource, openOnRocks, rocksStore, runtimeOf, temporaryDirectories } from './rocks-harness.js';

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-parallel-direct-sink-', async () => {
  await h?.close();
  h = undefined;
});

function open(dir: string, parallelism: number): Promise<Harness> {
  // cores 8: the views beside the sinks run as source fragments of N workers on any machine.
  return openOnRocks(dir, { tuning: { parallelism, cores: 8 }, barrierIntervalMs: 40 });
}

/** Nexmark q0, q1, q2 and q22 over `bid` (the bench's forms). */
const QUERIES: readonly (readonly [string, string])[] = [
  ['q0', 'select auction, bidder, price, date_time from bid'],
  ['q1', 'select auction, bidder, 0.908 * price as price, date_time from bid'],
  ['q2', 'select auction, price from bid where auction % 123 = 0 or auction = 1007'],
  ['q22', "select auction, bidder, price, channel, split_part(url, '/', 4) as dir1, split_part(url, '/', 5) as dir2, split_part(url, '/', 6) as dir3 from bid"],
];

/** The queries with one row per bid. */
const ONE_PER_BID = QUERIES.filter(([name]) => name !== 'q2');

async function committedEvents(harness: Harness): Promise<number> {
  return Number((await harness.run("select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = 'bid'")).rows[0]![0]);
}

async function delivered(harness: Harness, sink: string): Promise<number> {
  return Number((await harness.lines(`select rows_delivered from oxbow_catalog.sink_status where sink_name = '${sink}'`))[0] ?? 0);
}

async function queryRows(harness: Harness, query: string): Promise<number> {
  return Number((await harness.run(`select count(*) from (${query}) as q`)).rows[0]![0]);
}

async function waitFor(what: string, done: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Each sink's delivered rows reach `expected` and stay there (nothing counted twice). */
async function expectDelivered(harness: Harness, expected: ReadonlyMap<string, number>, label: string): Promise<void> {
  for (const [sink, rows] of expected) await waitFor(`${sink} to deliver ${rows} rows ${label}`, async () => (await delivered(harness, sink)) >= rows);
  await new Promise((resolve) => setTimeout(resolve, 300));
  for (const [sink, rows] of expected) expect(await delivered(harness, sink), `${sink} ${label}`).toBe(rows);
}

function sinkId(harness: Harness, name: string): number {
  const core = (harness.engine as unknown as { core: EngineCore }).core;
  return core.catalog.snapshot.relations().find((relation) => relation.name === name)!.id;
}

describe('direct sinks as source fragments', () => {
  it('deliver their queries rows at parallelism 1, 2 and 4, generated in the workers', async () => {
    const EVENTS = 20_000;
    for (const parallelism of [1, 2, 4]) {
      h = await open(freshDirectory(), parallelism);
      // 3 splits: fewer than 4 workers, more than 2.
      await h.run(bidSource('bid', EVENTS, 3));
      for (const [name, query] of QUERIES) await h.run(`create sink s_${name} as ${query} with (connector = 'blackhole')`);
      // A view of q1's query beside them: a source fragment too, whose EXPLAIN ANALYZE the sink's matches.
      await h.run(`create materialized view v_q1 as ${QUERIES[1]![1]}`);
      expect(runtimeOf(h)?.sourceFragments.workers ?? 0, `workers at parallelism ${parallelism}`).toBe(parallelism === 1 ? 0 : (QUERIES.length + 1) * parallelism);
      for (const name of ['s_q1', 'v_q1']) {
        const explain = (await h.run(`explain analyze ${name}`)).rows.map((row) => String(row[0])).join('\n');
        if (parallelism === 1) expect(explain).not.toContain('StreamSourceFragment');
        else expect(explain).toContain(`StreamSourceFragment bid split across ${parallelism} workers`);
        expect(explain).toContain(`StreamMaterialize ${name} stored by source row id`);
      }
      await waitFor(`the source to commit ${EVENTS} events`, async () => (await committedEvents(h!)) >= EVENTS);
      const expected = new Map<string, number>();
      for (const [name, query] of QUERIES) expected.set(`s_${name}`, await queryRows(h, query));
      // All bids of 20,000 events (46 of every 50 events); q2 a few of them.
      expect(expected.get('s_q0')).toBe(18_400);
      expect(expected.get('s_q2')).toBeGreaterThan(0);
      expect(expected.get('s_q2')).toBeLessThan(18_400);
      await expectDelivered(h, expected, `at parallelism ${parallelism}`);
      if (parallelism > 1) {
        // The rows were generated in the workers: every unit of the source went to one of them.
        const fragment = runtimeOf(h)!.sourceFragments.fragment(sinkId(h, 's_q0'))!;
        expect(fragment.workers.reduce((sum, worker) => sum + worker.units, 0)).toBe(EVENTS);
      }
      await h.close();
      h = undefined;
    }
  }, 300_000);

  for (const [first, second] of [
    [1, 1],
    [2, 4],
    [4, 1],
  ] as const) {
    it(`count exactly what a new process commits after a restart, parallelism ${first} then ${second}`, async () => {
      const EVENTS = 60_000;
      const dir = freshDirectory();
      h = await open(dir, first);
      // Paced (2 splits x 1,000 units/s from the source's creation, so 30 s in all): the first
      // server stops mid-stream, once its workers are up and it has delivered.
      await h.run(bidSource('bid', EVENTS, 2, 1_000_000));
      // A view of q0's query: its stored rows are the bids the first process committed.
      await h.run(`create materialized view v_q0 as ${QUERIES[0]![1]}`);
      for (const [name, query] of ONE_PER_BID) await h.run(`create sink s_${name} as ${query} with (connector = 'blackhole')`);
      const view = (h.engine as unknown as { core: EngineCore }).core.catalog.snapshot.relations().find((relation) => relation.name === 'v_q0')!;
      await waitFor('6,000 committed events and a first delivery', async () => (await committedEvents(h!)) >= 6_000 && (await delivered(h!, 's_q0')) > 0);
      const before = new Map<string, number>();
      for (const [name] of ONE_PER_BID) before.set(`s_${name}`, await delivered(h, `s_${name}`));
      await h.close();
      h = undefined;
      // The bids the first process committed, from its store.
      const store = rocksStore(dir);
      let committedBids = 0;
      for (const _row of store.table({ tableId: view.id, columnTypes: view.columns.map((column) => column.type), primaryKey: view.primaryKey }).scan({})) committedBids++;
      await store.close();
      expect(committedBids).toBeGreaterThan(0);
      expect(committedBids).toBeLessThan((EVENTS * 46) / 50);
      // What the first process delivered: committed rows only, none twice.
      for (const [sink, rows] of before) expect(rows, sink).toBeLessThanOrEqual(committedBids);
      h = await open(dir, second);
      await waitFor(`the source to commit ${EVENTS} events`, async () => (await committedEvents(h!)) >= EVENTS);
      expect(await queryRows(h, 'select * from v_q0')).toBe((EVENTS * 46) / 50);
      // q0, q1 and q22 have one row per bid: each bid the new process commits once.
      const expected = new Map<string, number>();
      for (const [name, query] of ONE_PER_BID) expected.set(`s_${name}`, (await queryRows(h, query)) - committedBids);
      await expectDelivered(h, expected, `after the restart at parallelism ${second}`);
    }, 240_000);
  }
});
