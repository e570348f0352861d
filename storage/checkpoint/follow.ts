// Follows checkpoints as they land, for a warm standby: each new manifest's files that are not
// here yet are downloaded into a local folder (`<dir>/<remote key>`, verified against the
// manifest's size and SHA-256), so following costs what the checkpointer uploaded since the last
// manifest, not the whole state. Files no longer named by the followed manifest are removed.
// `materialize()` turns the followed checkpoint into a RocksDB state directory without touching the
// object store: SST and blob files are hard-linked (immutable, and RocksDB only ever unlinks
// them), the small files (MANIFEST, CURRENT, OPTIONS, WAL, which RocksDB appends to) are copied,
// with a fresh identity that records the remote origin of each shared file (restore.ts does the
// same after a download), so the next checkpoint does not upload them again.

import { existsSync, readFileSync } from 'node:fs';
import { copyFile, link, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Epoch } from '../../sql/epoch.js';
import type { ObjectStore } from '../object-store/object-store.js';
import { newIncarnation, writeIdentity } from './local-identity.js';
import { decodeManifest, encodeManifest, isSharedDataFile, manifestFiles, manifestKey, ManifestError, type CheckpointManifest, type ManifestFile, type ManifestPart } from './manifest.js';
import { forEachConcurrently } from './parallel.js';

const FOLLOWED_FILE = 'followed.json';

export interface FollowResult {
  readonly epoch: Epoch;
  readonly filesDownloaded: number;
  readonly bytesDownloaded: number;
}

