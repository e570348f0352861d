// The cost of the per-operator counters (executor/metrics/operator-stats.ts) that every streaming
// node carries for EXPLAIN ANALYZE, oxbow_catalog.dataflow and /metrics: the same node called bare
// and through instrumentNode (a Proxy, two process.hrtime.bigint() reads and four additions per
// call), on batches of 1, 64 and 1024 changes. The node is the cheapest linear operator there is
// (it copies the batch), so the relative figure is an upper bound for real operators.
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && npm run bench -- operator-stats

import { instrumentNode, OperatorStats } from '../executor/stream/operator-stats.js';
import type { ChangeBatch } from '../executor/stream/change-batch.js';
import type { StreamNode } from '../executor/stream/stream-node.js';

const CALLS = Number(process.env.CALLS ?? 2_000_000) * Number(process.env.BENCH_SCALE ?? 1);
const ROUNDS = 5;

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'operator-stats', metric, value: Number(value.toFixed(3)), unit }));
}

class CopyNode implements StreamNode {
  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    return { rows: changes.rows.slice(), signs: changes.signs.slice() };
  }
  initial(): ChangeBatch {
    return { rows: [], signs: [] };
  }
}

function batchOf(size: number): ChangeBatch {
  const rows = Array.from({ length: size }, (_, i) => [i, `v${i}`]);
  return { rows, signs: rows.map(() => 1) };
}

/** Nanoseconds per call, the best of ROUNDS rounds. */
function timePerCall(node: StreamNode, batch: ChangeBatch, calls: number): number {
  let best = Infinity;
  let sink = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += node.apply(0, batch).rows.length;
    best = Math.min(best, Number(process.hrtime.bigint() - start) / calls);
  }
  if (sink < 0) console.error(sink);
  return best;
}

for (const size of [1, 64, 1024]) {
  const batch = batchOf(size);
  const calls = Math.max(1000, Math.floor(CALLS / Math.max(1, size / 16)));
  const bare = new CopyNode();
  const counted = instrumentNode(new CopyNode(), new OperatorStats());
  timePerCall(bare, batch, calls / 10);
  timePerCall(counted, batch, calls / 10);
  const bareNs = timePerCall(bare, batch, calls);
  const countedNs = timePerCall(counted, batch, calls);
  emit(`batch_${size}_bare_ns_per_batch`, bareNs, 'ns');
  emit(`batch_${size}_counted_ns_per_batch`, countedNs, 'ns');
  emit(`batch_${size}_overhead_ns_per_batch`, countedNs - bareNs, 'ns');
  emit(`batch_${size}_overhead_percent`, ((countedNs - bareNs) / bareNs) * 100, '%');
}
