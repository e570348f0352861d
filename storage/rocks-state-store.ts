// The state store on RocksDB: `openRocksStateStore({ dir, retentionMs, memoryLimitBytes })` opens
// (or creates) the data directory and returns a StateStore whose committed epochs survive crashes
// (each commit is one WAL-synced write batch). The RocksDB handle stays reachable (`database`) for
// checkpoints (live SST files, hard-link checkpoints) and maintenance (compaction runs version GC).

import { mkdirSync } from 'node:fs';
import { SqlError, SqlState } from '../sql/errors.js';
import type { Epoch } from '../sql/epoch.js';
import { committedEpochKey, metaKey, MvccStateStore } from './mvcc-state-store.js';
import { RocksBackend } from './rocks-backend.js';
import { RocksDatabase, toStorageSqlError, type LiveFile, type OpenOptions } from './rocksdb.js';

export interface StateCheckpoint {
  readonly directory: string;
  /** The last epoch committed in the checkpoint: exactly what a store opened on it reads. */
  readonly epoch: Epoch;
  /** Its SST files (hard links to the live ones), with sizes. */
  readonly files: readonly LiveFile[];
}

export interface RocksStateStoreOptions {
  /** The RocksDB directory (created if missing). */
  readonly dir: string;
  /** Default time-travel retention in milliseconds (--time-travel-retention); default 10 minutes. */
  readonly retentionMs?: number;
  /** Budget of the memory tier (--memory-limit); default 256 MiB. */
  readonly memoryLimitBytes?: number;
  /** RocksDB tuning (block cache, bloom filters, compression...). */
  readonly rocksdb?: OpenOptions;
}

export const DEFAULT_RETENTION_MS = 10 * 60 * 1000;
export const DEFAULT_MEMORY_LIMIT_BYTES = 256 * 1024 * 1024;

export class RocksStateStore extends MvccStateStore {
  readonly database: RocksDatabase;

  constructor(database: RocksDatabase, options: { retentionMs: number; memoryLimitBytes: number; writeBufferBytes?: number }) {
    super(new RocksBackend(database, options.writeBufferBytes), options);
    this.database = database;
  }

  /**
   * A RocksDB checkpoint of the committed state in `directory` (which must not exist): a flush,
   * then hard links to the SST files, off the main thread. Commits may continue meanwhile (no lock
   * is needed), so the epoch it holds is read back from the checkpoint itself (opened read-only),
   * and so is whatever `describe` reads from the metadata committed with that same epoch (each
   * commit writes its epoch and its metadata in one atomic batch, so they always agree).
   */
  async checkpoint<T = undefined>(directory: string, describe?: (getMeta: (key: string) => Uint8Array | undefined) => T): Promise<StateCheckpoint & { readonly described: T }> {
    try {
      // The cut holds only epochs whose write has finished (in flight ones may land in it or not).
      await this.settled();
      await this.database.checkpoint(directory);
      // A small table cache: RocksDB opens at most a quarter of it eagerly (1 file), the rest lazily,
      // so only the files holding the few keys read are touched. The open is synchronous (main thread).
      const copy = RocksDatabase.open(directory, { readOnly: true, createIfMissing: false, maxOpenFiles: 16, blockCacheBytes: 1 << 20 });
      try {
        const epoch = copy.get(committedEpochKey());
        const described = describe === undefined ? (undefined as T) : describe((key) => {
          const value = copy.get(metaKey(key));
          return value === undefined ? undefined : new Uint8Array(value);
        });
        return { directory, epoch: epoch === undefined ? 0n : epoch.readBigUInt64BE(0), files: copy.liveFiles(), described };
      } finally {
        await copy.close();
      }
    } catch (error) {
      throw toStorageSqlError(error, `taking a checkpoint into ${directory}`);
    }
  }

  /** Compacts everything, letting the version GC filter drop history older than each table's window. */
  async compact(): Promise<void> {
    try {
      await this.database.compactRange();
    } catch (error) {
      throw toStorageSqlError(error, 'compacting state');
    }
  }
}

export function openRocksStateStore(options: RocksStateStoreOptions): RocksStateStore {
  try {
    mkdirSync(options.dir, { recursive: true });
  } catch (error) {
    throw new SqlError(SqlState.ioError, `cannot create the data directory ${options.dir}: ${(error as Error).message}`, { cause: error });
  }
  let database: RocksDatabase;
  try {
    database = RocksDatabase.open(options.dir, { blockCacheBytes: 64 << 20, ...options.rocksdb });
  } catch (error) {
    throw toStorageSqlError(error, `opening the data directory ${options.dir}`);
  }
  try {
    return new RocksStateStore(database, {
      retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
      memoryLimitBytes: options.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES,
      ...(options.rocksdb?.writeBufferBytes === undefined ? {} : { writeBufferBytes: options.rocksdb.writeBufferBytes }),
    });
  } catch (error) {
    void database.close();
    throw error;
  }
}
