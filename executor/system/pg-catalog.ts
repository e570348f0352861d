// The pg_catalog relations psql, drivers and tools read, generated per statement from the catalog
// snapshot: pg_class, pg_namespace, pg_attribute, pg_type, pg_database, pg_index, pg_constraint,
// pg_attrdef, pg_description, pg_proc, pg_aggregate, pg_settings, pg_roles/pg_user, pg_tables/pg_views/
// pg_matviews, pg_am, pg_opclass (default btree classes; pg_index.indclass), pg_collation, pg_tablespace, and the ones psql's \d queries join but oxbow
// has nothing for (pg_inherits, pg_policy, pg_trigger, pg_statistic_ext, pg_publication*,
// pg_enum), present and empty; pg_foreign_table / pg_foreign_server describe sources;
// pg_sequence, pg_sequences and the UNIQUE / FOREIGN KEY rows of pg_constraint come from
// sequence-catalog.ts; what pg_dump reads (pg_extension, pg_depend with sequence-catalog.ts's rows,
// pg_rewrite, and more empty catalogs). Column lists follow PostgreSQL 15
// (a subset where a column has no meaning here); OIDs of the catalogs are PostgreSQL's.

import type { RelationDef, SchemaDef } from '../../sql/catalog.js';
import { aclText, ownerOf, schemaAcl, schemaOwner } from '../catalog/privileges.js';
import * as functions from '../../sql/functions.js';
import { ARRAY_TYPE_IO, TYPE_IO } from '../../sql/functions.js';
import { aggregateSignatures, procSignature, sessionProcSignatures } from './pg-proc-signatures.js';
import { PSEUDO_TYPES } from '../catalog/type-names.js';
import { TYPES, type, typeOid, VECTOR_OIDS, type DataType, type TypeName } from '../../sql/types.js';
import type { Row, SqlArray, Value } from '../../sql/value.js';
import { systemRelation } from './system-columns.js';
import { attidentity, constraintRows, foreignKeyTables, pgDependRows, pgSequenceRows, pgSequencesTable } from './sequence-catalog.js';
import {
  ATTRDEF_OID_OFFSET,
  BTREE_AM_OID,
  CHECK_OID_OFFSET,
  CHECKS_PER_TABLE,
  CONSTRAINT_OID_OFFSET,
  DATABASE_OID,
  DEFAULT_COLLATION_OID,
  HEAP_AM_OID,
  OWNER_OID,
  PG_CLASS_OID,
  PG_NAMESPACE_OID,
  attributes,
  defaultDisplayText,
  inPgClass,
  relkind,
  schemaOid,
  roleName,
  type SystemContext,
} from './system-context.js';

/**
 * A system relation: its definition and its rows for one statement. A layer above system/ that
 * provides rows from its own state declares the context it reads (`C`, the statement's
 * SystemContext with its fields) and registers the relation with the engine (system-relations.ts).
 */
export interface SystemTable<C extends SystemContext = SystemContext> {
  readonly def: RelationDef;
  rows(context: C): Row[];
}

function array(elements: Value[]): SqlArray {
  return { kind: 'array', elements };
}

const textTypes = new Set<TypeName>(['text', 'varchar', 'bpchar']);

function collationOf(type: DataType): number {
  return textTypes.has(type.name) ? DEFAULT_COLLATION_OID : type.name === 'name' ? 950 : 0;
}

function typeLength(type: DataType): number {
  return type.name === 'array' ? -1 : TYPES[type.name].length;
}

function pg(id: number, name: string, columns: readonly string[], rows: (context: SystemContext) => Row[]): SystemTable {
  return withTableoid({ def: systemRelation(id, 'pg_catalog', name, columns), rows });
}

/**
 * Every pg_catalog relation has PostgreSQL's system column `tableoid` (pg_dump reads it from each
 * catalog): a hidden last column, not in `SELECT *`, holding the catalog's own OID.
 */
function withTableoid(table: SystemTable): SystemTable {
  const { def } = table;
  const tableoid = { name: 'tableoid', type: type('oid'), nullable: false, hidden: true };
  return {
    def: { ...def, columns: [...def.columns, tableoid] },
    rows: (context) => table.rows(context).map((row) => [...row, def.id]),
  };
}

const empty = (): Row[] => [];

/** A foreign server per source connector (pg_foreign_server), so psql's \d NAME names it. */
const CONNECTOR_SERVERS: Readonly<Record<string, number>> = { kafka: 13201, nexmark: 13202, datagen: 13203 };

function connectorServerOid(connector: string): number {
  return CONNECTOR_SERVERS[connector.toLowerCase()] ?? 0;
}

/** Every relation that pg_class lists, user and system. */
function classRelations(context: SystemContext): RelationDef[] {
  return context.catalog.relations().filter(inPgClass);
}

function hasIndexes(context: SystemContext, relation: RelationDef): boolean {
  return context.catalog.dependents(relation.id).some((dependent) => dependent.kind === 'index' && dependent.indexOn?.relationId === relation.id);
}

const pgClass = pg(
  PG_CLASS_OID,
  'pg_class',
  [
    'oid:oid', 'relname:name', 'relnamespace:oid', 'reltype:oid', 'reloftype:oid', 'relowner:oid', 'relam:oid', 'relfilenode:oid',
    'reltablespace:oid', 'relpages:int4', 'reltuples:float4', 'relallvisible:int4', 'reltoastrelid:oid', 'relhasindex:bool',
    'relisshared:bool', 'relpersistence:char', 'relkind:char', 'relnatts:int2', 'relchecks:int2', 'relhasrules:bool',
    'relhastriggers:bool', 'relhassubclass:bool', 'relrowsecurity:bool', 'relforcerowsecurity:bool', 'relispopulated:bool',
    'relreplident:char', 'relispartition:bool', 'relrewrite:oid', 'relacl:text[]', 'reloptions:text[]', 'relpartbound:text',
    // PostgreSQL's xid columns (pg_dump reads them), 0 here: oxbow has no transaction-id wraparound.
    'relfrozenxid:oid', 'relminmxid:oid',
  ],
  (context) => {
    const withTriggers = foreignKeyTables(context);
    return classRelations(context).map((relation) => {
      const kind = relkind(relation);
      const am = kind === 'i' ? BTREE_AM_OID : kind === 'r' || kind === 'm' ? HEAP_AM_OID : 0;
      return [
        relation.id, relation.name, schemaOid(context, relation.schema), 0, 0, ownerOf(relation), am, relation.id,
        0, kind === 'i' ? 1 : 0, kind === 'i' ? 0 : -1, 0, 0, hasIndexes(context, relation),
        false, 'p', kind, attributes(relation).length, relation.checks?.length ?? 0, false,
        withTriggers.has(relation.id), false, false, false, true,
        kind === 'r' || kind === 'm' ? 'd' : 'n', false, 0, relation.acl === undefined ? null : array(aclText(context.catalog, relation.acl)), null, null,
        0, 0,
      ];
    });
  },
);

