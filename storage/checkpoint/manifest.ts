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
//   nodes/<node id>/sst/<incarnation>/<name>   another node's store's SST and blob files (a part)
//   nodes/<node id>/files/<epoch>/<incarnation>/<name>   that store's small files of one checkpoint
//
// An incarnation is one lineage of a local RocksDB directory (created fresh or restored); RocksDB
// file numbers are unique within it, so `sst/<incarnation>/<name>` never names two contents.

import { createHash } from 'node:crypto';
import type { Epoch } from '../../sql/epoch.js';

export const MANIFEST_FORMAT = 1;
export const MANIFEST_PREFIX = 'manifests/';
export const SST_PREFIX = 'sst/';
export const FILES_PREFIX = 'files/';
export const NODES_PREFIX = 'nodes/';

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
  /** Other nodes' stores cut for this checkpoint (a cluster's keyed shares: executor/cluster/); none when absent. */
  readonly parts?: readonly ManifestPart[];
}

/**
 * One keyed share's store on another node, cut once every batch of its epochs up to the
 * checkpoint's was written (perhaps with some of later epochs: versions carry their epochs, so a
 * store started at the checkpoint's epoch reads none newer) and uploaded under `nodes/<node>/` by
 * that node (executor/cluster/share-store-checkpoint.ts).
 */
export interface ManifestPart {
  readonly node: string;
  /** The store's lineage: its file numbers are unique within it. */
  readonly incarnation: string;
  /** The view and the owner index of the share in its keyed fragment's vnode map. */
  readonly view: number;
  readonly owner: number;
  /**
   * The vnodes the share owned at the cut, ascending: the store may also hold entries of vnodes it
   * gave away at an earlier cut of its fragment (they stay until it takes one back), which a
   * restore must leave out.
   */
  readonly vnodes: readonly number[];
  /**
   * The fragment's state tables whose keys carry their vnode (storage/DESIGN.md §2), ascending: a
   * restore takes the runs of `vnodes` of each. Absent for a share of an older view (its tables
   * under vnode 0), whose part no restore can split by vnode.
   */
  readonly tables?: readonly number[];
  /** The share's name, as the leader gave it (a leader that keeps the share's writes until a part holds them finds its part by it). */
  readonly share?: string;
  /** The epoch of the store's last batch written before its cut (the share gets no batch of an epoch it had nothing in). */
  readonly epoch: string;
  /** Every file RocksDB needs to open the cut, as a checkpoint's own. */
  readonly files: readonly ManifestFile[];
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

/** Where a node's parts go: every key under it is that node's. */
export function nodePrefix(node: string): string {
  return `${NODES_PREFIX}${node}/`;
}

/** A node's store's SST or blob file, shared by the parts that name it. */
export function nodeSstKey(node: string, incarnation: string, name: string): string {
  return `${nodePrefix(node)}sst/${incarnation}/${name}`;
}

/** A node's store's small file of the checkpoint at `epoch`. */
export function nodeFileKey(node: string, epoch: Epoch, incarnation: string, name: string): string {
  return `${nodePrefix(node)}files/${epochText(epoch)}/${incarnation}/${name}`;
}

/**
 * What is wrong with `part` as a manifest's part (an answer from another node, or a manifest read
 * back), or undefined: a node id that names one folder, whole numbers where the type says so,
 * vnodes 0-255, files of a name, a key under that node's folder, a size and a SHA-256, CURRENT
 * among them.
 */
export function partProblem(part: unknown): string | undefined {
  if (typeof part !== 'object' || part === null) return 'a part that is not an object';
  const { node, incarnation, view, owner, vnodes, tables, share, epoch, files, totalBytes } = part as Record<string, unknown>;
  if (typeof node !== 'string' || !/^[A-Za-z0-9_.-]{1,128}$/.test(node) || node === '.' || node === '..') return `a part of node ${JSON.stringify(node)}, not a node id`;
  const of = `node ${node}'s part`;
  if (typeof incarnation !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(incarnation)) return `${of} has no store lineage`;
  if (!Number.isSafeInteger(view) || !Number.isSafeInteger(owner) || (owner as number) < 0) return `${of} names no view and owner`;
  if (!Array.isArray(vnodes) || !vnodes.every((vnode) => Number.isInteger(vnode) && vnode >= 0 && vnode < 256)) return `${of} names vnodes outside 0-255`;
  if (tables !== undefined && (!Array.isArray(tables) || !tables.every((id, i) => Number.isInteger(id) && id >= 0 && id < 0xffffffff && (i === 0 || id > (tables[i - 1] as number))))) return `${of} names its tables out of order or outside the table ids`;
  if (share !== undefined && (typeof share !== 'string' || !/^[0-9a-f]{1,64}$/.test(share))) return `${of} names its share wrongly`;
  if (typeof epoch !== 'string' || !/^[0-9]{1,20}$/.test(epoch)) return `${of} has no epoch`;
  if (!Number.isSafeInteger(totalBytes) || (totalBytes as number) < 0) return `${of} has no size`;
  if (!Array.isArray(files) || files.length === 0) return `${of} names no file`;
  for (const file of files as unknown[]) {
    const { name, key, sizeBytes, sha256 } = (typeof file === 'object' && file !== null ? file : {}) as Record<string, unknown>;
    if (typeof name !== 'string' || name === '' || name.includes('/') || name.startsWith('.')) return `${of} names a file without a valid name`;
    if (typeof key !== 'string' || !key.startsWith(nodePrefix(node))) return `${of} has a file outside its folder`;
    if (!Number.isSafeInteger(sizeBytes) || (sizeBytes as number) < 0 || typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) return `${of} has a file without its size and SHA-256`;
  }
  if (!(files as { name: string }[]).some((file) => file.name === 'CURRENT')) return `${of} names no CURRENT file`;
  return undefined;
}

/** Every file a manifest names: its own and its parts'. */
export function manifestFiles(manifest: CheckpointManifest): ManifestFile[] {
  return manifest.parts === undefined ? [...manifest.files] : [...manifest.files, ...manifest.parts.flatMap((part) => part.files)];
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
  if (manifest.parts !== undefined) {
    if (!Array.isArray(manifest.parts)) throw new ManifestError(`manifest ${key} has parts that are not a list`);
    for (const part of manifest.parts as unknown[]) {
      const problem = partProblem(part);
      if (problem !== undefined) throw new ManifestError(`manifest ${key}: ${problem}`);
    }
  }
  return manifest;
}
