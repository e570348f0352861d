// The leader's thread for one remote share of a keyed fragment (executor/cluster/README.md, "Keyed
// shares"): to the main thread it is one more worker of the fragment (parallel-fragment.ts), owning
// the vnodes the fragment's vnode map gives its index, answering the fragment workers' protocol
// (protocol.ts) through worker-port.ts. The messages go to another node's remote-share-server.ts
// over TCP (remote-share-link.ts), which runs the same worker (fragment-worker.ts) over a store of
// its own, seeded with the fragment's state tables, and sends each request's answer back in order.
//
// Failure never costs an epoch. This thread logs every message of every epoch not yet durable (the
// rows, seals and commits of the epochs whose batch is in flight or handed over, and of the open
// one) and which requests the main thread has had its answer to. When the node fails (no
// connection, closed, garbage, an error answer, no answer within the deadline) it starts the
// fragment's worker here over the leader's database and replays that log into it in order: answers
// the main thread already has are dropped (the node's batches of those epochs are already in their
// WriteBatches), the others are answered. The replayed worker's store starts as of the epoch before
// the oldest one in the log and reads no newer version of the database until the epochs the node
// handed over are durable (MvccStateStore.startAt): their writes may or may not be written yet,
// and its own replay of them stands for them meanwhile.
//
// Where the node keeps the share's state (OXBOW_KEYED_NODE_STATE, `nodeState`), the batches it
// hands over go to the main thread empty: the leader's database gets none of its state writes.
// This thread keeps them instead, each with its epoch, until a checkpoint recorded with the node's
// part of the share (CHECKPOINTED_CHANNEL) holds them. When the share comes back here (the node
// failed, or the fragment hands every share back before a cut of its owners: `hand-back`), the
// share's vnodes are first made whole in the leader's database: the part restored from the
// object store over them (storage/checkpoint/parts.ts, as of its checkpoint) and the batches kept
// since written after it, in order. Only then does the worker start here and the replay run.

import { dirname, join } from 'node:path';
import { BroadcastChannel, workerData, type MessagePort } from 'node:worker_threads';
import { toSqlError } from '../../sql/errors.js';
import type { ManifestPart } from '../../storage/checkpoint/manifest.js';
import { takeParts } from '../../storage/checkpoint/parts.js';
import { restorePart } from '../../storage/checkpoint/restore.js';
import { openObjectStore } from '../../storage/object-store/open-object-store.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import type { FragmentWorkerData, MainToWorker, WorkerToMain } from '../stream/parallel/protocol.js';
import { WorkerHandle } from '../stream/parallel/worker-handle.js';
import { WorkerPort } from '../stream/parallel/worker-port.js';
import { configuredSeedChunkBytes, openShareLink, restartDeadlines, shareData, wholeEntryPieces, type ShareLink } from './remote-share-link.js';
import type { KeyedShareData } from './remote-shares.js';
import { CHECKPOINTED_CHANNEL, type CheckpointedParts } from './share-store-checkpoint.js';

type Data = FragmentWorkerData & KeyedShareData & { readonly port: MessagePort };
const data = workerData as Data;
const channel = new WorkerPort<WorkerToMain>();
/** [0] rows of the epochs whose batch the node handed over, [1] 1 once the share runs on the leader, [2] ms from the seed's read to the node's first batch, [3] bytes of the node's batches kept here (node state), [4] 1 once one was kept. */
const stats = new BigInt64Array(data.stats);
const nodeState = data.nodeState === true;
/**
 * Node state: past this many bytes of the node's batches kept (checkpoints failing or far apart),
 * the share comes back here as at a hand-back, and its writes go to the leader's database again.
 */
const keptLimitBytes = keptLimit(process.env['OXBOW_KEYED_NODE_STATE_KEPT_MIB']);
/** The node's batches since the newest recorded checkpoint holding its part (node state), in epoch order. */
const keptBatches: { readonly epoch: bigint; readonly bytes: Uint8Array }[] = [];
let keptBytes = 0;
/** That checkpoint's part of this share: a return of the share starts from it. */
let lastPart: { readonly epoch: bigint; readonly url: string; readonly part: ManifestPart } | undefined;
const checkpoints = nodeState ? new BroadcastChannel(CHECKPOINTED_CHANNEL) : undefined;
if (checkpoints !== undefined) {
  checkpoints.unref();
  checkpoints.onmessage = (event) => {
    const message = (event as unknown as { data: CheckpointedParts }).data;
    const part = message.parts.find((candidate) => candidate.share === data.shareId);
    if (part === undefined || mode !== 'remote') return;
    const epoch = BigInt(message.epoch);
    if (lastPart !== undefined && lastPart.epoch >= epoch) return;
    lastPart = { epoch, url: message.url, part };
    // The node cut its store once every batch up to the checkpoint's epoch was written.
    while (keptBatches.length > 0 && keptBatches[0]!.epoch <= epoch) keptBytes -= keptBatches.shift()!.bytes.length;
    Atomics.store(stats, 3, BigInt(keptBytes));
  };
}

