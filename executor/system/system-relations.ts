// The registry of system relations: their definitions (loaded into the catalog at start, kind
// 'system') and the row source TableAccess uses to scan them. Rows are generated once per
// relation per statement, from the statement's catalog snapshot, so a statement joining pg_class
// with itself sees one consistent state.

import { pgCursorsTable, pgPreparedStatementsTable } from './session-cursors-relation.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import type { SystemRowSource } from '../batch/table-access.js';
import { informationSchemaTables } from './information-schema.js';
import { pgCatalogTables, type SystemTable } from './pg-catalog.js';
import type { SystemContext } from './system-context.js';
import { checkpointsTable, recoveryTable } from './checkpoints-relation.js';
import { timeTravelTable } from './time-travel-relation.js';
import { subscriptionsTable } from './subscriptions-relation.js';
import { viewErrorsTable } from './view-errors-relation.js';
import { backfillProgressTable } from './backfill-progress-relation.js';
import { nodesTable } from './nodes-relation.js';
import { vnodesTable } from './vnodes-relation.js';

const ownTables: readonly SystemTable[] = [...pgCatalogTables, ...informationSchemaTables, viewErrorsTable, backfillProgressTable, checkpointsTable, recoveryTable, nodesTable, vnodesTable, timeTravelTable, pgCursorsTable, pgPreparedStatementsTable, subscriptionsTable];

/**
 * The system relations of an engine: system's own and those the layers above provide (the
 * connectors' source relations, metrics' status relations), which the engine registers here.
 */
export class SystemRegistry {
  private readonly tables: readonly SystemTable[];
  private readonly byId: ReadonlyMap<number, SystemTable>;

  constructor(provided: readonly SystemTable[] = []) {
    this.tables = [...ownTables, ...provided];
    this.byId = new Map(this.tables.map((table) => [table.def.id, table]));
  }

  defs(): RelationDef[] {
    return this.tables.map((table) => table.def);
  }

  table(relationId: number): SystemTable | undefined {
    return this.byId.get(relationId);
  }
}

const ownRegistry = new SystemRegistry();

/** The definitions of system's own relations and of `provided`. */
export function systemRelationDefs(provided: readonly SystemTable[] = []): RelationDef[] {
  return provided.length === 0 ? ownRegistry.defs() : new SystemRegistry(provided).defs();
}

export class SystemRelations implements SystemRowSource {
  private readonly cache = new Map<number, Row[]>();

  constructor(
    private readonly context: SystemContext,
    private readonly registry: SystemRegistry = ownRegistry,
  ) {}

  systemRows(relation: RelationDef): Row[] {
    let rows = this.cache.get(relation.id);
    if (rows === undefined) {
      const table = this.registry.table(relation.id);
      rows = table === undefined ? [] : table.rows(this.context);
      this.cache.set(relation.id, rows);
    }
    // Callers may keep or reorder the array; hand out a copy of the list, rows are never mutated.
    return rows.slice();
  }
}
