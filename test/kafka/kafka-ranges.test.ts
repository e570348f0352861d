// The offset ranges a Kafka source fragment's owners fetch (executor/connectors/kafka/kafka-ranges.ts)
// against a real broker: a transactional producer commits, aborts and commits again on one
// partition (control records and aborted messages take offsets), plain messages go to another.
// The last stable offsets the leader would cut ranges at count those offsets; ranges cut anywhere
// below them, fetched by one client across calls, give exactly the committed messages, each once,
// in offset order, and nothing past a range's end. The expectations are the messages produced.

import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../sql/catalog.js';
import { type } from '../../sql/types.js';
import { kafkaOptions } from '../../executor/connectors/kafka/kafka-options.js';
import { RangeFetcher, StableOffsets } from '../../executor/connectors/kafka/kafka-ranges.js';
import { useKafkaHarness } from './harness.js';

const kafka = useKafkaHarness({ server: false });

describe('Kafka offset ranges fetched by an owner', () => {
  it('fetches exactly the committed messages of each range, skipping control records and aborted transactions', async () => {
    const broker = kafka.broker;
    await broker.createTopic('kr', 2);
    const client = new kafkajs.Kafka({ brokers: [broker.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    const producer = client.producer({ transactionalId: 'oxbow-kafka-ranges-test', maxInFlightRequests: 1, idempotent: true });
    await producer.connect();
    const committed: number[] = [];
    const batch = async (ids: number[], commit: boolean) => {
      const transaction = await producer.transaction();
      await transaction.send({ topic: 'kr', messages: ids.map((id) => ({ value: JSON.stringify({ id }), partition: 0 })) });
      if (commit) {
        await transaction.commit();
        committed.push(...ids);
      } else await transaction.abort();
    };
    await batch([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], true);
    await batch([100, 101, 102, 103, 104], false);
    await batch([10, 11, 12, 13, 14, 15, 16, 17, 18, 19], true);
    await batch([200, 201], false);
    await batch([20, 21, 22], true);
    await producer.disconnect();
    const plain = Array.from({ length: 30 }, (_, index) => 1000 + index);
    await broker.send('kr', plain.map((id) => ({ value: JSON.stringify({ id }), partition: 1 })));

    const relation = {
      id: 40002,
      kind: 'source',
      schema: 'public',
      name: 'kr',
      columns: [
        { name: 'id', type: type('int8'), nullable: true, hidden: false },
        { name: '_row_id', type: type('int8'), nullable: false, hidden: true },
      ],
      primaryKey: [1],
      dependsOn: [],
      options: { connector: 'kafka', topic: 'kr', 'properties.bootstrap.server': broker.bootstrap },
      format: 'plain',
      encode: 'json',
      replayed: true,
    } as RelationDef;
    const stableOffsets = new StableOffsets(kafkaOptions(relation.options!), 'public.kr');
    const read = await stableOffsets.read(new Map([[0, 0n]]));
    await stableOffsets.close();
    // Partition 0: 23 committed messages, 7 aborted ones and 5 control records (one per transaction).
    expect(read.stable.get(0)).toBe(35n);
    expect(read.stable.get(1)).toBe(30n);
    // Partition 1 had no position: its log start is given.
    expect(read.starts.get(1)).toBe(0n);
    expect(read.starts.has(0)).toBe(false);

    const fetcher = new RangeFetcher(relation);
    try {
      const fetchIds = async (ranges: number[]) => {
        const got = new Map<number, { offset: bigint; id: number }[]>();
        await fetcher.fetch(ranges, (batch) => {
          const list = got.get(batch.partition) ?? [];
          batch.offsets.forEach((offset, index) => list.push({ offset, id: (JSON.parse(batch.values[index]!.toString()) as { id: number }).id }));
          got.set(batch.partition, list);
        });
        return got;
      };
      // Cuts inside the aborted messages and right after a commit marker, and a range of one offset.
      const cuts = [0, 7, 12, 13, 23, 24, 31, 35];
      const seen: number[] = [];
      for (let at = 0; at + 1 < cuts.length; at++) {
        const from = cuts[at]!;
        const to = cuts[at + 1]!;
        const got = (await fetchIds([0, from, to])).get(0) ?? [];
        for (const { offset } of got) {
          expect(offset >= BigInt(from) && offset < BigInt(to)).toBe(true);
        }
        seen.push(...got.map(({ id }) => id));
      }
      expect(seen).toEqual(committed);
      // Both partitions in one call, a range of each.
      const both = await fetchIds([1, 5, 25, 0, 0, 35]);
      expect(both.get(1)!.map(({ id }) => id)).toEqual(plain.slice(5, 25));
      expect(both.get(0)!.map(({ id }) => id)).toEqual(committed);
      expect(fetcher.fetched).toBe(committed.length * 2 + 20);
    } finally {
      await fetcher.close();
    }
  }, 120_000);
});
