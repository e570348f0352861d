// Takes checkpoints: cuts a RocksDB checkpoint (hard links) of the committed state, uploads the SST
// files the object store does not have yet and the checkpoint's small files, writes the manifest
// last, then applies retention. Also the start-up sweep that removes every remote file no kept
// manifest names (what a failed upload or a crash left behind).
//
// Consistency without pausing processing: the cut (RocksDB's checkpoint: a flush, fsyncs, hard
// links) runs on the libuv pool while commits go on, so which epoch it holds is not known in
// advance. It is read back from the cut itself (opened read-only), together with the catalog
// version and source offsets: each commit writes its epoch and its metadata in one atomic batch,
// so what the cut holds always agrees with itself, and the manifest names exactly that epoch.
// Nothing waits for a checkpoint but the checkpoint; everything slow (hashing, uploads, deletes)
// happens while commits go on.
//
// Retention: the newest `keepLast` manifests, plus every manifest within `keepWithinMs` (the time
// travel window) of the newest. Remote files are reference-counted by the kept manifests: a file
// is deleted once no kept manifest names it. Manifests go first, files after, so a crash in
// between leaves unreferenced files (removed by the next sweep), never a manifest without files.

import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Epoch } from '../../sql/epoch.js';
import { epochToMillis } from '../../sql/epoch.js';
import type { RocksStateStore } from '../rocks-state-store.js';
import { ObjectStoreError, type ObjectStore } from '../object-store/object-store.js';
import { PROBE_PREFIX } from '../object-store/probe.js';
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
  isSharedDataFile,
  sstKey,
  NODES_PREFIX,
  manifestFiles,
  type CheckpointManifest,
  type ManifestFile,
  type ManifestPart,
} from './manifest.js';

/** The committed state a cut holds. */
export interface CommittedState {
  readonly epoch: Epoch;
  readonly catalogVersion: string;
  readonly sourceOffsets: Readonly<Record<string, string>>;
}

/** What only the caller can read from a cut's metadata (the epoch the storage reads itself). */
export type StateDescription = Omit<CommittedState, 'epoch'>;

export interface CheckpointerOptions {
  /** The state store whose RocksDB is checkpointed; commits go on while it is cut. */
  readonly store: RocksStateStore;
  /** The RocksDB directory (holds the identity file). */
  readonly stateDir: string;
  /** Where checkpoints are cut before upload (removed and re-created on each checkpoint). */
  readonly stagingDir: string;
  readonly objectStore: ObjectStore;
  readonly metrics: CheckpointMetrics;
  readonly oxbowVersion: string;
  /** Reads the catalog version and source offsets from a cut's metadata (`getMeta`). */
  readonly describe: (getMeta: (key: string) => Uint8Array | undefined) => StateDescription;
  /** Newest complete checkpoints to keep (at least 1). */
  readonly keepLast: number;
  /** Also keep every checkpoint this close in time to the newest (time travel); 0: none. */
  readonly keepWithinMs: number;
  /** Files uploaded at once. */
  readonly uploadConcurrency?: number;
  /** Told when a checkpoint enters each phase (a trace for operators and the crash test). */
  readonly onPhase?: (phase: CheckpointPhase, epoch: Epoch) => void;
  /** A cluster's fence on manifest writes (executor/cluster/): only the leader completes checkpoints. */
  readonly guard?: ManifestGuard;
}

/**
 * Guards the manifest write: `check` runs before it (throws when this node may not write one),
 * `commit` after it (records the epoch as the last complete checkpoint where the cluster reads it;
 * throws when leadership was lost meanwhile, and the manifest just written is deleted again). A
 * checkpoint is complete, and `lastEpoch` moves, only once `commit` resolved true. `commit`
 * resolves false when the cluster refused the epoch (the manifest is deleted again) and throws when
 * the outcome is unknown (the manifest stays: the cluster's record decides whether it counts).
 */
export interface ManifestGuard {
  check(epoch: Epoch): Promise<void>;
  commit(epoch: Epoch): Promise<boolean>;
  /**
   * Other nodes' parts of the checkpoint at `epoch`, asked once this node's cut is made (they
   * upload while it does) and named by the manifest (their files are reference-counted with this
   * node's). A rejection fails the checkpoint.
   */
  parts?(epoch: Epoch): Promise<readonly ManifestPart[]>;
  /** Called just before this node's cut is made (what `parts` must cover may be known only then). */
  cutting?(): void;
}

/**
 * The phases of one checkpoint, in order: `cut` (RocksDB checkpoint; epoch not known yet, 0),
 * `upload` (SST and small files), `manifest` (its write), `retention` (deletes), `complete`.
 */
