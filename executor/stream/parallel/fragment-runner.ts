// A parallel fragment's worker thread (PARALLEL.md): the fragment's operators, as an ordinary
// dataflow whose leaves are the fragment's inputs (placeholder scans), over the keys whose vnodes
// this worker owns, on a state store of its own whose reads go to the shared RocksDB and whose
// epoch batches go to the main thread (storage/handoff-backend.ts), which commits them with its
// own epoch in one write. Answers and the epoch handoff go through worker-port.ts; the main thread
// takes them with its worker-handle.ts. The entry scripts are fragment-worker.ts and, when the
// workers generate a source's rows, executor/connectors/keyed-source-worker.ts.
//
// Inputs the workers generate (PARALLEL.md, "Sources in keyed fragments"; off by default): the
// main thread posts each worker its share of a replayed generator source's units (`ranges`); the
// worker generates their rows, runs the input's chain (filters, projections) and sends each row
// to the worker owning its key on the channel between them. Every worker takes the rows of each
// `ranges` message's shares in the order of their units (its own share buffered until the peers'
// earlier shares came), so a worker's keys arrive in the order they would on one thread, and
// stores how many `ranges` messages it is done with (`progress`): the main thread's credit.
// Barriers are aligned: at the seal a worker tells every peer it sent all of its rows of the epoch
// (`end`) and seals only once every peer told it so; a peer that ends, or does not answer within
// the deadline, fails the seal with an error naming it.

import { workerData, type MessagePort } from 'node:worker_threads';
import type { RelationDef } from '../../../sql/catalog.js';
import { SqlError, SqlState, toSqlError } from '../../../sql/errors.js';
import type { Row, Value } from '../../../sql/value.js';
import { HandoffBackend } from '../../../storage/handoff-backend.js';
import { MvccStateStore } from '../../../storage/mvcc-state-store.js';
import { RocksDatabase } from '../../../storage/rocksdb.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { appendChanges, emptyChanges, isEmpty, type ChangeBatch } from '../change-batch.js';
import { streamInputRelationId, type StreamPlan } from '../../../planner/stream/stream-plan.js';
import { fromTransfer } from '../../../planner/stream/plan-transfer.js';
import { keyedSourceScan } from '../../../planner/stream/parallel-source.js';
import { Dataflow } from '../dataflow.js';
import { GroupCacheBudget } from '../join-cache.js';
import { StreamContext } from '../stream-context.js';
import { decodeChanges, encodeChange, encodeChangeWithId, encodeChanges, takeEncoded } from './batch-codec.js';
import type { EncodedChanges, FragmentWorkerData, MainToWorker, PeerMessage, WorkerToMain } from './protocol.js';
import { VnodeHasher } from './vnode.js';
import { balancedMap } from './vnode-map.js';
import type { JobEnd, WorkerChannel } from '../../batch/pool-worker.js';
import { WorkerPort, type WorkerParts } from './worker-port.js';
import { WorkerMemoryMeter } from './worker-memory.js';

/** A replayed source's rows by split and unit (the connectors' SplitProducer). */
export interface RowProducer {
  produce(split: number, offset: number, limit: number, out: Row[], maxRows: number): number;
}

/** Builds a source's producer (the connectors' `replayProducer`). */
export type ProducerOf = (relation: RelationDef) => RowProducer;

/** Units generated per step: a batch through the input's chain and the exchange. */
const STEP_ROWS = 4096;
/**
 * How long a seal waits for every peer's rows of the epoch unless the engine's `peerTimeoutMs` says
 * otherwise (below the main thread's deadline, so the error names the peer).
 */
export const DEFAULT_PEER_TIMEOUT_MS = 60_000;

/** Tests: every worker sleeps this long before it runs a batch of rows (a dataflow slower than the lease keeper's stall bound). */
const ROWS_DELAY_MS = Number(process.env['OXBOW_TEST_WORKER_ROWS_DELAY_MS'] ?? 0);

