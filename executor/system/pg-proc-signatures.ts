// What pg_proc says about each function oxbow implements, so clients that learn the callable
// functions from the catalog (sqlsmith, psql's \df) read only the truth:
//   - scalar functions come from the library (sql/functions allFunctions()); parameters the
//     library types as ANY are PostgreSQL's pseudo-types: the polymorphic signature PostgreSQL 15
//     has for that function (array_append(anycompatiblearray, anycompatible)) where it has one,
//     else "any"; a variadic function lists its variadic parameter like PostgreSQL
//     (proargtypes ends with it, provariadic names its element type);
//   - aggregates (prokind 'a') are every (aggregate, argument type) the binder accepts
//     (planner/binder/aggregate.ts aggregateResultType), with PostgreSQL 15's OID where PostgreSQL
//     has the same signature, and a stable private OID otherwise.
//   - the catalog and session functions of session-functions.ts (version(), pg_get_viewdef, ...):
//     each overload oxbow resolves, with PostgreSQL 15's OID where PostgreSQL has the same
//     signature (so psql's \df version prints what PostgreSQL prints), a stable private OID
//     otherwise; the `any` overloads (has_*_privilege, pg_has_role) as PostgreSQL 15's rows.
// PSEUDO_TYPES (catalog/type-names.ts) are the pg_type rows these signatures refer to.

import type { ScalarFunction } from '../../sql/functions.js';
import { ANY, allFunctions } from '../../sql/functions.js';
import { TYPES, arrayOf, type as scalar, typeOid, type DataType, type TypeName } from '../../sql/types.js';
import type { AggregateName } from '../../planner/plan.js';
import { aggregateResultType } from '../../planner/binder/aggregate.js';
import {
  ANY_OID, ANYARRAY_OID, ANYCOMPATIBLE_OID, ANYCOMPATIBLEARRAY_OID, ANYELEMENT_OID, ANYNONARRAY_OID, PSEUDO_TYPES,
  formatTypeName, formatTypeOid,
} from '../catalog/type-names.js';
import { sessionFunctionOverloads } from './session-functions.js';

export interface ProcSignature {
  readonly oid: number;
  readonly args: readonly number[];
  readonly returns: number;
  /** provariadic: the variadic parameter's element type, 0 if none. */
  readonly variadic: number;
}

const INT4 = TYPES.int4.oid;
const JSONB = TYPES.jsonb.oid;

/** PostgreSQL 15's polymorphic signatures of the library's ANY functions: `name/argument count`. */
const POLYMORPHIC: Readonly<Record<string, ProcSignature>> = {
  'array_length/2': { oid: 2176, args: [ANYARRAY_OID, INT4], returns: INT4, variadic: 0 },
  'array_lower/2': { oid: 2091, args: [ANYARRAY_OID, INT4], returns: INT4, variadic: 0 },
  'array_upper/2': { oid: 2092, args: [ANYARRAY_OID, INT4], returns: INT4, variadic: 0 },
  'array_ndims/1': { oid: 748, args: [ANYARRAY_OID], returns: INT4, variadic: 0 },
  'cardinality/1': { oid: 3179, args: [ANYARRAY_OID], returns: INT4, variadic: 0 },
  'array_append/2': { oid: 378, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLE_OID], returns: ANYCOMPATIBLEARRAY_OID, variadic: 0 },
  'array_prepend/2': { oid: 379, args: [ANYCOMPATIBLE_OID, ANYCOMPATIBLEARRAY_OID], returns: ANYCOMPATIBLEARRAY_OID, variadic: 0 },
  'array_cat/2': { oid: 383, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLEARRAY_OID], returns: ANYCOMPATIBLEARRAY_OID, variadic: 0 },
  'array_position/2': { oid: 3277, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLE_OID], returns: INT4, variadic: 0 },
  'array_position/3': { oid: 3278, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLE_OID, INT4], returns: INT4, variadic: 0 },
  'array_remove/2': { oid: 3167, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLE_OID], returns: ANYCOMPATIBLEARRAY_OID, variadic: 0 },
  'array_replace/3': { oid: 3168, args: [ANYCOMPATIBLEARRAY_OID, ANYCOMPATIBLE_OID, ANYCOMPATIBLE_OID], returns: ANYCOMPATIBLEARRAY_OID, variadic: 0 },
  'to_jsonb/1': { oid: 3787, args: [ANYELEMENT_OID], returns: JSONB, variadic: 0 },
};