/**
 * A schema's nspacl: its GRANTed ACL, PostgreSQL 15's for `public` (pg_dump dumps a GRANT or
 * REVOKE for any other), else NULL (the default).
 */
function namespaceAcl(context: SystemContext, schema: SchemaDef): SqlArray | null {
  if (schema.acl === undefined && schema.name !== 'public') return null;
  return array(aclText(context.catalog, schemaAcl(schema)));
}

const pgNamespace = pg(PG_NAMESPACE_OID, 'pg_namespace', ['oid:oid', 'nspname:name', 'nspowner:oid', 'nspacl:text[]'], (context) =>
  context.catalog.schemas().map((schema) => [schema.id, schema.name, schemaOwner(schema), namespaceAcl(context, schema)]),
);

const pgAttribute = pg(
  1249,
  'pg_attribute',
  [
    'attrelid:oid', 'attname:name', 'atttypid:oid', 'attstattarget:int4', 'attlen:int2', 'attnum:int2', 'attndims:int4',
    'attcacheoff:int4', 'atttypmod:int4', 'attbyval:bool', 'attalign:char', 'attstorage:char', 'attcompression:char',
    'attnotnull:bool', 'atthasdef:bool', 'atthasmissing:bool', 'attidentity:char', 'attgenerated:char', 'attisdropped:bool',
    'attislocal:bool', 'attinhcount:int4', 'attcollation:oid', 'attacl:text[]', 'attoptions:text[]', 'attfdwoptions:text[]',
    'attmissingval:text[]',
  ],
  (context) => {
    const rows: Row[] = [];
    for (const relation of classRelations(context)) {
      for (const { column, attnum } of attributes(relation)) {
        const length = typeLength(column.type);
        rows.push([
          relation.id, column.name, typeOid(column.type), -1, length, attnum, column.type.name === 'array' ? 1 : 0,
          -1, column.type.typmod, length > 0 && length <= 8, length === 8 ? 'd' : length === 2 ? 's' : length === 1 ? 'c' : 'i',
          length > 0 ? 'p' : 'x', '',
          !column.nullable, column.defaultSql !== undefined, false, attidentity(column), '', false,
          true, 0, collationOf(column.type), null, null, null,
          null,
        ]);
      }
    }
    return rows;
  },
);

/** pg_type.typname of a type (PostgreSQL's internal names; arrays are `_element`). */
function typname(name: Exclude<TypeName, 'array'>): string {
  return name;
}

const CSTRING_OID = 2275;
const CSTRING_ARRAY_OID = 1263;

const pgType = pg(
  1247,
  'pg_type',
  [
    'oid:oid', 'typname:name', 'typnamespace:oid', 'typowner:oid', 'typlen:int2', 'typbyval:bool', 'typtype:char',
    'typcategory:char', 'typispreferred:bool', 'typisdefined:bool', 'typdelim:char', 'typrelid:oid', 'typsubscript:oid',
    'typelem:oid', 'typarray:oid', 'typinput:regproc', 'typoutput:regproc', 'typreceive:regproc', 'typsend:regproc', 'typmodin:regproc',
    'typmodout:regproc', 'typanalyze:regproc', 'typalign:char', 'typstorage:char', 'typnotnull:bool', 'typbasetype:oid',
    'typtypmod:int4', 'typndims:int4', 'typcollation:oid', 'typdefault:text', 'typacl:text[]',
  ],
  () => {
    const rows: Row[] = [];
    const preferred = new Set(['bool', 'float8', 'text', 'timestamptz', 'oid', 'interval']);
    for (const name of Object.keys(TYPES) as Exclude<TypeName, 'array'>[]) {
      const info = TYPES[name];
      const pseudo = name === 'unknown' || name === 'void' || name === 'record';
      const align = info.length === 8 ? 'd' : info.length === 2 ? 's' : info.length === 1 ? 'c' : 'i';
      const collation = textTypes.has(name) ? DEFAULT_COLLATION_OID : name === 'name' ? 950 : 0;
      const io = TYPE_IO[info.oid] ?? [0, 0, 0, 0, 0, 0, 0];
      rows.push([
        info.oid, typname(name), 11, OWNER_OID, info.length, info.length > 0 && info.length <= 8, pseudo ? 'p' : 'b',
        info.category, preferred.has(name), true, ',', 0, 0,
        0, info.arrayOid, io[0], io[1], io[2], io[3], io[4],
        io[5], io[6], align, info.length > 0 ? 'p' : 'x', false, 0,
        -1, 0, collation, null, null,
      ]);
      if (info.arrayOid !== 0) {
        rows.push([
          info.arrayOid, `_${typname(name)}`, 11, OWNER_OID, -1, false, pseudo ? 'p' : 'b',
          pseudo ? 'P' : 'A', false, true, ',', 0, 0,
          info.oid, 0, ARRAY_TYPE_IO[0], ARRAY_TYPE_IO[1], ARRAY_TYPE_IO[2], ARRAY_TYPE_IO[3], io[4],
          io[5], ARRAY_TYPE_IO[6], align === 'd' ? 'd' : 'i', 'x', false, 0,
          -1, 0, collation, null, null,
        ]);
      }
    }
    // int2vector and oidvector (pg_index.indkey, pg_proc.proargtypes): arrays of int2 / oid under
    // their own OIDs, so a driver's type introspection (asyncpg's) finds their element.
    for (const [oid, name, element, arrayOid] of [[VECTOR_OIDS.int2vector, 'int2vector', TYPES.int2.oid, 1006], [VECTOR_OIDS.oidvector, 'oidvector', TYPES.oid.oid, 1013]] as const) {
      const io = TYPE_IO[oid]!;
      rows.push([
        oid, name, 11, OWNER_OID, -1, false, 'b',
        'A', false, true, ',', 0, 0,
        element, arrayOid, io[0], io[1], io[2], io[3], io[4],
        io[5], io[6], 'i', 'p', false, 0,
        -1, 0, 0, null, null,
      ]);
    }
    for (const pseudo of PSEUDO_TYPES) {
      rows.push([
        pseudo.oid, pseudo.name, 11, OWNER_OID, pseudo.name === 'internal' ? 8 : 4, true, 'p',
        'P', false, true, ',', 0, 0,
        0, pseudo.oid === CSTRING_OID ? CSTRING_ARRAY_OID : 0, 0, 0, 0, 0, 0,
        0, 0, pseudo.name === 'internal' ? 'd' : 'i', 'p', false, 0,
        -1, 0, 0, null, null,
      ]);
    }
    // cstring[]: the typmodin functions' argument (sql/functions/type-io.ts), so every pg_proc
    // argument type is a pg_type row (sqlsmith asserts it).
    rows.push([
      CSTRING_ARRAY_OID, '_cstring', 11, OWNER_OID, -1, false, 'b',
      'A', false, true, ',', 0, 0,
      CSTRING_OID, 0, ARRAY_TYPE_IO[0], ARRAY_TYPE_IO[1], ARRAY_TYPE_IO[2], ARRAY_TYPE_IO[3], 0,
      0, ARRAY_TYPE_IO[6], 'i', 'x', false, 0,
      -1, 0, 0, null, null,
    ]);
    return rows;
  },
);

