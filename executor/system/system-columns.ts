// Declaring system relations compactly: a column list written as `name:type` strings becomes the
// RelationDef the planner binds against. Type spellings are PostgreSQL's catalog types mapped to
// oxbow's (oidvector and int2vector as arrays of that OID and text form, pg_node_tree and aclitem
// as text).

import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { arrayOf, type, vectorOf, type DataType, type TypeName } from '../../sql/types.js';

function columnType(spelling: string): DataType {
  if (spelling.endsWith('[]')) return arrayOf(columnType(spelling.slice(0, -2)));
  if (spelling === 'int2vector' || spelling === 'oidvector') return vectorOf(spelling);
  return type(spelling as Exclude<TypeName, 'array'>);
}

export function systemRelation(id: number, schema: string, name: string, columns: readonly string[]): RelationDef {
  const defs: ColumnDef[] = columns.map((spec) => {
    const [columnName, spelling] = spec.split(':') as [string, string];
    return { name: columnName, type: columnType(spelling), nullable: true, hidden: false };
  });
  return { id, kind: 'system', schema, name, columns: defs, primaryKey: [], dependsOn: [] };
}
