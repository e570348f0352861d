// A node's end of remote shares (`--remote-shares on`; docs/design.md section 7): a TCP server on
// the node's host whose address the node records in etcd (`shareAddress`). The leader's
// remote-share-worker.ts connects, both ends prove they hold the peer key (remote-share-link.ts),
// and the leader sends a source fragment's worker data; this node then runs the very worker the
// leader runs in its own threads (executor/connectors/source-fragment-worker.ts) in a thread of its
// own, and relays the worker protocol's messages between the connection and that thread: ranges,
// aborts and the durable/failed acknowledgments in, each commit's batch (or error) out, in order.
//
// The worker's store reads nothing the leader committed (the view's rows are blind inserts keyed by
// unit numbers no one wrote before), so it opens a scratch RocksDB of this node
// (`<data-dir>/remote-shares`, emptied at start, shared by every connection): it only encodes
// each epoch's rows into the batch the leader writes. Nothing written here is ever read as the
// view's: the leader's WriteBatch is the only place the rows land.
//
// A keyed fragment's share (keyed-share-worker.ts on the leader; README.md, "Keyed shares") runs
// the fragments' worker (parallel/fragment-worker.ts) over a RocksDB of its own
// (`<data-dir>/remote-keyed-shares/<n>`, removed when the connection ends), first written with the
// seed the leader sent (the fragment's state tables' entries and records): the worker reads the
// committed state of its vnodes there. Each request (unheld rows, a seal, a commit) is answered in
// order, and each commit's batch is written to that store too before it goes to the leader, so the
// store stays the share's committed state while the leader's database stays the whole truth.

import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { ManifestPart } from '../../storage/checkpoint/manifest.js';
import { dropTablesOutside } from '../../storage/key-ranges.js';
import { tableLowerBound, tableUpperBound, vnodeRunRanges } from '../../storage/mvcc-key.js';
import { forEachBatchEntry, WriteBatchBuilder } from '../../storage/write-batch.js';
import type { ObjectStore } from '../../storage/object-store/object-store.js';
import { RocksDatabase, type ExportedFile } from '../../storage/rocksdb.js';
import { WorkerPool } from '../batch/worker-pool.js';
import type { MainToSourceWorker, SourceWorkerToMain } from '../stream/parallel/source-protocol.js';
import { DEFAULT_SEED_STEP_ENTRIES, KeyedSeedRead, keyedByVnode } from '../stream/parallel/keyed-seed.js';
import type { GainedVnodes, MainToWorker, WorkerToMain } from '../stream/parallel/protocol.js';
import { VNODE_COUNT } from '../stream/parallel/vnode.js';
import { WorkerHandle } from '../stream/parallel/worker-handle.js';
import { configuredShareProtocolVersion, formatAddress, frame, gainedRanges, isGainedVnodes, isStagedFiles, newNonce, ownStoreRanges, proofMatches, proofOf, readFrames, versionMismatch, versionOf, wholeEntryPieces, type Handshake, type StagedFile } from './remote-share-link.js';
import { checkpointStores, newStoreIncarnation, type CheckpointedStore } from './share-store-checkpoint.js';

type Forwarded = MainToSourceWorker | MainToWorker;
type Answered = SourceWorkerToMain | WorkerToMain;

/** The messages a keyed share's leader sends (protocol.ts' MainToWorker; `ranges` never: its workers generate nothing). */
const KEYED_MESSAGES: ReadonlySet<string> = new Set(['rows', 'seal', 'commit', 'durable', 'failed', 'abort', 'budget', 'remap', 'close']);

/**
 * A keyed share's frames besides its worker's messages, for the vnodes a cut that kept it gave it
 * (keyed-share-worker.ts' `remap`): a piece of their seed, or the name under which this node keeps
 * their entries read out of its store made from a checkpoint (`stage-checkpoint` with `gain`).
 */
type KeyedAdd = { readonly t: 'add'; readonly bytes: Uint8Array } | { readonly t: 'add-store'; readonly store: string } | { readonly t: 'drop'; readonly gain: GainedVnodes };

/**
 * A kept keyed share's gained vnodes' entries taken out of a store made from a checkpoint ahead of
 * its cut, waiting for its `add-store`: SST files of their key ranges (`exportGained`, tables keyed
 * by vnode), or the entries read into memory (`readGained`, an older view's tables).
 */
type GainedEntries = ({ readonly bytes: Uint8Array } | { readonly files: GainedFiles }) & {
  readonly socket: Socket;
  taken: boolean;
};

/** Gained vnodes' key ranges written as SST files under `directory` (removed once ingested or given up). */
interface GainedFiles {
  readonly directory: string;
  readonly files: readonly ExportedFile[];
  readonly entries: number;
  readonly bytes: number;
}

/** Reading a kept share's gained vnodes out of a store made from a checkpoint: entries per step, the event loop's turn between steps. */
const GAINED_STEP_ENTRIES = DEFAULT_SEED_STEP_ENTRIES;

/** A keyed share's store on this node: its own RocksDB, removed when the share ends. */
interface KeyedStore {
  readonly database: RocksDatabase;
  readonly token: number;
  readonly path: string;
  /** A store made from a checkpoint: the ranges of the tables dropped from it, and of the state tables the other vnodes' entries were deleted from, compacted once its share sent its first batch (compactDropped). */
  dropped?: readonly { lower: Buffer; upper: Buffer }[];
}

/**
 * A keyed share's store made from a checkpoint, the epoch of that checkpoint, the ranges of the
 * tables range-deleted from it (`storeFromCheckpoint`), or what was copied into it
 * (`storeOfOwnVnodes`: the vnodes it owns, the SST files, their entries and bytes, the time).
 */
interface MadeStore {
  readonly store: KeyedStore;
  readonly epoch: bigint;
  readonly dropped: { lower: Buffer; upper: Buffer }[] | undefined;
  readonly copied?: { readonly vnodes: number; readonly files: number; readonly entries: number; readonly bytes: number; readonly ms: number };
}

/**
 * The SST files of a `stage-files` written under `directory` as their bytes come (`file` frames, in
 * the files' order): `<directory>/<family>.sst` each, synchronously (a piece at a time, as a `stage`
 * piece is written to a store). More bytes than the files named is an error.
 */
class FileReceiver {
  /** The files as ingest takes them, and their bytes and entries in all. */
  readonly written: ExportedFile[];
  readonly bytes: number;
  readonly entries: number;
  private at = 0;
  private offset = 0;
  private fd: number | undefined;

  constructor(
    readonly directory: string,
    private readonly files: readonly StagedFile[],
  ) {
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory, { recursive: true });
    this.written = files.map((file) => ({ path: join(directory, `${file.family}.sst`), family: file.family, entries: file.entries, bytes: file.bytes }));
    this.bytes = files.reduce((sum, file) => sum + file.bytes, 0);
    this.entries = files.reduce((sum, file) => sum + file.entries, 0);
  }

  /** Every file's bytes came. */
  get done(): boolean {
    return this.at >= this.files.length;
  }

  write(bytes: Uint8Array): void {
    let from = 0;
    while (from < bytes.length) {
      const file = this.files[this.at];
      if (file === undefined) throw new Error(`more bytes than the ${this.bytes} of the SST files named`);
      this.fd ??= openSync(this.written[this.at]!.path, 'w');
      const length = Math.min(bytes.length - from, file.bytes - this.offset);
      let done = 0;
      while (done < length) done += writeSync(this.fd, bytes, from + done, length - done);
      from += length;
      this.offset += length;
      if (this.offset === file.bytes) {
        closeSync(this.fd);
        this.fd = undefined;
        this.at++;
        this.offset = 0;
      }
    }
  }

  /** Removes the files (ingested, or given up). */
  discard(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/** How long a connection may take to prove itself and open its share, by default. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** A keyed share's seed sent ahead of its cut (keyed-share-stage.ts), waiting for the share that takes it. */
interface StagedSeed {
  readonly store: KeyedStore;
  readonly socket: Socket;
  taken: boolean;
}

/** How many handshake deadlines a staged seed waits for its share (the leader's cut comes at a safe point of the fragment). */
const STAGED_HOLD_DEADLINES = 6;

/** Threads a node keeps idle for keyed shares' workers (warmed for a seed on its way, or freed by a share that ended). */
const KEYED_IDLE_THREADS = 4;

/** A seed sent at `open` is written in pieces of whole entries of this many bytes at most, each off the main thread. */
const SEED_WRITE_PIECE_BYTES = 16 * 1024 * 1024;

/** The largest OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS. */
export const MAX_SEED_WRITE_DELAY_MS = 60_000;

/**
 * OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS (tests: a node slow to write its seed): how long this node
 * waits before writing each piece of a seed sent at `open`, and of the vnodes a kept share gains
 * (`add`, `add-store`); unset or empty, 0; a whole number of
 * milliseconds up to MAX_SEED_WRITE_DELAY_MS; anything else an error naming the variable (bin/cli.ts
 * refuses it at start with the same rule).
 */
export function seedWriteDelayMs(text: string | undefined): number {
  if (text === undefined || text === '') return 0;
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value > MAX_SEED_WRITE_DELAY_MS) {
    throw new Error(`OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: "${text}" is not a whole number of milliseconds from 0 to ${MAX_SEED_WRITE_DELAY_MS}`);
  }
  return value;
}

