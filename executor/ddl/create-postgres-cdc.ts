// The DDL side of `CREATE TABLE name (columns, PRIMARY KEY (...)) WITH (connector = 'postgres-cdc',
// ...)` and of RisingWave's shared form, `CREATE SOURCE pg WITH (connector = 'postgres-cdc', ...)`
// (the connection options, no columns, no reader) then `CREATE TABLE name (...) FROM pg TABLE
// 'schema.table'` (the source's options, a dependency on it): the relation is built like a Kafka
// connector table's (create-source.ts makes the table); this checks the options (22023), requires
// a declared primary key (42P16) and stores the options with the slot name defaulted from the
// table's schema and name (shared form: the source's slot.name or name, then the table's name). The upstream check (connection,
// table, columns, key, publication, slot) runs in ddl-statement.ts before the catalog commits
// (`checkPostgresCdc`), since it waits on the network.

import type { RelationDef } from '../../sql/catalog.js';
import type { CreateStmt } from '@pgsql/types';
import type { ConnectorSpec, ParsedStatement } from '../../sql/parser/ast.js';
import { parse } from '../../sql/parser/index.js';
import { quoteIdent } from '../connectors/postgres-cdc/pg-client.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { ROW_ID_COLUMN } from './create-table.js';
import { cdcOptions, checkServer, checkUpstream, defaultSlotName, isPostgresCdc, POSTGRES_CDC, upstreamColumns } from '../connectors/postgres-cdc/cdc-options.js';

export function withPostgresCdc(outcome: DdlOutcome, connector: ConnectorSpec, commandTag: string, context: DdlContext, kind: 'source' | 'table', shared?: RelationDef): DdlOutcome {
  if (connector.format !== undefined || connector.encode !== undefined || (connector.include ?? []).length > 0) {
    throw new SqlError(SqlState.featureNotSupported, 'FORMAT, ENCODE and INCLUDE do not apply to connector "postgres-cdc"');
  }
  if (outcome.catalog === undefined) return { ...outcome, commandTag };
  const before = new Set(context.catalog.relations().map((relation) => relation.id));
  const table = outcome.catalog.relations().find((relation) => relation.kind === 'table' && !before.has(relation.id))!;
  const keyless = table.columns.some((column) => column.name === ROW_ID_COLUMN && column.hidden);
  if (kind === 'source') {
    // A shared source: the connection options its tables (FROM source TABLE '...') take; no reader of its own.
    if (table.columns.length > 1 || !keyless) {
      throw new SqlError(SqlState.featureNotSupported, 'a postgres-cdc source has no columns of its own', {
        hint: "Declare the columns on each table: CREATE TABLE t (..., PRIMARY KEY (...)) FROM source TABLE 'schema.table'.",
      });
    }
    const options: Record<string, string> = { ...connector.options, connector: 'postgres-cdc' };
    cdcOptions({ ...options, 'table.name': options['table.name'] ?? '-', 'slot.name': options['slot.name'] ?? '-' });
    const draft = new CatalogDraft(outcome.catalog);
    draft.putRelation({ ...table, kind, options });
    return { ...outcome, catalog: draft.finish(), commandTag };
  }
  if (keyless) {
    throw new SqlError(SqlState.invalidTableDefinition, 'a postgres-cdc table requires a primary key', {
      hint: "Declare the upstream table's primary key with PRIMARY KEY (...): updates and deletes find rows by it.",
    });
  }
  const options: Record<string, string> = { ...connector.options, connector: 'postgres-cdc' };
  if (shared !== undefined) {
    // The shared source's options, its slot name (default: from the source's name) suffixed with the table's.
    const base = shared.options?.['slot.name'] ?? defaultSlotName(shared.schema, shared.name);
    Object.assign(options, shared.options, connector.options);
    options['slot.name'] = defaultSlotName('', `${base}_${table.name}`).replace(/^oxbow__/, '');
  }
  options['slot.name'] ??= defaultSlotName(table.schema, table.name);
  cdcOptions(options);
  const draft = new CatalogDraft(outcome.catalog);
  const relation: RelationDef = { ...table, kind, options, ...(shared !== undefined ? { dependsOn: [...table.dependsOn, shared.id] } : {}) };
  draft.putRelation(relation);
  return { ...outcome, catalog: draft.finish(), commandTag };
}

