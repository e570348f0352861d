// UNIQUE and FOREIGN KEY constraints of CREATE TABLE.
//
// UNIQUE (a) / UNIQUE (a, b): a stored unique index named as PostgreSQL names it (`t_a_key`,
// `t_a_b_key`, a numeric suffix when taken, or the constraint's own name), which TableAccess keeps
// in step with every write and which refuses a second row with equal non-NULL values (23505 with
// PostgreSQL's message and DETAIL); NULLs never collide, PostgreSQL's default. The constraint
// (pg_constraint contype 'u') points at its index.
//
// FOREIGN KEY ... REFERENCES p [(x)]: checked as PostgreSQL checks the definition (the referenced
// table and columns exist, a primary key or UNIQUE constraint covers exactly those columns, the
// column counts agree), kept in the catalog (pg_constraint contype 'f' with conkey / confkey, the
// actions and match type) and enforced at the end of each writing statement (../batch/foreign-keys.ts).
// ON DELETE NO ACTION / RESTRICT / CASCADE / SET NULL and ON UPDATE NO ACTION / RESTRICT, MATCH
// SIMPLE; other actions and MATCH FULL are 0A000. DEFERRABLE [INITIALLY DEFERRED] (Django's
// foreign keys) is recorded, and checked at the end of each statement all the same: every
// statement commits on its own.

