// Per-operator counters of a streaming dataflow, for EXPLAIN ANALYZE, oxbow_catalog.dataflow and
// /metrics: rows in, rows out, batches and time. Counted per batch (one clock read before and one
// after each call into the operator, never per row): the wrapper adds two hrtime calls and a few
// additions to a call that processes a whole batch of changes.

import type { ChangeBatch } from './change-batch.js';
import type { StreamNode } from './stream-node.js';

export class OperatorStats {
  rowsIn = 0;
  rowsOut = 0;
  batches = 0;
  nanos = 0n;

  get seconds(): number {
    return Number(this.nanos) / 1e9;
  }
}

/**
 * `node` with its apply / applyAll / initial calls counted into `stats`. A Proxy, so any other
 * member an operator has (or gains) still reaches the node itself, with `this` the node.
 */
export function instrumentNode(node: StreamNode, stats: OperatorStats): StreamNode {
  const apply = (slot: number, changes: ChangeBatch): ChangeBatch => {
    const start = process.hrtime.bigint();
    const out = node.apply(slot, changes);
    stats.nanos += process.hrtime.bigint() - start;
    stats.batches++;
    stats.rowsIn += changes.rows.length;
    stats.rowsOut += out.rows.length;
    return out;
  };
  const applyAll = (changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch => {
    const start = process.hrtime.bigint();
    const out = node.applyAll!(changesPerSlot);
    stats.nanos += process.hrtime.bigint() - start;
    stats.batches++;
    for (const changes of changesPerSlot) if (changes !== undefined) stats.rowsIn += changes.rows.length;
    stats.rowsOut += out.rows.length;
    return out;
  };
  const initial = (): ChangeBatch => {
    const start = process.hrtime.bigint();
    const out = node.initial();
    stats.nanos += process.hrtime.bigint() - start;
    stats.rowsOut += out.rows.length;
    return out;
  };
  return new Proxy(node, {
    get(target, property) {
      if (property === 'apply') return apply;
      if (property === 'applyAll') return target.applyAll === undefined ? undefined : applyAll;
      if (property === 'initial') return initial;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
