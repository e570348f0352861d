// A keyed share's seed sent to its node ahead of the cut (README.md, "Keyed shares"): when the
// leader's read of a joining node's seed is done (parallel/keyed-seed.ts), the main thread opens a
// link of its own to the node's remote-share-server.ts, proves the cluster key as every link does
// (remote-share-link.ts), and sends the seed as of E in `stage` frames of whole entries, which
// the node writes to a fresh store of the share's as each arrives (cut and framed one at a time on
// the main thread, the next once the last is flushed), then `stage-end`; the node
// answers `staged` with a name for that store once it is written. The old owners run on meanwhile.
// At the cut the share's relay thread (keyed-share-worker.ts) opens the share with that name and
// only what goes after the seed (the kept epochs' writes, the tables' records); the node takes the
// staged store for the share, writes those, starts the worker, and ends this link. A link that
// fails or has no answer within the deadline leaves the seed to go whole at the cut, as without
// staging; one closed before the cut (the read abandoned) makes the node remove the store.
//
// Or, before any seed is read, the node makes the share's store from the checkpoint it follows
// (`stage-checkpoint`: one at or past the checkpoint the leader took after the safe point, whose
// files the node has: hard links, nothing crosses); it answers `staged` with that checkpoint's
// epoch, which the cut routes the kept writes after, or `refused` (a cold standby, a follow
// behind) (`StoreStaging`). The request names the fragment's state tables: the node drops every
// other table's rows from the store it made (the checkpoint holds the whole database).
// A started share whose node refused, when every state table of the fragment is keyed by vnode,
// gets its store as SST files instead (`stage-files`, `SeedFiles`): the leader exports the share's
// vnodes' key ranges, the fragment's other state tables and the records out of its own database
// at the read's start (over the read's snapshot, on RocksDB's thread pool: nothing read on the
// main thread), sends their bytes in `file` frames (read off the main thread a piece at a time)
// and removes its copies; the node writes them, ingests them into a fresh store and answers
// `staged` with the read's epoch, so the cut treats that store as one made from a checkpoint at it.
// A kept share that gains vnodes on such a node gets their key ranges so (`gain`): the node keeps
// the files by the name it answers, and the share's `add-store` at the cut ingests them.
// Only the seeds of the shares left (an older view's tables, an export that failed) are read and
// sent as above.

import { rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import type { ExportedFile } from '../../storage/rocksdb.js';
import type { Epoch } from '../../sql/epoch.js';
import type { KeyedSeedStaging } from '../stream/parallel/source-fragment.js';
import { answerChallenge, configuredSeedChunkBytes, frame, helloFrame, newNonce, parseAddress, pieceEnd, readFrames, wholeEntryPieces, type GainedVnodes, type Handshake } from './remote-share-link.js';

/** The pieces of a staged seed are at most 16 MiB, cut between entries; OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES sets another bound (`configuredSeedChunkBytes`: tests), validated as the link's. */
function stageChunkBytes(): number {
  const text = process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES'];
  return text === undefined || text === '' ? 16 * 1024 * 1024 : configuredSeedChunkBytes();
}

/** `bytes` (packed entries, storage/write-batch.ts) in pieces of whole entries of about `bound` bytes at most (an entry longer than that alone); none for no bytes. */
export function entryPieces(bytes: Uint8Array, bound: number): Uint8Array[] {
  return bytes.length === 0 ? [] : wholeEntryPieces(bytes, bound);
}

/**
 * A started share's store as SST files the leader exported out of its own database at its seed
 * read's start (KeyedSeedRead.exportRanges of `ownStoreRanges`, the vnodes it will `own`), under
 * `directory`: the node ingests them into a fresh store, which counts as made from a checkpoint at
 * `epoch`. Or a kept share's gained vnodes (`gain`, `gainedRanges`): the node keeps the files for
 * the share's `add-store` at the cut.
 */
export interface SeedFiles {
  readonly files: readonly ExportedFile[];
  readonly directory: string;
  readonly epoch: Epoch;
  readonly tables: readonly number[];
  readonly own?: GainedVnodes;
  readonly gain?: GainedVnodes;
}

/** One node's staged seed, from the leader's side. */
export class SeedStage {
  state: 'sending' | 'staged' | 'failed' | 'closed' = 'sending';
  /** The node's name for the staged store (once staged). */
  id: string | undefined;
  /** Handed to the share at the cut (its `open` names `id`). */
  handedOff = false;
  /** Why it failed (once failed). */
  reason: string | undefined;
  /** The epoch of the checkpoint the node's store was made from (a `stage-checkpoint` staged). */
  epoch: Epoch | undefined;
  /** Bytes of seed sent (0 for a store made from a checkpoint; the files' for a store of files). */
  readonly bytes: number;
  readonly settled: Promise<void>;
  private settle!: () => void;
  private socket: Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private deadline = 0;
  /** The SST files sent (a store of files), removed once sent or given up. */
  private readonly files: SeedFiles | undefined;

  /** A store of SST files the leader exported (not a seed, nor a checkpoint's). */
  get ofFiles(): boolean {
    return this.files !== undefined;
  }

  constructor(
    readonly node: string,
    address: string,
    key: string,
    /**
     * The seed to send, or the checkpoint at or past which the node makes the store from its own
     * files (keeping the fragment's state `tables` only, when given, and of them the vnodes the
     * share will `own`; for a kept share, reading the vnodes it `gain`s out of it).
     */
    seed: Uint8Array | { readonly checkpoint: Epoch; readonly tables?: readonly number[]; readonly gain?: GainedVnodes; readonly own?: GainedVnodes } | SeedFiles,
    private readonly timeoutMs: number,
  ) {
    this.settled = new Promise((resolve) => (this.settle = resolve));
    this.bytes = seed instanceof Uint8Array ? seed.length : 'files' in seed ? seed.files.reduce((sum, file) => sum + file.bytes, 0) : 0;
    if (!(seed instanceof Uint8Array) && 'files' in seed) this.files = seed;
    let target: { host: string; port: number };
    try {
      target = parseAddress(address);
    } catch (error) {
      this.fail((error as Error).message);
      return;
    }
    const nonce = newNonce();
    const socket = connect(target);
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('error', (error) => this.fail(error.message));
    socket.on('close', () => this.fail('the connection closed'));
    socket.on('connect', () => {
      this.progress();
      socket.write(helloFrame(nonce));
    });
    let proved = false;
    readFrames(
      socket,
      (message) => {
        if (this.state !== 'sending') return;
        const answer = message as Handshake;
        if (!proved) {
          const proof = answerChallenge(key, nonce, message);
          if (typeof proof === 'string') return this.fail(proof);
          proved = true;
          this.progress();
          socket.write(proof);
          if (!(seed instanceof Uint8Array) && 'files' in seed) {
            const files = seed.files.map((file) => ({ family: file.family, bytes: file.bytes, entries: file.entries }));
            socket.write(frame({ t: 'stage-files', epoch: seed.epoch.toString(), tables: seed.tables, ...(seed.own === undefined ? {} : { own: seed.own }), ...(seed.gain === undefined ? {} : { gain: seed.gain }), files } satisfies Handshake));
            void this.sendFiles(socket, seed);
            return;
          }
          if (!(seed instanceof Uint8Array)) {
            // The node waits up to the deadline for its follow to reach the checkpoint, then links its files.
            socket.write(frame({ t: 'stage-checkpoint', epoch: seed.checkpoint.toString(), withinMs: this.timeoutMs, ...(seed.tables === undefined ? {} : { tables: seed.tables }), ...(seed.gain === undefined ? {} : { gain: seed.gain }), ...(seed.own === undefined ? {} : { own: seed.own }) } satisfies Handshake), () => {
              this.deadline = Date.now() + 2 * this.timeoutMs;
            });
            return;
          }
          this.sendFrom(socket, seed, 0, stageChunkBytes());
          return;
        }
        if (answer.t === 'refused' && !(seed instanceof Uint8Array)) return this.fail(`refused: ${String(answer.reason)}`);
        // The node reading a kept share's gained vnodes out of its store, or writing the files' bytes: each step gives the deadline again.
        if (answer.t === 'seeding' && !(seed instanceof Uint8Array) && ('files' in seed || seed.gain !== undefined || seed.own !== undefined)) return this.progress();
        if (answer.t !== 'staged' || typeof answer.id !== 'string') return this.fail(`an unexpected ${String(answer.t)} frame`);
        if (!(seed instanceof Uint8Array) && 'files' in seed) {
          if (answer.epoch !== seed.epoch.toString()) return this.fail(`a store of epoch ${String(answer.epoch)}, not of the files' ${seed.epoch}`);
          this.epoch = seed.epoch;
        } else if (!(seed instanceof Uint8Array)) {
          if (typeof answer.epoch !== 'string' || !/^[0-9]{1,20}$/.test(answer.epoch) || BigInt(answer.epoch) < seed.checkpoint) return this.fail(`a store of checkpoint ${String(answer.epoch)}, not at or past ${seed.checkpoint}`);
          this.epoch = BigInt(answer.epoch);
        }
        this.id = answer.id;
        this.state = 'staged';
        this.stopTimer();
        // The node had every byte of the files before it answered: the leader's copies go now, not
        // when the sending loop gets back to its last write's callback.
        this.dropFiles();
        this.settle();
      },
      (error) => this.fail(error.message),
    );
    this.progress();
    this.timer = setInterval(() => {
      if (Date.now() > this.deadline) this.fail(`no answer within ${this.timeoutMs} ms`);
    }, Math.max(10, Math.min(100, timeoutMs / 4)));
  }

  /**
   * Sends the seed's piece of whole entries that starts at `at`, then, once it is flushed, the next
   * (then `stage-end`): the main thread cuts and frames one piece at a time, the statements and
   * epochs running between them, and holds one piece's frame at most. Each piece flushed gives the
   * deadline again: a large seed takes its time.
   */
  private sendFrom(socket: Socket, seed: Uint8Array, at: number, bound: number): void {
    if (this.state !== 'sending' || socket.destroyed) return;
    if (at >= seed.length) {
      socket.write(frame({ t: 'stage-end' } satisfies Handshake), () => this.progress());
      return;
    }
    const end = pieceEnd(seed, at, bound);
    socket.write(frame({ t: 'stage', bytes: seed.subarray(at, end) } satisfies Handshake), (error) => {
      if (error !== undefined && error !== null) return;
      this.progress();
      this.sendFrom(socket, seed, end, bound);
    });
  }

  /**
   * Sends the files' bytes in `file` frames of a stage piece's bound each, read off the main thread
   * one piece at a time, the next once the last is flushed (each flushed piece gives the deadline
   * again). The leader's copies go once sent, or when the stage ends first.
   */
  private async sendFiles(socket: Socket, seed: SeedFiles): Promise<void> {
    const bound = stageChunkBytes();
    try {
      for (const file of seed.files) {
        const handle = await open(file.path, 'r');
        try {
          for (let at = 0; at < file.bytes; ) {
            if (this.state !== 'sending' || socket.destroyed) return;
            const piece = Buffer.allocUnsafe(Math.min(bound, file.bytes - at));
            const { bytesRead } = await handle.read(piece, 0, piece.length, at);
            if (bytesRead !== piece.length) throw new Error(`${file.path} ended at ${at + bytesRead} of its ${file.bytes} bytes`);
            at += bytesRead;
            await new Promise<void>((resolve, reject) => socket.write(frame({ t: 'file', bytes: piece } satisfies Handshake), (error) => (error === undefined || error === null ? resolve() : reject(error))));
            this.progress();
          }
        } finally {
          await handle.close();
        }
      }
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
    } finally {
      this.dropFiles();
    }
  }

  /** Removes the leader's copies of the files (sent, or not needed any more). */
  private dropFiles(): void {
    if (this.files === undefined) return;
    rmSync(this.files.directory, { recursive: true, force: true });
  }

  private progress(): void {
    this.deadline = Date.now() + this.timeoutMs;
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private fail(reason: string): void {
    if (this.state === 'closed') return;
    if (this.state === 'staged') {
      // Before the cut the staged store goes with the link: the seed goes whole at the cut.
      this.state = 'failed';
      this.reason = `the link closed after the seed was staged: ${reason}`;
      this.socket?.destroy();
      return;
    }
    if (this.state !== 'sending') return;
    this.state = 'failed';
    this.reason = reason;
    this.stopTimer();
    this.socket?.destroy();
    this.dropFiles();
    this.settle();
  }

  /**
   * At the cut, with the share's relay thread about to claim the staged store: the node ends this
   * link once it did; one the node has not ended within the deadline is cut off.
   */
  handOff(): void {
    if (this.state !== 'staged') return this.close();
    this.state = 'closed';
    this.handedOff = true;
    this.stopTimer();
    const socket = this.socket;
    if (socket === undefined || socket.destroyed) return;
    socket.removeAllListeners('close');
    socket.removeAllListeners('error');
    socket.on('error', () => undefined);
    setTimeout(() => socket.destroy(), this.timeoutMs).unref();
  }

  /** Closes the link (the read was abandoned, or the seed goes whole): the node removes the staged store. */
  close(): void {
    if (this.state === 'closed') return;
    const settle = this.state === 'sending';
    this.state = 'closed';
    this.stopTimer();
    this.socket?.destroy();
    this.dropFiles();
    if (settle) this.settle();
  }
}

/**
 * The shares' stores made on their nodes before any seed is read (RemoteShares.stageKeyedCheckpoint,
 * stageKeyedFiles): from the checkpoint each follows, once `checkpoint` gives the epoch of one taken
 * after the fragment's safe point (none asked without it); then, for a started share whose node did
 * not make one so, of SST files the leader exported out of its own database at the read's start
 * (`useFiles`). A checkpoint not taken within the deadline, a node that refuses, or an export that
 * fails leaves that share's seed to be read.
 */
export class StoreStaging implements KeyedSeedStaging {
  readonly settled: Promise<void>;
  /** Per node in `keys`' order; none for a node whose share a cut keeps (it needs no store), or that was asked for none yet. */
  stages: (SeedStage | undefined)[] = [];
  /** Why no node was asked (the checkpoint failed or came too late). */
  reason: string | undefined;
  /** Why a share's store was not made of files (its export failed), or from a checkpoint (when it was made of files). */
  private readonly fileNotes: string[] = [];
  private readonly keeps: readonly boolean[];
  private readonly nodes: readonly string[];
  private closed = false;

  constructor(
    /** Per node: `keep` when the cut keeps its share running (no store is made for it); `gain`, the vnodes a kept share gains (read out of the store made for it); `own`, the vnodes a started share owns (the store made for it keeps no other). */
    peers: readonly { readonly node: string; readonly address: string; readonly keep?: boolean; readonly gain?: GainedVnodes; readonly own?: GainedVnodes }[],
    /** The nodes' keys (RemoteShares' peer keys) in order. */
    readonly keys: readonly string[],
    key: string,
    /** The checkpoint the nodes make their stores from, or undefined: none is asked (stores of files only). */
    checkpoint: Promise<Epoch> | undefined,
    timeoutMs: number,
    checkpointWithinMs: number,
    /** The fragment's state tables: each node's store keeps only these (the checkpoint's other tables dropped). */
    tables?: readonly number[],
  ) {
    this.keeps = peers.map((peer) => peer.keep === true);
    this.nodes = peers.map((peer) => peer.node);
    this.stages = peers.map(() => undefined);
    this.settled = (async () => {
      if (checkpoint === undefined) return;
      let timer: NodeJS.Timeout | undefined;
      let epoch: Epoch;
      try {
        epoch = await Promise.race([
          checkpoint,
          new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`no checkpoint within ${checkpointWithinMs} ms`)), checkpointWithinMs))),
        ]);
      } catch (error) {
        this.reason = error instanceof Error ? error.message : String(error);
        return;
      } finally {
        clearTimeout(timer);
      }
      if (this.closed) return;
      this.stages = peers.map((peer) => (peer.keep === true ? undefined : new SeedStage(peer.node, peer.address, key, { checkpoint: epoch, ...(tables === undefined ? {} : { tables }), ...(peer.gain === undefined ? {} : { gain: peer.gain }), ...(peer.own === undefined ? {} : { own: peer.own }) }, timeoutMs)));
      await Promise.all(this.stages.map((stage) => stage?.settled));
    })();
  }

  /**
   * Once `settled`: the shares at `index` get stores of SST files, each once its export (`made`)
   * resolves to the stage sending them (which replaces the share's failed one); resolves once every
   * such stage settled. An export that fails leaves the share's seed to be read.
   */
  useFiles(made: readonly { readonly index: number; readonly stage: Promise<SeedStage> }[]): Promise<void> {
    return Promise.all(
      made.map(async ({ index, stage: making }) => {
        let stage: SeedStage;
        try {
          stage = await making;
        } catch (error) {
          this.fileNotes.push(`node ${this.nodes[index]}'s store of SST files: ${error instanceof Error ? error.message : String(error)}`);
          return;
        }
        if (this.closed) return stage.close();
        // Why no checkpoint made it stays in the cut's log line.
        const before = this.stages[index];
        if (before !== undefined && before.state !== 'staged' && before.reason !== undefined) this.fileNotes.push(`node ${before.node}'s store from a checkpoint: ${before.reason}`);
        before?.close();
        this.stages[index] = stage;
        await stage.settled;
      }),
    ).then(() => undefined);
  }

  /** Per share, the epoch of the checkpoint (or export) its node's store holds, or undefined when its seed is to be read. */
  checkpoints(): (Epoch | undefined)[] {
    return this.keys.map((_key, index) => {
      const stage = this.stages[index];
      return stage?.state === 'staged' ? stage.epoch : undefined;
    });
  }

  filesBytes(share: number): number {
    const stage = this.stages[share];
    return stage?.ofFiles === true ? stage.bytes : 0;
  }

  /** A store made from a checkpoint or of files went before the cut (its link closed). */
  lost(): boolean {
    return present(this.stages).some((stage) => stage.epoch !== undefined && stage.state !== 'staged' && !stage.handedOff);
  }

  handOffStore(share: number): string | undefined {
    const stage = this.stages[share];
    if (stage?.state !== 'staged' || stage.id === undefined) return undefined;
    const id = stage.id;
    stage.handOff();
    return id;
  }

  /** Why a share's store was not made before the read, for the cut's log line. */
  notes(): string[] {
    return [
      ...(this.reason === undefined ? [] : [`no store from a checkpoint: ${this.reason}`]),
      ...present(this.stages)
        .filter((stage) => stage.state !== 'staged' && stage.reason !== undefined)
        .map((stage) => `node ${stage.node}'s store ${stage.ofFiles ? 'of SST files' : 'from a checkpoint'}: ${stage.reason}`),
      ...this.fileNotes,
    ];
  }

  describe(): string {
    const made = present(this.stages).filter((stage) => stage.state === 'staged');
    const files = made.filter((stage) => stage.ofFiles).length;
    const started = this.keeps.filter((keep) => !keep).length;
    return `${made.length - files} of ${started} stores made from checkpoints${files > 0 ? `, ${files} of SST files the leader copied` : ''}${this.notes().length > 0 ? ` (${this.notes().join('; ')})` : ''}`;
  }

  close(): void {
    this.closed = true;
    for (const stage of this.stages) stage?.close();
  }
}