/** `CREATE TABLE t (...) FROM source TABLE 'schema.table'`: the shared postgres-cdc source and the connector it implies. */
export function sharedCdcSource(connector: ConnectorSpec, context: DdlContext): { source: RelationDef; connector: ConnectorSpec } {
  const from = connector.fromSource!;
  const source = context.catalog.resolveRelation(undefined, from.source, context.searchPath);
  if (source === undefined || source.kind !== 'source') throw new SqlError(SqlState.undefinedObject, `source "${from.source}" does not exist`);
  if (!isPostgresCdc(source)) throw new SqlError(SqlState.featureNotSupported, `source "${from.source}" is not a postgres-cdc source`, { hint: 'FROM source TABLE reads a shared CDC source.' });
  const dot = from.table.indexOf('.');
  const schema = dot < 0 ? 'public' : from.table.slice(0, dot);
  const table = dot < 0 ? from.table : from.table.slice(dot + 1);
  if (table === '' || schema === '') throw new SqlError(SqlState.invalidParameterValue, `invalid upstream table name "${from.table}"`, { hint: "Name it as 'schema.table'." });
  return { source, connector: { ...connector, options: { ...connector.options, 'schema.name': schema, 'table.name': table } } };
}

/** The upstream check of every postgres-cdc table and source `next` adds to `current` (awaited before the commit). */
export async function checkPostgresCdc(current: CatalogSnapshot, next: CatalogSnapshot): Promise<void> {
  for (const relation of next.relations()) {
    if (!isPostgresCdc(relation) || current.relationById(relation.id) !== undefined) continue;
    if (relation.kind === 'table') await checkUpstream(cdcOptions(relation.options ?? {}), relation.columns, relation.primaryKey);
    else if (relation.kind === 'source') await checkServer(cdcOptions({ ...relation.options, 'table.name': '-', 'slot.name': '-' }).connect);
  }
}

/**
 * A postgres-cdc CREATE TABLE without a column list takes the upstream table's columns and primary
 * key (read before the DDL runs; the upstream types as PostgreSQL names them). Any other statement
 * is returned as it is.
 */
export async function withUpstreamColumns(parsed: ParsedStatement, context: DdlContext): Promise<ParsedStatement> {
  const create = (parsed.node as { CreateStmt?: CreateStmt & { oxbowConnector?: ConnectorSpec } }).CreateStmt;
  const connector = create?.oxbowConnector;
  if (create === undefined || connector === undefined || (create.tableElts?.length ?? 0) > 0) return parsed;
  let options: Record<string, string>;
  if (connector.fromSource !== undefined) {
    const shared = sharedCdcSource(connector, context);
    options = { ...shared.source.options, ...shared.connector.options };
  } else if ((connector.options['connector'] ?? '').toLowerCase() === POSTGRES_CDC) options = { ...connector.options };
  else return parsed;
  const columns = await upstreamColumns(cdcOptions({ ...options, 'slot.name': options['slot.name'] ?? '-' }));
  const keys = columns.filter((column) => column.key).map((column) => quoteIdent(column.name));
  const definitions = columns.map((column) => `${quoteIdent(column.name)} ${column.type}`);
  if (keys.length > 0) definitions.push(`PRIMARY KEY (${keys.join(', ')})`);
  const generated = parse(`CREATE TABLE upstream (${definitions.join(', ')})`)[0]!;
  const tableElts = (generated.node as { CreateStmt: CreateStmt }).CreateStmt.tableElts;
  return { ...parsed, node: { CreateStmt: { ...create, tableElts } } as ParsedStatement['node'] };
}
