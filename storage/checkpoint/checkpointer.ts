// Takes checkpoints: cuts a RocksDB checkpoint (hard links) at a committed epoch, uploads the SST
// files the object store does not have yet and the checkpoint's small files, writes the manifest
// last, then applies retention. Also the start-up sweep that removes every remote file no kept
// manifest names (what a failed upload or a crash left behind).
//
// Consistency: the cut runs inside `pause`, the caller's guarantee that no epoch commits meanwhile
// (the engine's write lock), so the epoch read by `describe` is exactly the state the hard links
// hold. A flush runs just before the pause, so the flush RocksDB does inside the checkpoint has
// almost nothing left and the pause lasts milliseconds. Everything slow (hashing, uploads,
// deletes) happens after the pause, while commits go on.
//
// Retention: the newest `keepLast` manifests, plus every manifest within `keepWithinMs` (the time
// travel window) of the newest. Remote files are reference-counted by the kept manifests: a file
// is deleted once no kept manifest names it. Manifests go first, files after, so a crash in
// between leaves unreferenced files (removed by the next sweep), never a manifest without files.

import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Epoch } from '../../sql/epoch.js';
import { epochToMillis } from '../../sql/epoch.js';
import type { RocksDatabase } from '../rocksdb.js';
import { ObjectStoreError, type ObjectStore } from '../object-store/object-store.js';
import type { CheckpointMetrics, CheckpointRecord } from './checkpoint-metrics.js';
import { forEachConcurrently } from './parallel.js';
import { loadOrCreateIdentity, IDENTITY_FILE, type LocalIdentity } from './local-identity.js';
import {
  checkpointFileKey,
  decodeManifest,
  encodeManifest,
  epochOfManifestKey,
  epochText,
  FILES_PREFIX,
  ManifestError,
  manifestKey,
  MANIFEST_FORMAT,
  MANIFEST_PREFIX,
  SST_PREFIX,
  sstKey,
  type CheckpointManifest,
  type ManifestFile,
} from './manifest.js';

/** What the caller knows about the committed state at the moment of the cut. */
export interface CommittedState {
  readonly epoch: Epoch;
  readonly catalogVersion: string;
  readonly sourceOffsets: Readonly<Record<string, string>>;
}

export interface CheckpointerOptions {
  readonly database: RocksDatabase;
  /** The RocksDB directory (holds the identity file). */
  readonly stateDir: string;
  /** Where checkpoints are cut before upload (removed and re-created on each checkpoint). */
  readonly stagingDir: string;
  readonly objectStore: ObjectStore;
  readonly metrics: CheckpointMetrics;
  readonly oxbowVersion: string;
  /** Runs `section` while no epoch can commit. */
  readonly pause: <T>(section: () => Promise<T>) => Promise<T>;
  /** The committed state; called inside `pause`. */
  readonly describe: () => CommittedState;
  /** Newest complete checkpoints to keep (at least 1). */
  readonly keepLast: number;
  /** Also keep every checkpoint this close in time to the newest (time travel); 0: none. */
  readonly keepWithinMs: number;
  /** Files uploaded at once. */
  readonly uploadConcurrency?: number;
}

export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
}

export class Checkpointer {
  private readonly options: CheckpointerOptions;
  private readonly identity: LocalIdentity;
  /** Kept manifests by epoch (decimal text of the epoch as key for ordering via BigInt). */
  private readonly kept = new Map<Epoch, CheckpointManifest>();
  /** Every remote data file (sst/, files/) we know to exist. */
  private readonly remoteFiles = new Set<string>();
  /** Local SST name to the remote copy of that exact file (this incarnation, or restored). */
  private readonly uploaded = new Map<string, ManifestFile>();
  private running = false;
  private swept = false;
  private lastEpochValue: Epoch = 0n;

  private constructor(options: CheckpointerOptions, identity: LocalIdentity) {
    this.options = options;
    this.identity = identity;
  }

  /**
   * Loads the directory's identity. The object store is first touched by the sweep, which the
   * first checkpoint runs (so an unreachable store delays checkpoints, not the start).
   */
  static open(options: CheckpointerOptions): Checkpointer {
    const checkpointer = new Checkpointer(options, loadOrCreateIdentity(options.stateDir));
    options.metrics.location = options.objectStore.location;
    return checkpointer;
  }

