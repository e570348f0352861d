// What the sinks tell the operator, kept in memory per process: per sink the rows and deliveries
// sent, the epoch delivered last, and the errors (each failed delivery round, the last 100 per
// sink), for oxbow_catalog.sink_status and oxbow_catalog.sink_errors. Counts restart at zero with
// the process; the progress itself is durable (in the store's metadata or the target).
//
// One SinkStatus per engine, found through the engine's SourceStatus (`sinkStatusOf`), so the
// sinks need nothing new from the engine core and the system relations find it through the
// statement's SystemContext like the source relations.

import type { Epoch } from '../../sql/epoch.js';
import type { SourceStatus } from './source-status.js';

const ERRORS_PER_SINK_LIMIT = 100;

export interface SinkErrorRecord {
  readonly sinkId: number;
  readonly error: string;
  /** The delivery round's retry number (1 for the first failure in a row). */
  readonly attempt: number;
  /** Microseconds since 1970. */
  readonly atMicros: number;
}

export interface SinkCounters {
  readonly sinkId: number;
  connector: string;
  rows: number;
  deliveries: number;
  deliveredEpoch: Epoch | null;
  errors: number;
  /** The current trouble (null once a delivery succeeds again). */
  trouble: string | null;
}

export class SinkStatus {
  private readonly counters = new Map<number, SinkCounters>();
  private readonly errors = new Map<number, SinkErrorRecord[]>();

  of(sinkId: number, connector: string): SinkCounters {
    let counters = this.counters.get(sinkId);
    if (counters === undefined) this.counters.set(sinkId, (counters = { sinkId, connector, rows: 0, deliveries: 0, deliveredEpoch: null, errors: 0, trouble: null }));
    return counters;
  }

  delivered(sinkId: number, connector: string, rows: number, epoch: Epoch): void {
    const counters = this.of(sinkId, connector);
    counters.rows += rows;
    counters.deliveries++;
    counters.deliveredEpoch = epoch;
    counters.trouble = null;
  }

  failed(sinkId: number, connector: string, error: string, attempt: number): void {
    const counters = this.of(sinkId, connector);
    counters.errors++;
    counters.trouble = error;
    let list = this.errors.get(sinkId);
    if (list === undefined) this.errors.set(sinkId, (list = []));
    list.push({ sinkId, error, attempt, atMicros: Date.now() * 1000 });
    if (list.length > ERRORS_PER_SINK_LIMIT) list.splice(0, list.length - ERRORS_PER_SINK_LIMIT);
  }

  forget(sinkId: number): void {
    this.counters.delete(sinkId);
    this.errors.delete(sinkId);
  }

  counterRecords(): SinkCounters[] {
    return [...this.counters.values()];
  }

  errorRecords(): SinkErrorRecord[] {
    return [...this.errors.values()].flat();
  }
}

const statuses = new WeakMap<SourceStatus, SinkStatus>();

/** The SinkStatus of the engine whose SourceStatus this is. */
export function sinkStatusOf(sourceStatus: SourceStatus): SinkStatus {
  let status = statuses.get(sourceStatus);
  if (status === undefined) statuses.set(sourceStatus, (status = new SinkStatus()));
  return status;
}
