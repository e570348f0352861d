// One memory budget across the worker threads (executor/stream/PARALLEL.md, "Memory"), over the
// wire against a real server at --parallelism 2 on its real RocksDB: each worker of a parallel
// fragment reports its V8 heap and caches with its epoch batches, oxbow_catalog.memory shows one
// worker_heap row per worker whose sums with the main thread's figures are the totals it shows,
// and oxbow_catalog.dataflow_workers the same workers. Under a small --memory-limit the memory
// manager, counting the workers' heaps, lowers their caches' budget: the workers evict, their
// caches stay under limits below their maxima, and the view still equals its query recomputed.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startOxbow } from '../support/server.js';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';
const MIB = 1024 * 1024;

type Row = Record<string, string | null>;

async function rows(sql: pg.Client, query: string): Promise<Row[]> {
  const result = await sql.query({ text: query, types: { getTypeParser: () => (value: string) => value } });
  return result.rows as Row[];
}

async function committed(sql: pg.Client): Promise<number> {
  const [row] = await rows(sql, "SELECT coalesce(sum(committed_offset), 0)::int8 AS n FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'");
  return Number(row!.n);
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The view against its query, both ways (EXCEPT ALL): the rows one has and the other has not. */
async function differences(sql: pg.Client, view: string, query: string): Promise<number> {
  const [row] = await rows(sql, `SELECT (SELECT count(*) FROM (SELECT * FROM ${view} EXCEPT ALL ${query}) AS a) + (SELECT count(*) FROM (${query} EXCEPT ALL SELECT * FROM ${view}) AS b) AS n`);
  return Number(row!.n);
}

async function connect(url: string): Promise<pg.Client> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  sql.on('error', () => undefined);
  return sql;
}

function bidSource(events: number, gapNs: number): string {
  return `CREATE SOURCE bid (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '${gapNs}')`;
}

const QUERY = 'SELECT auction, bidder, count(*) AS bids, max(price) AS top FROM bid GROUP BY auction, bidder';