const pgDatabase = pg(
  1262,
  'pg_database',
  [
    'oid:oid', 'datname:name', 'datdba:oid', 'encoding:int4', 'datlocprovider:char', 'datistemplate:bool', 'datallowconn:bool',
    'datconnlimit:int4', 'dattablespace:oid', 'datcollate:text', 'datctype:text', 'daticulocale:text', 'datcollversion:text',
    'datacl:text[]', 'datfrozenxid:oid', 'datminmxid:oid',
  ],
  (context) => [[DATABASE_OID, context.database, OWNER_OID, 6, 'c', false, true, -1, 1663, 'C', 'C', null, null, null, 0, 0]],
);

function indexRelations(context: SystemContext): RelationDef[] {
  return context.catalog.relations().filter((relation) => relation.kind === 'index' && relation.indexOn !== undefined);
}

function indexKey(context: SystemContext, index: RelationDef): number[] {
  const table = context.catalog.relationById(index.indexOn!.relationId);
  if (table === undefined) return [];
  const numbers = attributes(table);
  return index.indexOn!.columns.map((columnIndex) => numbers.find((attribute) => attribute.index === columnIndex)?.attnum ?? 0);
}

const pgIndex = pg(
  2610,
  'pg_index',
  [
    'indexrelid:oid', 'indrelid:oid', 'indnatts:int2', 'indnkeyatts:int2', 'indisunique:bool', 'indnullsnotdistinct:bool',
    'indisprimary:bool', 'indisexclusion:bool', 'indimmediate:bool', 'indisclustered:bool', 'indisvalid:bool',
    'indcheckxmin:bool', 'indisready:bool', 'indislive:bool', 'indisreplident:bool', 'indkey:int2vector', 'indcollation:oidvector',
    'indclass:oidvector', 'indoption:int2vector', 'indexprs:text', 'indpred:text',
  ],
  (context) =>
    indexRelations(context).map((index) => {
      const key = indexKey(context, index);
      return [
        index.id, index.indexOn!.relationId, key.length, key.length, index.indexOn!.unique === true, false,
        index.indexOn!.primary === true, false, true, false, true,
        false, true, true, false, array(key), array(key.map(() => 0)),
        array(indexOpclasses(context, index)), array(key.map(() => 0)), null, null,
      ];
    }),
);

const pgConstraint = pg(
  2606,
  'pg_constraint',
  [
    'oid:oid', 'conname:name', 'connamespace:oid', 'contype:char', 'condeferrable:bool', 'condeferred:bool', 'convalidated:bool',
    'conrelid:oid', 'contypid:oid', 'conindid:oid', 'conparentid:oid', 'confrelid:oid', 'confupdtype:char', 'confdeltype:char',
    'confmatchtype:char', 'conislocal:bool', 'coninhcount:int4', 'connoinherit:bool', 'conkey:int2[]', 'confkey:int2[]',
    'conbin:text',
  ],
  (context) => [
    ...indexRelations(context)
      .filter((index) => index.indexOn!.primary === true)
      .map((index) => [
        index.id + CONSTRAINT_OID_OFFSET, index.name, schemaOid(context, index.schema), 'p', false, false, true,
        index.indexOn!.relationId, 0, index.id, 0, 0, ' ', ' ',
        ' ', true, 0, true, array(indexKey(context, index)), null,
        null,
      ]),
    ...context.catalog.relations().flatMap((table) =>
      (table.checks ?? []).map((check, position): Row => [
        CHECK_OID_OFFSET + table.id * CHECKS_PER_TABLE + position, check.name, schemaOid(context, table.schema), 'c', false, false, true,
        table.id, 0, 0, 0, 0, ' ', ' ',
        ' ', true, 0, false, null, null,
        check.sql,
      ]),
    ),
    // UNIQUE and FOREIGN KEY constraints (sequence-catalog.ts).
    ...constraintRows(context),
  ],
);

const pgAttrdef = pg(2604, 'pg_attrdef', ['oid:oid', 'adrelid:oid', 'adnum:int2', 'adbin:text'], (context) => {
  const rows: Row[] = [];
  for (const relation of context.catalog.relations()) {
    if (relation.kind !== 'table') continue;
    for (const { column, attnum } of attributes(relation)) {
      const text = defaultDisplayText(column);
      if (text !== undefined) rows.push([ATTRDEF_OID_OFFSET + relation.id * 64 + attnum, relation.id, attnum, text]);
    }
  }
  return rows;
});