/** The seeds of a cut's shares staged on their nodes (RemoteShares.stageKeyedSeeds), one per node in the order of the shares. */
export class SeedStaging implements KeyedSeedStaging {
  readonly settled: Promise<void>;

  constructor(
    /** Per node in `keys`' order; none for a node whose share the cut keeps (no seed is sent it). */
    readonly stages: readonly (SeedStage | undefined)[],
    /** The nodes' keys (RemoteShares' peer keys) in order: a cut for other nodes uses none. */
    readonly keys: readonly string[],
    /** Why some share's store was not made from a checkpoint (StoreStaging.notes). */
    private readonly notes: readonly string[] = [],
  ) {
    this.settled = Promise.all(stages.map((stage) => stage?.settled)).then(() => undefined);
  }

  describe(): string {
    const stages = present(this.stages);
    const staged = stages.filter((stage) => stage.handedOff).length;
    const failed = stages.filter((stage) => !stage.handedOff && stage.reason !== undefined);
    const fromCheckpoint = stages.filter((stage) => stage.handedOff && stage.epoch !== undefined);
    return (
      `${staged} of ${stages.length} seed${stages.length === 1 ? '' : 's'} sent ahead` +
      `${fromCheckpoint.length > 0 ? ` (${fromCheckpoint.map((stage) => (stage.ofFiles ? `node ${stage.node}'s as SST files of epoch ${stage.epoch}` : `node ${stage.node}'s from its checkpoint ${stage.epoch}`)).join(', ')})` : ''}` +
      `${failed.length > 0 ? ` (${failed.map((stage) => `node ${stage.node}: ${stage.reason}`).join('; ')})` : ''}` +
      `${this.notes.length > 0 ? ` (${this.notes.join('; ')})` : ''}`
    );
  }

  /** Per share, the epoch of the checkpoint its node's store was made from, or undefined when its seed is read (keyed-seed.ts). */
  checkpoints(): (Epoch | undefined)[] {
    return this.stages.map((stage) => (stage?.state === 'staged' ? stage.epoch : undefined));
  }

  /** A share whose store was made from a checkpoint and is gone before the cut (its link closed): no seed was read for it, the cut must not come. */
  lost(): boolean {
    return present(this.stages).some((stage) => stage.epoch !== undefined && stage.state !== 'staged' && !stage.handedOff);
  }

  close(): void {
    for (const stage of this.stages) stage?.close();
  }
}

/** The stages of the nodes whose shares a cut starts. */
function present(stages: readonly (SeedStage | undefined)[]): SeedStage[] {
  return stages.filter((stage): stage is SeedStage => stage !== undefined);
}
