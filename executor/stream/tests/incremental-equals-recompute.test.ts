// The property that defines correctness of materialized views (DESIGN.md section 7): random
// INSERT / UPDATE / DELETE workloads on several tables, several views over them (aggregates, joins
// of every type, top-N, group top-N, DISTINCT, set operations, TUMBLE windows, views on views);
// after every statement's epoch, each view's rows equal its defining query recomputed by the batch
// executor over the same tables. The expected side is never the streaming code: it is the batch
// executor running the query text.
//
// Failing seeds are kept in incremental-equals-recompute.seeds.json and always run first;
// STREAM_PROPERTY_RUNS=n runs more random cases. The last block runs the same workloads at
// --parallelism 2 on RocksDB (fragments of joins and aggregates in worker threads, executor/stream/PARALLEL.md;
// the worker script is the build's: npm run build first).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import type { EngineCore } from '../../engine/engine-core.js';
import type { ParallelRuntime } from '../parallel/parallel-runtime.js';
import { openHarness, type Harness } from './stream-harness.js';
import { chunkEpochs, operation, sqlOf, TABLES, VIEWS, type Operation } from './property-workload.js';

const workload = fc.record({
  /** Statements before the views exist (their backfill reads these rows). */
  before: fc.array(operation, { maxLength: 12 }),
  after: fc.array(operation, { minLength: 1, maxLength: 25 }),
});

/** The same workloads with chunk boundaries inside each epoch: the changes pushed every 1-4 changes, cycling through `sizes`. */
const chunkedWorkload = fc.record({
  before: fc.array(operation, { maxLength: 12 }),
  after: fc.array(operation, { minLength: 1, maxLength: 25 }),
  sizes: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
});

type Workload = { before: Operation[]; after: Operation[]; sizes?: number[] };

function check(input: Workload): Promise<void> {
  return checkOn(() => openHarness(), input);
}

/** The same check on a fresh RocksDB store at `--parallelism 2`; the directory is removed after. */
async function checkParallel(input: Workload): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-property-'));
  try {
    const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }), { tuning: { parallelism: 2 } });
    // The views' keyed aggregates and joins run in worker threads.
    await checkOn(open, input, (h) => expect(parallelRuntimeOf(h)?.workers ?? 0).toBeGreaterThan(0));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function parallelRuntimeOf(h: Harness): ParallelRuntime | undefined {
  return (h.engine as unknown as { core: EngineCore }).core.streams.parallel as ParallelRuntime | undefined;
}

async function checkOn(open: () => Promise<Harness>, input: Workload, afterViews?: (h: Harness) => void): Promise<void> {
  const h = await open();
  const sizes = input.sizes;
  if (sizes !== undefined) {
    let next = 0;
    chunkEpochs(h, () => sizes[next++ % sizes.length]!);
  }
  try {
    for (const statement of TABLES) await h.run(statement);
    for (const op of input.before) await h.run(sqlOf(op));
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    afterViews?.(h);
    const compare = async (step: string) => {
      for (const [name, query] of VIEWS) {
        const view = await h.lines(`select * from ${name}`);
        const recomputed = await h.lines(query);
        expect(view, `${name} after ${step}`).toEqual(recomputed);
      }
    };
    await compare('backfill');
    for (const op of input.after) {
      await h.run(sqlOf(op));
      await compare(sqlOf(op));
    }
  } finally {
    await h.close();
  }
}

const seedsFile = join(import.meta.dirname, 'incremental-equals-recompute.seeds.json');
const keptSeeds = JSON.parse(readFileSync(seedsFile, 'utf8')) as { seed: number; note?: string }[];
const runs = Number(process.env.STREAM_PROPERTY_RUNS ?? 10);

describe('every view equals its query recomputed in batch, after every epoch', () => {
  for (const kept of keptSeeds) {
    it(`kept seed ${kept.seed}${kept.note ? ` (${kept.note})` : ''}`, async () => {
      await fc.assert(fc.asyncProperty(workload, check), { seed: kept.seed, numRuns: 1 });
    }, 120_000);
  }
  it(`random workloads (${runs} runs)`, async () => {
    const seed = Number(process.env.STREAM_PROPERTY_SEED ?? Date.now() % 2_147_483_647);
    try {
      await fc.assert(fc.asyncProperty(workload, check), { seed, numRuns: runs, endOnFailure: true });
    } catch (error) {
      // Print the seed to add to the seeds file (the kept seeds run first, every time).
      console.error(`failing seed: ${seed} (add {"seed": ${seed}} to ${seedsFile})`);
      throw error;
    }
  }, 300_000);
});

const chunkedRuns = Number(process.env.STREAM_PROPERTY_RUNS ?? 4);

describe('the same with chunk boundaries inside each epoch (a source pushes its rows in chunks)', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed} (3 runs)`, async () => {
      await fc.assert(fc.asyncProperty(chunkedWorkload, check), { seed, numRuns: 3 });
    }, 120_000);
  }
  it(`random workloads (${chunkedRuns} runs)`, async () => {
    const seed = Number(process.env.STREAM_PROPERTY_SEED ?? Date.now() % 2_147_483_647);
    try {
      await fc.assert(fc.asyncProperty(chunkedWorkload, check), { seed, numRuns: chunkedRuns, endOnFailure: true });
    } catch (error) {
      console.error(`failing seed (chunked): ${seed}`);
      throw error;
    }
  }, 300_000);
});

const parallelRuns = Number(process.env.STREAM_PROPERTY_RUNS ?? 3);

describe('the same at --parallelism 2 on RocksDB (fragments in worker threads)', () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed} (2 runs, chunk boundaries inside each epoch)`, async () => {
      await fc.assert(fc.asyncProperty(chunkedWorkload, checkParallel), { seed, numRuns: 2 });
    }, 300_000);
  }
  it(`random workloads (${parallelRuns} runs)`, async () => {
    const seed = Number(process.env.STREAM_PROPERTY_SEED ?? Date.now() % 2_147_483_647);
    try {
      await fc.assert(fc.asyncProperty(workload, checkParallel), { seed, numRuns: parallelRuns, endOnFailure: true });
    } catch (error) {
      console.error(`failing seed (parallelism 2): ${seed}`);
      throw error;
    }
  }, 300_000);
});

afterAll(() => undefined);
