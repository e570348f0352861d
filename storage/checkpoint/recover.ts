// Recovery at start: the local data directory when it is intact (RocksDB's WAL replay brings back
// every committed epoch), otherwise the newest complete checkpoint from the object store, and a
// fresh start only when the store holds no checkpoint at all. Records what it did and how long it
// took in the metrics (oxbow_catalog.checkpoints, Prometheus).

import type { ObjectStore } from '../object-store/object-store.js';
import type { CheckpointMetrics } from './checkpoint-metrics.js';
import { isStateDirIntact, restoreFromObjectStore } from './restore.js';

export async function recoverStateDir(options: { stateDir: string; objectStore: ObjectStore; metrics: CheckpointMetrics }): Promise<void> {
  const started = performance.now();
  if (isStateDirIntact(options.stateDir)) {
    options.metrics.recovery = { source: 'local', durationMs: 0, epoch: null, bytesDownloaded: 0, skipped: [] };
    return;
  }
  const result = await restoreFromObjectStore({ objectStore: options.objectStore, stateDir: options.stateDir });
  options.metrics.recovery = {
    source: result.manifest === undefined ? 'fresh' : 'remote',
    durationMs: performance.now() - started,
    epoch: result.manifest === undefined ? null : BigInt(result.manifest.epoch),
    bytesDownloaded: result.bytesDownloaded,
    skipped: result.skipped,
  };
}

/** Completes the recovery record once the store is open (local recovery's time is RocksDB's open). */
export function finishLocalRecovery(metrics: CheckpointMetrics, startedMs: number, epoch: bigint): void {
  const recovery = metrics.recovery;
  if (recovery === undefined || recovery.source !== 'local') return;
  metrics.recovery = { ...recovery, durationMs: performance.now() - startedMs, epoch };
}
