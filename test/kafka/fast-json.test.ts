// The JSON fast path of the Kafka worker (executor/connectors/kafka/json-row-packer.ts) through a real
// broker: the corpus of json-corpus.ts (valid messages of every type, edge numbers, escapes,
// invalid and valid UTF-8, invalid JSON, wrong types, missing/null/duplicate fields, an oversized
// message, timestamps of every shape), spread over two partitions with keys and timestamps, read
// by a KafkaWorkerReader with the fast path (the default) and by one with it turned off
// (the reader's `fastJson: false`). Both equal the oracle, MessageDecoder on
// the main thread over the messages as produced: the same rows (INCLUDE columns and row ids
// included) and the same rejected messages (partition, offset, error, payload prefix). The fast
// reader packed most valid rows itself, the other none.
// The worker runs the build (dist/), which `npm test` makes first.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import { MessageDecoder, type DecodedChanges } from '../../executor/connectors/message-decoder.js';
import { sourceLayout } from '../../executor/connectors/source-layout.js';
import { kafkaOptions } from '../../executor/connectors/kafka/kafka-options.js';
import { kafkaRowId } from '../../executor/connectors/kafka/kafka-replay.js';
import { KafkaWorkerReader, type DecodedBatchListener } from '../../executor/connectors/kafka/kafka-worker-reader.js';
import { CORPUS_MAX_BYTES, corpus, EVERY_TYPE_COLUMNS, INCLUDE_COLUMNS, jsonSource, producedBatch, VALID_EVERY_TYPE } from '../../executor/connectors/kafka/tests/json-corpus.js';
import { startBroker, type Broker } from './broker.js';
import { waitFor } from '../support/wait-for.js';

let broker: Broker;

beforeAll(async () => {
  broker = await startBroker();
}, 180_000);

afterAll(async () => {
  await broker?.stop();
});

const PARTITIONS = 2;

function relation(topic: string): RelationDef {
  return jsonSource(EVERY_TYPE_COLUMNS, {
    id: 30002,
    name: topic,
    options: { connector: 'kafka', topic, 'properties.bootstrap.server': broker.bootstrap, 'max.message.bytes': String(CORPUS_MAX_BYTES) },
    include: [...INCLUDE_COLUMNS],
    // Row ids from partition and offset, set by the worker (as a source that stores no rows has them).
    replayed: true,
  });
}

interface Read {
  rows: Map<number, Row[]>;
  rejects: string[];
  fastRows: number;
}

/** Reads every message of `topic` through a worker reader; `fast: false` turns the fast path off in its worker. */
async function readAll(def: RelationDef, total: number, fast: boolean): Promise<Read> {
  const read: Read = { rows: new Map(), rejects: [], fastRows: 0 };
  let messages = 0;
  const troubles: string[] = [];
  const listener: DecodedBatchListener = {
    decoded(batch) {
      const list = read.rows.get(batch.partition) ?? [];
      for (const row of batch.rows) list.push(row);
      read.rows.set(batch.partition, list);
      for (const reject of batch.rejects) read.rejects.push(`${batch.partition}:${reject.offset} ${reject.error} [${reject.payload?.toString('hex') ?? 'null'}]`);
      messages += batch.messages;
      return Promise.resolve();
    },
    batch: () => Promise.reject(new Error('a worker reader hands over decoded batches')),
    trouble: (message) => void troubles.push(message),
    recovered: () => undefined,
    highWatermark: () => undefined,
  };
  const reader = new KafkaWorkerReader(def, kafkaOptions(def.options!), `public.${def.name}`, () => 0n, { fastJson: fast });
  await reader.start(await reader.startOffsets(), listener);
  await waitFor(`every message through the worker (fast ${fast})`, async () => (messages >= total ? true : undefined));
  await reader.stop();
  expect(troubles).toEqual([]);
  read.fastRows = reader.fastRows;
  return read;
}

describe('the Kafka worker JSON fast path', () => {
  it('gives the general path rows and rejected messages through a real broker, and takes the valid messages itself', async () => {
    const topic = 'fast-json-corpus';
    await broker.createTopic(topic, PARTITIONS);
    const messages = corpus();
    const sent: { partition: number; value: Buffer; key: string | null; timestamp: number }[][] = Array.from({ length: PARTITIONS }, () => []);
    messages.forEach((message, i) => {
      const value = typeof message === 'string' ? Buffer.from(message, 'utf8') : message;
      sent[i % PARTITIONS]!.push({ partition: i % PARTITIONS, value, key: i % 3 === 0 ? null : `key-${i}`, timestamp: 1_764_000_000_000 + i * 1001 });
    });
    for (const list of sent) await broker.send(topic, list);
    const def = relation(topic);

    // The oracle: MessageDecoder over the messages as produced (offsets 0.. per partition).
    const layout = sourceLayout(def);
    const expectedRows = new Map<number, Row[]>();
    const expectedRejects: string[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const raw = producedBatch(p, sent[p]!);
      const changes: DecodedChanges = { rows: [], kinds: [] };
      new MessageDecoder(layout, CORPUS_MAX_BYTES, kafkaRowId).decode(raw, changes, (partition, offset, error, payload) =>
        expectedRejects.push(`${partition}:${offset} ${error} [${payload?.subarray(0, 256).toString('hex') ?? 'null'}]`),
      );
      expectedRows.set(p, changes.rows);
    }
    expect(expectedRejects.length).toBeGreaterThan(50);

    const fast = await readAll(def, messages.length, true);
    const general = await readAll(def, messages.length, false);
    for (const read of [fast, general]) {
      for (let p = 0; p < PARTITIONS; p++) expect(read.rows.get(p) ?? []).toEqual(expectedRows.get(p));
      expect(read.rejects.sort()).toEqual([...expectedRejects].sort());
    }
    // Every valid message but '{}' (it lacks the NOT NULL field) is packed by the fast path.
    expect(fast.fastRows).toBeGreaterThanOrEqual(VALID_EVERY_TYPE.length - 1);
    expect(general.fastRows).toBe(0);
  });
});
