// What a DDL statement handler gets and gives back. Handlers are pure over the catalog: they read
// the current snapshot, edit a draft, and return the next snapshot plus the side effects
// ddl-statement.ts applies atomically with it (dropping state tables, notices). They never touch
// storage themselves, so a failing handler leaves nothing behind.

import type { RelationDef } from '../../sql/catalog.js';
import { BOOTSTRAP_ROLE_ID, type CatalogSnapshot } from '../catalog/catalog.js';
import type { ColumnDescription, Notice } from '../catalog/results.js';
import type { Node } from '@pgsql/types';
import type { PlannerContext } from '../../planner/index.js';

export interface DdlContext {
  readonly catalog: CatalogSnapshot;
  readonly searchPath: readonly string[];
  /** The whole statement text, and its offset in the text given to the parser (for positions). */
  readonly statementText: string;
  readonly statementLocation: number;
  /** Result columns of a query (a view's definition), via the planner. */
  describeQuery(query: Node, queryText: string): readonly ColumnDescription[];
  /** The session's planner context (CREATE FUNCTION checks the body with it); absent in some tests. */
  readonly planner?: PlannerContext;
  /** The session's user name; absent in some tests. */
  readonly user?: string;
  /** The current role (SET ROLE), which owns what the statement creates; absent: the bootstrap superuser. */
  readonly roleId?: number;
  /** The session's user (`session_user`): DROP and RENAME of it are refused. */
  readonly sessionRoleId?: number;
}

export interface DdlOutcome {
  /** The next catalog, or undefined when nothing changed (IF NOT EXISTS on an existing object). */
  readonly catalog: CatalogSnapshot | undefined;
  readonly commandTag: string;
  readonly notices: readonly Notice[];
  /** State tables to drop with this change. */
  readonly droppedTableIds: readonly number[];
  /**
   * ALTER TABLE ADD COLUMN with a DEFAULT or NOT NULL: ddl-statement.ts fills the new columns of the
   * existing rows (the default, evaluated once) in the same epoch, or fails on a NULL.
   */
  readonly backfill?: { readonly relationId: number; readonly columnIndexes: readonly number[] };
  /** CREATE INDEX on a table: the index (by id) whose state table ddl-statement.ts fills from the table's rows in the same epoch. */
  readonly indexBackfill?: number;
  /** ALTER SEQUENCE: the sequence whose options changed, and RESTART's value, for the runtime once the DDL commits. */
  readonly sequenceChange?: { readonly id: number; readonly restart?: bigint };
  /** ALTER TABLE ADD FOREIGN KEY: the table whose every row the session checks against its foreign keys. */
  readonly foreignKeyValidation?: number;
}

export function unchanged(commandTag: string, notices: readonly Notice[] = []): DdlOutcome {
  return { catalog: undefined, commandTag, notices, droppedTableIds: [] };
}

/** PostgreSQL's words for a relation kind in messages ("view v depends on table t"). */
export function kindWord(kind: RelationDef['kind']): string {
  switch (kind) {
    case 'table':
      return 'table';
    case 'view':
      return 'view';
    case 'materialized_view':
      return 'materialized view';
    case 'source':
      return 'source';
    case 'sink':
      return 'sink';
    case 'subscription':
      return 'subscription';
    case 'index':
      return 'index';
    case 'sequence':
      return 'sequence';
    case 'system':
      return 'system table';
  }
}

/** The role a DDL statement runs as (the bootstrap superuser when the context names none). */
export function currentRoleId(context: DdlContext): number {
  return context.roleId ?? BOOTSTRAP_ROLE_ID;
}

/** A 1-based position for a 0-based location inside the statement, as SqlError wants. */
export function positionOf(context: DdlContext, location: number | undefined): number | undefined {
  if (location === undefined || location < 0) return undefined;
  return location + 1;
}

/** The schema a new object goes to: explicit, or the first existing schema of the search path. */
export function targetSchemaName(context: DdlContext, explicit: string | undefined): string {
  if (explicit !== undefined) return explicit;
  for (const name of context.searchPath) {
    if (name === 'pg_catalog') continue;
    if (context.catalog.schema(name) !== undefined) return name;
  }
  return '';
}
