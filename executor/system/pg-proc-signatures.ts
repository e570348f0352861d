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
// PSEUDO_TYPES are the pg_type rows these signatures refer to.

import type { ScalarFunction } from '../../sql/functions.js';
import { ANY } from '../../sql/functions.js';
import { TYPES, arrayOf, type as scalar, typeOid, type DataType, type TypeName } from '../../sql/types.js';
import type { AggregateName } from '../../planner/plan.js';
import { aggregateResultType } from '../../planner/binder/aggregate.js';

export const ANY_OID = 2276;
const ANYELEMENT_OID = 2283;
const ANYARRAY_OID = 2277;
const ANYNONARRAY_OID = 2776;
const ANYCOMPATIBLE_OID = 5077;
const ANYCOMPATIBLEARRAY_OID = 5078;
const INTERNAL_OID = 2281;

/** pg_type rows of the pseudo-types pg_proc refers to (typtype 'p'); `internal` because clients look it up. */
export const PSEUDO_TYPES: readonly { readonly oid: number; readonly name: string }[] = [
  { oid: ANY_OID, name: 'any' },
  { oid: ANYELEMENT_OID, name: 'anyelement' },
  { oid: ANYARRAY_OID, name: 'anyarray' },
  { oid: ANYNONARRAY_OID, name: 'anynonarray' },
  { oid: ANYCOMPATIBLE_OID, name: 'anycompatible' },
  { oid: ANYCOMPATIBLEARRAY_OID, name: 'anycompatiblearray' },
  { oid: INTERNAL_OID, name: 'internal' },
];

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
