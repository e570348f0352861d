// The checkpoint manifest and the object-store layout. A manifest is written last, after every
// file it names is in the store, so "a manifest exists" means "a complete checkpoint exists". It
// names every file RocksDB needs to open the checkpoint (SST files shared between checkpoints,
// and the per-checkpoint MANIFEST/CURRENT/OPTIONS/WAL files) with size and SHA-256, plus the
// committed epoch, the catalog version, the source offsets and the oxbow version. The JSON carries
// its own SHA-256 so a damaged manifest is refused instead of half-read.
//
// Layout under the store's root:
//   manifests/<epoch, 20 digits>.json          one per complete checkpoint (zero-padded: key order = epoch order)
//   sst/<incarnation>/<NNNNNN>.sst             SST files, immutable, shared by the checkpoints that name them
//   files/<epoch, 20 digits>/<name>            the small non-SST files of one checkpoint
//
// An incarnation is one lineage of a local RocksDB directory (created fresh or restored); RocksDB
// file numbers are unique within it, so `sst/<incarnation>/<name>` never names two contents.

import { createHash } from 'node:crypto';
import type { Epoch } from '../../sql/epoch.js';

export const MANIFEST_FORMAT = 1;
export const MANIFEST_PREFIX = 'manifests/';
export const SST_PREFIX = 'sst/';
export const FILES_PREFIX = 'files/';

export interface ManifestFile {
  /** The file's name inside the RocksDB directory ("000012.sst", "MANIFEST-000009", "CURRENT"). */
  readonly name: string;
  /** Its key in the object store. */
  readonly key: string;
  readonly sizeBytes: number;
  readonly sha256: string;
}

export interface CheckpointManifest {
  readonly format: number;
  readonly oxbowVersion: string;
  /** The committed epoch the checkpoint holds (decimal string: epochs exceed 2^53). */
  readonly epoch: string;
  /** Wall-clock time the checkpoint was taken (ISO 8601). */
  readonly createdAt: string;
  readonly incarnation: string;
  readonly catalogVersion: string;
  /** Source name to its recorded offsets, as the sources wrote them into the store's metadata. */
  readonly sourceOffsets: Readonly<Record<string, string>>;
  readonly files: readonly ManifestFile[];
  /** Sum of the files' sizes: what a restore downloads. */
  readonly totalBytes: number;
}

export function epochText(epoch: Epoch): string {
  return epoch.toString().padStart(20, '0');
}

export function manifestKey(epoch: Epoch): string {
  return `${MANIFEST_PREFIX}${epochText(epoch)}.json`;
}

/**
 * Immutable data files shared by the checkpoints that name them: SST files and blob files (values
 * RocksDB keeps out of the SST files, storage/native/src/options.h). Both are numbered from one
 * RocksDB file-number sequence, so they share the `sst/<incarnation>/` folder without collisions.
 */
export function isSharedDataFile(name: string): boolean {
  return name.endsWith('.sst') || name.endsWith('.blob');
}

export function sstKey(incarnation: string, name: string): string {
  return `${SST_PREFIX}${incarnation}/${name}`;
}

export function checkpointFileKey(epoch: Epoch, name: string): string {
  return `${FILES_PREFIX}${epochText(epoch)}/${name}`;
}

/** The epoch a manifest key names, or undefined for a key that is not a manifest. */
export function epochOfManifestKey(key: string): Epoch | undefined {
  const match = /^manifests\/(\d{20})\.json$/.exec(key);
  return match === null ? undefined : BigInt(match[1]!);
}

function bodyChecksum(manifest: CheckpointManifest): string {
  return createHash('sha256').update(JSON.stringify(manifest)).digest('hex');
}

export function encodeManifest(manifest: CheckpointManifest): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ manifest, sha256: bodyChecksum(manifest) }, null, 1) + '\n');
}

export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

/** Parses and checks a manifest; throws ManifestError when it is damaged or not one. */
export function decodeManifest(key: string, bytes: Uint8Array): CheckpointManifest {
  let parsed: { manifest?: CheckpointManifest; sha256?: string };
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes)) as typeof parsed;
  } catch (error) {
    throw new ManifestError(`manifest ${key} is not valid JSON (damaged or truncated): ${(error as Error).message}`);
  }
  const manifest = parsed.manifest;
  if (manifest === undefined || typeof parsed.sha256 !== 'string') throw new ManifestError(`manifest ${key} has no body or checksum`);
  if (bodyChecksum(manifest) !== parsed.sha256) throw new ManifestError(`manifest ${key} fails its SHA-256 check (damaged)`);
  if (manifest.format !== MANIFEST_FORMAT) throw new ManifestError(`manifest ${key} has format ${manifest.format}; this oxbow reads format ${MANIFEST_FORMAT}`);
  if (epochOfManifestKey(key) !== BigInt(manifest.epoch)) throw new ManifestError(`manifest ${key} records epoch ${manifest.epoch}, not the one its name says`);
  if (!manifest.files.some((file) => file.name === 'CURRENT')) throw new ManifestError(`manifest ${key} names no CURRENT file`);
  return manifest;
}
