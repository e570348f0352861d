// SQL type names to DataType (the TypeName node of CAST, `::` and column definitions) and back to
// the names PostgreSQL prints in error messages (format_type style: "integer", "character varying").

import type { TypeName as PgTypeName, Node } from '@pgsql/types';
import { type DataType, type TypeName, arrayOf, type as scalar, vectorOf, withTypmod } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';

const NAMES: Readonly<Record<string, Exclude<TypeName, 'array'>>> = {
  bool: 'bool', boolean: 'bool',
  int2: 'int2', smallint: 'int2',
  int4: 'int4', int: 'int4', integer: 'int4',
  int8: 'int8', bigint: 'int8',
  float4: 'float4', real: 'float4',
  float8: 'float8', 'double precision': 'float8',
  numeric: 'numeric', decimal: 'numeric',
  varchar: 'varchar', 'character varying': 'varchar',
  text: 'text',
  bpchar: 'bpchar', character: 'bpchar',
  bytea: 'bytea',
  date: 'date',
  time: 'time', 'time without time zone': 'time',
  timestamp: 'timestamp', 'timestamp without time zone': 'timestamp',
  timestamptz: 'timestamptz', 'timestamp with time zone': 'timestamptz',
  interval: 'interval',
  jsonb: 'jsonb', json: 'json', uuid: 'uuid',
  oid: 'oid', regclass: 'regclass', regproc: 'regproc', regtype: 'regtype', regnamespace: 'regnamespace', regprocedure: 'regprocedure',
  name: 'name', char: 'char', unknown: 'unknown', void: 'void', record: 'record',
};

function integerOf(node: Node | undefined): number | undefined {
  if (node === undefined) return undefined;
  const constant = (node as { A_Const?: { ival?: { ival?: number } } }).A_Const;
  if (constant?.ival !== undefined) return constant.ival.ival ?? 0;
  return undefined;
}

/** The DataType a TypeName node names; 42704 for an unknown type. */
export function dataTypeOf(typeName: PgTypeName): DataType {
  const parts = (typeName.names ?? []).map((n) => (n as { String: { sval: string } }).String.sval);
  const last = parts[parts.length - 1] ?? '';
  if (parts.length > 1 && parts[0] !== 'pg_catalog') {
    throw new SqlError(SqlState.undefinedObject, `type "${parts.join('.')}" does not exist`, { position: positionOf(typeName) });
  }
  if ((last === 'int2vector' || last === 'oidvector') && (typeName.arrayBounds ?? []).length === 0) return vectorOf(last);
  // The grammar spells `char` as bpchar and `"char"` as char: qualified pg_catalog.bpchar / plain "char".
  // pg_type's own array names (`_int4`) name the array type, as in PostgreSQL
  const arrayName = last.startsWith('_') && NAMES[last.slice(1)] !== undefined && last.slice(1) === NAMES[last.slice(1)];
  const name = arrayName ? NAMES[last.slice(1)] : NAMES[last];
  if (name === undefined || (arrayName && (name === 'unknown' || name === 'void'))) {
    throw new SqlError(SqlState.undefinedObject, `type "${last}" does not exist`, { position: positionOf(typeName) });
  }
  const modifiers = (typeName.typmods ?? []).map(integerOf);
  let result: DataType = scalar(name);
  if (name === 'varchar' && modifiers[0] !== undefined) result = withTypmod(result, modifiers[0] + 4);
  else if (name === 'bpchar' && !arrayName) result = withTypmod(result, (modifiers[0] ?? 1) + 4);
  else if (name === 'numeric' && modifiers[0] !== undefined) result = withTypmod(result, ((modifiers[0] << 16) | (modifiers[1] ?? 0)) + 4);
  else if ((name === 'timestamp' || name === 'timestamptz' || name === 'time') && modifiers[0] !== undefined) result = withTypmod(result, modifiers[0]);
  else if (last === 'float' || (name === 'float8' && parts[0] === 'pg_catalog' && last === 'float8' && modifiers[0] !== undefined)) {
    result = modifiers[0] !== undefined && modifiers[0] <= 24 ? scalar('float4') : scalar('float8');
  }
  if ((typeName.arrayBounds ?? []).length > 0 || arrayName) result = arrayOf(result);
  return result;
}

function positionOf(typeName: PgTypeName): number | undefined {
  return typeName.location === undefined || typeName.location < 0 ? undefined : typeName.location + 1;
}

// Keyed by string so a type added to sql/types.ts prints its own name until it is listed here.
const DISPLAY: Readonly<Record<string, string>> = {
  bool: 'boolean', int2: 'smallint', int4: 'integer', int8: 'bigint', float4: 'real', float8: 'double precision',
  numeric: 'numeric', varchar: 'character varying', text: 'text', bpchar: 'character', bytea: 'bytea', date: 'date',
  time: 'time without time zone', timestamp: 'timestamp without time zone', timestamptz: 'timestamp with time zone',
  interval: 'interval', jsonb: 'jsonb', json: 'json', oid: 'oid', regclass: 'regclass', regproc: 'regproc',
  regtype: 'regtype', regnamespace: 'regnamespace', name: 'name', char: '"char"', unknown: 'unknown', void: 'void', record: 'record',
};

/** PostgreSQL's name of a type in messages (format_type without the modifier). */
export function displayTypeName(t: DataType): string {
  if (t.vector !== undefined) return t.vector;
  if (t.name === 'array') return `${t.element === undefined ? 'anyarray' : displayTypeName(t.element)}[]`;
  return DISPLAY[t.name] ?? t.name;
}
