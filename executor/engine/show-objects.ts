// RisingWave's listing statements, which its users type instead of psql's \d commands:
// SHOW TABLES | VIEWS | MATERIALIZED VIEWS | SOURCES | SINKS | SCHEMAS | DATABASES | FUNCTIONS
// [FROM schema] [LIKE 'pattern'], SHOW COLUMNS | INDEXES FROM relation, DESCRIBE relation, and
// SHOW CREATE TABLE | VIEW | ... name. Result columns follow RisingWave's (`Name`, `Type`,
// `Is Hidden`, `Description`...). SHOW CREATE rebuilds the statement from the catalog (oxbow keeps
// definitions, not the original CREATE text).

import type { RangeVar } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { OxbowShowCreate, OxbowShowObjects } from '../../sql/parser/ast.js';
import { createSinkText, createSourceText } from './show-create-connector.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import type { ColumnDescription } from './engine.js';
import { formatTypeName } from '../catalog/type-names.js';
import { quoteIdentifier } from '../system/system-context.js';

export interface ShowResult {
  readonly columns: readonly ColumnDescription[];
  readonly rows: Row[];
}

function textColumns(...names: string[]): ColumnDescription[] {
  return names.map((name) => ({ name, type: type('text'), tableOid: 0, columnNumber: 0 }));
}

/** SQL LIKE as a regular expression (% any run, _ one character, backslash escapes). */
function likePattern(pattern: string): RegExp {
  let source = '';
  for (let index = 0; index < pattern.length; index++) {
    const character = pattern[index]!;
    if (character === '\\' && index + 1 < pattern.length) source += pattern[++index]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (character === '%') source += '.*';
    else if (character === '_') source += '.';
    else source += character.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

const listedKinds: Readonly<Record<string, RelationDef['kind']>> = {
  tables: 'table',
  views: 'view',
  'materialized views': 'materialized_view',
  sources: 'source',
  sinks: 'sink',
  subscriptions: 'subscription',
};

function findRelation(catalog: CatalogSnapshot, names: readonly string[], searchPath: readonly string[]): RelationDef {
  const name = names[names.length - 1] ?? '';
  const relation = catalog.resolveRelation(names.length > 1 ? names[names.length - 2] : undefined, name, searchPath);
  if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`);
  return relation;
}

function columnRows(relation: RelationDef): Row[] {
  return relation.columns.map((column) => [column.name, formatTypeName(column.type), column.hidden ? 'true' : 'false', column.comment ?? null]);
}

export function showObjects(statement: OxbowShowObjects, catalog: CatalogSnapshot, searchPath: readonly string[], database: string): ShowResult {
  const like = statement.like === undefined ? undefined : likePattern(statement.like);
  const keep = (name: string) => like === undefined || like.test(name);
  switch (statement.objectType) {
    case 'schemas':
      return { columns: textColumns('Name'), rows: catalog.schemas().map((schema) => schema.name).filter(keep).sort().map((name) => [name]) };
    case 'databases':
      return { columns: textColumns('Name'), rows: keep(database) ? [[database]] : [] };
    case 'functions':
      return { columns: textColumns('Name', 'Arguments', 'Return Type', 'Language', 'Link'), rows: [] };
    case 'columns':
      return { columns: textColumns('Name', 'Type', 'Is Hidden', 'Description'), rows: columnRows(findRelation(catalog, statement.from ?? [], searchPath)).filter((row) => keep(row[0] as string)) };
    case 'indexes': {
      const relation = findRelation(catalog, statement.from ?? [], searchPath);
      const rows: Row[] = catalog
        .dependents(relation.id)
        .filter((index) => index.kind === 'index' && index.indexOn?.relationId === relation.id)
        .map((index) => [index.name, relation.name, index.indexOn!.columns.map((column) => relation.columns[column]?.name ?? '?').join(', '), '', ''])
        .filter((row) => keep(row[0] as string));
      return { columns: textColumns('Name', 'On', 'Key', 'Include', 'Distributed By'), rows };
    }
    default: {
      const kind = listedKinds[statement.objectType];
      const schema = statement.from?.[0] ?? searchPath.find((name) => name !== 'pg_catalog' && catalog.schema(name) !== undefined) ?? 'public';
      if (catalog.schema(schema) === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${schema}" does not exist`);
      const rows = catalog
        .relations()
        .filter((relation) => relation.kind === kind && relation.schema === schema && keep(relation.name))
        .map((relation) => relation.name)
        .sort()
        .map((name) => [name]);
      return { columns: textColumns('Name'), rows };
    }
  }
}

