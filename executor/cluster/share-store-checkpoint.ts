// A node's part of the leader's checkpoints (README.md, "Each node owning its vnodes' state",
// step 4): each running keyed share's store cut with RocksDB's checkpoint (hard links) and its
// files uploaded under `nodes/<node id>/` of the checkpoint URL, as the leader uploads its own
// (storage/checkpoint/checkpointer.ts): SST and blob files once per store lineage, the small files
// per checkpoint. The leader's manifest names the parts (storage/checkpoint/manifest.ts,
// `ManifestPart`) and its retention deletes the files no kept manifest names.
//
// A cut holds every batch of the share's epochs up to the leader's epoch C (the node writes an
// epoch's batch before it answers the commit, the leader commits C once every owner answered, and
// asks after its own cut at C), and perhaps some of later epochs. Versions carry their epochs, so a
// store started at C reads none newer; the versions C needs are kept by capping the store's
// retention watermarks at the last epoch asked (`capRetentionWatermarks`), never above a later C.

import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { isSharedDataFile, nodeFileKey, nodePrefix, nodeSstKey, partProblem, type ManifestFile, type ManifestPart } from '../../storage/checkpoint/manifest.js';
import type { ObjectStore } from '../../storage/object-store/object-store.js';
import type { RocksDatabase } from '../../storage/rocksdb.js';
import { answerChallenge, frame, helloFrame, newNonce, parseAddress, readFrames, type Handshake } from './remote-share-link.js';

/** What a node's running keyed share's store needs to be cut and named. */
export interface CheckpointedStore {
  readonly database: RocksDatabase;
  readonly path: string;
  /** The store's lineage under `nodes/<node>/sst/` (random, for the store's life). */
  readonly incarnation: string;
  /** Its files in the object store, by name (a file of the same name and size is not sent again). */
  readonly uploaded: Map<string, ManifestFile>;
  /** The share: its view, its owner index and the vnode map it routes by (README.md, step 1). */
  view: number;
  owner: number;
  vnodes: Uint16Array;
  /** The fragment's state tables keyed by vnode, ascending (undefined: an older view's, under vnode 0). */
  readonly tables: readonly number[] | undefined;
  /** The share's name as the leader gave it (undefined: a leader that names none). */
  readonly share: string | undefined;
  /** The epoch of its last batch written (0n before the first). */
  committed: bigint;
  /**
   * The owner index and map before each cut that kept the share (a `remap`), with the last epoch
   * they held for (the last commit asked before it): a checkpoint at or before that epoch names
   * the vnodes the share owned then, even when its store is cut after the remap (the gained
   * vnodes' entries are in it by then, their state at that checkpoint in the leader's own files).
   */
  remaps?: { readonly until: bigint; readonly owner: number; readonly vnodes: Uint16Array }[];
}

/** The owner index and map `store`'s share had at `epoch` (the first remap after it gives those before it). */
export function ownerAt(store: Pick<CheckpointedStore, 'owner' | 'vnodes' | 'remaps'>, epoch: bigint): { readonly owner: number; readonly vnodes: Uint16Array } {
  return store.remaps?.find((remap) => epoch <= remap.until) ?? store;
}

/**
 * The channel on which a leader's cluster node tells its keyed shares' relay threads
 * (keyed-share-worker.ts) each checkpoint recorded with the nodes' parts (a BroadcastChannel:
 * every thread of the process hears it).
 */
export const CHECKPOINTED_CHANNEL = 'oxbow-keyed-share-checkpoints';

/** A checkpoint recorded: its epoch, the object store it is in, and the nodes' parts it names. */
export interface CheckpointedParts {
  readonly epoch: string;
  readonly url: string;
  readonly parts: readonly ManifestPart[];
}

/** A fresh lineage name for a store. */
export function newStoreIncarnation(): string {
  return randomBytes(8).toString('hex');
}

/** Files a restore needs (not RocksDB's info logs). */
function isStoreFile(name: string): boolean {
  return name !== 'LOG' && !name.startsWith('LOG.old');
}

/** The vnodes `owner` holds in `map`, ascending. */
export function ownedVnodes(map: Uint16Array, owner: number): number[] {
  const owned: number[] = [];
  map.forEach((index, vnode) => {
    if (index === owner) owned.push(vnode);
  });
  return owned;
}

/** One request's parts (one per store), and the files and bytes it sent (the rest were there). */
export interface CheckpointedStores {
  readonly parts: ManifestPart[];
  readonly uploadedFiles: number;
  readonly uploadedBytes: number;
}

/**
 * Cuts every store and uploads what the object store does not hold yet, one store after the
 * other; `progress` after each file sent (the leader's deadline runs from the last). The stores'
 * retention watermarks are capped at `epoch` once cut. A store that is no longer `live` (its share
 * closed at a cut of its fragment meanwhile) gives no part, whether before or during its cut.
 */
