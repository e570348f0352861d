// One worker pool per process (executor/stream/PARALLEL.md, "One worker pool per process"): at
// --parallelism 2 a view's fragment takes its worker threads from the runtime's pool and gives them
// back when the view is dropped, so a second view runs on the same threads (the threads' ids in
// oxbow_catalog.dataflow_workers, the pool's counters in /metrics) without starting new ones; a
// thread killed mid-epoch is dropped, never reused, and after the restart the views equal their
// queries recomputed. A batch aggregate's key ranges run as jobs on the same threads. No thread
// starts with the engine: the first job starts them, a second reuses them; an engine closed while
// its first job's threads start closes them. On RocksDB; the worker scripts are the build's (npm
// run build first).
import { MessageChannel, type Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { prometheusText } from '../../metrics/prometheus.js';
import type { EngineCore } from '../../engine/engine-core.js';
import type { Harness } from './stream-harness.js';
import { bidSource, difference, openOnRocks, runtimeOf, temporaryDirectories } from './rocks-harness.js';

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-worker-pool-', async () => {
  await h?.close();
  h = undefined;
});

function open(dir: string): Promise<Harness> {
  return openOnRocks(dir, { tuning: { parallelism: 2, cores: 8 }, barrierIntervalMs: 40 });
}

async function committed(harness: Harness): Promise<number> {
  return Number((await harness.run('select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions')).rows[0]![0]);
}

