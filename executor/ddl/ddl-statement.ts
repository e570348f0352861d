// A DDL statement run to its end: the catalog change of a handler (run-ddl.ts), the backfills it
// asks for (the new columns of ALTER TABLE ADD COLUMN, the rows of a new index), the rows ALTER
// TABLE ADD FOREIGN KEY validates, the state tables it drops or opens, then the catalog and the
// epoch committed together (commit-catalog.ts), and ALTER SEQUENCE handed to the sequences. CREATE
// TABLE AS, CREATE MATERIALIZED VIEW and CREATE SINK ... AS query fill their new object in the same
// epoch. Everything runs inside the engine's write lock.

import type { CreateTableAsStmt, Node } from '@pgsql/types';
import type { OxbowCreateSink, ParsedStatement } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { EvalContext } from '../../sql/functions.js';
import { formatValue } from '../../sql/text-format.js';
import type { Row, Value } from '../../sql/value.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { PlannedStatement, PlannerContext } from '../../planner/index.js';
import { executePlanned } from '../batch/index.js';
import { stateTableOf, type StoreTableAccess } from '../batch/table-access.js';
import { verifyForeignKeys } from '../batch/foreign-keys.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { perRowSequenceDefaults } from '../catalog/sequence-defaults.js';
import type { Notice } from '../catalog/results.js';
import { indexEntry, indexStateTable } from '../catalog/secondary-index.js';
import { formatTypeName } from '../catalog/type-names.js';
import { KeyMap } from '../expr/row-hash.js';
import { checkKafkaTopic, kafkaTopicToCheck } from '../connectors/kafka/kafka-check.js';
import { commitCatalog } from './commit-catalog.js';
import { createMaterializedViewInChunks } from './create-materialized-view.js';
import { createSinkAs } from './create-sink.js';
import { createTableAs } from './create-table.js';
import { currentRoleId, type DdlContext, type DdlOutcome } from './ddl-context.js';
import { checkDdlPrivileges } from './ddl-privileges.js';
import type { DdlHost } from './ddl-host.js';
import { runDdl } from './run-ddl.js';
import { prepareCreatedSinkTargets } from './sink-target-check.js';
import { checkPostgresCdc, withUpstreamColumns } from './create-postgres-cdc.js';
import { prepareConnectorSchema } from '../connectors/source-schema.js';

/** What a DDL statement is given of the session that runs it (engine/session.ts). */
export interface DdlSession {
  readonly host: DdlHost;
  /** The handlers' input for this statement. */
  readonly context: DdlContext;
  readonly planner: PlannerContext;
  /** Plans a query in the session (CREATE TABLE AS). */
  plan(query: ParsedStatement): PlannedStatement;
  /** The session's table access at the latest committed epoch (its writes go into the open epoch). */
  tableAccess(): StoreTableAccess;
  /** A table access like tableAccess() whose indexes and foreign keys are those of `catalog` (the DDL's next catalog). */
  tableAccessOf(catalog: CatalogSnapshot): StoreTableAccess;
  /** The session's nextval (a serial column added to a table with rows takes a value per row). */
  nextval(sequence: RelationDef): bigint;
  evalContext(): EvalContext;
  /** Runs a query given as text (a column's DEFAULT). */
  evaluateConstantQuery(sql: string, signal: AbortSignal): Promise<Row[]>;
  notice(notice: Notice): void;
}

