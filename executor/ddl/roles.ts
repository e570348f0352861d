// Roles: CREATE ROLE | USER, ALTER ROLE | USER (attributes, PASSWORD, RENAME TO), DROP ROLE
// [IF EXISTS], GRANT role TO role and REVOKE role FROM role, REASSIGN OWNED, DROP OWNED (its
// privileges part), with PostgreSQL 15's checks and messages. Passwords are stored as SCRAM-SHA-256 verifiers (a given verifier is kept as is).
// Who may do what: superusers anything; a role with CREATEROLE any non-superuser role; the
// bootstrap superuser `oxbow` cannot be dropped.

import type { AlterRoleStmt, CreateRoleStmt, DefElem, DropOwnedStmt, DropRoleStmt, GrantRoleStmt, Node, ReassignOwnedStmt, RenameStmt, RoleSpec } from '@pgsql/types';
import type { AclItem, RoleDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { formatScramVerifier, parseScramVerifier, scramVerifier } from '../../sql/scram-verifier.js';
import { BOOTSTRAP_ROLE_ID, CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import { aclWithNewOwner, isSuperuser, memberRoles, ownerOf, privilegeRoles, relationAcl, roleNamed, schemaAcl, schemaOwner } from '../catalog/privileges.js';
import type { Notice } from '../catalog/results.js';
import { currentRoleId, kindWord, type DdlContext, type DdlOutcome, unchanged } from './ddl-context.js';

interface RoleOptions {
  superuser?: boolean;
  inherit?: boolean;
  createRole?: boolean;
  createDb?: boolean;
  login?: boolean;
  replication?: boolean;
  bypassRls?: boolean;
  /** null: PASSWORD NULL. */
  password?: string | null;
  /** IN ROLE / ROLE (members) given at CREATE. */
  inRoles?: string[];
  members?: string[];
}

function notice(message: string, severity: Notice['severity'] = 'NOTICE'): Notice {
  return { severity, code: severity === 'WARNING' ? '01000' : SqlState.successfulCompletion, message };
}

function roleOptions(options: readonly Node[] | undefined): { readonly values: RoleOptions; readonly notices: Notice[] } {
  const values: RoleOptions = {};
  const notices: Notice[] = [];
  const seen = new Set<string>();
  for (const item of options ?? []) {
    const element = (item as { DefElem: DefElem }).DefElem;
    const name = element.defname ?? '';
    if (seen.has(name)) throw new SqlError(SqlState.syntaxError, 'conflicting or redundant options');
    seen.add(name);
    const flag = (element.arg as { Boolean?: { boolval?: boolean } } | undefined)?.Boolean?.boolval === true;
    switch (name) {
      case 'superuser':
        values.superuser = flag;
        break;
      case 'inherit':
        values.inherit = flag;
        break;
      case 'createrole':
        values.createRole = flag;
        break;
      case 'createdb':
        values.createDb = flag;
        break;
      case 'canlogin':
        values.login = flag;
        break;
      case 'password': {
        const text = (element.arg as { String?: { sval?: string } } | undefined)?.String?.sval;
        if (text === '') {
          notices.push(notice('empty string is not a valid password, clearing password'));
          values.password = null;
        } else values.password = text ?? null;
        break;
      }
      case 'addroleto':
        values.inRoles = roleSpecNames(element.arg);
        break;
      case 'rolemembers':
        values.members = roleSpecNames(element.arg);
        break;
      case 'isreplication':
        values.replication = flag;
        break;
      case 'bypassrls':
        values.bypassRls = flag;
        break;
      case 'connectionlimit':
      case 'validUntil':
        throw new SqlError(SqlState.featureNotSupported, `${name === 'connectionlimit' ? 'CONNECTION LIMIT' : 'VALID UNTIL'} is not supported`);
      default:
        throw new SqlError(SqlState.featureNotSupported, `role option "${name}" is not supported`);
    }
  }
  return { values, notices };
}

function roleSpecNames(arg: Node | undefined): string[] {
  const items = (arg as { List?: { items?: Node[] } } | undefined)?.List?.items ?? [];
  return items.map((item) => (item as { RoleSpec: RoleSpec }).RoleSpec.rolename ?? '');
}

/** The verifier stored for a PASSWORD: a SCRAM-SHA-256 verifier given as is, else one made from the text. */
export function storedPassword(password: string): string {
  if (/^md5[0-9a-f]{32}$/.test(password)) {
    throw new SqlError(SqlState.featureNotSupported, 'MD5 password hashes are not supported', { hint: 'Give the password itself, or a SCRAM-SHA-256 verifier.' });
  }
  return parseScramVerifier(password) !== undefined ? password : formatScramVerifier(scramVerifier(password));
}

function checkReservedName(name: string): void {
  if (name === 'public' || name === 'none') throw new SqlError(SqlState.reservedName, `role name "${name}" is reserved`);
  if (name.startsWith('pg_')) throw new SqlError(SqlState.reservedName, `role name "${name}" is reserved`, { detail: 'Role names starting with "pg_" are reserved.' });
}

/** The role the current role may manage (CREATEROLE for others, superuser for superusers). */
function requireRoleAdmin(catalog: CatalogSnapshot, actor: number, target: RoleDef | undefined, deny: string, superuserDeny: string): void {
  if (isSuperuser(catalog, actor)) return;
  if (target?.superuser === true) throw new SqlError(SqlState.insufficientPrivilege, superuserDeny);
  if (catalog.roleById(actor)?.createRole !== true) throw new SqlError(SqlState.insufficientPrivilege, deny);
}

export function createRole(statement: CreateRoleStmt, context: DdlContext): DdlOutcome {
  const name = statement.role ?? '';
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const { values, notices } = roleOptions(statement.options);
  if (!isSuperuser(catalog, actor)) {
    if (values.superuser === true) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to create superusers');
    if (values.replication === true) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to create replication users');
    if (values.bypassRls === true) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to create bypassrls users');
    if (catalog.roleById(actor)?.createRole !== true) throw new SqlError(SqlState.insufficientPrivilege, 'permission denied to create role');
  }
  checkReservedName(name);
  if (catalog.role(name) !== undefined) throw new SqlError(SqlState.duplicateObject, `role "${name}" already exists`);
  const draft = new CatalogDraft(catalog);
  const id = draft.allocateId();
  const memberOf = (values.inRoles ?? []).map((parent) => ({ roleId: roleNamed(catalog, parent).id, grantor: actor }));
  draft.putRole({
    id,
    name,
    superuser: values.superuser ?? false,
    inherit: values.inherit ?? true,
    createRole: values.createRole ?? false,
    createDb: values.createDb ?? false,
    // CREATE USER logs in unless NOLOGIN; CREATE ROLE / GROUP does not unless LOGIN.
    login: values.login ?? statement.stmt_type === 'ROLESTMT_USER',
    ...(values.replication === true ? { replication: true } : {}),
    ...(values.bypassRls === true ? { bypassRls: true } : {}),
    ...(values.password === undefined || values.password === null ? {} : { password: storedPassword(values.password) }),
    memberOf,
  });
  for (const memberName of values.members ?? []) {
    const member = roleNamed(catalog, memberName);
    draft.putRole({ ...member, memberOf: [...member.memberOf, { roleId: id, grantor: actor }] });
  }
  return { catalog: draft.finish(), commandTag: 'CREATE ROLE', notices, droppedTableIds: [] };
}

export function alterRole(statement: AlterRoleStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const role = resolveRoleSpec(statement.role, context);
  const { values, notices } = roleOptions(statement.options);
  if (values.inRoles !== undefined || values.members !== undefined) throw new SqlError(SqlState.syntaxError, 'IN ROLE and ROLE are not ALTER ROLE options');
  const onlyOwnPassword = role.id === actor && Object.keys(values).every((key) => key === 'password');
  if (!onlyOwnPassword && !isSuperuser(catalog, actor)) {
    if (role.superuser || values.superuser !== undefined) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to alter superuser roles or change superuser attribute');
    if (values.replication !== undefined) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to alter replication roles or change replication attribute');
    if (values.bypassRls !== undefined) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to change bypassrls attribute');
    if (catalog.roleById(actor)?.createRole !== true) throw new SqlError(SqlState.insufficientPrivilege, 'permission denied');
  }
  if (role.id === BOOTSTRAP_ROLE_ID && values.superuser === false) {
    throw new SqlError(SqlState.featureNotSupported, 'permission denied: bootstrap user must be superuser');
  }
  const { password: _password, ...rest } = role;
  const next: RoleDef = {
    ...(values.password === null ? rest : role),
    ...(values.superuser === undefined ? {} : { superuser: values.superuser }),
    ...(values.inherit === undefined ? {} : { inherit: values.inherit }),
    ...(values.createRole === undefined ? {} : { createRole: values.createRole }),
    ...(values.createDb === undefined ? {} : { createDb: values.createDb }),
    ...(values.login === undefined ? {} : { login: values.login }),
    ...(values.replication === undefined ? {} : { replication: values.replication }),
    ...(values.bypassRls === undefined ? {} : { bypassRls: values.bypassRls }),
    ...(values.password === undefined || values.password === null ? {} : { password: storedPassword(values.password) }),
  };
  const draft = new CatalogDraft(catalog);
  draft.putRole(next);
  return { catalog: draft.finish(), commandTag: 'ALTER ROLE', notices, droppedTableIds: [] };
}

/** A RoleSpec to its role: a name, CURRENT_USER / CURRENT_ROLE or SESSION_USER (PUBLIC is no role). */
export function resolveRoleSpec(spec: RoleSpec | undefined, context: DdlContext): RoleDef {
  switch (spec?.roletype) {
    case 'ROLESPEC_CURRENT_USER':
    case 'ROLESPEC_CURRENT_ROLE':
      return context.catalog.roleById(currentRoleId(context))!;
    case 'ROLESPEC_SESSION_USER':
      return context.catalog.roleById(context.sessionRoleId ?? currentRoleId(context))!;
    case 'ROLESPEC_PUBLIC':
      throw new SqlError(SqlState.undefinedObject, 'role "public" does not exist');
    default:
      return roleNamed(context.catalog, spec?.rolename ?? '');
  }
}

export function renameRole(statement: RenameStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const oldName = statement.subname ?? '';
  const newName = statement.newname ?? '';
  const role = roleNamed(catalog, oldName);
  if (role.id === (context.sessionRoleId ?? actor)) throw new SqlError(SqlState.featureNotSupported, 'session user cannot be renamed');
  if (role.id === actor) throw new SqlError(SqlState.featureNotSupported, 'current user cannot be renamed');
  if (catalog.role(newName) !== undefined) throw new SqlError(SqlState.duplicateObject, `role "${newName}" already exists`);
  checkReservedName(newName);
  requireRoleAdmin(catalog, actor, role, 'permission denied to rename role', 'must be superuser to rename superusers');
  // Passwords are SCRAM verifiers, which do not depend on the name (PostgreSQL clears MD5 ones).
  const draft = new CatalogDraft(catalog);
  draft.putRole({ ...role, name: newName });
  return { catalog: draft.finish(), commandTag: 'ALTER ROLE', notices: [], droppedTableIds: [] };
}

/**
 * What still refers to a role: PostgreSQL's DETAIL lines of 2BP01, in its order (by the object's
 * OID; for one object its privileges before its ownership).
 */
function dependentsOf(catalog: CatalogSnapshot, roleId: number): string[] {
  const found: { readonly id: number; readonly owner: boolean; readonly text: string }[] = [];
  const holds = (acl: readonly { grantee: number; grantor: number }[]) => acl.some((item) => item.grantee === roleId || item.grantor === roleId);
  for (const schema of catalog.schemas()) {
    if (schemaOwner(schema) === roleId) found.push({ id: schema.id, owner: true, text: `owner of schema ${schema.name}` });
    else if (schema.acl !== undefined && holds(schemaAcl(schema))) found.push({ id: schema.id, owner: false, text: `privileges for schema ${schema.name}` });
  }
  for (const relation of catalog.relations()) {
    if (relation.kind === 'system' || relation.kind === 'index') continue;
    if (ownerOf(relation) === roleId) found.push({ id: relation.id, owner: true, text: `owner of ${kindWord(relation.kind)} ${relation.name}` });
    else if (relation.acl !== undefined && holds(relationAcl(relation))) found.push({ id: relation.id, owner: false, text: `privileges for ${kindWord(relation.kind)} ${relation.name}` });
  }
  for (const fn of catalog.functions()) if (ownerOf(fn) === roleId) found.push({ id: fn.id, owner: true, text: `owner of function ${fn.name}` });
  found.sort((a, b) => a.id - b.id || Number(a.owner) - Number(b.owner));
  return found.map((entry) => entry.text);
}

export function dropRole(statement: DropRoleStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  if (!isSuperuser(catalog, actor) && catalog.roleById(actor)?.createRole !== true) throw new SqlError(SqlState.insufficientPrivilege, 'permission denied to drop role');
  const draft = new CatalogDraft(catalog);
  const notices: Notice[] = [];
  const dropped = new Set<number>();
  for (const item of statement.roles ?? []) {
    const spec = (item as { RoleSpec: RoleSpec }).RoleSpec;
    if (spec.roletype === 'ROLESPEC_PUBLIC') throw new SqlError(SqlState.undefinedObject, 'role "public" does not exist');
    const name = spec.rolename ?? '';
    const role = spec.roletype === 'ROLESPEC_CSTRING' ? catalog.role(name) : resolveRoleSpec(spec, context);
    if (role === undefined) {
      if (statement.missing_ok === true) {
        notices.push(notice(`role "${name}" does not exist, skipping`));
        continue;
      }
      throw new SqlError(SqlState.undefinedObject, `role "${name}" does not exist`);
    }
    if (role.id === actor) throw new SqlError(SqlState.objectInUse, 'current user cannot be dropped');
    if (role.id === context.sessionRoleId) throw new SqlError(SqlState.objectInUse, 'session user cannot be dropped');
    if (role.superuser && !isSuperuser(catalog, actor)) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to drop superusers');
    if (role.id === BOOTSTRAP_ROLE_ID || role.name === 'pg_database_owner') {
      throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop role ${role.name} because it is required by the database system`);
    }
    const dependents = dependentsOf(catalog, role.id);
    if (dependents.length > 0) {
      throw new SqlError(SqlState.dependentObjectsStillExist, `role "${role.name}" cannot be dropped because some objects depend on it`, { detail: dependents.join('\n') });
    }
    draft.removeRole(role.id);
    dropped.add(role.id);
  }
  if (dropped.size > 0) {
    for (const role of catalog.roles()) {
      if (dropped.has(role.id) || !role.memberOf.some((membership) => dropped.has(membership.roleId) || dropped.has(membership.grantor))) continue;
      draft.putRole({ ...role, memberOf: role.memberOf.filter((membership) => !dropped.has(membership.roleId)).map((membership) => (dropped.has(membership.grantor) ? { ...membership, grantor: BOOTSTRAP_ROLE_ID } : membership)) });
    }
  }
  return dropped.size === 0 ? unchanged('DROP ROLE', notices) : { catalog: draft.finish(), commandTag: 'DROP ROLE', notices, droppedTableIds: [] };
}

/** GRANT role [, ...] TO role [, ...] and REVOKE role [, ...] FROM role [, ...]. */
export function grantRole(statement: GrantRoleStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const isGrant = statement.is_grant === true;
  const commandTag = isGrant ? 'GRANT ROLE' : 'REVOKE ROLE';
  if ((statement.opt ?? []).length > 0) throw new SqlError(SqlState.featureNotSupported, 'WITH ADMIN OPTION is not supported');
  const granted = (statement.granted_roles ?? []).map((item) => roleNamed(catalog, (item as { AccessPriv: { priv_name?: string } }).AccessPriv.priv_name ?? ''));
  const grantees = (statement.grantee_roles ?? []).map((item) => resolveRoleSpec((item as { RoleSpec: RoleSpec }).RoleSpec, context));
  const roles = new Map(catalog.roles().map((role) => [role.id, role]));
  const notices: Notice[] = [];
  for (const role of granted) {
    if (!isSuperuser(catalog, actor)) {
      if (role.superuser) throw new SqlError(SqlState.insufficientPrivilege, 'must be superuser to alter superusers');
      if (catalog.roleById(actor)?.createRole !== true) throw new SqlError(SqlState.insufficientPrivilege, `must have admin option on role "${role.name}"`);
    }
    for (const grantee of grantees) {
      const current = roles.get(grantee.id)!;
      const member = current.memberOf.some((membership) => membership.roleId === role.id);
      if (isGrant) {
        if (member) {
          notices.push(notice(`role "${grantee.name}" is already a member of role "${role.name}"`));
          continue;
        }
        if (grantee.id === role.id || memberRoles(withRoles(catalog, roles), role.id).has(grantee.id)) {
          throw new SqlError(SqlState.invalidGrantOperation, `role "${role.name}" is a member of role "${grantee.name}"`);
        }
        roles.set(grantee.id, { ...current, memberOf: [...current.memberOf, { roleId: role.id, grantor: actor }] });
      } else {
        if (!member) {
          notices.push(notice(`role "${grantee.name}" has not been granted membership in role "${role.name}" by role "${catalog.roleById(actor)!.name}"`, 'WARNING'));
          continue;
        }
        roles.set(grantee.id, { ...current, memberOf: current.memberOf.filter((membership) => membership.roleId !== role.id) });
      }
    }
  }
  const draft = new CatalogDraft(catalog);
  for (const role of roles.values()) draft.putRole(role);
  return { catalog: draft.finish(), commandTag, notices, droppedTableIds: [] };
}

function withRoles(catalog: CatalogSnapshot, roles: ReadonlyMap<number, RoleDef>): CatalogSnapshot {
  const draft = new CatalogDraft(catalog);
  for (const role of roles.values()) draft.putRole(role);
  return draft.finish();
}

function rolesOf(specs: readonly Node[] | undefined, context: DdlContext): RoleDef[] {
  return (specs ?? []).map((item) => resolveRoleSpec((item as { RoleSpec: RoleSpec }).RoleSpec, context));
}

/**
 * REASSIGN OWNED BY old [, ...] TO new: every schema, relation and function the old roles own
 * passes to the new one (their ACLs follow, as ALTER ... OWNER TO's). The current role needs the
 * privileges of every role named (42501 otherwise); the bootstrap superuser's objects stay.
 */
export function reassignOwned(statement: ReassignOwnedStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const olds = rolesOf(statement.roles, context);
  const target = resolveRoleSpec(statement.newrole, context);
  const mine = privilegeRoles(catalog, actor);
  if (!isSuperuser(catalog, actor) && ![...olds, target].every((role) => mine.has(role.id))) {
    throw new SqlError(SqlState.insufficientPrivilege, 'permission denied to reassign objects');
  }
  const draft = new CatalogDraft(catalog);
  for (const old of olds) {
    if (old.id === BOOTSTRAP_ROLE_ID) {
      throw new SqlError(SqlState.dependentObjectsStillExist, `cannot reassign ownership of objects owned by role ${old.name} because they are required by the database system`);
    }
    if (old.id === target.id) continue;
    for (const schema of catalog.schemas()) {
      if (schemaOwner(schema) !== old.id) continue;
      draft.putSchema({ ...schema, owner: target.id, ...(schema.acl === undefined ? {} : { acl: aclWithNewOwner(schema.acl, old.id, target.id) }) });
    }
    for (const relation of catalog.relations()) {
      if (relation.kind === 'system' || ownerOf(relation) !== old.id) continue;
      draft.putRelation({ ...relation, owner: target.id, ...(relation.acl === undefined ? {} : { acl: aclWithNewOwner(relation.acl, old.id, target.id) }) });
    }
    for (const fn of catalog.functions()) if (ownerOf(fn) === old.id) draft.putFunction({ ...fn, owner: target.id });
  }
  return { catalog: draft.finish(), commandTag: 'REASSIGN OWNED', notices: [], droppedTableIds: [] };
}

/**
 * DROP OWNED BY role [, ...]: the privileges granted to the roles are revoked. Dropping the objects
 * they own is not supported (0A000 while they own any: REASSIGN OWNED or DROP them first), so the
 * usual `REASSIGN OWNED BY r TO s; DROP OWNED BY r; DROP ROLE r` works.
 */
export function dropOwned(statement: DropOwnedStmt, context: DdlContext): DdlOutcome {
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const roles = rolesOf(statement.roles, context);
  const mine = privilegeRoles(catalog, actor);
  if (!isSuperuser(catalog, actor) && !roles.every((role) => mine.has(role.id))) {
    throw new SqlError(SqlState.insufficientPrivilege, 'permission denied to drop objects');
  }
  const ids = new Set(roles.map((role) => role.id));
  for (const role of roles) {
    if (role.id === BOOTSTRAP_ROLE_ID) throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop objects owned by role ${role.name} because they are required by the database system`);
  }
  const owned =
    catalog.schemas().find((schema) => schema.owner !== undefined && ids.has(schema.owner))?.name ??
    catalog.relations().find((relation) => relation.kind !== 'system' && relation.owner !== undefined && ids.has(relation.owner))?.name ??
    catalog.functions().find((fn) => fn.owner !== undefined && ids.has(fn.owner))?.name;
  if (owned !== undefined) {
    throw new SqlError(SqlState.featureNotSupported, `DROP OWNED of a role that owns objects ("${owned}") is not supported`, {
      hint: 'REASSIGN OWNED BY the role TO another first, or drop its objects.',
    });
  }
  const draft = new CatalogDraft(catalog);
  const without = (acl: readonly AclItem[]) => acl.filter((item) => !ids.has(item.grantee));
  for (const schema of catalog.schemas()) if (schema.acl !== undefined && schema.acl.some((item) => ids.has(item.grantee))) draft.putSchema({ ...schema, acl: without(schema.acl) });
  for (const relation of catalog.relations()) if (relation.acl !== undefined && relation.acl.some((item) => ids.has(item.grantee))) draft.putRelation({ ...relation, acl: without(relation.acl) });
  return { catalog: draft.finish(), commandTag: 'DROP OWNED', notices: [], droppedTableIds: [] };
}