export interface RemoteShareServerOptions {
  readonly host: string;
  readonly dataDir: string;
  /** The cluster's node-to-node key (hex). */
  readonly peerKey: () => string | undefined;
  /** The source fragments' worker script. */
  readonly workerScript: () => URL;
  /** The keyed fragments' worker script (parallel/fragment-worker.ts). */
  readonly keyedWorkerScript: () => URL;
  readonly log: (line: string) => void;
  /** How long a connection may take to prove itself and open its share (default 10 s). */
  readonly handshakeTimeoutMs?: number;
  /**
   * Makes `dir` a store of the checkpoint this node follows, at or past `epoch`, once it follows
   * one within `withinMs` (cluster-node.ts: storage/checkpoint/follow.ts' materializeAtLeast); resolves
   * to that checkpoint's epoch. Absent, or rejecting (a cold standby, a follow behind): `refused`.
   * `vnodes` (flags): those the store is made for (a started share's own, a kept share's gained),
   * of which it takes the other nodes' state in the checkpoint's parts (OXBOW_KEYED_NODE_STATE).
   */
  readonly checkpointSeed?: (epoch: bigint, dir: string, withinMs: number, stop: () => boolean, vnodes?: Uint8Array) => Promise<bigint>;
  /** The share protocol version this node speaks (tests); OXBOW_REMOTE_SHARE_PROTOCOL_VERSION's or this build's by default. */
  readonly protocolVersion?: number;
  /**
   * The leader's checkpoints name this node's parts (OXBOW_KEYED_NODE_CHECKPOINTS=on): each keyed
   * share's store keeps the versions a later checkpoint needs, and `checkpoint-stores` cuts and
   * uploads them (share-store-checkpoint.ts) under `nodes/<node>/` of the object store. Absent: the
   * request is refused and the stores' watermarks are their tables'.
   */
  readonly storeCheckpoints?: { readonly node: string; readonly objectStore: () => Promise<ObjectStore> };
}

/**
 * The entries of the vnodes flagged in `vnodes` of a keyed share's store, read to the end in steps
 * (keyed-seed.ts' KeyedSeedRead: each row's vnode from its vnode columns, a flagged vnode's keys
 * with every version, the tables' records), the event loop's turn between steps (and `afterStep`,
 * awaited, after each) and `progress` every 250 ms (the leader's deadline); stops with the
 * connection. The read is done: `finish` it.
 */
