// The readable window of one state table and the record that persists it: when the table first
// committed, how far its history has been garbage-collected (the retention watermark), and its
// retention. Reads AS OF an epoch outside [oldest, latest] fail with SQLSTATE 72000 and the window
// in the message; versions() fails only when the history it asks for was collected.

import { SqlError, SqlState } from '../sql/errors.js';
import { epochFromMillis, epochToMillis, type Epoch } from '../sql/epoch.js';

export interface TableRecord {
  /** The epoch of the table's first commit; null until then. */
  createdEpoch: Epoch | null;
  /** Versions shadowed at or below this epoch may be gone: reads below it are refused. */
  gcWatermark: Epoch;
  /** Retention in milliseconds; undefined: the store default. */
  retentionMs: number | undefined;
}

const RECORD_BYTES = 8 + 8 + 8;

export function encodeTableRecord(record: TableRecord): Buffer {
  const bytes = Buffer.alloc(RECORD_BYTES);
  bytes.writeBigUInt64BE(record.createdEpoch ?? 0n, 0);
  bytes.writeBigUInt64BE(record.gcWatermark, 8);
  bytes.writeDoubleBE(record.retentionMs ?? -1, 16);
  return bytes;
}

export function decodeTableRecord(bytes: Buffer): TableRecord {
  const created = bytes.readBigUInt64BE(0);
  const retention = bytes.readDoubleBE(16);
  return { createdEpoch: created === 0n ? null : created, gcWatermark: bytes.readBigUInt64BE(8), retentionMs: retention < 0 ? undefined : retention };
}

/** The watermark after committing `epoch`: `retentionMs` of epoch time back, never moving backwards. */
export function advanceWatermark(current: Epoch, epoch: Epoch, retentionMs: number): Epoch {
  const millis = epochToMillis(epoch) - retentionMs;
  if (millis <= 0) return current;
  const candidate = epochFromMillis(millis);
  return candidate > current ? candidate : current;
}

export function describeEpoch(epoch: Epoch): string {
  const millis = epochToMillis(epoch);
  const date = new Date(millis);
  return Number.isNaN(date.getTime()) ? `epoch ${epoch}` : date.toISOString().replace('T', ' ').replace('Z', '+00');
}

export function windowError(tableId: number, requested: Epoch, oldest: Epoch, latest: Epoch, what: string): SqlError {
  return new SqlError(
    SqlState.snapshotTooOld,
    `${what} ${describeEpoch(requested)} is outside the readable window of table ${tableId}: from ${describeEpoch(oldest)} to ${describeEpoch(latest)}`,
    {
      detail: `requested epoch ${requested}; readable epochs ${oldest} to ${latest}`,
      hint: 'history older than the retention period is garbage-collected; raise the retention with WITH (retention = ...) or --time-travel-retention',
    },
  );
}
