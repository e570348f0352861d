// ALTER TABLE ... ADD COLUMN and COMMENT ON. A new column goes at the end of the stored row, so
// rows written before it are a prefix of the new layout: readers pad them with NULL (see
// batch/table-access.ts). With a DEFAULT or NOT NULL the existing rows are rewritten in the same
// epoch (ddl-statement.ts's backfill): they get the default, evaluated once, as in PostgreSQL, and a NOT NULL
// column without one fails when the table has rows.

import type { AlterTableCmd, AlterTableStmt, ColumnDef as PgColumnDef, CommentStmt, Constraint, Node } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { dataTypeFromTypeName } from '../catalog/type-names.js';
import { type DdlContext, type DdlOutcome, kindWord, positionOf, unchanged } from './ddl-context.js';
import { draftOf, firstLocation } from './create-table.js';
import { expressionTextAt, nameList, stringValue } from './sql-text.js';
import { retentionOption } from './retention.js';
import { addPrimaryKey, alterOwner, dropConstraint } from './alter-constraints.js';
import { addTableConstraint } from './table-constraints.js';
import { addIdentity, addOwnedSequence, normalizedDefault, sequenceSpec, serialDefault, serialType } from './sequence.js';
import { type } from '../../sql/types.js';

/** The command tag of an ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX statement. */
function alterTag(statement: AlterTableStmt): string {
  const words: Record<string, string> = { OBJECT_VIEW: 'ALTER VIEW', OBJECT_MATVIEW: 'ALTER MATERIALIZED VIEW', OBJECT_INDEX: 'ALTER INDEX', OBJECT_FOREIGN_TABLE: 'ALTER FOREIGN TABLE' };
  return words[String(statement.objtype)] ?? 'ALTER TABLE';
}

/**
 * ALTER TABLE t ALTER COLUMN c SET DEFAULT expr / DROP DEFAULT (pg_dump sets a serial column's
 * nextval this way): the catalog only, as in PostgreSQL, where existing rows keep their values.
 */
function alterColumnDefault(relation: RelationDef, command: AlterTableCmd, context: DdlContext): DdlOutcome {
  const columnName = command.name ?? '';
  const index = relation.columns.findIndex((column) => column.name === columnName && !column.hidden);
  if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${columnName}" of relation "${relation.name}" does not exist`);
  const column = relation.columns[index]!;
  if (column.identity !== undefined) {
    throw new SqlError(SqlState.syntaxError, `column "${columnName}" of relation "${relation.name}" is an identity column`, {
      hint: command.def === undefined ? 'Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.' : undefined,
    });
  }
  const { defaultSql: _previous, ...rest } = column;
  let next: RelationDef['columns'][number] = rest;
  if (command.def !== undefined) {
    const start = firstLocation(command.def);
    const defaultSql = start === undefined ? undefined : expressionTextAt(context.statementText, start - context.statementLocation) || undefined;
    if (defaultSql === undefined) throw new SqlError(SqlState.featureNotSupported, 'this DEFAULT expression is not supported');
    next = { ...rest, defaultSql: normalizedDefault(defaultSql, context) };
  }
  const draft = draftOf(context);
  draft.putRelation({ ...relation, columns: relation.columns.map((candidate, position) => (position === index ? next : candidate)) });
  return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [] };
}

