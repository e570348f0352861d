// GRANT / REVOKE { SELECT | INSERT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER | ALL
// [PRIVILEGES] } ON [TABLE] name [, ...] | ALL TABLES IN SCHEMA s, { USAGE | SELECT | UPDATE | ALL }
// ON SEQUENCE name [, ...] | ALL SEQUENCES IN SCHEMA s, and { USAGE | CREATE | ALL } ON
// SCHEMA s, TO | FROM role | PUBLIC: the object's ACL edited as PostgreSQL does (items per grantee
// and grantor, the grantor being the object's owner; the first change starts from the default
// ACL). Only the owner (or a member of it, or a superuser) may grant; a role with some privilege
// on the object gets PostgreSQL's WARNING that nothing was granted, one with none 42501.

import type { GrantStmt, Node, RoleSpec } from '@pgsql/types';
import type { AclItem, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { CatalogDraft } from '../catalog/catalog.js';
import type { Notice } from '../catalog/results.js';
import {
  aclObjectWord,
  grantAcl,
  hasRelationPrivilege,
  hasSchemaPrivilege,
  ownerOf,
  ownsObject,
  privilegeLetter,
  PUBLIC_ROLE_ID,
  RELATION_PRIVILEGES,
  relationAcl,
  SEQUENCE_PRIVILEGES,
  revokeAcl,
  SCHEMA_PRIVILEGES,
  schemaAcl,
  schemaOwner,
} from '../catalog/privileges.js';
import { currentRoleId, type DdlContext, type DdlOutcome } from './ddl-context.js';
import { resolveRoleSpec } from './roles.js';

function letters(statement: GrantStmt, all: string, objectWord: string): string {
  if (statement.privileges === undefined || statement.privileges.length === 0) return all;
  let result = '';
  for (const item of statement.privileges) {
    const privilege = (item as { AccessPriv: { priv_name?: string; cols?: Node[] } }).AccessPriv;
    if ((privilege.cols ?? []).length > 0) throw new SqlError(SqlState.featureNotSupported, 'column privileges are not supported');
    const name = privilege.priv_name ?? '';
    const letter = privilegeLetter(name);
    if (letter === undefined || !all.includes(letter)) throw new SqlError(SqlState.invalidGrantOperation, `invalid privilege type ${name.toUpperCase()} for ${objectWord}`);
    result += letter;
  }
  return result;
}

function grantees(statement: GrantStmt, context: DdlContext): number[] {
  return (statement.grantees ?? []).map((item) => {
    const spec = (item as { RoleSpec: RoleSpec }).RoleSpec;
    return spec.roletype === 'ROLESPEC_PUBLIC' ? PUBLIC_ROLE_ID : resolveRoleSpec(spec, context).id;
  });
}

function edit(acl: readonly AclItem[], statement: GrantStmt, who: readonly number[], grantor: number, privileges: string, order: string): AclItem[] {
  return statement.is_grant === true ? grantAcl(acl, who, grantor, privileges, order) : revokeAcl(acl, who, grantor, privileges);
}

export function grantPrivileges(statement: GrantStmt, context: DdlContext): DdlOutcome {
  const commandTag = statement.is_grant === true ? 'GRANT' : 'REVOKE';
  if (statement.grant_option === true) throw new SqlError(SqlState.featureNotSupported, `${statement.is_grant === true ? 'WITH GRANT OPTION' : 'GRANT OPTION FOR'} is not supported`);
  const catalog = context.catalog;
  const actor = currentRoleId(context);
  const draft = new CatalogDraft(catalog);
  const notices: Notice[] = [];
  if (statement.objtype === 'OBJECT_SCHEMA') {
    const privileges = letters(statement, SCHEMA_PRIVILEGES, 'schema');
    const who = grantees(statement, context);
    for (const item of statement.objects ?? []) {
      const name = (item as { String?: { sval?: string } }).String?.sval ?? '';
      const schema = catalog.schema(name);
      if (schema === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
      const owner = schemaOwner(schema);
      if (!ownsObject(catalog, actor, owner)) {
        if (![...SCHEMA_PRIVILEGES].some((letter) => hasSchemaPrivilege(catalog, actor, schema, letter))) throw new SqlError(SqlState.insufficientPrivilege, `permission denied for schema ${name}`);
        notices.push(nothingDone(statement, name));
        continue;
      }
      draft.putSchema({ ...schema, acl: edit(schemaAcl(schema), statement, who, owner, privileges, SCHEMA_PRIVILEGES) });
    }
    return { catalog: draft.finish(), commandTag, notices, droppedTableIds: [] };
  }
  if (statement.objtype !== 'OBJECT_TABLE' && statement.objtype !== 'OBJECT_SEQUENCE') {
    throw new SqlError(SqlState.featureNotSupported, `GRANT and REVOKE on ${String(statement.objtype).replace('OBJECT_', '').toLowerCase()} objects are not supported`);
  }
  const onSequences = statement.objtype === 'OBJECT_SEQUENCE';
  const privileges = letters(statement, onSequences ? SEQUENCE_PRIVILEGES : RELATION_PRIVILEGES + SEQUENCE_PRIVILEGES, onSequences ? 'sequence' : 'relation');
  const who = grantees(statement, context);
  const relations: RelationDef[] = [];
  if (statement.targtype === 'ACL_TARGET_ALL_IN_SCHEMA') {
    for (const item of statement.objects ?? []) {
      const name = (item as { String?: { sval?: string } }).String?.sval ?? '';
      if (catalog.schema(name) === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
      const kinds: readonly RelationDef['kind'][] = onSequences ? ['sequence'] : ['table', 'view', 'materialized_view', 'source'];
      relations.push(...catalog.relations().filter((relation) => relation.schema === name && kinds.includes(relation.kind)));
    }
  } else if (statement.targtype === 'ACL_TARGET_OBJECT') {
    for (const item of statement.objects ?? []) {
      const rangeVar = (item as { RangeVar: { schemaname?: string; relname?: string } }).RangeVar;
      const relation = catalog.resolveRelation(rangeVar.schemaname, rangeVar.relname ?? '', context.searchPath);
      if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${rangeVar.relname ?? ''}" does not exist`);
      if (relation.kind === 'index') throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is an index`);
      if (onSequences && relation.kind !== 'sequence') throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a sequence`);
      relations.push(relation);
    }
  } else {
    throw new SqlError(SqlState.featureNotSupported, 'ALTER DEFAULT PRIVILEGES is not supported');
  }
  const edited = new Map<number, RelationDef>();
  for (const relation of relations) {
    const current = edited.get(relation.id) ?? relation;
    const owner = ownerOf(current);
    if (!ownsObject(catalog, actor, owner)) {
      if (![...RELATION_PRIVILEGES, 'U'].some((letter) => hasRelationPrivilege(catalog, actor, current, letter))) throw new SqlError(SqlState.insufficientPrivilege, `permission denied for ${aclObjectWord(current)} ${current.name}`);
      notices.push(nothingDone(statement, current.name));
      continue;
    }
    // A sequence takes only USAGE, SELECT and UPDATE (ALL: those three); a table not USAGE.
    const all = current.kind === 'sequence' ? SEQUENCE_PRIVILEGES : RELATION_PRIVILEGES;
    const given = statement.privileges === undefined || statement.privileges.length === 0 ? all : [...privileges].filter((letter) => all.includes(letter)).join('');
    if (given.length < (statement.privileges === undefined || statement.privileges.length === 0 ? all.length : privileges.length)) {
      if (current.kind === 'sequence') notices.push({ severity: 'WARNING', code: '01000', message: `sequence "${current.name}" only supports USAGE, SELECT, and UPDATE privileges` });
      else throw new SqlError(SqlState.invalidGrantOperation, 'invalid privilege type USAGE for table');
    }
    const next = { ...current, acl: edit(relationAcl(current), statement, who, owner, given, RELATION_PRIVILEGES + 'U') };
    edited.set(relation.id, next);
    draft.putRelation(next);
  }
  return { catalog: draft.finish(), commandTag, notices, droppedTableIds: [] };
}

/**
 * A role with some privileges on the object but no grant option (oxbow keeps none): PostgreSQL's
 * WARNING, and nothing changes.
 */
function nothingDone(statement: GrantStmt, name: string): Notice {
  return statement.is_grant === true
    ? { severity: 'WARNING', code: '01007', message: `no privileges were granted for "${name}"` }
    : { severity: 'WARNING', code: '01006', message: `no privileges could be revoked for "${name}"` };
}