export async function checkpointStores(
  objectStore: ObjectStore,
  node: string,
  epoch: bigint,
  stores: readonly CheckpointedStore[],
  progress: () => void,
  stopped: () => boolean,
  live: (store: CheckpointedStore) => boolean = () => true,
): Promise<CheckpointedStores> {
  // One listing says what is really there: a file deleted since it was sent (retention after a
  // part that failed, a new leader's sweep) is sent again, never named while missing.
  const present = new Map((await objectStore.list(nodePrefix(node))).map((object) => [object.key, object.sizeBytes]));
  const parts: ManifestPart[] = [];
  let uploadedFiles = 0;
  let uploadedBytes = 0;
  for (const store of stores) {
    if (stopped()) throw new Error('the request ended');
    if (!live(store)) continue;
    const cut = `${store.path}-cut`;
    await rm(cut, { recursive: true, force: true });
    const committed = store.committed;
    const owned = ownerAt(store, epoch);
    try {
      await store.database.checkpoint(cut);
      // Later checkpoints are at later epochs: the remaps they cannot be before are forgotten.
      if (store.remaps !== undefined) store.remaps = store.remaps.filter((remap) => remap.until >= epoch);
      // The next cut is at a later epoch: the versions this cut holds for `epoch` need not stay.
      store.database.capRetentionWatermarks(epoch);
      const files: ManifestFile[] = [];
      for (const name of (await readdir(cut)).filter(isStoreFile).sort()) {
        if (stopped()) throw new Error('the request ended');
        const path = join(cut, name);
        const sizeBytes = (await stat(path)).size;
        const known = isSharedDataFile(name) ? store.uploaded.get(name) : undefined;
        if (known !== undefined && known.sizeBytes === sizeBytes && present.get(known.key) === sizeBytes) {
          files.push(known);
          continue;
        }
        const key = isSharedDataFile(name) ? nodeSstKey(node, store.incarnation, name) : nodeFileKey(node, epoch, store.incarnation, name);
        const digest = await objectStore.putFile(key, path);
        const file: ManifestFile = { name, key, sizeBytes: digest.sizeBytes, sha256: digest.sha256 };
        if (isSharedDataFile(name)) store.uploaded.set(name, file);
        files.push(file);
        uploadedFiles++;
        uploadedBytes += digest.sizeBytes;
        progress();
      }
      parts.push({
        node,
        incarnation: store.incarnation,
        view: store.view,
        owner: owned.owner,
        vnodes: ownedVnodes(owned.vnodes, owned.owner),
        ...(store.tables === undefined ? {} : { tables: store.tables }),
        ...(store.share === undefined ? {} : { share: store.share }),
        epoch: committed.toString(),
        files,
        totalBytes: files.reduce((sum, file) => sum + file.sizeBytes, 0),
      });
    } catch (error) {
      // Closed under the cut or the upload: its share is gone, and so is its part.
      if (live(store)) throw error;
    } finally {
      await rm(cut, { recursive: true, force: true });
    }
  }
  return { parts, uploadedFiles, uploadedBytes };
}

/**
 * The leader's end: asks the node at `address` for its parts of the checkpoint at `epoch` on a link
 * of its own (the handshake of remote-share-link.ts, then `checkpoint-stores`). Rejects when the
 * node refuses, the link fails, or `timeoutMs` passes without a file sent; a malformed part
 * (manifest.ts' `partProblem`) or one of another node is refused too.
 */
export function askNodeParts(node: string, address: string, key: string, epoch: bigint, timeoutMs: number): Promise<ManifestPart[]> {
  return new Promise<ManifestPart[]>((resolve, reject) => {
    let settled = false;
    let deadline = Date.now() + timeoutMs;
    let socket: Socket | undefined;
    const finish = (error: Error | undefined, parts?: ManifestPart[]): void => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      socket?.destroy();
      if (error === undefined) resolve(parts!);
      else reject(new Error(`node ${node} (${address}) gave no part of the checkpoint at epoch ${epoch}: ${error.message}`));
    };
    const timer = setInterval(() => {
      if (Date.now() > deadline) finish(new Error(`no answer within ${timeoutMs} ms`));
    }, Math.max(10, Math.min(100, timeoutMs / 4)));
    let target: { host: string; port: number };
    try {
      target = parseAddress(address);
    } catch (error) {
      return finish(error as Error);
    }
    const nonce = newNonce();
    socket = connect(target);
    socket.setNoDelay(true);
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error('the connection closed')));
    socket.on('connect', () => socket!.write(helloFrame(nonce)));
    let proved = false;
    readFrames(
      socket,
      (message) => {
        if (!proved) {
          const proof = answerChallenge(key, nonce, message);
          if (typeof proof === 'string') return finish(new Error(proof));
          proved = true;
          deadline = Date.now() + timeoutMs;
          socket!.write(proof);
          socket!.write(frame({ t: 'checkpoint-stores', epoch: epoch.toString() } satisfies Handshake));
          return;
        }
        const answer = message as Handshake;
        if (answer.t === 'seeding') {
          deadline = Date.now() + timeoutMs;
          return;
        }
        if (answer.t === 'refused') return finish(new Error(`refused: ${String(answer.reason)}`));
        if (answer.t !== 'checkpointed' || !Array.isArray(answer.parts)) return finish(new Error(`an unexpected ${String(answer.t)} frame`));
        // A part the manifest would be refused for later is refused now (its checkpoint fails, not a restore).
        for (const part of answer.parts as unknown[]) {
          const problem = partProblem(part);
          if (problem !== undefined) return finish(new Error(problem));
          if ((part as ManifestPart).node !== node) return finish(new Error(`a part of node ${(part as ManifestPart).node}`));
        }
        finish(undefined, [...answer.parts]);
      },
      (error) => finish(error),
    );
  });
}
