// CREATE SCHEMA, CREATE VIEW and CREATE INDEX. A view stores its definition text and its output
// columns (found by planning the query once, which also checks it); the planner expands the view
// by parsing and binding that text. An index is on simple columns of a table or materialized view;
// it gets a state table ddl-statement.ts backfills in the DDL's epoch, kept in step by the table's
// writes or the view's StreamMaterialize, and read by lookups (executor/catalog/secondary-index.ts).

import type { CreateSchemaStmt, IndexElem, IndexStmt, Node, ViewStmt } from '@pgsql/types';
import type { ColumnDef } from '../../sql/catalog.js';
import { referencedFunctionIds } from './function.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type DdlContext, type DdlOutcome, kindWord, positionOf, unchanged } from './ddl-context.js';
import { draftOf, freeRelationName } from './create-table.js';
import { creationSchema, stringValue, viewQueryText } from './sql-text.js';

export function createSchema(statement: CreateSchemaStmt, context: DdlContext): DdlOutcome {
  const name = statement.schemaname ?? '';
  if (name === '') throw new SqlError(SqlState.featureNotSupported, 'CREATE SCHEMA AUTHORIZATION without a name is not supported');
  if (statement.schemaElts !== undefined && statement.schemaElts.length > 0) {
    throw new SqlError(SqlState.featureNotSupported, 'CREATE SCHEMA with schema elements is not supported');
  }
  if (context.catalog.schema(name) !== undefined) {
    if (statement.if_not_exists === true) {
      return unchanged('CREATE SCHEMA', [
        { severity: 'NOTICE', code: SqlState.duplicateSchema, message: `schema "${name}" already exists, skipping` },
      ]);
    }
    throw new SqlError(SqlState.duplicateSchema, `schema "${name}" already exists`);
  }
  if (name.startsWith('pg_')) {
    throw new SqlError(SqlState.reservedName, `unacceptable schema name "${name}"`, {
      detail: 'The prefix "pg_" is reserved for system schemas.',
    });
  }
  const draft = draftOf(context);
  draft.putSchema({ id: draft.allocateId(), name });
  return { catalog: draft.finish(), commandTag: 'CREATE SCHEMA', notices: [], droppedTableIds: [] };
}

/** Ids of every catalog relation a query reads (RangeVars that are not CTE names). */
export function referencedRelationIds(query: Node, context: DdlContext): number[] {
  const ids = new Set<number>();
  const cteNames = new Set<string>();
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    const cte = record.CommonTableExpr as { ctename?: string } | undefined;
    if (cte?.ctename !== undefined) cteNames.add(cte.ctename);
    const rangeVar = record.RangeVar as { schemaname?: string; relname?: string } | undefined;
    if (rangeVar?.relname !== undefined && !(rangeVar.schemaname === undefined && cteNames.has(rangeVar.relname))) {
      const found = context.catalog.resolveRelation(rangeVar.schemaname, rangeVar.relname, context.searchPath);
      if (found !== undefined && found.kind !== 'system') ids.add(found.id);
    }
    for (const child of Object.values(record)) visit(child);
  };
  visit(query);
  // SQL functions the query calls: DROP FUNCTION without CASCADE is refused while it does.
  for (const id of referencedFunctionIds(query, context.catalog, context.searchPath)) ids.add(id);
  return [...ids];
}