const pgDescription = pg(2609, 'pg_description', ['objoid:oid', 'classoid:oid', 'objsubid:int4', 'description:text'], (context) => {
  const rows: Row[] = [];
  for (const schema of context.catalog.schemas()) {
    if (schema.comment !== undefined) rows.push([schema.id, PG_NAMESPACE_OID, 0, schema.comment]);
  }
  for (const relation of context.catalog.relations()) {
    if (relation.comment !== undefined) rows.push([relation.id, PG_CLASS_OID, 0, relation.comment]);
    for (const { column, attnum } of attributes(relation)) {
      if (column.comment !== undefined) rows.push([relation.id, PG_CLASS_OID, attnum, column.comment]);
    }
  }
  return rows;
});

const pgProc = pg(
  1255,
  'pg_proc',
  [
    'oid:oid', 'proname:name', 'pronamespace:oid', 'proowner:oid', 'prolang:oid', 'procost:float4', 'prorows:float4',
    'provariadic:oid', 'prosupport:regproc', 'prokind:char', 'prosecdef:bool', 'proleakproof:bool', 'proisstrict:bool',
    'proretset:bool', 'provolatile:char', 'proparallel:char', 'pronargs:int2', 'pronargdefaults:int2', 'prorettype:oid',
    'proargtypes:oidvector', 'proallargtypes:oid[]', 'proargmodes:char[]', 'proargnames:text[]', 'proargdefaults:text',
    'protrftypes:oid[]', 'prosrc:text', 'probin:text', 'prosqlbody:text', 'proconfig:text[]', 'proacl:text[]',
  ],
  // No argument defaults, transforms, SQL-standard bodies kept as trees or per-function settings: null.
  (context) => [...procRows(), ...sqlFunctionProcRows(context)].map((row) => [...row.slice(0, 23), null, null, row[23]!, row[24]!, null, null, row[25]!]),
);

/** pg_proc rows of the catalog's SQL functions (prolang 14, sql; prosrc the AS text, '' for a RETURN body). */
function sqlFunctionProcRows(context: SystemContext): Row[] {
  return context.catalog.functions().map((fn): Row => [
    fn.id, fn.name, context.catalog.schema(fn.schema)?.id ?? 0, ownerOf(fn), 14, 100, 0,
    0, 0, 'f', false, false, fn.strict,
    false, fn.volatility === 'immutable' ? 'i' : fn.volatility === 'stable' ? 's' : 'v', 'u', fn.argumentTypes.length, 0, typeOid(fn.returnType),
    array(fn.argumentTypes.map(typeOid)), null, null, fn.argumentNames.some((name) => name !== '') ? array([...fn.argumentNames]) : null, fn.source, null,
    null,
  ]);
}

let procRowsCache: Row[] | undefined;

/** pg_proc: the scalar library (sql/functions) and the aggregates the binder accepts (prokind 'a'). */
function procRows(): Row[] {
  if (procRowsCache !== undefined) return procRowsCache;
  const rows: Row[] = [];
  for (const fn of functions.allFunctions()) {
    const signature = procSignature(fn);
    rows.push([
      signature.oid, fn.name, 11, OWNER_OID, 12, 1, 0,
      signature.variadic, 0, 'f', false, false, fn.strict,
      false, fn.volatility === 'immutable' ? 'i' : fn.volatility === 'stable' ? 's' : 'v', 's', signature.args.length, 0, signature.returns,
      array([...signature.args]), null, null, null, fn.name, null,
      null,
    ]);
  }
  for (const signature of sessionProcSignatures()) {
    rows.push([
      signature.oid, signature.name, 11, OWNER_OID, 12, 1, 0,
      0, 0, 'f', false, false, signature.strict,
      false, signature.volatility, 's', signature.args.length, 0, signature.returns,
      array([...signature.args]), null, null, null, signature.name, null,
      null,
    ]);
  }
  // The type I/O functions pg_type names (catalog entries only; see sql/functions/type-io.ts).
  for (const [oid, name, args, returns] of functions.TYPE_IO_FUNCTIONS) {
    rows.push([
      oid, name, 11, OWNER_OID, 12, 1, 0,
      0, 0, 'f', false, false, true,
      false, name.endsWith('in') || name.endsWith('_in') || name.endsWith('recv') ? 's' : 'i', 's', args.length, 0, returns,
      array([...args]), null, null, null, name, null,
      null,
    ]);
  }
  for (const aggregate of aggregateSignatures()) {
    rows.push([
      aggregate.oid, aggregate.name, 11, OWNER_OID, 12, 1, 0,
      0, 0, 'a', false, false, false,
      false, 'i', 's', aggregate.args.length, 0, aggregate.returns,
      array([...aggregate.args]), null, null, null, 'aggregate_dummy', null,
      null,
    ]);
  }
  procRowsCache = rows;
  return rows;
}
/**
 * pg_aggregate: one row per aggregate signature in pg_proc (prokind 'a'). The transition, final
 * and combine functions are internal to the executor (no pg_proc rows), so they read 0, as does
 * aggsortop (oxbow plans min/max without an index).
 */
const pgAggregate = pg(
  2600,
  'pg_aggregate',
  [
    'aggfnoid:regproc', 'aggkind:char', 'aggnumdirectargs:int2', 'aggtransfn:regproc', 'aggfinalfn:regproc', 'aggcombinefn:regproc',
    'aggserialfn:regproc', 'aggdeserialfn:regproc', 'aggmtransfn:regproc', 'aggminvtransfn:regproc', 'aggmfinalfn:regproc',
    'aggfinalextra:bool', 'aggmfinalextra:bool', 'aggfinalmodify:char', 'aggmfinalmodify:char', 'aggsortop:oid', 'aggtranstype:oid',
    'aggtransspace:int4', 'aggmtranstype:oid', 'aggmtransspace:int4', 'agginitval:text', 'aggminitval:text',
  ],
  () =>
    aggregateSignatures().map((aggregate) => [
      aggregate.oid, 'n', 0, 0, 0, 0,
      0, 0, 0, 0, 0,
      false, false, 'r', 'r', 0, 0,
      0, 0, 0, null, null,
    ]),
);

const OPERATOR_OID_OFFSET = 0x50000000;

