// A streaming plan as data another thread can receive (a parallel fragment's workers,
// executor/stream/PARALLEL.md): a structured clone keeps plain objects, arrays, bigints and byte
// arrays, but not functions or class instances. `toTransfer` replaces what the clone would lose by
// references the receiving thread resolves in its own copy of the same modules (`fromTransfer`):
// a built-in function or operator by its place in the registry, a time window's function (TUMBLE,
// HOP) by its name and time type, an array subscript by its array type, a cast by its types and context,
// a numeric by its text. Anything else that is not plain data (a SQL function's body, a cast whose
// closure the registry does not give back) makes the plan untransferable: it runs where it is.

import { allFunctions, allOperators, resolveCast, type CastContext, type ScalarFunction } from '../../sql/functions.js';
import { Numeric } from '../../sql/numeric.js';
import type { DataType } from '../../sql/types.js';
import { timeWindowFunction } from '../binder/time-window.js';
import { SUBSCRIPT, subscriptFunction } from '../binder/subscript.js';

const CONTEXTS: readonly CastContext[] = ['implicit', 'assignment', 'explicit'];

let registry: { readonly list: readonly ScalarFunction[]; readonly index: Map<ScalarFunction, number> } | undefined;

function functions(): NonNullable<typeof registry> {
  if (registry === undefined) {
    const list = [...allFunctions(), ...allOperators()];
    registry = { list, index: new Map(list.map((fn, index) => [fn, index])) };
  }
  return registry;
}

class Untransferable extends Error {}

function fail(): never {
  throw new Untransferable();
}

/** The transferable copy of `value`, or undefined when some part of it cannot travel. */
export function toTransfer(value: unknown): unknown {
  try {
    return encode(value);
  } catch (error) {
    if (error instanceof Untransferable) return undefined;
    throw error;
  }
}

function encode(value: unknown): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'function' || typeof value === 'symbol') throw new Untransferable();
    return value;
  }
  if (Array.isArray(value)) return value.map(encode);
  if (value instanceof Uint8Array) return value;
  if (value instanceof Numeric) return { $numeric: value.toString() };
  // A built-in function or operator wherever the plan holds one (a call's, an operator's, an aggregate's).
  const index = functions().index.get(value as ScalarFunction);
  if (index !== undefined) return { $fn: index };
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) fail();
  const record = value as Record<string, unknown>;
  if (record.kind === 'Call' && typeof record.fn === 'object' && record.fn !== null) {
    const fn = record.fn as ScalarFunction;
    const index = functions().index.get(fn);
    if (index !== undefined) return { ...encodeFields(record, 'fn'), fn: { $fn: index } };
    // A time window's function (TUMBLE, HOP), made by the binder for its time type.
    if (fn.oid === 0 && timeWindowFunction(fn.name, fn.argumentTypes[0]!) !== undefined) return { ...encodeFields(record, 'fn'), fn: { $window: fn.name, type: fn.argumentTypes[0] } };
    // An array subscript (`a[i]`, a record's field), made by the binder for its array type.
    if (fn.oid === 0 && fn.name === SUBSCRIPT && subscriptFunction(fn.argumentTypes[0]!) === fn) return { ...encodeFields(record, 'fn'), fn: { $subscript: fn.argumentTypes[0] } };
    fail();
  }
  if (record.kind === 'Cast' && typeof record.impl === 'function') {
    const from = (record.input as { type: DataType }).type;
    const to = record.type as DataType;
    // Without a typmod to apply, a cast is its base conversion in every context that allows it
    // (sql/casts.ts resolveCast), a closure made afresh: the explicit context resolves it again.
    const context = CONTEXTS.find((candidate) => resolveCast(from, to, candidate) === record.impl) ?? (to.typmod < 0 && resolveCast(from, to, 'explicit') !== undefined ? 'explicit' : undefined);
    if (context === undefined) fail();
    return { ...encodeFields(record, 'impl'), impl: { $cast: context } };
  }
  return encodeFields(record, undefined);
}

function encodeFields(record: Record<string, unknown>, skip: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(record)) if (key !== skip) out[key] = encode(field);
  return out;
}

/** The plan `toTransfer` copied, with every reference resolved in this thread. */
export function fromTransfer<T>(value: unknown): T {
  return decode(value) as T;
}

function decode(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decode);
  if (value instanceof Uint8Array) return value;
  const record = value as Record<string, unknown>;
  if (typeof record.$numeric === 'string') return Numeric.parse(record.$numeric);
  if (typeof record.$fn === 'number') return functions().list[record.$fn];
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(record)) out[key] = decode(field);
  if (record.kind === 'Call' && typeof (record.fn as { $fn?: number } | undefined)?.$fn === 'number') {
    out.fn = functions().list[(record.fn as { $fn: number }).$fn];
  }
  if (record.kind === 'Call' && typeof (record.fn as { $window?: string } | undefined)?.$window === 'string') {
    const reference = record.fn as { $window: string; type: DataType };
    out.fn = timeWindowFunction(reference.$window, reference.type);
  }
  if (record.kind === 'Call' && typeof (record.fn as { $subscript?: DataType } | undefined)?.$subscript === 'object') {
    out.fn = subscriptFunction((record.fn as { $subscript: DataType }).$subscript);
  }
  if (record.kind === 'Cast' && typeof (record.impl as { $cast?: string } | undefined)?.$cast === 'string') {
    const from = (out.input as { type: DataType }).type;
    out.impl = resolveCast(from, out.type as DataType, (record.impl as { $cast: CastContext }).$cast);
  }
  return out;
}
