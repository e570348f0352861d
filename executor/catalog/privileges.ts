// Roles and privileges over a catalog snapshot, as PostgreSQL decides them: who is a superuser,
// which roles a role has the privileges of (itself and, through INHERIT, every role it is a member
// of), the ACL of a relation or schema (its stored items, else PostgreSQL's default: the owner's
// only, and for `public` PostgreSQL 15's `pg_database_owner=UC/pg_database_owner,=U/...`),
// GRANT and REVOKE on an ACL, aclitem text (`alice=r/oxbow`), and the owner stamped on the objects
// a DDL creates.

import type { AclItem, RelationDef, RoleDef, SchemaDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { BOOTSTRAP_ROLE_ID, CatalogDraft, DATABASE_OWNER_ROLE_ID, type CatalogSnapshot } from './catalog.js';

/** The grantee id of PUBLIC in an ACL item. */
export const PUBLIC_ROLE_ID = 0;
/** Every privilege of a relation, in aclitem order (PostgreSQL 15: no MAINTAIN). */
export const RELATION_PRIVILEGES = 'arwdDxt';
/** Every privilege of a sequence (SELECT, UPDATE, USAGE), in aclitem order. */
export const SEQUENCE_PRIVILEGES = 'rwU';
/** Every privilege of a schema, in aclitem order. */
export const SCHEMA_PRIVILEGES = 'UC';

/** The SQL keyword of each privilege letter. */
export const PRIVILEGE_NAMES: Readonly<Record<string, string>> = {
  r: 'SELECT', a: 'INSERT', w: 'UPDATE', d: 'DELETE', D: 'TRUNCATE', x: 'REFERENCES', t: 'TRIGGER', U: 'USAGE', C: 'CREATE',
};
const LETTERS_BY_NAME = new Map(Object.entries(PRIVILEGE_NAMES).map(([letter, name]) => [name.toLowerCase(), letter]));

/** The privilege letter of a keyword (`select` -> `r`), or undefined. */
export function privilegeLetter(name: string): string | undefined {
  return LETTERS_BY_NAME.get(name.toLowerCase());
}

export function ownerOf(object: { readonly owner?: number }): number {
  return object.owner ?? BOOTSTRAP_ROLE_ID;
}

export function schemaOwner(schema: SchemaDef): number {
  return schema.owner ?? (schema.name === 'public' ? DATABASE_OWNER_ROLE_ID : BOOTSTRAP_ROLE_ID);
}

export function isSuperuser(catalog: CatalogSnapshot, roleId: number): boolean {
  return catalog.roleById(roleId)?.superuser === true;
}

/**
 * The roles whose privileges `roleId` has: itself and, while INHERIT holds, the roles it is a
 * member of, transitively. A role that owns the database (the bootstrap superuser) is also a
 * member of pg_database_owner.
 */
export function privilegeRoles(catalog: CatalogSnapshot, roleId: number): Set<number> {
  return memberships(catalog, roleId, true);
}

/** Whether `roleId` is `of` or a member of it, directly or not (SET ROLE, pg_has_role MEMBER). */
export function isMemberOf(catalog: CatalogSnapshot, roleId: number, of: number): boolean {
  return isSuperuser(catalog, roleId) || memberships(catalog, roleId, false).has(of);
}

/** `roleId` and every role it is a member of, directly or not, whatever INHERIT says. */
export function memberRoles(catalog: CatalogSnapshot, roleId: number): Set<number> {
  return memberships(catalog, roleId, false);
}

function memberships(catalog: CatalogSnapshot, roleId: number, inheritOnly: boolean): Set<number> {
  const found = new Set<number>([roleId]);
  if (roleId === BOOTSTRAP_ROLE_ID) found.add(DATABASE_OWNER_ROLE_ID);
  const pending = [roleId];
  while (pending.length > 0) {
    const role = catalog.roleById(pending.pop()!);
    if (role === undefined || (inheritOnly && !role.inherit)) continue;
    for (const membership of role.memberOf) {
      if (found.has(membership.roleId)) continue;
      found.add(membership.roleId);
      pending.push(membership.roleId);
    }
  }
  return found;
}

/** Whether `roleId` is (a member of) the object's owner: it may ALTER, DROP, GRANT on it. */
export function ownsObject(catalog: CatalogSnapshot, roleId: number, owner: number): boolean {
  return isSuperuser(catalog, roleId) || memberships(catalog, roleId, false).has(owner);
}

const SYSTEM_SCHEMAS = new Set(['pg_catalog', 'information_schema', 'oxbow_catalog']);

/** A relation's ACL: its stored items, else the default (the owner's; system relations readable by PUBLIC). */
export function relationAcl(relation: RelationDef): readonly AclItem[] {
  if (relation.acl !== undefined) return relation.acl;
  const owner = ownerOf(relation);
  if (relation.kind === 'sequence') return [{ grantee: owner, grantor: owner, privileges: SEQUENCE_PRIVILEGES }];
  if (relation.kind === 'system' || SYSTEM_SCHEMAS.has(relation.schema)) {
    return [{ grantee: owner, grantor: owner, privileges: RELATION_PRIVILEGES }, { grantee: PUBLIC_ROLE_ID, grantor: owner, privileges: 'r' }];
  }
  return [{ grantee: owner, grantor: owner, privileges: RELATION_PRIVILEGES }];
}

/** A schema's ACL: its stored items, else the default (system schemas and `public`: USAGE for PUBLIC). */
export function schemaAcl(schema: SchemaDef): readonly AclItem[] {
  if (schema.acl !== undefined) return schema.acl;
  const owner = schemaOwner(schema);
  const own = { grantee: owner, grantor: owner, privileges: SCHEMA_PRIVILEGES };
  if (schema.name === 'public' || SYSTEM_SCHEMAS.has(schema.name)) return [own, { grantee: PUBLIC_ROLE_ID, grantor: owner, privileges: 'U' }];
  return [own];
}

function aclAllows(acl: readonly AclItem[], roles: ReadonlySet<number>, letter: string): boolean {
  for (const item of acl) {
    if ((item.grantee === PUBLIC_ROLE_ID || roles.has(item.grantee)) && item.privileges.includes(letter)) return true;
  }
  return false;
}

export function hasRelationPrivilege(catalog: CatalogSnapshot, roleId: number, relation: RelationDef, letter: string): boolean {
  if (isSuperuser(catalog, roleId)) return true;
  return aclAllows(relationAcl(relation), privilegeRoles(catalog, roleId), letter);
}

export function hasSchemaPrivilege(catalog: CatalogSnapshot, roleId: number, schema: SchemaDef, letter: string): boolean {
  if (isSuperuser(catalog, roleId)) return true;
  return aclAllows(schemaAcl(schema), privilegeRoles(catalog, roleId), letter);
}

/** PostgreSQL's word for a relation in "permission denied for ..." (aclcheck_error's object types). */
export function aclObjectWord(relation: RelationDef): string {
  switch (relation.kind) {
    case 'view':
      return 'view';
    case 'materialized_view':
      return 'materialized view';
    case 'sequence':
      return 'sequence';
    case 'index':
      return 'index';
    case 'source':
      return 'source';
    case 'sink':
      return 'sink';
    case 'subscription':
      return 'subscription';
    default:
      return 'table';
  }
}

/** 42501 "permission denied for table t" unless the role holds the privilege. */
export function requireRelationPrivilege(catalog: CatalogSnapshot, roleId: number, relation: RelationDef, letter: string): void {
  if (!hasRelationPrivilege(catalog, roleId, relation, letter)) {
    throw new SqlError(SqlState.insufficientPrivilege, `permission denied for ${aclObjectWord(relation)} ${relation.name}`);
  }
}

/** 42501 "permission denied for schema s" unless the role holds the privilege. */
export function requireSchemaPrivilege(catalog: CatalogSnapshot, roleId: number, schemaName: string, letter: string): void {
  const schema = catalog.schema(schemaName);
  if (schema !== undefined && !hasSchemaPrivilege(catalog, roleId, schema, letter)) {
    throw new SqlError(SqlState.insufficientPrivilege, `permission denied for schema ${schemaName}`);
  }
}

/**
 * A sequence function's privileges, as PostgreSQL's: nextval needs USAGE or UPDATE, currval and
 * lastval SELECT or USAGE, setval UPDATE. An identity column's own sequence is not checked (its
 * table's INSERT is what counts). 42501 "permission denied for sequence s".
 */
export function requireSequencePrivilege(catalog: CatalogSnapshot, roleId: number, sequence: RelationDef, use: 'nextval' | 'currval' | 'setval'): void {
  if (isSuperuser(catalog, roleId)) return;
  const owner = sequence.sequence?.ownedBy === undefined ? undefined : catalog.relationById(sequence.sequence.ownedBy.relationId);
  if (owner?.columns.some((column) => column.identity?.sequenceId === sequence.id) === true) return;
  const letters = use === 'nextval' ? 'Uw' : use === 'currval' ? 'rU' : 'w';
  const roles = privilegeRoles(catalog, roleId);
  if (![...letters].some((letter) => aclAllows(relationAcl(sequence), roles, letter))) {
    throw new SqlError(SqlState.insufficientPrivilege, `permission denied for sequence ${sequence.name}`);
  }
}

/** 42501 "must be owner of table t" unless the role owns the relation (or is a superuser). */
export function requireRelationOwner(catalog: CatalogSnapshot, roleId: number, relation: RelationDef): void {
  const owner = relation.kind === 'index' && relation.indexOn !== undefined ? ownerOf(catalog.relationById(relation.indexOn.relationId) ?? relation) : ownerOf(relation);
  if (!ownsObject(catalog, roleId, owner)) {
    throw new SqlError(SqlState.insufficientPrivilege, `must be owner of ${aclObjectWord(relation)} ${relation.name}`);
  }
}

export function requireSchemaOwner(catalog: CatalogSnapshot, roleId: number, schema: SchemaDef): void {
  if (!ownsObject(catalog, roleId, schemaOwner(schema))) {
    throw new SqlError(SqlState.insufficientPrivilege, `must be owner of schema ${schema.name}`);
  }
}

/** The ACL with `letters` granted to each grantee by `grantor` (items merged per grantee and grantor, new ones appended). */
export function grantAcl(acl: readonly AclItem[], grantees: readonly number[], grantor: number, letters: string, order: string): AclItem[] {
  const items = acl.map((item) => ({ ...item }));
  for (const grantee of grantees) {
    const existing = items.find((item) => item.grantee === grantee && item.grantor === grantor);
    if (existing === undefined) items.push({ grantee, grantor, privileges: inOrder(letters, order) });
    else existing.privileges = inOrder(existing.privileges + letters, order);
  }
  return items;
}

/** The ACL with `letters` revoked from each grantee (the grants `grantor` made), empty items removed. */
export function revokeAcl(acl: readonly AclItem[], grantees: readonly number[], grantor: number, letters: string): AclItem[] {
  const items: AclItem[] = [];
  for (const item of acl) {
    if (!grantees.includes(item.grantee) || item.grantor !== grantor) {
      items.push(item);
      continue;
    }
    const privileges = [...item.privileges].filter((letter) => !letters.includes(letter)).join('');
    if (privileges !== '') items.push({ ...item, privileges });
  }
  return items;
}

/** PostgreSQL's aclnewowner: the old owner's items (as grantee or grantor) become the new owner's. */
export function aclWithNewOwner(acl: readonly AclItem[], oldOwner: number, newOwner: number): AclItem[] {
  const items: AclItem[] = [];
  for (const item of acl) {
    const next = { grantee: item.grantee === oldOwner ? newOwner : item.grantee, grantor: item.grantor === oldOwner ? newOwner : item.grantor, privileges: item.privileges };
    const index = items.findIndex((existing) => existing.grantee === next.grantee && existing.grantor === next.grantor);
    if (index < 0) items.push(next);
    else items[index] = { ...next, privileges: inOrder(items[index]!.privileges + next.privileges, RELATION_PRIVILEGES + 'UC') };
  }
  return items;
}

function inOrder(letters: string, order: string): string {
  return [...order].filter((letter) => letters.includes(letter)).join('');
}

/** A role name as aclitem text writes it (PostgreSQL's putid: quoted unless letters, digits and `_`). */
export function aclRoleName(name: string): string {
  return /^[A-Za-z0-9_]+$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

function roleText(catalog: CatalogSnapshot, id: number): string {
  const role = catalog.roleById(id);
  return role === undefined ? String(id) : aclRoleName(role.name);
}

/** aclitem[] text of an ACL: `{oxbow=arwdDxt/oxbow,=r/oxbow}` items, PUBLIC as the empty name. */
export function aclText(catalog: CatalogSnapshot, acl: readonly AclItem[]): string[] {
  return acl.map((item) => `${item.grantee === PUBLIC_ROLE_ID ? '' : roleText(catalog, item.grantee)}=${item.privileges}/${roleText(catalog, item.grantor)}`);
}

/** A role by name, or 42704 `role "x" does not exist`. */
export function roleNamed(catalog: CatalogSnapshot, name: string): RoleDef {
  const role = catalog.role(name);
  if (role === undefined) throw new SqlError(SqlState.undefinedObject, `role "${name}" does not exist`);
  return role;
}

/**
 * The catalog with `owner` stamped on every relation, schema and function it has that `before`
 * lacks (the objects a DDL created); an index takes its table's owner. The bootstrap superuser
 * is the default owner, so its objects are left as they are.
 */
export function withCreatedObjectsOwned(before: CatalogSnapshot, next: CatalogSnapshot, owner: number): CatalogSnapshot {
  if (owner === BOOTSTRAP_ROLE_ID) return next;
  let draft: CatalogDraft | undefined;
  for (const relation of next.relations()) {
    if (before.relationById(relation.id) !== undefined || relation.owner !== undefined) continue;
    const table = relation.indexOn === undefined ? undefined : next.relationById(relation.indexOn.relationId);
    const relationOwner = table === undefined ? owner : before.relationById(table.id) !== undefined ? ownerOf(table) : owner;
    if (relationOwner === BOOTSTRAP_ROLE_ID) continue;
    (draft ??= new CatalogDraft(next)).putRelation({ ...relation, owner: relationOwner });
  }
  for (const schema of next.schemas()) {
    if (before.schema(schema.name) !== undefined || schema.owner !== undefined) continue;
    (draft ??= new CatalogDraft(next)).putSchema({ ...schema, owner });
  }
  for (const fn of next.functions()) {
    if (before.functionById(fn.id) !== undefined || fn.owner !== undefined) continue;
    (draft ??= new CatalogDraft(next)).putFunction({ ...fn, owner });
  }
  return draft === undefined ? next : draft.finish();
}
