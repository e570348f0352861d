// What an operator wants to know about checkpoints and recovery, kept as plain numbers by the
// checkpointer and read by the system table oxbow_catalog.checkpoints and by `prometheusText()`
// (the Prometheus text exposition format, for a /metrics endpoint). One object per process.

import type { Epoch } from '../../sql/epoch.js';
import type { ObjectStoreError } from '../object-store/object-store.js';
import type { RetryPolicy } from '../object-store/retry.js';

export interface CheckpointRecord {
  readonly epoch: Epoch;
  readonly startedAtMs: number;
  readonly durationMs: number;
  /**
   * 'complete', 'failed', or 'retrying': an object-store request of the running checkpoint failed
   * or passed its deadline and is being retried (`error` says which and why; the checkpoint's own
   * row follows when it ends).
   */
  readonly status: 'complete' | 'failed' | 'retrying';
  readonly filesUploaded: number;
  readonly bytesUploaded: number;
  readonly files: number;
  readonly bytesReferenced: number;
  /**
   * Time commits were held back by the checkpoint: 0, the cut runs while commits go on (the column
   * `commit_pause_ms` of oxbow_catalog.checkpoints stays, so operators see it is 0).
   */
  readonly pauseMs: number;
  /** How long the cut took (RocksDB checkpoint: flush, fsyncs, hard links; then read back). */
  readonly cutMs: number;
  readonly error: string | null;
}

export interface RecoveryRecord {
  /** 'local': the data directory was intact; 'remote': restored from the object store; 'fresh': nothing to recover. */
  readonly source: 'local' | 'remote' | 'fresh';
  readonly durationMs: number;
  readonly epoch: Epoch | null;
  readonly bytesDownloaded: number;
  /** Damaged checkpoints skipped on the way (manifest key and why). */
  readonly skipped: readonly string[];
}

/** The checkpoint in progress: its epoch (0 during the cut), phase and start. */
export interface RunningCheckpoint {
  readonly epoch: Epoch;
  readonly phase: string;
  readonly startedAtMs: number;
}

const HISTORY_LIMIT = 50;

export class CheckpointMetrics {
  location = '';
  /** Newest first. */
  readonly history: CheckpointRecord[] = [];
  lastComplete: CheckpointRecord | undefined;
  recovery: RecoveryRecord | undefined;
  checkpointsTotal = 0;
  failuresTotal = 0;
  consecutiveFailures = 0;
  retriesTotal = 0;
  /** Object-store requests that passed their deadline (each is retried or fails its call). */
  timeoutsTotal = 0;
  running: RunningCheckpoint | undefined;
  bytesUploadedTotal = 0;
  filesDeletedTotal = 0;
  keptCheckpoints = 0;
  lastError: string | null = null;

  record(entry: CheckpointRecord): void {
    this.history.unshift(entry);
    if (this.history.length > HISTORY_LIMIT) this.history.length = HISTORY_LIMIT;
    if (entry.status === 'complete') {
      this.checkpointsTotal++;
      this.consecutiveFailures = 0;
      this.lastComplete = entry;
      this.lastError = null;
    } else {
      this.failuresTotal++;
      this.consecutiveFailures++;
      this.lastError = entry.error;
    }
    this.bytesUploadedTotal += entry.bytesUploaded;
  }

  /** The hooks that count an object store's retries and timeouts here (retry.ts's RetryPolicy). */
  retryHooks(): Pick<RetryPolicy, 'onRetry' | 'onTimeout'> {
    return {
      onRetry: (error, attempt, attempts) => this.requestRetried(error, attempt, attempts),
      onTimeout: () => this.timeoutsTotal++,
    };
  }

