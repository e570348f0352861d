// The server's engine: opens the RocksDB state store under `<dataDir>/state` and the engine over
// it (parser, catalog). bin/oxbow.ts calls createEngine with the CLI's options. Checkpoint and
// barrier intervals are accepted here for the streaming engine and checkpoints that come later.

import { join } from 'node:path';
import { openRocksStateStore } from '../storage/rocks-state-store.js';
import type { Engine } from './engine.js';
import { openEngine } from './open-engine.js';

export interface EngineOptions {
  readonly dataDir: string;
  readonly checkpointUrl: string;
  readonly barrierIntervalMs: number;
  readonly checkpointIntervalMs: number;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  const store = openRocksStateStore({
    dir: join(options.dataDir, 'state'),
    retentionMs: options.timeTravelRetentionMs,
    memoryLimitBytes: options.memoryLimitBytes,
  });
  try {
    return await openEngine(store, {
      dataDir: options.dataDir,
      timeTravelRetentionMs: options.timeTravelRetentionMs,
      memoryLimitBytes: options.memoryLimitBytes,
    });
  } catch (error) {
    await store.close();
    throw error;
  }
}