/** Runs a DDL statement; returns its command tag. */
export async function executeDdl(parsed: ParsedStatement, session: DdlSession, signal: AbortSignal): Promise<string> {
  const { host } = session;
  checkDdlPrivileges(parsed.node as Node, session.context);
  const owner = currentRoleId(session.context);
  const createAs = (parsed.node as { CreateTableAsStmt?: CreateTableAsStmt }).CreateTableAsStmt;
  if (createAs !== undefined && createAs.objtype === 'OBJECT_TABLE') return createTableAsSelect(parsed, createAs, session, signal);
  const reporting = { notice: (notice: Notice) => session.notice(notice), signal };
  if (createAs !== undefined && createAs.objtype === 'OBJECT_MATVIEW') {
    // CREATE MATERIALIZED VIEW: plan, backfill and commit in one epoch.
    return host.writeLock.run(async () => {
      const outcome = await createMaterializedViewInChunks({ core: host, body: createAs, ddl: session.context, planner: session.planner }, reporting);
      for (const notice of outcome.notices) session.notice(notice);
      return outcome.commandTag;
    });
  }
  const sinkAs = (parsed.node as { OxbowCreateSink?: OxbowCreateSink }).OxbowCreateSink;
  if (sinkAs?.query !== undefined) {
    // CREATE SINK ... AS query: the sink's dataflow, planned and backfilled in chunks like a view's.
    return host.writeLock.run(async () => {
      const outcome = await createSinkAs({ core: host, statement: sinkAs, ddl: session.context, planner: session.planner }, reporting);
      for (const notice of outcome.notices) session.notice(notice);
      return outcome.commandTag;
    });
  }
  // ENCODE AVRO / PROTOBUF sources: the schema from the registry or file, before the lock.
  await prepareConnectorSchema(parsed);
  const kafkaTopic = kafkaTopicToCheck(parsed.node);
  if (kafkaTopic !== undefined && runDdl(parsed, session.context).catalog !== undefined) {
    // CREATE SOURCE of Kafka: the statement's own errors first, then the broker and topic (outside
    // the write lock: up to a few seconds).
    await checkKafkaTopic(kafkaTopic);
  }
  // A postgres-cdc table without a column list takes the upstream's (read before the lock).
  const statement = await withUpstreamColumns(parsed, session.context);
  return host.writeLock.run(async () => {
    const outcome = runDdl(statement, session.context);
    const next = outcome.catalog;
    // A PostgreSQL sink's target table, checked (or made) before the sink commits.
    if (next !== undefined && sinkAs !== undefined) await prepareCreatedSinkTargets(host.catalog.snapshot, next);
    if (next !== undefined) await checkPostgresCdc(session.context.catalog, next);
    if (next !== undefined) {
      await commitCatalog(host, next, async () => {
        if (outcome.backfill !== undefined) await backfillColumns(session, next, outcome.backfill, signal);
        if (outcome.indexBackfill !== undefined) backfillIndex(session, next, outcome.indexBackfill);
        if (outcome.foreignKeyValidation !== undefined) validateForeignKeys(session, next, outcome.foreignKeyValidation);
        for (const tableId of outcome.droppedTableIds) host.store.dropTable(tableId);
        // A dropped view's errors leave oxbow_catalog.view_errors in the DDL's own epoch (a view's rows table id is its id).
        for (const tableId of outcome.droppedTableIds) host.streams.errors.forget(tableId);
        openNewTablesAndApplyRetention(host, next);
      }, owner);
      host.streams.retain((viewId) => next.relationById(viewId) !== undefined);
      // ALTER SEQUENCE: the runtime reserves again under the new options; RESTART sets the value.
      if (outcome.sequenceChange !== undefined) {
        const { id, restart } = outcome.sequenceChange;
        host.sequences.altered(id);
        if (restart !== undefined) host.sequences.restart(next.relationById(id)!, restart);
      }
    }
    for (const notice of outcome.notices) session.notice(notice);
    return outcome.commandTag;
  });
}

/**
 * Opens every table and source the DDL creates, and hands the store every retention it changes.
 * ALTER ... SET/RESET (retention): the store keeps each table's retention with its version GC
 * record, so a changed one is handed to the store in the DDL's own epoch. A new table or source
 * is opened in the DDL's epoch too: its readable window starts at its creation, so it reads as
 * empty AS OF any moment between CREATE and its first write (RisingWave's time_travel/basic.slt)
 * instead of "never written" until that write.
 */
function openNewTablesAndApplyRetention(host: DdlHost, next: CatalogSnapshot): void {
  const current = host.catalog.snapshot;
  for (const relation of next.relations()) {
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source') continue;
    const before = current.relationById(relation.id);
    if (before === undefined && relation.kind !== 'materialized_view') {
      // Dropped first (it does not exist yet), as backfillIndex does: an abort then forgets it.
      host.store.dropTable(relation.id);
      stateTableOf(host.store, relation);
    } else if (before !== undefined && before.retentionMs !== relation.retentionMs) {
      stateTableOf(host.store, relation);
      for (const index of next.indexesOf(relation.id)) indexStateTable(host.store, relation, index);
    }
  }
}

/**
 * CREATE INDEX on a table: the index's state table filled from the table's rows (the DDL holds
 * the write lock, so the committed epoch is the latest) in the DDL's own epoch. A UNIQUE index
 * over rows with equal non-NULL keys is 23505, as PostgreSQL says it; a primary key added by
 * ALTER TABLE (a stored unique index) over a NULL is 23502.
 */
function backfillIndex(session: DdlSession, catalog: CatalogSnapshot, indexId: number): void {
  const store = session.host.store;
  const index = catalog.relationById(indexId)!;
  const relation = catalog.relationById(index.indexOn!.relationId)!;
  // Dropped first (it does not exist yet) so that an abort forgets the new table: a failed
  // CREATE leaves its id free for the next object, which may have another key.
  store.dropTable(index.id);
  const table = indexStateTable(store, relation, index);
  const columns = index.indexOn!.columns;
  const unique = index.indexOn!.unique === true;
  const seen = unique ? new KeyMap<true>(columns.map((column) => relation.columns[column]!.type)) : undefined;
  const primary = index.indexOn!.primary === true;
  for (const row of session.tableAccess().scan(relation, {})) {
    const entry = indexEntry(relation, index, row);
    if (primary) {
      const column = columns.find((key) => row[key] === null);
      if (column !== undefined) throw new SqlError(SqlState.notNullViolation, `column "${relation.columns[column]!.name}" of relation "${relation.name}" contains null values`);
    }
    if (seen !== undefined) {
      const key = entry.slice(0, columns.length);
      if (!key.includes(null)) {
        if (seen.indexOf(key) >= 0) {
          const names = columns.map((column) => relation.columns[column]!.name).join(', ');
          const values = columns.map((column) => formatValue(row[column]!, relation.columns[column]!.type)).join(', ');
          throw new SqlError(SqlState.uniqueViolation, `could not create unique index "${index.name}"`, { detail: `Key (${names})=(${values}) is duplicated.` });
        }
        seen.add(key, true);
      }
    }
    table.insert(entry);
  }
}