export function alterTable(statement: AlterTableStmt, context: DdlContext): DdlOutcome {
  const target = statement.relation!;
  const name = target.relname ?? '';
  const relation = context.catalog.resolveRelation(target.schemaname, name, context.searchPath);
  if (relation === undefined) {
    if (statement.missing_ok === true) {
      return unchanged('ALTER TABLE', [
        { severity: 'NOTICE', code: SqlState.successfulCompletion, message: `relation "${name}" does not exist, skipping` },
      ]);
    }
    throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`);
  }
  const commands = (statement.cmds ?? []).map((item) => (item as { AlterTableCmd: AlterTableCmd }).AlterTableCmd);
  if (commands.length > 0 && commands.every((command) => command.subtype === 'AT_SetRelOptions' || command.subtype === 'AT_ResetRelOptions')) {
    return alterRetention(statement, relation, commands, context);
  }
  if (commands.length === 1 && commands[0]!.subtype === 'AT_ChangeOwner') return alterOwner(commands[0]!, relation, context, alterTag(statement));
  if (commands.length === 1 && commands[0]!.subtype === 'AT_DropConstraint' && relation.kind === 'table') return dropConstraint(commands[0]!, relation, context);
  if (relation.kind !== 'table') {
    throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a table`);
  }
  if (commands.length === 1 && commands[0]!.subtype === 'AT_AddConstraint') {
    const constraint = (commands[0]!.def as { Constraint: Constraint }).Constraint;
    if (constraint.contype === 'CONSTR_PRIMARY') return addPrimaryKey(constraint, relation, context);
    return addTableConstraint(relation, constraint, context);
  }
  if (commands.length === 1 && commands[0]!.subtype === 'AT_ColumnDefault') return alterColumnDefault(relation, commands[0]!, context);
  if (commands.length === 1 && commands[0]!.subtype === 'AT_AddIdentity') {
    return addIdentity(relation, commands[0]!.name ?? '', (commands[0]!.def as { Constraint: Constraint }).Constraint, context);
  }
  let columns = [...relation.columns];
  const notices: DdlOutcome['notices'][number][] = [];
  const backfill: number[] = [];
  const draft = draftOf(context);
  for (const item of statement.cmds ?? []) {
    const command = (item as { AlterTableCmd: AlterTableCmd }).AlterTableCmd;
    if (command.subtype !== 'AT_AddColumn') {
      throw new SqlError(SqlState.featureNotSupported, `ALTER TABLE ${String(command.subtype).replace('AT_', '')} is not supported yet`, {
        hint: 'oxbow supports ALTER TABLE ... ADD COLUMN.',
      });
    }
    const definition = (command.def as { ColumnDef: PgColumnDef }).ColumnDef;
    const columnName = definition.colname ?? '';
    if (columns.some((column) => column.name === columnName)) {
      if (command.missing_ok === true) {
        notices.push({
          severity: 'NOTICE',
          code: SqlState.duplicateColumn,
          message: `column "${columnName}" of relation "${name}" already exists, skipping`,
        });
        continue;
      }
      throw new SqlError(SqlState.duplicateColumn, `column "${columnName}" of relation "${name}" already exists`);
    }
    // ADD COLUMN c serial: its own sequence; the existing rows take a value each (the backfill).
    const serial = serialType(definition.typeName!);
    let nullable = serial === undefined;
    let defaultSql: string | undefined;
    if (serial !== undefined) {
      const created = addOwnedSequence(draft, context, relation, { name: columnName, index: columns.length }, sequenceSpec(undefined, context, undefined, serial).def);
      defaultSql = serialDefault(created.name);
    }
    for (const constraintItem of definition.constraints ?? []) {
      const constraint = (constraintItem as { Constraint: Constraint }).Constraint;
      if (constraint.contype === 'CONSTR_NULL') continue;
      if (serial !== undefined && constraint.contype === 'CONSTR_DEFAULT') {
        throw new SqlError(SqlState.syntaxError, `multiple default values specified for column "${columnName}" of table "${name}"`, { position: positionOf(context, constraint.location) });
      }
      if (constraint.contype === 'CONSTR_NOTNULL') {
        nullable = false;
        continue;
      }
      if (constraint.contype === 'CONSTR_DEFAULT') {
        const start = firstLocation(constraint.raw_expr);
        defaultSql = start === undefined ? undefined : expressionTextAt(context.statementText, start - context.statementLocation) || undefined;
        if (defaultSql !== undefined) continue;
      }
      throw new SqlError(SqlState.featureNotSupported, 'ADD COLUMN supports NULL, NOT NULL and DEFAULT only', {
        position: positionOf(context, constraint.location),
      });
    }
    if (!nullable || defaultSql !== undefined) backfill.push(columns.length);
    columns = [
      ...columns,
      { name: columnName, type: serial === undefined ? dataTypeFromTypeName(definition.typeName!) : type(serial), nullable, hidden: false, ...(defaultSql === undefined ? {} : { defaultSql }) },
    ];
  }
  if (columns.length === relation.columns.length) return unchanged('ALTER TABLE', notices);
  draft.putRelation({ ...relation, columns });
  return {
    catalog: draft.finish(),
    commandTag: 'ALTER TABLE',
    notices,
    droppedTableIds: [],
    ...(backfill.length === 0 ? {} : { backfill: { relationId: relation.id, columnIndexes: backfill } }),
  };
}

