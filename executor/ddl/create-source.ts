// CREATE SOURCE and CREATE TABLE ... WITH (connector = 'kafka'): the catalog side. CREATE SOURCE
// makes a relation of kind 'source', the connector table one of kind 'table'; both keep their rows
// in a state table that the connector fills (the planner and the streaming engine read either like
// a table; DML into a source is refused by the binder): without a primary key it is append-only
// with a hidden row id; with a primary key it upserts. The relation carries the connector options, FORMAT, ENCODE and the
// INCLUDE columns; the source manager (source-manager.ts) starts a reader for it once the
// catalog is committed. Options are checked here, so a bad source fails at CREATE with 22023.

import type { ColumnDef as PgColumnDef, CreateStmt, Node } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import type { ConnectorSpec, OxbowCreateSource } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type, type DataType } from '../../sql/types.js';
import { CatalogDraft } from '../catalog/catalog.js';
import { createTable, ROW_ID_COLUMN } from './create-table.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { kafkaOptions } from '../connectors/kafka/kafka-options.js';
import { withGenerator } from './create-generator-source.js';
import { GENERATOR_CONNECTORS } from '../connectors/generators/generator-reader.js';
import { POSTGRES_CDC } from '../connectors/postgres-cdc/cdc-options.js';
import { sharedCdcSource, withPostgresCdc } from './create-postgres-cdc.js';
import { resolvedSchema } from '../connectors/source-schema.js';

const INCLUDE_TYPES: Record<string, { column: string; type: DataType }> = {
  partition: { column: '_rw_kafka_partition', type: type('int4') },
  offset: { column: '_rw_kafka_offset', type: type('int8') },
  timestamp: { column: '_rw_kafka_timestamp', type: type('timestamptz') },
  key: { column: '_rw_key', type: type('bytea') },
};

/** CREATE SOURCE name (columns) WITH (...) FORMAT ... ENCODE ... */
export function createSource(statement: OxbowCreateSource, context: DdlContext): DdlOutcome {
  const tableElts: Node[] = statement.columns.map((column: PgColumnDef) => ({ ColumnDef: column }) as Node);
  if (statement.primaryKey !== undefined && statement.primaryKey.length > 0) {
    tableElts.push({ Constraint: { contype: 'CONSTR_PRIMARY', keys: statement.primaryKey.map((name) => ({ String: { sval: name } })) } } as Node);
  }
  const body: CreateStmt = { relation: statement.relation, tableElts, if_not_exists: statement.ifNotExists };
  if (statement.watermark !== undefined) (body as CreateStmt & { oxbowWatermark?: unknown }).oxbowWatermark = statement.watermark;
  return withConnector(createTable(body, context), statement.connector, 'CREATE SOURCE', context, 'source');
}

/** CREATE TABLE name (columns) WITH (connector = ...) FORMAT ... ENCODE ... */
export function createConnectorTable(statement: CreateStmt, connector: ConnectorSpec, context: DdlContext): DdlOutcome {
  const plain = { ...statement } as CreateStmt & { oxbowConnector?: unknown };
  delete plain.oxbowConnector;
  if (connector.fromSource !== undefined) {
    const shared = sharedCdcSource(connector, context);
    return withPostgresCdc(createTable(plain, context), shared.connector, 'CREATE TABLE', context, 'table', shared.source);
  }
  return withConnector(createTable(plain, context), connector, 'CREATE TABLE', context, 'table');
}

