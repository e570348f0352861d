// The subscript of a one-dimensional array (`a[i]`, and a record's field `r.f` over oxbow's records
// as arrays): a function the binder makes per array type, one per type in each thread, so that a
// plan sent to another thread (planner/stream/plan-transfer.ts) names it by its array type.

import type { DataType } from '../../sql/types.js';
import { type as scalar } from '../../sql/types.js';
import type { ScalarFunction } from '../../sql/functions.js';
import type { SqlArray, Value } from '../../sql/value.js';

export const SUBSCRIPT = 'array_subscript';

const subscriptCache = new Map<string, ScalarFunction>();

/** The subscript of a one-dimensional array: 1-based (int2vector / oidvector: 0-based), NULL outside the bounds (PostgreSQL). */
export function subscriptFunction(arrayType: DataType): ScalarFunction {
  const key = JSON.stringify(arrayType);
  let fn = subscriptCache.get(key);
  const base = arrayType.vector === undefined ? 1 : 0;
  if (fn === undefined) {
    fn = Object.freeze({
      name: SUBSCRIPT,
      argumentTypes: [arrayType, scalar('int4')],
      returnType: arrayType.element!,
      strict: true,
      volatility: 'immutable' as const,
      impl: ([array, index]: Value[]) => (array as SqlArray).elements[(index as number) - base] ?? null,
      oid: 0,
    });
    subscriptCache.set(key, fn);
  }
  return fn;
}