/** ALTER TABLE ADD FOREIGN KEY: every row of the table checked against the next catalog's foreign keys (23503). */
function validateForeignKeys(session: DdlSession, catalog: CatalogSnapshot, relationId: number): void {
  const relation = catalog.relationById(relationId)!;
  const access = session.tableAccessOf(catalog);
  access.foreignKeyWrites.written.set(relationId, [...access.scan(relation, {})]);
  verifyForeignKeys(access);
}

/**
 * ALTER TABLE ADD COLUMN with a DEFAULT or NOT NULL: rewrites the existing rows into the open
 * epoch with the default (evaluated once) in the new columns; 23502 if a NOT NULL column would
 * stay NULL. Runs inside the DDL's write lock, before its commit.
 */
async function backfillColumns(session: DdlSession, catalog: CatalogSnapshot, backfill: NonNullable<DdlOutcome['backfill']>, signal: AbortSignal): Promise<void> {
  const relation = catalog.relationById(backfill.relationId)!;
  const values: Value[] = [];
  // A serial column's nextval: a value per row (catalog/sequence-defaults.ts), as PostgreSQL's rewrite gives.
  const kept = relation.columns.map((_, index) => index).filter((index) => !backfill.columnIndexes.includes(index));
  const resolve = (schema: string | undefined, name: string): RelationDef | undefined => (name.startsWith('#') ? catalog.relationById(Number(name.slice(1))) : catalog.resolveRelation(schema, name, session.context.searchPath));
  const perRow = perRowSequenceDefaults(relation, kept, resolve, (sequence) => session.nextval(sequence));
  for (const index of backfill.columnIndexes) {
    const column = relation.columns[index]!;
    if (column.defaultSql === undefined || perRow.some((entry) => entry.column === index)) values.push(null);
    else {
      const rows = await session.evaluateConstantQuery(`SELECT (${column.defaultSql})::${formatTypeName(column.type)}`, signal);
      values.push(rows[0]?.[0] ?? null);
    }
  }
  const access = session.tableAccess();
  for (const row of access.scan(relation, {})) {
    const updated = row.slice();
    for (const entry of perRow) updated[entry.column] = entry.next();
    backfill.columnIndexes.forEach((index, position) => {
      if (perRow.some((entry) => entry.column === index)) return;
      updated[index] = values[position]!;
      const column = relation.columns[index]!;
      if (updated[index] === null && !column.nullable) {
        throw new SqlError(SqlState.notNullViolation, `column "${column.name}" of relation "${relation.name}" contains null values`);
      }
    });
    access.insert(relation, updated);
  }
}

/** CREATE TABLE ... AS query: the new table and its rows commit in one epoch. */
async function createTableAsSelect(parsed: ParsedStatement, body: CreateTableAsStmt, session: DdlSession, signal: AbortSignal): Promise<string> {
  if (body.into?.rel?.relpersistence === 't') throw new SqlError(SqlState.featureNotSupported, 'temporary tables are not supported');
  const query: ParsedStatement = { node: body.query as Node, text: parsed.text, location: parsed.location };
  const host = session.host;
  return host.writeLock.run(async () => {
    const before = host.catalog.snapshot;
    const planned = session.plan(query);
    const outcome = createTableAs(body.into ?? {}, body.if_not_exists === true, planned.columns ?? [], session.context);
    for (const notice of outcome.notices) session.notice(notice);
    if (outcome.catalog === undefined) return outcome.commandTag;
    const table = outcome.catalog.relations().find((relation) => relation.kind === 'table' && before.relationById(relation.id) === undefined)!;
    let count = 0;
    await commitCatalog(host, outcome.catalog, async () => {
      const result = await executePlanned(planned, { tables: session.tableAccess(), parameters: [], evalContext: session.evalContext(), signal });
      const access = session.tableAccess();
      for (const row of result.rows) {
        access.insert(table, [...row, access.nextRowId(table)]);
        count++;
      }
      signal.throwIfAborted();
    }, currentRoleId(session.context));
    return `SELECT ${count}`;
  });
}
