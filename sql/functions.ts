// The scalar function, operator and cast library: resolution by name and argument types
// (PostgreSQL's rules, simplified and documented in function-resolution.ts) and the
// implementations, which work on the value representation of value.ts. The planner resolves once
// at bind time; the executor calls `impl` per row (or `batch` per batch where one exists).
// CONTRACT (signatures other layers rely on). This file is the front door: the implementations
// live in the files it re-exports from (see sql/README.md).

import type { DataType } from './types.js';
import type { Value } from './value.js';
import type { EvalContext } from './eval-context.js';

export type { EvalContext } from './eval-context.js';
export { DEFAULT_EVAL_CONTEXT } from './eval-context.js';

export type ScalarImpl = (args: Value[], context: EvalContext) => Value;

export interface ScalarFunction {
  readonly name: string;
  readonly argumentTypes: readonly DataType[];
  /** For variadic functions (concat, coalesce...): the type of the extra arguments. */
  readonly variadic?: DataType;
  readonly returnType: DataType;
  /** Strict: returns NULL when any argument is NULL without calling impl. */
  readonly strict: boolean;
  /** 'volatile' functions (random, now is 'stable') are not constant-folded. */
  readonly volatility: 'immutable' | 'stable' | 'volatile';
  readonly impl: ScalarImpl;
  /**
   * impl reads `args` during the call and keeps no reference to the array (every built-in
   * operator, and the functions defined so: the string functions of the hot paths, extract): a
   * caller may pass the same array to every call (executor/expr/expression.ts).
   */
  readonly argumentsBorrowed?: boolean;
  /** pg_proc OID, for the catalog. */
  readonly oid: number;
}

export interface Resolved {
  readonly fn: ScalarFunction;
  /** Per argument, the type it must be cast to before the call (same type: no cast). */
  readonly argumentCasts: readonly DataType[];
}

export type CastContext = 'implicit' | 'assignment' | 'explicit';
export type CastImpl = (value: Value, context: EvalContext) => Value;

/** PostgreSQL's text output of a non-null value, byte for byte. */
export { formatValue, parseValue } from './text-format.js';
/** SQL comparison (compareValues) and a hash consistent with it (hashValue). */
export { compareValues, hashValue, hasherOf } from './compare.js';
export { resolveCast } from './casts.js';
export { resolveFunction, resolveOperator, commonType, allFunctions, allOperators } from './function-resolution.js';
/** The "any" parameter type of functions such as concat and format (see functions/registry.ts). */
export { ANY } from './functions/registry.js';
export { TYPE_IO, ARRAY_TYPE_IO, TYPE_IO_FUNCTIONS, typeIoFunctionsNamed, type TypeIoFunction } from './functions/type-io.js';
