// The system relation oxbow_catalog.time_travel: for every table and materialized view, how far
// back FOR SYSTEM_TIME can read it. `retention` is the object's own (WITH (retention = ...)) or the
// server's --time-travel-retention; `oldest_readable` is the oldest moment still readable (the
// creation of the object, or its GC watermark once versions have been collected: the last commit
// minus the retention, or older while a history hold keeps more, a sink's undelivered changes or
// a subscription's longer retention: StateStore.holdHistory) and `latest_committed` the last
// committed epoch's moment.

import { epochToMillis } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';

/** Below 16384 (system ids), clear of the other oxbow_catalog relations (132xx). */
export const TIME_TRAVEL_RELATION_ID = 13250;

const MICROS_PER_MILLI = 1000;
const MILLIS_PER_DAY = 86_400_000;

export const timeTravelTable: SystemTable = {
  def: systemRelation(TIME_TRAVEL_RELATION_ID, 'oxbow_catalog', 'time_travel', [
    'schema_name:text',
    'name:text',
    'kind:text',
    'retention:interval',
    'retention_is_default:bool',
    'oldest_readable:timestamptz',
    'latest_committed:timestamptz',
  ]),
  rows: (context) => {
    const window = context.readableWindow;
    if (window === undefined) return [];
    const rows: Row[] = [];
    for (const relation of context.catalog.relations()) {
      if (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source') continue;
      const { oldest, latest } = window(relation.id);
      const retentionMs = relation.retentionMs ?? context.defaultRetentionMs ?? 0;
      rows.push([
        relation.schema,
        relation.name,
        relation.kind === 'materialized_view' ? 'materialized view' : relation.kind,
        { months: 0, days: Math.floor(retentionMs / MILLIS_PER_DAY), micros: (retentionMs % MILLIS_PER_DAY) * MICROS_PER_MILLI },
        relation.retentionMs === undefined,
        epochToMillis(oldest) * MICROS_PER_MILLI,
        epochToMillis(latest) * MICROS_PER_MILLI,
      ]);
    }
    return rows;
  },
};
