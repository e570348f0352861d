// PostgreSQL type names in both directions, for DDL and the catalog: a parsed TypeName (as written
// in CREATE TABLE, with typmods and array bounds) becomes a DataType, and a DataType prints as
// PostgreSQL's format_type() does (`character varying(10)`, `timestamp(3) with time zone`,
// `integer[]`), which is what psql's \d shows.

import type { Node, TypeName as PgTypeName } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { arrayOf, type, typeFromOid, withTypmod, type DataType, type TypeName } from '../../sql/types.js';

/** Names as they appear after PostgreSQL's grammar rewrote the SQL-standard spellings. */
const typeAliases: Readonly<Record<string, Exclude<TypeName, 'array'>>> = {
  bool: 'bool',
  boolean: 'bool',
  int2: 'int2',
  smallint: 'int2',
  int4: 'int4',
  int: 'int4',
  integer: 'int4',
  int8: 'int8',
  bigint: 'int8',
  float4: 'float4',
  real: 'float4',
  float8: 'float8',
  float: 'float8',
  'double precision': 'float8',
  numeric: 'numeric',
  decimal: 'numeric',
  varchar: 'varchar',
  'character varying': 'varchar',
  text: 'text',
  string: 'text',
  bpchar: 'bpchar',
  character: 'bpchar',
  bytea: 'bytea',
  date: 'date',
  time: 'time',
  timestamp: 'timestamp',
  timestamptz: 'timestamptz',
  interval: 'interval',
  jsonb: 'jsonb',
  uuid: 'uuid',
  json: 'json',
  oid: 'oid',
  regclass: 'regclass',
  regproc: 'regproc',
  regtype: 'regtype',
  name: 'name',
  char: 'char',
};

function integerConstant(node: Node, typeName: string, location: number | undefined): number {
  const constant = (node as { A_Const?: { ival?: { ival?: number } } }).A_Const;
  if (constant?.ival !== undefined) return constant.ival.ival ?? 0;
  throw new SqlError(SqlState.syntaxError, `type modifiers for type ${typeName} must be simple constants`, {
    position: location === undefined ? undefined : location + 1,
  });
}

function modifierError(message: string, location: number | undefined): SqlError {
  return new SqlError(SqlState.invalidParameterValue, message, { position: location === undefined ? undefined : location + 1 });
}

/** The typmod PostgreSQL stores for `name(modifiers...)`; -1 without modifiers. */
function typmodFor(name: TypeName, modifiers: readonly number[], location: number | undefined): number {
  if (modifiers.length === 0) return -1;
  switch (name) {
    case 'varchar':
    case 'bpchar': {
      const length = modifiers[0]!;
      const label = name === 'varchar' ? 'varchar' : 'char';
      if (modifiers.length > 1) throw modifierError(`invalid type modifier`, location);
      if (length < 1) throw modifierError(`length for type ${label} must be at least 1`, location);
      if (length > 10485760) throw modifierError(`length for type ${label} cannot exceed 10485760`, location);
      return length + 4;
    }
    case 'numeric': {
      const precision = modifiers[0]!;
      const scale = modifiers[1] ?? 0;
      if (modifiers.length > 2) throw modifierError('invalid NUMERIC type modifier', location);
      if (precision < 1 || precision > 1000) throw modifierError(`NUMERIC precision ${precision} must be between 1 and 1000`, location);
      if (scale < -1000 || scale > 1000) throw modifierError(`NUMERIC scale ${scale} must be between -1000 and 1000`, location);
      return ((precision << 16) | (scale & 0x7ff)) + 4;
    }
    case 'timestamp':
    case 'timestamptz':
    case 'time': {
      const precision = modifiers[0]!;
      if (precision < 0) throw modifierError(`${name.toUpperCase()}(${precision}) precision must not be negative`, location);
      return Math.min(precision, 6);
    }
    case 'interval':
      // PostgreSQL encodes the field range and precision together; oxbow keeps no interval typmod.
      return -1;
    default:
      throw modifierError(`type modifier is not allowed for type "${name}"`, location);
  }
}

