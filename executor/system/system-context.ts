// What system relation rows and session functions are generated from: one catalog snapshot, the
// session's settings and identity. Plus the shared derivations both need (relkind letters, OIDs of
// derived objects, attribute numbers, the display text of defaults and index definitions), so
// pg_class, pg_attribute, pg_index and the pg_get_* functions agree with each other.

import type { SessionObjects } from './session-cursors-relation.js';
import type { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import type { ReadableWindow } from '../../storage/state-table.js';
import type { BackfillRecord } from './backfill-progress.js';
import type { ClusterNodeRow } from './nodes-relation.js';
import type { VnodeMapRow } from './vnodes-relation.js';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { formatTypeName } from '../catalog/type-names.js';
import { quoteIdentifier } from '../catalog/object-names.js';
import { constraintDefinitionOf } from './sequence-catalog.js';

export { quoteIdentifier };

export interface SystemContext {
  readonly catalog: CatalogSnapshot;
  readonly settings: SettingsView;
  readonly user: string;
  /** The current role (SET ROLE) and the session user's role; absent: the bootstrap superuser. */
  readonly roleId?: number;
  readonly sessionRoleId?: number;
  readonly database: string;
  readonly searchPath: readonly string[];
  /** Errors recorded inside running materialized views (oxbow_catalog.view_errors). */
  readonly viewErrors?: () => readonly ViewErrorRow[];
  /** Backfills of new materialized views (oxbow_catalog.backfill_progress). */
  readonly backfills?: () => readonly BackfillRecord[];
  /** Checkpoint and recovery figures (oxbow_catalog.checkpoints, oxbow_catalog.recovery); absent without checkpoints. */
  readonly checkpoints?: CheckpointMetrics;
  /** The cluster's nodes (oxbow_catalog.nodes); absent without --cluster. */
  readonly clusterNodes?: () => readonly ClusterNodeRow[];
  /** The vnode map of each keyed fragment running here (oxbow_catalog.vnodes); absent without parallel fragments. */
  readonly vnodeMaps?: () => readonly VnodeMapRow[];
  /** A table's or view's readable time-travel window (oxbow_catalog.time_travel). */
  readonly readableWindow?: (relationId: number) => ReadableWindow;
  /** The server's --time-travel-retention in milliseconds. */
  readonly defaultRetentionMs?: number;
  /** The session's SQL cursors and prepared statements (pg_cursors, pg_prepared_statements). */
  readonly sessionObjects?: SessionObjects;
  /** A sequence's last_value and is_called (pg_sequences); absent: last_value reads NULL. */
  readonly sequenceValue?: (relation: RelationDef) => { readonly last: bigint; readonly called: boolean };
}

/** An error recorded inside a running materialized view (stream/view-errors.ts records them). */
export interface ViewErrorRow {
  readonly viewId: number;
  readonly message: string;
  readonly count: number;
  /** Microseconds since 1970 (a timestamptz value). */
  readonly lastMicros: number;
}

/** A setting as pg_settings lists it (engine/settings.ts defines them). */
export interface SettingRowDefinition {
  readonly name: string;
  readonly defaultValue: string;
  readonly description: string;
  readonly category: string;
  readonly vartype: string;
  readonly unit?: string;
  readonly readOnly?: boolean;
  readonly enumValues?: readonly string[];
}

/** The session's settings as pg_settings and current_setting() read them (engine/settings.ts's SessionSettings). */
export interface SettingsView {
  all(): readonly { readonly definition: SettingRowDefinition; readonly value: string }[];
  /** Where the value comes from: 'default', 'client' or 'session'. */
  source(definition: SettingRowDefinition): string;
  resetValue(name: string): string | undefined;
  show(name: string): { readonly name: string; readonly value: string };
}

/** The bootstrap superuser's OID: the owner of every built-in object and of what no other role owns. */
export const OWNER_OID = 10;
/** pg_database_owner, the owner of schema public in PostgreSQL 15. */
export const DATABASE_OWNER_ROLE_OID = 6171;
export const DATABASE_OID = 16383;
export const HEAP_AM_OID = 2;
export const BTREE_AM_OID = 403;
export const DEFAULT_COLLATION_OID = 100;
export const PG_CLASS_OID = 1259;
export const PG_NAMESPACE_OID = 2615;
/** Primary-key constraints get OIDs derived from their index's id, above every relation id. */
export const CONSTRAINT_OID_OFFSET = 0x40000000;
/** CHECK constraints: OID derived from the table id and the check's position. */
export const CHECK_OID_OFFSET = 0x30000000;
export const CHECKS_PER_TABLE = 64;
/** pg_attrdef rows: OID derived from the relation id and attribute number. */
export const ATTRDEF_OID_OFFSET = 0x20000000;

export function relkind(relation: RelationDef): string {
  switch (relation.kind) {
    case 'table':
      return 'r';
    case 'view':
      return 'v';
    case 'materialized_view':
      return 'm';
    case 'index':
      return 'i';
    case 'source':
      return 'f';
    case 'sink':
    case 'subscription':
      return 's';
    case 'sequence':
      return 'S';
    case 'system':
      return relation.name.startsWith('pg_') && ['pg_tables', 'pg_views', 'pg_matviews', 'pg_roles', 'pg_user', 'pg_settings', 'pg_sequences'].includes(relation.name) ? 'v' : 'r';
  }
}

/** Relations that appear in pg_class (sinks and subscriptions do not: they hold no rows). */
export function inPgClass(relation: RelationDef): boolean {
  return relation.kind !== 'sink' && relation.kind !== 'subscription';
}

/** The visible columns with their attribute numbers (1-based, hidden columns skipped). */
export function attributes(relation: RelationDef): { column: ColumnDef; index: number; attnum: number }[] {
  const result: { column: ColumnDef; index: number; attnum: number }[] = [];
  relation.columns.forEach((column, index) => {
    if (!column.hidden) result.push({ column, index, attnum: result.length + 1 });
  });
  return result;
}

export function attnumOf(relation: RelationDef, columnIndex: number): number {
  return attributes(relation).find((attribute) => attribute.index === columnIndex)?.attnum ?? 0;
}

export function schemaOid(context: SystemContext, name: string): number {
  return context.catalog.schema(name)?.id ?? 0;
}

export function isVisible(context: SystemContext, relation: RelationDef): boolean {
  return context.catalog.resolveRelation(undefined, relation.name, context.searchPath)?.id === relation.id;
}

export function qualifiedName(context: SystemContext, relation: RelationDef, onlyWhenInvisible: boolean): string {
  const name = quoteIdentifier(relation.name);
  if (onlyWhenInvisible && isVisible(context, relation)) return name;
  return `${quoteIdentifier(relation.schema)}.${name}`;
}

/** pg_get_expr's rendering of a stored DEFAULT text, following PostgreSQL's deparser for constants. */
export function defaultDisplayText(column: ColumnDef): string | undefined {
  const text = column.defaultSql?.trim();
  if (text === undefined) return undefined;
  if (/^'(?:[^']|'')*'$/.test(text)) return `${text}::${formatTypeName({ ...column.type, typmod: -1 })}`;
  if (/^-\d+$/.test(text)) return `'${text}'::${Number(text) >= -2147483648 ? 'integer' : 'bigint'}`;
  if (/^-(\d+\.\d*|\.\d+)$/.test(text)) return `'${text}'::numeric`;
  const lower = text.toLowerCase();
  if (['current_timestamp', 'current_date', 'current_time', 'localtimestamp', 'localtime', 'current_user', 'session_user', 'current_schema'].includes(lower)) {
    return text.toUpperCase();
  }
  if (lower === 'true' || lower === 'false' || lower === 'null') return lower === 'null' ? 'NULL' : lower;
  // nextval('s') prints with its implicit cast, as PostgreSQL deparses it.
  const nextval = /^nextval\s*\(\s*('(?:[^']|'')*')\s*\)$/i.exec(text);
  if (nextval !== null) return `nextval(${nextval[1]}::regclass)`;
  return text;
}

