// The in-memory StateStore for fast unit tests: the same state tables, commit protocol, time
// travel and retention as the RocksDB store, over a sorted in-memory map instead of RocksDB.

import { MvccStateStore } from './mvcc-state-store.js';
import { MemoryBackend } from './memory-backend.js';

export interface MemoryStateStoreOptions {
  readonly retentionMs?: number;
  readonly memoryLimitBytes?: number;
}

export class MemoryStateStore extends MvccStateStore {
  readonly memory: MemoryBackend;
  constructor(backend: MemoryBackend, options: { retentionMs: number; memoryLimitBytes: number }) {
    super(backend, options);
    this.memory = backend;
  }

  /** What a compaction does on RocksDB: drop versions older than each table's window. */
  async compact(): Promise<void> {
    this.memory.collectGarbage();
  }
}

export function createMemoryStateStore(options: MemoryStateStoreOptions = {}): MemoryStateStore {
  return new MemoryStateStore(new MemoryBackend(), {
    retentionMs: options.retentionMs ?? 10 * 60 * 1000,
    memoryLimitBytes: options.memoryLimitBytes ?? 64 * 1024 * 1024,
  });
}
