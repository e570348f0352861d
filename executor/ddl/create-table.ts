// CREATE TABLE: columns with PostgreSQL type names, NOT NULL, DEFAULT, and a PRIMARY KEY given on
// a column or as a table constraint. A table with a primary key also gets its `<table>_pkey` index
// in the catalog (psql's \d shows it); a table without one gets a hidden int8 `_row_id` column as
// its key, which SELECT * does not show. CHECK constraints are verified by the session; serial and
// identity columns own a sequence (ddl/sequence.ts); UNIQUE constraints get the stored unique
// index that enforces them; FOREIGN KEY constraints are checked here and enforced by the session
// (ddl/table-constraints.ts, ../batch/foreign-keys.ts).

import type { ColumnDef as PgColumnDef, Constraint, CreateStmt, Node, RangeVar } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type, type DataType } from '../../sql/types.js';
import { dataTypeFromTypeName, formatTypeName } from '../catalog/type-names.js';
import { parse } from '../../sql/parser/index.js';
import { quoteIdentifier } from '../system/system-context.js';
import { type DdlContext, type DdlOutcome, positionOf, unchanged } from './ddl-context.js';
import { checkExpressionTextAt, creationSchema, expressionTextAt, stringValue } from './sql-text.js';
import { CatalogDraft, ROW_ID_COLUMN, type CatalogSnapshot } from '../catalog/catalog.js';
import { retentionOption } from './retention.js';
import type { ConstraintDef, SequenceDef } from '../../sql/catalog.js';
import { addOwnedSequence, identityType, normalizedDefault, sequenceSpec, serialDefault, serialType } from './sequence.js';
import { foreignKeyOf, type ForeignKeyText, resolveForeignKeys, type UniqueText, uniqueOf, addUniqueConstraints } from './table-constraints.js';
import { watermarkOf } from './watermark.js';

export { ROW_ID_COLUMN };
const MAX_COLUMNS = 1600;

function unsupportedConstraint(context: DdlContext, constraint: Constraint, what: string): SqlError {
  return new SqlError(SqlState.featureNotSupported, `${what} constraints are not supported yet`, {
    position: positionOf(context, constraint.location),
    hint: 'oxbow enforces PRIMARY KEY, NOT NULL and CHECK constraints.',
  });
}

/** A relation name free in `schema`, PostgreSQL style: base, base1, base2... */
export function freeRelationName(catalog: CatalogSnapshot | CatalogDraftView, schema: string, base: string): string {
  let name = base.slice(0, 63);
  for (let suffix = 1; catalog.relation(schema, name) !== undefined; suffix++) {
    const tail = String(suffix);
    name = base.slice(0, 63 - tail.length) + tail;
  }
  return name;
}

interface CatalogDraftView {
  relation(schema: string, name: string): RelationDef | undefined;
}