/** PostgreSQL 15's OIDs of variadic "any" functions (the library registers them without the array parameter). */
const VARIADIC_ANY_OIDS: Readonly<Record<string, number>> = {
  concat: 3058, concat_ws: 3059, format: 3539, jsonb_build_array: 3271, jsonb_build_object: 3273, num_nulls: 438, num_nonnulls: 440,
};

function parameterOid(t: DataType): number {
  return t === ANY ? ANY_OID : typeOid(t);
}

export function procSignature(fn: ScalarFunction): ProcSignature {
  const polymorphic = POLYMORPHIC[`${fn.name}/${fn.argumentTypes.length}`];
  if (polymorphic !== undefined && fn.variadic === undefined && fn.argumentTypes.some((t) => t === ANY)) return polymorphic;
  const args = fn.argumentTypes.map(parameterOid);
  let variadic = 0;
  let oid = fn.oid;
  if (fn.variadic !== undefined) {
    if (fn.variadic === ANY) {
      args.push(ANY_OID);
      variadic = ANY_OID;
      oid = VARIADIC_ANY_OIDS[fn.name] ?? oid;
    } else {
      args.push(typeOid(arrayOf(fn.variadic)));
      variadic = typeOid(fn.variadic);
    }
  }
  const returns = fn.returnType.name === 'unknown' ? ANYELEMENT_OID : typeOid(fn.returnType);
  return { oid, args, returns, variadic };
}

export interface AggregateSignature extends ProcSignature {
  readonly name: AggregateName;
}

/** PostgreSQL 15's aggregate OIDs: `name(argtype,...)`. */
const PG_AGGREGATE_OIDS: Readonly<Record<string, number>> = {
  'array_agg(anynonarray)': 2335,
  'avg(float4)': 2104, 'avg(float8)': 2105, 'avg(int2)': 2102, 'avg(int4)': 2101, 'avg(int8)': 2100, 'avg(interval)': 2106, 'avg(numeric)': 2103,
  'bool_and(bool)': 2517, 'bool_or(bool)': 2518, 'every(bool)': 2519,
  'count()': 2803, 'count(any)': 2147,
  'max(bpchar)': 2244, 'max(date)': 2122, 'max(float4)': 2119, 'max(float8)': 2120, 'max(int2)': 2117, 'max(int4)': 2116, 'max(int8)': 2115,
  'max(interval)': 2128, 'max(numeric)': 2130, 'max(oid)': 2118, 'max(text)': 2129, 'max(time)': 2123, 'max(timestamp)': 2126, 'max(timestamptz)': 2127,
  'min(bpchar)': 2245, 'min(date)': 2138, 'min(float4)': 2135, 'min(float8)': 2136, 'min(int2)': 2133, 'min(int4)': 2132, 'min(int8)': 2131,
  'min(interval)': 2144, 'min(numeric)': 2146, 'min(oid)': 2134, 'min(text)': 2145, 'min(time)': 2139, 'min(timestamp)': 2142, 'min(timestamptz)': 2143,
  'string_agg(bytea,bytea)': 3545, 'string_agg(text,text)': 3538,
  'sum(float4)': 2110, 'sum(float8)': 2111, 'sum(int2)': 2109, 'sum(int4)': 2108, 'sum(int8)': 2107, 'sum(interval)': 2113, 'sum(numeric)': 2114,
};

const AGGREGATES: readonly AggregateName[] = ['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg'];

/** Private OIDs for aggregate signatures PostgreSQL lacks (min(jsonb)...), stable for one build. */
const PRIVATE_AGGREGATE_OID = 8_900_000;

let aggregates: AggregateSignature[] | undefined;

