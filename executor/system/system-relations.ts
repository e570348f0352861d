// The registry of system relations: their definitions (loaded into the catalog at start, kind
// 'system') and the row source TableAccess uses to scan them. Rows are generated once per
// relation per statement, from the statement's catalog snapshot, so a statement joining pg_class
// with itself sees one consistent state.

import { pgCursorsTable, pgPreparedStatementsTable } from './session-cursors-relation.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import type { SystemRowSource } from '../table-access.js';
import { informationSchemaTables } from './information-schema.js';
import { pgCatalogTables, type SystemTable } from './pg-catalog.js';
import type { SystemContext } from './system-context.js';
import { checkpointsTable, recoveryTable } from './checkpoints-relation.js';
import { timeTravelTable } from './time-travel-relation.js';
import { operatorViewTables } from './oxbow-catalog.js';
import { viewErrorsTable } from '../stream/view-errors-relation.js';
import { backfillProgressTable } from './backfill-progress-relation.js';
import { sourceErrorsTable, sourcePartitionsTable } from '../source/source-relations.js';

const allTables: readonly SystemTable[] = [...pgCatalogTables, ...informationSchemaTables, viewErrorsTable, backfillProgressTable, sourceErrorsTable, sourcePartitionsTable, checkpointsTable, recoveryTable, timeTravelTable, ...operatorViewTables, pgCursorsTable, pgPreparedStatementsTable];
const byId = new Map<number, SystemTable>(allTables.map((table) => [table.def.id, table]));

export function systemRelationDefs(): RelationDef[] {
  return allTables.map((table) => table.def);
}

export class SystemRelations implements SystemRowSource {
  private readonly cache = new Map<number, Row[]>();

  constructor(private readonly context: SystemContext) {}

  systemRows(relation: RelationDef): Row[] {
    let rows = this.cache.get(relation.id);
    if (rows === undefined) {
      const table = byId.get(relation.id);
      rows = table === undefined ? [] : table.rows(this.context);
      this.cache.set(relation.id, rows);
    }
    // Callers may keep or reorder the array; hand out a copy of the list, rows are never mutated.
    return rows.slice();
  }
}
