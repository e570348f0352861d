// CREATE SUBSCRIPTION [IF NOT EXISTS] name FROM relation [WITH (retention = '1 day')] and DROP
// SUBSCRIPTION [IF EXISTS] name [, ...] (RisingWave's form): a subscription is a catalog object of
// kind 'subscription' depending on the table or materialized view it follows (so DROP of that
// relation needs CASCADE). It holds the relation's history: while it exists, versions of the
// relation newer than (each commit - retention) stay readable even when the relation's own
// retention is shorter, so SUBSCRIBE ... AS OF can resume from them. Each subscription is a
// history hold `subscription/<id>` of kind `{ retentionMs }` (`subscriptionHolds`, given to the
// store by the engine before each commit: StateStore.holdHistory); history collected before the
// subscription existed does not come back. Default retention: 1 day. Listed in oxbow_catalog.subscriptions.

import type { DefElem, Node } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { OxbowCreateSubscription, OxbowDropSubscription } from '../../sql/parser/ast.js';
import { CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import { positionOf, unchanged, type DdlContext, type DdlOutcome } from './ddl-context.js';
import { retentionOption } from './retention.js';
import { creationSchema } from './sql-text.js';

export const DEFAULT_SUBSCRIPTION_RETENTION_MS = 86_400_000;

/** The retention of `WITH (retention = ...)` through the storage parameter's own rules (retention.ts). */
function subscriptionRetention(options: Readonly<Record<string, string>>): number {
  const elements: Node[] = Object.entries(options).map(([name, value]) => {
    const arg = /^\d+$/.test(value) ? { Integer: { ival: Number(value) } } : { String: { sval: value } };
    return { DefElem: { defname: name, ...(value === '' ? {} : { arg }) } as DefElem } as Node;
  });
  return retentionOption(elements)?.retentionMs ?? DEFAULT_SUBSCRIPTION_RETENTION_MS;
}

export function createSubscription(statement: OxbowCreateSubscription, context: DdlContext): DdlOutcome {
  const name = statement.name.relname ?? '';
  const schema = creationSchema(context, statement.name);
  if (context.catalog.relation(schema, name) !== undefined) {
    if (statement.ifNotExists) return unchanged('CREATE SUBSCRIPTION', [{ severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` }]);
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`, { position: positionOf(context, statement.name.location) });
  }
  const fromName = statement.from.relname ?? '';
  const from = context.catalog.resolveRelation(statement.from.schemaname, fromName, context.searchPath);
  const position = positionOf(context, statement.from.location);
  if (from === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${fromName}" does not exist`, { position });
  if (from.kind !== 'table' && from.kind !== 'materialized_view') {
    throw new SqlError(SqlState.wrongObjectType, `"${fromName}" is not a table or materialized view`, {
      position,
      hint: 'A subscription keeps the history of a table or materialized view; for a query, create a materialized view of it first.',
    });
  }
  const retentionMs = subscriptionRetention(statement.options);
  const draft = new CatalogDraft(context.catalog);
  draft.putRelation({
    id: draft.allocateId(),
    kind: 'subscription',
    schema,
    name,
    columns: from.columns.filter((column) => !column.hidden),
    primaryKey: [],
    dependsOn: [from.id],
    retentionMs,
  });
  return { catalog: draft.finish(), commandTag: 'CREATE SUBSCRIPTION', notices: [], droppedTableIds: [] };
}

export function dropSubscription(statement: OxbowDropSubscription, context: DdlContext): DdlOutcome {
  const draft = new CatalogDraft(context.catalog);
  const notices: DdlOutcome['notices'][number][] = [];
  let changed = false;
  for (const target of statement.names) {
    const name = target.relname ?? '';
    const found = context.catalog.resolveRelation(target.schemaname, name, context.searchPath);
    if (found === undefined || found.kind !== 'subscription') {
      if (found !== undefined) throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a subscription`, { position: positionOf(context, target.location) });
      if (statement.missingOk) {
        notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `subscription "${name}" does not exist, skipping` });
        continue;
      }
      throw new SqlError(SqlState.undefinedObject, `subscription "${name}" does not exist`, { position: positionOf(context, target.location) });
    }
    draft.removeRelation(found.id);
    changed = true;
  }
  return changed ? { catalog: draft.finish(), commandTag: 'DROP SUBSCRIPTION', notices, droppedTableIds: [] } : unchanged('DROP SUBSCRIPTION', notices);
}

/** The history hold of each subscription (StateStore.holdHistory), by holder name: the relation it follows and its retention. */
export function subscriptionHolds(catalog: CatalogSnapshot): Map<string, { readonly tableId: number; readonly retentionMs: number }> {
  const holds = new Map<string, { tableId: number; retentionMs: number }>();
  for (const relation of catalog.relations()) {
    if (relation.kind !== 'subscription') continue;
    const target = relation.dependsOn[0];
    if (target === undefined) continue;
    holds.set(subscriptionHolder(relation.id), { tableId: target, retentionMs: relation.retentionMs ?? DEFAULT_SUBSCRIPTION_RETENTION_MS });
  }
  return holds;
}

/** The history holder name of a subscription (StateStore.holdHistory). */
export function subscriptionHolder(subscriptionId: number): string {
  return `subscription/${subscriptionId}`;
}

/** The relation a subscription follows. */
export function subscribedRelation(catalog: CatalogSnapshot, subscription: RelationDef): RelationDef | undefined {
  const target = subscription.dependsOn[0];
  return target === undefined ? undefined : catalog.relationById(target);
}
