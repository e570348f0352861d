// CREATE SINK name FROM relation WITH (connector = 'kafka', topic, properties.bootstrap.server)
// FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON: the catalog side. The sink is a relation of kind
// 'sink' that depends on the relation it reads (so DROP of that relation needs CASCADE) and keeps
// the connector options; the sink manager (sink-manager.ts) delivers its committed changes.

import type { OxbowCreateSink } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { CatalogDraft } from '../catalog.js';
import type { DdlContext, DdlOutcome } from '../ddl/ddl-context.js';
import { unchanged } from '../ddl/ddl-context.js';
import { creationSchema } from '../ddl/sql-text.js';
import { kafkaOptions } from '../source/kafka/kafka-options.js';

export function createSink(statement: OxbowCreateSink, context: DdlContext): DdlOutcome {
  if (statement.from === undefined) {
    throw new SqlError(SqlState.featureNotSupported, 'CREATE SINK ... AS SELECT is not supported yet', {
      hint: 'Create a materialized view of the query and CREATE SINK ... FROM it.',
    });
  }
  const name = statement.name.relname ?? '';
  const schema = creationSchema(context, statement.name);
  if (context.catalog.relation(schema, name) !== undefined) {
    if (statement.ifNotExists) return unchanged('CREATE SINK', [{ severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` }]);
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  const fromName = statement.from.relname ?? '';
  const from = context.catalog.resolveRelation(statement.from.schemaname, fromName, context.searchPath);
  if (from === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${fromName}" does not exist`);
  if (from.kind !== 'table' && from.kind !== 'materialized_view' && from.kind !== 'source') {
    throw new SqlError(SqlState.wrongObjectType, `"${fromName}" is not a table, source or materialized view`, { hint: 'A sink reads the committed changes of a table, source or materialized view.' });
  }
  const connector = statement.connector;
  if ((connector.options['connector'] ?? '').toLowerCase() !== 'kafka') {
    throw new SqlError(SqlState.featureNotSupported, `connector "${connector.options['connector'] ?? ''}" is not supported for sinks`, { hint: "oxbow writes to Kafka: connector = 'kafka'." });
  }
  kafkaOptions(connector.options);
  const format = (connector.format ?? 'plain').toLowerCase();
  const encode = (connector.encode ?? 'json').toLowerCase();
  if (format !== 'plain' && format !== 'upsert' && format !== 'debezium') throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format.toUpperCase()} is not supported for sinks`);
  if (encode !== 'json') throw new SqlError(SqlState.featureNotSupported, `ENCODE ${encode.toUpperCase()} is not supported for sinks`, { hint: 'Sinks write ENCODE JSON.' });
  const draft = new CatalogDraft(context.catalog);
  draft.putRelation({
    id: draft.allocateId(),
    kind: 'sink',
    schema,
    name,
    columns: from.columns.filter((column) => !column.hidden),
    primaryKey: [],
    dependsOn: [from.id],
    options: { ...connector.options },
    format,
    encode,
  });
  return { catalog: draft.finish(), commandTag: 'CREATE SINK', notices: [], droppedTableIds: [] };
}
