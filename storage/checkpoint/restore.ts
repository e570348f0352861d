// Restores a RocksDB state directory from the object store: the newest complete checkpoint (or a
// chosen epoch). Every file is downloaded to `<state dir>.restoring`, its size and SHA-256 checked
// against the manifest; a damaged checkpoint (unreadable manifest, missing, truncated or corrupted
// file) is refused and the next older one tried. Only a fully verified copy is renamed into place,
// with a fresh identity (new incarnation, the remote origin of each restored SST file), so a crash
// during a restore leaves either the old state or nothing, never half a database.
//
// An unreachable or forbidden store is not "damaged": the restore fails with that error instead
// of silently falling back to older state.

import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Epoch } from '../../sql/epoch.js';
import { ObjectStoreError, type ObjectStore } from '../object-store/object-store.js';
import { newIncarnation, writeIdentity } from './local-identity.js';
import { forEachConcurrently } from './parallel.js';
import { decodeManifest, epochOfManifestKey, MANIFEST_PREFIX, ManifestError, isSharedDataFile, type CheckpointManifest, type ManifestFile, type ManifestPart } from './manifest.js';

export interface RestoreOptions {
  readonly objectStore: ObjectStore;
  /** The RocksDB directory to create; must not hold a database (callers move an old one aside). */
  readonly stateDir: string;
  /** Restore exactly this checkpoint (no fallback); default: the newest complete one. */
  readonly epoch?: Epoch;
  readonly downloadConcurrency?: number;
}

export interface RestoreResult {
  /** The restored checkpoint, or undefined when the store holds none (a fresh start). */
  readonly manifest: CheckpointManifest | undefined;
  readonly bytesDownloaded: number;
  /** Checkpoints refused on the way, newest first, with the reason. */
  readonly skipped: readonly string[];
}

/** Whether `stateDir` holds a RocksDB database a process can open (its CURRENT file exists). */
export function isStateDirIntact(stateDir: string): boolean {
  return existsSync(join(stateDir, 'CURRENT'));
}

export async function listCheckpointEpochs(store: ObjectStore): Promise<Epoch[]> {
  const epochs: Epoch[] = [];
  for (const object of await store.list(MANIFEST_PREFIX)) {
    const epoch = epochOfManifestKey(object.key);
    if (epoch !== undefined) epochs.push(epoch);
  }
  return epochs.sort((left, right) => (left < right ? 1 : left > right ? -1 : 0));
}

function storeError(error: ObjectStoreError, store: ObjectStore): SqlError {
  const hint =
    error.code === 'AccessDenied'
      ? 'check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket policy'
      : error.code === 'NoSuchBucket'
        ? 'create the bucket or fix --checkpoint-url'
        : 'check that the object store is reachable (AWS_ENDPOINT_URL, network)';
  return new SqlError(SqlState.ioError, `cannot restore from ${store.location}: ${error.message}`, { hint, cause: error });
}

export async function restoreFromObjectStore(options: RestoreOptions): Promise<RestoreResult> {
  const store = options.objectStore;
  const skipped: string[] = [];
  let epochs: Epoch[];
  try {
    epochs = await listCheckpointEpochs(store);
  } catch (error) {
    throw error instanceof ObjectStoreError ? storeError(error, store) : error;
  }
  if (options.epoch !== undefined) {
    if (!epochs.includes(options.epoch)) {
      throw new SqlError(SqlState.undefinedObject, `no checkpoint at epoch ${options.epoch} in ${store.location}`, {
        hint: epochs.length === 0 ? 'the object store holds no checkpoint' : `available epochs: ${epochs.slice(0, 10).join(', ')}`,
      });
    }
    epochs = [options.epoch];
  }
  if (epochs.length === 0) return { manifest: undefined, bytesDownloaded: 0, skipped };
  const target = options.stateDir;
  const staging = `${target}.restoring`;
  await mkdir(dirname(target), { recursive: true });
  for (const epoch of epochs) {
    const key = `${MANIFEST_PREFIX}${epoch.toString().padStart(20, '0')}.json`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    try {
      const manifest = decodeManifest(key, await store.getBytes(key));
      const bytesDownloaded = await downloadAll(store, manifest.files, staging, options.downloadConcurrency ?? 4);
      const restoredFiles: Record<string, ManifestFile> = {};
      for (const file of manifest.files) if (isSharedDataFile(file.name)) restoredFiles[file.name] = file;
      writeIdentity(staging, { incarnation: newIncarnation(), restoredFiles });
      await rm(target, { recursive: true, force: true });
      await rename(staging, target);
      return { manifest, bytesDownloaded, skipped };
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      const damaged = error instanceof ManifestError || (error instanceof ObjectStoreError && (error.code === 'Corrupt' || error.code === 'NotFound'));
      if (!damaged) throw error instanceof ObjectStoreError ? storeError(error, store) : error;
      skipped.push(`${key}: ${(error as Error).message}`);
      if (options.epoch !== undefined) {
        throw new SqlError(SqlState.dataCorrupted, `the checkpoint at epoch ${options.epoch} is damaged: ${(error as Error).message}`, {
          hint: 'choose an older epoch, or omit --epoch to restore the newest complete checkpoint',
        });
      }
    }
  }
  throw new SqlError(SqlState.dataCorrupted, `every checkpoint in ${store.location} is damaged; nothing was restored`, { detail: skipped.join('\n') });
}

/**
 * Downloads one part of a checkpoint (another node's keyed share store, manifest.ts' `ManifestPart`)
 * into `directory`, which must not exist: every file checked against its size and SHA-256, staged
 * in `<directory>.restoring` and renamed into place only when whole. The directory then opens as
 * a RocksDB database holding the store as cut (read it at the checkpoint's epoch, and only the
 * part's vnodes). Resolves to the bytes downloaded; a damaged or missing file rejects and leaves
 * nothing.
 */
export async function restorePart(store: ObjectStore, part: ManifestPart, directory: string, concurrency = 4): Promise<number> {
  if (existsSync(directory)) throw new Error(`cannot restore node ${part.node}'s part into ${directory}: it exists`);
  const staging = `${directory}.restoring`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const bytes = await downloadAll(store, part.files, staging, concurrency);
    await rename(staging, directory);
    return bytes;
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

async function downloadAll(store: ObjectStore, files: readonly ManifestFile[], directory: string, concurrency: number): Promise<number> {
  let bytes = 0;
  await forEachConcurrently(files, concurrency, async (file) => {
      if (file.name.includes('/') || file.name.startsWith('.')) throw new ManifestError(`manifest names an invalid file "${file.name}"`);
      await store.getFile(file.key, join(directory, file.name), { sizeBytes: file.sizeBytes, sha256: file.sha256 });
      bytes += file.sizeBytes;
  });
  return bytes;
}