export class CheckpointFollower {
  private followedManifest: CheckpointManifest | undefined;
  /** Remote keys whose verified copy is in the folder. */
  private readonly present = new Set<string>();
  private loaded = false;
  /** follow() and materialize() one at a time: a follow removes the files of the checkpoint it replaces, which a materialize links. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly objectStore: ObjectStore,
    /** The folder the followed files live in (created when missing). */
    private readonly dir: string,
    private readonly downloadConcurrency = 4,
  ) {}

  /** The checkpoint whose every file is here, or undefined before the first follow. */
  get followed(): CheckpointManifest | undefined {
    return this.followedManifest;
  }

  get followedEpoch(): Epoch | undefined {
    return this.followedManifest === undefined ? undefined : BigInt(this.followedManifest.epoch);
  }

  /** Reads what an earlier run of this node followed (a restart keeps its warm files). */
  private async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    await mkdir(this.dir, { recursive: true });
    const path = join(this.dir, FOLLOWED_FILE);
    if (existsSync(path)) {
      try {
        const bytes = readFileSync(path);
        const parsed = JSON.parse(bytes.toString('utf8')) as { manifest: { epoch: string } };
        this.followedManifest = decodeManifest(manifestKey(BigInt(parsed.manifest.epoch)), bytes);
      } catch {
        this.followedManifest = undefined;
      }
    }
    // Only files the followed manifest names count as present (a half-written download is not).
    const named = new Set((this.followedManifest === undefined ? [] : manifestFiles(this.followedManifest)).map((file) => file.key));
    for (const entry of await readdir(this.dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const key = relative(this.dir, join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name)).split(sep).join('/');
      if (named.has(key)) this.present.add(key);
    }
    if (this.followedManifest !== undefined && manifestFiles(this.followedManifest).some((file) => !this.present.has(file.key))) this.followedManifest = undefined;
  }

  /**
   * Brings the folder to the checkpoint at `epoch`: downloads the files of its manifest not here
   * yet, then forgets the files it does not name. A failure leaves the previously followed
   * checkpoint whole (its files are removed only after the new one is complete).
   */
  follow(epoch: Epoch): Promise<FollowResult> {
    return this.exclusive(() => this.followNow(epoch));
  }

  /** Runs `work` after every follow and materialize asked for before it. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async followNow(epoch: Epoch): Promise<FollowResult> {
    await this.load();
    if (this.followedEpoch === epoch) return { epoch, filesDownloaded: 0, bytesDownloaded: 0 };
    const key = manifestKey(epoch);
    const manifest = decodeManifest(key, await this.objectStore.getBytes(key));
    let filesDownloaded = 0;
    let bytesDownloaded = 0;
    // Other nodes' parts too (a cluster whose nodes checkpoint their keyed share stores): a
    // promotion takes their vnodes from here (parts.ts).
    const files = manifestFiles(manifest);
    const missing = files.filter((file) => !this.present.has(file.key));
    await forEachConcurrently(missing, this.downloadConcurrency, async (file) => {
      if (file.name.includes('/') || file.name.startsWith('.')) throw new ManifestError(`manifest names an invalid file "${file.name}"`);
      const path = this.pathOf(file);
      await mkdir(dirname(path), { recursive: true });
      await this.objectStore.getFile(file.key, path, { sizeBytes: file.sizeBytes, sha256: file.sha256 });
      this.present.add(file.key);
      filesDownloaded++;
      bytesDownloaded += file.sizeBytes;
    });
    await writeFile(join(this.dir, `${FOLLOWED_FILE}.tmp`), encodeManifest(manifest));
    await rename(join(this.dir, `${FOLLOWED_FILE}.tmp`), join(this.dir, FOLLOWED_FILE));
    this.followedManifest = manifest;
    const named = new Set(files.map((file) => file.key));
    for (const key of [...this.present]) {
      if (named.has(key)) continue;
      this.present.delete(key);
      await rm(join(this.dir, ...key.split('/')), { force: true });
    }
    return { epoch, filesDownloaded, bytesDownloaded };
  }

  /**
   * Replaces `stateDir` with the followed checkpoint (staged in `<stateDir>.restoring`, renamed
   * into place when whole). Returns the manifest, or undefined when nothing was followed.
   */
  materialize(stateDir: string): Promise<CheckpointManifest | undefined> {
    return this.exclusive(() => this.materializeNow(stateDir));
  }

  private async materializeNow(stateDir: string): Promise<CheckpointManifest | undefined> {
    await this.load();
    const manifest = this.followedManifest;
    if (manifest === undefined) return undefined;
    const staging = `${stateDir}.restoring`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    const restoredFiles: Record<string, ManifestFile> = {};
    for (const file of manifest.files) {
      const target = join(staging, file.name);
      if (isSharedDataFile(file.name)) {
        await link(this.pathOf(file), target);
        restoredFiles[file.name] = file;
      } else {
        await copyFile(this.pathOf(file), target);
      }
    }
    writeIdentity(staging, { incarnation: newIncarnation(), restoredFiles });
    await rm(stateDir, { recursive: true, force: true });
    await rename(staging, stateDir);
    return manifest;
  }

  /**
   * One of the followed checkpoint's parts (another node's keyed share store) made into `dir`,
   * which must not exist, the same way: staged in `<dir>.restoring`, renamed when whole.
   */
  materializePart(part: ManifestPart, dir: string): Promise<void> {
    return this.exclusive(() => this.materializePartNow(part, dir));
  }

  private async materializePartNow(part: ManifestPart, dir: string): Promise<void> {
    await this.load();
    if (this.followedManifest?.parts?.includes(part) !== true) throw new Error(`node ${part.node}'s part is not of the followed checkpoint`);
    if (existsSync(dir)) throw new Error(`cannot make node ${part.node}'s part in ${dir}: it exists`);
    const staging = `${dir}.restoring`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    for (const file of part.files) {
      if (file.name.includes('/') || file.name.startsWith('.')) throw new ManifestError(`manifest names an invalid file "${file.name}"`);
      const target = join(staging, file.name);
      if (isSharedDataFile(file.name)) await link(this.pathOf(file), target);
      else await copyFile(this.pathOf(file), target);
    }
    await rename(staging, dir);
  }

  /**
   * A keyed share's store made from the followed checkpoint (executor/cluster/README.md, "Keyed
   * shares"): waits, at most `withinMs`, until this node follows a checkpoint at or past `epoch`
   * (its poll loop follows them as the leader records them), then materializes it into `dir` (SST
   * and blob files hard-linked, as for a promotion). Returns the epoch of the checkpoint `dir`
   * holds; rejects when nothing at or past `epoch` was followed in time, or `stop` says to give up.
   * `withParts`, given the manifest and a maker of its parts (materializePart's), runs before any
   * newer checkpoint is followed, so the parts it asks for are still there: what takes the nodes'
   * state into `dir` (executor/cluster/cluster-node.ts).
   */
  async materializeAtLeast(
    epoch: Epoch,
    dir: string,
    withinMs: number,
    stop: () => boolean = () => false,
    withParts?: (manifest: CheckpointManifest, materializePart: (part: ManifestPart, dir: string) => Promise<void>) => Promise<void>,
  ): Promise<Epoch> {
    await this.exclusive(() => this.load());
    const deadline = Date.now() + withinMs;
    while ((this.followedEpoch ?? -1n) < epoch) {
      if (stop()) throw new Error('the request was withdrawn');
      if (Date.now() >= deadline) {
        throw new Error(`this node follows ${this.followedEpoch === undefined ? 'no checkpoint' : `checkpoint ${this.followedEpoch}`}, not yet checkpoint ${epoch}, after ${withinMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, deadline - Date.now()))));
    }
    const manifest = await this.exclusive(async () => {
      const made = await this.materializeNow(dir);
      if (made === undefined || BigInt(made.epoch) < epoch) throw new Error(`the followed checkpoint went back before checkpoint ${epoch}`);
      await withParts?.(made, (part, partDir) => this.materializePartNow(part, partDir));
      return made;
    });
    return BigInt(manifest.epoch);
  }

  private pathOf(file: ManifestFile): string {
    if (file.key.split('/').some((part) => part === '..' || part === '')) throw new ManifestError(`manifest names an invalid key "${file.key}"`);
    return join(this.dir, ...file.key.split('/'));
  }
}
