// The number of rows a DML statement affected, for its command tag (INSERT 0 n, UPDATE n,
// DELETE n): recorded by the DML operator on the runtime.

import type { Runtime } from './runtime.js';

const affected = new WeakMap<Runtime, number>();

export function recordAffected(runtime: Runtime, count: number): void {
  affected.set(runtime, count);
}

export function affectedRows(runtime: Runtime): number {
  return affected.get(runtime) ?? 0;
}
