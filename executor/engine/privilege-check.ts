// The privileges a statement needs, checked before it runs, on its parse tree (the relations it
// names, as the binder will resolve them), as PostgreSQL's ExecCheckPermissions does at executor
// start:
//
// - every relation read (a FROM item, a subquery's, a CTE's, COPY ... TO, SUBSCRIBE and its cursors,
//   a subscription's cursor (SELECT on the subscription), the query of
//   CREATE TABLE AS / MATERIALIZED VIEW / SINK ... AS, DECLARE, EXPLAIN): SELECT;
// - INSERT: INSERT on the target (SELECT too with RETURNING; UPDATE too with ON CONFLICT DO UPDATE);
//   UPDATE: UPDATE, and SELECT when it reads the table (WHERE, FROM, RETURNING, a column in SET);
//   DELETE: DELETE, and SELECT with WHERE, USING or RETURNING; COPY FROM: INSERT; TRUNCATE: TRUNCATE;
//   REFRESH MATERIALIZED VIEW: ownership (`must be owner of materialized view m`);
// - a view: SELECT on the view for the statement's role, then the relations inside its definition
//   with the view owner's rights (PostgreSQL's security-definer views), nested views likewise.
//
// A refusal is 42501 `permission denied for table t`. A superuser is never checked. CREATE VIEW
// needs nothing of what the view reads (its readers are checked when they use it); DDL's own
// rules are `../ddl/ddl-privileges.ts`'s.

import type { Node } from '@pgsql/types';
import { parse } from '../../sql/parser/index.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';
import { isSuperuser, ownerOf, requireRelationOwner, requireRelationPrivilege } from '../catalog/privileges.js';

interface RangeVarShape {
  readonly schemaname?: string;
  readonly relname?: string;
}

type Fields = Record<string, unknown>;

/** Statements whose relation names are not accesses: their rules are DDL's, or PostgreSQL checks none. */
const NOT_ACCESSES = new Set(['ViewStmt', 'GrantStmt', 'LockStmt']);

const MAX_VIEW_DEPTH = 32;

const viewDefinitions = new Map<string, Node>();

function viewDefinition(view: RelationDef): Node | undefined {
  const key = `${view.id}\0${view.definition ?? ''}`;
  let node = viewDefinitions.get(key);
  if (node === undefined) {
    const statements = parse(view.definition ?? '');
    if (statements.length !== 1) return undefined;
    node = statements[0]!.node as Node;
    if (viewDefinitions.size > 1000) viewDefinitions.clear();
    viewDefinitions.set(key, node);
  }
  return node;
}

/**
 * Throws 42501 unless `roleId` may run the statement `node`. Outside DDL (`ddl` false) a relation
 * named anywhere else than the places above (a statement form the walk does not know) is taken
 * as read: SELECT, so a new statement is checked rather than let through.
 */
export function checkStatementPrivileges(node: Node, catalog: CatalogSnapshot, roleId: number, searchPath: readonly string[], ddl = false): void {
  if (isSuperuser(catalog, roleId)) return;
  new PrivilegeWalk(catalog, searchPath, !ddl).visit(node, roleId, cteNames(node), 0, '');
}

