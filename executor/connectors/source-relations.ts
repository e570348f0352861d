// The system relations oxbow_catalog.source_errors (every rejected message and connection trouble:
// source, partition_id, message_offset, error, payload prefix) and oxbow_catalog.source_partitions (per
// partition: the committed offset, the high watermark, the lag, messages and errors). Rows come
// from the SourceStatus of the engine through the statement's SystemContext.

import { systemRelation } from '../system/system-columns.js';
import type { SystemTable } from '../system/pg-catalog.js';
import type { SystemContext } from '../system/system-context.js';
import { lagOf, type SourceStatus } from './source-status.js';

/** What the source relations read besides the catalog: the engine's SourceStatus. */
export interface SourceSystemContext extends SystemContext {
  /** Sources' rejected messages and partition offsets. */
  readonly sourceStatus?: SourceStatus;
}

/** Below 16384 (system ids), clear of view_errors (13200). */
export const SOURCE_ERRORS_RELATION_ID = 13220;
export const SOURCE_PARTITIONS_RELATION_ID = 13221;

export const sourceErrorsTable: SystemTable<SourceSystemContext> = {
  def: systemRelation(SOURCE_ERRORS_RELATION_ID, 'oxbow_catalog', 'source_errors', [
    'source_id:int4',
    'source_schema:text',
    'source_name:text',
    'partition_id:int4',
    'message_offset:int8',
    'error:text',
    'payload:text',
    'error_at:timestamptz',
  ]),
  rows: (context) =>
    (context.sourceStatus?.errorRecords() ?? []).map((record) => {
      const source = context.catalog.relationById(record.sourceId);
      return [record.sourceId, source?.schema ?? null, source?.name ?? null, record.partition, record.offset, record.error, record.payload, record.atMicros];
    }),
};

export const sourcePartitionsTable: SystemTable<SourceSystemContext> = {
  def: systemRelation(SOURCE_PARTITIONS_RELATION_ID, 'oxbow_catalog', 'source_partitions', [
    'source_id:int4',
    'source_schema:text',
    'source_name:text',
    'topic:text',
    'partition_id:int4',
    'committed_offset:int8',
    'high_watermark:int8',
    'lag:int8',
    'messages:int8',
    'errors:int8',
  ]),
  rows: (context) =>
    (context.sourceStatus?.partitionRecords() ?? []).map((status) => {
      const source = context.catalog.relationById(status.sourceId);
      return [
        status.sourceId,
        source?.schema ?? null,
        source?.name ?? null,
        status.topic === '' ? (source?.options?.['topic'] ?? null) : status.topic,
        status.partition,
        status.committedOffset < 0n ? null : status.committedOffset,
        status.highWatermark < 0n ? null : status.highWatermark,
        lagOf(status),
        BigInt(status.messages),
        BigInt(status.errors),
      ];
    }),
};

/** The relations the connectors register with the engine's system relations. */
export const sourceRelationTables: readonly SystemTable<SourceSystemContext>[] = [sourceErrorsTable, sourcePartitionsTable];