/** One message of the main thread, kept until its epoch is durable. */
interface Entry {
  readonly message: MainToWorker;
  /** The main thread waits for an answer to it (unheld rows, a seal, a commit). */
  readonly request: boolean;
  /** The main thread has its answer. */
  answered: boolean;
  /** Rows of a rows message; of a commit, the epoch's. */
  readonly rows: number;
  /** When the node must have answered it. */
  deadline: number;
}

/** An epoch's messages; `epoch` once committed. The last one is the open epoch. */
interface EpochLog {
  entries: Entry[];
  epoch?: string;
}

let mode: 'remote' | 'local' = 'remote';
let closing = false;
let link: ShareLink | undefined;
const log: EpochLog[] = [{ entries: [] }];
/** Requests sent and not answered yet, oldest first. */
let pending: Entry[] = [];
let local: WorkerHandle<MainToWorker, WorkerToMain> | undefined;
/** Node state: the share's vnodes being made whole in the leader's database before its worker starts here. */
let restoring: Promise<void> | undefined;
/** Node state: why they could not be (every request then fails with it). */
let lost: { code: string; message: string } | undefined;
/** The last budget the main thread sent while the worker here was not started yet. */
let budget: MainToWorker | undefined;
/** The local worker's answers, in order. */
let answers: Promise<void> = Promise.resolve();
/** What a cut that kept this share changed of the worker data (its map, index, the owners' number): a worker started here on failure starts with it. */
let remapped: Pick<FragmentWorkerData, 'vnodes' | 'worker' | 'parallelism'> | undefined;

function open(): EpochLog {
  return log[log.length - 1]!;
}

function send(message: unknown): void {
  if (mode === 'remote') link?.send(message);
}

function forward(message: WorkerToMain): void {
  if (message.t === 'batch') {
    // The node's memory is not this process's: no report for the memory manager.
    channel.answer({ t: 'batch', bytes: message.bytes, length: message.length, memory: undefined as never }, [message.bytes]);
  } else if (message.t === 'output') {
    channel.answer(message, [message.changes.bytes]);
  } else {
    channel.answer(message);
  }
}

function onAnswer(message: WorkerToMain, from: 'remote' | 'local'): void {
  if (from === 'remote' && mode !== 'remote') return;
  const entry = pending.shift();
  if (entry === undefined) {
    if (from === 'remote') failOver(`it sent a ${String((message as { t?: unknown }).t)} no request asked for`);
    return;
  }
  if (from === 'remote' && message.t === 'error') {
    // The node's worker failed: the request runs here instead; if it fails here too, that error
    // fails it, as on a node without remote shares.
    pending.unshift(entry);
    return failOver(`it answered ${message.code}: ${message.message}`);
  }
  // A replayed request the node answered before it failed: the main thread has that answer.
  if (entry.answered) return;
  entry.answered = true;
  if (message.t === 'batch' && from === 'remote') {
    Atomics.add(stats, 0, BigInt(entry.rows));
    if (Atomics.load(stats, 2) === 0n) Atomics.store(stats, 2, BigInt(Math.max(1, Date.now() - data.startedAt)));
    if (nodeState && entry.message.t === 'commit') {
      // The state writes stay on the node (and here, until a checkpoint holds its part).
      keptBatches.push({ epoch: BigInt(entry.message.epoch), bytes: new Uint8Array(message.bytes, 0, message.length) });
      keptBytes += message.length;
      Atomics.store(stats, 3, BigInt(keptBytes));
      Atomics.store(stats, 4, 1n);
      forward({ t: 'batch', bytes: new ArrayBuffer(0), length: 0, memory: undefined as never });
      if (keptBytes > keptLimitBytes) failOver(`this node keeps ${keptBytes} bytes of its writes no checkpoint holds yet, more than OXBOW_KEYED_NODE_STATE_KEPT_MIB (${keptLimitBytes / 2 ** 20} MiB)`, true);
      return;
    }
  }
  forward(message);
}

