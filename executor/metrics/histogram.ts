// A Prometheus-style histogram of durations in seconds: fixed cumulative buckets, a sum and a
// count. Observing is a few comparisons and additions (no allocation), so it can sit on the commit
// path of every epoch.

/** Upper bounds in seconds: 0.1 ms to 10 s, roughly x2.5 apart. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface HistogramSnapshot {
  /** Upper bounds, ascending; the implicit last bucket is +Inf. */
  readonly buckets: readonly number[];
  /** Cumulative counts per bound (observations <= bound). */
  readonly cumulative: readonly number[];
  readonly count: number;
  readonly sumSeconds: number;
}

export class Histogram {
  private readonly counts: number[];
  private count = 0;
  private sum = 0;

  constructor(private readonly bounds: readonly number[] = LATENCY_BUCKETS_SECONDS) {
    this.counts = bounds.map(() => 0);
  }

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }

  snapshot(): HistogramSnapshot {
    let running = 0;
    const cumulative = this.counts.map((value) => (running += value));
    return { buckets: this.bounds, cumulative, count: this.count, sumSeconds: this.sum };
  }
}
