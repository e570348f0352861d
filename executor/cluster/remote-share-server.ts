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
import { rmSync, mkdirSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { RocksDatabase } from '../../storage/rocksdb.js';
import type { MainToSourceWorker, SourceWorkerToMain } from '../stream/parallel/source-protocol.js';
import type { MainToWorker, WorkerToMain } from '../stream/parallel/protocol.js';
import { WorkerHandle } from '../stream/parallel/worker-handle.js';
import { formatAddress, frame, newNonce, proofMatches, proofOf, readFrames, type Handshake } from './remote-share-link.js';

type Forwarded = MainToSourceWorker | MainToWorker;
type Answered = SourceWorkerToMain | WorkerToMain;

/** The messages a keyed share's leader sends (protocol.ts' MainToWorker; `ranges` never: its workers generate nothing). */
const KEYED_MESSAGES: ReadonlySet<string> = new Set(['rows', 'seal', 'commit', 'durable', 'failed', 'abort', 'budget', 'close']);

/** A keyed share's store on this node: its own RocksDB, removed when the share ends. */
interface KeyedStore {
  readonly database: RocksDatabase;
  readonly token: number;
  readonly path: string;
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
  /** Seeds sent ahead, by the name `staged` gave them, until a share takes one or its link ends. */
  private readonly staged = new Map<string, StagedSeed>();
  address = '';

  constructor(private readonly options: RemoteShareServerOptions) {
    this.server = createServer((socket) => this.accept(socket));
  }

  async listen(): Promise<string> {
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
    let stage: 'hello' | 'proof' | 'open' | 'staged' | 'running' = 'hello';
    let nonce: Uint8Array | undefined;
    let handle: WorkerHandle<Forwarded, Answered> | undefined;
    /** A keyed share's own store (the connection opened a keyed fragment's share). */
    let keyed: KeyedStore | undefined;
    /** Answers leave in the order their commits came. */
    let answers: Promise<void> = Promise.resolve();
    /** Units posted since the last commit. */
    let pendingUnits = 0;
    /** A keyed share's seed's pieces before its `open` (remote-share-link.ts' openFrames). */
    const seedPieces: Uint8Array[] = [];
    /** The seed this connection sends ahead of a cut (`stage` frames), and its name once all is written. */
    let staging: StagedSeed | undefined;
    let stagedAs: string | undefined;
    let timer = setTimeout(() => fail(new Error('no share opened within the handshake deadline')), this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS);
    const fail = (error: Error): void => {
      if (!socket.destroyed) this.options.log(`oxbow: a remote share connection from ${socket.remoteAddress ?? '?'} ended: ${error.message}`);
      socket.destroy();
    };
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
      if (stagedAs !== undefined) this.staged.delete(stagedAs);
      // A seed sent ahead that no share took goes with its link.
      if (staging !== undefined && !staging.taken) this.release(Promise.resolve(), staging.store);
      if (handle !== undefined) {
        this.handles.delete(handle);
        const closed = handle.close();
        if (keyed !== undefined) this.release(closed, keyed);
      } else if (keyed !== undefined) {
        this.release(Promise.resolve(), keyed);
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
    const relayKeyed = (message: MainToWorker): void => {
      const worker = handle! as WorkerHandle<MainToWorker, WorkerToMain>;
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
      answers = answers.then(async () => {
        try {
          const answered = await worker.answered(answer);
          if (answered.t === 'batch') {
            store.database.write(Buffer.from(answered.bytes, 0, answered.length));
            this.rows += counted;
          }
          send(answered);
        } catch (error) {
          const failed = error as { code?: string; message?: string };
          send({ t: 'error', code: failed.code ?? 'XX000', message: failed.message ?? String(error) });
        }
      });
    };
    readFrames(
      socket,
      (message) => {
        const received = message as Handshake | MainToSourceWorker;
        if (stage === 'running' && keyed !== undefined) return relayKeyed(received as MainToWorker);
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
        if (stage === 'hello' && received.t === 'hello' && received.nonce instanceof Uint8Array && received.nonce.length === 32) {
          nonce = newNonce();
          send({ t: 'challenge', nonce, proof: proofOf(key, 'server', received.nonce) });
          stage = 'proof';
        } else if (stage === 'proof' && received.t === 'proof' && proofMatches(key, 'client', nonce!, received.proof)) {
          stage = 'open';
        } else if (stage === 'open' && received.t === 'stage' && received.bytes instanceof Uint8Array && seedPieces.length === 0) {
          // A seed sent ahead: each piece (whole entries) is written as it comes.
          try {
            if (staging === undefined) staging = { store: this.keyedStore(new Uint8Array(0)), socket, taken: false };
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
        } else if (stage === 'open' && received.t === 'seed' && received.bytes instanceof Uint8Array && staging === undefined) {
          seedPieces.push(received.bytes);
          // A large seed takes its time: each piece gives the handshake's deadline again.
          timer.refresh();
        } else if (stage === 'open' && staging === undefined && received.t === 'open' && typeof received.data === 'object' && received.data !== null) {
          clearTimeout(timer);
          let script: URL;
          let database: { token: number; path: string };
          let shareData = received.data as object;
          try {
            if ((shareData as { kind?: unknown }).kind === 'keyed') {
              const { kind: _kind, seed, staged: stagedName, ...rest } = shareData as { kind: string; seed: Uint8Array; staged?: unknown };
              shareData = rest;
              script = this.options.keyedWorkerScript();
              const bytes = seedPieces.length === 0 ? seed : Buffer.concat([...seedPieces.splice(0), seed]);
              if (stagedName !== undefined) {
                // The seed was sent ahead: this share takes its store, with what goes after it written last.
                const ahead = typeof stagedName === 'string' ? this.staged.get(stagedName) : undefined;
                if (ahead === undefined) throw new Error('no seed was sent ahead under that name (its link ended)');
                this.staged.delete(stagedName as string);
                ahead.taken = true;
                keyed = ahead.store;
                ahead.socket.end();
                if (bytes.length > 0) keyed.database.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
              } else {
                keyed = this.keyedStore(bytes);
              }
              database = { token: keyed.token, path: keyed.path };
            } else {
              script = this.options.workerScript();
              database = this.scratch();
            }
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          handle = new WorkerHandle<Forwarded, Answered>(script, { ...shareData, ...database }, "a remote share's worker");
          this.handles.add(handle);
          // A worker that ends ends the connection: the leader runs the share itself at once.
          void handle.exited.then(() => fail(new Error("the share's worker thread ended")));
          stage = 'running';
        } else {
          fail(new Error(stage === 'proof' ? 'the peer did not prove it holds the cluster key' : `an unexpected ${String((received as { t?: unknown }).t)} frame`));
        }
      },
      fail,
    );
  }

  /** Closes and removes a keyed share's store once `after` settles (its worker closed). */
  private release(after: Promise<unknown>, store: KeyedStore): void {
    const released: Promise<void> = after.then(() => undefined, () => undefined).finally(async () => {
      store.database.unshare(store.token);
      await store.database.close().catch(() => undefined);
      rmSync(store.path, { recursive: true, force: true });
    });
    this.releasing.add(released);
    void released.finally(() => this.releasing.delete(released));
  }

  /** A keyed share's own store, under `<data-dir>/remote-keyed-shares/<n>`, seeded with the fragment's state. */
  private keyedStore(seed: Uint8Array): KeyedStore {
    const path = join(this.options.dataDir, 'remote-keyed-shares', String(++this.keyedShares));
    rmSync(path, { recursive: true, force: true });
    mkdirSync(path, { recursive: true });
    const database = RocksDatabase.open(path);
    if (seed.length > 0) database.write(Buffer.from(seed.buffer, seed.byteOffset, seed.length));
    return { database, token: database.share(), path };
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
    await Promise.all([...this.releasing]);
    if (this.database !== undefined) {
      if (this.token !== undefined) this.database.unshare(this.token);
      await this.database.close();
    }
  }
}
