// The set-up the parallel tests share (parallel-aggregate, parallel-barrier, parallel-fragment,
// parallel-source): engines on RocksDB in temporary folders removed after each test (the workers of
// `--parallelism N` read the shared database, so these tests cannot use the memory store), the
// ParallelRuntime of an engine, the checks parallel-aggregate and parallel-fragment both make (views
// equal their queries after each statement, across restarts at other parallelisms and after an
// aborted statement), and the Nexmark bid source and snapshot comparison the source-driven ones use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { openRocksStateStore, type RocksStateStore } from '../../../storage/rocks-state-store.js';
import type { EngineCore, EngineSettings } from '../../engine/engine-core.js';
import type { ParallelRuntime } from '../parallel/parallel-runtime.js';
import { expectViewsEqualQueries, openHarness, runCheckingViews, type Harness } from './stream-harness.js';

/**
 * A source of temporary folders: registers an afterEach that first runs `beforeRemoval` (the file
 * closes its open harness there) and then removes every folder the test took.
 */
export function temporaryDirectories(prefix: string, beforeRemoval: () => void | Promise<void>): () => string {
  const directories: string[] = [];
  afterEach(async () => {
    await beforeRemoval();
    while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
  });
  return () => {
    const directory = mkdtempSync(join(tmpdir(), prefix));
    directories.push(directory);
    return directory;
  };
}

/** A RocksDB state store in `dir` with the tests' retention and memory limit. */
export function rocksStore(dir: string): RocksStateStore {
  return openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 });
}

/** An engine and session on RocksDB in `dir`. */
export function openOnRocks(dir: string, settings: Partial<EngineSettings>): Promise<Harness> {
  return openHarness(rocksStore(dir), settings);
}

/** An engine and session on RocksDB in `dir` at `--parallelism parallelism`. */
export function openAtParallelism(dir: string, parallelism: number): Promise<Harness> {
  return openOnRocks(dir, { tuning: { parallelism } });
}

/** The sorted lines of each view of `views`, in their order. */
export async function viewContents(harness: Harness, views: readonly (readonly [string, ...unknown[]])[]): Promise<string[][]> {
  const out: string[][] = [];
  for (const [name] of views) out.push(await harness.lines(`select * from ${name}`));
  return out;
}

/**
 * For each [parallelism, from, to] of `restarts`: `reopen(parallelism)` (the file closes its engine
 * and opens it again on the same folder), the views equal their queries, then the statements
 * `script[from, to)` each followed by the same check.
 */
export async function expectViewsAcrossRestarts(
  reopen: (parallelism: number) => Promise<Harness>,
  views: readonly (readonly [string, string])[],
  script: readonly string[],
  restarts: readonly (readonly [number, number, number])[],
): Promise<void> {
  for (const [parallelism, from, to] of restarts) {
    const harness = await reopen(parallelism);
    await expectViewsEqualQueries(harness, views, `the restart at parallelism ${parallelism}`);
    await runCheckingViews(harness, views, script.slice(from, to), (statement) => `${statement} at parallelism ${parallelism}`);
  }
}

/**
 * A statement that fails after its first row reached the views' changes (`failing`) leaves them
 * equal to their queries, and so does the statement run after it (`after`).
 */
export async function expectAbortLeavesViews(harness: Harness, views: readonly (readonly [string, string])[], failing: string, after: string): Promise<void> {
  await harness.failure(failing);
  await expectViewsEqualQueries(harness, views, 'the failed insert');
  await harness.run(after);
  await expectViewsEqualQueries(harness, views, 'the insert after it');
}

/** The engine's ParallelRuntime (undefined at parallelism 1). */
export function runtimeOf(harness: Harness): ParallelRuntime | undefined {
  const core = (harness.engine as unknown as { core: EngineCore }).core;
  return core.streams.parallel as ParallelRuntime | undefined;
}

export const BID_COLUMNS = 'auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar';

/** A Nexmark Bid source `name` of `events` events in `splits` splits, chunks of at most 256 rows. */
export function bidSource(name: string, events: number, splits: number, gapNs = 0): string {
  return `create source ${name} (${BID_COLUMNS}) with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '${splits}', nexmark.max.chunk.size = '256', nexmark.min.event.gap.in.ns = '${gapNs}')`;
}

/** One statement (one snapshot): the rows of the view missing from its query's, and the query's missing from the view's. */
export async function difference(harness: Harness, name: string, query: string): Promise<number> {
  const rows = await harness.run(`select (select count(*) from ((select * from ${name}) except all (${query})) as a) + (select count(*) from ((${query}) except all (select * from ${name})) as b)`);
  return Number(rows.rows[0]![0]);
}
