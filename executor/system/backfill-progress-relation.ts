// The system relation oxbow_catalog.backfill_progress: one row per running backfill of a new
// materialized view or sink, and the last finished ones (view, the input relation being read, rows
// done, rows total estimate, start time, state running / done / failed). Rows come from the stream
// manager's BackfillProgress through the statement's SystemContext.

import { systemRelation } from './system-columns.js';
import type { SystemTable } from './pg-catalog.js';

/** Below 16384 (system ids), clear of the other oxbow_catalog relations (132xx, 133xx). */
export const BACKFILL_PROGRESS_RELATION_ID = 13260;

export const backfillProgressTable: SystemTable = {
  def: systemRelation(BACKFILL_PROGRESS_RELATION_ID, 'oxbow_catalog', 'backfill_progress', [
    'view_id:int4',
    'view_schema:text',
    'view_name:text',
    'relation_name:text',
    'rows_done:int8',
    'rows_total_estimate:int8',
    'started_at:timestamptz',
    'state:text',
  ]),
  rows: (context) =>
    (context.backfills?.() ?? []).map((record) => [
      record.viewId,
      record.schema,
      record.name,
      record.relation,
      BigInt(record.rowsDone),
      BigInt(record.rowsTotal),
      record.startedMicros,
      record.state,
    ]),
};
