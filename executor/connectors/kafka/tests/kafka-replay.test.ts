// The pieces of kafka-replay.ts that need no broker: row ids of messages, finding the Kafka
// sources that store no rows in a plan (TableAccess.prepare fetches exactly those before it runs),
// and narrowing a replay to what the scans' filters can match (checked against a recomputation:
// every message the filter is true for lies in the narrowed ranges). The replay itself runs
// against a real broker in test/kafka/replay.test.ts.

import { describe, expect, it } from 'vitest';
import type { RelationDef } from '../../../../sql/catalog.js';
import { type } from '../../../../sql/types.js';
import { isKafkaReplayed, kafkaReplayReads, kafkaReplayedScans, kafkaRowId, narrowReplay, type PartitionRange, type ReplayRanges } from '../kafka-replay.js';

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

  describe('narrowReplay', () => {
    const int4 = type('int4');
    const int8 = type('int8');
    // Columns: v int4, part (INCLUDE partition) int4, off (INCLUDE offset) int8, _row_id.
    const source = relation(9, 'source', {
      replayed: true,
      options: { connector: 'kafka', topic: 't' },
      columns: [
        { name: 'v', type: int4, nullable: true, hidden: false },
        { name: 'part', type: int4, nullable: true, hidden: false },
        { name: 'off', type: int8, nullable: true, hidden: false },
        { name: '_row_id', type: int8, nullable: false, hidden: true },
      ],
      primaryKey: [3],
      include: [
        { what: 'partition', column: 'part' },
        { what: 'offset', column: 'off' },
      ],
    });
    // An epoch's ranges: partitions 0..2, offsets [10, 40) of each (partition 2 from 0).
    const ranges: ReplayRanges = new Map([0, 1, 2].map((partition) => [partition, { partition, from: partition === 2 ? 0n : 10n, to: 40n }]));
    const col = (index: number, t = int8) => ({ kind: 'Column', index, type: t });
    const lit = (value: number | bigint | null, t = int8) => ({ kind: 'Literal', value, type: t });
    const cmp = (operator: string, left: unknown, right: unknown) => ({ kind: 'Call', operator, args: [left, right], type: type('bool') });
    const and = (...args: unknown[]) => ({ kind: 'And', args, type: type('bool') });
    const or = (...args: unknown[]) => ({ kind: 'Or', args, type: type('bool') });
    const scan = (filter: unknown, projection = [0, 1, 2, 3]) => ({ kind: 'Scan', relation: source, projection, filter, columns: [] });
    const narrow = (plan: unknown, parameters: unknown[] = []) => narrowReplay(kafkaReplayReads(plan)[0]!, ranges, parameters);
    const rid = (partition: number, offset: number) => kafkaRowId(partition, BigInt(offset));

    /** Every (partition, offset) of the epoch the predicate holds for lies in the narrowed ranges, and nothing outside the epoch does. */
    function covers(narrowed: ReplayRanges | readonly PartitionRange[], holds: (partition: number, offset: bigint) => boolean): void {
      const list = narrowed instanceof Map ? [...narrowed.values()] : (narrowed as readonly PartitionRange[]);
      for (const range of list) {
        const epoch = ranges.get(range.partition)!;
        expect(range.from >= epoch.from && range.to <= epoch.to).toBe(true);
      }
      for (const epoch of ranges.values()) {
        for (let offset = epoch.from; offset < epoch.to; offset++) {
          const inside = list.some((range) => range.partition === epoch.partition && offset >= range.from && offset < range.to);
          if (holds(epoch.partition, offset)) expect(inside, `partition ${epoch.partition} offset ${offset}`).toBe(true);
        }
      }
    }
    const size = (narrowed: ReplayRanges | readonly PartitionRange[]) => (narrowed instanceof Map ? [...narrowed.values()] : (narrowed as readonly PartitionRange[])).reduce((n, r) => n + Number(r.to - r.from), 0);

    it('reads one offset of one partition per row id, none past the epoch', () => {
      expect(narrow(scan(cmp('=', col(3), lit(rid(1, 20)))))).toEqual([{ partition: 1, from: 20n, to: 21n }]);
      // Constant on the left, through a projection (the scan outputs _row_id first).
      expect(narrow(scan(cmp('=', lit(rid(2, 5)), col(0)), [3, 0]))).toEqual([{ partition: 2, from: 5n, to: 6n }]);
      // Past the committed offsets, before the first offset, a partition the source never read, a negative id, NULL.
      for (const value of [rid(0, 40), rid(0, 9), rid(7, 20), -1n, null]) expect(narrow(scan(cmp('=', col(3), lit(value))))).toEqual([]);
      // An IN list (an OR of equalities), a parameter, a cast of an int4 literal.
      expect(narrow(scan(or(cmp('=', col(3), lit(rid(0, 12))), cmp('=', col(3), lit(rid(2, 39))), cmp('=', col(3), lit(rid(2, 45))))))).toEqual([
        { partition: 0, from: 12n, to: 13n },
        { partition: 2, from: 39n, to: 40n },
      ]);
      expect(narrow(scan(cmp('=', col(3), { kind: 'Parameter', index: 0, type: int8 })), [rid(1, 33)])).toEqual([{ partition: 1, from: 33n, to: 34n }]);
      expect(narrow(scan(cmp('=', col(3), { kind: 'Cast', input: lit(Number(rid(1, 20)), int4), type: int8 })))).toEqual([{ partition: 1, from: 20n, to: 21n }]);
    });

    it('narrows by ranges of row ids, partitions and offsets, and covers every match', () => {
      const cases: [unknown, (p: number, o: bigint) => boolean][] = [
        [cmp('>=', col(3), lit(rid(1, 30))), (p, o) => rid(p, Number(o)) >= rid(1, 30)],
        [cmp('<', col(3), lit(rid(1, 15))), (p, o) => rid(p, Number(o)) < rid(1, 15)],
        [cmp('<=', col(3), lit(rid(0, 15))), (p, o) => rid(p, Number(o)) <= rid(0, 15)],
        [cmp('>', lit(rid(2, 11)), col(3)), (p, o) => rid(2, 11) > rid(p, Number(o))],
        [and(cmp('=', col(1, int4), lit(1, int4)), cmp('>=', col(2), lit(25))), (p, o) => p === 1 && o >= 25n],
        [and(cmp('>=', col(2), lit(12)), cmp('<=', col(2), lit(14)), cmp('>', col(1, int4), lit(0, int4))), (p, o) => o >= 12n && o <= 14n && p > 0],
        [or(cmp('=', col(1, int4), lit(0, int4)), and(cmp('=', col(1, int4), lit(2, int4)), cmp('<', col(2), lit(3)))), (p, o) => p === 0 || (p === 2 && o < 3n)],
        [and(cmp('=', col(0, int4), lit(5, int4)), cmp('=', col(2), lit(20))), (_p, o) => o === 20n],
      ];
      for (const [filter, holds] of cases) {
        const narrowed = narrow(scan(filter));
        covers(narrowed, holds);
        expect(size(narrowed)).toBeLessThan(size(ranges));
      }
      // A contradiction reads nothing.
      expect(narrow(scan(and(cmp('=', col(2), lit(20)), cmp('=', col(2), lit(21)))))).toEqual([]);
    });

    it('reads everything when a filter names no coordinate or one scan has no filter', () => {
      expect(narrow(scan(cmp('=', col(0, int4), lit(5, int4))))).toBe(ranges);
      expect(narrow(scan(or(cmp('=', col(3), lit(rid(0, 12))), cmp('=', col(0, int4), lit(5, int4)))))).toBe(ranges);
      expect(narrow(scan(undefined))).toBe(ranges);
      // <> and non-constant comparisons do not narrow.
      expect(narrow(scan(cmp('<>', col(3), lit(rid(0, 12)))))).toBe(ranges);
      expect(narrow(scan(cmp('=', col(3), col(2))))).toBe(ranges);
      // Two scans of the source (a self-join): the union of their reads; one unfiltered scan reads all.
      const two = { kind: 'query', left: scan(cmp('=', col(3), lit(rid(0, 12)))), right: scan(cmp('=', col(3), lit(rid(1, 13)))) };
      expect(narrow(two)).toEqual([
        { partition: 0, from: 12n, to: 13n },
        { partition: 1, from: 13n, to: 14n },
      ]);
      expect(narrow({ kind: 'query', left: scan(cmp('=', col(3), lit(rid(0, 12)))), right: scan(undefined) })).toBe(ranges);
    });
  });
});