/** pg_operator from the operator library (sql/functions.ts allOperators()). */
const pgOperator = pg(
  2617,
  'pg_operator',
  [
    'oid:oid', 'oprname:name', 'oprnamespace:oid', 'oprowner:oid', 'oprkind:char', 'oprcanmerge:bool', 'oprcanhash:bool',
    'oprleft:oid', 'oprright:oid', 'oprresult:oid', 'oprcom:oid', 'oprnegate:oid', 'oprcode:oid', 'oprrest:oid', 'oprjoin:oid',
  ],
  () => {
    const all = typeof functions.allOperators === 'function' ? functions.allOperators() : [];
    // The library knows each operator's implementing function (its pg_proc OID, oprcode); the
    // operators themselves get oxbow's own OIDs, stable for one build.
    return all.map((operator, position) => {
      const binary = operator.argumentTypes.length === 2;
      return [
        OPERATOR_OID_OFFSET + position, operator.name, 11, OWNER_OID, binary ? 'b' : 'l', false, false,
        binary ? typeOid(operator.argumentTypes[0]!) : 0, typeOid(operator.argumentTypes[binary ? 1 : 0]!), typeOid(operator.returnType), 0, 0,
        operator.oid, 0, 0,
      ];
    });
  },
);

const pgSettings = pg(
  12003,
  'pg_settings',
  [
    'name:text', 'setting:text', 'unit:text', 'category:text', 'short_desc:text', 'extra_desc:text', 'context:text',
    'vartype:text', 'source:text', 'min_val:text', 'max_val:text', 'enumvals:text[]', 'boot_val:text', 'reset_val:text',
    'sourcefile:text', 'sourceline:int4', 'pending_restart:bool',
  ],
  (context) =>
    context.settings.all().map(({ definition, value }) => [
      definition.name, value, definition.unit ?? null, definition.category, definition.description, null,
      definition.readOnly === true ? 'internal' : 'user', definition.vartype,
      context.settings.source(definition), null, null,
      definition.enumValues === undefined ? null : array([...definition.enumValues]), definition.defaultValue, context.settings.resetValue(definition.name)!,
      null, null, false,
    ]),
);

const roleColumns = [
  'rolname:name', 'rolsuper:bool', 'rolinherit:bool', 'rolcreaterole:bool', 'rolcreatedb:bool', 'rolcanlogin:bool',
  'rolreplication:bool', 'rolconnlimit:int4', 'rolpassword:text', 'rolvaliduntil:timestamptz', 'rolbypassrls:bool',
  'rolconfig:text[]', 'oid:oid',
];

const pgRoles = pg(12001, 'pg_roles', roleColumns, (context) =>
  context.catalog.roles().map((role) => {
    return [role.name, role.superuser, role.inherit, role.createRole, role.createDb, role.login, role.replication === true, -1, '********', null, role.bypassRls === true, null, role.id];
  }),
);

/** pg_authid: the roles with their stored verifiers; readable by superusers only (its ACL names no PUBLIC). */
const pgAuthid: SystemTable = withTableoid({
  def: {
    ...systemRelation(1260, 'pg_catalog', 'pg_authid', [
      'oid:oid', 'rolname:name', 'rolsuper:bool', 'rolinherit:bool', 'rolcreaterole:bool', 'rolcreatedb:bool', 'rolcanlogin:bool',
      'rolreplication:bool', 'rolbypassrls:bool', 'rolconnlimit:int4', 'rolpassword:text', 'rolvaliduntil:timestamptz',
    ]),
    acl: [{ grantee: OWNER_OID, grantor: OWNER_OID, privileges: 'arwdDxt' }],
  },
  rows: (context) =>
    context.catalog.roles().map((role) => {
      return [role.id, role.name, role.superuser, role.inherit, role.createRole, role.createDb, role.login, role.replication === true, role.bypassRls === true, -1, role.password ?? null, null];
    }),
});

const pgUser = pg(
  12002,
  'pg_user',
  ['usename:name', 'usesysid:oid', 'usecreatedb:bool', 'usesuper:bool', 'userepl:bool', 'usebypassrls:bool', 'passwd:text', 'valuntil:timestamptz', 'useconfig:text[]'],
  (context) =>
    context.catalog
      .roles()
      .filter((role) => role.login)
      .map((role) => [role.name, role.id, role.createDb, role.superuser, role.replication === true, role.bypassRls === true, '********', null, null]),
);

/** pg_auth_members: one row per membership (PostgreSQL 15 has no oid column; a synthetic one here for newer clients). */
const pgAuthMembers = pg(1261, 'pg_auth_members', ['oid:oid', 'roleid:oid', 'member:oid', 'grantor:oid', 'admin_option:bool'], (context) =>
  context.catalog.roles().flatMap((member) => member.memberOf.map((membership) => [0, membership.roleId, member.id, membership.grantor, false])).map((row, index) => [AUTH_MEMBERS_OID_OFFSET + index, ...row.slice(1)]),
);

const AUTH_MEMBERS_OID_OFFSET = 14000;

function userRelations(context: SystemContext, kind: RelationDef['kind']): RelationDef[] {
  return context.catalog.relations().filter((relation) => relation.kind === kind);
}

const pgTables = pg(
  12004,
  'pg_tables',
  ['schemaname:name', 'tablename:name', 'tableowner:name', 'tablespace:name', 'hasindexes:bool', 'hasrules:bool', 'hastriggers:bool', 'rowsecurity:bool'],
  (context) =>
    [...userRelations(context, 'table'), ...userRelations(context, 'system').filter((relation) => relkind(relation) === 'r')].map((relation) => [
      relation.schema, relation.name, roleName(context, ownerOf(relation)), null, hasIndexes(context, relation), false, false, false,
    ]),
);

const pgViews = pg(12005, 'pg_views', ['schemaname:name', 'viewname:name', 'viewowner:name', 'definition:text'], (context) =>
  userRelations(context, 'view').map((relation) => [relation.schema, relation.name, roleName(context, ownerOf(relation)), relation.definition ?? null]),
);

const pgMatviews = pg(
  12006,
  'pg_matviews',
  ['schemaname:name', 'matviewname:name', 'matviewowner:name', 'tablespace:name', 'hasindexes:bool', 'ispopulated:bool', 'definition:text'],
  (context) =>
    userRelations(context, 'materialized_view').map((relation) => [
      relation.schema, relation.name, roleName(context, ownerOf(relation)), null, hasIndexes(context, relation), true, relation.definition ?? null,
    ]),
);

