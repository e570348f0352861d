// The dashboard's data: a ring buffer of one-second samples kept server-side (so a freshly opened
// page shows the last minutes), and the JSON of /api/dashboard and /api/series. Everything is read
// from the status API (status.ts) and the checkpoint and source metrics it holds, so the page shows
// the same figures as /api/status, /metrics and the oxbow_catalog tables.

import { lagOf } from '../connectors/source-status.js';
import type { CheckpointRecord } from '../../storage/checkpoint/checkpoint-metrics.js';
import type { EngineStatus, StatusSnapshot } from './status.js';

/** One sample: latencies are means over the interval since the previous sample (null: no barrier in it). */
export interface DashboardSample {
  readonly atMillis: number;
  readonly barriers: number;
  readonly barrierLatencyMs: number | null;
  readonly commitLatencyMs: number | null;
  /** The newest complete checkpoint at sample time (null before the first). */
  readonly checkpointEpoch: string | null;
  readonly checkpointBytes: number | null;
  readonly checkpointDurationMs: number | null;
  /** Changes into each materialized view per second (its Materialize operator's rows in), by view id. */
  readonly viewRowsPerSecond: Readonly<Record<string, number>>;
  readonly residentBytes: number;
}

export interface DashboardSeriesOptions {
  readonly intervalMs?: number;
  /** Samples kept (the default: 5 minutes at one per second). */
  readonly capacity?: number;
}

interface Totals {
  readonly atMillis: number;
  readonly barrierCount: number;
  readonly barrierSum: number;
  readonly commitCount: number;
  readonly commitSum: number;
  /** "viewId/operatorId" -> rows out; "view:viewId" -> Materialize rows in; "rel:relationId" -> input rows; "src:sourceId" -> rows its connector wrote. */
  readonly counters: Map<string, number>;
}

export class DashboardSeries {
  readonly intervalMs: number;
  readonly capacity: number;
  private readonly ring: DashboardSample[] = [];
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private previous: Totals | undefined;
  /** Rows per second over the last interval, keyed as in Totals.counters. */
  private rates = new Map<string, number>();

