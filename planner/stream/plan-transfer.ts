// A streaming plan as plain data for another thread (a source fragment's workers, executor/stream/
// PARALLEL.md), and back. A structured clone keeps plain objects, arrays and primitives but not
// functions nor class instances, which bound expressions hold: a call's resolved function (the
// registry's object: named by its place among every function or operator, found again there in
// the worker), a cast's implementation (named by its types and the cast context that resolves to
// that very implementation, or any context allowing it when no typmod applies), a numeric literal (by its text). A plan holding anything else (a
// composed cast, a function made by the binder, another value class) is not transferable:
// `toTransferable` answers undefined and the plan runs on the main thread.

import { allFunctions, allOperators } from '../../sql/function-resolution.js';
import { resolveCast } from '../../sql/casts.js';
import type { CastContext, CastImpl, ScalarFunction } from '../../sql/functions.js';
import { Numeric } from '../../sql/numeric.js';
import type { DataType } from '../../sql/types.js';

const CAST_CONTEXTS: readonly CastContext[] = ['implicit', 'assignment', 'explicit'];

let functionNames: Map<ScalarFunction, string> | undefined;
let functionsByName: Map<string, ScalarFunction> | undefined;

function registry(): { names: Map<ScalarFunction, string>; byName: Map<string, ScalarFunction> } {
  if (functionNames === undefined || functionsByName === undefined) {
    functionNames = new Map();
    functionsByName = new Map();
    allFunctions().forEach((fn, index) => {
      functionNames!.set(fn, `f${index}`);
      functionsByName!.set(`f${index}`, fn);
    });
    allOperators().forEach((fn, index) => {
      if (functionNames!.has(fn)) return;
      functionNames!.set(fn, `o${index}`);
      functionsByName!.set(`o${index}`, fn);
    });
  }
  return { names: functionNames, byName: functionsByName };
}

class NotTransferable extends Error {}

/** `plan` as plain data (structured-clone safe), or undefined when some part of it cannot be. */
export function toTransferable<T>(plan: T): unknown {
  const { names } = registry();
  const encode = (value: unknown): unknown => {
    if (value === null || value === undefined) return value;
    if (typeof value === 'function' || typeof value === 'symbol') throw new NotTransferable();
    if (typeof value !== 'object') return value;
    if (value instanceof Numeric) return { $numeric: value.toString() };
    const named = names.get(value as ScalarFunction);
    if (named !== undefined) return { $fn: named };
    if (Array.isArray(value)) return value.map(encode);
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) throw new NotTransferable();
    const record = value as Record<string, unknown>;
    if (record['kind'] === 'Cast' && typeof record['impl'] === 'function') {
      const input = record['input'] as { type: DataType };
      const to = record['type'] as DataType;
      // Without a typmod to apply the cast is its base conversion in every context that allows it
      // (sql/casts.ts resolveCast), a closure made afresh: the explicit context resolves it again.
      const context = CAST_CONTEXTS.find((candidate) => resolveCast(input.type, to, candidate) === record['impl']) ?? (to.typmod < 0 && resolveCast(input.type, to, 'explicit') !== undefined ? 'explicit' : undefined);
      if (context === undefined) throw new NotTransferable();
      return { kind: 'Cast', input: encode(record['input']), impl: { $cast: context }, type: encode(to) };
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(record)) out[key] = encode(item);
    return out;
  };
  try {
    return encode(plan);
  } catch (error) {
    if (error instanceof NotTransferable) return undefined;
    throw error;
  }
}

/** The plan `toTransferable` made plain, with its functions, casts and numerics again. */
export function fromTransferable<T>(data: unknown): T {
  const { byName } = registry();
  const decode = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(decode);
    const record = value as Record<string, unknown>;
    if (typeof record['$numeric'] === 'string') return Numeric.parse(record['$numeric']);
    if (typeof record['$fn'] === 'string') {
      const fn = byName.get(record['$fn']);
      if (fn === undefined) throw new Error(`no function ${record['$fn']} in this thread's registry`);
      return fn;
    }
    if (record['kind'] === 'Cast' && typeof (record['impl'] as { $cast?: unknown } | undefined)?.$cast === 'string') {
      const input = decode(record['input']) as { type: DataType };
      const to = decode(record['type']) as DataType;
      const impl: CastImpl | undefined = resolveCast(input.type, to, (record['impl'] as { $cast: CastContext }).$cast);
      if (impl === undefined) throw new Error(`no cast from ${input.type.name} to ${to.name}`);
      return { kind: 'Cast', input, impl, type: to };
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(record)) out[key] = decode(item);
    return out;
  };
  return decode(data) as T;
}
