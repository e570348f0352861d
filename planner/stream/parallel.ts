// Which streaming plan nodes run in worker threads at --parallelism N > 1
// (executor/stream/PARALLEL.md), decided here so that EXPLAIN and the running dataflow agree: a hash
// aggregate whose group key is plain input columns (its exchange hashes them) and whose expressions
// and types are plain data (they are copied to the workers).

import type { StreamPlan } from './stream-plan.js';

export type HashAggregatePlan = Extract<StreamPlan, { kind: 'StreamHashAggregate' }>;

/** Why a plan node does not run in parallel, or undefined when it does. */
export function serialReason(plan: StreamPlan): string | undefined {
  if (plan.kind !== 'StreamHashAggregate') return 'not a hash aggregate';
  if (plan.groupKeys.length === 0) return 'no group key';
  if (!plan.groupKeys.every((key) => key.kind === 'Column')) return 'a group key is not an input column';
  // State cleaning reads the watermark tables of the view's sources, which only the main thread has.
  if (plan.clean !== undefined) return 'its state is cleaned by watermark';
  if (!isPlainData(workerPlan(plan))) return 'a constant the workers cannot receive';
  return undefined;
}

/** The aggregate as its workers get it: no input subtree or batch template (EXPLAIN's), plain data only. */
export function workerPlan(plan: HashAggregatePlan): HashAggregatePlan {
  return { ...plan, inputs: [], template: undefined as unknown as HashAggregatePlan['template'] };
}

/** The exchange's distribution key in words: the group key's input column names. */
export function distributionText(plan: HashAggregatePlan): string {
  return plan.groupKeys.map((key) => (key.kind === 'Column' ? (plan.inputs[0]!.columns[key.index]?.name ?? `#${key.index}`) : '?')).join(', ');
}

/** True when `value` survives a structured clone unchanged: primitives, plain objects and arrays. */
function isPlainData(value: unknown, seen = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return typeof value !== 'function' && typeof value !== 'symbol';
  if (seen.has(value)) return true;
  seen.add(value);
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (Array.isArray(value)) return value.every((item) => isPlainData(item, seen));
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => isPlainData(item, seen));
}