/** DESCRIBE relation: its columns, then its primary key and indexes as RisingWave lists them. */
export function describeRelation(relationName: RangeVar, catalog: CatalogSnapshot, searchPath: readonly string[]): ShowResult {
  const relation = findRelation(catalog, [...(relationName.schemaname === undefined ? [] : [relationName.schemaname]), relationName.relname ?? ''], searchPath);
  const rows = columnRows(relation).filter((row) => row[2] === 'false');
  const key = relation.primaryKey.map((index) => relation.columns[index]!).filter((column) => !column.hidden);
  if (key.length > 0) rows.push(['primary key', key.map((column) => column.name).join(', '), null, null]);
  for (const index of catalog.dependents(relation.id)) {
    if (index.kind !== 'index' || index.indexOn?.primary === true) continue;
    rows.push([index.name, `index(${index.indexOn!.columns.map((column) => relation.columns[column]?.name ?? '?').join(', ')})`, null, null]);
  }
  rows.push(['table description', relation.comment ?? null, null, null]);
  return { columns: textColumns('Name', 'Type', 'Is Hidden', 'Description'), rows };
}

function createTableText(relation: RelationDef): string {
  const parts = relation.columns
    .filter((column) => !column.hidden)
    .map((column) => {
      let text = `${quoteIdentifier(column.name)} ${formatTypeName(column.type)}`;
      if (!column.nullable && !relation.primaryKey.includes(relation.columns.indexOf(column))) text += ' NOT NULL';
      if (column.defaultSql !== undefined) text += ` DEFAULT ${column.defaultSql}`;
      return text;
    });
  const key = relation.primaryKey.map((index) => relation.columns[index]!).filter((column) => !column.hidden);
  if (key.length > 0) parts.push(`PRIMARY KEY (${key.map((column) => quoteIdentifier(column.name)).join(', ')})`);
  return `CREATE TABLE ${quoteIdentifier(relation.schema)}.${quoteIdentifier(relation.name)} (${parts.join(', ')})`;
}

export function showCreate(statement: OxbowShowCreate, catalog: CatalogSnapshot, searchPath: readonly string[]): ShowResult {
  const target = statement.name;
  const relation = findRelation(catalog, [...(target.schemaname === undefined ? [] : [target.schemaname]), target.relname ?? ''], searchPath);
  const expected: Readonly<Record<string, RelationDef['kind']>> = {
    table: 'table',
    view: 'view',
    'materialized view': 'materialized_view',
    source: 'source',
    sink: 'sink',
    index: 'index',
  };
  if (relation.kind !== expected[statement.objectType]) {
    throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a ${statement.objectType}`);
  }
  const qualified = `${quoteIdentifier(relation.schema)}.${quoteIdentifier(relation.name)}`;
  let text: string;
  switch (relation.kind) {
    case 'table':
      text = createTableText(relation);
      break;
    case 'view':
      text = `CREATE VIEW ${qualified} AS ${relation.definition ?? ''}`;
      break;
    case 'materialized_view':
      text = `CREATE MATERIALIZED VIEW ${qualified} AS ${relation.definition ?? ''}`;
      break;
    case 'index': {
      const table = catalog.relationById(relation.indexOn!.relationId);
      const columns = relation.indexOn!.columns.map((column) => quoteIdentifier(table?.columns[column]?.name ?? '?')).join(', ');
      text = `CREATE ${relation.indexOn!.unique === true ? 'UNIQUE ' : ''}INDEX ${quoteIdentifier(relation.name)} ON ${table === undefined ? '?' : `${quoteIdentifier(table.schema)}.${quoteIdentifier(table.name)}`} (${columns})`;
      break;
    }
    case 'source':
      text = createSourceText(relation);
      break;
    case 'sink':
      text = createSinkText(relation, catalog);
      break;
    default:
      text = `-- ${statement.objectType} ${qualified}`;
  }
  return { columns: textColumns('Name', 'Create Sql'), rows: [[`${relation.schema}.${relation.name}`, text]] };
}
