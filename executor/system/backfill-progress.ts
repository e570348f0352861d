// Backfill progress of CREATE MATERIALIZED VIEW (and CREATE SINK ... AS): one record per backfill,
// updated as the snapshot of each input relation is pushed through the new view's dataflow, read by
// oxbow_catalog.backfill_progress (backfill-progress-relation.ts) and by the NOTICEs the creating
// session receives every few seconds. In memory: running backfills and the last finished ones.

export type BackfillState = 'running' | 'done' | 'failed';

export interface BackfillRecord {
  readonly viewId: number;
  readonly schema: string;
  readonly name: string;
  /** What is being backfilled, as the NOTICE names it. */
  readonly kind: 'materialized view' | 'sink';
  /** The input relation being read now (the last one once done). */
  relation: string;
  rowsDone: number;
  /** Rows of all inputs, estimated from the state store's key counts before the backfill starts. */
  rowsTotal: number;
  /** Microseconds since 1970 (timestamptz). */
  readonly startedMicros: number;
  state: BackfillState;
}

/** Finished backfills kept for the system table. */
const FINISHED_KEPT = 20;

export class BackfillProgress {
  private readonly running = new Set<BackfillRecord>();
  private readonly finished: BackfillRecord[] = [];

  start(viewId: number, schema: string, name: string, rowsTotal: number, kind: BackfillRecord['kind'] = 'materialized view'): BackfillRecord {
    const record: BackfillRecord = { viewId, schema, name, kind, relation: '', rowsDone: 0, rowsTotal, startedMicros: Date.now() * 1000, state: 'running' };
    this.running.add(record);
    return record;
  }

  finish(record: BackfillRecord, state: 'done' | 'failed'): void {
    record.state = state;
    if (state === 'done') record.rowsTotal = record.rowsDone;
    this.running.delete(record);
    this.finished.push(record);
    if (this.finished.length > FINISHED_KEPT) this.finished.shift();
  }

  /** Running backfills first, then the finished ones, oldest first. */
  records(): readonly BackfillRecord[] {
    return [...this.running, ...this.finished];
  }
}

/** The NOTICE text of a running backfill. */
export function backfillNotice(record: BackfillRecord): string {
  const total = Math.max(record.rowsTotal, record.rowsDone);
  const percent = total === 0 ? 100 : Math.floor((record.rowsDone * 100) / total);
  return `backfilling ${record.kind} "${record.name}": ${record.rowsDone} of about ${total} rows (${percent}%), reading "${record.relation}"`;
}
