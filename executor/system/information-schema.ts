// information_schema.tables, columns, schemata, views and routines, the SQL-standard catalog views tools
// read. Values follow PostgreSQL's (table_type 'BASE TABLE' / 'VIEW', data_type spelled as the
// standard does, YES/NO flags). Sources show as 'FOREIGN'; materialized views are not listed
// anywhere here, as in PostgreSQL.

import type { RelationDef } from '../../sql/catalog.js';
import type { DataType } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import { formatTypeName } from '../catalog/type-names.js';
import type { SystemTable } from './pg-catalog.js';
import { systemRelation } from './system-columns.js';
import { attributes, currentRole, defaultDisplayText, inPgClass, relkind, roleName, type SystemContext } from './system-context.js';
import { isSuperuser, ownerOf, privilegeRoles, PUBLIC_ROLE_ID, relationAcl, schemaOwner } from '../catalog/privileges.js';
import { identityFields, informationSchemaSequencesTable } from './sequence-catalog.js';

function is(id: number, name: string, columns: readonly string[], rows: (context: SystemContext) => Row[]): SystemTable {
  return { def: systemRelation(id, 'information_schema', name, columns), rows };
}

function userRelations(context: SystemContext): RelationDef[] {
  return context.catalog.relations().filter((relation) => relation.kind !== 'index' && relation.kind !== 'sink' && relation.kind !== 'subscription');
}

function tableType(relation: RelationDef): string | undefined {
  switch (relation.kind) {
    case 'table':
    case 'system':
      return relation.kind === 'system' && ['pg_tables', 'pg_views', 'pg_matviews', 'pg_roles', 'pg_user', 'pg_settings'].includes(relation.name) ? 'VIEW' : 'BASE TABLE';
    case 'view':
      return 'VIEW';
    case 'source':
      return 'FOREIGN';
    default:
      return undefined;
  }
}

/** information_schema.columns.data_type: the standard's spelling, 'ARRAY' and 'USER-DEFINED' aside. */
function standardTypeName(type: DataType): string {
  if (type.name === 'array') return 'ARRAY';
  if (type.name === 'jsonb' || type.name === 'json') return type.name;
  return formatTypeName({ ...type, typmod: -1 });
}

function characterLength(type: DataType): number | null {
  return (type.name === 'varchar' || type.name === 'bpchar') && type.typmod >= 4 ? type.typmod - 4 : null;
}

function numericPrecision(type: DataType): [number | null, number | null, number | null] {
  switch (type.name) {
    case 'int2':
      return [16, 2, 0];
    case 'int4':
      return [32, 2, 0];
    case 'int8':
      return [64, 2, 0];
    case 'float4':
      return [24, 2, null];
    case 'float8':
      return [53, 2, null];
    case 'numeric':
      if (type.typmod < 4) return [null, 10, null];
      return [((type.typmod - 4) >> 16) & 0xffff, 10, (type.typmod - 4) & 0x7ff];
    default:
      return [null, null, null];
  }
}

function udtName(type: DataType): string {
  return type.name === 'array' ? `_${type.element?.name ?? 'text'}` : type.name;
}

/** Privilege letters as information_schema names them, in aclexplode's order. */
const PRIVILEGE_TYPES: readonly (readonly [string, string])[] = [
  ['a', 'INSERT'], ['r', 'SELECT'], ['w', 'UPDATE'], ['d', 'DELETE'], ['D', 'TRUNCATE'], ['x', 'REFERENCES'], ['t', 'TRIGGER'],
];

/**
 * information_schema.table_privileges as PostgreSQL 15 defines it: one row per privilege of each
 * ACL item (the default ACL where none was granted) of tables, views and sources, shown when the
 * current role has the privileges of its grantor or grantee or the grantee is PUBLIC;
 * role_table_grants keeps the rows whose grantor or grantee is such a role.
 */
function tablePrivilegeRows(context: SystemContext, rolesOnly: boolean): Row[] {
  const catalog = context.catalog;
  const viewer = currentRole(context);
  const superuser = isSuperuser(catalog, viewer);
  const enabled = privilegeRoles(catalog, viewer);
  const has = (role: number) => superuser || enabled.has(role);
  const rows: Row[] = [];
  for (const relation of catalog.relations()) {
    if (!inPgClass(relation) || !['r', 'v', 'f', 'p'].includes(relkind(relation))) continue;
    const owner = ownerOf(relation);
    for (const item of relationAcl(relation)) {
      const grantor = catalog.roleById(item.grantor);
      const grantee = item.grantee === PUBLIC_ROLE_ID ? undefined : catalog.roleById(item.grantee);
      if (grantor === undefined || (grantee === undefined && item.grantee !== PUBLIC_ROLE_ID)) continue;
      const visible = rolesOnly ? has(grantor.id) || (grantee !== undefined && has(grantee.id)) : has(grantor.id) || grantee === undefined || has(grantee.id);
      if (!visible) continue;
      const grantable = grantee !== undefined && (grantee.superuser || privilegeRoles(catalog, grantee.id).has(owner));
      for (const [letter, name] of PRIVILEGE_TYPES) {
        if (!item.privileges.includes(letter)) continue;
        rows.push([grantor.name, grantee?.name ?? 'PUBLIC', context.database, relation.schema, relation.name, name, grantable ? 'YES' : 'NO', letter === 'r' ? 'YES' : 'NO']);
      }
    }
  }
  return rows;
}

