// Wires checkpoints into a running engine: the Checkpointer over the store's RocksDB, cutting its
// checkpoints while commits go on (the epoch and the metadata are read back from the cut, so they
// are exact without holding the write lock), describing the committed state from the cut's
// metadata (catalog version, source offsets), and the loop that runs them
// every --checkpoint-interval-ms. Returns the engine wrapped so that close() stops checkpoints
// first and, with --durability remote, DML waits for the object store.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckpointLoop } from '../../storage/checkpoint/checkpoint-loop.js';
import type { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import { Checkpointer, type ManifestGuard, type StateDescription } from '../../storage/checkpoint/checkpointer.js';
import type { ObjectStore } from '../../storage/object-store/object-store.js';
import type { RocksStateStore } from '../../storage/rocks-state-store.js';
import type { Engine } from './engine.js';
import type { OxbowEngine } from './open-engine.js';
import { OFFSETS_META_PREFIX } from '../connectors/source-manager.js';
import { CheckpointedEngine } from './remote-durable-engine.js';

const CATALOG_META_KEY = 'catalog';

export interface CheckpointingOptions {
  readonly engine: OxbowEngine;
  readonly store: RocksStateStore;
  readonly objectStore: ObjectStore;
  readonly metrics: CheckpointMetrics;
  readonly dataDir: string;
  readonly stateDir: string;
  readonly checkpointIntervalMs: number;
  readonly durability: 'local' | 'remote';
  readonly keepCheckpoints: number;
  readonly keepWithinMs: number;
  readonly onError?: (error: unknown) => void;
  /** close() abandons a running checkpoint after this long (closing the object store); default: waits. */
  readonly checkpointStopTimeoutMs?: number;
  /** Each phase of each checkpoint as it starts (a crash test kills the server at chosen phases). */
  readonly onPhase?: (phase: string, epoch: bigint) => void;
  /** A cluster's fence on manifest writes (executor/cluster/). */
  readonly guard?: ManifestGuard;
  /** close() takes a last checkpoint within this bound after the writers stop (a cluster leader's clean handover). */
  readonly finalCheckpointWithinMs?: number;
  /** Given the checkpoints' `after(epoch)`: asks for a checkpoint now and resolves to the epoch of the first complete one at or past `epoch` (a leader's keyed shares: executor/cluster/remote-shares.ts). */
  readonly onCheckpoints?: (after: (epoch: bigint) => Promise<bigint>) => void;
}

let versionText: string | undefined;

export function oxbowVersion(): string {
  if (versionText === undefined) {
    try {
      const packageJson = new URL('../../package.json', import.meta.url);
      const candidates = [packageJson, new URL('../../../package.json', import.meta.url)];
      versionText = '0.0.0';
      for (const candidate of candidates) {
        try {
          const parsed = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
          if (parsed.name === 'oxbow' && parsed.version !== undefined) {
            versionText = parsed.version;
            break;
          }
        } catch {
          // Try the next location (source tree or dist/).
        }
      }
    } catch {
      versionText = '0.0.0';
    }
  }
  return versionText;
}

/** The catalog version and source offsets a checkpoint's cut holds, from its metadata. */
function describeCommittedState(getMeta: (key: string) => Uint8Array | undefined): StateDescription {
  const catalog = getMeta(CATALOG_META_KEY);
  const catalogVersion = catalog === undefined ? 'empty' : createHash('sha256').update(catalog).digest('hex').slice(0, 16);
  // Each source keeps its offsets in metadata `source-offsets/<relation id>` (executor/connectors/),
  // committed with the epoch; the manifest records them by the source's qualified name.
  const sourceOffsets: Record<string, string> = {};
  if (catalog !== undefined) {
    let relations: { id: number; schema: string; name: string }[] = [];
    try {
      relations = (JSON.parse(new TextDecoder().decode(catalog)) as { relations?: { id: number; schema: string; name: string }[] }).relations ?? [];
    } catch {
      // An unreadable catalog is the engine's error to report, not the checkpoint's.
    }
    for (const relation of relations) {
      const offsets = getMeta(OFFSETS_META_PREFIX + relation.id);
      if (offsets !== undefined) sourceOffsets[`${relation.schema}.${relation.name}`] = new TextDecoder().decode(offsets);
    }
  }
  return { catalogVersion, sourceOffsets };
}

export function startCheckpointing(options: CheckpointingOptions): Engine {
  const checkpointer = Checkpointer.open({
    store: options.store,
    stateDir: options.stateDir,
    stagingDir: join(options.dataDir, 'checkpoint-staging'),
    objectStore: options.objectStore,
    metrics: options.metrics,
    oxbowVersion: oxbowVersion(),
    describe: describeCommittedState,
    keepLast: options.keepCheckpoints,
    keepWithinMs: options.keepWithinMs,
    ...(options.onPhase === undefined ? {} : { onPhase: options.onPhase }),
    ...(options.guard === undefined ? {} : { guard: options.guard }),
  });
  const loop = new CheckpointLoop(checkpointer, {
    intervalMs: options.checkpointIntervalMs,
    onError: options.onError,
    ...(options.checkpointStopTimeoutMs === undefined ? {} : { stopTimeoutMs: options.checkpointStopTimeoutMs, abandon: () => options.objectStore.close() }),
  });
  // A cluster's leader too: a failover restores the last recorded checkpoint, so sinks and
  // postgres-cdc's slot must not run ahead of it.
  if (options.durability === 'remote' || options.guard !== undefined) options.engine.gateOnRemoteCheckpoints(() => checkpointer.lastEpoch);
  loop.start();
  options.onCheckpoints?.(async (epoch) => {
    await loop.waitForEpoch(epoch);
    return checkpointer.lastEpoch;
  });
  // The first checkpoint (and the sweep of what a crash left behind) happens right after start.
  loop.requestCheckpoint();
  return new CheckpointedEngine(
    options.engine,
    options.store,
    loop,
    options.durability,
    async () => {
      await loop.stop();
      options.objectStore.close();
    },
    options.finalCheckpointWithinMs,
  );
}