  /** Counts a retried request; during a checkpoint, also a 'retrying' row naming it. */
  requestRetried(error: ObjectStoreError, attempt: number, attempts: number): void {
    this.retriesTotal++;
    const running = this.running;
    if (running === undefined) return;
    this.history.unshift({
      epoch: running.epoch,
      startedAtMs: Date.now(),
      durationMs: Date.now() - running.startedAtMs,
      status: 'retrying',
      filesUploaded: 0,
      bytesUploaded: 0,
      files: 0,
      bytesReferenced: 0,
      pauseMs: 0,
      cutMs: 0,
      error: `${error.message} (attempt ${attempt} of ${attempts}, retrying; checkpoint phase ${running.phase})`,
    });
    if (this.history.length > HISTORY_LIMIT) this.history.length = HISTORY_LIMIT;
  }

  /** Prometheus text format, one sample per line. */
  prometheusText(): string {
    const last = this.lastComplete;
    const lines: string[] = [];
    const gauge = (name: string, help: string, value: number, type = 'gauge'): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${Number.isFinite(value) ? value : 0}`);
    };
    gauge('oxbow_checkpoint_last_epoch', 'Epoch of the last complete checkpoint (0: none).', last === undefined ? 0 : Number(last.epoch));
    gauge('oxbow_checkpoint_last_timestamp_seconds', 'Unix time of the last complete checkpoint.', last === undefined ? 0 : (last.startedAtMs + last.durationMs) / 1000);
    gauge('oxbow_checkpoint_last_duration_seconds', 'Duration of the last complete checkpoint.', last === undefined ? 0 : last.durationMs / 1000);
    gauge('oxbow_checkpoint_last_pause_seconds', 'Time commits waited while the last checkpoint was cut (0: the cut runs while commits go on).', last === undefined ? 0 : last.pauseMs / 1000);
    gauge('oxbow_checkpoint_last_cut_seconds', 'Time the last checkpoint took to cut the RocksDB checkpoint (flush, fsyncs, hard links).', last === undefined ? 0 : last.cutMs / 1000);
    gauge('oxbow_checkpoint_last_uploaded_bytes', 'Bytes uploaded by the last complete checkpoint.', last?.bytesUploaded ?? 0);
    gauge('oxbow_checkpoint_referenced_bytes', 'Bytes the last complete checkpoint references (its full size).', last?.bytesReferenced ?? 0);
    gauge('oxbow_checkpoint_files', 'Files the last complete checkpoint references.', last?.files ?? 0);
    gauge('oxbow_checkpoint_kept', 'Complete checkpoints kept in the object store.', this.keptCheckpoints);
    gauge('oxbow_checkpoints_total', 'Complete checkpoints since start.', this.checkpointsTotal, 'counter');
    gauge('oxbow_checkpoint_failures_total', 'Failed checkpoint attempts since start.', this.failuresTotal, 'counter');
    gauge('oxbow_checkpoint_consecutive_failures', 'Failed attempts since the last complete checkpoint.', this.consecutiveFailures);
    gauge('oxbow_checkpoint_retries_total', 'Object-store requests retried since start.', this.retriesTotal, 'counter');
    gauge('oxbow_object_store_timeouts_total', 'Object-store requests that passed their deadline (--object-store-timeout-ms) since start.', this.timeoutsTotal, 'counter');
    gauge('oxbow_checkpoint_running_seconds', 'How long the checkpoint in progress has run (0: none).', this.running === undefined ? 0 : (Date.now() - this.running.startedAtMs) / 1000);
    gauge('oxbow_checkpoint_uploaded_bytes_total', 'Bytes uploaded since start.', this.bytesUploadedTotal, 'counter');
    gauge('oxbow_checkpoint_deleted_files_total', 'Remote files deleted by retention since start.', this.filesDeletedTotal, 'counter');
    gauge('oxbow_recovery_duration_seconds', 'Time recovery took at the last start.', (this.recovery?.durationMs ?? 0) / 1000);
    gauge('oxbow_recovery_skipped_checkpoints', 'Damaged checkpoints the last start refused before the one it restored.', this.recovery?.skipped.length ?? 0);
    gauge('oxbow_recovery_from_object_store', '1 when the last start restored from the object store.', this.recovery?.source === 'remote' ? 1 : 0);
    return lines.join('\n') + '\n';
  }
}