/** Every (aggregate, argument types) the binder accepts over the concrete types of types.ts. */
export function aggregateSignatures(): readonly AggregateSignature[] {
  if (aggregates !== undefined) return aggregates;
  const result: AggregateSignature[] = [];
  let next = PRIVATE_AGGREGATE_OID;
  const concrete = (Object.keys(TYPES) as Exclude<TypeName, 'array'>[]).filter((name) => TYPES[name].category !== 'P' && TYPES[name].category !== 'X');
  const add = (name: AggregateName, key: string, args: number[], returns: number): void => {
    result.push({ name, oid: PG_AGGREGATE_OIDS[`${name}(${key})`] ?? next++, args, returns, variadic: 0 });
  };
  for (const name of AGGREGATES) {
    if (name === 'count') {
      add(name, '', [], TYPES.int8.oid);
      add(name, 'any', [ANY_OID], TYPES.int8.oid);
      continue;
    }
    if (name === 'array_agg') {
      add(name, 'anynonarray', [ANYNONARRAY_OID], ANYARRAY_OID);
      continue;
    }
    for (const typeName of concrete) {
      const argument = scalar(typeName);
      const args = name === 'string_agg' ? [argument, argument] : [argument];
      let result: DataType;
      try {
        result = aggregateResultType(name, args, undefined);
      } catch {
        continue;
      }
      // the binder coerces bool_*/every's argument to bool and string_agg's to text: list only the exact form
      if ((name === 'bool_and' || name === 'bool_or' || name === 'every') && typeName !== 'bool') continue;
      if (name === 'string_agg' && typeName !== 'text' && typeName !== 'bytea') continue;
      add(name, args.map(() => typeName).join(','), args.map(typeOid), typeOid(result));
    }
  }
  aggregates = result;
  return result;
}

/**
 * PostgreSQL 15's pg_proc OIDs of the catalog and session functions, `name(identity arguments)`
 * as pg_get_function_identity_arguments prints them (read from a PostgreSQL 15 server).
 */
