// CREATE SINK name FROM relation | AS query WITH (connector = 'kafka', topic,
// properties.bootstrap.server[, primary_key = 'a,b']) FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON,
// or WITH (connector = 'postgres' | 'jdbc', ...) or WITH (connector = 'blackhole') without FORMAT:
// the catalog side (primary_key names are checked here: 42703 unknown, 42701 repeated, 22023 empty;
// a PostgreSQL target is checked by sink-target-check.ts before the DDL commits).
//
// FROM: the sink is a relation of kind 'sink' that depends on the relation it reads (so DROP of
// that relation needs CASCADE) and keeps the connector options. AS query (RisingWave's form): the
// sink owns a dataflow like a materialized view's (executor/ddl/create-materialized-view.ts,
// planned, backfilled and committed in one epoch, rebuilt at restart), its rows are the sink's own
// state table, and it is not visible as a view. Either way the sink manager (sink-manager.ts)
// delivers the committed changes.

import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import type { OxbowCreateSink } from '../../sql/parser/ast.js';
import type { CreateTableAsStmt } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlannerContext } from '../../planner/index.js';
import { CatalogDraft } from '../catalog/catalog.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { unchanged } from './ddl-context.js';
import { creationSchema } from './sql-text.js';
import type { DdlHost } from './ddl-host.js';
import { kafkaOptions } from '../connectors/kafka/kafka-options.js';
import { isPostgresSink, postgresSinkOptions } from '../connectors/postgres/postgres-options.js';
import { prepareSinkTarget } from './sink-target-check.js';
import { sinkKeyPositions } from '../connectors/sink-key.js';
import { createMaterializedViewInChunks, type BackfillReporting, type CreateViewOutcome } from './create-materialized-view.js';