async function readVnodes(store: KeyedStore, vnodes: GainedVnodes, stop: () => boolean, progress: () => void, afterStep?: (read: KeyedSeedRead) => Promise<void>): Promise<KeyedSeedRead> {
  // Owner 1 (the one share) gets the flagged vnodes; owner 0 stands for every other (nowhere).
  const map = new Uint16Array(VNODE_COUNT);
  for (let vnode = 0; vnode < VNODE_COUNT; vnode++) map[vnode] = vnodes.vnodes[vnode] === 1 ? 1 : 0;
  const read = new KeyedSeedRead(store.database, vnodes.tables, vnodes.stateVnodes, 1, 2, 0n, map);
  try {
    let last = Date.now();
    while (!read.step(GAINED_STEP_ENTRIES)) {
      if (stop()) throw new Error('the connection ended');
      if (Date.now() - last > 250) {
        progress();
        last = Date.now();
      }
      if (afterStep !== undefined) await afterStep(read);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return read;
  } catch (error) {
    read.close();
    throw error;
  }
}

/**
 * Deletes the entries of the vnodes flagged in `vnodes` from `tables`, whose keys carry their vnode
 * (keyed-seed.ts `keyedByVnode`): one range delete per run of flagged vnodes per table
 * (storage/mvcc-key.ts `vnodeRange`), written at once, nothing read; the ranges' size as RocksDB
 * estimates it (files and memtables) is what the log can say of them.
 */
async function dropVnodeRanges(database: RocksDatabase, tables: readonly { readonly tableId: number }[], vnodes: Uint8Array): Promise<{ ranges: number; bytes: number }> {
  const deletes = new WriteBatchBuilder();
  let ranges = 0;
  let bytes = 0;
  for (const table of tables) {
    for (const range of vnodeRunRanges(table.tableId, vnodes)) {
      bytes += database.approximateSize(range.lower, range.upper);
      deletes.deleteRange(range.lower, range.upper);
      ranges++;
    }
  }
  if (ranges > 0) await database.writeAsync(Buffer.from(deletes.view()));
  return { ranges, bytes };
}

/** What a drop deleted, for the log: its range deletes and their size, and the rows and entries deleted key by key (an older view's tables). */
interface Dropped {
  readonly ranges: number;
  readonly bytes: number;
  /** Tables deleted key by key (keys under vnode 0): undefined when there was none. */
  readonly hashed?: { readonly rows: number; readonly entries: number };
}

/**
 * `work` (a call on RocksDB's thread pool, whose progress cannot be seen from here), `progress`
 * every 250 ms while it runs for `withinMs` at most: a copy that hangs then lets the leader's
 * deadline lapse, and the leader gives the node up.
 */
async function whileTicking<T>(work: Promise<T>, progress: () => void, withinMs: number): Promise<T> {
  const until = Date.now() + withinMs;
  const ticker = setInterval(() => {
    if (Date.now() < until) progress();
  }, 250);
  try {
    return await work;
  } finally {
    clearInterval(ticker);
  }
}

/** The entries and bytes of SST files written together. */
function fileTotals(files: readonly ExportedFile[]): { entries: number; bytes: number } {
  let entries = 0;
  let bytes = 0;
  for (const file of files) {
    entries += file.entries;
    bytes += file.bytes;
  }
  return { entries, bytes };
}

/** "3 range deletes, about 12.5 MiB" or "1,200 rows, 2,400 entries, no range delete", or both. */
function droppedText(dropped: Dropped): string {
  const parts: string[] = [];
  if (dropped.hashed !== undefined) parts.push(`${dropped.hashed.rows} rows, ${dropped.hashed.entries} entries`);
  parts.push(dropped.ranges === 0 ? 'no range delete' : `${dropped.ranges} range delete${dropped.ranges === 1 ? '' : 's'}, about ${(dropped.bytes / (1024 * 1024)).toFixed(1)} MiB`);
  return parts.join(', ');
}

export class RemoteShareServer {
  private readonly server: Server;
  private database: RocksDatabase | undefined;
  private token: number | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly handles = new Set<WorkerHandle<Forwarded, Answered>>();
  /** Units generated and batches handed over, for every connection (oxbow_catalog.nodes). */
  units = 0;
  /** Rows of keyed shares whose epochs were handed over, for every connection. */
  rows = 0;
  /** Keyed shares opened since the start (each its own store directory). */
  private keyedShares = 0;
  /** Keyed shares' stores being closed and removed. */
  private readonly releasing = new Set<Promise<void>>();
  /** Keyed shares' stores being released: a compaction of dropped tables (compactDropped) stops. */
  private readonly releasedStores = new WeakSet<KeyedStore>();
  /** Seeds sent ahead, by the name `staged` gave them, until a share takes one or its link ends. */
  private readonly staged = new Map<string, StagedSeed>();
  /** Gained vnodes' entries read out of stores made from checkpoints, by name, waiting for their kept shares' `add-store`. */
  private readonly gained = new Map<string, GainedEntries>();
  /** Keyed shares' stores open now (`metrics`). */
  private readonly openStores = new Set<KeyedStore>();
  /** Running keyed shares' stores, which `checkpoint-stores` cuts. */
  private readonly runningStores = new Set<CheckpointedStore>();
  /** The `checkpoint-stores` requests, one at a time. */
  private checkpointing: Promise<void> = Promise.resolve();
  /** Stores cut for the leader's checkpoints and the bytes of their files sent, since the start. */
  private checkpointedStores = 0;
  private checkpointUploadedBytes = 0;
  /** Bytes of SST files copied out of checkpoints (a share's own vnodes, a kept share's gained ones), and ingested into shares' stores, since the start. */
  private copiedBytes = 0;
  private ingestedBytes = 0;
  address = '';
  /**
   * The keyed shares' worker threads: one is started and loads the fragments' worker script as soon
   * as a seed starts coming (sent ahead, or at `open`), so the share's worker starts on it once the
   * seed is written without a thread or its modules to load then.
   */
  private readonly keyedPool = new WorkerPool({}, KEYED_IDLE_THREADS);
  /** OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS (tests). */
  private readonly seedWriteDelay = seedWriteDelayMs(process.env['OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS']);
  /** The share protocol version this node speaks: a `hello` of another is refused at once. */
  private readonly version: number;

  constructor(private readonly options: RemoteShareServerOptions) {
    this.version = options.protocolVersion ?? configuredShareProtocolVersion();
    this.server = createServer((socket) => this.accept(socket));
  }

  async listen(): Promise<string> {
    // Keyed shares' stores (and gained vnodes' files) live only as long as their connections: what a
    // killed node left behind is removed before any connection comes.
    rmSync(join(this.options.dataDir, 'remote-keyed-shares'), { recursive: true, force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, this.options.host, () => resolve());
    });
    const bound = this.server.address();
    if (bound === null || typeof bound === 'string') throw new Error('the remote share server has no TCP address');
    this.address = formatAddress(bound.address, bound.port);
    return this.address;
  }

  private scratch(): { token: number; path: string } {
    if (this.database === undefined) {
      const path = join(this.options.dataDir, 'remote-shares');
      rmSync(path, { recursive: true, force: true });
      mkdirSync(path, { recursive: true });
      this.database = RocksDatabase.open(path);
      this.token = this.database.share();
    }
    return { token: this.token!, path: this.database.path };
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let stage: 'hello' | 'proof' | 'open' | 'receiving' | 'materializing' | 'staged' | 'seeding' | 'running' | 'refused' | 'checkpointing' = 'hello';
    let nonce: Uint8Array | undefined;
    let handle: WorkerHandle<Forwarded, Answered> | undefined;
    /** A keyed share's own store (the connection opened a keyed fragment's share). */
    let keyed: KeyedStore | undefined;
    /** That store as `checkpoint-stores` cuts it, once its worker runs (with storeCheckpoints). */
    let running: CheckpointedStore | undefined;
    /** Answers leave in the order their commits came. */
    let answers: Promise<void> = Promise.resolve();
    /** Units posted since the last commit. */
    let pendingUnits = 0;
    /** A keyed share's seed's pieces before its `open` (remote-share-link.ts' openFrames: whole entries each). */
    const seedPieces: Uint8Array[] = [];
    /** A keyed share's seed being written (from its `open` until its worker starts), and the messages that came meanwhile. */
    let seedWrites: Promise<void> | undefined;
    const early: MainToWorker[] = [];
    /** A keyed share's piece of an `add` being written, the messages that came meanwhile (in order), and the bytes of the `add` so far. */
    let adding: Promise<void> | undefined;
    const afterAdd: (MainToWorker | KeyedAdd)[] = [];
    let addedBytes = 0;
    /** The bytes of SST files an `add-store` ingested into the share's store since its last remap. */
    let ingestedBytes = 0;
    /** The epoch of the last commit the share was asked (a remap's store checkpoints name the vnodes before it up to there). */
    let lastCommitAsked = 0n;
    /** The seed this connection sends ahead of a cut (`stage` frames), and its name once all is written. */
    let staging: StagedSeed | undefined;
    let stagedAs: string | undefined;
    /** The name of the gained vnodes' entries this connection read out of a store from a checkpoint (`stage-checkpoint` with `gain`). */
    let gainedAs: string | undefined;
    /** The SST files of a `stage-files` being written as their bytes come (removed when the link ends first), their ingest once all came, and its end. */
    let receiving: FileReceiver | undefined;
    let filesDone: (() => Promise<void>) | undefined;
    let filing: Promise<void> | undefined;
    let timer = setTimeout(() => fail(new Error('no share opened within the handshake deadline')), this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS);
    const fail = (error: Error): void => {
      if (!socket.destroyed) this.options.log(`oxbow: a remote share connection from ${socket.remoteAddress ?? '?'} ended: ${error.message}`);
      socket.destroy();
    };
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
      if (running !== undefined) this.runningStores.delete(running);
      if (stagedAs !== undefined) this.staged.delete(stagedAs);
      receiving?.discard();
      if (gainedAs !== undefined) {
        const entries = this.gained.get(gainedAs);
        this.gained.delete(gainedAs);
        if (entries !== undefined && !entries.taken && 'files' in entries) rmSync(entries.files.directory, { recursive: true, force: true });
      }
      // A seed sent ahead that no share took goes with its link.
      if (staging !== undefined && !staging.taken) this.release(filing ?? Promise.resolve(), staging.store);
      if (handle !== undefined) {
        this.handles.delete(handle);
        const closed = handle.close();
        if (keyed !== undefined) this.release(closed, keyed);
      } else if (keyed !== undefined) {
        this.release(seedWrites ?? Promise.resolve(), keyed);
      }
    });
    const send = (message: unknown): void => {
      if (!socket.destroyed) socket.write(frame(message));
    };
    /**
     * A keyed share's messages: each request (unheld rows, a seal, a commit) is answered in order;
     * each commit's batch is written to the share's store as well, so the worker reads its own
     * committed rows there once its caches let them go.
     */
    const relayKeyed = (message: MainToWorker | KeyedAdd): void => {
      const worker = handle! as WorkerHandle<MainToWorker, WorkerToMain>;
      // What comes after a piece of an `add` waits until it is written (the worker must read it).
      if (adding !== undefined) return void afterAdd.push(message);
      const goOn = (): void => {
        adding = undefined;
        while (adding === undefined && afterAdd.length > 0 && !socket.destroyed) relayKeyed(afterAdd.shift()!);
      };
      if (message.t === 'drop') {
        // A kept share that takes back vnodes it held: its store's entries of every vnode it held and
        // does not own go first (a key the leader deleted and dropped since would read again).
        if (!isGainedVnodes(message.gain)) return fail(new Error('a drop frame without its vnodes'));
        const gain = message.gain;
        const started = Date.now();
        adding = this.dropVnodes(keyed!, gain, () => socket.destroyed, () => send({ t: 'seeding' } satisfies Handshake)).then((dropped) => {
          if (socket.destroyed) return;
          let vnodes = 0;
          for (const flag of gain.vnodes) vnodes += flag;
          this.options.log(`oxbow: a keyed share's store dropped the entries of ${vnodes} vnode${vnodes === 1 ? '' : 's'} it did not own (${droppedText(dropped)}, in ${Date.now() - started} ms)`);
          send({ t: 'seeding' } satisfies Handshake);
          goOn();
        }, (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))));
        return;
      }
      if (message.t === 'add-store') {
        const entries = typeof message.store === 'string' ? this.gained.get(message.store) : undefined;
        if (entries === undefined) return fail(new Error('no gained vnodes read out of a checkpoint under that name (their link ended)'));
        this.gained.delete(message.store);
        entries.taken = true;
        entries.socket.end();
        if ('files' in entries) {
          // SST files of the gained vnodes' ranges: ingested at once (sst-files.h), nothing through
          // the store's memtable or log; they are newer than every entry the store holds.
          const gained = entries.files;
          adding = (async () => {
            try {
              if (this.seedWriteDelay > 0) await new Promise((resolve) => setTimeout(resolve, this.seedWriteDelay));
              if (socket.destroyed) return;
              await keyed!.database.ingest(gained.files);
              ingestedBytes += gained.bytes;
              this.ingestedBytes += gained.bytes;
              send({ t: 'seeding' } satisfies Handshake);
            } finally {
              rmSync(gained.directory, { recursive: true, force: true });
            }
          })().then(goOn, (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))));
          return;
        }
        const bytes = entries.bytes;
        adding = (async () => {
          for (const piece of wholeEntryPieces(bytes, SEED_WRITE_PIECE_BYTES)) {
            if (socket.destroyed) return;
            if (this.seedWriteDelay > 0) await new Promise((resolve) => setTimeout(resolve, this.seedWriteDelay));
            if (socket.destroyed) return;
            await keyed!.database.writeAsync(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
            addedBytes += piece.length;
            send({ t: 'seeding' } satisfies Handshake);
          }
        })().then(goOn, (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))));
        return;
      }
      if (message.t === 'add') {
        if (!(message.bytes instanceof Uint8Array)) return fail(new Error('an add frame without its bytes'));
        const bytes = message.bytes;
        const delay = this.seedWriteDelay;
        adding = (delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : Promise.resolve()).then(() => keyed!.database.writeAsync(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length))).then(
          () => {
            addedBytes += bytes.length;
            // Each piece written gives the leader's deadlines again.
            send({ t: 'seeding' } satisfies Handshake);
            goOn();
          },
          (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))),
        );
        return;
      }
      if (message.t === 'remap' && running !== undefined) {
        // The epochs up to the last commit asked ran by the map before this one.
        (running.remaps ??= []).push({ until: lastCommitAsked, owner: running.owner, vnodes: running.vnodes });
        running.owner = message.worker;
        running.vnodes = message.vnodes;
      }
      if (message.t === 'commit') lastCommitAsked = BigInt(message.epoch);
      if (message.t === 'remap' && message.gained === true) {
        const ingested = ingestedBytes > 0 ? `, ${ingestedBytes} bytes of SST files ingested` : '';
        this.options.log(`oxbow: a keyed share took vnodes${message.regained === true ? ', some it held before,' : ' it never held'} (${addedBytes} bytes of their seed written to its store${ingested})`);
        addedBytes = 0;
        ingestedBytes = 0;
      }
      if (message.t === 'close') {
        void answers.finally(() => socket.end());
        return;
      }
      if (!KEYED_MESSAGES.has(message.t)) return fail(new Error(`an unknown message ${String((message as { t?: unknown }).t)}`));
      let rows = 0;
      if (message.t === 'rows') for (const input of message.inputs) rows += input?.count ?? 0;
      if (message.t === 'abort') pendingUnits = 0;
      const request = message.t === 'seal' || message.t === 'commit' || (message.t === 'rows' && !message.holding);
      if (!request) {
        pendingUnits += rows;
        worker.post(message);
        return;
      }
      pendingUnits += rows;
      const answer = worker.request(message, `its answer to a ${message.t}`);
      const store = keyed!;
      const counted = message.t === 'commit' ? pendingUnits : 0;
      if (message.t === 'commit') pendingUnits = 0;
      const committing = message.t === 'commit' ? BigInt(message.epoch) : undefined;
      const cut = running;
      answers = answers.then(async () => {
        try {
          const answered = await worker.answered(answer);
          if (answered.t === 'batch') {
            store.database.write(Buffer.from(answered.bytes, 0, answered.length));
            this.rows += counted;
            if (cut !== undefined && committing !== undefined) cut.committed = committing;
          }
          send(answered);
          // After the share's first batch (off the first epoch's path): the dropped tables' files go.
          if (answered.t === 'batch' && store.dropped !== undefined) {
            const ranges = store.dropped;
            store.dropped = undefined;
            this.compactDropped(store, ranges);
          }
        } catch (error) {
          const failed = error as { code?: string; message?: string };
          send({ t: 'error', code: failed.code ?? 'XX000', message: failed.message ?? String(error) });
        }
      });
    };
    const startWorker = (script: URL, workerData: object, pool?: WorkerPool): void => {
      handle = new WorkerHandle<Forwarded, Answered>(script, workerData, "a remote share's worker", [], {}, undefined, pool);
      this.handles.add(handle);
      // A worker that ends ends the connection: the leader runs the share itself at once.
      void handle.exited.then(() => fail(new Error("the share's worker thread ended")));
      stage = 'running';
    };
    readFrames(
      socket,
      (message) => {
        const received = message as Handshake | MainToSourceWorker;
        if (stage === 'refused') return;
        if (stage === 'running' && keyed !== undefined) return relayKeyed(received as MainToWorker | KeyedAdd);
        // The worker starts once its seed is written: what the leader sends meanwhile waits for it.
        if (stage === 'seeding') return void early.push(received as MainToWorker);
        if (stage === 'running') {
          const worker = handle! as WorkerHandle<MainToSourceWorker, SourceWorkerToMain>;
          const forwarded = received as MainToSourceWorker;
          if (forwarded.t === 'commit') {
            const answer = worker.request(forwarded, `its batch of epoch ${forwarded.epoch}`);
            const units = pendingUnits;
            pendingUnits = 0;
            answers = answers.then(async () => {
              try {
                const batch = await worker.answered(answer);
                this.units += units;
                send(batch);
              } catch (error) {
                const failed = error as { code?: string; message?: string };
                send({ t: 'error', code: failed.code ?? 'XX000', message: failed.message ?? String(error) });
              }
            });
          } else if (forwarded.t === 'ranges' || forwarded.t === 'abort' || forwarded.t === 'durable' || forwarded.t === 'failed') {
            if (forwarded.t === 'ranges') for (let at = 0; at + 2 < forwarded.ranges.length; at += 3) pendingUnits += forwarded.ranges[at + 2]! - forwarded.ranges[at + 1]!;
            if (forwarded.t === 'abort') pendingUnits = 0;
            worker.post(forwarded);
          } else if (forwarded.t === 'close') {
            void answers.finally(() => socket.end());
          } else {
            fail(new Error(`an unknown message ${String((forwarded as { t?: unknown }).t)}`));
          }
          return;
        }
        const key = this.options.peerKey();
        if (key === undefined) return fail(new Error('this node has not joined the cluster yet'));
        if (stage === 'hello' && received.t === 'hello' && versionOf(received) !== this.version) {
          // A leader of another version: refused at once, with this node's version, so it fails the link at once too.
          const reason = versionMismatch(versionOf(received), this.version);
          send({ t: 'refused', reason: `this node speaks share protocol version ${this.version}`, version: this.version } satisfies Handshake);
          this.options.log(`oxbow: a remote share connection from ${socket.remoteAddress ?? '?'} is refused: ${reason}`);
          clearTimeout(timer);
          stage = 'refused';
          socket.end();
          setTimeout(() => socket.destroy(), 1000).unref();
        } else if (stage === 'hello' && received.t === 'hello' && received.nonce instanceof Uint8Array && received.nonce.length === 32) {
          nonce = newNonce();
          send({ t: 'challenge', nonce, proof: proofOf(key, 'server', received.nonce), version: this.version } satisfies Handshake);
          stage = 'proof';
        } else if (stage === 'proof' && received.t === 'proof' && proofMatches(key, 'client', nonce!, received.proof)) {
          stage = 'open';
        } else if (stage === 'open' && received.t === 'stage' && received.bytes instanceof Uint8Array && seedPieces.length === 0) {
          // A seed sent ahead: each piece (whole entries) is written as it comes.
          try {
            if (staging === undefined) {
              staging = { store: this.keyedStore(new Uint8Array(0)), socket, taken: false };
              this.warmKeyedWorker();
            }
            if (received.bytes.length > 0) staging.store.database.write(Buffer.from(received.bytes.buffer, received.bytes.byteOffset, received.bytes.length));
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          timer.refresh();
        } else if (stage === 'open' && received.t === 'stage-end' && seedPieces.length === 0) {
          try {
            if (staging === undefined) staging = { store: this.keyedStore(new Uint8Array(0)), socket, taken: false };
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          stagedAs = randomBytes(16).toString('hex');
          this.staged.set(stagedAs, staging);
          stage = 'staged';
          // The share that takes it comes at the leader's cut; a seed not taken by then goes.
          clearTimeout(timer);
          timer = setTimeout(() => fail(new Error('no share took the seed sent ahead within its deadline')), STAGED_HOLD_DEADLINES * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
          this.options.log(`oxbow: a keyed share's seed sent ahead is written (${staging.store.path}); it waits for its share`);
          send({ t: 'staged', id: stagedAs } satisfies Handshake);
        } else if (stage === 'open' && received.t === 'stage-checkpoint' && typeof received.epoch === 'string' && /^[0-9]{1,20}$/.test(received.epoch) && typeof received.withinMs === 'number' && received.withinMs >= 0 && (received.tables === undefined || isTableList(received.tables)) && (received.gain === undefined || isGainedVnodes(received.gain)) && (received.own === undefined || isGainedVnodes(received.own)) && seedPieces.length === 0 && staging === undefined) {
          // The share's store from the checkpoint this node follows (no seed crosses): a fresh store
          // as of it, of the fragment's state tables only when the leader named them, and of those
          // the vnodes the share will own only when it named them (copied out of the checkpoint
          // when every table is keyed by vnode, else the others' entries deleted, so the store holds
          // what a seed would); for a kept share's gained vnodes, their entries taken out of it (the
          // store removed then).
          const gain = received.gain;
          const own = received.own;
          stage = 'materializing';
          clearTimeout(timer);
          const withinMs = Math.min(received.withinMs, 10 * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
          timer = setTimeout(() => fail(new Error('the store from a checkpoint was not made within its deadline')), withinMs + (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
          // A started share's own vnodes of tables keyed by vnode are key ranges: copied out of the
          // checkpoint into a store of their own (`storeOfOwnVnodes`), nothing else in it.
          const copyOwn = own !== undefined && gain === undefined && received.tables !== undefined && own.tables.every((table) => keyedByVnode(table, own.stateVnodes));
          const progress = (): void => {
            timer.refresh();
            send({ t: 'seeding' } satisfies Handshake);
          };
          const made = copyOwn
            ? this.storeOfOwnVnodes(BigInt(received.epoch), withinMs, () => socket.destroyed, received.tables!, own!, progress)
            : // A store only read for a kept share's gained vnodes runs no share: nothing of it is dropped.
              this.storeFromCheckpoint(BigInt(received.epoch), withinMs, () => socket.destroyed, gain === undefined ? received.tables : undefined, (gain ?? own)?.vnodes);
          void made.then(
            async ({ store, epoch, dropped, copied }) => {
              if (socket.destroyed) return this.release(Promise.resolve(), store);
              if (gain !== undefined) {
                const started = Date.now();
                let entries: { bytes: Uint8Array; rows: number } | GainedFiles;
                const progress = (): void => {
                  timer.refresh();
                  send({ t: 'seeding' } satisfies Handshake);
                };
                try {
                  entries = gain.tables.every((table) => keyedByVnode(table, gain.stateVnodes)) ? await this.exportGained(store, gain, progress, 10 * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS)) : await this.readGained(store, gain, () => socket.destroyed, progress);
                } catch (error) {
                  const reason = error instanceof Error ? error.message : String(error);
                  this.options.log(`oxbow: a keyed share's gained vnodes could not be read out of checkpoint ${epoch}: ${reason}`);
                  send({ t: 'refused', reason } satisfies Handshake);
                  socket.end();
                  return;
                } finally {
                  this.release(Promise.resolve(), store);
                }
                if (socket.destroyed) {
                  if ('files' in entries) rmSync(entries.directory, { recursive: true, force: true });
                  return;
                }
                gainedAs = randomBytes(16).toString('hex');
                this.gained.set(gainedAs, 'files' in entries ? { files: entries, socket, taken: false } : { bytes: entries.bytes, socket, taken: false });
                stage = 'staged';
                clearTimeout(timer);
                timer = setTimeout(() => fail(new Error('no share took the vnodes read out of a checkpoint within its deadline')), STAGED_HOLD_DEADLINES * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
                const what = 'files' in entries ? `copied out of checkpoint ${epoch} into ${entries.files.length} SST file${entries.files.length === 1 ? '' : 's'} (${entries.entries} entries, ${entries.bytes} bytes` : `read out of checkpoint ${epoch} (${entries.rows} rows, ${entries.bytes.length} bytes`;
                this.options.log(`oxbow: a keyed share's gained vnodes are ${what}, in ${Date.now() - started} ms); they wait for its share`);
                send({ t: 'staged', id: gainedAs, epoch: epoch.toString() } satisfies Handshake);
                return;
              }
              let owned = '';
              if (copied !== undefined) {
                owned = `; the ${copied.vnodes} vnode${copied.vnodes === 1 ? '' : 's'} it owns copied into ${copied.files} SST file${copied.files === 1 ? '' : 's'} (${copied.entries} entries, ${copied.bytes} bytes) in ${copied.ms} ms, the others left out`;
              } else if (own !== undefined) {
                const started = Date.now();
                const others = new Uint8Array(VNODE_COUNT);
                let count = 0;
                for (let vnode = 0; vnode < VNODE_COUNT; vnode++) {
                  if (own.vnodes[vnode] === 1) continue;
                  others[vnode] = 1;
                  count++;
                }
                try {
                  const removed = await this.dropVnodes(store, { vnodes: others, tables: own.tables, stateVnodes: own.stateVnodes }, () => socket.destroyed, () => {
                    timer.refresh();
                    send({ t: 'seeding' } satisfies Handshake);
                  });
                  owned = `; the ${count} vnode${count === 1 ? '' : 's'} it does not own deleted (${droppedText(removed)}) in ${Date.now() - started} ms`;
                  // Their deletes go with the dropped tables' ranges, compacted after the share's first batch.
                  if (removed.ranges > 0 || (removed.hashed?.entries ?? 0) > 0) store.dropped = [...(store.dropped ?? []), ...own.tables.map((table) => ({ lower: tableLowerBound(table.tableId), upper: tableUpperBound(table.tableId) }))];
                } catch (error) {
                  this.release(Promise.resolve(), store);
                  if (socket.destroyed) return;
                  const reason = error instanceof Error ? error.message : String(error);
                  this.options.log(`oxbow: a keyed share's store from checkpoint ${epoch} could not drop the vnodes it does not own: ${reason}`);
                  send({ t: 'refused', reason } satisfies Handshake);
                  socket.end();
                  return;
                }
                if (socket.destroyed) return this.release(Promise.resolve(), store);
              }
              staging = { store, socket, taken: false };
              stagedAs = randomBytes(16).toString('hex');
              this.staged.set(stagedAs, staging);
              stage = 'staged';
              clearTimeout(timer);
              timer = setTimeout(() => fail(new Error('no share took the store made from a checkpoint within its deadline')), STAGED_HOLD_DEADLINES * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
              const tablesText = copied !== undefined ? `, ${received.tables!.length} state table${received.tables!.length === 1 ? '' : 's'} copied` : dropped === undefined ? '' : `, ${received.tables!.length} state table${received.tables!.length === 1 ? '' : 's'} kept, the others dropped by ${dropped.length} range delete${dropped.length === 1 ? '' : 's'}`;
              this.options.log(`oxbow: a keyed share's store is made from checkpoint ${epoch} (${store.path}${tablesText}${owned}); it waits for its share`);
              send({ t: 'staged', id: stagedAs, epoch: epoch.toString() } satisfies Handshake);
            },
            (error: unknown) => {
              const reason = error instanceof Error ? error.message : String(error);
              this.options.log(`oxbow: a keyed share's store from checkpoint ${received.epoch} is refused: ${reason}`);
              send({ t: 'refused', reason } satisfies Handshake);
              socket.end();
            },
          );
        } else if (stage === 'open' && received.t === 'stage-files' && typeof received.epoch === 'string' && /^[0-9]{1,20}$/.test(received.epoch) && isTableList(received.tables) && isStagedFiles(received.files) && isFilesVnodes(received.own, received.gain) && seedPieces.length === 0 && staging === undefined) {
          // A started share's store as SST files the leader copied out of its database at the read's
          // start: each file written as its bytes come, then all ingested into a fresh store; or a
          // kept share's gained vnodes, kept by name for its `add-store` as a checkpoint's would be.
          const epoch = received.epoch;
          const started = Date.now();
          const forGain = received.gain !== undefined;
          let store: StagedSeed | undefined;
          try {
            if (forGain) {
              receiving = new FileReceiver(join(this.options.dataDir, 'remote-keyed-shares', `${++this.keyedShares}-gained`), received.files);
            } else {
              store = staging = { store: this.keyedStore(new Uint8Array(0)), socket, taken: false };
              receiving = new FileReceiver(`${staging.store.path}-files`, received.files);
            }
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          if (!forGain) this.warmKeyedWorker();
          stage = 'receiving';
          timer.refresh();
          const files = receiving;
          const whole = (): string => `${files.written.length} SST file${files.written.length === 1 ? '' : 's'} the leader copied out of its database at epoch ${epoch}`;
          const hold = (what: string): void => {
            stage = 'staged';
            clearTimeout(timer);
            timer = setTimeout(() => fail(new Error(`no share took the ${what} within its deadline`)), STAGED_HOLD_DEADLINES * (this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS));
          };
          const complete = async (): Promise<void> => {
            const came = Date.now();
            if (forGain) {
              // Held by name until the share's `add-store` ingests them, or their link ends.
              receiving = undefined;
              gainedAs = randomBytes(16).toString('hex');
              this.gained.set(gainedAs, { files: { directory: files.directory, files: files.written, entries: files.entries, bytes: files.bytes }, socket, taken: false });
              hold('gained vnodes of SST files');
              this.options.log(`oxbow: a keyed share's gained vnodes came as ${whole()} (${files.entries} entries, ${files.bytes} bytes received in ${came - started} ms); they wait for its share`);
              send({ t: 'staged', id: gainedAs, epoch } satisfies Handshake);
              return;
            }
            try {
              if (this.seedWriteDelay > 0) await new Promise((resolve) => setTimeout(resolve, this.seedWriteDelay));
              if (socket.destroyed) return;
              await store!.store.database.ingest(files.written);
            } catch (error) {
              const reason = error instanceof Error ? error.message : String(error);
              this.options.log(`oxbow: a keyed share's store of SST files from the leader is refused: ${reason}`);
              send({ t: 'refused', reason } satisfies Handshake);
              socket.end();
              return;
            } finally {
              files.discard();
            }
            if (socket.destroyed) return;
            this.ingestedBytes += files.bytes;
            stagedAs = randomBytes(16).toString('hex');
            this.staged.set(stagedAs, store!);
            hold('store of SST files');
            this.options.log(`oxbow: a keyed share's store is made of ${whole()} (${store!.store.path}; ${files.bytes} bytes received in ${came - started} ms, ingested in ${Date.now() - came} ms); it waits for its share`);
            send({ t: 'staged', id: stagedAs, epoch } satisfies Handshake);
          };
          filesDone = complete;
          if (files.done) {
            stage = 'materializing';
            filing = complete();
          }
        } else if (stage === 'receiving' && received.t === 'file' && received.bytes instanceof Uint8Array) {
          try {
            receiving!.write(received.bytes);
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          timer.refresh();
          send({ t: 'seeding' } satisfies Handshake);
          if (receiving!.done) {
            stage = 'materializing';
            filing = filesDone!();
          }
        } else if (stage === 'open' && received.t === 'checkpoint-stores' && typeof received.epoch === 'string' && /^[0-9]{1,20}$/.test(received.epoch) && seedPieces.length === 0 && staging === undefined) {
          clearTimeout(timer);
          stage = 'checkpointing';
          this.checkpointStores(BigInt(received.epoch), send, () => socket.destroyed).then(
            (parts) => {
              send({ t: 'checkpointed', parts } satisfies Handshake);
              socket.end();
            },
            (error: unknown) => {
              const reason = error instanceof Error ? error.message : String(error);
              this.options.log(`oxbow: this node's keyed share stores were not checkpointed at epoch ${received.epoch}: ${reason}`);
              send({ t: 'refused', reason } satisfies Handshake);
              socket.end();
            },
          );
        } else if (stage === 'open' && received.t === 'seed' && received.bytes instanceof Uint8Array && staging === undefined) {
          if (seedPieces.length === 0) this.warmKeyedWorker();
          seedPieces.push(received.bytes);
          // A large seed takes its time: each piece gives the handshake's deadline again, and the leader's.
          timer.refresh();
          send({ t: 'seeding' } satisfies Handshake);
        } else if (stage === 'open' && staging === undefined && received.t === 'open' && typeof received.data === 'object' && received.data !== null) {
          clearTimeout(timer);
          let shareData = received.data as object;
          if ((shareData as { kind?: unknown }).kind !== 'keyed') {
            let database: { token: number; path: string };
            try {
              database = this.scratch();
            } catch (error) {
              return fail(error instanceof Error ? error : new Error(String(error)));
            }
            startWorker(this.options.workerScript(), { ...shareData, ...database });
            return;
          }
          const { kind: _kind, seed, staged: stagedName, ...rest } = shareData as { kind: string; seed: Uint8Array; staged?: unknown };
          shareData = rest;
          try {
            if (stagedName !== undefined) {
              // The seed was sent ahead: this share takes its store, with what goes after it written last.
              const ahead = typeof stagedName === 'string' ? this.staged.get(stagedName) : undefined;
              if (ahead === undefined) throw new Error('no seed was sent ahead under that name (its link ended)');
              this.staged.delete(stagedName as string);
              ahead.taken = true;
              keyed = ahead.store;
              ahead.socket.end();
            } else {
              keyed = this.keyedStore(new Uint8Array(0));
            }
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          // The seed's pieces in order, each written off the main thread; then the worker starts over the store.
          const store = keyed;
          const pieces = [...seedPieces.splice(0), seed];
          stage = 'seeding';
          let written = 0;
          let writtenBytes = 0;
          seedWrites = (async () => {
            for (const frameBytes of pieces) {
              if (!(frameBytes instanceof Uint8Array) || frameBytes.length === 0) continue;
              for (const piece of wholeEntryPieces(frameBytes, SEED_WRITE_PIECE_BYTES)) {
                if (socket.destroyed) return;
                if (this.seedWriteDelay > 0) await new Promise((resolve) => setTimeout(resolve, this.seedWriteDelay));
                if (socket.destroyed) return;
                await store.database.writeAsync(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
                written++;
                writtenBytes += piece.length;
                // Each piece written gives the leader's deadline again: a node that stops writing is caught.
                send({ t: 'seeding' } satisfies Handshake);
              }
            }
          })();
          seedWrites.then(
            () => {
              if (socket.destroyed) return;
              this.options.log(`oxbow: a keyed share's seed is written (${written} piece${written === 1 ? '' : 's'}, ${writtenBytes} bytes${stagedName === undefined ? '' : ', after the seed sent ahead'}); its worker starts`);
              startWorker(this.options.keyedWorkerScript(), { ...shareData, token: store.token, path: store.path }, this.keyedPool);
              if (this.options.storeCheckpoints !== undefined) {
                const share = shareData as { viewId: number; worker: number; vnodes: Uint16Array; vnodeTables?: unknown; shareId?: unknown };
                const tables = Array.isArray(share.vnodeTables) && share.vnodeTables.every((id) => Number.isInteger(id)) ? (share.vnodeTables as number[]) : undefined;
                const shareId = typeof share.shareId === 'string' && /^[0-9a-f]{1,64}$/.test(share.shareId) ? share.shareId : undefined;
                running = { database: store.database, path: store.path, incarnation: newStoreIncarnation(), uploaded: new Map(), view: share.viewId, owner: share.worker, vnodes: share.vnodes, tables, share: shareId, committed: 0n };
                this.runningStores.add(running);
              }
              // The leader's answer deadlines count from here.
              send({ t: 'seeded' } satisfies Handshake);
              for (const waiting of early.splice(0)) {
                if (socket.destroyed) return;
                relayKeyed(waiting);
              }
            },
            (error: unknown) => fail(error instanceof Error ? error : new Error(String(error))),
          );
        } else {
          fail(new Error(stage === 'proof' ? 'the peer did not prove it holds the cluster key' : `an unexpected ${String((received as { t?: unknown }).t)} frame`));
        }
      },
      fail,
    );
  }

  /** A thread for a keyed share whose seed is coming, its worker script loaded meanwhile (a script that cannot load ends it: the share then starts one). */
  private warmKeyedWorker(): void {
    try {
      this.keyedPool.warm(this.options.keyedWorkerScript());
    } catch (error) {
      this.options.log(`oxbow: no thread warmed for a keyed share: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * Compacts the ranges of the tables dropped from a store made from a checkpoint once its share
   * sent its first batch (the compaction's CPU stays off the cut's first epoch), one range after
   * the other on the addon's thread pool (the main thread only starts each), so their files go (those
   * wholly inside a range are not read again later; the others are rewritten without the dropped
   * rows). Stops once the store is released; a failure is logged only (the rows stay deleted).
   */
  private compactDropped(store: KeyedStore, ranges: readonly { lower: Buffer; upper: Buffer }[]): void {
    const started = Date.now();
    const before = store.database.getProperty('rocksdb.live-sst-files-size');
    void (async () => {
      for (const range of ranges) {
        if (this.releasedStores.has(store)) return;
        await store.database.compactRange(range.lower, range.upper);
      }
      if (this.releasedStores.has(store)) return;
      const after = store.database.getProperty('rocksdb.live-sst-files-size');
      this.options.log(`oxbow: a keyed share's store (${store.path}) compacted its dropped tables' ranges in ${Date.now() - started} ms: ${before ?? '?'} -> ${after ?? '?'} bytes of live SST files`);
    })().catch((error: unknown) => {
      if (!this.releasedStores.has(store)) this.options.log(`oxbow: a keyed share's store (${store.path}) did not compact its dropped tables' ranges: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  /**
   * The entries of the vnodes a kept keyed share gains (`gain`), read out of a store made from a
   * checkpoint: the fragment's state tables read in steps (keyed-seed.ts' KeyedSeedRead: each row's
   * vnode from its vnode columns, a gained vnode's keys with every version, the tables' records),
   * `progress` every 250 ms (the leader's deadline); stops with the connection.
   */
  private async readGained(store: KeyedStore, gain: GainedVnodes, stop: () => boolean, progress: () => void): Promise<{ bytes: Uint8Array; rows: number }> {
    const read = await readVnodes(store, gain, stop, progress);
    try {
      const seed = read.finish()[0]!;
      return { bytes: seed.bytes, rows: seed.rows };
    } finally {
      read.close();
    }
  }

  /**
   * The entries of the vnodes a kept keyed share gains (`gain`), of tables keyed by vnode, copied
   * out of a store made from a checkpoint into SST files (RocksDatabase.exportRanges: one range per
   * run of gained vnodes per table, every version, on a thread of RocksDB's pool) under
   * `<store>-gained`, which `add-store` ingests into the share's running store. Nothing is held in
   * memory, whatever the vnodes hold; `progress` every 250 ms while the files are written, for
   * `withinMs` at most (the copy's progress cannot be seen from here: one that hangs lets the
   * leader's deadline lapse then, and the leader reads the vnodes itself). The tables' records are
   * in the share's store already (its seed brought them).
   */
  private async exportGained(store: KeyedStore, gain: GainedVnodes, progress: () => void, withinMs: number): Promise<GainedFiles> {
    const directory = `${store.path}-gained`;
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory, { recursive: true });
    try {
      const files = await whileTicking(store.database.exportRanges(directory, gainedRanges(gain)), progress, withinMs);
      const { entries, bytes } = fileTotals(files);
      this.copiedBytes += bytes;
      return { directory, files, entries, bytes };
    } catch (error) {
      rmSync(directory, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Deletes from a keyed share's store every entry of the vnodes flagged in `drop`: of a table
   * whose keys carry their vnode (a view of plan version 11 or later), by a range delete of each run
   * of those vnodes (`dropVnodeRanges`); of an older view's table, each key's versions, found by
   * its row's vnode columns as a seed read finds them (keyed-seed.ts' KeyedSeedRead; a key with no
   * row at all reads as absent and stays), read in steps, the deletes written in pieces off the
   * main thread. `progress` every 250 ms. Nothing else writes the store meanwhile: a running
   * share's worker is between epochs (its next messages wait), and a store made from a checkpoint
   * has no share yet.
   */
  private async dropVnodes(store: KeyedStore, drop: GainedVnodes, stop: () => boolean, progress: () => void): Promise<Dropped> {
    const byRange = drop.tables.filter((table) => keyedByVnode(table, drop.stateVnodes));
    const ranged = byRange.length === 0 ? { ranges: 0, bytes: 0 } : await dropVnodeRanges(store.database, byRange, drop.vnodes);
    if (byRange.length === drop.tables.length) return ranged;
    const hashed = await this.dropHashedVnodes(store, { ...drop, tables: drop.tables.filter((table) => !byRange.includes(table)) }, stop, progress);
    return { ...ranged, hashed };
  }

  /** `dropVnodes` for tables whose keys have vnode byte 0 (an older view's): read, hashed, deleted key by key. */
  private async dropHashedVnodes(store: KeyedStore, drop: GainedVnodes, stop: () => boolean, progress: () => void): Promise<{ rows: number; entries: number }> {
    // The entries found are deleted as the read goes (its snapshot does not see the deletes), in
    // pieces of about SEED_WRITE_PIECE_BYTES: never all of them in memory at once.
    const deletes = new WriteBatchBuilder();
    let entries = 0;
    const remove = (_operation: number, buffer: Buffer, keyStart: number, keyEnd: number): void => {
      deletes.delete(buffer.subarray(keyStart, keyEnd));
      entries++;
    };
    const flush = async (read: KeyedSeedRead, all: boolean): Promise<void> => {
      read.drainRouted(0, (bytes) => forEachBatchEntry(bytes, remove));
      const bytes = deletes.view();
      if (bytes.length === 0 || (!all && bytes.length < SEED_WRITE_PIECE_BYTES)) return;
      if (stop()) throw new Error('the connection ended');
      await store.database.writeAsync(Buffer.from(bytes));
      deletes.reset();
      progress();
    };
    const read = await readVnodes(store, drop, stop, progress, (step) => flush(step, false));
    try {
      await flush(read, true);
      return { rows: read.finish()[0]!.rows, entries };
    } finally {
      read.close();
    }
  }

  /** Closes and removes a keyed share's store once `after` settles (its worker closed). */
  private release(after: Promise<unknown>, store: KeyedStore): void {
    this.releasedStores.add(store);
    this.openStores.delete(store);
    const released: Promise<void> = after.then(() => undefined, () => undefined).finally(async () => {
      store.database.unshare(store.token);
      await store.database.close().catch(() => undefined);
      rmSync(store.path, { recursive: true, force: true });
    });
    this.releasing.add(released);
    void released.finally(() => this.releasing.delete(released));
  }

  /**
   * A keyed share's store made from the checkpoint this node follows, at or past `epoch`, and that
   * checkpoint's epoch. The checkpoint holds every table of the database: given the fragment's state
   * `tables`, every other table's rows are dropped (storage/key-ranges.ts' dropTablesOutside: range
   * deletes, the ranges returned for compactDropped).
   */
  private async storeFromCheckpoint(epoch: bigint, withinMs: number, stop: () => boolean, tables?: readonly number[], vnodes?: Uint8Array): Promise<MadeStore> {
    const seed = this.options.checkpointSeed;
    if (seed === undefined) throw new Error('this node makes no store from a checkpoint');
    const path = join(this.options.dataDir, 'remote-keyed-shares', String(++this.keyedShares));
    let database: RocksDatabase | undefined;
    try {
      const held = await seed(epoch, path, withinMs, stop, vnodes);
      database = RocksDatabase.open(path);
      const dropped = tables === undefined ? undefined : dropTablesOutside(database, tables);
      return { store: this.opened({ database, token: database.share(), path, ...(dropped === undefined ? {} : { dropped }) }), epoch: held, dropped };
    } catch (error) {
      await database?.close().catch(() => undefined);
      rmSync(path, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * A started keyed share's store made from the checkpoint this node follows, at or past `epoch`,
   * holding only what the share owns: the checkpoint is linked beside it and opened read-only, the
   * key ranges of the vnodes the share owns (`own`) of each state table keyed by vnode, every other
   * state table of `tables` whole, and the store's records are copied into SST files
   * (RocksDatabase.exportRanges, on RocksDB's thread pool; `progress` every 250 ms, for `withinMs`
   * at most), the linked checkpoint removed, and the files ingested into a fresh store. Nothing of
   * the other vnodes or tables is in it, so nothing is range-deleted nor compacted away later.
   */
  private async storeOfOwnVnodes(epoch: bigint, withinMs: number, stop: () => boolean, tables: readonly number[], own: GainedVnodes, progress: () => void): Promise<MadeStore> {
    const seed = this.options.checkpointSeed;
    if (seed === undefined) throw new Error('this node makes no store from a checkpoint');
    const path = join(this.options.dataDir, 'remote-keyed-shares', String(++this.keyedShares));
    const linked = `${path}-checkpoint`;
    const filesDir = `${path}-files`;
    let source: RocksDatabase | undefined;
    let database: RocksDatabase | undefined;
    try {
      const held = await seed(epoch, linked, withinMs, stop, own.vnodes);
      const started = Date.now();
      source = RocksDatabase.open(linked, { readOnly: true });
      const ranges = ownStoreRanges(tables, own);
      let owned = 0;
      for (const flag of own.vnodes) owned += flag;
      rmSync(filesDir, { recursive: true, force: true });
      mkdirSync(filesDir, { recursive: true });
      const files = await whileTicking(source.exportRanges(filesDir, ranges), progress, withinMs);
      await source.close();
      source = undefined;
      rmSync(linked, { recursive: true, force: true });
      if (stop()) throw new Error('the request was withdrawn');
      rmSync(path, { recursive: true, force: true });
      mkdirSync(path, { recursive: true });
      database = RocksDatabase.open(path);
      await database.ingest(files);
      rmSync(filesDir, { recursive: true, force: true });
      const { entries, bytes } = fileTotals(files);
      this.copiedBytes += bytes;
      this.ingestedBytes += bytes;
      return { store: this.opened({ database, token: database.share(), path }), epoch: held, dropped: undefined, copied: { vnodes: owned, files: files.length, entries, bytes, ms: Date.now() - started } };
    } catch (error) {
      await source?.close().catch(() => undefined);
      await database?.close().catch(() => undefined);
      for (const dir of [linked, filesDir, path]) rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** A keyed share's own store, under `<data-dir>/remote-keyed-shares/<n>`, seeded with the fragment's state. */
  private keyedStore(seed: Uint8Array): KeyedStore {
    const path = join(this.options.dataDir, 'remote-keyed-shares', String(++this.keyedShares));
    rmSync(path, { recursive: true, force: true });
    mkdirSync(path, { recursive: true });
    const database = RocksDatabase.open(path);
    if (seed.length > 0) database.write(Buffer.from(seed.buffer, seed.byteOffset, seed.length));
    return this.opened({ database, token: database.share(), path });
  }

  /** Counts a keyed share's store as open (`metrics`) until it is released. */
  private opened(store: KeyedStore): KeyedStore {
    this.openStores.add(store);
    // Every version stays until the first checkpoint cut of it (share-store-checkpoint.ts).
    if (this.options.storeCheckpoints !== undefined) store.database.capRetentionWatermarks(0n);
    return store;
  }

  /** The running keyed shares' stores cut and uploaded for the leader's checkpoint at `epoch`, after any such request before it. */
  private checkpointStores(epoch: bigint, send: (message: Handshake) => void, stopped: () => boolean): Promise<ManifestPart[]> {
    const checkpoints = this.options.storeCheckpoints;
    const run = async (): Promise<ManifestPart[]> => {
      if (checkpoints === undefined) throw new Error('this node does not checkpoint its keyed shares\' stores (OXBOW_KEYED_NODE_CHECKPOINTS is off)');
      const started = Date.now();
      const stores = [...this.runningStores];
      const live = (store: CheckpointedStore): boolean => this.runningStores.has(store);
      const { parts, uploadedFiles, uploadedBytes } = await checkpointStores(await checkpoints.objectStore(), checkpoints.node, epoch, stores, () => send({ t: 'seeding' }), stopped, live);
      this.checkpointedStores += parts.length;
      this.checkpointUploadedBytes += uploadedBytes;
      const named = parts.reduce((sum, part) => sum + part.totalBytes, 0);
      this.options.log(`oxbow: ${parts.length} keyed share store${parts.length === 1 ? '' : 's'} checkpointed at epoch ${epoch} (${named} bytes named, ${uploadedFiles} file${uploadedFiles === 1 ? '' : 's'} of ${uploadedBytes} bytes sent, in ${Date.now() - started} ms)`);
      return parts;
    };
    const result = this.checkpointing.then(run);
    this.checkpointing = result.then(() => undefined, () => undefined);
    return result;
  }

  /**
   * What a node's operator watches of its keyed shares (cluster-node.ts' `prometheusText`): the
   * stores open now (running shares', staged ones', those made from checkpoints being read) and
   * their live SST files' bytes (both column families), and the bytes of SST files copied out of
   * checkpoints and ingested into shares' stores since the start; the stores cut for the leader's
   * checkpoints (share-store-checkpoint.ts) and the bytes of their files sent, since the start.
   */
  metrics(): { readonly stores: number; readonly storeBytes: number; readonly copiedBytes: number; readonly ingestedBytes: number; readonly checkpointedStores: number; readonly checkpointUploadedBytes: number } {
    let storeBytes = 0;
    for (const store of this.openStores) {
      for (const family of ['default', 'records'] as const) {
        try {
          storeBytes += Number(store.database.getProperty('rocksdb.live-sst-files-size', family) ?? 0);
        } catch {
          // Closed meanwhile: its bytes are gone.
        }
      }
    }
    return { stores: this.openStores.size, storeBytes, copiedBytes: this.copiedBytes, ingestedBytes: this.ingestedBytes, checkpointedStores: this.checkpointedStores, checkpointUploadedBytes: this.checkpointUploadedBytes };
  }

  /**
   * A drained node's end (its record is gone from etcd): takes no new connection and waits, at most
   * `withinMs`, for the leader to close each share once it answered every commit it sent.
   */
  async drain(withinMs: number): Promise<void> {
    if (this.server.listening) this.server.close();
    const deadline = Date.now() + withinMs;
    while (this.sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  /** Stops listening, ends every connection and its worker, closes the scratch database. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
    await Promise.all([...this.handles].map((handle) => handle.close()));
    await this.keyedPool.close();
    await Promise.all([...this.releasing]);
    if (this.database !== undefined) {
      if (this.token !== undefined) this.database.unshare(this.token);
      await this.database.close();
    }
  }
}

/** A `stage-files`' vnodes: a started share's (`own`) or a kept share's gained ones (`gain`), not both, every table keyed by vnode. */
function isFilesVnodes(own: unknown, gain: unknown): boolean {
  if ((own === undefined) === (gain === undefined)) return false;
  const vnodes = own ?? gain;
  return isGainedVnodes(vnodes) && vnodes.tables.every((table) => keyedByVnode(table, vnodes.stateVnodes));
}

/** A `stage-checkpoint`'s state tables: table ids (below the store's records' 0xFFFFFFFF), at most 65,536. */
function isTableList(value: unknown): value is readonly number[] {
  return Array.isArray(value) && value.length <= 65_536 && value.every((id) => Number.isInteger(id) && id >= 0 && id < 0xffffffff);
}
