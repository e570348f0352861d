// A Kafka source fragment's worker side (executor/stream/PARALLEL.md, "Kafka sources"): one
// partition's messages, posted undecoded by the source's Kafka worker (raw-batch.ts) and decoded
// here by the same packer that worker uses (`PartitionDecoder`: the JSON fast path, else
// MessageDecoder; row ids `kafkaRowId` of partition and offset; bad messages to the rejects the
// main thread records in the source's errors), or already decoded and packed in storage's row
// codec (decoded-batch.ts); the rows are pushed through the view's dataflow (filters, projections,
// the blind-insert materialize) in steps. Which worker stores a row does not matter: the row id is
// the message's, the same on every thread and after every restart.

import type { Row } from '../../../sql/value.js';
import type { ChangeBatch } from '../../stream/change-batch.js';
import type { Dataflow } from '../../stream/dataflow.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { RawMessages } from '../../stream/stream-context.js';
import type { WorkerReject } from '../../stream/parallel/source-protocol.js';
import { MessageDecoder } from '../message-decoder.js';
import { sourceLayout } from '../source-layout.js';
import { PAYLOAD_PREFIX_BYTES } from '../source-status.js';
import { BatchPacker } from './batch-packer.js';
import { unpackRows, type PackedChanges } from './decoded-batch.js';
import { kafkaOptions } from './kafka-options.js';
import { kafkaRowId } from './kafka-replay.js';
import { unpackRaw } from './raw-batch.js';
import type { RawMessageBatch } from '../source.js';

/** Decodes a replayed Kafka source's raw partition batches as its Kafka worker would (kafka-worker.ts). */
export class PartitionDecoder {
  private readonly packer: BatchPacker;

  constructor(relation: RelationDef) {
    const layout = sourceLayout(relation);
    const maxMessageBytes = kafkaOptions(relation.options ?? {}).maxMessageBytes;
    this.packer = new BatchPacker(layout, new MessageDecoder(layout, maxMessageBytes, kafkaRowId), maxMessageBytes, kafkaRowId);
  }

  /** The rows of `raw`, packed; each message that does not decode goes to `rejects`. */
  decode(partition: number, raw: RawMessages, rejects: WorkerReject[]): PackedChanges {
    return this.decodeBatch(unpackRaw(partition, raw, 0n), rejects);
  }

  /** The rows of a partition's messages (fetched by this owner: kafka-ranges.ts), packed; each message that does not decode goes to `rejects`. */
  decodeBatch(batch: RawMessageBatch, rejects: WorkerReject[]): PackedChanges {
    return this.packer.pack(batch, 0, (p, offset, error, payload) => {
      rejects.push({ partition: p, offset, error, payload: payload === null ? null : Uint8Array.prototype.slice.call(payload, 0, PAYLOAD_PREFIX_BYTES) });
    });
  }
}

const NO_KINDS = new Int8Array(0);

/** Pushes the `count` packed rows of `rows` (inserts of source `sourceId`) through `dataflow` in steps of `step`; returns the view rows written. */
export function pushPartitionRows(dataflow: Dataflow, sourceId: number, count: number, rows: Uint8Array, step: number): number {
  const all = unpackRows({ count, rows, kinds: NO_KINDS });
  const inputs = new Map<number, ChangeBatch>();
  let written = 0;
  for (let from = 0; from < all.length; from += step) {
    const chunk: Row[] = from === 0 && all.length <= step ? all : all.slice(from, from + step);
    inputs.set(sourceId, { rows: chunk, signs: new Array<number>(chunk.length).fill(1) });
    written += dataflow.pushChunk(inputs).rows.length;
  }
  return written;
}
