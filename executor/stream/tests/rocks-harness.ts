// The set-up the parallel tests share (parallel-aggregate, parallel-barrier, parallel-fragment,
// parallel-source): engines on RocksDB in temporary folders removed after each test (the workers of
// `--parallelism N` read the shared database, so these tests cannot use the memory store), the
// ParallelRuntime of an engine, the checks parallel-aggregate and parallel-fragment both make (views
// equal their queries after each statement, across restarts at other parallelisms and after an
// aborted statement), and the Nexmark bid source, snapshot comparison and waits for the sources'
// progress the source-driven ones use.
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

/** The events the sources committed (of `source` only, when given): the sum of their partitions' committed offsets. */
export async function committedEvents(harness: Harness, source?: string): Promise<number> {
  const where = source === undefined ? '' : ` where source_name = '${source}'`;
  return Number((await harness.run(`select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions${where}`)).rows[0]![0]);
}

/** How long the sources may commit nothing before a wait for them gives up: above a worker's answer deadline (worker-handle.ts). */
export const STALL_MS = 150_000;

/**
 * Reads the events the sources committed (of `source`, when given) and runs `round` with them
 * (the checks, which see at least that many), again and again until they reached `target`;
 * returns the count the last round saw. Between two rounds it waits, reading only the count,
 * until `step` more events committed (or `target`): a round of checks holds the main thread, which
 * the sources share, so rounds back to back would leave them a turn of the event loop per
 * statement. The deadline is on progress, not on the whole wait: on a loaded machine a round
 * takes seconds and the stream goes on, so only `STALL_MS` without one more event committed fails
 * the wait, with what each source and each source fragment's worker was at (`sourceProgress`).
 */
export async function untilCommitted(
  harness: Harness,
  target: number,
  round: (committed: number) => Promise<void>,
  { source, step = 0 }: { readonly source?: string; readonly step?: number } = {},
): Promise<number> {
  let seen = -1;
  let deadline = 0;
  let committed = await committedEvents(harness, source);
  for (;;) {
    await round(committed);
    if (committed >= target) return committed;
    const next = Math.min(target, committed + Math.max(1, step));
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const now = await committedEvents(harness, source);
      if (now > seen) {
        seen = now;
        deadline = Date.now() + STALL_MS;
      } else if (Date.now() > deadline) {
        throw new Error(`${source ?? 'the sources'} committed ${now} of ${target} events and no more for ${STALL_MS / 1000} s\n${await sourceProgress(harness)}`);
      }
      if (now >= next) {
        committed = now;
        break;
      }
    }
  }
}

/** What each source partition, the store and each source fragment's worker are at, in lines (a stalled wait's error). */
export async function sourceProgress(harness: Harness): Promise<string> {
  const lines = ['source | partition | committed | high watermark | messages | errors'];
  lines.push(...(await harness.lines('select source_name, partition_id, committed_offset, high_watermark, messages, errors from oxbow_catalog.source_partitions')));
  for (const line of await harness.lines('select source_name, error from oxbow_catalog.source_errors')) lines.push(`source error: ${line}`);
  const store = (harness.engine as unknown as { core: EngineCore }).core.store as { sealedEpochs?: number; committedEpoch?: bigint; latestEpoch?: bigint };
  lines.push(`store: committed epoch ${String(store.committedEpoch)}, latest ${String(store.latestEpoch)}, ${String(store.sealedEpochs)} sealed in flight`);
  const fragments = runtimeOf(harness)?.sourceFragments;
  for (const line of await harness.lines('select view_name, worker, thread_id, batches, waited_ms from oxbow_catalog.dataflow_workers')) lines.push(`worker: ${line}`);
  if (fragments !== undefined) {
    for (const [viewId, node] of (fragments as unknown as { nodes: Map<number, { workers: { units: number; rows: number; dirty: boolean; awaitingDurable: bigint[] }[] }> }).nodes) {
      node.workers.forEach((worker, index) => lines.push(`view ${viewId} worker ${index}: ${worker.units} units, ${worker.rows} rows, ${worker.dirty ? 'ranges in the open epoch' : 'nothing open'}, awaiting epochs [${worker.awaitingDurable.join(', ')}]`));
    }
  }
  return lines.join('\n');
}