/** Sends a logged message to whoever runs the share. */
function dispatch(entry: Entry): void {
  if (mode === 'remote') {
    if (entry.request) {
      entry.deadline = Date.now() + data.timeoutMs;
      pending.push(entry);
    }
    return send(entry.message);
  }
  if (local === undefined) {
    // Node state, the share's vnodes not whole here yet: the log holds it, replayed once they are.
    if (lost !== undefined && entry.request && !entry.answered) {
      entry.answered = true;
      channel.answer({ t: 'error', code: lost.code, message: lost.message });
    }
    return;
  }
  const worker = local;
  if (!entry.request) return worker.post(entry.message);
  pending.push(entry);
  const answer = worker.request(entry.message, 'its answer');
  answers = answers.then(async () => {
    let message: WorkerToMain;
    try {
      message = await worker.answered(answer);
    } catch (error) {
      const failed = toSqlError(error);
      message = { t: 'error', code: failed.code, message: failed.message };
    }
    onAnswer(message, 'local');
  });
}

/** OXBOW_KEYED_NODE_STATE_KEPT_MIB: a positive whole number of MiB, 256 when unset (cli.ts refuses anything else at start). */
function keptLimit(text: string | undefined): number {
  const mib = text === undefined ? 256 : Number(text.trim());
  return Number.isSafeInteger(mib) && mib > 0 ? mib * 2 ** 20 : 256 * 2 ** 20;
}

/** A message that is not logged (acknowledgments, the budget) to whoever runs the share. */
function passOn(message: MainToWorker): void {
  if (mode === 'remote') send(message);
  else if (local !== undefined) local.post(message);
  // Before the worker here starts the log stands for abort, durable and failed; the budget waits.
  else if (message.t === 'budget') budget = message;
}

/** The remote node is given up: the logged epochs run here. `handBack`: it did not fail, the fragment asks its shares back before a cut (node state). */
function failOver(reason: string, handBack = false): void {
  if (mode === 'local' || closing) return;
  mode = 'local';
  link?.destroy();
  if (handBack) process.stderr.write(`oxbow: the keyed share on node ${data.node} (${data.address}) comes back to this node: ${reason}\n`);
  else process.stderr.write(`oxbow: the keyed share on node ${data.node} (${data.address}) failed: ${reason}; its share runs on this node from now on\n`);
  if (!nodeState) {
    Atomics.store(stats, 1, 1n);
    return startHere();
  }
  pending = [];
  restoring = restoreHere().then(
    () => {
      Atomics.store(stats, 1, 1n);
      if (!closing) startHere();
    },
    (error: unknown) => {
      const failed = toSqlError(error);
      lost = { code: failed.code, message: `the state of the keyed share on node ${data.node} could not be restored on this node: ${failed.message}` };
      process.stderr.write(`oxbow: ${lost.message}\n`);
      Atomics.store(stats, 1, 1n);
      for (const epoch of log) for (const entry of epoch.entries) dispatch(entry);
    },
  );
}

/**
 * Node state: the share's vnodes made whole in the leader's database as the node held them at its
 * last batch handed over: its part of the newest recorded checkpoint (if any: a share started
 * after it has its vnodes in the leader's database as of its start) replacing their key ranges,
 * then every batch kept since, in epoch order.
 */
async function restoreHere(): Promise<void> {
  const started = performance.now();
  const database = RocksDatabase.attach(data.token, data.path);
  let from = 'its vnodes as the leader seeded them';
  try {
    const part = lastPart;
    if (part !== undefined) {
      const store = await openObjectStore(part.url);
      try {
        const taken = await takeParts(database, [part.part], part.epoch, join(dirname(data.path), 'keyed-share-restore', data.shareId), (which, dir) => restorePart(store, which, dir), false);
        from = `its part of checkpoint ${part.epoch} (${taken.ranges} vnode ranges, ${taken.entries} entries, ${taken.bytes} bytes)`;
      } finally {
        store.close();
      }
    }
    for (const batch of keptBatches) await database.writeAsync(Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.length), true);
  } finally {
    await database.close();
  }
  process.stderr.write(`oxbow: the keyed share on node ${data.node} is restored on this node from ${from} and ${keptBatches.length} batches kept since (${keptBytes} bytes) in ${Math.round(performance.now() - started)} ms\n`);
  keptBatches.length = 0;
  keptBytes = 0;
  Atomics.store(stats, 3, 0n);
}