describe('one memory budget across the workers', () => {
  it("shows each worker's heap and caches, and the totals are the main thread's and the workers' sums", async () => {
    const events = 60_000;
    const server = await startOxbow({ args: ['--parallelism', '2', '--memory-limit', '1GB', '--barrier-interval-ms', '100', '--metrics-port', '0'] });
    const sql = await connect(server.url);
    try {
      await sql.query(bidSource(events, 0));
      await sql.query(`CREATE MATERIALIZED VIEW per_bidder AS ${QUERY}`);
      await until('every bid committed', 120_000, async () => ((await committed(sql)) >= events ? true : undefined));
      const [view] = await rows(sql, "SELECT (SELECT id FROM oxbow_catalog.objects WHERE name = 'per_bidder') AS id");
      const viewId = view!.id;
      // Each worker has handed a batch over (the aggregate's groups of both workers).
      const workers = await until('both workers reported', 60_000, async () => {
        const found = await rows(sql, `SELECT * FROM oxbow_catalog.dataflow_workers WHERE view_id = ${viewId} ORDER BY worker`);
        return found.length === 2 && found.every((worker) => Number(worker.batches) > 0) ? found : undefined;
      });
      expect(workers.map((worker) => Number(worker.worker))).toEqual([0, 1]);
      for (const worker of workers) {
        expect(worker.kind).toBe('fragment');
        expect(Number(worker.heap_used_bytes)).toBeGreaterThan(0);
        expect(Number(worker.heap_total_bytes)).toBeGreaterThanOrEqual(Number(worker.heap_used_bytes));
        expect(Number(worker.group_cache_bytes)).toBeGreaterThan(0);
        // 1 GB: the heap part (896 MiB) is under the floor: each worker's old generation is bounded at 1 GiB.
        expect(Number(worker.old_generation_limit_bytes)).toBe(1024 * MIB);
      }
      // The workers run the view's aggregate: their operator is the view's, as oxbow_catalog.dataflow lists it.
      const [operator] = await rows(sql, `SELECT kind FROM oxbow_catalog.dataflow WHERE view_id = ${viewId} AND operator_id = ${workers[0]!.operator_id}`);
      expect(operator?.kind).toBeDefined();

      // One statement: one snapshot of every row.
      const memory = await rows(sql, 'SELECT component, bytes, limit_bytes, view_name, operator_id, worker, cache_bytes FROM oxbow_catalog.memory');
      const component = (name: string): Row => {
        const found = memory.filter((row) => row.component === name);
        expect(found, name).toHaveLength(1);
        return found[0]!;
      };
      const perWorker = memory.filter((row) => row.component === 'worker_heap' && row.view_name === 'public.per_bidder');
      expect(perWorker.map((row) => Number(row.worker)).sort()).toEqual([0, 1]);
      for (const row of perWorker) {
        expect(Number(row.bytes)).toBeGreaterThan(0);
        expect(Number(row.cache_bytes)).toBeGreaterThan(0);
        expect(row.operator_id).toBe(workers[0]!.operator_id);
      }
      const allWorkers = memory.filter((row) => row.component === 'worker_heap');
      const heaps = allWorkers.reduce((sum, row) => sum + Number(row.bytes), 0);
      const caches = allWorkers.reduce((sum, row) => sum + Number(row.cache_bytes), 0);
      expect(Number(component('worker_heaps').bytes)).toBe(heaps);
      expect(Number(component('worker_heaps').cache_bytes)).toBe(caches);
      expect(Number(component('js_heap_used_all_threads').bytes)).toBe(Number(component('js_heap_used').bytes) + heaps);
      expect(Number(component('caches_all_threads').bytes)).toBe(Number(component('row_cache').bytes) + Number(component('group_caches').bytes) + caches);
      // Every cache's budget together stays within the caches' part of the plan (1 GB: 448 MiB).
      expect(Number(component('cache_budget').bytes)).toBeLessThanOrEqual(448 * MIB);
      expect(Number(component('cache_budget').limit_bytes)).toBe(448 * MIB);

      // /metrics: the same workers' figures (no epoch batch since: the source is done).
      const { body } = await httpGet(metricsPortOf(server), '/metrics');
      const again = await rows(sql, `SELECT worker, operator_id, heap_used_bytes, row_cache_bytes, group_cache_bytes FROM oxbow_catalog.dataflow_workers WHERE view_id = ${viewId}`);
      for (const worker of again) {
        const labels = `view="public.per_bidder",operator="${worker.operator_id}",worker="${worker.worker}"`;
        expect(body).toContain(`oxbow_worker_memory_bytes{${labels},part="heap_used"} ${worker.heap_used_bytes}\n`);
        expect(body).toContain(`oxbow_worker_memory_bytes{${labels},part="group_caches"} ${worker.group_cache_bytes}\n`);
      }

      expect(await differences(sql, 'per_bidder', QUERY)).toBe(0);
    } finally {
      await sql.end().catch(() => undefined);
      await server.stop();
    }
  }, 300_000);

  it("lowers the workers' caches under a small --memory-limit, and the view still equals its query", async () => {
    const events = 400_000;
    const server = await startOxbow({ args: ['--parallelism', '2', '--memory-limit', '64MB', '--barrier-interval-ms', '100'] });
    const sql = await connect(server.url);
    try {
      await sql.query(bidSource(events, 0));
      // A group per (auction, bidder): far more than the workers' caches hold (their maxima: a few MiB).
      await sql.query(`CREATE MATERIALIZED VIEW per_bidder AS ${QUERY}`);
      await until('every bid committed', 240_000, async () => ((await committed(sql)) >= events ? true : undefined));
      const [view] = await rows(sql, "SELECT (SELECT id FROM oxbow_catalog.objects WHERE name = 'per_bidder') AS id");
      const workers = await until('both workers reported', 60_000, async () => {
        const found = await rows(sql, `SELECT * FROM oxbow_catalog.dataflow_workers WHERE view_id = ${view!.id} ORDER BY worker`);
        return found.length === 2 && found.every((worker) => Number(worker.batches) > 0) ? found : undefined;
      });
      // 64 MB: the heap part is 48 MiB and the caches' 24 MiB; a worker of the fragment may have a
      // quarter of the groups' fifth of it (1.2 MiB), and the workers' maxima with the main
      // thread's (24 + 2 x 6 MiB) leave every cache two thirds of its maximum. The heaps (the
      // main thread's and the workers') take more than the heap part allows, so the manager
      // lowered every cache's budget further.
      const groupMax = Math.floor(Math.floor(24 * MIB - Math.floor(24 * MIB * 0.8)) / 4);
      for (const worker of workers) {
        expect(Number(worker.group_cache_limit_bytes)).toBeLessThan(groupMax * 0.6);
        expect(Number(worker.group_cache_bytes)).toBeLessThanOrEqual(Number(worker.group_cache_limit_bytes));
        expect(Number(worker.row_cache_bytes)).toBeLessThanOrEqual(Number(worker.row_cache_limit_bytes));
      }
      // The lowered budget made the workers' caches give back what they held, which the manager counts.
      const workersEvicted = workers.reduce((sum, worker) => sum + Number(worker.cache_evicted_bytes), 0);
      expect(workersEvicted).toBeGreaterThan(0);
      const memory = await rows(sql, "SELECT component, bytes, limit_bytes FROM oxbow_catalog.memory WHERE component IN ('cache_budget', 'cache_evicted_by_manager')");
      const budget = memory.find((row) => row.component === 'cache_budget')!;
      expect(Number(budget.bytes)).toBeLessThan(Number(budget.limit_bytes) * 0.6);
      expect(Number(memory.find((row) => row.component === 'cache_evicted_by_manager')!.bytes)).toBeGreaterThanOrEqual(workersEvicted);

      expect(await differences(sql, 'per_bidder', QUERY)).toBe(0);
    } finally {
      await sql.end().catch(() => undefined);
      await server.stop();
    }
  }, 300_000);
});
