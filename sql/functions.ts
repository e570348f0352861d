// The scalar function, operator and cast library: resolution by name and argument types
// (PostgreSQL's rules, simplified and documented) and the implementations, which work on the
// value representation of value.ts. The planner resolves once at bind time; the executor calls
// `impl` per row (or `batch` per batch where one exists).
// CONTRACT (signatures other layers rely on); the sql values work fills in the library.

import type { DataType } from './types.js';
import type { Value } from './value.js';

/** Session state that some functions read: now(), the time zone, DateStyle, IntervalStyle. */
export interface EvalContext {
  /** Statement start time (now(), current_timestamp), microseconds since 1970 UTC. */
  readonly statementTimeMicros: number;
  /** IANA zone name or a fixed offset such as 'UTC', '+02', 'Europe/Paris'. */
  readonly timeZone: string;
  readonly dateStyle: string;
  readonly intervalStyle: string;
  readonly extraFloatDigits: number;
}

export const DEFAULT_EVAL_CONTEXT: EvalContext = Object.freeze({
  statementTimeMicros: 0,
  timeZone: 'UTC',
  dateStyle: 'ISO, MDY',
  intervalStyle: 'postgres',
  extraFloatDigits: 1,
});

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

export declare function resolveFunction(name: string, argumentTypes: readonly DataType[]): Resolved | undefined;
export declare function resolveOperator(operator: string, left: DataType | undefined, right: DataType): Resolved | undefined;
/** The cast from one type to another in the given context, or undefined when not allowed. typmod of `to` is applied (varchar(n), numeric(p,s)). */
export declare function resolveCast(from: DataType, to: DataType, context: CastContext): CastImpl | undefined;
/** PostgreSQL's text output of a non-null value, byte for byte. */
export declare function formatValue(value: Value, type: DataType, context?: EvalContext): string;
/** PostgreSQL's text input; throws SqlError 22P02/22007/22003... with PostgreSQL's messages. */
export declare function parseValue(text: string, type: DataType, context?: EvalContext): Value;
/** SQL comparison of two non-null values of one type: negative, 0, positive (NaN sorts last as in PostgreSQL). */
export declare function compareValues(a: Value, b: Value, type: DataType): number;
/** Hash consistent with compareValues === 0 (for hash joins and aggregates). */
export declare function hashValue(value: Value, type: DataType): number;
/** The common type of a UNION / CASE / COALESCE / VALUES column (PostgreSQL's select_common_type). */
export declare function commonType(types: readonly DataType[]): DataType | undefined;
/** Every registered function, for pg_proc. */
export declare function allFunctions(): readonly ScalarFunction[];
