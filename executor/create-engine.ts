// PLACEHOLDER written by the pgwire/CLI work so the composition root compiles; the engine work's
// file replaces it with the real engine (same exported signature).

import type { Engine } from './engine.js';

export interface EngineOptions {
  readonly dataDir: string;
  readonly checkpointUrl: string;
  readonly barrierIntervalMs: number;
  readonly checkpointIntervalMs: number;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  void options;
  throw new Error('createEngine: not yet implemented');
}
