// SQL data types: PostgreSQL's names, OIDs and sizes, and the JavaScript representation of each
// (see value.ts). This is the leaf vocabulary every layer shares; it imports nothing above sql/.

export type TypeName =
  | 'bool'
  | 'int2'
  | 'int4'
  | 'int8'
  | 'float4'
  | 'float8'
  | 'numeric'
  | 'varchar'
  | 'text'
  | 'bpchar'
  | 'bytea'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'interval'
  | 'jsonb'
  | 'json'
  | 'uuid'
  | 'oid'
  | 'regclass'
  | 'regproc'
  | 'regtype'
  | 'regnamespace'
  | 'regprocedure'
  | 'name'
  | 'char'
  | 'unknown'
  | 'void'
  | 'record'
  | 'array';

export interface TypeInfo {
  readonly name: TypeName;
  readonly oid: number;
  /** pg_type.typlen: fixed size in bytes, or -1 for variable length. */
  readonly length: number;
  /** OID of the array type whose elements are this type (pg_type.typarray), 0 if none. */
  readonly arrayOid: number;
  /** pg_type.typcategory */
  readonly category: string;
}

function info(name: TypeName, oid: number, length: number, arrayOid: number, category: string): TypeInfo {
  return { name, oid, length, arrayOid, category };
}

export const TYPES: Readonly<Record<Exclude<TypeName, 'array'>, TypeInfo>> = {
  bool: info('bool', 16, 1, 1000, 'B'),
  int2: info('int2', 21, 2, 1005, 'N'),
  int4: info('int4', 23, 4, 1007, 'N'),
  int8: info('int8', 20, 8, 1016, 'N'),
  float4: info('float4', 700, 4, 1021, 'N'),
  float8: info('float8', 701, 8, 1022, 'N'),
  numeric: info('numeric', 1700, -1, 1231, 'N'),
  varchar: info('varchar', 1043, -1, 1015, 'S'),
  text: info('text', 25, -1, 1009, 'S'),
  bpchar: info('bpchar', 1042, -1, 1014, 'S'),
  bytea: info('bytea', 17, -1, 1001, 'U'),
  date: info('date', 1082, 4, 1182, 'D'),
  time: info('time', 1083, 8, 1183, 'D'),
  timestamp: info('timestamp', 1114, 8, 1115, 'D'),
  timestamptz: info('timestamptz', 1184, 8, 1185, 'D'),
  interval: info('interval', 1186, 16, 1187, 'T'),
  jsonb: info('jsonb', 3802, -1, 3807, 'U'),
  json: info('json', 114, -1, 199, 'U'),
  uuid: info('uuid', 2950, 16, 2951, 'U'),
  oid: info('oid', 26, 4, 1028, 'N'),
  regclass: info('regclass', 2205, 4, 2210, 'N'),
  regproc: info('regproc', 24, 4, 1008, 'N'),
  regtype: info('regtype', 2206, 4, 2211, 'N'),
  regnamespace: info('regnamespace', 4089, 4, 4090, 'N'),
  regprocedure: info('regprocedure', 2202, 4, 2207, 'N'),
  name: info('name', 19, 64, 1003, 'S'),
  char: info('char', 18, 1, 1002, 'Z'),
  unknown: info('unknown', 705, -2, 0, 'X'),
  void: info('void', 2278, 4, 0, 'P'),
  record: info('record', 2249, -1, 2287, 'P'),
};

/**
 * A column or expression type. `typmod` is PostgreSQL's type modifier (-1 when absent):
 * varchar(n) and bpchar(n) store n + 4, numeric(p, s) stores ((p << 16) | s) + 4,
 * timestamp(p)/time(p)/interval(p) store p.
 */
export interface DataType {
  readonly name: TypeName;
  readonly typmod: number;
  /** For name === 'array': the element type. */
  readonly element?: DataType;
  /**
   * For name === 'array': the field names when the array stands for a record of same-typed fields
   * (information_schema._pg_expandarray's (x, n)), so `(value).x` reads element 1.
   */
  readonly fields?: readonly string[];
  /**
   * PostgreSQL's int2vector / oidvector (pg_index.indkey, indclass ...): an array of int2 / oid
   * with its own OID, printed space-separated, sent in binary with lower bound 0.
   */
  readonly vector?: 'int2vector' | 'oidvector';
}

const scalarCache = new Map<TypeName, DataType>();

/** The DataType of a scalar type without a modifier; instances are shared. */
export function type(name: Exclude<TypeName, 'array'>): DataType {
  let t = scalarCache.get(name);
  if (t === undefined) {
    t = Object.freeze({ name, typmod: -1 });
    scalarCache.set(name, t);
  }
  return t;
}

export function arrayOf(element: DataType): DataType {
  return Object.freeze({ name: 'array', typmod: -1, element });
}

/** int2vector or oidvector: an array of int2 / oid under the vector type's OID and text form. */
export function vectorOf(vector: 'int2vector' | 'oidvector'): DataType {
  return Object.freeze({ name: 'array', typmod: -1, element: type(vector === 'int2vector' ? 'int2' : 'oid'), vector });
}

/** int2vector's and oidvector's OIDs. */
export const VECTOR_OIDS = { int2vector: 22, oidvector: 30 } as const;

export function withTypmod(t: DataType, typmod: number): DataType {
  return typmod === t.typmod ? t : Object.freeze({ ...t, typmod });
}

/** The PostgreSQL OID of a DataType (arrays: the element's array OID). */
export function typeOid(t: DataType): number {
  if (t.vector !== undefined) return VECTOR_OIDS[t.vector];
  if (t.name === 'array') {
    const element = t.element;
    if (t.fields !== undefined) return TYPES.record.oid;
    if (element === undefined || element.name === 'array') return TYPES.text.arrayOid;
    return TYPES[element.name].arrayOid;
  }
  return TYPES[t.name].oid;
}

const byOid = new Map<number, DataType>();
for (const name of Object.keys(TYPES) as Exclude<TypeName, 'array'>[]) {
  byOid.set(TYPES[name].oid, type(name));
}
for (const name of Object.keys(TYPES) as Exclude<TypeName, 'array'>[]) {
  const arrayOid = TYPES[name].arrayOid;
  if (arrayOid !== 0) byOid.set(arrayOid, arrayOf(type(name)));
}

byOid.set(VECTOR_OIDS.int2vector, vectorOf('int2vector'));
byOid.set(VECTOR_OIDS.oidvector, vectorOf('oidvector'));

/** The DataType for a PostgreSQL type OID, or undefined if oxbow does not know it. */
export function typeFromOid(oid: number): DataType | undefined {
  return byOid.get(oid);
}

export function sameType(a: DataType, b: DataType): boolean {
  if (a.name !== b.name) return false;
  if (a.name === 'array') return a.vector === b.vector && a.element !== undefined && b.element !== undefined && sameType(a.element, b.element);
  return true;
}