  constructor(
    private readonly status: EngineStatus,
    options: DashboardSeriesOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.capacity = options.capacity ?? 300;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample now (the timer calls this every interval). */
  sample(): void {
    const metrics = this.status.metrics;
    const barrier = metrics.barrierLatency.snapshot();
    const commit = metrics.commitLatency.snapshot();
    const counters = new Map<string, number>();
    for (const dataflow of this.status.dataflows()) {
      for (const operator of dataflow.operators) counters.set(`${dataflow.viewId}/${operator.operatorId}`, operator.rowsOut);
      const root = dataflow.operators[0];
      if (root !== undefined) counters.set(`view:${dataflow.viewId}`, root.rowsIn);
    }
    const throughput = this.status.throughput();
    for (const input of throughput.inputs) counters.set(`rel:${input.relationId}`, input.rows);
    for (const source of throughput.sources) counters.set(`src:${source.sourceId}`, source.rows);
    const totals: Totals = { atMillis: Date.now(), barrierCount: barrier.count, barrierSum: barrier.sumSeconds, commitCount: commit.count, commitSum: commit.sumSeconds, counters };
    const previous = this.previous;
    this.previous = totals;
    if (previous === undefined) return;
    const seconds = Math.max(1e-3, (totals.atMillis - previous.atMillis) / 1000);
    const rates = new Map<string, number>();
    for (const [key, rows] of counters) rates.set(key, Math.max(0, rows - (previous.counters.get(key) ?? 0)) / seconds);
    this.rates = rates;
    const barriers = totals.barrierCount - previous.barrierCount;
    const commits = totals.commitCount - previous.commitCount;
    const viewRowsPerSecond: Record<string, number> = {};
    for (const [key, rate] of rates) if (key.startsWith('view:')) viewRowsPerSecond[key.slice(5)] = rate;
    const last = this.status.checkpoints?.lastComplete;
    this.push({
      atMillis: totals.atMillis,
      barriers,
      barrierLatencyMs: barriers > 0 ? ((totals.barrierSum - previous.barrierSum) / barriers) * 1000 : null,
      commitLatencyMs: commits > 0 ? ((totals.commitSum - previous.commitSum) / commits) * 1000 : null,
      checkpointEpoch: last === undefined ? null : last.epoch.toString(),
      checkpointBytes: last === undefined ? null : last.bytesReferenced,
      checkpointDurationMs: last === undefined ? null : last.durationMs,
      viewRowsPerSecond,
      residentBytes: process.memoryUsage.rss(),
    });
  }

  private push(sample: DashboardSample): void {
    if (this.ring.length < this.capacity) this.ring.push(sample);
    else this.ring[this.next] = sample;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  samples(): DashboardSample[] {
    return this.ring.length < this.capacity ? [...this.ring] : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }

  /** Rows per second over the last interval: an operator's output ("viewId/operatorId"), a view's input ("view:id"), a relation's changes into dataflows ("rel:id"), a source connector's rows ("src:id"). */
  rate(key: string): number {
    return this.rates.get(key) ?? 0;
  }

  rateTable(): Record<string, number> {
    return Object.fromEntries(this.rates);
  }
}

export interface DashboardSourceInfo {
  readonly sourceId: number;
  readonly name: string;
  /** Messages in the broker not yet committed, summed over partitions (0 for a generator). */
  readonly lag: number;
  readonly partitions: number;
  readonly errors: number;
  readonly trouble: string | null;
}

export interface DashboardError {
  readonly kind: 'view' | 'source' | 'checkpoint';
  readonly object: string;
  readonly atMillis: number;
  readonly message: string;
  /** How many times (view errors are counted per view and message; others are one record each). */
  readonly count: number;
}

export interface DashboardData {
  readonly generatedAtMillis: number;
  /** Exactly what /api/status serves at this moment. */
  readonly status: StatusSnapshot;
  readonly rates: Record<string, number>;
  readonly sources: readonly DashboardSourceInfo[];
  readonly checkpoints: { readonly location: string; readonly total: number; readonly failures: number; readonly history: readonly CheckpointRecord[] } | null;
  readonly errors: readonly DashboardError[];
  readonly series: { readonly intervalMs: number; readonly capacity: number; readonly samples: readonly DashboardSample[] };
}

/**
 * The /api/dashboard document. `sinceMillis` (the page's newest sample) limits the series to newer
 * samples, so a page polling every second receives one or two samples instead of the whole history.
 */
export function dashboardData(status: EngineStatus, series: DashboardSeries, sinceMillis?: number): DashboardData {
  const sourceStatus = status.sourceStatus;
  const sources: DashboardSourceInfo[] = [];
  const errors: DashboardError[] = [];
  if (sourceStatus !== undefined) {
    const partitions = sourceStatus.partitionRecords();
    for (const sourceId of sourceStatus.sourceIds().sort((a, b) => a - b)) {
      const own = partitions.filter((partition) => partition.sourceId === sourceId);
      sources.push({
        sourceId,
        name: sourceStatus.nameOf(sourceId),
        lag: own.reduce((sum, partition) => sum + Number(lagOf(partition)), 0),
        partitions: own.length,
        errors: sourceStatus.errorCount(sourceId),
        trouble: sourceStatus.troubleOf(sourceId) ?? null,
      });
    }
    for (const record of sourceStatus.errorRecords()) errors.push({ kind: 'source', object: sourceStatus.nameOf(record.sourceId), atMillis: Math.floor(record.atMicros / 1000), message: record.error, count: 1 });
  }
  const checkpointMetrics = status.checkpoints;
  if (checkpointMetrics !== undefined) {
    for (const record of checkpointMetrics.history) {
      if (record.status === 'failed') errors.push({ kind: 'checkpoint', object: `epoch ${record.epoch}`, atMillis: record.startedAtMs, message: record.error ?? 'failed', count: 1 });
    }
  }
  const snapshot = status.snapshot();
  for (const record of status.viewErrors()) {
    const view = snapshot.objects.find((object) => object.id === record.viewId);
    errors.push({ kind: 'view', object: view === undefined ? String(record.viewId) : `${view.schema}.${view.name}`, atMillis: Math.floor(record.lastMicros / 1000), message: record.message, count: record.count });
  }
  errors.sort((a, b) => b.atMillis - a.atMillis);
  return {
    generatedAtMillis: Date.now(),
    status: snapshot,
    rates: series.rateTable(),
    sources,
    checkpoints:
      checkpointMetrics === undefined
        ? null
        : { location: checkpointMetrics.location, total: checkpointMetrics.checkpointsTotal, failures: checkpointMetrics.failuresTotal, history: checkpointMetrics.history.slice(0, 20) },
    errors: errors.slice(0, 50),
    series: { intervalMs: series.intervalMs, capacity: series.capacity, samples: sinceMillis === undefined ? series.samples() : series.samples().filter((sample) => sample.atMillis > sinceMillis) },
  };
}

/** JSON with bigints (epochs, offsets) as decimal strings. */
export function dashboardJson(data: unknown): string {
  return JSON.stringify(data, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}
