// DashboardSeries on its own (a unit test of one module, so the status API is a stub): latency
// means from histogram deltas, rates from counter deltas over the elapsed time, the newest complete
// checkpoint, and the ring buffer keeping the newest `capacity` samples oldest first. Expected
// values are computed by hand from the observations fed in.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Histogram } from '../../executor/metrics/histogram.js';
import { DashboardSeries } from '../../executor/metrics/dashboard.js';
import type { EngineStatus } from '../../executor/metrics/status.js';
import { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';

function stub() {
  const barrier = new Histogram();
  const commit = new Histogram();
  const counters = { scanOut: 0, viewIn: 0, input: 0 };
  const checkpoints = new CheckpointMetrics();
  const status = {
    metrics: { barrierLatency: barrier, commitLatency: commit },
    checkpoints,
    dataflows: () => [
      {
        viewId: 20,
        schema: 'public',
        name: 'v',
        operators: [
          { operatorId: 1, parentId: null, kind: 'StreamMaterialize', rowsIn: counters.viewIn, rowsOut: counters.viewIn },
          { operatorId: 2, parentId: 1, kind: 'StreamTableScan', rowsIn: counters.scanOut, rowsOut: counters.scanOut },
        ],
      },
    ],
    throughput: () => ({ sources: [{ sourceId: 10, schema: 'public', name: 't', rows: counters.input * 2 }], inputs: [{ relationId: 10, schema: 'public', name: 't', kind: 'table', rows: counters.input }], views: [] }),
  } as unknown as EngineStatus;
  return { status, barrier, commit, counters, checkpoints };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('DashboardSeries', () => {
  it('turns histogram and counter deltas into per-interval means and rates', () => {
    const { status, barrier, commit, counters, checkpoints } = stub();
    const series = new DashboardSeries(status, { capacity: 10 });
    series.sample(); // the baseline: no sample yet
    expect(series.samples()).toEqual([]);

    barrier.observe(0.01);
    barrier.observe(0.03);
    commit.observe(0.004);
    commit.observe(0.006);
    counters.scanOut = 500;
    counters.viewIn = 40;
    counters.input = 500;
    checkpoints.record({ epoch: 77n, startedAtMs: 0, durationMs: 120, status: 'complete', filesUploaded: 2, bytesUploaded: 900, files: 3, bytesReferenced: 4096, pauseMs: 0, cutMs: 0, error: null });
    vi.setSystemTime(1_002_000); // 2 s later
    series.sample();
    const [first] = series.samples();
    expect(first!.atMillis).toBe(1_002_000);
    expect(first!.barriers).toBe(2);
    expect(first!.barrierLatencyMs).toBeCloseTo(20, 9); // (10 + 30) / 2
    expect(first!.commitLatencyMs).toBeCloseTo(5, 9); // (4 + 6) / 2
    expect(first!.checkpointEpoch).toBe('77');
    expect(first!.checkpointBytes).toBe(4096);
    expect(first!.checkpointDurationMs).toBe(120);
    expect(first!.viewRowsPerSecond).toEqual({ '20': 20 }); // 40 rows / 2 s
    expect(series.rate('20/2')).toBe(250); // 500 rows / 2 s
    expect(series.rate('rel:10')).toBe(250);
    expect(series.rate('src:10')).toBe(500); // 1000 rows / 2 s

    // An interval without barriers has no latency point; rates fall to 0.
    vi.setSystemTime(1_003_000);
    series.sample();
    const second = series.samples()[1]!;
    expect(second.barriers).toBe(0);
    expect(second.barrierLatencyMs).toBeNull();
    expect(second.commitLatencyMs).toBeNull();
    expect(series.rate('20/2')).toBe(0);
  });

  it('keeps the newest capacity samples, oldest first, across the wrap', () => {
    const { status } = stub();
    const series = new DashboardSeries(status, { capacity: 4 });
    series.sample();
    for (let i = 1; i <= 11; i++) {
      vi.setSystemTime(1_000_000 + i * 1000);
      series.sample();
    }
    expect(series.samples().map((sample) => sample.atMillis)).toEqual([8, 9, 10, 11].map((i) => 1_000_000 + i * 1000));
  });

  it('samples once per interval once started, and stops', () => {
    const { status } = stub();
    const series = new DashboardSeries(status, { intervalMs: 1000, capacity: 100 });
    series.start();
    vi.advanceTimersByTime(5000);
    expect(series.samples()).toHaveLength(5); // the first sample at start is the baseline
    series.stop();
    vi.advanceTimersByTime(5000);
    expect(series.samples()).toHaveLength(5);
  });
});
