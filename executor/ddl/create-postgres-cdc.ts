// The DDL side of `CREATE TABLE name (columns, PRIMARY KEY (...)) WITH (connector = 'postgres-cdc',
// ...)`: the relation is built like a Kafka connector table's (create-source.ts makes the table);
// this checks the options (22023), requires a declared primary key (42P16) and stores the options
// with the slot name defaulted from the table's schema and name. The upstream check (connection,
// table, columns, key, publication, slot) runs in ddl-statement.ts before the catalog commits
// (`checkPostgresCdc`), since it waits on the network.

import type { RelationDef } from '../../sql/catalog.js';
import type { ConnectorSpec } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { ROW_ID_COLUMN } from './create-table.js';
import { cdcOptions, checkUpstream, defaultSlotName, isPostgresCdc } from '../connectors/postgres-cdc/cdc-options.js';

export function withPostgresCdc(outcome: DdlOutcome, connector: ConnectorSpec, commandTag: string, context: DdlContext, kind: 'source' | 'table'): DdlOutcome {
  if (kind !== 'table') {
    throw new SqlError(SqlState.featureNotSupported, "CREATE SOURCE with connector = 'postgres-cdc' is not supported", {
      hint: "Declare one table per upstream table: CREATE TABLE t (..., PRIMARY KEY (...)) WITH (connector = 'postgres-cdc', ..., table.name = '...').",
    });
  }
  if (connector.format !== undefined || connector.encode !== undefined || (connector.include ?? []).length > 0) {
    throw new SqlError(SqlState.featureNotSupported, 'FORMAT, ENCODE and INCLUDE do not apply to connector "postgres-cdc"');
  }
  if (outcome.catalog === undefined) return { ...outcome, commandTag };
  const before = new Set(context.catalog.relations().map((relation) => relation.id));
  const table = outcome.catalog.relations().find((relation) => relation.kind === 'table' && !before.has(relation.id))!;
  if (table.columns.some((column) => column.name === ROW_ID_COLUMN && column.hidden)) {
    throw new SqlError(SqlState.invalidTableDefinition, 'a postgres-cdc table requires a primary key', {
      hint: "Declare the upstream table's primary key with PRIMARY KEY (...): updates and deletes find rows by it.",
    });
  }
  const options: Record<string, string> = { ...connector.options, connector: 'postgres-cdc' };
  options['slot.name'] ??= defaultSlotName(table.schema, table.name);
  cdcOptions(options);
  const draft = new CatalogDraft(outcome.catalog);
  const relation: RelationDef = { ...table, kind, options };
  draft.putRelation(relation);
  return { ...outcome, catalog: draft.finish(), commandTag };
}

/** The upstream check of every postgres-cdc table `next` adds to `current` (awaited before the commit). */
export async function checkPostgresCdc(current: CatalogSnapshot, next: CatalogSnapshot): Promise<void> {
  for (const relation of next.relations()) {
    if (relation.kind !== 'table' || !isPostgresCdc(relation) || current.relationById(relation.id) !== undefined) continue;
    await checkUpstream(cdcOptions(relation.options ?? {}), relation.columns, relation.primaryKey);
  }
}