const PG_SESSION_FUNCTION_OIDS: Readonly<Record<string, number>> = {
  'array_lower(anyarray,integer)': 2091,
  'array_to_string(anyarray,text,text)': 384,
  'array_to_string(anyarray,text)': 395,
  'array_upper(anyarray,integer)': 2092,
  'col_description(oid,integer)': 1216,
  'current_database()': 861,
  'current_schema()': 1402,
  'current_schemas(boolean)': 1403,
  'current_setting(text)': 2077,
  'current_setting(text,boolean)': 3294,
  'current_user()': 745,
  'format_type(oid,integer)': 1081,
  'has_any_column_privilege(name,text,text)': 3024,
  'has_any_column_privilege(name,oid,text)': 3025,
  'has_any_column_privilege(oid,text,text)': 3026,
  'has_any_column_privilege(oid,oid,text)': 3027,
  'has_any_column_privilege(text,text)': 3028,
  'has_any_column_privilege(oid,text)': 3029,
  'has_column_privilege(name,text,text,text)': 3012,
  'has_column_privilege(name,text,smallint,text)': 3013,
  'has_column_privilege(name,oid,text,text)': 3014,
  'has_column_privilege(name,oid,smallint,text)': 3015,
  'has_column_privilege(oid,text,text,text)': 3016,
  'has_column_privilege(oid,text,smallint,text)': 3017,
  'has_column_privilege(oid,oid,text,text)': 3018,
  'has_column_privilege(oid,oid,smallint,text)': 3019,
  'has_column_privilege(text,text,text)': 3020,
  'has_column_privilege(text,smallint,text)': 3021,
  'has_column_privilege(oid,text,text)': 3022,
  'has_column_privilege(oid,smallint,text)': 3023,
  'has_database_privilege(name,text,text)': 2250,
  'has_database_privilege(name,oid,text)': 2251,
  'has_database_privilege(oid,text,text)': 2252,
  'has_database_privilege(oid,oid,text)': 2253,
  'has_database_privilege(text,text)': 2254,
  'has_database_privilege(oid,text)': 2255,
  'has_function_privilege(name,text,text)': 2256,
  'has_function_privilege(name,oid,text)': 2257,
  'has_function_privilege(oid,text,text)': 2258,
  'has_function_privilege(oid,oid,text)': 2259,
  'has_function_privilege(text,text)': 2260,
  'has_function_privilege(oid,text)': 2261,
  'has_schema_privilege(name,text,text)': 2268,
  'has_schema_privilege(name,oid,text)': 2269,
  'has_schema_privilege(oid,text,text)': 2270,
  'has_schema_privilege(oid,oid,text)': 2271,
  'has_schema_privilege(text,text)': 2272,
  'has_schema_privilege(oid,text)': 2273,
  'has_sequence_privilege(name,text,text)': 2181,
  'has_sequence_privilege(name,oid,text)': 2182,
  'has_sequence_privilege(oid,text,text)': 2183,
  'has_sequence_privilege(oid,oid,text)': 2184,
  'has_sequence_privilege(text,text)': 2185,
  'has_sequence_privilege(oid,text)': 2186,
  'has_table_privilege(name,text,text)': 1922,
  'has_table_privilege(name,oid,text)': 1923,
  'has_table_privilege(oid,text,text)': 1924,
  'has_table_privilege(oid,oid,text)': 1925,
  'has_table_privilege(text,text)': 1926,
  'has_table_privilege(oid,text)': 1927,
  'has_tablespace_privilege(name,text,text)': 2390,
  'has_tablespace_privilege(name,oid,text)': 2391,
  'has_tablespace_privilege(oid,text,text)': 2392,
  'has_tablespace_privilege(oid,oid,text)': 2393,
  'has_tablespace_privilege(text,text)': 2394,
  'has_tablespace_privilege(oid,text)': 2395,
  'obj_description(oid,name)': 1215,
  'obj_description(oid)': 1348,
  'pg_backend_pid()': 2026,
  'pg_char_to_encoding(name)': 1264,
  'pg_collation_is_visible(oid)': 3815,
  'pg_conversion_is_visible(oid)': 2093,
  'pg_database_size(name)': 2168,
  'pg_database_size(oid)': 2324,
  'pg_encoding_to_char(integer)': 1597,
  'pg_function_is_visible(oid)': 2081,
  'pg_get_constraintdef(oid)': 1387,
  'pg_get_constraintdef(oid,boolean)': 2508,
  'pg_get_expr(pg_node_tree,oid)': 1716,
  'pg_get_expr(pg_node_tree,oid,boolean)': 2509,
  'pg_get_function_arguments(oid)': 2162,
  'pg_get_functiondef(oid)': 2098,
  'pg_get_function_identity_arguments(oid)': 2232,
  'pg_get_function_result(oid)': 2165,
  'pg_get_indexdef(oid)': 1643,
  'pg_get_indexdef(oid,integer,boolean)': 2507,
  'pg_get_partkeydef(oid)': 3352,
  'pg_get_serial_sequence(text,text)': 1665,
  'pg_get_statisticsobjdef_columns(oid)': 6174,
  'pg_get_userbyid(oid)': 1642,
  'pg_get_viewdef(text)': 1640,
  'pg_get_viewdef(oid)': 1641,
  'pg_get_viewdef(text,boolean)': 2505,
  'pg_get_viewdef(oid,boolean)': 2506,
  'pg_get_viewdef(oid,integer)': 3159,
  'pg_has_role(name,name,text)': 2705,
  'pg_has_role(name,oid,text)': 2706,
  'pg_has_role(oid,name,text)': 2707,
  'pg_has_role(oid,oid,text)': 2708,
  'pg_has_role(name,text)': 2709,
  'pg_has_role(oid,text)': 2710,
  'pg_indexes_size(regclass)': 2998,
  'pg_is_in_recovery()': 3810,
  'pg_is_other_temp_schema(oid)': 2855,
  'pg_my_temp_schema()': 2854,
  'pg_operator_is_visible(oid)': 2082,
  'pg_postmaster_start_time()': 2560,
  'pg_relation_is_publishable(regclass)': 6121,
  'pg_relation_size(regclass)': 2325,
  'pg_relation_size(regclass,text)': 2332,
  'pg_size_pretty(bigint)': 2288,
  'pg_size_pretty(numeric)': 3166,
  'pg_table_is_visible(oid)': 2079,
  'pg_table_size(regclass)': 2997,
  'pg_tablespace_location(oid)': 3778,
  'pg_total_relation_size(regclass)': 2286,
  'pg_type_is_visible(oid)': 2080,
  'session_user()': 746,
  'set_config(text,text,boolean)': 2078,
  'shobj_description(oid,name)': 1993,
  'to_regclass(text)': 3495,
  'version()': 89,
};