/** Starts the fragment's worker here and replays the log into it. */
function startHere(): void {
  const committed = log.filter((epoch) => epoch.epoch !== undefined);
  // The node answers commits in order: the epochs it handed over are the first committed ones.
  const handed = committed.filter((epoch) => epoch.entries[epoch.entries.length - 1]!.answered);
  const base = handed.length === 0 ? undefined : { epoch: (BigInt(committed[0]!.epoch!) - 1n).toString(), until: handed[handed.length - 1]!.epoch! };
  const worker = { ...shareData(data).local, ...remapped };
  local = new WorkerHandle<MainToWorker, WorkerToMain>(new URL(data.fallbackScript), base === undefined ? worker : { ...worker, base }, "a parallel fragment's worker");
  pending = [];
  if (budget !== undefined) local.post(budget);
  budget = undefined;
  for (const epoch of log) for (const entry of epoch.entries) dispatch(entry);
}

function start(): void {
  link = openShareLink(data.address, data.key, shareData(data).share, {
    timeoutMs: data.timeoutMs,
    onMessage: (message) => {
      // A piece of the seed of vnodes the share gained is written: the answers waiting for it have their whole deadline from now.
      if ((message as { t?: unknown }).t === 'seeding') return restartDeadlines(pending, Date.now(), data.timeoutMs);
      onAnswer(message as WorkerToMain, 'remote');
    },
    onFail: failOver,
    overdue: (now) => {
      const oldest = pending[0];
      return oldest !== undefined && now > oldest.deadline ? `no answer to a ${oldest.message.t} within ${data.timeoutMs} ms` : undefined;
    },
    // The node wrote its seed and started its worker: what waited for that has its whole deadline from now.
    seeded: (now) => restartDeadlines(pending, now, data.timeoutMs),
  });
}

channel.port.on('message', (message: MainToWorker) => {
  switch (message.t) {
    case 'rows':
    case 'seal': {
      let rows = 0;
      if (message.t === 'rows') for (const input of message.inputs) rows += input?.count ?? 0;
      const entry: Entry = { message, request: message.t === 'seal' || !message.holding, answered: false, rows, deadline: 0 };
      open().entries.push(entry);
      return dispatch(entry);
    }
    case 'commit': {
      const current = open();
      let rows = 0;
      for (const entry of current.entries) rows += entry.rows;
      const entry: Entry = { message, request: true, answered: false, rows, deadline: 0 };
      current.entries.push(entry);
      current.epoch = message.epoch;
      log.push({ entries: [] });
      return dispatch(entry);
    }
    case 'abort':
      open().entries = [];
      return passOn(message);
    case 'durable':
      // The oldest committed epoch is durable: nothing of it is replayed any more.
      if (log.length > 1) log.shift();
      return passOn(message);
    case 'failed':
      log.splice(0, log.length - 1);
      return passOn(message);
    case 'budget':
      return passOn(message);
    case 'remap': {
      // A cut kept this share: it comes at a safe point, so the log holds no epoch of the old map.
      // The node's worker routes no rows of its own (a fragment whose workers generate an input has
      // no remote shares) and its store keeps the dropped vnodes' entries, not read while it does
      // not own them: only a worker started here later needs the new map. Vnodes it gained come
      // with their seed, written into the node's store (`add` pieces, each answered `seeding`)
      // before the remap reaches the node's worker, after the entries the node read out of its store
      // made from a checkpoint ahead of the cut when the seed starts there (`add-store`); when it
      // takes back vnodes it held, the node first deletes the entries of every vnode it held and
      // does not own (`drop`, answered `seeding` as it goes). A worker here reads the leader's database.
      remapped = { vnodes: message.vnodes, worker: message.worker, parallelism: message.parallelism };
      const { add, addStore, drop, ...remap } = message;
      if (mode === 'local') return local?.post(remap);
      if (remap.gained !== true) return;
      if (drop !== undefined) send({ t: 'drop', gain: drop });
      if (addStore !== undefined) send({ t: 'add-store', store: addStore });
      const chunk = configuredSeedChunkBytes();
      for (const bytes of add ?? []) for (const piece of wholeEntryPieces(bytes, chunk)) send({ t: 'add', bytes: piece });
      return send(remap);
    }
    case 'ranges':
      // A fragment whose workers generate an input has no remote shares.
      return;
    case 'hand-back':
      return failOver("its fragment's owners are cut again, and its node keeps its state", true);
    case 'close': {
      closing = true;
      checkpoints?.close();
      if (mode === 'remote') {
        send(message);
        // The server ends its side once it answered; a peer that does not is cut off.
        link?.end();
        channel.close();
      } else {
        channel.close((restoring ?? Promise.resolve()).catch(() => undefined).then(() => answers).then(() => local?.close()));
      }
      return;
    }
  }
});

start();
