// A Kafka source fragment's worker side (executor/stream/PARALLEL.md, "Source fragments", Kafka): the
// rows of one partition's batch, decoded by the source's Kafka worker (kafka-worker.ts) with their
// row ids set (`kafkaRowId`: partition and offset) and packed in storage's row codec
// (decoded-batch.ts), unpacked here and pushed through the view's dataflow (filters, projections,
// the blind-insert materialize) in steps. Which worker stores a row does not matter: the row id is
// the message's, the same on every thread and after every restart.

import type { Row } from '../../../sql/value.js';
import type { ChangeBatch } from '../../stream/change-batch.js';
import type { Dataflow } from '../../stream/dataflow.js';
import { unpackRows } from './decoded-batch.js';

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
