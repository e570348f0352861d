// What a restore of pg_dump's output sends besides CREATE and COPY: ALTER TABLE ONLY t ADD
// CONSTRAINT name PRIMARY KEY (columns) after the data (UNIQUE and FOREIGN KEY are
// table-constraints.ts's), DROP CONSTRAINT (pg_restore --clean), and ALTER TABLE | VIEW |
// MATERIALIZED VIEW | SCHEMA | FUNCTION ... OWNER TO role (a function's owner is not kept).
//
// A table is keyed in storage by the primary key it was created with, or by a hidden row id. A
// primary key added later does not rekey the stored rows: it is a stored UNIQUE index marked
// primary (pg_constraint lists it as the table's primary key, pg_dump dumps it back) whose columns
// become NOT NULL; ddl-statement.ts fills it from the rows in the same epoch and refuses a NULL or
// a duplicate key (23502, 23505).

import type { AlterOwnerStmt, AlterTableCmd, Constraint, Node, RoleSpec } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { aclWithNewOwner, isSuperuser, memberRoles, ownerOf, requireRelationOwner, requireSchemaOwner, requireSchemaPrivilege, schemaOwner } from '../catalog/privileges.js';
import { resolveRoleSpec } from './roles.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { currentRoleId, type DdlContext, type DdlOutcome, positionOf, unchanged } from './ddl-context.js';
import { draftOf, freeRelationName } from './create-table.js';

/**
 * ALTER TABLE | VIEW | MATERIALIZED VIEW | SOURCE ... OWNER TO role: only the owner (or a superuser)
 * may, and a non-superuser only to a role it is a member of that may create in the schema, as
 * PostgreSQL 15 checks; the ACL's items of the old owner pass to the new one (aclnewowner).
 */
export function alterOwner(command: AlterTableCmd, relation: RelationDef, context: DdlContext, commandTag: string): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const newOwner = resolveRoleSpec(command.newowner as RoleSpec | undefined, context);
  const oldOwner = ownerOf(relation);
  if (newOwner.id === oldOwner) return unchanged(commandTag);
  requireRelationOwner(catalog, actor, relation);
  if (!isSuperuser(catalog, actor)) {
    if (!memberRoles(catalog, actor).has(newOwner.id)) throw new SqlError(SqlState.insufficientPrivilege, `must be member of role "${newOwner.name}"`);
    requireSchemaPrivilege(catalog, newOwner.id, relation.schema, 'C');
  }
  const draft = draftOf(context);
  draft.putRelation({ ...relation, owner: newOwner.id, ...(relation.acl === undefined ? {} : { acl: aclWithNewOwner(relation.acl, oldOwner, newOwner.id) }) });
  // Indexes follow their table; a serial column's owned sequences too.
  for (const other of catalog.relations()) {
    if (other.indexOn?.relationId === relation.id || other.sequence?.ownedBy?.relationId === relation.id) draft.putRelation({ ...other, owner: newOwner.id });
  }
  return { catalog: draft.finish(), commandTag, notices: [], droppedTableIds: [] };
}

/** ALTER SCHEMA | FUNCTION ... OWNER TO role (pg_dump writes it for each); other objects' owners are 0A000. */
export function alterObjectOwner(statement: AlterOwnerStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  if (statement.objectType === 'OBJECT_FUNCTION') {
    resolveRoleSpec(statement.newowner, context);
    if (!isSuperuser(catalog, actor)) throw new SqlError(SqlState.featureNotSupported, 'ALTER FUNCTION ... OWNER TO is supported for superusers only');
    return unchanged('ALTER FUNCTION');
  }
  if (statement.objectType !== 'OBJECT_SCHEMA') {
    throw new SqlError(SqlState.featureNotSupported, `ALTER ${String(statement.objectType).replace('OBJECT_', '')} ... OWNER TO is not supported`);
  }
  const name = (statement.object as { String?: { sval: string } } | undefined)?.String?.sval ?? '';
  const schema = catalog.schema(name);
  if (schema === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
  const newOwner = resolveRoleSpec(statement.newowner, context);
  const oldOwner = schemaOwner(schema);
  if (newOwner.id === oldOwner) return unchanged('ALTER SCHEMA');
  requireSchemaOwner(catalog, actor, schema);
  if (!isSuperuser(catalog, actor)) {
    if (!memberRoles(catalog, actor).has(newOwner.id)) throw new SqlError(SqlState.insufficientPrivilege, `must be member of role "${newOwner.name}"`);
    throw new SqlError(SqlState.insufficientPrivilege, 'permission denied for database oxbow');
  }
  const draft = draftOf(context);
  draft.putSchema({ ...schema, owner: newOwner.id, ...(schema.acl === undefined ? {} : { acl: aclWithNewOwner(schema.acl, oldOwner, newOwner.id) }) });
  return { catalog: draft.finish(), commandTag: 'ALTER SCHEMA', notices: [], droppedTableIds: [] };
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
