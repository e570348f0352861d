// oxbow_catalog.memory on the real RocksDB store, with a known workload: 20,000 rows in a table,
// then a join view and an aggregate view over it, then both dropped. The limits are the parts of
// the --memory-limit this test configures (64 MiB; executor/engine/memory-manager.ts planMemory, checked
// by hand in memory-manager.test.ts): RocksDB's block cache 16 MiB (its floor) with the memtables
// charged to it, the caches at most 24 MiB (row caches 4/5, group caches 1/5), lowered by the
// memory manager when the worker's live heap is over its part (it is: a test worker's heap is
// larger than 24 MiB), never raised above; RocksDB's figures are positive once rows are written;
// the caches' charges move with the views: the group caches hold nothing before a view runs,
// something once the views have seen a change, and nothing again after DROP, and the row cache
// gives the views' state back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../create-engine.js';
import { planMemory } from '../memory-manager.js';
import { EngineMetrics } from '../../metrics/engine-metrics.js';
import { prometheusText } from '../../metrics/prometheus.js';
import type { Engine, Session } from '../engine.js';
import type { Row } from '../../../sql/value.js';

const MEMORY_LIMIT = 64 * 1024 * 1024;
const MIB = 1024 * 1024;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-memory-table-'));
let engine: Engine;
let session: Session;
const metrics = new EngineMetrics();

async function run(sql: string): Promise<Row[]> {
  let rows: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    rows = result.kind === 'rows' ? await result.cursor.next(0) : [];
  }
  return rows;
}

/** component -> [bytes, limit_bytes] as numbers. */
async function memory(): Promise<Map<string, [number, number | null]>> {
  const rows = await run('SELECT component, bytes, limit_bytes, description FROM oxbow_catalog.memory');
  const parts = new Map<string, [number, number | null]>();
  for (const [component, bytes, limit, description] of rows) {
    expect(typeof description === 'string' && description.length > 0, `${String(component)} has a description`).toBe(true);
    expect(parts.has(component as string), `${String(component)} once`).toBe(false);
    parts.set(component as string, [Number(bytes), limit === null ? null : Number(limit)]);
  }
  return parts;
}

function bytesOf(parts: Map<string, [number, number | null]>, component: string): number {
  const part = parts.get(component);
  expect(part, component).toBeDefined();
  return part![0];
}

