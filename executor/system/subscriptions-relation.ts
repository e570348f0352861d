// The system relation oxbow_catalog.subscriptions: every subscription (CREATE SUBSCRIPTION,
// ddl/create-subscription.ts) with the relation it follows, the history it holds and the oldest
// moment of that relation still readable (where a SUBSCRIBE ... AS OF can start).

import { epochToMillis } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';

/** Below 16384 (system ids), next to oxbow_catalog.time_travel (13250). */
export const SUBSCRIPTIONS_RELATION_ID = 13251;

const MICROS_PER_MILLI = 1000;
const MILLIS_PER_DAY = 86_400_000;

export const subscriptionsTable: SystemTable = {
  def: systemRelation(SUBSCRIPTIONS_RELATION_ID, 'oxbow_catalog', 'subscriptions', [
    'schema_name:text',
    'name:text',
    'relation_schema:text',
    'relation_name:text',
    'retention:interval',
    'oldest_readable:timestamptz',
    'created_at:timestamptz',
  ]),
  rows: (context) => {
    const rows: Row[] = [];
    for (const subscription of context.catalog.relations()) {
      if (subscription.kind !== 'subscription') continue;
      const target = context.catalog.relationById(subscription.dependsOn[0] ?? -1);
      const retentionMs = subscription.retentionMs ?? 0;
      const window = target === undefined ? undefined : context.readableWindow?.(target.id);
      rows.push([
        subscription.schema,
        subscription.name,
        target?.schema ?? null,
        target?.name ?? null,
        { months: 0, days: Math.floor(retentionMs / MILLIS_PER_DAY), micros: (retentionMs % MILLIS_PER_DAY) * MICROS_PER_MILLI },
        window === undefined ? null : epochToMillis(window.oldest) * MICROS_PER_MILLI,
        subscription.createdAtMillis === undefined ? null : subscription.createdAtMillis * MICROS_PER_MILLI,
      ]);
    }
    return rows;
  },
};