/** Those PostgreSQL marks volatile (provolatile 'v'); the rest are stable. */
const PG_VOLATILE = new Set(['pg_database_size(name)', 'pg_database_size(oid)', 'pg_indexes_size(regclass)', 'pg_is_in_recovery()', 'pg_relation_size(regclass)', 'pg_relation_size(regclass,text)', 'pg_table_size(regclass)', 'pg_total_relation_size(regclass)', 'set_config(text,text,boolean)']);

/** Called like functions but keywords in PostgreSQL, with no pg_proc row. */
const KEYWORD_FUNCTIONS = new Set(['current_catalog', 'current_role', 'user']);

/** PostgreSQL's identity-argument type names back to OIDs (the types the `any` overloads' rows use). */
const IDENTITY_TYPE_OIDS: Readonly<Record<string, number>> = {
  name: TYPES.name.oid, text: TYPES.text.oid, oid: TYPES.oid.oid, smallint: TYPES.int2.oid, integer: INT4, boolean: TYPES.bool.oid, regclass: TYPES.regclass.oid,
};

export interface SessionProcSignature extends ProcSignature {
  readonly name: string;
  readonly strict: boolean;
  /** provolatile: 's' or 'v'. */
  readonly volatility: string;
}

/** Private OIDs of session-function overloads PostgreSQL 15 lacks (stable for one build). */
const PRIVATE_SESSION_OID = 8_950_000;

let sessionSignatures: SessionProcSignature[] | undefined;

const isAnyArray = (t: DataType): boolean => t.name === 'array' && t.element?.name === 'unknown';

/** pg_proc rows of session-functions.ts, leaving out `name/argument count`s the library (allFunctions) lists already. */
export function sessionProcSignatures(): readonly SessionProcSignature[] {
  if (sessionSignatures !== undefined) return sessionSignatures;
  const listed = new Set(allFunctions().map((fn) => `${fn.name}/${fn.argumentTypes.length}`));
  const result: SessionProcSignature[] = [];
  let next = PRIVATE_SESSION_OID;
  for (const overload of sessionFunctionOverloads()) {
    if (KEYWORD_FUNCTIONS.has(overload.name)) continue;
    const returns = typeOid(overload.returns);
    if (overload.arguments === 'any') {
      for (const [key, oid] of Object.entries(PG_SESSION_FUNCTION_OIDS)) {
        const match = /^([a-z_]+)\((.*)\)$/.exec(key)!;
        if (match[1] !== overload.name) continue;
        const args = match[2] === '' ? [] : match[2]!.split(',').map((name) => IDENTITY_TYPE_OIDS[name] ?? ANY_OID);
        result.push({ name: overload.name, oid, args, returns, variadic: 0, strict: overload.strict, volatility: PG_VOLATILE.has(key) ? 'v' : 's' });
      }
      continue;
    }
    if (listed.has(`${overload.name}/${overload.arguments.length}`)) continue;
    const key = `${overload.name}(${overload.arguments.map((t) => (isAnyArray(t) ? 'anyarray' : formatTypeName(t))).join(',')})`;
    const args = overload.arguments.map((t) => (isAnyArray(t) ? ANYARRAY_OID : typeOid(t)));
    result.push({ name: overload.name, oid: PG_SESSION_FUNCTION_OIDS[key] ?? next++, args, returns, variadic: 0, strict: overload.strict, volatility: PG_VOLATILE.has(key) ? 'v' : 's' });
  }
  sessionSignatures = result;
  return result;
}

/** A session function's pg_proc row by OID: what pg_get_function_result / _arguments print for it. */
export function sessionProcByOid(oid: number): SessionProcSignature | undefined {
  return sessionProcSignatures().find((signature) => signature.oid === oid);
}

/** A pg_proc type OID as format_type prints it, pseudo-types included. */
export function procTypeName(oid: number): string {
  return PSEUDO_TYPES.find((pseudo) => pseudo.oid === oid)?.name ?? formatTypeOid(oid, null);
}
