// Secondary indexes (CREATE [UNIQUE] INDEX on a table): each is a state table of its own, with the
// index's catalog id as table id, keyed by (index columns ++ the table's primary key, or its hidden
// row id) and holding nothing else. TableAccess keeps it in step with every write of the table in
// the same epoch; batch scans read it by a prefix of the index columns (planner rule
// index_lookup), then fetch the rows by primary key. The primary key's own index (t_pkey) has no
// state table: the table is keyed by it.

import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import type { StateStore, StateTable } from '../../storage/state-table.js';

/**
 * The secondary indexes of `relation` in a catalog: not the index of the primary key the table is
 * keyed by (it has no state table), but a primary key added by ALTER TABLE (alter-constraints.ts),
 * which is stored as a unique index.
 */
export function secondaryIndexes(catalog: { dependents(id: number): readonly RelationDef[] }, relationId: number): RelationDef[] {
  return catalog.dependents(relationId).filter((r) => r.kind === 'index' && r.indexOn?.relationId === relationId && r.indexOn.stored === true);
}

/** The index's state table: index columns ++ the table's key columns, all of them the key. */
export function indexStateTable(store: StateStore, relation: RelationDef, index: RelationDef): StateTable {
  const columns = [...index.indexOn!.columns, ...relation.primaryKey];
  return store.table({
    tableId: index.id,
    columnTypes: columns.map((column) => relation.columns[column]!.type),
    primaryKey: columns.map((_, position) => position),
    ...(relation.retentionMs === undefined ? {} : { retentionMs: relation.retentionMs }),
  });
}

/** The index entry of a table row. */
export function indexEntry(relation: RelationDef, index: RelationDef, row: Row): Row {
  const columns = index.indexOn!.columns;
  const entry: Row = new Array(columns.length + relation.primaryKey.length);
  let i = 0;
  for (const column of columns) entry[i++] = row[column] ?? null;
  for (const column of relation.primaryKey) entry[i++] = row[column]!;
  return entry;
}