const TABLE_PRIVILEGE_COLUMNS = [
  'grantor:name', 'grantee:name', 'table_catalog:name', 'table_schema:name', 'table_name:name', 'privilege_type:text', 'is_grantable:text', 'with_hierarchy:text',
];

export const informationSchemaTables: readonly SystemTable[] = [
  is(13110, 'table_privileges', TABLE_PRIVILEGE_COLUMNS, (context) => tablePrivilegeRows(context, false)),
  is(13111, 'role_table_grants', TABLE_PRIVILEGE_COLUMNS, (context) => tablePrivilegeRows(context, true)),
  is(
    13100,
    'tables',
    ['table_catalog:name', 'table_schema:name', 'table_name:name', 'table_type:text', 'self_referencing_column_name:name', 'reference_generation:text', 'user_defined_type_catalog:name', 'user_defined_type_schema:name', 'user_defined_type_name:name', 'is_insertable_into:text', 'is_typed:text', 'commit_action:text'],
    (context) =>
      userRelations(context).flatMap((relation) => {
        const kind = tableType(relation);
        if (kind === undefined) return [];
        return [[context.database, relation.schema, relation.name, kind, null, null, null, null, null, relation.kind === 'table' ? 'YES' : 'NO', 'NO', null]];
      }),
  ),
  is(
    13101,
    'columns',
    ['table_catalog:name', 'table_schema:name', 'table_name:name', 'column_name:name', 'ordinal_position:int4', 'column_default:text', 'is_nullable:text', 'data_type:text', 'character_maximum_length:int4', 'character_octet_length:int4', 'numeric_precision:int4', 'numeric_precision_radix:int4', 'numeric_scale:int4', 'datetime_precision:int4', 'interval_type:text', 'udt_catalog:name', 'udt_schema:name', 'udt_name:name', 'is_identity:text', 'identity_generation:text', 'identity_start:text', 'identity_increment:text', 'identity_maximum:text', 'identity_minimum:text', 'identity_cycle:text', 'is_generated:text', 'is_updatable:text'],
    (context) => {
      const rows: Row[] = [];
      for (const relation of userRelations(context)) {
        if (relation.kind === 'materialized_view') continue;
        for (const { column, attnum } of attributes(relation)) {
          const [precision, radix, scale] = numericPrecision(column.type);
          const length = characterLength(column.type);
          const datetime = ['timestamp', 'timestamptz', 'time', 'date', 'interval'].includes(column.type.name)
            ? column.type.name === 'date' ? 0 : column.type.typmod >= 0 ? column.type.typmod : 6
            : null;
          rows.push([
            context.database, relation.schema, relation.name, column.name, attnum, defaultDisplayText(column) ?? null,
            column.nullable ? 'YES' : 'NO', standardTypeName(column.type), length, length === null ? (column.type.name === 'text' || column.type.name === 'varchar' ? 1073741824 : null) : length * 4,
            precision, radix, scale, datetime, null, context.database, 'pg_catalog', udtName(column.type), ...identityFields(context, column), 'NEVER',
            relation.kind === 'table' ? 'YES' : 'NO',
          ]);
        }
      }
      return rows;
    },
  ),
  is(
    13102,
    'schemata',
    ['catalog_name:name', 'schema_name:name', 'schema_owner:name', 'default_character_set_catalog:name', 'default_character_set_schema:name', 'default_character_set_name:name', 'sql_path:text'],
    (context) => context.catalog.schemas().map((schema) => [context.database, schema.name, roleName(context, schemaOwner(schema)), null, null, null, null]),
  ),
  is(
    13103,
    'views',
    ['table_catalog:name', 'table_schema:name', 'table_name:name', 'view_definition:text', 'check_option:text', 'is_updatable:text', 'is_insertable_into:text', 'is_trigger_updatable:text', 'is_trigger_deletable:text', 'is_trigger_insertable_into:text'],
    (context) =>
      context.catalog
        .relations()
        .filter((relation) => relation.kind === 'view')
        .map((relation) => [context.database, relation.schema, relation.name, relation.definition ?? null, 'NONE', 'NO', 'NO', 'NO', 'NO', 'NO']),
  ),
  is(
    13104,
    'routines',
    // PostgreSQL's columns up to is_implicitly_invocable; its later (result cast, UDT) columns are left out.
    [
      'specific_catalog:name', 'specific_schema:name', 'specific_name:name', 'routine_catalog:name', 'routine_schema:name', 'routine_name:name', 'routine_type:text',
      'data_type:text', 'type_udt_catalog:name', 'type_udt_schema:name', 'type_udt_name:name', 'routine_body:text', 'routine_definition:text', 'external_name:text',
      'external_language:text', 'parameter_style:text', 'is_deterministic:text', 'sql_data_access:text', 'is_null_call:text', 'schema_level_routine:text',
      'security_type:text', 'is_user_defined_cast:text', 'is_implicitly_invocable:text',
    ],
    // The catalog's SQL functions (PostgreSQL also lists its built-in functions here).
    (context) =>
      context.catalog.functions().map((fn) => [
        context.database, fn.schema, `${fn.name}_${fn.id}`, context.database, fn.schema, fn.name, 'FUNCTION',
        standardTypeName(fn.returnType), context.database, 'pg_catalog', udtName(fn.returnType), 'SQL', fn.source, null,
        'SQL', 'GENERAL', fn.volatility === 'immutable' ? 'YES' : 'NO', 'MODIFIES', fn.strict ? 'YES' : 'NO', 'YES',
        'INVOKER', null, null,
      ]),
  ),
  informationSchemaSequencesTable,
];