export function createTable(statement: CreateStmt, context: DdlContext): DdlOutcome {
  const relation = statement.relation!;
  const name = relation.relname ?? '';
  if ((statement as { oxbowConnector?: unknown }).oxbowConnector !== undefined) {
    throw new SqlError(SqlState.featureNotSupported, 'tables with a connector are not supported yet', {
      position: positionOf(context, relation.location),
      hint: 'Connector tables and sources arrive with the streaming engine.',
    });
  }
  if (statement.inhRelations !== undefined && statement.inhRelations.length > 0) {
    throw new SqlError(SqlState.featureNotSupported, 'table inheritance is not supported');
  }
  if (statement.partspec !== undefined) throw new SqlError(SqlState.featureNotSupported, 'partitioned tables are not supported');
  if (relation.relpersistence === 't') {
    throw new SqlError(SqlState.featureNotSupported, 'temporary tables are not supported', {
      position: positionOf(context, relation.location),
    });
  }
  const schema = creationSchema(context, relation);
  if (context.catalog.relation(schema, name) !== undefined) {
    if (statement.if_not_exists === true) {
      return unchanged('CREATE TABLE', [
        { severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` },
      ]);
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }

  const columns: { name: string; def: ColumnDef; location: number | undefined }[] = [];
  const checks: CheckText[] = [];
  // Serial and identity columns (their owned sequences), UNIQUE and FOREIGN KEY constraints.
  const owned: { column: string; def: SequenceDef; identity?: 'always' | 'by default'; name?: string }[] = [];
  const uniques: UniqueText[] = [];
  const foreignKeys: ForeignKeyText[] = [];
  let primaryKeyNames: { names: string[]; location: number | undefined } | undefined;
  const setPrimaryKey = (names: string[], location: number | undefined): void => {
    if (primaryKeyNames !== undefined) {
      throw new SqlError(SqlState.invalidTableDefinition, `multiple primary keys for table "${name}" are not allowed`, {
        position: positionOf(context, location),
      });
    }
    primaryKeyNames = { names, location };
  };

  for (const element of statement.tableElts ?? []) {
    const columnNode = (element as { ColumnDef?: PgColumnDef }).ColumnDef;
    const constraintNode = (element as { Constraint?: Constraint }).Constraint;
    if (columnNode !== undefined) {
      const columnName = columnNode.colname ?? '';
      if (columns.some((column) => column.name === columnName)) {
        throw new SqlError(SqlState.duplicateColumn, `column "${columnName}" specified more than once`);
      }
      const serial = serialType(columnNode.typeName!);
      const columnType = serial === undefined ? dataTypeFromTypeName(columnNode.typeName!) : type(serial);
      checkCollation(columnNode, context);
      let nullable = serial === undefined;
      let defaultSql: string | undefined;
      let identity: { kind: 'always' | 'by default'; options: Node[] | undefined; location: number | undefined } | undefined;
      for (const item of columnNode.constraints ?? []) {
        const constraint = (item as { Constraint: Constraint }).Constraint;
        switch (constraint.contype) {
          case 'CONSTR_NOTNULL':
            nullable = false;
            break;
          case 'CONSTR_NULL':
            break;
          case 'CONSTR_DEFAULT': {
            const expression = constraint.raw_expr as Node & Record<string, { location?: number }>;
            const start = firstLocation(expression);
            defaultSql =
              start === undefined
                ? undefined
                : expressionTextAt(context.statementText, start - context.statementLocation) || undefined;
            if (defaultSql === undefined) {
              throw new SqlError(SqlState.featureNotSupported, 'this DEFAULT expression is not supported', {
                position: positionOf(context, constraint.location),
              });
            }
            defaultSql = normalizedDefault(defaultSql, context);
            if (serial !== undefined) {
              throw new SqlError(SqlState.syntaxError, `multiple default values specified for column "${columnName}" of table "${name}"`, { position: positionOf(context, constraint.location) });
            }
            break;
          }
          case 'CONSTR_IDENTITY':
            if (identity !== undefined) {
              throw new SqlError(SqlState.syntaxError, `multiple identity specifications for column "${columnName}" of table "${name}"`, { position: positionOf(context, constraint.location) });
            }
            identity = { kind: constraint.generated_when === 'a' ? 'always' : 'by default', options: constraint.options as Node[] | undefined, location: constraint.location };
            nullable = false;
            break;
          case 'CONSTR_PRIMARY':
            setPrimaryKey([columnName], constraint.location);
            nullable = false;
            break;
          case 'CONSTR_UNIQUE':
            uniques.push(uniqueOf(context, constraint, [columnName]));
            break;
          case 'CONSTR_CHECK':
            checks.push(checkOf(context, constraint, `${name}_${columnName}_check`));
            break;
          case 'CONSTR_FOREIGN':
            foreignKeys.push(foreignKeyOf(context, constraint, [columnName]));
            break;
          default:
            throw unsupportedConstraint(context, constraint, String(constraint.contype).replace('CONSTR_', ''));
        }
      }
      const def: ColumnDef = { name: columnName, type: columnType, nullable, hidden: false, ...(defaultSql === undefined ? {} : { defaultSql }) };
      if (serial !== undefined && identity !== undefined) {
        throw new SqlError(SqlState.syntaxError, `both default and identity specified for column "${columnName}" of table "${name}"`, { position: positionOf(context, identity.location) });
      }
      if (serial !== undefined) owned.push({ column: columnName, def: sequenceSpec(undefined, context, undefined, serial).def });
      if (identity !== undefined) {
        const integer = identityType(def, name);
        const spec = sequenceSpec(identity.options, context, undefined, integer);
        owned.push({ column: columnName, def: spec.def, identity: identity.kind, ...(spec.sequenceName === undefined ? {} : { name: spec.sequenceName }) });
      }
      columns.push({ name: columnName, location: columnNode.location, def });
    } else if (constraintNode !== undefined) {
      switch (constraintNode.contype) {
        case 'CONSTR_PRIMARY':
          setPrimaryKey((constraintNode.keys ?? []).map(stringValue), constraintNode.location);
          break;
        case 'CONSTR_UNIQUE':
          uniques.push(uniqueOf(context, constraintNode, (constraintNode.keys ?? []).map(stringValue)));
          break;
        case 'CONSTR_CHECK':
          checks.push(checkOf(context, constraintNode, `${name}_check`));
          break;
        case 'CONSTR_FOREIGN':
          foreignKeys.push(foreignKeyOf(context, constraintNode, (constraintNode.fk_attrs ?? []).map(stringValue)));
          break;
        default:
          throw unsupportedConstraint(context, constraintNode, String(constraintNode.contype).replace('CONSTR_', ''));
      }
    } else {
      throw new SqlError(SqlState.featureNotSupported, 'LIKE clauses in CREATE TABLE are not supported');
    }
  }
  if (checks.length > 64) {
    throw new SqlError(SqlState.programLimitExceeded, 'tables can have at most 64 CHECK constraints');
  }
  if (columns.length > MAX_COLUMNS) {
    throw new SqlError(SqlState.tooManyColumns, `tables can have at most ${MAX_COLUMNS} columns`);
  }

  const columnDefs: ColumnDef[] = columns.map((column) => column.def);
  let primaryKey: number[];
  if (primaryKeyNames !== undefined) {
    primaryKey = [];
    for (const keyName of primaryKeyNames.names) {
      const index = columnDefs.findIndex((column) => column.name === keyName);
      if (index < 0) {
        throw new SqlError(SqlState.undefinedColumn, `column "${keyName}" named in key does not exist`, {
          position: positionOf(context, primaryKeyNames.location),
        });
      }
      if (primaryKey.includes(index)) {
        throw new SqlError(SqlState.duplicateColumn, `column "${keyName}" appears twice in primary key constraint`, {
          position: positionOf(context, primaryKeyNames.location),
        });
      }
      primaryKey.push(index);
      const column = columnDefs[index]!;
      const keyTypeName = column.type.name === 'array' ? column.type.element?.name : column.type.name;
      if (keyTypeName === 'json') {
        throw new SqlError(SqlState.undefinedObject, `data type json has no default operator class for access method "btree"`, {
          hint: 'You must specify an operator class for the index or define a default operator class for the data type.',
        });
      }
      if (column.nullable) columnDefs[index] = { ...column, nullable: false };
    }
  } else {
    columnDefs.push({ name: ROW_ID_COLUMN, type: type('int8'), nullable: false, hidden: true });
    primaryKey = [columnDefs.length - 1];
  }
  for (const check of checks) validateCheck(context, name, columnDefs, check);
  const namedChecks = uniqueCheckNames(checks);
  const retentionMs = retentionOption(statement.options)?.retentionMs;
  const watermark = watermarkOf(statement, columnDefs);
  return addTable(context, {
    schema,
    name,
    columns: columnDefs,
    primaryKey,
    hasPrimaryKey: primaryKeyNames !== undefined,
    checks: namedChecks,
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(watermark === undefined ? {} : { watermark }),
    owned,
    uniques,
    foreignKeys,
  });
}

/** Binds a CHECK expression against the new table's columns (42703 for an unknown column...). */
function validateCheck(context: DdlContext, table: string, columns: readonly ColumnDef[], check: CheckText): void {
  const visible = columns.filter((column) => !column.hidden);
  const values = visible.map((column) => `NULL::${formatTypeName(column.type)}`).join(', ');
  const names = visible.map((column) => quoteIdentifier(column.name)).join(', ');
  const prefix = 'SELECT (';
  const text = `${prefix}${check.sql}) FROM (VALUES (${values})) AS ${quoteIdentifier(table)}(${names})`;
  const [statement] = parse(text);
  let described: readonly { readonly type: DataType }[];
  try {
    described = context.describeQuery(statement!.node as Node, text);
  } catch (error) {
    // Positions inside the check's text map back onto the CREATE TABLE statement.
    if (error instanceof SqlError && error.position !== undefined) {
      const offset = error.position - 1 - prefix.length;
      error.position = offset >= 0 && offset <= check.sql.length ? check.location + offset + 1 : undefined;
    }
    throw error;
  }
  const resultType = described[0]?.type;
  if (resultType !== undefined && resultType.name !== 'bool' && resultType.name !== 'unknown') {
    throw new SqlError(SqlState.datatypeMismatch, `argument of CHECK must be type boolean, not type ${formatTypeName(resultType)}`, {
      position: check.location + 1,
    });
  }
}

interface CheckText {
  name: string;
  sql: string;
  explicit: boolean;
  /** 0-based offset of `sql` in the whole query text (for error positions). */
  location: number;
}

function checkOf(context: DdlContext, constraint: Constraint, defaultName: string): CheckText {
  const start = (constraint.location ?? -1) - context.statementLocation;
  const sql = start < 0 ? undefined : checkExpressionTextAt(context.statementText, start);
  if (sql === undefined || sql === '') throw unsupportedConstraint(context, constraint, 'this CHECK');
  const location = context.statementLocation + context.statementText.indexOf(sql, start);
  return { name: constraint.conname ?? defaultName, sql, explicit: constraint.conname !== undefined, location };
}

/** Generated names get PostgreSQL's numeric suffixes (t_check, t_check1...); sorted by name. */
function uniqueCheckNames(checks: readonly CheckText[]): { name: string; sql: string }[] {
  const taken = new Set(checks.filter((check) => check.explicit).map((check) => check.name));
  const named = checks.map((check) => {
    if (check.explicit) return { name: check.name, sql: check.sql };
    let candidate = check.name;
    for (let suffix = 1; taken.has(candidate); suffix++) candidate = `${check.name}${suffix}`;
    taken.add(candidate);
    return { name: candidate, sql: check.sql };
  });
  return named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function addTable(
  context: DdlContext,
  table: {
    schema: string;
    name: string;
    columns: ColumnDef[];
    primaryKey: number[];
    hasPrimaryKey: boolean;
    checks?: readonly { name: string; sql: string }[];
    retentionMs?: number;
    watermark?: RelationDef['watermark'];
    owned?: readonly { column: string; def: SequenceDef; identity?: 'always' | 'by default'; name?: string }[];
    uniques?: readonly UniqueText[];
    foreignKeys?: readonly ForeignKeyText[];
  },
): DdlOutcome {
  const draft: CatalogDraft = draftOf(context);
  const id = draft.allocateId();
  const columns = [...table.columns];
  const tableDef = (constraints: readonly ConstraintDef[]): RelationDef => ({
    id,
    kind: 'table',
    schema: table.schema,
    name: table.name,
    columns,
    primaryKey: table.primaryKey,
    dependsOn: [],
    ...(table.checks === undefined || table.checks.length === 0 ? {} : { checks: table.checks }),
    ...(table.retentionMs === undefined ? {} : { retentionMs: table.retentionMs }),
    ...(table.watermark === undefined ? {} : { watermark: table.watermark }),
    ...(constraints.length === 0 ? {} : { constraints }),
  });
  draft.putRelation(tableDef([]));
  // Each serial or identity column's sequence, owned by the column (dropped with the table).
  for (const sequence of table.owned ?? []) {
    const index = columns.findIndex((column) => column.name === sequence.column);
    const created = addOwnedSequence(draft, context, { id, schema: table.schema, name: table.name }, { name: sequence.column, index }, sequence.def, sequence.name);
    columns[index] =
      sequence.identity === undefined
        ? { ...columns[index]!, defaultSql: serialDefault(created.name) }
        : { ...columns[index]!, identity: { kind: sequence.identity, sequenceId: created.id } };
  }
  draft.putRelation(tableDef([]));
  if (table.hasPrimaryKey) {
    const indexName = freeRelationName(draft.finish(), table.schema, `${table.name}_pkey`);
    draft.putRelation({
      id: draft.allocateId(),
      kind: 'index',
      schema: table.schema,
      name: indexName,
      columns: table.primaryKey.map((index) => table.columns[index]!),
      primaryKey: table.primaryKey.map((_, position) => position),
      dependsOn: [],
      indexOn: { relationId: id, columns: table.primaryKey, unique: true, primary: true },
    });
  }
  const draftTable = tableDef([]);
  const constraints = [
    ...addUniqueConstraints(draft, context, draftTable, table.uniques ?? []),
    ...resolveForeignKeys(draft, context, draftTable, table.primaryKey, table.hasPrimaryKey, table.uniques ?? [], table.foreignKeys ?? []),
  ];
  if (constraints.length > 0) draft.putRelation(tableDef(constraints));
  return { catalog: draft.finish(), commandTag: 'CREATE TABLE', notices: [], droppedTableIds: [] };
}

/** Collations: oxbow compares text by code point, which is PostgreSQL's "C" collation. */
function checkCollation(column: PgColumnDef, context: DdlContext): void {
  const names = (column.collClause?.collname ?? []).map(stringValue);
  if (names.length === 0) return;
  const name = names[names.length - 1]!;
  if (name === 'C' || name === 'POSIX' || name === 'default') return;
  throw new SqlError(SqlState.undefinedObject, `collation "${name}" for encoding "UTF8" does not exist`, {
    position: positionOf(context, column.collClause?.location),
    hint: 'oxbow compares text by code point: the "C" collation.',
  });
}

/** A draft over the context's snapshot. */
export function draftOf(context: DdlContext): CatalogDraft {
  return new CatalogDraft(context.catalog);
}

/** The smallest `location` anywhere in an expression tree: where its text starts. */
export function firstLocation(node: unknown): number | undefined {
  let best: number | undefined;
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === 'location' && typeof child === 'number' && child >= 0) {
        if (best === undefined || child < best) best = child;
      } else visit(child);
    }
  };
  visit(node);
  return best;
}

/**
 * CREATE TABLE name [(column names)] AS query: the catalog side. The table takes the query's
 * column names and types (`unknown` literals become text) and a hidden row id; ddl-statement.ts
 * fills it with the query's rows in the same epoch.
 */
export function createTableAs(
  into: { readonly rel?: RangeVar; readonly colNames?: readonly Node[] },
  ifNotExists: boolean,
  queryColumns: readonly { readonly name: string; readonly type: DataType }[],
  context: DdlContext,
): DdlOutcome {
  const relation = into.rel!;
  const name = relation.relname ?? '';
  const schema = creationSchema(context, relation);
  if (context.catalog.relation(schema, name) !== undefined) {
    if (ifNotExists) {
      return unchanged('CREATE TABLE AS', [
        { severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` },
      ]);
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  const names = (into.colNames ?? []).map(stringValue);
  if (names.length > queryColumns.length) throw new SqlError(SqlState.syntaxError, 'too many column names were specified');
  const columns: ColumnDef[] = queryColumns.map((column, index) => ({
    name: names[index] ?? column.name,
    type: column.type.name === 'unknown' ? type('text') : column.type,
    nullable: true,
    hidden: false,
  }));
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column.name)) throw new SqlError(SqlState.duplicateColumn, `column "${column.name}" specified more than once`);
    seen.add(column.name);
  }
  columns.push({ name: ROW_ID_COLUMN, type: type('int8'), nullable: false, hidden: true });
  return addTable(context, { schema, name, columns, primaryKey: [columns.length - 1], hasPrimaryKey: false });
}
