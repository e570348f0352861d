// The soak benchmark at CI size through `npm run bench`'s runner (dist/bench/run.js, built by
// `npm test`): q4, q5, q7 and q8 over paced Nexmark sources bounded to 10,000 events each, sampled
// every second for 6 seconds. A smoke test, not a timing: the bench itself checks every view
// against its query recomputed in batch once all events are committed (it exits non-zero when one
// differs); here every sample must carry every memory figure, the events committed must be the
// sources' events exactly, and the verdict lines must be present and agree with their own figures.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EVENTS = 10_000;
const RATE = 5_000;
const SOURCES = 3; // bid (q4, q5, q7), auction (q4, q8), person (q8)
const SAMPLE_METRICS = ['rss', 'heap_used', 'heap_after_major_gc', 'heap_outside_caches', 'heap_total', 'external', 'row_cache', 'group_caches', 'rocksdb_memtables', 'rocksdb_block_cache', 'rocksdb_table_readers', 'write_batches', 'malloc_in_use', 'malloc_free', 'state_bytes', 'events_committed', 'lag_events', 'events_per_second', 'cpu_share', 'barrier_latency_p99'];

interface Line {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  at_seconds?: number;
  [field: string]: unknown;
}

function runBench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'dist', 'bench', 'run.js'), ...args], { cwd: ROOT, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

describe('soak bench (smoke)', () => {
  it('samples every figure, checks its views, and prints the flat and kept_up verdicts', async () => {
    const { code, stdout, stderr } = await runBench(['soak', '--minutes', '0.1', '--sample-seconds', '1', '--queries', 'q4,q5,q7,q8', '--rate', String(RATE), '--events', String(EVENTS), '--memory-limit-mib', '16']);
    expect(stderr).not.toMatch(/differs from its query/);
    expect(code).toBe(0);
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line);
    expect(lines.every((line) => line.bench === 'soak')).toBe(true);
    const one = (metric: string): Line => {
      const found = lines.filter((line) => line.metric === metric && line.at_seconds === undefined);
      expect(found, metric).toHaveLength(1);
      return found[0]!;
    };

    // Six samples (one a second for 0.1 minutes; each begins with its sample_delay line), each with
    // every figure, finite and not negative.
    const samples: Map<string, number>[] = [];
    for (const line of lines) {
      if (line.at_seconds === undefined || line.metric === 'close_seconds') continue;
      if (line.metric === 'sample_delay') samples.push(new Map());
      samples.at(-1)!.set(line.metric, line.value);
    }
    expect(samples).toHaveLength(6);
    for (const figures of samples) {
      for (const metric of SAMPLE_METRICS) {
        expect(Number.isFinite(figures.get(metric)), metric).toBe(true);
        expect(figures.get(metric)!).toBeGreaterThanOrEqual(0);
      }
      expect(figures.get('rss')!).toBeGreaterThan(figures.get('heap_after_major_gc')!);
    }

    // Every event of every source committed once; each view checked against its batch query.
    expect(one('events_committed').value).toBe(EVENTS * SOURCES);
    expect(one('views_checked').value).toBe(4);
    const viewRows = lines.filter((line) => line.metric === 'view_rows');
    expect(viewRows.map((line) => line.view).sort()).toEqual(['nexmark_q4', 'nexmark_q5', 'nexmark_q7', 'nexmark_q8']);
    for (const line of viewRows) expect(line.value, String(line.view)).toBeGreaterThan(0);

    // The verdicts, recomputed from the figures they print.
    // The sources' asked rate ends with their events: the window's asked rate is at most RATE each.
    const keptUp = one('kept_up');
    const asked = keptUp.asked_events_per_second as number;
    expect(asked).toBeGreaterThanOrEqual(0);
    expect(asked).toBeLessThanOrEqual(RATE * SOURCES);
    // (Rates printed as integers: recomputed where rounding cannot move the share by a point.)
    if (asked >= 1000) expect(keptUp.value).toBeCloseTo(((keptUp.sustained_events_per_second as number) / asked) * 100, 0);
    expect(['yes', 'no']).toContain(keptUp.verdict);
    expect(Number.isInteger(keptUp.lag_growth_events)).toBe(true);
    const rss = one('rss_slope_mib_per_min');
    const live = one('live_heap_slope_mib_per_min');
    expect(rss.value).toBe(one('rss_slope_after_warmup').value);
    expect(live.value).toBe(one('heap_after_major_gc_slope_after_warmup').value);
    for (const slope of [rss, live]) {
      expect(slope.unit).toBe('MiB/min');
      expect(slope.stderr as number).toBeGreaterThanOrEqual(0);
      expect(slope.band as number).toBeGreaterThanOrEqual(0);
    }
    const flat = one('flat');
    expect(flat.value).toBe(Math.abs(rss.value) <= 3 && Math.abs(live.value) <= 3 ? 1 : 0);
    expect(flat.verdict).toBe(keptUp.verdict === 'no' ? 'not kept up' : flat.value === 1 ? 'yes' : 'no');
  }, 120_000);
});