/** The nodes whose bare RangeVar fields the walk checks itself (targets, SELECT INTO's new table). */
const TARGET_PARENTS = new Set(['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'CopyStmt', 'OxbowSubscribe', 'OxbowDeclareSubscriptionCursor', 'intoClause', 'RefreshMatViewStmt']);

/** A RangeVar in a typed field (libpg-query writes those without the `RangeVar` wrapper). */
function isBareRangeVar(value: Fields): boolean {
  return typeof value.relname === 'string' && 'relpersistence' in value;
}

function cteNames(node: unknown, names = new Set<string>()): Set<string> {
  if (node === null || typeof node !== 'object') return names;
  if (Array.isArray(node)) {
    for (const item of node) cteNames(item, names);
    return names;
  }
  const record = node as Fields;
  const cte = record.CommonTableExpr as { ctename?: string } | undefined;
  if (cte?.ctename !== undefined) names.add(cte.ctename);
  for (const child of Object.values(record)) cteNames(child, names);
  return names;
}

function hasColumnRef(node: unknown): boolean {
  if (node === null || typeof node !== 'object') return false;
  if (Array.isArray(node)) return node.some(hasColumnRef);
  const record = node as Fields;
  if (record.ColumnRef !== undefined) return true;
  return Object.values(record).some(hasColumnRef);
}

function nonEmpty(value: unknown): boolean {
  return Array.isArray(value) ? value.length > 0 : value !== undefined && value !== null;
}

class PrivilegeWalk {
  constructor(
    private readonly catalog: CatalogSnapshot,
    private readonly searchPath: readonly string[],
    /** Outside DDL: a bare RangeVar in an unknown place is a read. */
    private readonly strict: boolean,
  ) {}

  /** `parent`: the key `node` was found under (a statement kind for a statement's fields). */
  visit(node: unknown, role: number, ctes: ReadonlySet<string>, depth: number, parent: string): void {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) this.visit(item, role, ctes, depth, parent);
      return;
    }
    for (const [key, value] of Object.entries(node as Fields)) {
      if (value === null || typeof value !== 'object') continue;
      if (NOT_ACCESSES.has(key)) continue;
      const body = value as Fields;
      if (this.strict && !Array.isArray(value) && isBareRangeVar(body) && !TARGET_PARENTS.has(parent)) {
        this.read(body as RangeVarShape, role, ctes, depth);
        continue;
      }
      switch (key) {
        case 'RangeVar':
          this.read(body as RangeVarShape, role, ctes, depth);
          continue;
        case 'InsertStmt':
          this.target(body.relation, role, 'a');
          if (nonEmpty(body.returningList)) this.target(body.relation, role, 'r');
          if ((body.onConflictClause as { action?: string } | undefined)?.action === 'ONCONFLICT_UPDATE') this.target(body.relation, role, 'w');
          break;
        case 'UpdateStmt':
          this.target(body.relation, role, 'w');
          if (nonEmpty(body.whereClause) || nonEmpty(body.returningList) || nonEmpty(body.fromClause) || hasColumnRef(body.targetList)) this.target(body.relation, role, 'r');
          break;
        case 'DeleteStmt':
          this.target(body.relation, role, 'd');
          if (nonEmpty(body.whereClause) || nonEmpty(body.returningList) || nonEmpty(body.usingClause)) this.target(body.relation, role, 'r');
          break;
        case 'CopyStmt':
          if (body.relation !== undefined) this.target(body.relation, role, body.is_from === true ? 'a' : 'r');
          break;
        case 'OxbowSubscribe':
          if (body.relation !== undefined) this.read(body.relation as RangeVarShape, role, ctes, depth);
          break;
        case 'OxbowDeclareSubscribe': {
          // DECLARE c CURSOR FOR SUBSCRIBE ...: the SUBSCRIBE's relation or query.
          const subscribe = body.subscribe as Fields | undefined;
          if (subscribe?.relation !== undefined) this.read(subscribe.relation as RangeVarShape, role, ctes, depth);
          break;
        }
        case 'OxbowDeclareSubscriptionCursor':
          // DECLARE c SUBSCRIPTION CURSOR FOR sub: SELECT on the subscription.
          this.target(body.subscription, role, 'r');
          break;
        case 'RefreshMatViewStmt': {
          const relation = this.resolve(body.relation);
          if (relation !== undefined) requireRelationOwner(this.catalog, role, relation);
          continue;
        }
        case 'TruncateStmt':
          for (const item of (body.relations as Node[] | undefined) ?? []) this.target((item as { RangeVar?: RangeVarShape }).RangeVar, role, 'D');
          continue;
        default:
          break;
      }
      this.visit(value, role, ctes, depth, key);
    }
  }

  private resolve(target: unknown): RelationDef | undefined {
    const rangeVar = target as RangeVarShape | undefined;
    if (rangeVar?.relname === undefined) return undefined;
    return this.catalog.resolveRelation(rangeVar.schemaname, rangeVar.relname, this.searchPath);
  }

  private target(target: unknown, role: number, letter: string): void {
    const relation = this.resolve(target);
    if (relation !== undefined) requireRelationPrivilege(this.catalog, role, relation, letter);
  }

  /** A relation read: SELECT on it; a view's definition then with its owner's rights. */
  private read(rangeVar: RangeVarShape, role: number, ctes: ReadonlySet<string>, depth: number): void {
    if (rangeVar.schemaname === undefined && rangeVar.relname !== undefined && ctes.has(rangeVar.relname)) return;
    const relation = this.resolve(rangeVar);
    if (relation === undefined) return;
    requireRelationPrivilege(this.catalog, role, relation, 'r');
    if (relation.kind !== 'view' || depth >= MAX_VIEW_DEPTH) return;
    const owner = ownerOf(relation);
    if (isSuperuser(this.catalog, owner)) return;
    const definition = viewDefinition(relation);
    if (definition !== undefined) this.visit(definition, owner, cteNames(definition), depth + 1, '');
  }
}