/** The DataType of a parsed TypeName; 42704 for an unknown type, with its position. */
export function dataTypeFromTypeName(typeName: PgTypeName): DataType {
  const names = (typeName.names ?? []).map((node) => (node as { String?: { sval?: string } }).String?.sval ?? '');
  const last = names[names.length - 1] ?? '';
  const schema = names.length > 1 ? names[0] : undefined;
  const location = typeName.location;
  if (schema !== undefined && schema !== 'pg_catalog') {
    throw new SqlError(SqlState.undefinedObject, `type "${names.join('.')}" does not exist`, {
      position: location === undefined ? undefined : location + 1,
    });
  }
  let resolved: DataType | undefined;
  const alias = typeAliases[last.toLowerCase()];
  if (alias !== undefined) {
    const modifiers = (typeName.typmods ?? []).map((node) => integerConstant(node, last, location));
    // float(p) is float4 up to 24 bits of precision, else float8 (PostgreSQL's rule).
    if ((last === 'float4' || last === 'float8') && modifiers.length > 0) resolved = type(last);
    else resolved = withTypmod(type(alias), typmodFor(alias, modifiers, location));
  } else if (last === 'serial' || last === 'bigserial' || last === 'smallserial') {
    // serial is a column type only (CREATE TABLE, ADD COLUMN: ddl/sequence.ts), as in PostgreSQL.
    throw new SqlError(SqlState.undefinedObject, `type "${last}" does not exist`, {
      position: location === undefined ? undefined : location + 1,
    });
  }
  if (resolved === undefined) {
    throw new SqlError(SqlState.undefinedObject, `type "${last}" does not exist`, {
      position: location === undefined ? undefined : location + 1,
    });
  }
  if (typeName.arrayBounds !== undefined && typeName.arrayBounds.length > 0) resolved = arrayOf(resolved);
  return resolved;
}

function typmodSuffix(t: DataType): string {
  if (t.typmod < 0) return '';
  switch (t.name) {
    case 'varchar':
    case 'bpchar':
      return `(${t.typmod - 4})`;
    case 'numeric': {
      const packed = t.typmod - 4;
      const precision = (packed >> 16) & 0xffff;
      let scale = packed & 0x7ff;
      if (scale > 1000) scale -= 2048;
      return `(${precision},${scale})`;
    }
    case 'timestamp':
    case 'timestamptz':
    case 'time':
    case 'interval':
      return `(${t.typmod})`;
    default:
      return '';
  }
}

/** PostgreSQL's format_type(type, typmod) text. */
export function formatTypeName(t: DataType): string {
  if (t.vector !== undefined) return t.vector;
  if (t.name === 'array') return `${t.element === undefined ? 'text' : formatTypeName(t.element)}[]`;
  const suffix = typmodSuffix(t);
  switch (t.name) {
    case 'bool':
      return 'boolean';
    case 'int2':
      return 'smallint';
    case 'int4':
      return 'integer';
    case 'int8':
      return 'bigint';
    case 'float4':
      return 'real';
    case 'float8':
      return 'double precision';
    case 'varchar':
      return `character varying${suffix}`;
    case 'bpchar':
      return suffix === '' ? 'bpchar' : `character${suffix}`;
    case 'time':
      return `time${suffix} without time zone`;
    case 'timestamp':
      return `timestamp${suffix} without time zone`;
    case 'timestamptz':
      return `timestamp${suffix} with time zone`;
    case 'char':
      return '"char"';
    default:
      return `${t.name}${suffix}`;
  }
}

/** format_type(oid, typmod) for an OID; '???' as PostgreSQL prints for an unknown one. */
export function formatTypeOid(oid: number, typmod: number | null): string {
  const known = typeFromOid(oid);
  if (known === undefined) return '???';
  if (known.name === 'array') return formatTypeName(known);
  return formatTypeName(typmod === null ? known : withTypmod(known, typmod));
}

// The pseudo-types of pg_proc signatures and pg_type (system/pg-proc-signatures.ts, pg-catalog.ts),
// here so object names (regtype output) print them.
export const ANY_OID = 2276;
export const ANYELEMENT_OID = 2283;
export const ANYARRAY_OID = 2277;
export const ANYNONARRAY_OID = 2776;
export const ANYCOMPATIBLE_OID = 5077;
export const ANYCOMPATIBLEARRAY_OID = 5078;
export const INTERNAL_OID = 2281;

/** pg_type rows of the pseudo-types pg_proc refers to (typtype 'p'); `internal` because clients look it up. */
export const PSEUDO_TYPES: readonly { readonly oid: number; readonly name: string }[] = [
  { oid: ANY_OID, name: 'any' },
  { oid: ANYELEMENT_OID, name: 'anyelement' },
  { oid: ANYARRAY_OID, name: 'anyarray' },
  { oid: ANYNONARRAY_OID, name: 'anynonarray' },
  { oid: ANYCOMPATIBLE_OID, name: 'anycompatible' },
  { oid: ANYCOMPATIBLEARRAY_OID, name: 'anycompatiblearray' },
  { oid: INTERNAL_OID, name: 'internal' },
  // Named by clients' catalog queries (pgcli's and psql's `prorettype = 'trigger'::regtype`) and by
  // the type I/O functions' signatures (sql/functions/type-io.ts).
  { oid: 2275, name: 'cstring' },
  { oid: 2279, name: 'trigger' },
  { oid: 3838, name: 'event_trigger' },
  { oid: 2280, name: 'language_handler' },
  { oid: 3115, name: 'fdw_handler' },
];
