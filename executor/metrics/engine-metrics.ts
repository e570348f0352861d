// The process's engine figures that are not already kept elsewhere: the latency histograms of the
// epoch protocol (barrier: the epoch's changes through every dataflow and the atomic commit; epoch
// commit: the atomic write alone), statements run, the sessions that are open (pg_stat_activity,
// oxbow_catalog.sessions) and the event loop delay. One object per engine; the CLI creates it and
// hands it to the engine (EngineSettings.metrics) so that /metrics and the engine share it.

import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Histogram } from './histogram.js';
import type { EngineStatus } from './status.js';
import type { ConnectionSsl } from '../system/ssl-functions.js';

/** What one open session says about itself (pg_stat_activity's columns). */
export interface SessionActivity {
  readonly pid: number;
  readonly user: string;
  readonly database: string;
  readonly applicationName: string;
  readonly clientAddress: string | null;
  readonly clientPort: number | null;
  readonly backendStartMillis: number;
  /** 'active' while a statement runs, else 'idle', 'idle in transaction' or 'idle in transaction (aborted)'. */
  readonly state: string;
  /** The statement running, or the last one run (PostgreSQL shows the last query of an idle session). */
  readonly query: string;
  readonly queryStartMillis: number | null;
  readonly stateChangeMillis: number;
  /** The connection's TLS (pg_stat_ssl); null over a plaintext connection. */
  readonly ssl: ConnectionSsl | null;
}

export interface ActivitySource {
  activity(): SessionActivity;
}

export class EngineMetrics {
  /** Seconds from the start of an epoch's commit (dataflows run) to the end of its atomic write. */
  readonly barrierLatency = new Histogram();
  /** Seconds of the atomic write of an epoch into the store. */
  readonly commitLatency = new Histogram();
  /** Epochs whose write is durable (committed) since start. */
  epochsCommitted = 0;
  /**
   * Epochs sealed since start: their changes ran through every dataflow and their write was
   * started (a synchronous commit seals and commits at once). Sealed minus committed minus failed
   * is the number in flight (written off the main thread, not yet durable).
   */
  epochsSealed = 0;
  /** Sealed epochs whose write failed (the store then refuses further commits). */
  epochsFailed = 0;
  /** Per source (relation id): rows (inserts and deletes) its connector wrote into epochs since start. */
  readonly sourceRows = new Map<number, number>();
  statementsTotal = 0;
  statementErrorsTotal = 0;
  readonly sessions = new Set<ActivitySource>();
  /** The status API of the engine using these metrics (set by the engine when it opens). */
  status: EngineStatus | undefined;
  private loopDelay: IntervalHistogram | undefined;

  /** Epochs sealed whose write has not finished yet. */
  get epochsInFlight(): number {
    return this.epochsSealed - this.epochsCommitted - this.epochsFailed;
  }

  /** Starts sampling the event loop delay (20 ms resolution); idempotent. */
  startEventLoopMonitor(): void {
    if (this.loopDelay !== undefined) return;
    this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
    this.loopDelay.enable();
  }

  stopEventLoopMonitor(): void {
    this.loopDelay?.disable();
  }

  /** Event loop delay in seconds since start (mean, p99, max); zeros when not sampled. */
  eventLoopDelay(): { readonly meanSeconds: number; readonly p99Seconds: number; readonly maxSeconds: number } {
    const histogram = this.loopDelay;
    if (histogram === undefined || histogram.count === 0) return { meanSeconds: 0, p99Seconds: 0, maxSeconds: 0 };
    return { meanSeconds: histogram.mean / 1e9, p99Seconds: histogram.percentile(99) / 1e9, maxSeconds: histogram.max / 1e9 };
  }

  activities(): SessionActivity[] {
    return [...this.sessions].map((session) => session.activity()).sort((a, b) => a.pid - b.pid);
  }
}
