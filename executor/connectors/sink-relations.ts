// The system relations oxbow_catalog.sink_status (per sink: connector, rows and deliveries sent
// by this process, the epoch delivered last, errors, the current trouble) and
// oxbow_catalog.sink_errors (each failed delivery round: sink, error, attempt, time). Rows come
// from the engine's SinkStatus, found through the statement's SourceStatus.

import { systemRelation } from '../system/system-columns.js';
import type { SystemTable } from '../system/pg-catalog.js';
import type { SourceSystemContext } from './source-relations.js';
import { sinkStatusOf } from './sink-status.js';

/** Next to source_errors (13220) and source_partitions (13221). */
export const SINK_STATUS_RELATION_ID = 13222;
export const SINK_ERRORS_RELATION_ID = 13223;

export const sinkStatusTable: SystemTable<SourceSystemContext> = {
  def: systemRelation(SINK_STATUS_RELATION_ID, 'oxbow_catalog', 'sink_status', [
    'sink_id:int4',
    'sink_schema:text',
    'sink_name:text',
    'connector:text',
    'rows_delivered:int8',
    'deliveries:int8',
    'delivered_epoch:int8',
    'errors:int8',
    'trouble:text',
  ]),
  rows: (context) => {
    if (context.sourceStatus === undefined) return [];
    return sinkStatusOf(context.sourceStatus)
      .counterRecords()
      .flatMap((counters) => {
        const sink = context.catalog.relationById(counters.sinkId);
        if (sink === undefined) return [];
        return [[counters.sinkId, sink.schema, sink.name, counters.connector, BigInt(counters.rows), BigInt(counters.deliveries), counters.deliveredEpoch, BigInt(counters.errors), counters.trouble]];
      });
  },
};

export const sinkErrorsTable: SystemTable<SourceSystemContext> = {
  def: systemRelation(SINK_ERRORS_RELATION_ID, 'oxbow_catalog', 'sink_errors', ['sink_id:int4', 'sink_schema:text', 'sink_name:text', 'error:text', 'attempt:int4', 'error_at:timestamptz']),
  rows: (context) => {
    if (context.sourceStatus === undefined) return [];
    return sinkStatusOf(context.sourceStatus)
      .errorRecords()
      .map((record) => {
        const sink = context.catalog.relationById(record.sinkId);
        return [record.sinkId, sink?.schema ?? null, sink?.name ?? null, record.error, record.attempt, record.atMicros];
      });
  },
};

export const sinkRelationTables: readonly SystemTable<SourceSystemContext>[] = [sinkStatusTable, sinkErrorsTable];
