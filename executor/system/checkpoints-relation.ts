// The system relations of checkpoints and recovery, from the process's CheckpointMetrics
// (storage/checkpoint/checkpoint-metrics.ts) through the statement's SystemContext:
//   oxbow_catalog.checkpoints  recent checkpoint attempts, newest first: epoch, when, how long
//                              (and how long commits waited for the cut), files and bytes uploaded
//                              and referenced, status and the error of a failed attempt
//   oxbow_catalog.recovery     how the last start recovered (local directory, object store or
//                              fresh), how long it took, which epoch, checkpoints refused
// The last successful checkpoint is the first row with status 'complete'.

import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';

/** Below 16384 (system ids), clear of view_errors (13200) and the source relations (1322x). */
export const CHECKPOINTS_RELATION_ID = 13240;
export const RECOVERY_RELATION_ID = 13241;

export const checkpointsTable: SystemTable = {
  def: systemRelation(CHECKPOINTS_RELATION_ID, 'oxbow_catalog', 'checkpoints', [
    'epoch:int8',
    'started_at:timestamptz',
    'duration_ms:float8',
    'commit_pause_ms:float8',
    'status:text',
    'files:int4',
    'files_uploaded:int4',
    'bytes_uploaded:int8',
    'bytes_referenced:int8',
    'location:text',
    'error:text',
  ]),
  rows: (context) =>
    (context.checkpoints?.history ?? []).map(
      (record): Row => [
        record.epoch,
        record.startedAtMs * 1000,
        record.durationMs,
        record.pauseMs,
        record.status,
        record.files,
        record.filesUploaded,
        BigInt(record.bytesUploaded),
        BigInt(record.bytesReferenced),
        context.checkpoints!.location,
        record.error,
      ],
    ),
};

export const recoveryTable: SystemTable = {
  def: systemRelation(RECOVERY_RELATION_ID, 'oxbow_catalog', 'recovery', ['source:text', 'duration_ms:float8', 'epoch:int8', 'bytes_downloaded:int8', 'skipped_checkpoints:text']),
  rows: (context) => {
    const recovery = context.checkpoints?.recovery;
    if (recovery === undefined) return [];
    return [[recovery.source, recovery.durationMs, recovery.epoch, BigInt(recovery.bytesDownloaded), recovery.skipped.length === 0 ? null : recovery.skipped.join('\n')]];
  },
};