/** The connector fields of a sink, checked: 0A000 for other connectors/formats/encodings, 22023 bad options. */
function sinkConnector(statement: OxbowCreateSink): Pick<RelationDef, 'options' | 'format' | 'encode'> {
  const connector = statement.connector;
  const name = (connector.options['connector'] ?? '').toLowerCase();
  if (name === 'blackhole' || isPostgresSink(connector.options)) {
    // Rows, not messages: no FORMAT (PostgreSQL's type = 'upsert' | 'append-only' says how).
    if (connector.format !== undefined || connector.encode !== undefined) {
      throw new SqlError(SqlState.featureNotSupported, `FORMAT ... ENCODE is not supported for ${name} sinks`, { hint: name === 'blackhole' ? 'Leave it out.' : "A PostgreSQL sink writes rows: type = 'upsert' or 'append-only'." });
    }
    if (name !== 'blackhole') postgresSinkOptions(connector.options);
    return { options: { ...connector.options } };
  }
  if (name !== 'kafka') {
    throw new SqlError(SqlState.featureNotSupported, `connector "${connector.options['connector'] ?? ''}" is not supported for sinks`, { hint: "oxbow writes to connector = 'kafka', 'postgres' (or 'jdbc' with a jdbc:postgresql:// URL) and 'blackhole'." });
  }
  kafkaOptions(connector.options);
  const format = (connector.format ?? 'plain').toLowerCase();
  const encode = (connector.encode ?? 'json').toLowerCase();
  if (format !== 'plain' && format !== 'upsert' && format !== 'debezium') throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format.toUpperCase()} is not supported for sinks`);
  if (encode === 'avro') {
    // The schema is registered under <topic>-value before the first delivery (connectors/avro/avro-encoder.ts).
    const registry = connector.encodeOptions?.['schema.registry'];
    if (registry === undefined) throw new SqlError(SqlState.invalidParameterValue, "ENCODE AVRO needs schema.registry = 'http://host:port'");
    if (format !== 'plain') throw new SqlError(SqlState.featureNotSupported, `FORMAT ${format.toUpperCase()} ENCODE AVRO is not supported for sinks`, { hint: 'Avro sinks write FORMAT PLAIN.' });
    const options: Record<string, string> = { ...connector.options };
    for (const [name, value] of Object.entries(connector.encodeOptions ?? {})) if (name.startsWith('schema.registry')) options[`encode.${name}`] = value;
    return { options, format, encode };
  }
  if (encode !== 'json') throw new SqlError(SqlState.featureNotSupported, `ENCODE ${encode.toUpperCase()} is not supported for sinks`, { hint: 'Sinks write ENCODE JSON or AVRO.' });
  return { options: { ...connector.options }, format, encode };
}

/** CREATE SINK ... FROM relation. */
export function createSink(statement: OxbowCreateSink, context: DdlContext): DdlOutcome {
  if (statement.from === undefined) throw new SqlError(SqlState.internalError, 'CREATE SINK ... AS query runs through createSinkAs');
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
    throw new SqlError(SqlState.wrongObjectType, `"${fromName}" is not a table, source or materialized view`, {
      hint: 'A sink reads the committed changes of a table, source or materialized view; for a view, use CREATE SINK ... AS SELECT.',
    });
  }
  if (from.kind === 'source' && from.replayed === true) {
    // Its state table holds positions, not the changes a FROM sink reads (executor/connectors/source-replay.ts).
    throw new SqlError(SqlState.featureNotSupported, `cannot sink from source "${fromName}": it stores no rows`, {
      hint:
        (from.options?.['connector'] ?? '').toLowerCase() === 'kafka'
          ? `A Kafka source without a primary key is replayed from its topic, not stored: CREATE MATERIALIZED VIEW v AS SELECT * FROM ${fromName}, then CREATE SINK ${name} FROM v.`
          : `A generator source is replayed, not stored: CREATE SINK ${name} AS SELECT * FROM ${fromName} WITH (...) streams its rows.`,
    });
  }
  const connector = sinkConnector(statement);
  sinkKeyPositions(connector.options, from.name, from.columns, from.primaryKey);
  const draft = new CatalogDraft(context.catalog);
  draft.putRelation({
    id: draft.allocateId(),
    kind: 'sink',
    schema,
    name,
    columns: from.columns.filter((column) => !column.hidden),
    primaryKey: [],
    dependsOn: [from.id],
    ...connector,
  });
  return { catalog: draft.finish(), commandTag: 'CREATE SINK', notices: [], droppedTableIds: [] };
}

/**
 * CREATE SINK ... AS query: a sink that owns its dataflow; call inside the engine's write lock. Its
 * backfill runs in chunks as a view's does: progress NOTICEs and oxbow_catalog.backfill_progress,
 * and the statement's cancel (CancelRequest, statement_timeout, close) stops it between chunks
 * with 57014, nothing committed.
 */
export function createSinkAs(input: { core: DdlHost; statement: OxbowCreateSink; ddl: DdlContext; planner: PlannerContext }, reporting: BackfillReporting): Promise<CreateViewOutcome> {
  const { statement, ddl } = input;
  const connector = sinkConnector(statement);
  const definition = sinkQueryText(ddl.statementText);
  const body: CreateTableAsStmt = { query: statement.query as CreateTableAsStmt['query'], into: { rel: statement.name }, objtype: 'OBJECT_MATVIEW', if_not_exists: statement.ifNotExists };
  const name = statement.name.relname ?? '';
  const checkColumns = (columns: readonly ColumnDef[]): void => void sinkKeyPositions(connector.options, name, columns, []);
  return createMaterializedViewInChunks({ core: input.core, body, ddl, planner: input.planner, sink: { ...connector, definition, checkColumns, prepareTarget: (relation) => prepareSinkTarget(relation, relation) } }, reporting);
}

/**
 * The query of `CREATE SINK [IF NOT EXISTS] name AS query WITH (...) ...`: the text after AS up to
 * the last `WITH (` outside parentheses, strings and quoted names (the parser's rule).
 */
export function sinkQueryText(statementText: string): string {
  const head = /^\s*create\s+sink\s+(?:if\s+not\s+exists\s+)?(?:"(?:[^"]|"")*"|[^\s.]+)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[^\s.]+))?\s+as\s+/is.exec(statementText);
  if (head === null) throw new SqlError(SqlState.syntaxError, 'CREATE SINK ... AS: cannot find the query');
  let depth = 0;
  let withAt = -1;
  for (let index = head[0].length; index < statementText.length; index++) {
    const character = statementText[index]!;
    if (character === "'" || character === '"') {
      const close = statementText.indexOf(character, index + 1);
      index = close < 0 ? statementText.length : close;
    } else if (character === '-' && statementText[index + 1] === '-') {
      const close = statementText.indexOf('\n', index);
      index = close < 0 ? statementText.length : close;
    } else if (character === '(') depth++;
    else if (character === ')') depth--;
    else if (depth === 0 && /^with\s*\(/i.test(statementText.slice(index, index + 40)) && !/[\w$]/.test(statementText[index - 1] ?? ' ')) withAt = index;
  }
  if (withAt < 0) throw new SqlError(SqlState.syntaxError, 'CREATE SINK ... AS: the WITH (...) options are missing');
  return statementText.slice(head[0].length, withAt).trim();
}
