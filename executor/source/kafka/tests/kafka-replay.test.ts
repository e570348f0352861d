// The pieces of kafka-replay.ts that need no broker: row ids of messages, and finding the Kafka
// sources that store no rows in a plan (TableAccess.prepare fetches exactly those before it runs).
// The replay itself runs against a real broker in test/kafka/replay.test.ts.

import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../../sql/catalog.js';
import { isKafkaReplayed, kafkaReplayedScans, kafkaRowId } from '../kafka-replay.js';

function relation(id: number, kind: RelationDef['kind'], extra: Partial<RelationDef> = {}): RelationDef {
  return { id, kind, schema: 'public', name: `r${id}`, columns: [], primaryKey: [], ...extra } as RelationDef;
}

const replayedKafka = relation(1, 'source', { replayed: true, options: { connector: 'kafka', topic: 't' } });
const storedKafka = relation(2, 'source', { options: { connector: 'kafka', topic: 't' } });
const generator = relation(3, 'source', { replayed: true, options: { connector: 'nexmark' } });
const table = relation(4, 'table');

describe('kafka-replay', () => {
  it('derives distinct, ordered row ids from partition and offset', () => {
    // Row-id order is offset major, partition minor (the hand computation: offset * 65536 + partition).
    expect(kafkaRowId(0, 0n)).toBe(0n);
    expect(kafkaRowId(3, 5n)).toBe(5n * 65536n + 3n);
    expect(kafkaRowId(65535, 1n) < kafkaRowId(0, 2n)).toBe(true);
    const seen = new Set<bigint>();
    for (let partition = 0; partition < 40; partition++) for (let offset = 0n; offset < 40n; offset++) seen.add(kafkaRowId(partition, offset));
    expect(seen.size).toBe(1600);
    expect(() => kafkaRowId(65536, 0n)).toThrow(/partition 65536/);
  });

  it('tells replayed Kafka sources from stored ones, generators and tables', () => {
    expect([replayedKafka, storedKafka, generator, table].map(isKafkaReplayed)).toEqual([true, false, false, false]);
  });

  it('finds every replayed Kafka source a plan scans, subqueries included, once per plan', () => {
    const subquery = { kind: 'Subquery', plan: { kind: 'Scan', relation: replayedKafka, columns: [] } };
    const plan = {
      kind: 'query',
      plan: {
        kind: 'HashJoin',
        left: { kind: 'Scan', relation: storedKafka, columns: [] },
        right: { kind: 'Filter', input: { kind: 'Scan', relation: table, columns: [] }, predicate: { kind: 'Call', args: [subquery] } },
      },
      other: { kind: 'Scan', relation: generator },
    };
    const found = kafkaReplayedScans(plan);
    expect(found.map((r) => r.id)).toEqual([1]);
    expect(kafkaReplayedScans(plan)).toBe(found);
    expect(kafkaReplayedScans({ kind: 'query', plan: { kind: 'Scan', relation: table } })).toEqual([]);
    expect(kafkaReplayedScans(undefined)).toEqual([]);
  });
});
