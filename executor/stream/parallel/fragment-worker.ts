// The entry of a parallel fragment's worker thread (PARALLEL.md): the fragment's operators, as an
// ordinary dataflow whose leaves are the fragment's inputs (placeholder scans), over the keys whose
// vnodes this worker owns, on a state store of its own whose reads go to the shared RocksDB and whose epoch batches go to the main thread (storage/handoff-backend.ts), which
// commits them with its own epoch in one write. Answers and the epoch handoff go through
// worker-port.ts; the main thread takes them with its worker-handle.ts.

import { workerData } from 'node:worker_threads';
import { toSqlError } from '../../../sql/errors.js';
import { HandoffBackend } from '../../../storage/handoff-backend.js';
import { MvccStateStore } from '../../../storage/mvcc-state-store.js';
import { RocksDatabase } from '../../../storage/rocksdb.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { appendChanges, emptyChanges, isEmpty, type ChangeBatch } from '../change-batch.js';
import { streamInputRelationId, type StreamPlan } from '../../../planner/stream/stream-plan.js';
import { fromTransfer } from '../../../planner/stream/plan-transfer.js';
import { Dataflow } from '../dataflow.js';
import { GroupCacheBudget } from '../join-cache.js';
import { StreamContext } from '../stream-context.js';
import { decodeChanges, encodeChanges } from './batch-codec.js';
import type { EncodedChanges, FragmentWorkerData, MainToWorker, WorkerToMain } from './protocol.js';
import { WorkerPort } from './worker-port.js';

const data = workerData as FragmentWorkerData;
const channel = new WorkerPort<WorkerToMain>();
const answer = (message: WorkerToMain, transfer: ArrayBuffer[] = []): void => channel.answer(message, transfer);
const errors: string[] = [];
/** Output of batches that emitted while holding (the combine bound), handed over at the seal. */
let held: ChangeBatch = emptyChanges();
/** The first failure of a batch pushed while holding: the seal answers it (every request gets one answer). */
let heldFailure: unknown;
const writer = new ByteWriter(64 * 1024);

interface Worker {
  readonly database: RocksDatabase;
  readonly store: MvccStateStore;
  readonly dataflow: Dataflow;
}

function start(): Worker {
  const database = RocksDatabase.attach(data.token, data.path);
  const store = new MvccStateStore(
    new HandoffBackend(database, (packed) =>
      channel.handOver({ t: 'batch', bytes: packed.buffer as ArrayBuffer, length: packed.length }, [packed.buffer as ArrayBuffer]),
    ),
    { retentionMs: data.retentionMs, memoryLimitBytes: data.rowCacheBytes },
  );
  const context = new StreamContext(store, data.viewId, { record: (_viewId, message) => void errors.push(message) }, data.viewRetentionMs);
  context.groupCaches = new GroupCacheBudget(data.groupCacheBytes);
  context.tuning = data.tuning;
  return { database, store, dataflow: new Dataflow(data.viewId, fromTransfer<StreamPlan>(data.plan), context) };
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

function handle(message: MainToWorker): void {
  if (worker === undefined) {
    if (message.t === 'close') {
      channel.close();
      return;
    }
    throw startFailure;
  }
  const { database, store, dataflow } = worker;
  switch (message.t) {
    case 'rows': {
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
    case 'seal': {
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
      return;
    }
    case 'commit':
      channel.commit(store, message.epoch);
      return;
    case 'durable':
      channel.durable();
      return;
    case 'failed':
      channel.failed(message.message);
      return;
    case 'abort':
      held = emptyChanges();
      heldFailure = undefined;
      dataflow.discard();
      store.abort();
      return;
    case 'close':
      dataflow.dispose();
      channel.close(database.close());
      return;
  }
}

/** Requests the main thread waits for: each gets exactly one answer, its own or an error. */
function answered(message: MainToWorker): boolean {
  return (message.t === 'rows' && !message.holding) || message.t === 'seal' || message.t === 'commit';
}

channel.port.on('message', (message: MainToWorker) => {
  try {
    handle(message);
  } catch (error) {
    if (!answered(message)) return;
    const failure = toSqlError(error);
    answer({ t: 'error', code: failure.code, message: failure.message });
  }
});
