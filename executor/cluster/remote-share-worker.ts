// The leader's thread for one remote share of a source fragment (docs/design.md section 7,
// executor/stream/PARALLEL.md "Source fragments"): to the main thread it is one more worker of the
// fragment, answering the source workers' protocol (source-protocol.ts) through worker-port.ts, so
// the fragment cuts its ranges into one more share (splitShares) and joins its batches to each
// epoch's WriteBatch as it does a thread's. The messages go to another node's
// remote-share-server.ts over TCP (remote-share-link.ts: frames, the handshake under the peer key),
// which runs the same worker there and sends each commit's batch back.
//
// Failure never costs the epoch: this thread keeps the ranges of every epoch the remote node has
// not answered yet (the open one and those whose commit is in flight). When the connection cannot
// be made, closes, sends something unreadable, answers an error or misses the answer deadline,
// the thread starts the worker here (a thread of its own over the leader's shared database, as a
// local share's), gives it those ranges again epoch by epoch, answers the commits in flight with
// its batches, and runs the share here from then on. A batch the leader did not receive was never written, and one it
// received is not generated again, so every unit is written once. Each batch the failover worker
// makes says how many units it was given for the epoch and how many of them had been sent to the
// node unanswered (`failedOver`), so the fragment's EXPLAIN ANALYZE counts who fetched what.

import { workerData, type MessagePort } from 'node:worker_threads';
import { toSqlError } from '../../sql/errors.js';
import type { MainToSourceWorker, SourceWorkerData, SourceWorkerToMain } from '../stream/parallel/source-protocol.js';
import { WorkerHandle } from '../stream/parallel/worker-handle.js';
import { WorkerPort } from '../stream/parallel/worker-port.js';
import { openShareLink, shareData, type ShareLink } from './remote-share-link.js';
import type { RemoteShareData } from './remote-shares.js';

type Data = SourceWorkerData & RemoteShareData & { readonly port: MessagePort };
const data = workerData as Data;
const channel = new WorkerPort<SourceWorkerToMain>();
const stats = new BigInt64Array(data.stats);

/** An epoch whose commit went to the remote node and is not answered yet. */
interface InFlight {
  readonly epoch: string;
  readonly ranges: (readonly number[])[];
  readonly units: number;
  readonly deadline: number;
}

let mode: 'remote' | 'local' = 'remote';
let closing = false;
let link: ShareLink | undefined;
/** Ranges of the open epoch (posted since the last commit). */
let open: (readonly number[])[] = [];
let openUnits = 0;
const inFlight: InFlight[] = [];
/** Who made each epoch's batch handed to the main thread and not yet acknowledged, oldest first. */
const handed: ('remote' | 'local')[] = [];
let local: WorkerHandle<MainToSourceWorker, SourceWorkerToMain> | undefined;
/** The local worker's answers, in order. */
let answers: Promise<void> = Promise.resolve();
/** Units given to the local worker for its open epoch, and how many of them had been sent to the node. */
let localUnits = 0;
let localAgain = 0;

function unitsOf(ranges: readonly number[]): number {
  let units = 0;
  for (let at = 0; at + 2 < ranges.length; at += 3) units += ranges[at + 2]! - ranges[at + 1]!;
  return units;
}

function send(message: unknown): void {
  if (mode === 'remote') link?.send(message);
}

/** Asks the local worker for epoch `epoch`'s batch, made of `units` units of which `again` had been sent to the node. */
function localCommit(epoch: string, units: number, again: number): void {
  const worker = local!;
  const answer = worker.request({ t: 'commit', epoch }, `its batch of epoch ${epoch}`);
  answers = answers.then(async () => {
    try {
      const batch = await worker.answered(answer);
      if (batch.t === 'batch') {
        handed.push('local');
        channel.answer({ ...batch, failedOver: { units, again } }, [batch.bytes]);
      } else {
        channel.answer(batch);
      }
    } catch (error) {
      const failed = toSqlError(error);
      channel.answer({ t: 'error', code: failed.code, message: failed.message });
    }
  });
}

/** The remote node is given up: its unanswered epochs and the open one run here. */
function failOver(reason: string): void {
  if (mode === 'local' || closing) return;
  mode = 'local';
  link?.destroy();
  Atomics.store(stats, 1, 1n);
  process.stderr.write(`oxbow: the remote share on node ${data.node} (${data.address}) failed: ${reason}; its share runs on this node from now on\n`);
  local = new WorkerHandle<MainToSourceWorker, SourceWorkerToMain>(new URL(data.fallbackScript), shareData(data).local, "a source fragment's worker");
  for (const epoch of inFlight.splice(0)) {
    for (const ranges of epoch.ranges) local.post({ t: 'ranges', ranges });
    localCommit(epoch.epoch, epoch.units, epoch.units);
  }
  for (const ranges of open) local.post({ t: 'ranges', ranges });
  localUnits = localAgain = openUnits;
  open = [];
  openUnits = 0;
}

function onRemote(message: SourceWorkerToMain): void {
  const epoch = inFlight.shift();
  if (epoch === undefined) return failOver(`it sent a ${String((message as { t?: unknown }).t)} no commit asked for`);
  if (message.t === 'batch') {
    Atomics.add(stats, 0, BigInt(epoch.units));
    handed.push('remote');
    channel.answer(message, [message.bytes]);
  } else if (message.t === 'error') {
    // The node's worker failed (it could not start, its disk, another version): the epoch runs
    // here instead; if it fails here too, that error fails it, as on a node without remote shares.
    inFlight.unshift(epoch);
    failOver(`it answered ${message.code}: ${message.message}`);
  } else {
    inFlight.unshift(epoch);
    failOver(`it sent a ${String((message as { t?: unknown }).t)} frame`);
  }
}

function start(): void {
  link = openShareLink(data.address, data.key, shareData(data).share, {
    timeoutMs: data.timeoutMs,
    onMessage: (message) => {
      if (mode === 'remote') onRemote(message as SourceWorkerToMain);
    },
    onFail: failOver,
    overdue: (now) => {
      const oldest = inFlight[0];
      return oldest !== undefined && now > oldest.deadline ? `no batch of epoch ${oldest.epoch} within ${data.timeoutMs} ms` : undefined;
    },
  });
}

channel.port.on('message', (message: MainToSourceWorker) => {
  switch (message.t) {
    case 'ranges':
      if (mode === 'local') {
        localUnits += unitsOf(message.ranges);
        return local!.post(message);
      }
      open.push(message.ranges);
      openUnits += unitsOf(message.ranges);
      return send(message);
    case 'commit':
      if (mode === 'local') {
        localCommit(message.epoch, localUnits, localAgain);
        localUnits = localAgain = 0;
        return;
      }
      inFlight.push({ epoch: message.epoch, ranges: open, units: openUnits, deadline: Date.now() + data.timeoutMs });
      open = [];
      openUnits = 0;
      return send(message);
    case 'durable': {
      const origin = handed.shift();
      if (origin === 'remote') send(message);
      else if (origin === 'local') local!.post(message);
      return;
    }
    case 'failed': {
      if (handed.includes('remote')) send(message);
      if (handed.includes('local')) local!.post(message);
      handed.length = 0;
      return;
    }
    case 'abort':
      if (mode === 'local') {
        localUnits = localAgain = 0;
        return local!.post(message);
      }
      open = [];
      openUnits = 0;
      return send(message);
    case 'close': {
      send(message);
      closing = true;
      // The server ends its side once it answered; a peer that does not is cut off.
      link?.end();
      channel.close(answers.then(() => local?.close()));
      return;
    }
  }
});

start();