/** ALTER TABLE | MATERIALIZED VIEW x SET (retention = ...) / RESET (retention). */
function alterRetention(statement: AlterTableStmt, relation: RelationDef, commands: readonly AlterTableCmd[], context: DdlContext): DdlOutcome {
  const tag = statement.objtype === 'OBJECT_MATVIEW' ? 'ALTER MATERIALIZED VIEW' : 'ALTER TABLE';
  if (relation.kind !== 'table' && relation.kind !== 'materialized_view') {
    throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a table or materialized view`);
  }
  let retentionMs = relation.retentionMs;
  for (const command of commands) {
    const items = (command.def as { List?: { items?: Node[] } } | undefined)?.List?.items;
    const option = retentionOption(items, command.subtype === 'AT_ResetRelOptions' ? 'reset' : 'set');
    if (option !== undefined) retentionMs = option.retentionMs;
  }
  if (retentionMs === relation.retentionMs) return unchanged(tag, []);
  const { retentionMs: _previous, ...rest } = relation;
  const draft = draftOf(context);
  draft.putRelation(retentionMs === undefined ? rest : { ...rest, retentionMs });
  return { catalog: draft.finish(), commandTag: tag, notices: [], droppedTableIds: [] };
}

const commentKinds: Readonly<Record<string, RelationDef['kind']>> = {
  OBJECT_TABLE: 'table',
  OBJECT_VIEW: 'view',
  OBJECT_MATVIEW: 'materialized_view',
  OBJECT_INDEX: 'index',
};

function withComment<T extends { comment?: string }>(value: T, comment: string | undefined): T {
  const { comment: _old, ...rest } = value;
  return (comment === undefined || comment === '' ? rest : { ...rest, comment }) as T;
}

export function commentOn(statement: CommentStmt, context: DdlContext): DdlOutcome {
  const comment = statement.comment;
  const draft = draftOf(context);
  if (statement.objtype === 'OBJECT_SCHEMA') {
    const name = stringValue(statement.object as Node);
    const schema = context.catalog.schema(name);
    if (schema === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
    draft.putSchema(withComment(schema, comment));
    return { catalog: draft.finish(), commandTag: 'COMMENT', notices: [], droppedTableIds: [] };
  }
  const names = nameList(statement.object as Node);
  if (statement.objtype === 'OBJECT_COLUMN') {
    const columnName = names[names.length - 1] ?? '';
    const relationName = names[names.length - 2] ?? '';
    const schemaName = names.length > 2 ? names[names.length - 3] : undefined;
    const relation = context.catalog.resolveRelation(schemaName, relationName, context.searchPath);
    if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${relationName}" does not exist`);
    const index = relation.columns.findIndex((column) => column.name === columnName && !column.hidden);
    if (index < 0) {
      throw new SqlError(SqlState.undefinedColumn, `column "${columnName}" of relation "${relationName}" does not exist`);
    }
    const columns = relation.columns.map((column, position) => (position === index ? withComment(column, comment) : column));
    draft.putRelation({ ...relation, columns });
    return { catalog: draft.finish(), commandTag: 'COMMENT', notices: [], droppedTableIds: [] };
  }
  const kind = commentKinds[statement.objtype ?? ''];
  if (kind === undefined) {
    throw new SqlError(SqlState.featureNotSupported, `COMMENT ON ${String(statement.objtype).replace('OBJECT_', '')} is not supported`);
  }
  const name = names[names.length - 1] ?? '';
  const relation = context.catalog.resolveRelation(names.length > 1 ? names[names.length - 2] : undefined, name, context.searchPath);
  if (relation === undefined) {
    throw new SqlError(kind === 'index' ? SqlState.undefinedObject : SqlState.undefinedTable, `relation "${name}" does not exist`);
  }
  if (relation.kind !== kind) throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a ${kindWord(kind)}`);
  draft.putRelation(withComment(relation, comment));
  return { catalog: draft.finish(), commandTag: 'COMMENT', notices: [], droppedTableIds: [] };
}
