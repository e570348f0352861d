// The system relation oxbow_catalog.view_errors: one row per materialized view and error message
// (division by zero, a bad cast inside a running view), with how often it happened and when last.
// Rows come from the stream manager's ViewErrors through the statement's SystemContext.

import { systemRelation } from './system-columns.js';
import type { SystemTable } from './pg-catalog.js';

/** Below 16384 (system ids), clear of information_schema's 131xx. */
export const VIEW_ERRORS_RELATION_ID = 13200;

export const viewErrorsTable: SystemTable = {
  def: systemRelation(VIEW_ERRORS_RELATION_ID, 'oxbow_catalog', 'view_errors', [
    'view_id:int4',
    'view_schema:text',
    'view_name:text',
    'message:text',
    'error_count:int8',
    'last_error_at:timestamptz',
  ]),
  rows: (context) =>
    (context.viewErrors?.() ?? []).map((record) => {
      const view = context.catalog.relationById(record.viewId);
      return [record.viewId, view?.schema ?? null, view?.name ?? null, record.message, BigInt(record.count), record.lastMicros];
    }),
};