export function createView(statement: ViewStmt, context: DdlContext): DdlOutcome {
  const relation = statement.view!;
  const name = relation.relname ?? '';
  const schema = creationSchema(context, relation);
  const existing = context.catalog.relation(schema, name);
  if (existing !== undefined && !(statement.replace === true && existing.kind === 'view')) {
    if (statement.replace === true) {
      throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a view`);
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  const query = statement.query!;
  const queryText = viewQueryText(context.statementText);
  const described = context.describeQuery(query, queryText);
  const aliases = (statement.aliases ?? []).map(stringValue);
  if (aliases.length > described.length) {
    throw new SqlError(SqlState.syntaxError, 'CREATE VIEW specifies more column names than columns');
  }
  const columns: ColumnDef[] = described.map((column, index) => ({
    name: aliases[index] ?? column.name,
    type: column.type,
    nullable: true,
    hidden: false,
  }));
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column.name)) throw new SqlError(SqlState.duplicateColumn, `column "${column.name}" specified more than once`);
    seen.add(column.name);
  }
  if (existing !== undefined) {
    // CREATE OR REPLACE VIEW may only add columns at the end, as in PostgreSQL.
    existing.columns.forEach((old, index) => {
      const replacement = columns[index];
      if (replacement === undefined) throw new SqlError(SqlState.invalidTableDefinition, 'cannot drop columns from view');
      if (replacement.name !== old.name) {
        throw new SqlError(SqlState.invalidTableDefinition, `cannot change name of view column "${old.name}" to "${replacement.name}"`, {
          hint: 'Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.',
        });
      }
    });
  }
  const draft = draftOf(context);
  draft.putRelation({
    id: existing?.id ?? draft.allocateId(),
    kind: 'view',
    schema,
    name,
    columns,
    primaryKey: [],
    definition: queryText,
    dependsOn: referencedRelationIds(query, context),
    ...(existing?.comment === undefined ? {} : { comment: existing.comment }),
  });
  return { catalog: draft.finish(), commandTag: 'CREATE VIEW', notices: [], droppedTableIds: [] };
}

export function createIndex(statement: IndexStmt, context: DdlContext): DdlOutcome {
  const target = statement.relation!;
  const relation = context.catalog.resolveRelation(target.schemaname, target.relname ?? '', context.searchPath);
  if (relation === undefined) {
    throw new SqlError(SqlState.undefinedTable, `relation "${target.relname ?? ''}" does not exist`, {
      position: positionOf(context, target.location),
    });
  }
  if (relation.kind !== 'table' && relation.kind !== 'materialized_view') {
    throw new SqlError(SqlState.wrongObjectType, `cannot create index on relation "${relation.name}"`, {
      detail: `This operation is not supported for ${kindWord(relation.kind)}s.`,
    });
  }
  if (statement.unique === true && relation.kind === 'materialized_view') {
    throw new SqlError(SqlState.featureNotSupported, 'unique indexes on materialized views are not supported', {
      hint: 'A materialized view holds what its query gives; put the constraint on the tables it reads.',
    });
  }
  if (statement.unique === true && relation.options !== undefined) {
    throw new SqlError(SqlState.featureNotSupported, `unique indexes on connector table "${relation.name}" are not supported`, {
      hint: 'Rows of a connector table are written by its connector, which cannot refuse one.',
    });
  }
  if (statement.whereClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'partial indexes are not supported');
  if (statement.accessMethod !== undefined && statement.accessMethod !== 'btree') {
    throw new SqlError(SqlState.featureNotSupported, `access method "${statement.accessMethod}" is not supported`, {
      hint: 'oxbow indexes are ordered (btree).',
    });
  }
  const columns: number[] = [];
  for (const item of statement.indexParams ?? []) {
    const element = (item as { IndexElem: IndexElem }).IndexElem;
    if (element.name === undefined) throw new SqlError(SqlState.featureNotSupported, 'indexes on expressions are not supported');
    const index = relation.columns.findIndex((column) => column.name === element.name && !column.hidden);
    if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${element.name}" does not exist`);
    columns.push(index);
  }
  const draft = draftOf(context);
  let name = statement.idxname;
  if (name !== undefined && context.catalog.relation(relation.schema, name) !== undefined) {
    if (statement.if_not_exists === true) {
      return unchanged('CREATE INDEX', [
        { severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` },
      ]);
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  if (name === undefined) {
    const base = `${relation.name}_${columns.map((index) => relation.columns[index]!.name).join('_')}_idx`;
    name = freeRelationName(context.catalog, relation.schema, base);
  }
  const id = draft.allocateId();
  draft.putRelation({
    id,
    kind: 'index',
    schema: relation.schema,
    name,
    columns: columns.map((index) => relation.columns[index]!),
    primaryKey: columns.map((_, position) => position),
    dependsOn: [],
    indexOn: { relationId: relation.id, columns, ...(statement.unique === true ? { unique: true } : {}), stored: true },
  });
  return { catalog: draft.finish(), commandTag: 'CREATE INDEX', notices: [], droppedTableIds: [], indexBackfill: id };
}
