// The memory manager in a real engine (createEngine on RocksDB, as the server runs it) with a
// --memory-limit far under what the process's heap takes: 8 MiB, whose heap part is 4 MiB, so
// every full collection of this test worker (tens of MiB live) is over it. Full collections are
// real (V8's gc() exposed for the test), the manager lowers the caches' budget after them, and
// through inserts, updates and deletes the caches stay within their (moving) limits while a join
// view and an aggregate view equal their queries recomputed by the batch executor.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../create-engine.js';
import type { Engine, Session } from '../engine.js';
import { DEFAULT_HEAP_GROWING_PERCENT, setHeapGrowingPercent } from '../heap-growth.js';
import { planMemory } from '../memory-manager.js';
import { formatValue } from '../../../sql/functions.js';

const LIMIT = 8 * 1024 * 1024;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-memory-manager-'));
let engine: Engine;
let session: Session;
let gc: () => void;

async function lines(sql: string): Promise<string[]> {
  let out: string[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind !== 'rows') continue;
    const rows = await result.cursor.next(0);
    out = rows.map((row) => row.map((value, i) => (value === null ? 'NULL' : formatValue(value, result.columns[i]!.type))).join(' | ')).sort();
  }
  return out;
}

/** component -> [bytes, limit] from oxbow_catalog.memory. */
async function memory(): Promise<Map<string, [number, number | null]>> {
  const parts = new Map<string, [number, number | null]>();
  for (const line of await lines('SELECT component, bytes, coalesce(limit_bytes, -1) FROM oxbow_catalog.memory')) {
    const [component, bytes, limit] = line.split(' | ');
    parts.set(component!, [Number(bytes), Number(limit) < 0 ? null : Number(limit)]);
  }
  return parts;
}

/** Real full collections (three: the manager moves one bounded step per reading); its observer runs on a later turn of the event loop. */
async function collect(): Promise<void> {
  for (let round = 0; round < 3; round++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  setFlagsFromString('--expose-gc');
  gc = runInNewContext('gc') as () => void;
  engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${dataDir}/checkpoints`,
    barrierIntervalMs: 1000,
    checkpointIntervalMs: 600_000,
    timeTravelRetentionMs: 600_000,
    memoryLimitBytes: LIMIT,
  });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
});

afterAll(async () => {
  await engine?.close();
  // The manager lowered V8's heap growth for the whole process: give the other tests the default.
  setHeapGrowingPercent(DEFAULT_HEAP_GROWING_PERCENT);
  rmSync(dataDir, { recursive: true, force: true });
});

const VIEWS = [
  ['pairs', "select t.k, t.pad, u.name from t join u on t.g = u.g"],
  ['sums', 'select g, count(*) as n, sum(k) as total, max(length(pad)) as longest from t group by g'],
] as const;

describe('the memory manager in an engine with a tiny --memory-limit', () => {
  it('lowers the caches after full collections; the caches stay within their limits and the views equal their queries', async () => {
    const plan = planMemory(LIMIT);
    const run = (sql: string) => lines(sql);
    await run("create table u (g int primary key, name text); insert into u select i, 'group ' || i from generate_series(0, 199) as s(i)");
    await run('create table t (k int primary key, g int, pad text)');
    for (const [name, query] of VIEWS) await run(`create materialized view ${name} as ${query}`);
    const steps = [
      "insert into t select i, i % 200, repeat(chr(65 + i % 26), 300) from generate_series(0, 5999) as s(i)",
      'update t set g = (g + 7) % 200 where k % 3 = 0',
      "update u set name = name || '!' where g % 10 = 0",
      'delete from t where k % 4 = 0',
      "insert into t select i, i % 50, 'short' from generate_series(6000, 8999) as s(i)",
    ];
    let lowestBudget = Number.POSITIVE_INFINITY;
    for (const step of steps) {
      await run(step);
      await collect();
      const parts = await memory();
      const [budget, budgetMax] = parts.get('cache_budget')!;
      expect(budgetMax, 'the caches at most their plan').toBe(plan.cacheBytes);
      lowestBudget = Math.min(lowestBudget, budget);
      const [rowBytes, rowLimit] = parts.get('row_cache')!;
      const [groupBytes, groupLimit] = parts.get('group_caches')!;
      expect(rowBytes, `row cache within its limit after ${step}`).toBeLessThanOrEqual(rowLimit!);
      expect(groupBytes, `group caches within their limit after ${step}`).toBeLessThanOrEqual(groupLimit!);
      expect(rowLimit! + groupLimit!, `the limits are the effective budget after ${step}`).toBeLessThanOrEqual(budget);
      for (const [name, query] of VIEWS) expect(await run(`select * from ${name}`), `${name} after ${step}`).toEqual(await run(query));
    }
    const parts = await memory();
    // The worker's live heap is far over 4 MiB: every reading lowered the budget, to its floor (1/16).
    expect(parts.get('live_heap')![0]).toBeGreaterThan(plan.heapBytes);
    expect(lowestBudget).toBe(Math.floor(plan.cacheBytes / 16));
    // The 6,000 rows of 300 characters (about 2 MiB of text) filled the caches past the lowered budget: evictions were forced.
    expect(parts.get('cache_evicted_by_manager')![0]).toBeGreaterThan(0);
    expect(await run('select count(*) from pairs')).toEqual(await run('select count(*) from t join u on t.g = u.g'));
  }, 120_000);
});
