// The entry of a source fragment's worker thread (executor/stream/PARALLEL.md, "Source fragments";
// the main thread's side is executor/stream/parallel/source-fragment.ts, which starts this script
// where source-fragment-worker-script.ts finds it): the view's
// ordinary dataflow (source scan, filters and projections, blind-insert materialize) over a state
// store of its own whose reads go to the shared RocksDB and whose epoch batches go to the main
// thread (storage/handoff-backend.ts), which commits them with its own epoch, and the source
// offsets they cover, in one write. The rows come from the source's producer: each range of units
// the main thread posts is generated here (replayed rows carry their unit numbers as row ids, so
// any worker generating a unit makes the same row); a Kafka source's come as its partitions'
// messages, decoded here (kafka/fragment-rows.ts; row ids from partition and offset, so any worker
// decoding a message makes the same row), or as offset ranges it fetches from the broker itself
// (kafka/kafka-ranges.ts: a cluster's nodes fetching a Kafka source fragment's partitions; the
// messages that come after a range wait for its fetch, so a commit seals the epoch with every
// range in; the messages fetched, per partition, go back with the epoch's batch, `fetched`, for
// the source's message counters). Answers and the epoch handoff go through
// worker-port.ts; the main thread takes them with its worker-handle.ts. It runs as a job of a
// pooled thread (`runJob`: executor/batch/worker-pool.ts) or, as a thread's own script,
// at once.

import { workerData } from 'node:worker_threads';
import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import type { Row } from '../../sql/value.js';
import { HandoffBackend } from '../../storage/handoff-backend.js';
import { MvccStateStore } from '../../storage/mvcc-state-store.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import { replayProducer } from './source-replay.js';
import { isKafkaReplayed } from './kafka/kafka-replay.js';
import { PartitionDecoder, pushPartitionRows } from './kafka/fragment-rows.js';
import { RangeFetcher } from './kafka/kafka-ranges.js';
import type { WorkerReject } from '../stream/parallel/source-protocol.js';
import type { SplitProducer } from './generators/split-producer.js';
import { Dataflow } from '../stream/dataflow.js';
import { StreamContext } from '../stream/stream-context.js';
import type { ChangeBatch } from '../stream/change-batch.js';
import type { MainToSourceWorker, SourceWorkerData, SourceWorkerToMain } from '../stream/parallel/source-protocol.js';
import { WorkerPort, type WorkerParts } from '../stream/parallel/worker-port.js';
import type { JobEnd, RunJob, WorkerChannel } from '../batch/pool-worker.js';
import { pooledThread } from '../batch/worker-pool.js';
import { WorkerMemoryMeter } from '../stream/parallel/worker-memory.js';
import type { MaterializePlan, ScanPlan } from '../../planner/stream/parallel-source.js';
import { fromTransfer } from '../../planner/stream/plan-transfer.js';

/** Rows generated per step: a batch through the dataflow. */
const STEP_ROWS = 4096;

interface Running extends WorkerParts {
  /** Undefined for a Kafka source: its messages come raw (`raw`, decoded here) or its rows packed (`rows`). */
  readonly producer: SplitProducer | undefined;
  readonly sourceId: number;
  /** A Kafka source's decoder of raw partition batches. */
  readonly decoder: PartitionDecoder | undefined;
  /** A Kafka source's fetches of the offset ranges it is given (`ranges`: triples partition, from, to). */
  readonly fetcher: RangeFetcher | undefined;
}

