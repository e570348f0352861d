import { defineConfig } from 'vitest/config';

// Test files run two at a time by default, each in a process of its own (pool 'forks'): most files
// wait on processes (the oxbow server, PostgreSQL, the Kafka broker, etcd), so two keep 2 cores
// busy and a run takes about 25-30 minutes instead of 36. OXBOW_TEST_WORKERS=1 runs one at a time
// (a file that fails only beside another: run it alone to tell), more than 2 on a bigger machine.
// Every file starts its own services on ports the operating system picks and in temporary
// directories of its own, counts one ready only when its own process holds the listening socket,
// and claims a Kafka broker's port pair (scripts/kafka.mjs) before it touches its folder
// (test/README.md, "Running at once"), so files running at once share nothing. The files that keep the cores busy by themselves (worker threads at parallelism 2 and 4,
// the conformance suite) run after the others, one at a time: `SERIAL` below.

/** CPU-bound files: worker pools at parallelism 2 and 4 in the test process, and the conformance suite. */
const SERIAL = [
  'executor/stream/tests/parallel-aggregate.test.ts',
  'executor/stream/tests/parallel-barrier.test.ts',
  'executor/stream/tests/parallel-fragment.test.ts',
  'executor/stream/tests/parallel-keyed-source.test.ts',
  'executor/stream/tests/parallel-source.test.ts',
  'executor/stream/tests/worker-pool.test.ts',
  'test/slt/conformance.test.ts',
];

const EXCLUDE = ['node_modules/**', 'dist/**'];
const workers = Number(process.env['OXBOW_TEST_WORKERS'] ?? 2);
if (!Number.isInteger(workers) || workers < 1) throw new Error(`OXBOW_TEST_WORKERS must be a positive integer, not ${process.env['OXBOW_TEST_WORKERS']}`);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'at-once', include: ['**/*.test.ts'], exclude: [...EXCLUDE, ...SERIAL], maxWorkers: workers },
      },
      {
        extends: true,
        test: { name: 'serial', include: SERIAL, exclude: EXCLUDE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