const pgAm = pg(2601, 'pg_am', ['oid:oid', 'amname:name', 'amhandler:oid', 'amtype:char'], () => [
  [HEAP_AM_OID, 'heap', 3, 't'],
  [BTREE_AM_OID, 'btree', 330, 'i'],
]);

const pgCollation = pg(
  3456,
  'pg_collation',
  ['oid:oid', 'collname:name', 'collnamespace:oid', 'collowner:oid', 'collprovider:char', 'collisdeterministic:bool', 'collencoding:int4', 'collcollate:text', 'collctype:text'],
  () => [
    [DEFAULT_COLLATION_OID, 'default', 11, OWNER_OID, 'd', true, -1, null, null],
    [950, 'C', 11, OWNER_OID, 'c', true, -1, 'C', 'C'],
    [951, 'POSIX', 11, OWNER_OID, 'c', true, -1, 'POSIX', 'POSIX'],
  ],
);

// ---- What pg_dump reads ----

/**
 * oxbow_catalog's relations are listed in pg_class (psql describes them) but are no user's objects:
 * they belong to the built-in extension "oxbow" (an OID below 16384, as plpgsql's), so pg_dump
 * leaves them out as it leaves out what CREATE EXTENSION made.
 */
const OXBOW_EXTENSION_OID = 13010;
const PG_EXTENSION_OID = 3079;
const PG_REWRITE_OID = 2618;
const PG_FOREIGN_SERVER_OID = 1417;
/** pg_rewrite OIDs: a view's or materialized view's `_RETURN` rule is this plus its relation's id. */
const REWRITE_OID_OFFSET = 0x50000000;

const pgExtension = pg(
  PG_EXTENSION_OID,
  'pg_extension',
  ['oid:oid', 'extname:name', 'extowner:oid', 'extnamespace:oid', 'extrelocatable:bool', 'extversion:text', 'extconfig:oid[]', 'extcondition:text[]'],
  (context) => [[OXBOW_EXTENSION_OID, 'oxbow', OWNER_OID, schemaOid(context, 'oxbow_catalog'), false, '1.0', null, null]],
);

function isViewLike(relation: RelationDef): boolean {
  return relation.kind === 'view' || relation.kind === 'materialized_view';
}

/** One `_RETURN` rule per view and materialized view, as PostgreSQL keeps their queries. */
const pgRewrite = pg(
  PG_REWRITE_OID,
  'pg_rewrite',
  ['oid:oid', 'rulename:name', 'ev_class:oid', 'ev_type:char', 'ev_enabled:char', 'is_instead:bool', 'ev_qual:text', 'ev_action:text'],
  (context) =>
    classRelations(context)
      .filter(isViewLike)
      .map((view) => [REWRITE_OID_OFFSET + view.id, '_RETURN', view.id, '1', 'O', true, null, null]),
);

/**
 * pg_depend as pg_dump orders a restore by it: a view's rule depends on the relations its query
 * reads ('n') and on its view ('i'), an index on its table ('a'), an owned sequence on its column
 * ('a', an identity's 'i'), a UNIQUE constraint's index on its constraint ('i'). oxbow_catalog and its relations,
 * the connectors' foreign servers and the sources belong to the extension "oxbow" ('e'): pg_dump
 * does not dump them (a source's connector state is not data a dump can carry).
 */
const pgDepend = pg(
  2608,
  'pg_depend',
  ['classid:oid', 'objid:oid', 'objsubid:int4', 'refclassid:oid', 'refobjid:oid', 'refobjsubid:int4', 'deptype:char'],
  (context) => {
    // Owned sequences and the indexes of UNIQUE constraints (which depend on their constraint).
    const rows: Row[] = pgDependRows(context);
    const constraintIndexes = new Set(context.catalog.relations().flatMap((table) => (table.constraints ?? []).flatMap((constraint) => (constraint.indexId === undefined ? [] : [constraint.indexId]))));
    const oxbowCatalog = schemaOid(context, 'oxbow_catalog');
    if (oxbowCatalog !== 0) rows.push([PG_NAMESPACE_OID, oxbowCatalog, 0, PG_EXTENSION_OID, OXBOW_EXTENSION_OID, 0, 'e']);
    for (const server of Object.values(CONNECTOR_SERVERS)) rows.push([PG_FOREIGN_SERVER_OID, server, 0, PG_EXTENSION_OID, OXBOW_EXTENSION_OID, 0, 'e']);
    for (const relation of classRelations(context)) {
      if (relation.schema === 'oxbow_catalog' || relation.kind === 'source') {
        rows.push([PG_CLASS_OID, relation.id, 0, PG_EXTENSION_OID, OXBOW_EXTENSION_OID, 0, 'e']);
      } else if (isViewLike(relation)) {
        const rule = REWRITE_OID_OFFSET + relation.id;
        rows.push([PG_REWRITE_OID, rule, 0, PG_CLASS_OID, relation.id, 0, 'i']);
        for (const read of new Set(relation.dependsOn)) {
          if (read !== relation.id && context.catalog.relationById(read) !== undefined) rows.push([PG_REWRITE_OID, rule, 0, PG_CLASS_OID, read, 0, 'n']);
        }
      } else if (relation.indexOn !== undefined && !constraintIndexes.has(relation.id)) {
        rows.push([PG_CLASS_OID, relation.id, 0, PG_CLASS_OID, relation.indexOn.relationId, 0, 'a']);
      }
    }
    return rows;
  },
);

