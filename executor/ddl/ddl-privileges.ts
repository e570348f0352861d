// Who may run a DDL statement, checked before its handler (one place for every DDL path): CREATE
// of an object needs CREATE on its schema, CREATE SCHEMA the database's CREATE (superusers here),
// DROP / ALTER / RENAME / COMMENT / CREATE INDEX need ownership of the object, CREATE SINK and CREATE
// SUBSCRIPTION need SELECT on what they read, a FOREIGN KEY REFERENCES on its table. Refusals are 42501 with PostgreSQL's messages. A
// superuser passes without a look; the role statements and GRANT check inside their handlers.

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { isSuperuser, ownerOf, ownsObject, requireRelationOwner, requireRelationPrivilege, requireSchemaOwner, requireSchemaPrivilege } from '../catalog/privileges.js';
import { currentRoleId, targetSchemaName, type DdlContext } from './ddl-context.js';

interface RangeVarShape {
  readonly schemaname?: string;
  readonly relname?: string;
}

function names(node: Node | undefined): string[] {
  const items = (node as { List?: { items?: Node[] } } | undefined)?.List?.items ?? [node];
  return items.map((item) => (item as { String?: { sval?: string } } | undefined)?.String?.sval ?? '');
}

export function checkDdlPrivileges(node: Node, context: DdlContext): void {
  const catalog = context.catalog;
  const role = currentRoleId(context);
  if (isSuperuser(catalog, role)) return;
  const kind = Object.keys(node)[0]!;
  const body = (node as unknown as Record<string, Record<string, unknown>>)[kind]!;
  const createIn = (target: RangeVarShape | undefined): void => {
    const schema = targetSchemaName(context, target?.schemaname);
    if (schema !== '') requireSchemaPrivilege(catalog, role, schema, 'C');
  };
  const resolve = (target: RangeVarShape | undefined) => (target?.relname === undefined ? undefined : catalog.resolveRelation(target.schemaname, target.relname, context.searchPath));
  const owner = (target: RangeVarShape | undefined): void => {
    const relation = resolve(target);
    if (relation !== undefined) requireRelationOwner(catalog, role, relation);
  };
  const reads = (target: RangeVarShape | undefined): void => {
    const relation = resolve(target);
    if (relation !== undefined) requireRelationPrivilege(catalog, role, relation, 'r');
  };
  // A FOREIGN KEY needs REFERENCES on the table it references.
  for (const referenced of referencedTables(body)) {
    const relation = resolve(referenced);
    if (relation !== undefined) requireRelationPrivilege(catalog, role, relation, 'x');
  }
  switch (kind) {
    case 'CreateStmt':
      return createIn(body.relation as RangeVarShape);
    case 'OxbowCreateSource':
      return createIn(body.relation as RangeVarShape);
    case 'ViewStmt':
      return createIn(body.view as RangeVarShape);
    case 'CreateSeqStmt':
      return createIn(body.sequence as RangeVarShape);
    case 'CreateTableAsStmt':
      return createIn((body.into as { rel?: RangeVarShape } | undefined)?.rel);
    case 'CreateFunctionStmt': {
      const qualified = ((body.funcname as Node[] | undefined) ?? []).map((item) => (item as { String?: { sval?: string } }).String?.sval ?? '');
      return createIn(qualified.length > 1 ? { schemaname: qualified[0]! } : undefined);
    }
    case 'OxbowCreateSink':
      createIn(body.name as RangeVarShape);
      return reads(body.from as RangeVarShape | undefined);
    case 'OxbowCreateSubscription':
      createIn(body.name as RangeVarShape);
      return reads(body.from as RangeVarShape);
    case 'CreateSchemaStmt':
      throw new SqlError(SqlState.insufficientPrivilege, 'permission denied for database oxbow');
    case 'IndexStmt':
    case 'AlterTableStmt':
      return owner(body.relation as RangeVarShape);
    case 'AlterSeqStmt':
      return owner(body.sequence as RangeVarShape);
    case 'OxbowDropSubscription':
      for (const name of (body.names as RangeVarShape[] | undefined) ?? []) owner(name);
      return;
    case 'RenameStmt':
      if (body.renameType === 'OBJECT_SCHEMA') return schemaOwner(catalog, role, String(body.subname ?? ''));
      if (body.relation !== undefined) return owner(body.relation as RangeVarShape);
      return;
    case 'DropStmt':
      return dropOwner(body, catalog, role, context);
    case 'CommentStmt':
      return commentOwner(body, catalog, role, context);
    default:
      return;
  }
}

