// The text SHOW CREATE SOURCE and SHOW CREATE SINK print: the statement rebuilt from the catalog
// in RisingWave's syntax (columns, PRIMARY KEY, WATERMARK, INCLUDE, WITH options, FORMAT ...
// ENCODE ...), so running it again creates the same object.

import type { RelationDef } from '../../sql/catalog.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { quoteIdentifier } from '../catalog/object-names.js';
import { formatTypeName } from '../catalog/type-names.js';

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function qualifiedName(relation: RelationDef): string {
  return `${quoteIdentifier(relation.schema)}.${quoteIdentifier(relation.name)}`;
}

/** `WITH (...) [FORMAT f ENCODE e [(...)]]`: the connector options; `encode.x` keys go to ENCODE's list. */
function connectorTail(relation: RelationDef): string {
  const options = Object.entries(relation.options ?? {});
  const withOptions = options.filter(([key]) => !key.startsWith('encode.'));
  const encodeOptions = options.filter(([key]) => key.startsWith('encode.')).map(([key, value]) => [key.slice('encode.'.length), value] as const);
  const list = (entries: readonly (readonly [string, string])[]) => entries.map(([key, value]) => `${key} = ${quoteLiteral(value)}`).join(', ');
  let text = `WITH (${list(withOptions)})`;
  if (relation.format !== undefined) {
    text += ` FORMAT ${relation.format.toUpperCase()}`;
    if (relation.encode !== undefined) text += ` ENCODE ${relation.encode.toUpperCase()}`;
    if (encodeOptions.length > 0) text += ` (${list(encodeOptions)})`;
  }
  return text;
}

export function createSourceText(relation: RelationDef): string {
  const included = new Set((relation.include ?? []).map((item) => item.column));
  const elements = relation.columns
    .filter((column) => !column.hidden && !included.has(column.name))
    .map((column) => `${quoteIdentifier(column.name)} ${formatTypeName(column.type)}`);
  const key = relation.primaryKey.map((index) => relation.columns[index]!).filter((column) => !column.hidden);
  if (key.length > 0) elements.push(`PRIMARY KEY (${key.map((column) => quoteIdentifier(column.name)).join(', ')})`);
  if (relation.watermark !== undefined) {
    const column = quoteIdentifier(relation.columns[relation.watermark.column]?.name ?? '?');
    elements.push(`WATERMARK FOR ${column} AS ${column} - INTERVAL ${quoteLiteral(relation.watermark.delay)}`);
  }
  const include = (relation.include ?? []).map((item) => ` INCLUDE ${item.what} AS ${quoteIdentifier(item.column)}`).join('');
  return `CREATE SOURCE ${qualifiedName(relation)} (${elements.join(', ')})${include} ${connectorTail(relation)}`;
}

export function createSinkText(relation: RelationDef, catalog: CatalogSnapshot): string {
  if (relation.definition !== undefined) return `CREATE SINK ${qualifiedName(relation)} AS ${relation.definition} ${connectorTail(relation)}`;
  const from = relation.dependsOn.length > 0 ? catalog.relationById(relation.dependsOn[0]!) : undefined;
  return `CREATE SINK ${qualifiedName(relation)} FROM ${from === undefined ? '?' : qualifiedName(from)} ${connectorTail(relation)}`;
}