/** Catalogs pg_dump and pg_dumpall read that hold nothing in oxbow (no parameter ACLs, casts, text search, large objects ...). */
const pgDumpCatalogs: SystemTable[] = [
  pg(3394, 'pg_init_privs', ['objoid:oid', 'classoid:oid', 'objsubid:int4', 'privtype:char', 'initprivs:text[]'], empty),
  pg(2753, 'pg_opfamily', ['oid:oid', 'opfmethod:oid', 'opfname:name', 'opfnamespace:oid', 'opfowner:oid'], empty),
  pg(2602, 'pg_amop', ['oid:oid', 'amopfamily:oid', 'amoplefttype:oid', 'amoprighttype:oid', 'amopstrategy:int2', 'amoppurpose:char', 'amopopr:oid', 'amopmethod:oid', 'amopsortfamily:oid'], empty),
  pg(2603, 'pg_amproc', ['oid:oid', 'amprocfamily:oid', 'amproclefttype:oid', 'amprocrighttype:oid', 'amprocnum:int2', 'amproc:regproc'], empty),
  pg(3601, 'pg_ts_parser', ['oid:oid', 'prsname:name', 'prsnamespace:oid', 'prsstart:regproc', 'prstoken:regproc', 'prsend:regproc', 'prsheadline:regproc', 'prslextype:regproc'], empty),
  pg(3764, 'pg_ts_template', ['oid:oid', 'tmplname:name', 'tmplnamespace:oid', 'tmplinit:regproc', 'tmpllexize:regproc'], empty),
  pg(3600, 'pg_ts_dict', ['oid:oid', 'dictname:name', 'dictnamespace:oid', 'dictowner:oid', 'dicttemplate:oid', 'dictinitoption:text'], empty),
  pg(3602, 'pg_ts_config', ['oid:oid', 'cfgname:name', 'cfgnamespace:oid', 'cfgowner:oid', 'cfgparser:oid'], empty),
  pg(2328, 'pg_foreign_data_wrapper', ['oid:oid', 'fdwname:name', 'fdwowner:oid', 'fdwhandler:oid', 'fdwvalidator:oid', 'fdwacl:text[]', 'fdwoptions:text[]'], empty),
  pg(826, 'pg_default_acl', ['oid:oid', 'defaclrole:oid', 'defaclnamespace:oid', 'defaclobjtype:char', 'defaclacl:text[]'], empty),
  pg(2605, 'pg_cast', ['oid:oid', 'castsource:oid', 'casttarget:oid', 'castfunc:oid', 'castcontext:char', 'castmethod:char'], empty),
  pg(3576, 'pg_transform', ['oid:oid', 'trftype:oid', 'trflang:oid', 'trffromsql:regproc', 'trftosql:regproc'], empty),
  pg(3350, 'pg_partitioned_table', ['partrelid:oid', 'partstrat:char', 'partnatts:int2', 'partdefid:oid', 'partattrs:int2vector', 'partclass:oidvector', 'partcollation:oidvector', 'partexprs:text'], empty),
  pg(6100, 'pg_subscription', ['oid:oid', 'subdbid:oid', 'subskiplsn:text', 'subname:name', 'subowner:oid', 'subenabled:bool', 'subbinary:bool', 'substream:bool', 'subtwophasestate:char', 'subdisableonerr:bool', 'subconninfo:text', 'subslotname:name', 'subsynccommit:text', 'subpublications:text[]'], empty),
  pg(2995, 'pg_largeobject_metadata', ['oid:oid', 'lomowner:oid', 'lomacl:text[]'], empty),
  pg(3596, 'pg_seclabel', ['objoid:oid', 'classoid:oid', 'objsubid:int4', 'provider:text', 'label:text'], empty),
  pg(3592, 'pg_shseclabel', ['objoid:oid', 'classoid:oid', 'provider:text', 'label:text'], empty),
  pg(6243, 'pg_parameter_acl', ['oid:oid', 'parname:text', 'paracl:text[]'], empty),
  pg(12010, 'pg_seclabels', ['objoid:oid', 'classoid:oid', 'objsubid:int4', 'objtype:text', 'objnamespace:oid', 'objname:text', 'provider:text', 'label:text'], empty),
];

const pgTablespace = pg(1213, 'pg_tablespace', ['oid:oid', 'spcname:name', 'spcowner:oid', 'spcacl:text[]', 'spcoptions:text[]'], () => [
  [1663, 'pg_default', OWNER_OID, null, null],
  [1664, 'pg_global', OWNER_OID, null, null],
]);

// ---- operator classes (client drivers' index reflection: SQLAlchemy joins pg_opclass on
// pg_index.indclass) ----

/** PostgreSQL 15's default btree operator classes of oxbow's types: oid, name, input type, family. */
const BTREE_OPCLASSES: readonly (readonly [number, string, Exclude<TypeName, 'array'>, number])[] = [
  [1978, 'int4_ops', 'int4', 1976],
  [1979, 'int2_ops', 'int2', 1976],
  [1981, 'oid_ops', 'oid', 1989],
  [3122, 'date_ops', 'date', 434],
  [3123, 'float8_ops', 'float8', 1970],
  [3124, 'int8_ops', 'int8', 1976],
  [3125, 'numeric_ops', 'numeric', 1988],
  [3126, 'text_ops', 'text', 1994],
  [3127, 'timestamptz_ops', 'timestamptz', 434],
  [3128, 'timestamp_ops', 'timestamp', 434],
  [10003, 'bool_ops', 'bool', 424],
  [10004, 'bpchar_ops', 'bpchar', 426],
  [10006, 'bytea_ops', 'bytea', 428],
  [10007, 'char_ops', 'char', 429],
  [10012, 'float4_ops', 'float4', 1970],
  [10022, 'interval_ops', 'interval', 1982],
  [10028, 'name_ops', 'name', 1994],
  [10038, 'time_ops', 'time', 1996],
  [10065, 'uuid_ops', 'uuid', 2968],
  [10088, 'jsonb_ops', 'jsonb', 4033],
];
/** array_ops: the default for every array type. */
const ARRAY_OPCLASS = 10000;

/** The default btree operator class of a column type (varchar's is text_ops, as in PostgreSQL); 0 when there is none. */
function defaultOpclass(columnType: DataType): number {
  if (columnType.name === 'array') return ARRAY_OPCLASS;
  const name = columnType.name === 'varchar' ? 'text' : columnType.name;
  return BTREE_OPCLASSES.find((opclass) => opclass.at(2) === name)?.[0] ?? 0;
}

function indexOpclasses(context: SystemContext, index: RelationDef): number[] {
  const table = context.catalog.relationById(index.indexOn!.relationId);
  if (table === undefined) return [];
  return index.indexOn!.columns.map((columnIndex) => defaultOpclass(table.columns[columnIndex]!.type));
}