/** Tests: worker 1's thread ends once it generated this many units (a worker that dies in the middle of an epoch). */
const EXIT_AFTER_UNITS = Number(process.env['OXBOW_TEST_WORKER_EXIT_UNITS'] ?? 0);

/** An input this worker generates: its chain, its source and its exchange's buffers. */
interface GeneratedInput {
  readonly slot: number;
  readonly chain: Dataflow;
  readonly relationId: number;
  readonly producer: RowProducer;
  readonly key: readonly number[];
  readonly hasher: VnodeHasher;
  readonly rowIds: boolean;
  readonly writers: ByteWriter[];
  readonly counts: number[];
}

/**
 * Runs a fragment's worker with `data`: the thread's workerData when the worker has a thread of its
 * own, a pooled job's data otherwise (`end` then gives the thread back to the pool at the close).
 */
export function runFragmentWorker(producerOf: ProducerOf | undefined, data: FragmentWorkerData = workerData as FragmentWorkerData, end?: JobEnd): void {
  const channel = new WorkerPort<WorkerToMain>(data as unknown as WorkerChannel, end);
  const answer = (message: WorkerToMain, transfer: ArrayBuffer[] = []): void => channel.answer(message, transfer);
  const errors: string[] = [];
  /** Output of batches that emitted while holding (the combine bound), handed over at the seal. */
  let held: ChangeBatch = emptyChanges();
  /** The first failure of a batch pushed while holding: the seal answers it (every request gets one answer). */
  let heldFailure: unknown;
  const writer = new ByteWriter(64 * 1024);
  const me = data.worker;
  const peers = data.peers ?? [];
  /** The owner of each vnode: a generated row goes to its key's owner among the peers. */
  let vnodes = data.vnodes ?? balancedMap(Math.max(1, peers.length));
  const peerTimeoutMs = data.tuning.peerTimeoutMs ?? DEFAULT_PEER_TIMEOUT_MS;
  /** `ranges` messages handled, and the main thread's view of those done with (received less the tasks waiting). */
  let rangesReceived = 0;
  const progress = data.progress === undefined ? undefined : new Int32Array(data.progress);
  function progressed(): void {
    if (progress === undefined) return;
    Atomics.store(progress, me, rangesReceived - tasks.length);
    Atomics.notify(progress, me);
  }

  interface Worker extends WorkerParts {
    readonly generated: (GeneratedInput | undefined)[];
    readonly groupCaches: GroupCacheBudget;
  }

  function start(): Worker {
    const database = RocksDatabase.attach(data.token, data.path);
    let memory: WorkerMemoryMeter | undefined;
    const store = new MvccStateStore(
      new HandoffBackend(database, (packed) =>
        channel.handOver({ t: 'batch', bytes: packed.buffer as ArrayBuffer, length: packed.length, memory: memory!.report() }, [packed.buffer as ArrayBuffer]),
      ),
      { retentionMs: data.retentionMs, memoryLimitBytes: data.rowCacheBytes },
    );
    if (data.base !== undefined) store.startAt(BigInt(data.base.epoch), BigInt(data.base.until));
    const context = new StreamContext(store, data.viewId, { record: (_viewId, message) => void errors.push(message) }, data.viewRetentionMs);
    context.groupCaches = new GroupCacheBudget(data.groupCacheBytes);
    memory = new WorkerMemoryMeter(store.budget, context.groupCaches, data.rowCacheBytes, data.groupCacheBytes);
    if (data.cacheShare < 1) memory.setShare(data.cacheShare);
    context.tuning = data.tuning;
    const generated = (data.sources ?? []).map((source, slot): GeneratedInput | undefined => {
      if (source === null) return undefined;
      const chain = fromTransfer<StreamPlan>(source.chain);
      const scan = keyedSourceScan(chain);
      if (scan === undefined || producerOf === undefined) throw new SqlError(SqlState.internalError, `input ${slot} of a parallel fragment is not a generated source`);
      return {
        slot,
        chain: new Dataflow(data.viewId, chain, context),
        relationId: scan.relation.id,
        producer: producerOf(scan.relation),
        key: source.key,
        hasher: new VnodeHasher(source.types),
        rowIds: data.rowIds[slot]!,
        writers: peers.map(() => new ByteWriter(64 * 1024)),
        counts: peers.map(() => 0),
      };
    });
    return { database, store, dataflow: new Dataflow(data.viewId, fromTransfer<StreamPlan>(data.plan), context), generated, memory, groupCaches: context.groupCaches };
  }

  /** The running worker, or why it could not start (every request is then answered with it). */
  let worker: Worker | undefined;
  let startFailure: unknown;
  try {
    worker = start();
  } catch (error) {
    startFailure = error;
  }

  /** A rows message's changes by placeholder relation (the dataflow's leaves). */
  function inputChanges(inputs: readonly (EncodedChanges | null)[]): Map<number, ChangeBatch> {
    const out = new Map<number, ChangeBatch>();
    inputs.forEach((encoded, slot) => {
      if (encoded !== null) out.set(streamInputRelationId(slot), decodeChanges(encoded, data.rowIds[slot]));
    });
    return out;
  }

  function output(changes: ChangeBatch): void {
    const encoded = encodeChanges(changes, writer);
    answer({ t: 'output', changes: encoded, errors: errors.splice(0) }, [encoded.bytes]);
  }

  /** Pushes changes of input `slot` into the open epoch, holding (their output is answered at the seal). */
  function pushHeld(dataflow: Dataflow, slot: number, changes: ChangeBatch): void {
    if (heldFailure !== undefined || changes.rows.length === 0) return;
    try {
      const out = dataflow.pushChunk(new Map([[streamInputRelationId(slot), changes]]));
      if (!isEmpty(out)) appendChanges(held, out);
    } catch (error) {
      heldFailure = error;
    }
  }

  // --- Between the workers: rows by key, `end` at each seal, `abort` at each abort.

  /** Seals asked by the main thread; `end`s and `abort`s received from each peer; aborts of this worker. */
  let seals = 0;
  let unitsGenerated = 0;
  let aborts = 0;
  const endsFrom = peers.map(() => 0);
  const abortsFrom = peers.map(() => 0);
  /** Why a peer can no longer send (its thread ended), if one cannot. */
  let peerGone: string | undefined;
  /** A seal waiting for its peers' `end`s, its deadline timer, and the main thread's messages that came meanwhile. */
  let sealing: NodeJS.Timeout | undefined;
  let waitingSeal = false;
  const queued: MainToWorker[] = [];

  /** Generates the units of each (split, from, to) of a generated input and sends each row to its key's owner. */
  function generate(input: GeneratedInput, ranges: readonly number[], own: ChangeBatch[]): void {
    const parallelism = peers.length;
    const map = vnodes;
    const sourceChanges = new Map<number, ChangeBatch>();
    for (let at = 0; at < ranges.length; at += 3) {
      const split = ranges[at]!;
      const to = ranges[at + 2]!;
      let offset = ranges[at + 1]!;
      while (offset < to) {
        const rows: Row[] = [];
        const before = offset;
        offset = input.producer.produce(split, offset, to, rows, STEP_ROWS);
        unitsGenerated += offset - before;
        if (EXIT_AFTER_UNITS > 0 && me === 1 && unitsGenerated >= EXIT_AFTER_UNITS) process.exit(1);
        if (rows.length === 0) continue;
        sourceChanges.set(input.relationId, { rows, signs: new Array<number>(rows.length).fill(1) });
        const changes = input.chain.pushAll(sourceChanges);
        const ids = input.rowIds ? changes.ids : undefined;
        const ownRows: Row[] = [];
        const ownSigns: number[] = [];
        const ownIds: Value[] | undefined = ids === undefined ? undefined : [];
        for (let i = 0; i < changes.rows.length; i++) {
          const row = changes.rows[i]!;
          const owner = map[input.hasher.ofColumns(row, input.key)]!;
          if (owner === me) {
            ownRows.push(row);
            ownSigns.push(changes.signs[i]!);
            if (ownIds !== undefined) ownIds.push(ids![i]!);
            continue;
          }
          if (ids === undefined) encodeChange(input.writers[owner]!, row, changes.signs[i]!);
          else encodeChangeWithId(input.writers[owner]!, row, changes.signs[i]!, ids[i]!);
          input.counts[owner]!++;
        }
        for (let peer = 0; peer < parallelism; peer++) {
          const count = input.counts[peer]!;
          if (count === 0) continue;
          const encoded = takeEncoded(input.writers[peer]!, count);
          input.writers[peer]!.reset();
          input.counts[peer] = 0;
          const message: PeerMessage = { t: 'rows', slot: input.slot, changes: encoded };
          peers[peer]!.postMessage(message, [encoded.bytes]);
        }
        if (ownRows.length > 0) own.push(ownIds === undefined ? { rows: ownRows, signs: ownSigns } : { rows: ownRows, signs: ownSigns, ids: ownIds });
      }
    }
  }

  // --- Rows in unit order: every worker gets every `ranges` message (its share possibly empty), in
  // the same order, and takes the rows of each message's shares in the order of the units they
  // cover (its own share buffered until the peers' earlier ones came): a worker's rows of a key
  // arrive as they would on one thread (q4's auctions by ascending id before their bids, which
  // the join's cache of new keys relies on).

  /** A `ranges` message whose shares' rows are taken in order: `order` the worker of its first share, `position` the shares taken. */
  interface Task {
    readonly order: number;
    own: ChangeBatch[];
    readonly slot: number;
    position: number;
  }
  /** Per peer, its shares received in message order: rows (encoded) and whether the share is complete. */
  interface Block {
    readonly items: PeerRows[];
    taken: number;
    done: boolean;
  }
  type PeerRows = Extract<PeerMessage, { t: 'rows' }>;
  const tasks: Task[] = [];
  const blocks: Block[][] = peers.map(() => []);

  function openBlock(peer: number): Block {
    const list = blocks[peer]!;
    const last = list[list.length - 1];
    if (last !== undefined && !last.done) return last;
    const block: Block = { items: [], taken: 0, done: false };
    list.push(block);
    return block;
  }

  /** Pushes the shares' rows that can be taken in order; then what the main thread sent meanwhile. */
  function consume(): void {
    if (worker === undefined) return;
    const dataflow = worker.dataflow;
    const parallelism = peers.length;
    while (tasks.length > 0) {
      const task = tasks[0]!;
      while (task.position < parallelism) {
        const from = (task.order + task.position) % parallelism;
        if (from === me) {
          for (const batch of task.own) pushHeld(dataflow, task.slot, batch);
          task.own = [];
          task.position++;
          continue;
        }
        const block = blocks[from]![0];
        if (block === undefined) return;
        while (block.taken < block.items.length) {
          const item = block.items[block.taken]!;
          block.items[block.taken++] = undefined as unknown as PeerRows;
          pushHeld(dataflow, item.slot, decodeChanges(item.changes, data.rowIds[item.slot]));
        }
        if (!block.done) return;
        blocks[from]!.shift();
        task.position++;
      }
      tasks.shift();
      progressed();
    }
    drain();
  }

  /** A peer is gone: its shares never complete, so the shares waiting fail the epoch (answered at the seal). */
  function abandonTasks(): void {
    if (tasks.length === 0) return;
    tasks.length = 0;
    progressed();
    heldFailure ??= new SqlError(SqlState.internalError, `worker ${me} of a parallel fragment cannot take its rows: ${peerGone}`);
    drain();
  }

  /** Seals the open epoch's pushes and answers the output (or the first failure). */
  function sealNow(dataflow: Dataflow): void {
    if (heldFailure !== undefined) {
      const failure = heldFailure;
      heldFailure = undefined;
      throw failure;
    }
    const sealed = dataflow.seal();
    const out = held;
    held = emptyChanges();
    appendChanges(out, sealed);
    output(out);
  }

  /** Ends a seal waiting for its peers once every peer's rows of the epoch are in (or one is gone). */
  function trySeal(): void {
    if (!waitingSeal || worker === undefined) return;
    const missing = endsFrom.findIndex((ends, peer) => peer !== me && ends < seals);
    if (missing >= 0 && peerGone === undefined) return;
    waitingSeal = false;
    clearTimeout(sealing);
    sealing = undefined;
    try {
      if (missing >= 0) throw new SqlError(SqlState.internalError, `worker ${me} of a parallel fragment cannot seal: ${peerGone}`);
      sealNow(worker.dataflow);
    } catch (error) {
      fail(error);
    }
    // What the main thread sent meanwhile, in order.
    drain();
  }

  /** The main thread's messages that waited for a seal or for shares, in order. */
  function drain(): void {
    while (!waitingSeal && queued.length > 0 && (tasks.length === 0 || goesOn(queued[0]!))) handleOrFail(queued.shift()!);
  }

  function fail(error: unknown): void {
    const failure = toSqlError(error);
    answer({ t: 'error', code: failure.code, message: failure.message });
  }

  /** Rows a peer sent after its abort while this worker has not aborted yet: they belong to the next epoch. */
  const early: PeerMessage[][] = peers.map(() => []);

  function fromPeer(peer: number, message: PeerMessage): void {
    if (message.t === 'abort') {
      abortsFrom[peer]!++;
      return;
    }
    if (message.t === 'end') {
      endsFrom[peer]!++;
      trySeal();
      return;
    }
    if (abortsFrom[peer]! > aborts) {
      early[peer]!.push(message);
      return;
    }
    // Rows sent before the peer's abort belong to the aborted epoch.
    if (abortsFrom[peer]! < aborts || worker === undefined) return;
    const block = openBlock(peer);
    if (message.t === 'share') block.done = true;
    else block.items.push(message);
    consume();
  }

  peers.forEach((port: MessagePort | null, peer) => {
    if (port === null) return;
    port.on('message', (message: PeerMessage) => fromPeer(peer, message));
    port.on('close', () => {
      peerGone ??= `worker ${peer} of the fragment ended`;
      abandonTasks();
      trySeal();
    });
  });

  function handle(message: MainToWorker): void {
    if (worker === undefined) {
      if (message.t === 'close') {
        channel.close();
        return;
      }
      // Peers wait for this worker's shares and `end`s, even when it could not start.
      if (message.t === 'ranges') {
        for (const port of peers) port?.postMessage({ t: 'share' } satisfies PeerMessage);
        rangesReceived++;
        progressed();
      }
      if (message.t === 'seal') for (const port of peers) port?.postMessage({ t: 'end' } satisfies PeerMessage);
      throw startFailure;
    }
    const dataflow = worker.dataflow;
    switch (message.t) {
      case 'rows': {
        if (ROWS_DELAY_MS > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ROWS_DELAY_MS);
        if (message.holding) {
          if (heldFailure !== undefined) return;
          try {
            const out = dataflow.pushChunk(inputChanges(message.inputs));
            if (!isEmpty(out)) appendChanges(held, out);
          } catch (error) {
            heldFailure = error;
          }
          return;
        }
        output(dataflow.pushAll(inputChanges(message.inputs)));
        return;
      }
      case 'ranges': {
        rangesReceived++;
        const input = worker.generated[message.slot];
        const own: ChangeBatch[] = [];
        try {
          if (input === undefined) throw new SqlError(SqlState.internalError, `input ${message.slot} of a parallel fragment is not generated by its workers`);
          if (heldFailure === undefined) generate(input, message.ranges, own);
        } catch (error) {
          heldFailure ??= error;
        }
        // Every peer takes this worker's share of the message, empty or not, in message order.
        for (const port of peers) port?.postMessage({ t: 'share' } satisfies PeerMessage);
        if (peerGone !== undefined) {
          heldFailure ??= new SqlError(SqlState.internalError, `worker ${me} of a parallel fragment cannot take its rows: ${peerGone}`);
          progressed();
          return;
        }
        tasks.push({ order: message.order, own, slot: message.slot, position: 0 });
        consume();
        return;
      }
      case 'seal': {
        if (peers.length === 0) {
          sealNow(dataflow);
          return;
        }
        // Every row of this epoch went to its owner before this: say so, then wait for the peers'.
        seals++;
        for (const port of peers) port?.postMessage({ t: 'end' } satisfies PeerMessage);
        waitingSeal = true;
        sealing = setTimeout(() => {
          const late = endsFrom.findIndex((ends, peer) => peer !== me && ends < seals);
          peerGone ??= `worker ${late} did not send its rows of the epoch within ${peerTimeoutMs / 1000} s`;
          trySeal();
        }, peerTimeoutMs);
        trySeal();
        return;
      }
      case 'abort':
        aborts++;
        for (const port of peers) port?.postMessage({ t: 'abort' } satisfies PeerMessage);
        tasks.length = 0;
        progressed();
        for (const list of blocks) list.length = 0;
        // What peers that aborted first sent since: the open epoch's.
        early.forEach((items, peer) => {
          for (const item of items.splice(0)) fromPeer(peer, item);
        });
        held = emptyChanges();
        heldFailure = undefined;
        channel.control(message, worker);
        return;
      case 'close':
        clearTimeout(sealing);
        for (const port of peers) port?.close();
        channel.control(message, worker);
        return;
      case 'commit':
      case 'durable':
      case 'failed':
      case 'budget':
        channel.control(message, worker);
        return;
    }
  }

  /** Requests the main thread waits for: each gets exactly one answer, its own or an error. */
  function answered(message: MainToWorker): boolean {
    return (message.t === 'rows' && !message.holding) || message.t === 'seal' || message.t === 'commit';
  }

  /** Messages handled while shares of earlier ranges are still to come (their rows do not depend on the order). */
  function goesOn(message: MainToWorker): boolean {
    return message.t === 'ranges' || message.t === 'rows' || message.t === 'abort';
  }

  /** Handles a message; a failure answers a request that wants an answer (any other's is dropped). */
  function handleOrFail(message: MainToWorker): void {
    try {
      handle(message);
    } catch (error) {
      if (!answered(message)) return;
      fail(error);
    }
  }

  function receive(message: MainToWorker): void {
    // The caches' budget applies at once, between any two messages.
    if (message.t === 'budget') {
      worker?.memory.setShare(message.share);
      return;
    }
    // A cut that kept this owner: rows it routes from now on go by the new map (it comes at an epoch
    // boundary, so before any rows of the next epoch); vnodes it gained have rows its tables' key
    // bounds do not cover.
    if (message.t === 'remap') {
      vnodes = message.vnodes;
      if (message.regained === true && worker !== undefined) {
        // Vnodes it held before: what its caches hold of them may be stale.
        worker.store.committedElsewhere();
        worker.groupCaches.forgetAll();
      } else if (message.gained === true && worker !== undefined) {
        worker.store.rowsAddedElsewhere();
        worker.groupCaches.rowsAddedElsewhere();
      }
      return;
    }
    // A seal waiting for its peers answers first, and the shares of the ranges before a seal are
    // taken before it: what came after them waits (more ranges and rows go on meanwhile).
    if (waitingSeal || queued.length > 0 || (tasks.length > 0 && !goesOn(message))) {
      queued.push(message);
      return;
    }
    handleOrFail(message);
  }

  channel.port.on('message', receive);
}