export type CheckpointPhase = 'cut' | 'upload' | 'manifest' | 'retention' | 'complete';

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
      const missing = manifestFiles(manifest).find((file) => existing.get(file.key) !== file.sizeBytes);
      if (missing !== undefined) {
        damaged.push(`${object.key}: names ${missing.key}, which is ${existing.has(missing.key) ? 'of the wrong size' : 'missing'}`);
        continue;
      }
      this.kept.set(epoch, manifest);
    }
    for (const object of objects) if (object.key.startsWith(SST_PREFIX) || object.key.startsWith(FILES_PREFIX) || object.key.startsWith(NODES_PREFIX)) this.remoteFiles.add(object.key);
    // Damaged manifests can never be restored; drop them so their files can be collected. Probe
    // objects left by a start killed between the probe's write and its delete go too.
    await store.delete(damaged.map((entry) => entry.slice(0, entry.indexOf(':'))));
    await store.delete(objects.filter((object) => object.key.startsWith(PROBE_PREFIX)).map((object) => object.key));
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
    for (const manifest of this.kept.values()) for (const file of manifestFiles(manifest)) referenced.add(file.key);
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
    let cutMs = 0;
    let epoch: Epoch = 0n;
    let filesUploaded = 0;
    let bytesUploaded = 0;
    const staging = this.options.stagingDir;
    try {
      if (!this.swept) {
        this.options.metrics.running = { epoch: 0n, phase: 'sweep', startedAtMs };
        await this.sweep();
      }
      const store = this.options.store;
      if (store.committedEpoch === this.lastEpochValue || store.committedEpoch === 0n) return undefined;
      await rm(staging, { recursive: true, force: true });
      await mkdir(staging, { recursive: true });
      const cutDir = join(staging, 'cut');
      const cutStart = performance.now();
      this.phase('cut', 0n, startedAtMs);
      this.options.guard?.cutting?.();
      const cut = await store.checkpoint(cutDir, this.options.describe);
      cutMs = performance.now() - cutStart;
      // Nothing new since the last checkpoint (a commit raced the check above the other way).
      if (cut.epoch <= this.lastEpochValue) {
        await rm(staging, { recursive: true, force: true });
        return undefined;
      }
      epoch = cut.epoch;
      const state: CommittedState = { epoch, ...cut.described };
      this.phase('upload', epoch, startedAtMs);
      // Other nodes upload their parts while this node uploads its files (they need only the cut).
      const asked = this.options.guard?.parts?.(epoch);
      asked?.catch(() => undefined);

      const names = (await readdir(cutDir)).filter(isRocksDbFile).sort();
      // What the store really holds (one listing): a file lost remotely since we uploaded it (deleted
      // by hand, a bucket lifecycle rule) is uploaded again, never named by a manifest while missing.
      const present = new Map((await this.options.objectStore.list(SST_PREFIX)).map((object) => [object.key, object.sizeBytes]));
      for (const key of this.remoteFiles) if (key.startsWith(SST_PREFIX) && !present.has(key)) this.remoteFiles.delete(key);
      const files: ManifestFile[] = new Array(names.length);
      await forEachConcurrently(names, this.options.uploadConcurrency ?? 4, async (name, index) => {
          const path = join(cutDir, name);
          const sizeBytes = (await stat(path)).size;
          const known = isSharedDataFile(name) ? this.uploaded.get(name) : undefined;
          if (known !== undefined && known.sizeBytes === sizeBytes && present.get(known.key) === sizeBytes) {
            files[index] = known;
            return;
          }
          const key = isSharedDataFile(name) ? sstKey(this.identity.incarnation, name) : checkpointFileKey(epoch, name);
          const digest = await this.options.objectStore.putFile(key, path);
          const file: ManifestFile = { name, key, sizeBytes: digest.sizeBytes, sha256: digest.sha256 };
          this.remoteFiles.add(key);
          if (isSharedDataFile(name)) this.uploaded.set(name, file);
          files[index] = file;
          filesUploaded++;
          bytesUploaded += digest.sizeBytes;
      });

      const parts = asked === undefined ? undefined : await asked;
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
        ...(parts === undefined || parts.length === 0 ? {} : { parts }),
      };
      const encoded = encodeManifest(manifest);
      this.phase('manifest', epoch, startedAtMs);
      await this.options.guard?.check(epoch);
      await this.options.objectStore.putBytes(manifestKey(epoch), encoded);
      if (this.options.guard !== undefined && !(await this.options.guard.commit(epoch))) {
        await this.options.objectStore.delete([manifestKey(epoch)]).catch(() => undefined);
        throw new CheckpointError(`checkpoint at epoch ${epochText(epoch)} refused: this node is no longer the leader`);
      }
      bytesUploaded += encoded.length;
      // The nodes' files count as this store's from now on: retention deletes them once no kept
      // manifest names them, with what a node sent for a part no manifest took (a failed attempt;
      // the node lists its files again before it names them).
      if (parts !== undefined) for (const object of await this.options.objectStore.list(NODES_PREFIX)) this.remoteFiles.add(object.key);
      this.kept.set(epoch, manifest);
      this.lastEpochValue = epoch;
      await rm(staging, { recursive: true, force: true });
      this.phase('retention', epoch, startedAtMs);
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
        pauseMs: 0,
        cutMs,
        error: null,
      };
      this.options.metrics.keptCheckpoints = this.kept.size;
      this.options.metrics.record(record);
      this.options.metrics.running = undefined;
      this.options.onPhase?.('complete', epoch);
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
        pauseMs: 0,
        cutMs,
        error: message,
      });
      throw error instanceof ObjectStoreError || error instanceof CheckpointError
        ? error
        : new CheckpointError(`checkpoint at epoch ${epochText(epoch)} failed: ${message}`, { cause: error });
    } finally {
      this.running = false;
      this.options.metrics.running = undefined;
    }
  }

  private phase(phase: CheckpointPhase, epoch: Epoch, startedAtMs: number): void {
    this.options.metrics.running = { epoch, phase, startedAtMs };
    this.options.onPhase?.(phase, epoch);
  }
}

/**
 * The files a restore needs: SST, WAL (*.log), MANIFEST-*, CURRENT, OPTIONS-*. Not our identity
 * file, nor the info LOG files RocksDB writes when it opens the cut read-only.
 */
function isRocksDbFile(name: string): boolean {
  if (name === IDENTITY_FILE || name === 'LOG' || name.startsWith('LOG.old')) return false;
  return true;
}

export { MANIFEST_PREFIX };