const pgOpclass = pg(
  2616,
  'pg_opclass',
  ['oid:oid', 'opcmethod:oid', 'opcname:name', 'opcnamespace:oid', 'opcowner:oid', 'opcfamily:oid', 'opcintype:oid', 'opcdefault:bool', 'opckeytype:oid'],
  () => [
    ...BTREE_OPCLASSES.map(([oid, name, typeName, family]) => [oid, BTREE_AM_OID, name, 11, OWNER_OID, family, TYPES[typeName].oid, true, name === 'name_ops' ? 2275 : 0]),
    [ARRAY_OPCLASS, BTREE_AM_OID, 'array_ops', 11, OWNER_OID, 397, 2277, true, 0],
  ],
);

export const pgCatalogTables: readonly SystemTable[] = [
  pgOpclass,
  pgClass,
  pgNamespace,
  pgAttribute,
  pgType,
  pgDatabase,
  pgIndex,
  pgConstraint,
  pgAttrdef,
  pgDescription,
  pgProc,
  pgAggregate,
  pgOperator,
  pgSettings,
  pgRoles,
  pgUser,
  pgAuthid,
  pgAuthMembers,
  pgTables,
  pgViews,
  pgMatviews,
  pgAm,
  pgCollation,
  pgTablespace,
  pg(2611, 'pg_inherits', ['inhrelid:oid', 'inhparent:oid', 'inhseqno:int4', 'inhdetachpending:bool'], empty),
  pg(3256, 'pg_policy', ['oid:oid', 'polname:name', 'polrelid:oid', 'polcmd:char', 'polpermissive:bool', 'polroles:oid[]', 'polqual:text', 'polwithcheck:text'], empty),
  pg(2620, 'pg_trigger', ['oid:oid', 'tgrelid:oid', 'tgparentid:oid', 'tgname:name', 'tgfoid:oid', 'tgtype:int2', 'tgenabled:char', 'tgisinternal:bool', 'tgconstrrelid:oid', 'tgconstrindid:oid', 'tgconstraint:oid', 'tgdeferrable:bool', 'tginitdeferred:bool', 'tgnargs:int2', 'tgattr:int2vector', 'tgargs:bytea', 'tgqual:text', 'tgoldtable:name', 'tgnewtable:name'], empty),
  pg(3381, 'pg_statistic_ext', ['oid:oid', 'stxrelid:oid', 'stxname:name', 'stxnamespace:oid', 'stxowner:oid', 'stxstattarget:int4', 'stxkeys:int2[]', 'stxkind:char[]', 'stxexprs:text'], empty),
  pg(6104, 'pg_publication', ['oid:oid', 'pubname:name', 'pubowner:oid', 'puballtables:bool', 'pubinsert:bool', 'pubupdate:bool', 'pubdelete:bool', 'pubtruncate:bool', 'pubviaroot:bool'], empty),
  pg(6237, 'pg_publication_namespace', ['oid:oid', 'pnpubid:oid', 'pnnspid:oid'], empty),
  pg(6106, 'pg_publication_rel', ['oid:oid', 'prpubid:oid', 'prrelid:oid', 'prqual:text', 'prattrs:int2[]'], empty),
  // Sources are foreign tables to psql (relkind 'f'): one row each, its server the connector's, its
  // options the WITH options plus FORMAT and ENCODE (psql's \d NAME prints them).
  pg(3118, 'pg_foreign_table', ['ftrelid:oid', 'ftserver:oid', 'ftoptions:text[]'], (context) =>
    userRelations(context, 'source').map((source) => [
      source.id,
      connectorServerOid(source.options?.['connector'] ?? ''),
      array([
        ...Object.entries(source.options ?? {}).map(([name, value]) => `${name}=${value}`),
        ...(source.format === undefined ? [] : [`format=${source.format}`]),
        ...(source.encode === undefined ? [] : [`encode=${source.encode}`]),
      ]),
    ]),
  ),
  pg(1417, 'pg_foreign_server', ['oid:oid', 'srvname:name', 'srvowner:oid', 'srvfdw:oid', 'srvtype:text', 'srvversion:text', 'srvacl:text[]', 'srvoptions:text[]'], () =>
    Object.entries(CONNECTOR_SERVERS).map(([name, oid]) => [oid, name, OWNER_OID, 0, null, null, null, null]),
  ),
  pgExtension,
  pg(3501, 'pg_enum', ['oid:oid', 'enumtypid:oid', 'enumsortorder:float4', 'enumlabel:name'], empty),
  pg(3541, 'pg_range', ['rngtypid:oid', 'rngsubtype:oid', 'rngmultitypid:oid', 'rngcollation:oid', 'rngsubopc:oid', 'rngcanonical:oid', 'rngsubdiff:oid'], empty),
  pgDepend,
  pg(2396, 'pg_shdescription', ['objoid:oid', 'classoid:oid', 'description:text'], empty),
  pgRewrite,
  pg(2964, 'pg_db_role_setting', ['setdatabase:oid', 'setrole:oid', 'setconfig:text[]'], empty),
  pg(3466, 'pg_event_trigger', ['oid:oid', 'evtname:name', 'evtevent:name', 'evtowner:oid', 'evtfoid:oid', 'evtenabled:char', 'evttags:text[]'], empty),
  // UTF8 only: no encoding conversions.
  pg(2607, 'pg_conversion', ['oid:oid', 'conname:name', 'connamespace:oid', 'conowner:oid', 'conforencoding:int4', 'contoencoding:int4', 'conproc:oid', 'condefault:bool'], empty),
  pg(2612, 'pg_language', ['oid:oid', 'lanname:name', 'lanowner:oid', 'lanispl:bool', 'lanpltrusted:bool', 'lanplcallfoid:oid', 'laninline:oid', 'lanvalidator:oid', 'lanacl:text[]'], () => [
    [12, 'internal', OWNER_OID, false, false, 0, 0, 0, null],
    [13, 'c', OWNER_OID, false, false, 0, 0, 0, null],
    [14, 'sql', OWNER_OID, false, true, 0, 0, 0, null],
  ]),
  pg(2224, 'pg_sequence', ['seqrelid:oid', 'seqtypid:oid', 'seqstart:int8', 'seqincrement:int8', 'seqmax:int8', 'seqmin:int8', 'seqcache:int8', 'seqcycle:bool'], pgSequenceRows),
  pgSequencesTable,
  ...pgDumpCatalogs,
];