beforeAll(async () => {
  engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${dataDir}/checkpoints`,
    barrierIntervalMs: 1000,
    checkpointIntervalMs: 600_000,
    timeTravelRetentionMs: 600_000,
    memoryLimitBytes: MEMORY_LIMIT,
    metrics,
  });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  await run('CREATE TABLE t (id int PRIMARY KEY, g int, v int)');
  await run('INSERT INTO t SELECT i, i % 100, i FROM generate_series(1, 20000) AS s(i)');
});

afterAll(async () => {
  await engine?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('oxbow_catalog.memory', () => {
  it('lists every component once, with the configured limits and positive RocksDB and process figures', async () => {
    const parts = await memory();
    expect([...parts.keys()].sort()).toEqual(
      [
        'rss', 'js_heap_used', 'js_heap_total', 'external', 'array_buffers', 'row_cache', 'group_caches', 'write_batches',
        'rocksdb_block_cache', 'rocksdb_block_cache_pinned', 'rocksdb_memtables', 'rocksdb_table_readers', 'malloc_in_use', 'malloc_free', 'unattributed',
        'cache_budget', 'live_heap', 'cache_evicted_by_manager',
      ].sort(),
    );
    // The parts of 64 MiB by hand: RocksDB 16 MiB (L/8 = 8 is under the floor), the heap the rest
    // (48 MiB), the caches half of that (V8's heap grows to twice the live heap): 24 MiB.
    expect(planMemory(MEMORY_LIMIT).cacheBytes).toBe(24 * MIB);
    const budget = parts.get('cache_budget')!;
    expect(budget[1]).toBe(24 * MIB);
    expect(budget[0]).toBeGreaterThanOrEqual((24 * MIB) / 16);
    expect(budget[0]).toBeLessThanOrEqual(24 * MIB);
    // The row and group caches' limits are their shares of the effective budget.
    expect(parts.get('row_cache')![1]! + parts.get('group_caches')![1]!).toBeGreaterThanOrEqual(budget[0] - 2);
    expect(parts.get('row_cache')![1]! + parts.get('group_caches')![1]!).toBeLessThanOrEqual(budget[0]);
    expect(parts.get('row_cache')![1]).toBeLessThanOrEqual(Math.floor(24 * MIB * 0.8));
    expect(parts.get('rocksdb_block_cache')![1]).toBe(16 * MIB);
    // 20,000 rows were written: they are in the memtable (4 MiB, not flushed yet).
    expect(bytesOf(parts, 'rocksdb_memtables')).toBeGreaterThan(20_000 * 10);
    // The memtables are charged to the block cache (a write buffer manager): it holds at least them.
    expect(bytesOf(parts, 'rocksdb_block_cache')).toBeGreaterThanOrEqual(bytesOf(parts, 'rocksdb_memtables'));
    expect(bytesOf(parts, 'malloc_in_use')).toBeGreaterThan(bytesOf(parts, 'rocksdb_memtables'));
    // process.memoryUsage's own relations.
    expect(bytesOf(parts, 'js_heap_total')).toBeGreaterThanOrEqual(bytesOf(parts, 'js_heap_used'));
    expect(bytesOf(parts, 'external')).toBeGreaterThanOrEqual(bytesOf(parts, 'array_buffers'));
    expect(bytesOf(parts, 'rss')).toBeGreaterThan(bytesOf(parts, 'js_heap_used'));
    // The table's writes went into the row cache (rows written are cached).
    expect(bytesOf(parts, 'row_cache')).toBeGreaterThan(0);
    expect(bytesOf(parts, 'row_cache')).toBeLessThanOrEqual(parts.get('row_cache')![1]!);
  });

  it('the caches charge a join and an aggregate view, and give it back when they are dropped', async () => {
    const before = await memory();
    expect(bytesOf(before, 'group_caches')).toBe(0);
    await run('CREATE MATERIALIZED VIEW pairs AS SELECT a.id, b.v FROM t AS a JOIN t AS b ON a.g = b.id');
    await run('CREATE MATERIALIZED VIEW sums AS SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g');
    // The caches load at a view's first change (join-cache.ts, agg-cache.ts).
    await run('INSERT INTO t VALUES (20001, 1, 5)');
    const withViews = await memory();
    expect(bytesOf(withViews, 'group_caches')).toBeGreaterThan(0);
    expect(bytesOf(withViews, 'group_caches')).toBeLessThanOrEqual(withViews.get('group_caches')![1]!);
    // The views' rows were written and cached: every row of t but those whose g is 0 (i a multiple
    // of 100: 200 rows; no id is 0) joins one row, and so does the new one: 19,801; 100 groups.
    expect(bytesOf(withViews, 'row_cache')).toBeGreaterThan(bytesOf(before, 'row_cache'));
    expect(await run('SELECT count(*) FROM pairs')).toEqual([[19_801n]]);
    expect(await run('SELECT count(*) FROM sums')).toEqual([[100n]]);

    await run('DROP MATERIALIZED VIEW pairs');
    await run('DROP MATERIALIZED VIEW sums');
    const after = await memory();
    expect(bytesOf(after, 'group_caches')).toBe(0);
    // The views' state tables' caches are gone; t's cache holds one more row than before.
    expect(bytesOf(after, 'row_cache')).toBeLessThan(bytesOf(withViews, 'row_cache'));
  });

  it('shows the same components in Prometheus text as oxbow_memory_bytes', async () => {
    const status = metrics.status;
    expect(status).toBeDefined();
    const text = prometheusText(status!);
    const components = [...text.matchAll(/^oxbow_memory_bytes\{component="([a-z_0-9]+)"\} (\d+)$/gm)].map((match) => match[1]);
    const parts = await memory();
    // The manager's evicted bytes are a counter of their own, not a gauge of memory held.
    expect(components.sort()).toEqual([...parts.keys()].filter((component) => component !== 'cache_evicted_by_manager').sort());
    const limits = new Map([...text.matchAll(/^oxbow_memory_limit_bytes\{component="([a-z_0-9]+)"\} (\d+)$/gm)].map((match) => [match[1], Number(match[2])]));
    expect(limits.get('cache_budget')).toBe(24 * MIB);
    expect(limits.get('rocksdb_block_cache')).toBe(16 * MIB);
    const evicted = /^oxbow_memory_manager_evicted_bytes_total (\d+)$/m.exec(text);
    expect(evicted).not.toBeNull();
    expect(Number(evicted![1])).toBeLessThanOrEqual(parts.get('cache_evicted_by_manager')![0]);
    expect(text).toMatch(/^oxbow_memory_manager_actions_total\{action="budget_lowered"\} \d+$/m);
  });
});