/** pg_get_indexdef text: `CREATE [UNIQUE] INDEX name ON schema.table USING btree (a, b)`. */
export function indexDefinition(context: SystemContext, index: RelationDef, pretty: boolean, column = 0): string | undefined {
  const on = index.indexOn;
  if (on === undefined) return undefined;
  const table = context.catalog.relationById(on.relationId);
  if (table === undefined) return undefined;
  const names = on.columns.map((columnIndex) => quoteIdentifier(table.columns[columnIndex]?.name ?? '?'));
  if (column > 0) return names[column - 1];
  const unique = on.unique === true ? 'UNIQUE ' : '';
  return `CREATE ${unique}INDEX ${quoteIdentifier(index.name)} ON ${qualifiedName(context, table, pretty)} USING btree (${names.join(', ')})`;
}

/** The primary-key index behind a constraint OID, if the OID is one. */
export function constraintIndex(context: SystemContext, oid: number): RelationDef | undefined {
  if (oid < CONSTRAINT_OID_OFFSET) return undefined;
  const index = context.catalog.relationById(oid - CONSTRAINT_OID_OFFSET);
  return index?.indexOn?.primary === true ? index : undefined;
}

export function constraintDefinition(context: SystemContext, oid: number): string | undefined {
  if (oid >= CHECK_OID_OFFSET && oid < CONSTRAINT_OID_OFFSET) {
    const table = context.catalog.relationById(Math.floor((oid - CHECK_OID_OFFSET) / CHECKS_PER_TABLE));
    const check = table?.checks?.[(oid - CHECK_OID_OFFSET) % CHECKS_PER_TABLE];
    return check === undefined ? undefined : `CHECK (${check.sql})`;
  }
  const index = constraintIndex(context, oid);
  if (index === undefined) return constraintDefinitionOf(context, oid);
  const table = context.catalog.relationById(index.indexOn!.relationId);
  if (table === undefined) return undefined;
  return `PRIMARY KEY (${index.indexOn!.columns.map((columnIndex) => quoteIdentifier(table.columns[columnIndex]?.name ?? '?')).join(', ')})`;
}

export function roleName(context: SystemContext, oid: number): string {
  return context.catalog.roleById(oid)?.name ?? `unknown (OID=${oid})`;
}

/** The current role's id (`current_user`). */
export function currentRole(context: SystemContext): number {
  return context.roleId ?? OWNER_OID;
}