/** The tables the FOREIGN KEY constraints anywhere in a statement reference. */
function referencedTables(node: unknown, found: RangeVarShape[] = []): RangeVarShape[] {
  if (node === null || typeof node !== 'object') return found;
  if (Array.isArray(node)) {
    for (const item of node) referencedTables(item, found);
    return found;
  }
  const constraint = (node as { Constraint?: { contype?: string; pktable?: RangeVarShape } }).Constraint;
  if (constraint?.contype === 'CONSTR_FOREIGN' && constraint.pktable !== undefined) found.push(constraint.pktable);
  for (const child of Object.values(node as Record<string, unknown>)) referencedTables(child, found);
  return found;
}

function schemaOwner(catalog: CatalogSnapshot, role: number, name: string): void {
  const schema = catalog.schema(name);
  if (schema !== undefined) requireSchemaOwner(catalog, role, schema);
}

/** COMMENT ON a relation or its column: the relation's owner; on a schema: its owner. */
function commentOwner(body: Record<string, unknown>, catalog: CatalogSnapshot, role: number, context: DdlContext): void {
  const parts = names(body.object as Node | undefined);
  if (body.objtype === 'OBJECT_SCHEMA') return schemaOwner(catalog, role, parts[0] ?? '');
  const relationParts = body.objtype === 'OBJECT_COLUMN' ? parts.slice(0, -1) : parts;
  if (!['OBJECT_TABLE', 'OBJECT_VIEW', 'OBJECT_MATVIEW', 'OBJECT_INDEX', 'OBJECT_SEQUENCE', 'OBJECT_FOREIGN_TABLE', 'OBJECT_COLUMN'].includes(String(body.objtype))) return;
  const relation = catalog.resolveRelation(relationParts.length > 1 ? relationParts.at(-2) : undefined, relationParts.at(-1) ?? '', context.searchPath);
  if (relation === undefined) return;
  if (body.objtype === 'OBJECT_COLUMN' && !ownsObject(catalog, role, ownerOf(relation))) throw new SqlError(SqlState.insufficientPrivilege, `must be owner of relation ${relation.name}`);
  requireRelationOwner(catalog, role, relation);
}

function dropOwner(body: Record<string, unknown>, catalog: CatalogSnapshot, role: number, context: DdlContext): void {
  const objects = (body.objects as Node[] | undefined) ?? [];
  switch (body.removeType) {
    case 'OBJECT_SCHEMA':
      for (const object of objects) schemaOwner(catalog, role, names(object)[0] ?? '');
      return;
    case 'OBJECT_FUNCTION':
      for (const object of objects) {
        const withArgs = (object as { ObjectWithArgs?: { objname?: Node[] } }).ObjectWithArgs;
        const qualified = (withArgs?.objname ?? []).map((item) => (item as { String?: { sval?: string } }).String?.sval ?? '');
        const name = qualified.at(-1) ?? '';
        for (const fn of catalog.resolveFunctions(qualified.length > 1 ? qualified[0] : undefined, name, context.searchPath)) {
          if (!ownsObject(catalog, role, ownerOf(fn))) throw new SqlError(SqlState.insufficientPrivilege, `must be owner of function ${fn.name}`);
        }
      }
      return;
    case 'OBJECT_TABLE':
    case 'OBJECT_VIEW':
    case 'OBJECT_MATVIEW':
    case 'OBJECT_INDEX':
    case 'OBJECT_SEQUENCE':
    case 'OBJECT_FOREIGN_TABLE':
      for (const object of objects) {
        const parts = names(object);
        const relation = catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts.at(-1) ?? '', context.searchPath);
        if (relation !== undefined) requireRelationOwner(catalog, role, relation);
      }
      return;
    default:
      return;
  }
}
