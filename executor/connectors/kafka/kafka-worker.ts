// A Kafka source's worker thread: the kafkajs consumer (fetch, record batch decoding, decompression,
// kafka-reader.ts) and the message decoding (JSON/CSV to the relation's rows, message-decoder.ts)
// run here, off the main thread. Each fetched partition batch is decoded, packed
// (decoded-batch.ts) and posted with its offsets; the main thread (kafka-worker-reader.ts) applies
// it in the epoch. Offsets stay oxbow's: the worker starts at the offsets it is given and never
// posts a message below a position it already passed, and the main thread commits the offsets with
// the epoch.
//
// Back-pressure: at most `maxBatchesInFlight` batches are posted and not yet acknowledged; the
// next waits, which holds kafkajs's eachBatch and so pauses fetching. A `stop` message stops the
// consumer and ends the thread.

import { parentPort, workerData } from 'node:worker_threads';
import { MessageDecoder } from '../message-decoder.js';
import { sourceLayout } from '../source-layout.js';
import { fetchSchemaIds } from '../schema-registry.js';
import { PAYLOAD_PREFIX_BYTES } from '../source-status.js';
import type { RawMessageBatch, SourceListener } from '../source.js';
import { BatchPacker } from './batch-packer.js';
import { packRaw, rawBuffers } from './raw-batch.js';
import { KafkaReader } from './kafka-reader.js';
import { isKafkaReplayed, kafkaRowId } from './kafka-replay.js';
import type { KafkaWorkerData, MainToWorker, RejectedMessage, WorkerToMain } from './worker-protocol.js';

const port = parentPort;
if (port === null) throw new Error('kafka-worker.ts runs as a worker thread (see kafka-worker-reader.ts)');
const data = workerData as KafkaWorkerData;

const layout = sourceLayout(data.relation);
// Row ids are the engine's: the main thread sets them; the worker leaves a placeholder. A source that
// stores no rows derives them from partition and offset here (kafka-replay.ts), as its replays do.
const nextRowId = isKafkaReplayed(data.relation) ? kafkaRowId : (): bigint => 0n;
const decoder = new MessageDecoder(layout, data.options.maxMessageBytes, nextRowId);
// ENCODE JSON messages go through the fast path (json-row-packer.ts) unless the reader turned it off.
const packer = new BatchPacker(layout, decoder, data.options.maxMessageBytes, nextRowId, { fast: data.fastJson });
const reader = new KafkaReader(data.options, data.name);
const positions = new Map<number, bigint>(data.resume);
let inFlight = 0;
let waiting: (() => void)[] = [];
let stopping = false;
/** Post batches undecoded (the main thread's `raw` message). */
let raw = data.raw;

function post(message: WorkerToMain, transfer?: ArrayBuffer[]): void {
  port!.postMessage(message, transfer);
}

const listener: SourceListener = {
  async batch(batch: RawMessageBatch): Promise<void> {
    if (stopping) return;
    const { partition, offsets } = batch;
    // Messages below the position (a seek that applied late, a re-fetch) were read already.
    const position = positions.get(partition);
    let from = 0;
    if (position !== undefined) while (from < offsets.length && offsets[from]! < position) from++;
    if (from === offsets.length) {
      post({ type: 'highWatermark', partition, offset: batch.highWatermark });
      return;
    }
    // ENCODE AVRO/PROTOBUF: the schemas the batch names, fetched before decoding (a registry that is
    // down holds the batch and so the partition: retried, shown as trouble, nothing skipped).
    const registry = decoder.schemaDecoder?.registry;
    if (registry !== undefined) {
      const trouble = (message: string): void => listener.trouble(message);
      const recovered = (): void => listener.recovered();
      await fetchSchemaIds(registry, batch.values, from, trouble, recovered, () => stopping);
      if (layout.format === 'upsert') await fetchSchemaIds(registry, batch.keys, from, trouble, recovered, () => stopping);
      if (stopping) return;
    }
    if (raw) {
      // Only Kafka source fragments read the source: their workers decode.
      const messages = packRaw(batch, from);
      const next = offsets[offsets.length - 1]! + 1n;
      positions.set(partition, next);
      while (inFlight >= data.maxBatchesInFlight && !stopping) await new Promise<void>((resolve) => waiting.push(resolve));
      if (stopping) return;
      inFlight++;
      post({ type: 'raw', partition, firstOffset: offsets[from]!, next, highWatermark: batch.highWatermark, raw: messages }, rawBuffers(messages));
      return;
    }
    const rejects: RejectedMessage[] = [];
    const fastBefore = packer.fast?.packed ?? 0;
    const packed = packer.pack(batch, from, (_partition, offset, error, payload) => {
      rejects.push({ offset, error, payload: payload === null ? null : Uint8Array.prototype.slice.call(payload, 0, PAYLOAD_PREFIX_BYTES) });
    });
    const count = offsets.length - from;
    const firstOffset = offsets[from]!;
    const next = offsets[offsets.length - 1]! + 1n;
    positions.set(partition, next);
    // The check and the increment run in one synchronous step (no await between them), so
    // concurrent eachBatch calls cannot all pass on the same free slot.
    while (inFlight >= data.maxBatchesInFlight && !stopping) await new Promise<void>((resolve) => waiting.push(resolve));
    if (stopping) return;
    inFlight++;
    post(
      { type: 'batch', partition, firstOffset, next, messages: count, highWatermark: batch.highWatermark, count: packed.count, rows: packed.rows, kinds: packed.kinds, rejects, fastRows: (packer.fast?.packed ?? 0) - fastBefore },
      [packed.rows.buffer as ArrayBuffer, packed.kinds.buffer as ArrayBuffer],
    );
  },
  trouble(message: string): void {
    if (!stopping) post({ type: 'trouble', message });
  },
  recovered(): void {
    if (!stopping) post({ type: 'recovered' });
  },
  highWatermark(partition: number, offset: bigint): void {
    if (!stopping) post({ type: 'highWatermark', partition, offset });
  },
};

port.on('message', (message: MainToWorker) => {
  if (message.type === 'raw') {
    raw = message.on;
    return;
  }
  if (message.type === 'ack') {
    inFlight--;
    const wake = waiting;
    waiting = [];
    for (const resolve of wake) resolve();
    return;
  }
  if (stopping) return;
  stopping = true;
  const wake = waiting;
  waiting = [];
  for (const resolve of wake) resolve();
  void reader.stop().finally(() => {
    port.close();
    // kafkajs may leave a timer behind; the thread ends here whatever it holds.
    process.exit(0);
  });
});

await reader.start(positions, listener);