async function waitUntil(what: string, done: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function threadsOf(harness: Harness, view: string): Promise<number[]> {
  const rows = await harness.run(`select thread_id from oxbow_catalog.dataflow_workers where view_name = '${view}' order by worker`);
  return rows.rows.map((row) => Number(row[0]));
}

const Q0 = 'select auction, bidder, price, date_time from bid';
const Q1 = 'select auction, bidder, 0.908 * price as price, date_time from bid';
const AGG = 'select auction, count(*) as n, max(price) as top from bid group by auction';

describe('the worker pool', () => {
  it("reuses a dropped view's threads for the next view, and drops a thread killed mid-epoch", async () => {
    const dir = freshDirectory();
    h = await open(dir);
    // Paced: 2 splits x 2,000 events a second, about 15 s of stream.
    const events = 60_000;
    await h.run(bidSource('bid', events, 2, 500_000));
    const pool = runtimeOf(h)!.pool;
    // Nothing parallel ran yet: no thread started.
    expect([pool.started, pool.jobs, pool.idle, pool.busy]).toEqual([0, 0, 0, 0]);
    await h.run(`create materialized view a as ${Q0}`);
    const firstThreads = await threadsOf(h, 'a');
    expect(firstThreads).toHaveLength(2);
    expect(new Set(firstThreads).size).toBe(2);
    expect([pool.started, pool.busy, pool.idle]).toEqual([2, 2, 0]);
    const start = await committed(h);
    await waitUntil('events into a', async () => (await committed(h!)) >= start + 1000);
    expect(await difference(h, 'a', Q0)).toBe(0);

    // Dropped: its workers close and their threads go back to the pool.
    await h.run('drop materialized view a');
    await waitUntil('the threads back in the pool', () => pool.idle === 2, 20_000);
    expect(pool.busy).toBe(0);

    // The next view, a source fragment, runs on the same threads: none started.
    await h.run(`create materialized view b as ${Q1}`);
    expect((await threadsOf(h, 'b')).sort()).toEqual([...firstThreads].sort());
    expect([pool.started, pool.jobs, pool.busy, pool.idle]).toEqual([2, 4, 2, 0]);
    const metrics = prometheusText((h.engine as unknown as { core: EngineCore }).core.status);
    expect(metrics).toContain('oxbow_worker_threads_started_total 2');
    expect(metrics).toContain('oxbow_worker_threads{state="busy"} 2');
    // A keyed fragment beside it needs two more threads (both of the pool's are busy).
    await h.run(`create materialized view c as ${AGG}`);
    const aggThreads = await threadsOf(h, 'c');
    expect(aggThreads).toHaveLength(2);
    for (const thread of aggThreads) expect(firstThreads).not.toContain(thread);
    expect([pool.started, pool.busy]).toEqual([4, 4]);
    const later = await committed(h);
    await waitUntil('events into b and c', async () => (await committed(h!)) >= later + 1000);
    expect(await difference(h, 'b', Q1)).toBe(0);
    expect(await difference(h, 'c', AGG)).toBe(0);
    await h.run('drop materialized view c');
    await waitUntil("c's threads back in the pool", () => pool.idle === 2, 20_000);

    // A thread killed while its view runs: the pool drops it (never idle again), and the epoch
    // fails at once (the thread's exit word), not at the answer's deadline.
    const fragment = runtimeOf(h)!.sourceFragments.fragment(Number((await h.run("select oid from pg_class where relname = 'b'")).rows[0]![0]))!;
    const killed = fragment.workers[0]!.handle.threadId;
    await (fragment.workers[0]!.handle as unknown as { worker: Worker }).worker.terminate();
    await waitUntil('the killed thread dropped', () => pool.lost === 1, 20_000);
    const killedAt = Date.now();
    expect(pool.idle).toBe(2);
    expect([pool.busy, pool.started]).toEqual([1, 4]);

    // A restart recovers from the last durable epoch; the view equals its query after the stream.
    await h.close();
    expect(Date.now() - killedAt).toBeLessThan(60_000);
    h = await open(dir);
    const restarted = runtimeOf(h)!.pool;
    await waitUntil('the stream committed', async () => (await committed(h!)) >= events, 120_000);
    expect(await difference(h, 'b', Q1)).toBe(0);
    expect(await threadsOf(h, 'b')).not.toContain(killed);
    expect(restarted.started).toBe(2);
  }, 300_000);

  it("runs a batch aggregate's ranges on the threads a view's fragment then takes", async () => {
    const dir = freshDirectory();
    // Every scan pays to split (parallelScanMinBytes 0): the aggregate runs in the workers.
    h = await openOnRocks(dir, { tuning: { parallelism: 2, cores: 8, parallelScanMinBytes: 0 }, barrierIntervalMs: 40 });
    const pool = runtimeOf(h)!.pool;
    const rows = 20_000;
    await h.run('create table t (k bigint primary key, v bigint)');
    await h.run(`insert into t select g, g % 7 from generate_series(1, ${rows}) g`);
    // The engine started no thread: no statement so far ran in the workers.
    expect([pool.started, pool.jobs, pool.idle, pool.busy]).toEqual([0, 0, 0, 0]);
    expect(prometheusText((h.engine as unknown as { core: EngineCore }).core.status)).toContain('oxbow_worker_threads_started_total 0');
    let sum = 0;
    for (let g = 1; g <= rows; g++) sum += g % 7;
    const answer = await h.run('select count(*), sum(v), max(k) from t');
    expect(answer.rows[0]!.map((value) => Number(String(value)))).toEqual([rows, sum, rows]);
    // Its ranges started the pool's two threads, and gave them back.
    const firstJobs = pool.jobs;
    expect(firstJobs).toBe(2);
    expect([pool.started, pool.busy, pool.idle]).toEqual([2, 0, 2]);
    // A second aggregate runs on the same two threads: none started.
    const again = await h.run('select count(*), sum(v), max(k) from t where v < 3');
    let small = 0;
    let smallSum = 0;
    for (let g = 1; g <= rows; g++) if (g % 7 < 3) (small++, (smallSum += g % 7));
    expect(Number(String(again.rows[0]![0]))).toBe(small);
    expect(Number(String(again.rows[0]![1]))).toBe(smallSum);
    const jobs = pool.jobs;
    expect(jobs).toBe(2 * firstJobs);
    expect([pool.started, pool.busy, pool.idle]).toEqual([2, 0, 2]);

    // A source fragment made after it runs on the same two threads.
    await h.run(bidSource('bid', 4000, 2));
    await h.run(`create materialized view b as ${Q1}`);
    const threads = await threadsOf(h, 'b');
    expect(new Set(threads).size).toBe(2);
    expect([pool.started, pool.jobs, pool.busy, pool.idle]).toEqual([2, jobs + 2, 2, 0]);
    const metrics = prometheusText((h.engine as unknown as { core: EngineCore }).core.status);
    expect(metrics).toContain('oxbow_worker_threads_started_total 2');
    expect(metrics).toContain(`oxbow_worker_jobs_total ${jobs + 2}`);
    await waitUntil('the stream committed', async () => (await committed(h!)) >= 4000, 120_000);
    expect(await difference(h, 'b', Q1)).toBe(0);
  }, 300_000);

  it('closes an engine that never started a thread, and one whose first job is starting its threads', async () => {
    const dir = freshDirectory();
    h = await openOnRocks(dir, { tuning: { parallelism: 2, cores: 8, parallelScanMinBytes: 0 }, barrierIntervalMs: 40 });
    const idle = runtimeOf(h)!.pool;
    await h.run('create table t (k bigint primary key, v bigint)');
    await h.run('insert into t select g, g % 5 from generate_series(1, 5000) g');
    // Closed without a parallel statement: no thread ever started.
    await h.close();
    h = undefined;
    expect([idle.started, idle.idle, idle.busy]).toEqual([0, 0, 0]);

    h = await openOnRocks(dir, { tuning: { parallelism: 2, cores: 8, parallelScanMinBytes: 0 }, barrierIntervalMs: 40 });
    const pool = runtimeOf(h)!.pool;
    // The aggregate's ranges start both threads; the engine closes before they answer or just after.
    const pending = h.run('select count(*), sum(v) from t').then(
      (answer) => answer.rows[0]!.map((value) => Number(String(value))),
      (error: unknown) => (error as { code?: string }).code,
    );
    const closing = h.close();
    h = undefined;
    await closing;
    const outcome = await pending;
    // Either the full answer (it ran before the close) or the shutdown's error (57P01 from the
    // batch workers' close, 57014 when the session's statement is aborted first), never a hang.
    if (typeof outcome === 'string') expect(['57P01', '57014']).toContain(outcome);
    else expect(outcome).toEqual([5000, 10_000]);
    expect([pool.idle, pool.busy]).toEqual([0, 0]);
    expect(() => pool.run(new URL('file:///none.js'), { port: new MessageChannel().port1, signal: new SharedArrayBuffer(8) }, [], () => undefined)).toThrow('the worker pool is closed');
  }, 120_000);
});