import type { Constraint, RangeVar } from '@pgsql/types';
import type { ConstraintDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { CatalogDraft } from '../catalog/catalog.js';
import { type DdlContext, type DdlOutcome, positionOf } from './ddl-context.js';
import { stringValue } from './sql-text.js';
import { draftOf, freeRelationName } from './create-table.js';

export interface UniqueText {
  readonly columns: readonly string[];
  readonly name: string | undefined;
  readonly location: number | undefined;
}

export interface ForeignKeyText {
  readonly columns: readonly string[];
  readonly name: string | undefined;
  readonly table: RangeVar;
  readonly referencedColumns: readonly string[];
  readonly onUpdate: string;
  readonly onDelete: string;
  readonly match: string;
  readonly deferrable: boolean;
  readonly initiallyDeferred: boolean;
  readonly location: number | undefined;
}

export function uniqueOf(context: DdlContext, constraint: Constraint, columns: readonly string[]): UniqueText {
  if ((constraint.including?.length ?? 0) > 0 || constraint.nulls_not_distinct === true) {
    throw new SqlError(SqlState.featureNotSupported, 'UNIQUE ... INCLUDE and NULLS NOT DISTINCT are not supported', { position: positionOf(context, constraint.location) });
  }
  return { columns, name: constraint.conname, location: constraint.location };
}

export function foreignKeyOf(context: DdlContext, constraint: Constraint, columns: readonly string[]): ForeignKeyText {
  const onUpdate = constraint.fk_upd_action ?? 'a';
  const onDelete = constraint.fk_del_action ?? 'a';
  if ((onUpdate !== 'a' && onUpdate !== 'r') || onDelete === 'd' || constraint.fk_matchtype === 'f') {
    throw new SqlError(SqlState.featureNotSupported, 'this foreign key action is not supported', {
      position: positionOf(context, constraint.location),
      hint: 'oxbow enforces ON DELETE NO ACTION, RESTRICT, CASCADE and SET NULL, ON UPDATE NO ACTION and RESTRICT, MATCH SIMPLE.',
    });
  }
  return {
    columns,
    name: constraint.conname,
    table: constraint.pktable!,
    referencedColumns: (constraint.pk_attrs ?? []).map(stringValue),
    onUpdate: constraint.fk_upd_action ?? 'a',
    onDelete: constraint.fk_del_action ?? 'a',
    match: constraint.fk_matchtype ?? 's',
    deferrable: constraint.deferrable === true,
    initiallyDeferred: constraint.initdeferred === true,
    location: constraint.location,
  };
}

function columnIndexes(table: RelationDef, names: readonly string[], context: DdlContext, location: number | undefined, what: string): number[] {
  return names.map((name) => {
    const index = table.columns.findIndex((column) => column.name === name && !column.hidden);
    if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${name}" ${what} does not exist`, { position: positionOf(context, location) });
    return index;
  });
}

/** The unique indexes of the UNIQUE constraints (added to `draft`) and their constraint rows. */
export function addUniqueConstraints(draft: CatalogDraft, context: DdlContext, table: RelationDef, uniques: readonly UniqueText[]): ConstraintDef[] {
  const constraints: ConstraintDef[] = [];
  for (const unique of uniques) {
    const columns = columnIndexes(table, unique.columns, context, unique.location, 'named in key');
    const name = unique.name ?? freeRelationName(draft.finish(), table.schema, `${table.name}_${unique.columns.join('_')}_key`);
    if (draft.finish().relation(table.schema, name) !== undefined) throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
    const id = draft.allocateId();
    draft.putRelation({
      id,
      kind: 'index',
      schema: table.schema,
      name,
      columns: columns.map((index) => table.columns[index]!),
      primaryKey: columns.map((_, position) => position),
      dependsOn: [],
      indexOn: { relationId: table.id, columns, unique: true, stored: true },
    });
    constraints.push({ name, kind: 'unique', columns, indexId: id });
  }
  return constraints;
}

const sameColumns = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && [...a].sort().every((column, index) => column === [...b].sort()[index]);

/** The FOREIGN KEY constraints, checked against the referenced tables (the new table itself included). */
export function resolveForeignKeys(
  draft: CatalogDraft,
  context: DdlContext,
  table: RelationDef,
  primaryKey: readonly number[],
  hasPrimaryKey: boolean,
  uniques: readonly UniqueText[],
  foreignKeys: readonly ForeignKeyText[],
): ConstraintDef[] {
  const taken = new Set<string>((table.constraints ?? []).map((constraint) => constraint.name));
  return foreignKeys.map((foreignKey) => {
    const columns = columnIndexes(table, foreignKey.columns, context, foreignKey.location, 'referenced in foreign key constraint');
    const self = foreignKey.table.relname === table.name && (foreignKey.table.schemaname === undefined || foreignKey.table.schemaname === table.schema);
    const referenced = self ? table : context.catalog.resolveRelation(foreignKey.table.schemaname, foreignKey.table.relname ?? '', context.searchPath);
    if (referenced === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${foreignKey.table.relname}" does not exist`);
    if (referenced.kind !== 'table') throw new SqlError(SqlState.wrongObjectType, `referenced relation "${referenced.name}" is not a table`);
    const keys: number[][] = [];
    if (self) {
      if (hasPrimaryKey) keys.push([...primaryKey]);
      for (const unique of uniques) keys.push(columnIndexes(table, unique.columns, context, unique.location, 'named in key'));
    } else {
      const primary = draft.finish().dependents(referenced.id).find((index) => index.kind === 'index' && index.indexOn?.primary === true);
      if (primary !== undefined) keys.push([...primary.indexOn!.columns]);
      for (const constraint of referenced.constraints ?? []) if (constraint.kind === 'unique') keys.push([...constraint.columns]);
    }
    let referencedColumns: number[];
    if (foreignKey.referencedColumns.length === 0) {
      const primary = self ? (hasPrimaryKey ? [...primaryKey] : undefined) : draft.finish().dependents(referenced.id).find((index) => index.kind === 'index' && index.indexOn?.primary === true)?.indexOn?.columns;
      if (primary === undefined) throw new SqlError(SqlState.invalidForeignKey, `there is no primary key for referenced table "${referenced.name}"`);
      referencedColumns = [...primary];
    } else {
      referencedColumns = columnIndexes(referenced, foreignKey.referencedColumns, context, foreignKey.location, 'referenced in foreign key constraint');
      if (referencedColumns.length !== columns.length) throw new SqlError(SqlState.invalidForeignKey, 'number of referencing and referenced columns for foreign key disagree');
      if (!keys.some((key) => sameColumns(key, referencedColumns))) {
        throw new SqlError(SqlState.invalidForeignKey, `there is no unique constraint matching given keys for referenced table "${referenced.name}"`);
      }
    }
    if (referencedColumns.length !== columns.length) throw new SqlError(SqlState.invalidForeignKey, 'number of referencing and referenced columns for foreign key disagree');
    let name = foreignKey.name;
    if (name === undefined) {
      const base = `${table.name}_${foreignKey.columns.join('_')}_fkey`.slice(0, 63);
      name = base;
      for (let suffix = 1; taken.has(name); suffix++) name = `${base}${suffix}`;
    }
    taken.add(name);
    return {
      name,
      kind: 'foreign_key',
      columns,
      references: {
        relationId: referenced.id,
        columns: referencedColumns,
        onUpdate: foreignKey.onUpdate,
        onDelete: foreignKey.onDelete,
        match: foreignKey.match,
        ...(foreignKey.deferrable ? { deferrable: true, initiallyDeferred: foreignKey.initiallyDeferred } : {}),
      },
    } satisfies ConstraintDef;
  });
}


/**
 * ALTER TABLE t ADD [CONSTRAINT name] UNIQUE (...) | FOREIGN KEY (...) REFERENCES ...: the
 * constraint added to the catalog; the session fills a UNIQUE constraint's index from the rows
 * (23505 on a duplicate) and checks every row against a new foreign key (23503), in the DDL's epoch.
 */
export function addTableConstraint(relation: RelationDef, constraint: Constraint, context: DdlContext): DdlOutcome {
  const draft = draftOf(context);
  const hasPrimaryKey = context.catalog.dependents(relation.id).some((index) => index.kind === 'index' && index.indexOn?.primary === true);
  let added: ConstraintDef[];
  if (constraint.contype === 'CONSTR_UNIQUE') {
    added = addUniqueConstraints(draft, context, relation, [uniqueOf(context, constraint, (constraint.keys ?? []).map(stringValue))]);
  } else if (constraint.contype === 'CONSTR_FOREIGN') {
    const existing = (relation.constraints ?? []).filter((candidate) => candidate.kind === 'unique').map((candidate) => ({ columns: candidate.columns.map((column) => relation.columns[column]!.name), name: candidate.name, location: undefined }));
    added = resolveForeignKeys(draft, context, relation, relation.primaryKey, hasPrimaryKey, existing, [foreignKeyOf(context, constraint, (constraint.fk_attrs ?? []).map(stringValue))]);
  } else {
    throw new SqlError(SqlState.featureNotSupported, `ALTER TABLE ADD ${String(constraint.contype).replace('CONSTR_', '')} is not supported yet`, {
      hint: 'oxbow adds UNIQUE and FOREIGN KEY constraints to an existing table.',
    });
  }
  const name = added[0]!.name;
  if ((relation.constraints ?? []).some((candidate) => candidate.name === name) || (relation.checks ?? []).some((check) => check.name === name)) {
    throw new SqlError(SqlState.duplicateObject, `constraint "${name}" for relation "${relation.name}" already exists`);
  }
  draft.putRelation({ ...relation, constraints: [...(relation.constraints ?? []), ...added] });
  return {
    catalog: draft.finish(),
    commandTag: 'ALTER TABLE',
    notices: [],
    droppedTableIds: [],
    ...(added[0]!.indexId === undefined ? { foreignKeyValidation: relation.id } : { indexBackfill: added[0]!.indexId }),
  };
}
