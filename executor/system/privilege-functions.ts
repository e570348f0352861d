// The privilege inquiry functions over the catalog's roles and ACLs, as PostgreSQL 15 answers
// them: has_table_privilege, has_sequence_privilege, has_schema_privilege, pg_has_role (with or without the role
// argument, each object by name or OID, several privileges separated by commas: true when any is
// held). An unknown role is 42704, an unknown relation name 42P01, an unknown schema name 3F000,
// an unknown privilege word 22023; an unknown OID gives NULL.

import { SqlError, SqlState } from '../../sql/errors.js';
import type { Value } from '../../sql/value.js';
import { hasRelationPrivilege, hasSchemaPrivilege, isMemberOf, isSuperuser, privilegeRoles } from '../catalog/privileges.js';
import { currentRole, type SystemContext } from './system-context.js';

function roleOf(context: SystemContext, value: Value): number | undefined {
  if (typeof value === 'number' || typeof value === 'bigint') return context.catalog.roleById(Number(value))?.id;
  const name = String(value);
  if (name === 'public') return 0;
  const role = context.catalog.role(name);
  if (role === undefined) throw new SqlError(SqlState.undefinedObject, `role "${name}" does not exist`);
  return role.id;
}

/** A possibly qualified, possibly quoted name as PostgreSQL's textToQualifiedNameList reads it. */
function qualifiedName(text: string): string[] {
  const parts: string[] = [];
  const pattern = /\s*(?:"((?:[^"]|"")*)"|([^."\s]+))\s*(\.|$)/gy;
  let match: RegExpExecArray | null;
  while (pattern.lastIndex < text.length && (match = pattern.exec(text)) !== null) {
    parts.push(match[1] !== undefined ? match[1].replace(/""/g, '"') : match[2]!.toLowerCase());
    if (match[3] === '') break;
  }
  if (parts.length === 0) throw new SqlError(SqlState.invalidName, 'invalid name syntax');
  return parts;
}

function privilegeLetters(text: string, known: Readonly<Record<string, string>>): string {
  let letters = '';
  for (const raw of text.split(',')) {
    const word = raw.trim().toLowerCase().replace(/\s+with\s+grant\s+option$/, '');
    const letter = known[word];
    if (letter === undefined) throw new SqlError(SqlState.invalidParameterValue, `unrecognized privilege type: "${raw.trim()}"`);
    letters += letter;
  }
  return letters;
}

const TABLE_PRIVILEGES: Readonly<Record<string, string>> = { select: 'r', insert: 'a', update: 'w', delete: 'd', truncate: 'D', references: 'x', trigger: 't' };
const SCHEMA_PRIVILEGES: Readonly<Record<string, string>> = { usage: 'U', create: 'C' };
const SEQUENCE_PRIVILEGES: Readonly<Record<string, string>> = { usage: 'U', select: 'r', update: 'w' };
const ROLE_PRIVILEGES: Readonly<Record<string, string>> = { member: 'M', usage: 'U', set: 'M' };

/** Splits (role?, object, privilege) into its three parts, the role defaulting to current_user. */
function parts(context: SystemContext, args: readonly Value[]): { role: number | undefined; object: Value; privilege: string } {
  if (args.length === 2) return { role: currentRole(context), object: args[0]!, privilege: String(args[1]) };
  if (args.length === 3) return { role: roleOf(context, args[0]!), object: args[1]!, privilege: String(args[2]) };
  throw new SqlError(SqlState.undefinedFunction, 'function takes two or three arguments');
}

export function hasTablePrivilege(context: SystemContext, args: readonly Value[]): Value {
  return relationPrivilege(context, args, TABLE_PRIVILEGES);
}

/** has_sequence_privilege: USAGE, SELECT, UPDATE of a sequence (42809 for another relation). */
export function hasSequencePrivilege(context: SystemContext, args: readonly Value[]): Value {
  return relationPrivilege(context, args, SEQUENCE_PRIVILEGES, true);
}

function relationPrivilege(context: SystemContext, args: readonly Value[], known: Readonly<Record<string, string>>, sequence = false): Value {
  const { role, object, privilege } = parts(context, args);
  const letters = privilegeLetters(privilege, known);
  let relation;
  if (typeof object === 'number' || typeof object === 'bigint') {
    relation = context.catalog.relationById(Number(object));
    if (relation === undefined) return null;
  } else {
    const name = qualifiedName(String(object));
    relation = context.catalog.resolveRelation(name.length > 1 ? name.at(-2) : undefined, name.at(-1)!, context.searchPath);
    if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${String(object)}" does not exist`);
  }
  if (sequence && relation.kind !== 'sequence') throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a sequence`);
  if (role === undefined) return null;
  return [...letters].some((letter) => hasRelationPrivilege(context.catalog, role, relation, letter));
}

export function hasSchemaPrivilegeFunction(context: SystemContext, args: readonly Value[]): Value {
  const { role, object, privilege } = parts(context, args);
  const letters = privilegeLetters(privilege, SCHEMA_PRIVILEGES);
  let schema;
  if (typeof object === 'number' || typeof object === 'bigint') {
    schema = context.catalog.schemaById(Number(object));
    if (schema === undefined) return null;
  } else {
    schema = context.catalog.schema(String(object));
    if (schema === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${String(object)}" does not exist`);
  }
  if (role === undefined) return null;
  return [...letters].some((letter) => hasSchemaPrivilege(context.catalog, role, schema, letter));
}

export function pgHasRole(context: SystemContext, args: readonly Value[]): Value {
  const { role, object, privilege } = parts(context, args);
  const letters = privilegeLetters(privilege, ROLE_PRIVILEGES);
  const target = roleOf(context, object);
  if (role === undefined || target === undefined) return null;
  const catalog = context.catalog;
  return [...letters].some((letter) =>
    letter === 'M' ? isMemberOf(catalog, role, target) : isSuperuser(catalog, role) || privilegeRoles(catalog, role).has(target),
  );
}
