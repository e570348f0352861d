// The Kafka worker thread (executor/connectors/kafka/kafka-worker.ts) against a real broker, through its
// main-thread reader (kafka-worker-reader.ts) with a test listener in place of the source manager:
// - the rows it decodes equal what the message decoder produces on the main thread from the same
//   messages (the oracle), for a column of every type and the INCLUDE columns;
// - bad messages are recorded with their exact partition and offset and error, and the rest flows;
// - stop() (what DROP SOURCE calls) ends the thread, and it is not restarted;
// - back-pressure: with N batches unacknowledged the worker posts no more until one is;
// - an unreachable broker surfaces as trouble from inside the worker, and stop() still ends it.
// The worker runs the build (dist/), which `npm test` makes first.

import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../sql/catalog.js';
import { arrayOf, type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import { MessageDecoder, type DecodedChanges } from '../../executor/connectors/message-decoder.js';
import { sourceLayout } from '../../executor/connectors/source-layout.js';
import { kafkaOptions } from '../../executor/connectors/kafka/kafka-options.js';
import { KafkaWorkerReader, type DecodedBatch, type DecodedBatchListener } from '../../executor/connectors/kafka/kafka-worker-reader.js';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';
import { column, INCLUDE_COLUMNS, jsonSource, producedBatch } from '../../executor/connectors/kafka/tests/json-corpus.js';

const kafka = useKafkaHarness({ server: false });

function relation(topic: string, overrides: Partial<RelationDef> = {}): RelationDef {
  return jsonSource(
    [
      column('i2', type('int2')),
      column('i4', type('int4'), false),
      column('i8', type('int8')),
      column('f8', type('float8')),
      column('n', type('numeric')),
      column('b', type('bool')),
      column('v', type('varchar')),
      column('d', type('date')),
      column('ts', type('timestamp')),
      column('tz', type('timestamptz')),
      column('iv', type('interval')),
      column('j', type('jsonb')),
      column('by', type('bytea')),
      column('u', type('uuid')),
      column('a', arrayOf(type('int4'))),
      column('_p', type('int4')),
      column('_o', type('int8')),
      column('_ts', type('timestamptz')),
      column('_k', type('bytea')),
    ],
    {
      id: 30001,
      name: topic,
      options: { connector: 'kafka', topic, 'properties.bootstrap.server': kafka.broker.bootstrap, 'max.message.bytes': '400' },
      include: [...INCLUDE_COLUMNS],
      ...overrides,
    },
  );
}

/** The i-th message: every type, varied by i; every 7th is bad in one of five ways. */
function message(i: number): string {
  switch (i % 7 === 3 ? (i / 7) % 5 | 0 : -1) {
    case 0:
      return 'not json{';
    case 1:
      return JSON.stringify({ i4: 'x' });
    case 2:
      return JSON.stringify({ i2: 1 }); // i4 is NOT NULL
    case 3:
      return JSON.stringify({ i4: 1, v: 'p'.repeat(500) }); // over max.message.bytes
    case 4:
      return JSON.stringify({ i4: 1, i2: 40000 });
    default:
      return JSON.stringify({
        i2: (i % 200) - 100,
        i4: i * 7919,
        i8: i % 2 === 0 ? `${BigInt(i) * 1_000_000_000_007n}` : -i,
        f8: i / 3,
        n: `${i}.${String(i).padStart(3, '0')}0`,
        b: i % 3 === 0,
        v: `bidder ${i} ✓`,
        d: `2026-01-${String((i % 28) + 1).padStart(2, '0')}`,
        ts: `2015-07-15 00:00:${String(i % 60).padStart(2, '0')}.${String(i % 1000).padStart(3, '0')}`,
        tz: `2026-03-01T10:00:00+0${i % 9}:00`,
        iv: `${i} days ${i % 24} hours`,
        j: { i, even: i % 2 === 0, list: [i, 'x', null] },
        by: `\\x${(i % 256).toString(16).padStart(2, '0')}ff`,
        u: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        a: `{${i},NULL,${-i}}`,
        ...(i % 5 === 0 ? { i2: null, v: undefined } : {}),
      });
  }
}

interface Received {
  batches: DecodedBatch[];
  /** Rows by partition in offset order (row ids blanked: they are the engine's). */
  rows: Map<number, Row[]>;
  rejects: string[];
  messages: number;
}

function collector(hold?: { promise: Promise<void> }): { listener: DecodedBatchListener; received: Received; troubles: string[] } {
  const received: Received = { batches: [], rows: new Map(), rejects: [], messages: 0 };
  const troubles: string[] = [];
  const listener: DecodedBatchListener = {
    decoded(batch) {
      received.batches.push(batch);
      const list = received.rows.get(batch.partition) ?? [];
      for (const row of batch.rows) list.push(row);
      received.rows.set(batch.partition, list);
      for (const reject of batch.rejects) received.rejects.push(`${batch.partition}:${reject.offset} ${reject.error} [${reject.payload?.toString('utf8') ?? 'null'}]`);
      received.messages += batch.messages;
      return hold?.promise ?? Promise.resolve();
    },
    batch: () => Promise.reject(new Error('a worker reader hands over decoded batches, never raw ones')),
    trouble: (message) => void troubles.push(message),
    recovered: () => undefined,
    highWatermark: () => undefined,
  };
  return { listener, received, troubles };
}

describe('the Kafka worker thread', () => {
  it('decodes every type as the main thread does, records bad messages with exact offsets, and ends on stop', async () => {
    const topic = 'worker-types';
    const PARTITIONS = 3;
    const PER_PARTITION = 120;
    await kafka.broker.createTopic(topic, PARTITIONS);
    const sent: { partition: number; value: string; key: string | null; timestamp: number }[][] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const list = Array.from({ length: PER_PARTITION }, (_, k) => {
        const i = p * PER_PARTITION + k;
        return { partition: p, value: message(i), key: i % 4 === 0 ? null : `key-${i}`, timestamp: 1_764_000_000_000 + i * 1000 };
      });
      sent.push(list);
      await kafka.broker.send(topic, list);
    }
    const def = relation(topic);
    let rowIds = 0n;
    const reader = new KafkaWorkerReader(def, kafkaOptions(def.options!), `public.${topic}`, () => ++rowIds);
    const { listener, received, troubles } = collector();
    await reader.start(await reader.startOffsets(), listener);
    expect(reader.workerAlive).toBe(true);
    await waitFor('every message through the worker', async () => (received.messages >= PARTITIONS * PER_PARTITION ? true : undefined));

    // The oracle: the same messages (offsets 0.. per partition, as produced) decoded here.
    const layout = sourceLayout(def);
    const rowId = layout.rowIdPosition!;
    const expectedRejects: string[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const raw = producedBatch(p, sent[p]!);
      const changes: DecodedChanges = { rows: [], kinds: [] };
      new MessageDecoder(layout, 400, () => 0n).decode(raw, changes, (partition, offset, error, payload) =>
        expectedRejects.push(`${partition}:${offset} ${error} [${payload?.subarray(0, 256).toString('utf8') ?? 'null'}]`),
      );
      const got = received.rows.get(p) ?? [];
      // Row ids are set on the main thread, one per row, in order.
      for (const row of got) expect(typeof row[rowId]).toBe('bigint');
      for (const row of [...got, ...changes.rows]) row[rowId] = null;
      expect(got).toEqual(changes.rows);
      expect(changes.rows.length).toBeGreaterThan(PER_PARTITION * 0.8);
    }
    expect(received.rejects.sort()).toEqual(expectedRejects.sort());
    expect(expectedRejects.length).toBeGreaterThanOrEqual(15);
    // Offsets are contiguous per partition: [firstOffset, next) batches tile 0..PER_PARTITION.
    for (let p = 0; p < PARTITIONS; p++) {
      const spans = received.batches.filter((batch) => batch.partition === p).map((batch) => [batch.firstOffset, batch.next] as const);
      let at = 0n;
      for (const [first, next] of spans) {
        expect(first).toBe(at);
        at = next;
      }
      expect(at).toBe(BigInt(PER_PARTITION));
    }
    expect(troubles).toEqual([]);

    await reader.stop();
    expect(reader.workerAlive).toBe(false);
    // Stopped is stopped: no restart behind the caller's back.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(reader.workersStarted).toBe(1);
    expect(reader.workerAlive).toBe(false);
  });

  it('posts at most maxBatchesInFlight batches the main thread has not consumed', async () => {
    const topic = 'worker-backpressure';
    const PARTITIONS = 4;
    await kafka.broker.createTopic(topic, PARTITIONS);
    const def = relation(topic, { columns: [column('i4', type('int4')), { name: '_row_id', type: type('int8'), nullable: false, hidden: true }], primaryKey: [1], include: [] });
    for (let p = 0; p < PARTITIONS; p++) await kafka.broker.send(topic, Array.from({ length: 50 }, (_, k) => ({ partition: p, value: `{"i4":${p * 1000 + k}}` })));
    let release!: () => void;
    const hold = { promise: new Promise<void>((resolve) => (release = resolve)) };
    const { listener, received } = collector(hold);
    const reader = new KafkaWorkerReader(def, kafkaOptions(def.options!), `public.${topic}`, () => 0n, { maxBatchesInFlight: 2 });
    await reader.start(await reader.startOffsets(), listener);
    try {
      await waitFor('two batches', async () => (received.batches.length >= 2 ? true : undefined));
      // The four partitions' batches are fetched; only two may be posted while none is consumed.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(received.batches.length).toBe(2);
      expect(reader.unacknowledged).toBe(2);
      expect(received.messages).toBeLessThan(PARTITIONS * 50);
      release();
      await waitFor('every message once consumed', async () => (received.messages >= PARTITIONS * 50 ? true : undefined));
      expect(received.messages).toBe(PARTITIONS * 50);
      const values = [...received.rows.values()].flat().map((row) => row[0] as number).sort((a, b) => a - b);
      expect(values).toEqual(Array.from({ length: PARTITIONS }, (_, p) => Array.from({ length: 50 }, (_, k) => p * 1000 + k)).flat());
    } finally {
      release();
      await reader.stop();
    }
    expect(reader.workerAlive).toBe(false);
  });

  it('reports an unreachable broker as trouble and still ends on stop', async () => {
    // A port nothing listens on: bound, read, released.
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    const def = relation('nowhere', { options: { connector: 'kafka', topic: 'nowhere', 'properties.bootstrap.server': `127.0.0.1:${port}` } });
    const { listener, received, troubles } = collector();
    const reader = new KafkaWorkerReader(def, kafkaOptions(def.options!), 'public.nowhere', () => 0n);
    await reader.start(new Map([[0, 0n]]), listener);
    const trouble = await waitFor('trouble from the worker', async () => (troubles.length > 0 ? troubles[0] : undefined));
    expect(trouble).toContain('"nowhere"');
    expect(trouble).toContain(`127.0.0.1:${port}`);
    expect(received.batches).toEqual([]);
    expect(reader.workerAlive).toBe(true);
    await reader.stop();
    expect(reader.workerAlive).toBe(false);
    expect(reader.workersStarted).toBe(1);
  });
});