  get incarnation(): string {
    return this.identity.incarnation;
  }

  /** Epoch of the newest complete checkpoint (0n: none). */
  get lastEpoch(): Epoch {
    return this.lastEpochValue;
  }

  keptEpochs(): Epoch[] {
    return [...this.kept.keys()].sort((left, right) => (left < right ? 1 : left > right ? -1 : 0));
  }

  /**
   * Reads every manifest, keeps the complete ones retention wants, deletes the rest and every
   * data file no kept manifest names. Unreadable stores fail (nothing is deleted on a guess).
   */
  async sweep(): Promise<{ deletedFiles: number; damagedManifests: string[] }> {
    const store = this.options.objectStore;
    const objects = await store.list('');
    const existing = new Map(objects.map((object) => [object.key, object.sizeBytes]));
    const damaged: string[] = [];
    this.kept.clear();
    for (const object of objects) {
      const epoch = epochOfManifestKey(object.key);
      if (epoch === undefined) continue;
      let manifest: CheckpointManifest;
      try {
        manifest = decodeManifest(object.key, await store.getBytes(object.key));
      } catch (error) {
        if (!(error instanceof ManifestError)) throw error;
        damaged.push(`${object.key}: ${error.message}`);
        continue;
      }
      const missing = manifest.files.find((file) => existing.get(file.key) !== file.sizeBytes);
      if (missing !== undefined) {
        damaged.push(`${object.key}: names ${missing.key}, which is ${existing.has(missing.key) ? 'of the wrong size' : 'missing'}`);
        continue;
      }
      this.kept.set(epoch, manifest);
    }
    for (const object of objects) if (object.key.startsWith(SST_PREFIX) || object.key.startsWith(FILES_PREFIX)) this.remoteFiles.add(object.key);
    // Damaged manifests can never be restored; drop them so their files can be collected.
    await store.delete(damaged.map((entry) => entry.slice(0, entry.indexOf(':'))));
    const deletedFiles = await this.applyRetention();
    for (const manifest of this.kept.values()) if (BigInt(manifest.epoch) > this.lastEpochValue) this.lastEpochValue = BigInt(manifest.epoch);
    this.options.metrics.keptCheckpoints = this.kept.size;
    this.swept = true;
    return { deletedFiles, damagedManifests: damaged };
  }

  /** Drops manifests retention does not keep, then data files no kept manifest names. */
  private async applyRetention(): Promise<number> {
    const epochs = this.keptEpochs();
    const newest = epochs[0];
    const expired: Epoch[] = [];
    epochs.forEach((epoch, index) => {
      const withinWindow = newest !== undefined && this.options.keepWithinMs > 0 && epochToMillis(newest) - epochToMillis(epoch) <= this.options.keepWithinMs;
      if (index >= Math.max(1, this.options.keepLast) && !withinWindow) expired.push(epoch);
    });
    if (expired.length > 0) {
      await this.options.objectStore.delete(expired.map((epoch) => manifestKey(epoch)));
      for (const epoch of expired) this.kept.delete(epoch);
    }
    const referenced = new Set<string>();
    for (const manifest of this.kept.values()) for (const file of manifest.files) referenced.add(file.key);
    const unreferenced = [...this.remoteFiles].filter((key) => !referenced.has(key));
    if (unreferenced.length > 0) {
      await this.options.objectStore.delete(unreferenced);
      for (const key of unreferenced) this.remoteFiles.delete(key);
      this.options.metrics.filesDeletedTotal += unreferenced.length;
    }
    // What is still remote and came from this directory's files need not be uploaded again.
    this.uploaded.clear();
    const ownPrefix = sstKey(this.identity.incarnation, '');
    for (const manifest of this.kept.values()) {
      for (const file of manifest.files) if (file.key.startsWith(ownPrefix)) this.uploaded.set(file.name, file);
    }
    for (const [name, file] of Object.entries(this.identity.restoredFiles)) if (this.remoteFiles.has(file.key)) this.uploaded.set(name, file);
    return unreferenced.length;
  }

