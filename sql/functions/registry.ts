// The table of scalar functions and operators: each library file (math.ts, strings.ts, ...)
// registers its entries here at import time; function-resolution.ts looks them up. Operators are
// registered under their symbol (`+`, `||`, `->>`) with one or two argument types; a prefix
// operator has one. OIDs come from PostgreSQL 15's catalog (pg-catalog-oids.ts) when PostgreSQL has
// the same function; oxbow-only entries get stable OIDs from a private range in registration order.

import type { DataType, TypeName } from '../types.js';
import { arrayOf, type } from '../types.js';
import type { ScalarFunction, ScalarImpl } from '../functions.js';
import { PG_OPERATOR_PROC_OIDS, PG_PROC_OIDS } from './pg-catalog-oids.js';

export const functionsByName = new Map<string, ScalarFunction[]>();
export const operatorsBySymbol = new Map<string, ScalarFunction[]>();

export type TypeSpec = Exclude<TypeName, 'array'> | DataType;

export function toType(spec: TypeSpec): DataType {
  return typeof spec === 'string' ? type(spec) : spec;
}

export const textArray = arrayOf(type('text'));

/**
 * PostgreSQL's "any" / anyelement parameter: accepts every type without a cast. A function with
 * such parameters is registered with a `specialize` hook that builds its implementation for the
 * actual argument types at resolution time (the values alone do not say their type: a date and an
 * int4 are both numbers).
 */
export const ANY: DataType = Object.freeze({ name: 'unknown', typmod: -2 });

/** Builds the implementation for actual argument types; undefined when the types do not fit (no match). */
export type Specializer = (argumentTypes: readonly DataType[]) => { impl: ScalarImpl; returnType?: DataType; argumentCasts?: readonly DataType[] } | undefined;
export const specializers = new Map<ScalarFunction, Specializer>();

export interface Definition {
  readonly args: readonly TypeSpec[];
  readonly returns: TypeSpec;
  readonly impl: ScalarImpl;
  /** pg_proc OID; looked up from PostgreSQL's catalog when omitted. */
  readonly oid?: number;
  readonly strict?: boolean;
  readonly volatility?: 'immutable' | 'stable' | 'volatile';
  readonly variadic?: TypeSpec;
  /** For functions with ANY parameters: builds the implementation for the actual argument types. */
  readonly specialize?: Specializer;
  /** impl reads its arguments during the call and keeps no reference to the array (ScalarFunction.argumentsBorrowed). */
  readonly argumentsBorrowed?: boolean;
}

/** PostgreSQL's pg_type.typname of a DataType (arrays: `_element`). */
export function catalogTypeName(t: DataType): string {
  if (t === ANY) return 'any';
  if (t.name === 'array') return `_${t.element === undefined ? 'text' : catalogTypeName(t.element)}`;
  return t.name;
}

// oxbow-only functions: OIDs above PostgreSQL's range for built-ins and below user objects would
// collide with nothing, but clients only need them unique and stable
let nextPrivateOid = 8_000_000;

function build(name: string, definition: Definition, catalogKey: string, catalog: Readonly<Record<string, number>>): ScalarFunction {
  const argumentTypes = definition.args.map(toType);
  const key = `${catalogKey}(${argumentTypes.map(catalogTypeName).join(',')})`;
  const oid = definition.oid ?? catalog[key] ?? nextPrivateOid++;
  return Object.freeze({
    name,
    argumentTypes,
    variadic: definition.variadic === undefined ? undefined : toType(definition.variadic),
    returnType: toType(definition.returns),
    strict: definition.strict ?? true,
    volatility: definition.volatility ?? 'immutable',
    impl: definition.impl,
    ...(definition.argumentsBorrowed === true ? { argumentsBorrowed: true } : {}),
    oid,
  });
}

export function defineFunction(name: string, definition: Definition): void {
  const list = functionsByName.get(name) ?? [];
  const fn = build(name, definition, name, PG_PROC_OIDS);
  if (definition.specialize !== undefined) specializers.set(fn, definition.specialize);
  list.push(fn);
  functionsByName.set(name, list);
}

/** A binary operator (two args) or a prefix operator (one arg). */
export function defineOperator(symbol: string, definition: Definition): void {
  const list = operatorsBySymbol.get(symbol) ?? [];
  const types = definition.args.map(toType);
  const key = types.length === 1 ? `${symbol}(,${catalogTypeName(types[0]!)})` : `${symbol}(${types.map(catalogTypeName).join(',')})`;
  const oid = definition.oid ?? PG_OPERATOR_PROC_OIDS[key];
  // Every operator's impl reads its arguments during the call and keeps no reference to the array.
  list.push(Object.freeze({ ...build(symbol, { ...definition, oid: oid ?? nextPrivateOid++ }, symbol, PG_PROC_OIDS), argumentsBorrowed: true }));
  operatorsBySymbol.set(symbol, list);
}
