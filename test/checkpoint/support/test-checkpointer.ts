// A Checkpointer as the in-process checkpoint suites open it: version `test`, no time-travel
// window (`keepWithinMs` 0), a catalog version `v1` without source offsets unless `describe` says
// otherwise, and fresh metrics unless the test reads its own.

import { CheckpointMetrics } from '../../../storage/checkpoint/checkpoint-metrics.js';
import { Checkpointer, type CheckpointerOptions } from '../../../storage/checkpoint/checkpointer.js';

export type TestCheckpointerOptions = Pick<CheckpointerOptions, 'store' | 'stateDir' | 'stagingDir' | 'objectStore' | 'keepLast'> &
  Partial<Pick<CheckpointerOptions, 'metrics' | 'describe' | 'guard'>>;

export function openTestCheckpointer(options: TestCheckpointerOptions): Checkpointer {
  return Checkpointer.open({
    metrics: new CheckpointMetrics(),
    oxbowVersion: 'test',
    describe: () => ({ catalogVersion: 'v1', sourceOffsets: {} }),
    keepWithinMs: 0,
    ...options,
  });
}