  /**
   * One checkpoint. Resolves to its record (status 'complete'), or undefined when nothing committed
   * since the last one; rejects with the cause after recording a failed attempt in the metrics.
   */
  async checkpoint(): Promise<CheckpointRecord | undefined> {
    if (this.running) throw new CheckpointError('a checkpoint is already running');
    this.running = true;
    const startedAtMs = Date.now();
    const started = performance.now();
    let pauseMs = 0;
    let epoch: Epoch = 0n;
    let filesUploaded = 0;
    let bytesUploaded = 0;
    const staging = this.options.stagingDir;
    try {
      if (!this.swept) await this.sweep();
      await rm(staging, { recursive: true, force: true });
      await mkdir(staging, { recursive: true });
      const cutDir = join(staging, 'cut');
      await this.options.database.flush();
      const state = await this.options.pause(async () => {
        const pauseStart = performance.now();
        try {
          const described = this.options.describe();
          if (described.epoch === this.lastEpochValue || described.epoch === 0n) return undefined;
          await this.options.database.checkpoint(cutDir);
          return described;
        } finally {
          pauseMs = performance.now() - pauseStart;
        }
      });
      if (state === undefined) return undefined;
      epoch = state.epoch;

      const names = (await readdir(cutDir)).filter((name) => name !== IDENTITY_FILE).sort();
      const files: ManifestFile[] = new Array(names.length);
      await forEachConcurrently(names, this.options.uploadConcurrency ?? 4, async (name, index) => {
          const path = join(cutDir, name);
          const sizeBytes = (await stat(path)).size;
          const known = name.endsWith('.sst') ? this.uploaded.get(name) : undefined;
          if (known !== undefined && known.sizeBytes === sizeBytes && this.remoteFiles.has(known.key)) {
            files[index] = known;
            return;
          }
          const key = name.endsWith('.sst') ? sstKey(this.identity.incarnation, name) : checkpointFileKey(epoch, name);
          const digest = await this.options.objectStore.putFile(key, path);
          const file: ManifestFile = { name, key, sizeBytes: digest.sizeBytes, sha256: digest.sha256 };
          this.remoteFiles.add(key);
          if (name.endsWith('.sst')) this.uploaded.set(name, file);
          files[index] = file;
          filesUploaded++;
          bytesUploaded += digest.sizeBytes;
      });

      const manifest: CheckpointManifest = {
        format: MANIFEST_FORMAT,
        oxbowVersion: this.options.oxbowVersion,
        epoch: epoch.toString(),
        createdAt: new Date(startedAtMs).toISOString(),
        incarnation: this.identity.incarnation,
        catalogVersion: state.catalogVersion,
        sourceOffsets: state.sourceOffsets,
        files,
        totalBytes: files.reduce((sum, file) => sum + file.sizeBytes, 0),
      };
      const encoded = encodeManifest(manifest);
      await this.options.objectStore.putBytes(manifestKey(epoch), encoded);
      bytesUploaded += encoded.length;
      this.kept.set(epoch, manifest);
      this.lastEpochValue = epoch;
      await rm(staging, { recursive: true, force: true });
      await this.applyRetention();
      const record: CheckpointRecord = {
        epoch,
        startedAtMs,
        durationMs: performance.now() - started,
        status: 'complete',
        filesUploaded,
        bytesUploaded,
        files: files.length,
        bytesReferenced: manifest.totalBytes,
        pauseMs,
        error: null,
      };
      this.options.metrics.keptCheckpoints = this.kept.size;
      this.options.metrics.record(record);
      return record;
    } catch (error) {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
      const message = error instanceof Error ? error.message : String(error);
      this.options.metrics.record({
        epoch,
        startedAtMs,
        durationMs: performance.now() - started,
        status: 'failed',
        filesUploaded,
        bytesUploaded,
        files: 0,
        bytesReferenced: 0,
        pauseMs,
        error: message,
      });
      throw error instanceof ObjectStoreError || error instanceof CheckpointError
        ? error
        : new CheckpointError(`checkpoint at epoch ${epochText(epoch)} failed: ${message}`, { cause: error });
    } finally {
      this.running = false;
    }
  }
}

export { MANIFEST_PREFIX };