function withConnector(outcome: DdlOutcome, connector: ConnectorSpec, commandTag: string, context: DdlContext, kind: 'source' | 'table'): DdlOutcome {
  const connectorName = (connector.options['connector'] ?? '').toLowerCase();
  if (GENERATOR_CONNECTORS.has(connectorName)) return withGenerator(outcome, connector, commandTag, context, { kind });
  if (connectorName === POSTGRES_CDC) return withPostgresCdc(outcome, connector, commandTag, context, kind);
  if (connectorName !== 'kafka') {
    throw new SqlError(
      SqlState.featureNotSupported,
      connectorName === '' ? 'the WITH option "connector" is required' : `connector "${connectorName}" is not supported`,
      { hint: "oxbow reads Kafka (connector = 'kafka'), PostgreSQL tables (connector = 'postgres-cdc') and generates rows (connector = 'nexmark' or 'datagen')." },
    );
  }
  kafkaOptions(connector.options);
  const format = (connector.format ?? 'plain').toLowerCase();
  const encode = (connector.encode ?? 'json').toLowerCase();
  if (format !== 'plain' && format !== 'upsert' && format !== 'debezium') {
    throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format.toUpperCase()} is not supported`, { hint: 'Use FORMAT PLAIN, UPSERT or DEBEZIUM.' });
  }
  if (encode !== 'json' && encode !== 'csv' && encode !== 'avro' && encode !== 'protobuf') {
    throw new SqlError(SqlState.featureNotSupported, `ENCODE ${encode.toUpperCase()} is not supported`, { hint: 'Use ENCODE JSON, CSV, AVRO or PROTOBUF.' });
  }
  // ENCODE AVRO / PROTOBUF: the schema fetched before this handler (connectors/source-schema.ts).
  const schema = encode === 'avro' || encode === 'protobuf' ? resolvedSchema(connector) : undefined;
  if ((encode === 'avro' || encode === 'protobuf') && schema === undefined) throw new SqlError(SqlState.internalError, `ENCODE ${encode.toUpperCase()} without a resolved schema`);
  if (encode === 'csv' && format !== 'plain') throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format.toUpperCase()} ENCODE CSV is not supported`, { hint: 'CSV goes with FORMAT PLAIN.' });
  const delimiter = connector.encodeOptions?.['delimiter'];
  if (delimiter !== undefined && delimiter.length !== 1) throw new SqlError(SqlState.invalidParameterValue, 'the CSV delimiter must be one character');
  if (outcome.catalog === undefined) return { ...outcome, commandTag };
  const before = new Set(context.catalog.relations().map((relation) => relation.id));
  const table = outcome.catalog.relations().find((relation) => relation.kind === 'table' && !before.has(relation.id))!;
  const hasRowId = table.columns[table.columns.length - 1]?.name === ROW_ID_COLUMN && table.columns[table.columns.length - 1]!.hidden;
  if (format !== 'plain' && hasRowId) {
    throw new SqlError(SqlState.invalidTableDefinition, `FORMAT ${format.toUpperCase()} requires a primary key`, {
      hint: 'Declare the key columns with PRIMARY KEY (...): upserts and deletes find rows by it.',
    });
  }
  let declared = hasRowId ? table.columns.slice(0, -1) : [...table.columns];
  if (schema !== undefined) {
    // No column list: the schema's columns; else the declared columns must be readable from it.
    if (declared.length === 0) declared = schema.columns.map((column) => ({ name: column.name, type: column.type, nullable: column.nullable, hidden: false }));
    else schema.check(declared);
  }
  const include: { what: string; column: string }[] = [];
  for (const item of connector.include ?? []) {
    const what = item.what.toLowerCase();
    const spec = INCLUDE_TYPES[what];
    if (spec === undefined) throw new SqlError(SqlState.featureNotSupported, `INCLUDE ${item.what} is not supported`, { hint: 'Kafka sources include partition, offset, timestamp or key.' });
    const column = item.alias ?? spec.column;
    if (declared.some((existing) => existing.name === column)) throw new SqlError(SqlState.duplicateColumn, `column "${column}" specified more than once`);
    declared.push({ name: column, type: spec.type, nullable: true, hidden: false });
    include.push({ what, column });
  }
  const columns: ColumnDef[] = hasRowId ? [...declared, table.columns[table.columns.length - 1]!] : declared;
  const primaryKey = hasRowId ? [columns.length - 1] : table.primaryKey;
  const options: Record<string, string> = { ...connector.options };
  if (delimiter !== undefined) options['encode.delimiter'] = delimiter;
  if (schema !== undefined) Object.assign(options, schema.options);
  const draft = new CatalogDraft(outcome.catalog);
  // An append-only source stores no rows: it commits its offsets, and reads replay the topic
  // (kafka/kafka-replay.ts). Upsert/Debezium sources and connector tables keep their table.
  // Avro and Protobuf sources store their rows (a replay would need the registry at every read).
  const replayed = kind === 'source' && format === 'plain' && hasRowId && (encode === 'json' || encode === 'csv');
  const relation: RelationDef = { ...table, kind, columns, primaryKey, options, format, encode, include, ...(replayed ? { replayed: true } : {}) };
  draft.putRelation(relation);
  return { ...outcome, catalog: draft.finish(), commandTag };
}
