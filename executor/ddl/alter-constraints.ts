// What a restore of pg_dump's output sends besides CREATE and COPY: ALTER TABLE ONLY t ADD
// CONSTRAINT name PRIMARY KEY (columns) after the data (UNIQUE and FOREIGN KEY are
// table-constraints.ts's), DROP CONSTRAINT (pg_restore --clean), and ALTER TABLE | VIEW |
// MATERIALIZED VIEW | SCHEMA | FUNCTION ... OWNER TO role (accepted for the session's user, the
// one role).
//
// A table is keyed in storage by the primary key it was created with, or by a hidden row id. A
// primary key added later does not rekey the stored rows: it is a stored UNIQUE index marked
// primary (pg_constraint lists it as the table's primary key, pg_dump dumps it back) whose columns
// become NOT NULL; ddl-statement.ts fills it from the rows in the same epoch and refuses a NULL or
// a duplicate key (23502, 23505).

import type { AlterOwnerStmt, AlterTableCmd, Constraint, Node, RoleSpec } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type DdlContext, type DdlOutcome, positionOf, unchanged } from './ddl-context.js';
import { draftOf, freeRelationName } from './create-table.js';

/** ALTER TABLE | VIEW | MATERIALIZED VIEW ... OWNER TO: oxbow has one role, the session's user, which owns everything. */
export function alterOwner(command: AlterTableCmd, context: DdlContext, commandTag: string): DdlOutcome {
  checkOwner(command.newowner as RoleSpec | undefined, context);
  return unchanged(commandTag);
}

function checkOwner(role: RoleSpec | undefined, context: DdlContext): void {
  const name = role?.rolename;
  if (role?.roletype === 'ROLESPEC_CSTRING' && name !== undefined && name !== context.user && name !== 'pg_database_owner') {
    throw new SqlError(SqlState.undefinedObject, `role "${name}" does not exist`);
  }
}

/** ALTER SCHEMA | FUNCTION ... OWNER TO role (pg_dump writes it for each); other objects' owners are 0A000. */
export function alterObjectOwner(statement: AlterOwnerStmt, context: DdlContext): DdlOutcome {
  if (statement.objectType === 'OBJECT_FUNCTION') {
    checkOwner(statement.newowner, context);
    return unchanged('ALTER FUNCTION');
  }
  if (statement.objectType !== 'OBJECT_SCHEMA') {
    throw new SqlError(SqlState.featureNotSupported, `ALTER ${String(statement.objectType).replace('OBJECT_', '')} ... OWNER TO is not supported`);
  }
  const name = (statement.object as { String?: { sval: string } } | undefined)?.String?.sval ?? '';
  if (context.catalog.schema(name) === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
  checkOwner(statement.newowner, context);
  return unchanged('ALTER SCHEMA');
}

/** ADD CONSTRAINT name PRIMARY KEY (columns) on a table (UNIQUE and FOREIGN KEY: table-constraints.ts). */
export function addPrimaryKey(constraint: Constraint, relation: RelationDef, context: DdlContext): DdlOutcome {
  const position = positionOf(context, constraint.location);
  if (constraint.indexname !== undefined) throw new SqlError(SqlState.featureNotSupported, 'ADD CONSTRAINT ... USING INDEX is not supported', { position });
  const keys = ((constraint.keys ?? []) as Node[]).map((key) => (key as { String: { sval: string } }).String.sval);
  if ((constraint.including ?? []).length > 0) throw new SqlError(SqlState.featureNotSupported, 'INCLUDE columns of a constraint are not supported', { position });
  if (relation.options !== undefined) {
    throw new SqlError(SqlState.featureNotSupported, `a primary key on connector table "${relation.name}" is not supported`, {
      hint: 'Rows of a connector table are written by its connector, which cannot refuse one.',
    });
  }
  const indexes = context.catalog.relations().filter((other) => other.kind === 'index' && other.indexOn?.relationId === relation.id);
  if (indexes.some((index) => index.indexOn!.primary === true)) {
    throw new SqlError(SqlState.invalidTableDefinition, `multiple primary keys for table "${relation.name}" are not allowed`, { position });
  }
  const columns = keys.map((key) => {
    const index = relation.columns.findIndex((column) => column.name === key && !column.hidden);
    if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${key}" named in key does not exist`, { position });
    return index;
  });
  const name = constraint.conname ?? freeRelationName(context.catalog, relation.schema, `${relation.name}_pkey`);
  if (context.catalog.relation(relation.schema, name) !== undefined) throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  const draft = draftOf(context);
  const tableColumns: ColumnDef[] = relation.columns.map((column, index) => (columns.includes(index) ? { ...column, nullable: false } : column));
  draft.putRelation({ ...relation, columns: tableColumns });
  const id = draft.allocateId();
  draft.putRelation({
    id,
    kind: 'index',
    schema: relation.schema,
    name,
    columns: columns.map((index) => relation.columns[index]!),
    primaryKey: columns.map((_, index) => index),
    dependsOn: [],
    indexOn: { relationId: relation.id, columns, unique: true, primary: true, stored: true },
  });
  return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [], indexBackfill: id };
}

/**
 * ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name (`pg_restore --clean` sends it before DROP TABLE):
 * a CHECK, or a primary key added by ALTER TABLE (its stored index goes). The primary key a table
 * was created with is its storage key: 0A000.
 */
export function dropConstraint(command: AlterTableCmd, relation: RelationDef, context: DdlContext): DdlOutcome {
  const name = command.name ?? '';
  const key = context.catalog.relations().find((other) => other.kind === 'index' && other.indexOn?.relationId === relation.id && other.indexOn.primary === true && other.name === name);
  const draft = draftOf(context);
  if (key !== undefined) {
    if (key.indexOn!.stored !== true) {
      throw new SqlError(SqlState.featureNotSupported, `dropping the primary key "${name}" that table "${relation.name}" is stored by is not supported`, {
        hint: 'DROP TABLE and create it again without the key.',
      });
    }
    draft.removeRelation(key.id);
    return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [key.id] };
  }
  const constraint = (relation.constraints ?? []).find((candidate) => candidate.name === name);
  if (constraint !== undefined) {
    draft.putRelation({ ...relation, constraints: (relation.constraints ?? []).filter((candidate) => candidate !== constraint) });
    if (constraint.indexId === undefined) return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [] };
    draft.removeRelation(constraint.indexId);
    return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [constraint.indexId] };
  }
  const checks = relation.checks ?? [];
  if (checks.some((check) => check.name === name)) {
    draft.putRelation({ ...relation, checks: checks.filter((check) => check.name !== name) });
    return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [] };
  }
  if (command.missing_ok === true) {
    return unchanged('ALTER TABLE', [{ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `constraint "${name}" of relation "${relation.name}" does not exist, skipping` }]);
  }
  throw new SqlError(SqlState.undefinedObject, `constraint "${name}" of relation "${relation.name}" does not exist`);
}
