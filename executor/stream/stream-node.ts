// The streaming operator contract: a node takes the changes arriving on one of its inputs and
// returns its own output changes, synchronously, writing its state into the open epoch through
// state tables. `initial` is what a node outputs when the view is created, before any input change
// (constant rows; the one row of an aggregate without GROUP BY).

import type { ChangeBatch } from './change-batch.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import type { WorkerStatus } from './parallel/worker-memory.js';

export interface StreamNode {
  apply(slot: number, changes: ChangeBatch): ChangeBatch;
  /** Changes of several inputs at once (index = slot); a node whose inputs interact implements it. */
  applyAll?(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch;
  initial(): ChangeBatch;
  /** The open epoch was aborted: drop whatever in-memory copy of state the node keeps. */
  discard?(): void;
  /** The view was dropped: release in-memory state. */
  dispose?(): void;
  /** Holding (inside an epoch, between chunks): combine the changes and emit nothing until `seal` (hash-aggregate.ts). */
  setHolding?(on: boolean): void;
  /** The net changes held since the last output. */
  seal?(): ChangeBatch;
  /**
   * The plan nodes whose changes this node takes, when they are not its plan's own inputs: a
   * parallel fragment's (parallel/parallel-fragment.ts) inputs below its exchange; the dataflow
   * places these as the node's inputs (slot = index) and leaves the fragment's inner nodes out.
   */
  readonly inputs?: readonly StreamPlan[];
  /** How the node runs when it is not the plain operator (EXPLAIN ANALYZE: a parallel aggregate's exchange and workers). */
  describe?(): string;
  /** A parallel fragment's worker threads: each one's memory and waits (oxbow_catalog.memory, dataflow_workers). */
  workerStatus?(): readonly WorkerStatus[];
}