/** Runs a source fragment's worker with `data`; `end` gives a pooled thread back to its pool at the close. */
export function runSourceFragmentWorker(data: SourceWorkerData, end?: JobEnd): void {
  const plan = fromTransfer<MaterializePlan>(data.plan);
  const channel = new WorkerPort<SourceWorkerToMain>(data as unknown as WorkerChannel, end);

  const errors: string[] = [];
  /** Messages of the open epoch a Kafka source fragment's worker could not decode (for the source's errors). */
  const rejects: WorkerReject[] = [];
  /** View rows written into the open epoch. */
  let written = 0;
  /**
   * Messages of the open epoch's Kafka offset ranges, by partition (what kafkajs's fetch left of
   * them: no control record, no aborted message), handed over with the batch (`fetched`) for the
   * source's message counters.
   */
  const fetched = new Map<number, number>();
  /** A direct sink's plan (`directSink`): its materialize's output counted here per epoch, handed over with the batch. */
  const counts = data.directSink === true ? { inserts: 0, deletes: 0 } : undefined;
  /** The first failure of the open epoch's ranges: the commit answers it (every commit gets one answer). */
  let failure: unknown;

  /** The open epoch's `fetched` as pairs (partition, messages), cleared. */
  function fetchedPairs(): number[] {
    const pairs: number[] = [];
    for (const [partition, messages] of fetched) pairs.push(partition, messages);
    fetched.clear();
    return pairs;
  }

  function sourceScan(): ScanPlan {
    let node = plan.input;
    while (node.kind === 'StreamFilter' || node.kind === 'StreamProject') node = node.input;
    if (node.kind !== 'StreamTableScan') throw new SqlError(SqlState.internalError, 'a source fragment without a source scan');
    return node;
  }

  function start(): Running {
    const database = RocksDatabase.attach(data.token, data.path);
    let memory: WorkerMemoryMeter | undefined;
    const store = new MvccStateStore(
      new HandoffBackend(database, (packed) => {
        const rows = written;
        written = 0;
        const changes = counts === undefined ? undefined : { inserts: counts.inserts, deletes: counts.deletes };
        if (counts !== undefined) counts.inserts = counts.deletes = 0;
        const messages = fetched.size === 0 ? undefined : fetchedPairs();
        return channel.handOver({ t: 'batch', bytes: packed.buffer as ArrayBuffer, length: packed.length, rows, errors: errors.splice(0), rejects: rejects.splice(0), ...(messages === undefined ? {} : { fetched: messages }), ...(changes === undefined ? {} : { changes }), memory: memory!.report() }, [packed.buffer as ArrayBuffer]);
      }),
      { retentionMs: data.retentionMs, memoryLimitBytes: data.rowCacheBytes },
    );
    memory = new WorkerMemoryMeter(store.budget, undefined, data.rowCacheBytes, 0);
    if (data.cacheShare < 1) memory.setShare(data.cacheShare);
    const context = new StreamContext(store, data.viewId, { record: (_viewId, message) => void errors.push(message) }, data.viewRetentionMs);
    context.tuning = data.tuning;
    if (counts !== undefined) {
      // A direct sink keeps no rows (an append-only query) and writes no log: its materialize's output is only counted.
      context.sinkOutput = { kind: 'direct', rowsKept: false };
      context.directChanges = {
        write(changes: ChangeBatch): void {
          const signs = changes.signs;
          let inserts = 0;
          for (let i = 0; i < signs.length; i++) if (signs[i]! > 0) inserts++;
          counts.inserts += inserts;
          counts.deletes += signs.length - inserts;
        },
      };
    }
    const scan = sourceScan();
    return { database, store, dataflow: new Dataflow(data.viewId, plan, context), producer: isKafkaReplayed(scan.relation) ? undefined : replayProducer(scan.relation), sourceId: scan.relation.id, memory, decoder: isKafkaReplayed(scan.relation) ? new PartitionDecoder(scan.relation) : undefined, fetcher: isKafkaReplayed(scan.relation) ? new RangeFetcher(scan.relation) : undefined };
  }

  let running: Running | undefined;
  let startFailure: unknown;
  try {
    running = start();
  } catch (error) {
    startFailure = error;
  }

  /** Generates the units of each (split, from, to) and pushes their rows through the view. */
  function generate({ dataflow, producer, sourceId }: Running, ranges: readonly number[]): void {
    if (producer === undefined) throw new SqlError(SqlState.internalError, "a Kafka source fragment's worker was given split ranges");
    const inputs = new Map<number, ChangeBatch>();
    // The rows are new arrays only this dataflow's scan reads: narrowed in place when they go straight to the view.
    const rowsOwned = dataflow.passesRowsThrough(sourceId);
    for (let at = 0; at < ranges.length; at += 3) {
      const split = ranges[at]!;
      const to = ranges[at + 2]!;
      let offset = ranges[at + 1]!;
      while (offset < to) {
        const rows: Row[] = [];
        offset = producer.produce(split, offset, to, rows, STEP_ROWS);
        if (rows.length === 0) continue;
        inputs.set(sourceId, { rows, signs: new Array<number>(rows.length).fill(1), rowsOwned });
        const out = dataflow.pushChunk(inputs);
        written += out.rows.length;
      }
    }
  }

  /** Fetches a Kafka source's offset ranges and pushes their rows through the view. */
  async function fetchRanges({ dataflow, sourceId, decoder, fetcher }: Running, ranges: readonly number[]): Promise<void> {
    await fetcher!.fetch(ranges, (batch) => {
      if (failure !== undefined) return;
      fetched.set(batch.partition, (fetched.get(batch.partition) ?? 0) + batch.offsets.length);
      const packed = decoder!.decodeBatch(batch, rejects);
      if (packed.count > 0) written += pushPartitionRows(dataflow, sourceId, packed.count, packed.rows, STEP_ROWS);
    });
  }

  /**
   * A Kafka source's fetch under way (`fetch`, set by its `ranges`): the messages that come after
   * it wait for it, in order (a commit seals the epoch once its ranges are in).
   */
  let fetch: Promise<void> | undefined;
  let queue: Promise<void> = Promise.resolve();
  let queued = 0;

  function handle(message: MainToSourceWorker): void {
    if (running === undefined) {
      if (message.t === 'close') {
        channel.close();
        return;
      }
      if (message.t === 'commit') throw startFailure;
      return;
    }
    const dataflow = running.dataflow;
    switch (message.t) {
      case 'ranges':
        if (failure !== undefined) return;
        if (running.fetcher !== undefined) {
          fetch = fetchRanges(running, message.ranges).catch((error: unknown) => {
            failure ??= error;
          });
          return;
        }
        try {
          generate(running, message.ranges);
        } catch (error) {
          failure = error;
        }
        return;
      case 'rows':
        if (failure !== undefined) return;
        try {
          written += pushPartitionRows(dataflow, running.sourceId, message.count, message.rows, STEP_ROWS);
        } catch (error) {
          failure = error;
        }
        return;
      case 'raw':
        if (failure !== undefined) return;
        try {
          if (running.decoder === undefined) throw new SqlError(SqlState.internalError, "a generator source fragment's worker was given Kafka messages");
          const packed = running.decoder.decode(message.partition, message.raw, rejects);
          if (packed.count > 0) written += pushPartitionRows(dataflow, running.sourceId, packed.count, packed.rows, STEP_ROWS);
        } catch (error) {
          failure = error;
        }
        return;
      case 'commit': {
        if (failure !== undefined) {
          const failed = failure;
          failure = undefined;
          fetched.clear();
          throw failed;
        }
        channel.control(message, running);
        return;
      }
      case 'abort':
        failure = undefined;
        written = 0;
        fetched.clear();
        if (counts !== undefined) counts.inserts = counts.deletes = 0;
        errors.length = 0;
        rejects.length = 0;
        channel.control(message, running);
        return;
      case 'close':
        void running.fetcher?.close();
        channel.control(message, running);
        return;
      case 'durable':
      case 'failed':
      case 'budget':
        channel.control(message, running);
        return;
    }
  }

  function handleOne(message: MainToSourceWorker): void {
    try {
      handle(message);
    } catch (error) {
      // Only a commit is waited for: it gets exactly one answer, its batch or the error.
      if (message.t !== 'commit') return;
      const failed = toSqlError(error);
      channel.answer({ t: 'error', code: failed.code, message: failed.message });
    }
  }

  /** Handles `message`; resolves once a fetch it started is done. */
  function handleInTurn(message: MainToSourceWorker): Promise<void> | undefined {
    handleOne(message);
    const started = fetch;
    fetch = undefined;
    return started;
  }

  channel.port.on('message', (message: MainToSourceWorker) => {
    if (queued === 0) {
      const started = handleInTurn(message);
      if (started === undefined) return;
      queued++;
      queue = started.finally(() => queued--);
      return;
    }
    // After the fetches posted before it (they run in turn), and whatever waits for them.
    queued++;
    queue = queue.then(() => handleInTurn(message)).finally(() => queued--);
  });
}

export const runJob: RunJob = (data, end) => runSourceFragmentWorker(data as SourceWorkerData, end);

if (!pooledThread()) runSourceFragmentWorker(workerData as SourceWorkerData);
