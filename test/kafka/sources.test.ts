// Kafka sources end to end against a real broker (scripts/kafka.mjs, started here) and a real
// oxbow server process, over the wire with `pg`: JSON produced to topics, sources and materialized
// views over them (aggregates, a join of two topics, tumbling windows), upsert and Debezium
// semantics with deletes, CSV, startup modes, malformed messages mixed in, new partitions, a
// deleted topic. Expected results are computed here from the messages produced, independently of
// oxbow. Waiting is on state (committed offsets), never on time.

import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';

const kafka = useKafkaHarness({ args: ['--metrics-port', '0'] });

/** Rows as `a | b` text lines, sorted (values through String(); NULL as NULL). */
async function lines(sql: string): Promise<string[]> {
  const result = await kafka.client.query({ text: sql, rowMode: 'array' });
  return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value instanceof Date ? value.toISOString() : String(value))).join(' | ')).sort();
}

function sorted(values: string[]): string[] {
  return [...values].sort();
}

describe('FORMAT PLAIN ENCODE JSON', () => {
  const PARTITIONS = 3;
  const COUNT = 300;
  const base = Date.UTC(2026, 0, 1, 0, 0, 0);
  const bids = Array.from({ length: COUNT }, (_, i) => ({
    auction: i % 7,
    bidder: i % 13,
    price: (i * 37) % 1000,
    millis: base + i * 2000,
  }));
  const timestampText = (millis: number): string => new Date(millis).toISOString().replace('T', ' ').replace('Z', '');
  // Malformed messages, each pinned to a partition so the recorded offsets can be checked.
  const bad = [
    { partition: 0, value: 'not json{', error: 'invalid JSON' },
    { partition: 1, value: '{"auction":"x","price":1}', error: 'field "auction": invalid input syntax for type bigint: "x"' },
    { partition: 2, value: '{"price":5}', error: 'missing field "auction"' },
    { partition: 0, value: JSON.stringify({ auction: 1, price: 1, pad: 'p'.repeat(300) }), error: 'exceeds max.message.bytes (200)' },
    { partition: 1, value: '[1,2]', error: 'the JSON message is not an object' },
    { partition: 2, value: '{"auction":{"a":1}}', error: 'field "auction": cannot convert an object to int8' },
  ];
  const persons = Array.from({ length: 13 }, (_, id) => ({ id, name: `person${id % 5}` }));

  beforeAll(async () => {
    await kafka.broker.createTopic('bids', PARTITIONS);
    await kafka.broker.createTopic('persons', 2);
    const messages: { value: string; partition: number }[] = [];
    bids.forEach((bid, i) => {
      messages.push({
        value: JSON.stringify({ auction: bid.auction, bidder: bid.bidder, price: bid.price, date_time: timestampText(bid.millis) }),
        partition: i % PARTITIONS,
      });
      if (i % 50 === 25) {
        const item = bad[(i - 25) / 50]!;
        messages.push({ value: item.value, partition: item.partition });
      }
    });
    await kafka.broker.send('bids', messages);
    await kafka.broker.send('persons', persons.map((person) => ({ key: String(person.id), value: JSON.stringify(person), partition: person.id % 2 })));
    await kafka.client.query(`CREATE SOURCE bids (auction bigint NOT NULL, bidder bigint, price bigint, date_time timestamp)
      INCLUDE partition AS kafka_partition INCLUDE offset AS kafka_offset
      WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = '${kafka.broker.bootstrap}',
            scan.startup.mode = 'earliest', max.message.bytes = '200') FORMAT PLAIN ENCODE JSON`);
    await kafka.client.query(`CREATE TABLE persons (id int PRIMARY KEY, name varchar)
      WITH (connector = 'kafka', topic = 'persons', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
    await kafka.client.query('CREATE MATERIALIZED VIEW bids_by_auction AS SELECT auction, count(*) AS n, sum(price) AS total, max(price) AS top FROM bids GROUP BY auction');
    await kafka.client.query(`CREATE MATERIALIZED VIEW bids_per_minute AS SELECT window_start, count(*) AS n, sum(price) AS total FROM TUMBLE(bids, date_time, INTERVAL '1 minute') GROUP BY window_start`);
    await kafka.client.query('CREATE MATERIALIZED VIEW spend_by_name AS SELECT p.name, count(*) AS n, sum(b.price) AS total FROM bids b JOIN persons p ON b.bidder = p.id GROUP BY p.name');
    await kafka.committed('bids', COUNT + bad.length);
    await kafka.committed('persons', persons.length);
  });

  it('keeps every well-formed message, once', async () => {
    expect(await lines('SELECT count(*), count(DISTINCT kafka_partition * 1000000 + kafka_offset) FROM bids')).toEqual([`${COUNT} | ${COUNT}`]);
  });

  it('aggregates per auction', async () => {
    const expected = new Map<number, { n: number; total: number; top: number }>();
    for (const bid of bids) {
      const entry = expected.get(bid.auction) ?? { n: 0, total: 0, top: -1 };
      entry.n++;
      entry.total += bid.price;
      entry.top = Math.max(entry.top, bid.price);
      expected.set(bid.auction, entry);
    }
    expect(await lines('SELECT * FROM bids_by_auction')).toEqual(sorted([...expected].map(([auction, e]) => `${auction} | ${e.n} | ${e.total} | ${e.top}`)));
  });

  it('counts tumbling one-minute windows', async () => {
    const expected = new Map<number, { n: number; total: number }>();
    for (const bid of bids) {
      const start = Math.floor(bid.millis / 60_000) * 60_000;
      const entry = expected.get(start) ?? { n: 0, total: 0 };
      entry.n++;
      entry.total += bid.price;
      expected.set(start, entry);
    }
    const result = await lines("SELECT to_char(window_start, 'YYYY-MM-DD HH24:MI:SS'), n, total FROM bids_per_minute");
    expect(result).toEqual(sorted([...expected].map(([start, e]) => `${timestampText(start).slice(0, 19)} | ${e.n} | ${e.total}`)));
  });

  it('joins two topics', async () => {
    const nameOf = new Map(persons.map((person) => [person.id, person.name]));
    const expected = new Map<string, { n: number; total: number }>();
    for (const bid of bids) {
      const name = nameOf.get(bid.bidder)!;
      const entry = expected.get(name) ?? { n: 0, total: 0 };
      entry.n++;
      entry.total += bid.price;
      expected.set(name, entry);
    }
    expect(await lines('SELECT * FROM spend_by_name')).toEqual(sorted([...expected].map(([name, e]) => `${name} | ${e.n} | ${e.total}`)));
  });

  it('records every malformed message with its partition, offset, error and payload', async () => {
    const recorded = await kafka.client.query("SELECT partition_id, message_offset, error, payload FROM oxbow_catalog.source_errors WHERE source_name = 'bids' AND partition_id IS NOT NULL ORDER BY partition_id, message_offset");
    expect(recorded.rows).toHaveLength(bad.length);
    // Each bad message's offset: its position among the messages of its partition.
    const perPartition = new Map<number, number>();
    const expectedOffsets: { partition: number; offset: number; value: string; error: string }[] = [];
    bids.forEach((_, i) => {
      const partition = i % PARTITIONS;
      perPartition.set(partition, (perPartition.get(partition) ?? 0) + 1);
      if (i % 50 === 25) {
        const item = bad[(i - 25) / 50]!;
        const offset = perPartition.get(item.partition) ?? 0;
        perPartition.set(item.partition, offset + 1);
        expectedOffsets.push({ partition: item.partition, offset, value: item.value, error: item.error });
      }
    });
    expectedOffsets.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
    recorded.rows.forEach((row: { partition_id: number; message_offset: string; error: string; payload: string }, index: number) => {
      const item = expectedOffsets[index]!;
      expect(row.partition_id).toBe(item.partition);
      expect(Number(row.message_offset)).toBe(item.offset);
      expect(row.error).toContain(item.error);
      expect(item.value.startsWith(row.payload)).toBe(true);
      expect(row.payload.length).toBe(Math.min(item.value.length, 256));
    });
  });

  it('reports offsets, high watermarks and lag per partition', async () => {
    const perPartition = new Array<number>(PARTITIONS).fill(0);
    bids.forEach((_, i) => perPartition[i % PARTITIONS]!++);
    for (const item of bad) perPartition[item.partition]!++;
    await waitFor('high watermarks', async () => {
      const rows = await lines("SELECT topic, partition_id, committed_offset, high_watermark, lag FROM oxbow_catalog.source_partitions WHERE source_name = 'bids'");
      return rows.every((row) => row.endsWith(' | 0')) ? rows : undefined;
    });
    expect(await lines("SELECT topic, partition_id, committed_offset, high_watermark, lag, messages FROM oxbow_catalog.source_partitions WHERE source_name = 'bids'")).toEqual(
      perPartition.map((n, partition) => `bids | ${partition} | ${n} | ${n} | 0 | ${n}`),
    );
    const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(kafka.oxbow.stderr())?.[1];
    expect(metricsUrl).toBeDefined();
    const text = await (await fetch(metricsUrl!)).text();
    perPartition.forEach((n, partition) => {
      expect(text).toContain(`oxbow_source_committed_offset{source="public.bids",topic="bids",partition="${partition}"} ${n}`);
      expect(text).toContain(`oxbow_source_lag_messages{source="public.bids",topic="bids",partition="${partition}"} 0`);
    });
  });
});

describe('FORMAT UPSERT and DEBEZIUM', () => {
  it('upserts by key and deletes on tombstones', async () => {
    await kafka.broker.createTopic('users', 2);
    await kafka.client.query(`CREATE TABLE users (id int PRIMARY KEY, name varchar, score int)
      WITH (connector = 'kafka', topic = 'users', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
    await kafka.client.query('CREATE MATERIALIZED VIEW user_totals AS SELECT count(*) AS n, sum(score) AS total FROM users');
    const model = new Map<number, { name: string; score: number }>();
    const messages: { key: string; value: string | null; partition: number }[] = [];
    for (let step = 0; step < 200; step++) {
      const id = (step * 7) % 23;
      const partition = id % 2; // one key, one partition: Kafka orders per partition only
      if (step % 9 === 4) {
        // Tombstones with the key as a JSON object or as bare text.
        messages.push({ key: step % 2 === 0 ? JSON.stringify({ id }) : String(id), value: null, partition });
        model.delete(id);
      } else {
        const row = { name: `u${step}`, score: step * 3 };
        messages.push({ key: String(id), value: JSON.stringify({ id, ...row }), partition });
        model.set(id, row);
      }
    }
    messages.push({ key: '999', value: '{"name":"no id"}', partition: 0 }); // missing key field: rejected
    await kafka.broker.send('users', messages);
    await kafka.committed('users', messages.length);
    expect(await lines('SELECT id, name, score FROM users')).toEqual(sorted([...model].map(([id, row]) => `${id} | ${row.name} | ${row.score}`)));
    const total = [...model.values()].reduce((sum, row) => sum + row.score, 0);
    expect(await lines('SELECT * FROM user_totals')).toEqual([`${model.size} | ${total}`]);
    expect(await lines("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'users'")).toEqual(['missing field "id"']);
  });

  it('applies Debezium creates, updates (also of the key) and deletes', async () => {
    await kafka.broker.createTopic('accounts', 1);
    await kafka.client.query(`CREATE TABLE accounts (id int PRIMARY KEY, owner varchar, balance int)
      WITH (connector = 'kafka', topic = 'accounts', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT DEBEZIUM ENCODE JSON`);
    await kafka.client.query('CREATE MATERIALIZED VIEW balance_by_owner AS SELECT owner, sum(balance) AS total, count(*) AS n FROM accounts GROUP BY owner');
    const row = (id: number, owner: string, balance: number) => ({ id, owner, balance });
    const events: unknown[] = [
      { op: 'c', before: null, after: row(1, 'ann', 10) },
      { op: 'c', before: null, after: row(2, 'bob', 20) },
      { op: 'r', before: null, after: row(3, 'ann', 30) },
      { payload: { op: 'u', before: row(1, 'ann', 10), after: row(1, 'ann', 15) } },
      { op: 'u', before: row(2, 'bob', 20), after: row(20, 'bob', 25) },
      { op: 'd', before: row(3, 'ann', 30), after: null },
      { op: 'x', before: null, after: row(9, 'eve', 1) },
      { op: 'c', before: null, after: row(4, 'cat', 40) },
      { op: 'u', before: null, after: row(4, 'cat', 44) },
    ];
    const messages: { value: string | null }[] = events.map((event) => ({ value: JSON.stringify(event) }));
    messages.push({ value: null }); // Debezium's tombstone after a delete: ignored
    await kafka.broker.send('accounts', messages);
    await kafka.committed('accounts', messages.length);
    expect(await lines('SELECT id, owner, balance FROM accounts')).toEqual(['1 | ann | 15', '20 | bob | 25', '4 | cat | 44']);
    expect(await lines('SELECT * FROM balance_by_owner')).toEqual(['ann | 15 | 1', 'bob | 25 | 1', 'cat | 44 | 1']);
    expect(await lines("SELECT message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'accounts'")).toEqual(['6 | unknown Debezium op "x"']);
  });
});

describe('ENCODE CSV and startup modes', () => {
  it('decodes CSV lines by position', async () => {
    await kafka.broker.createTopic('csv_lines', 1);
    await kafka.broker.send('csv_lines', ['1|x|1.5', '2|"q|uoted"|2.25', '3|y', '4||', 'z|w|1'].map((value) => ({ value })));
    await kafka.client.query(`CREATE SOURCE csv_rows (a int, b varchar, c numeric)
      WITH (connector = 'kafka', topic = 'csv_lines', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE CSV (delimiter = '|')`);
    await kafka.committed('csv_rows', 5);
    expect(await lines('SELECT a, b, c FROM csv_rows')).toEqual(['1 | x | 1.5', '2 | q|uoted | 2.25', '4 | NULL | NULL']);
    expect(await lines("SELECT message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'csv_rows'")).toEqual([
      '2 | CSV line has 2 fields, expected 3',
      '4 | field "a": invalid input syntax for type integer: "z"',
    ]);
  });

  it("starts at the end with scan.startup.mode = 'latest'", async () => {
    await kafka.broker.createTopic('late', 2);
    await kafka.broker.send('late', [0, 1, 2, 3, 4].map((i) => ({ value: JSON.stringify({ v: i }), partition: i % 2 })));
    await kafka.client.query(`CREATE SOURCE late (v int) WITH (connector = 'kafka', topic = 'late', properties.bootstrap.server = '${kafka.broker.bootstrap}', scan.startup.mode = 'latest') FORMAT PLAIN ENCODE JSON`);
    await kafka.committed('late', 5);
    await kafka.broker.send('late', [10, 11, 12].map((i) => ({ value: JSON.stringify({ v: i }), partition: i % 2 })));
    await kafka.committed('late', 8);
    expect(await lines('SELECT v FROM late')).toEqual(['10', '11', '12']);
  });

  it('starts at a timestamp', async () => {
    await kafka.broker.createTopic('stamped', 1);
    const now = Date.now();
    await kafka.broker.send('stamped', [4, 3, 2, 1].map((minutesAgo) => ({ value: JSON.stringify({ v: minutesAgo }), timestamp: now - minutesAgo * 60_000 })));
    const from = now - 150_000; // between 3 and 2 minutes ago
    await kafka.client.query(`CREATE SOURCE stamped (v int) INCLUDE timestamp AS ts
      WITH (connector = 'kafka', topic = 'stamped', properties.bootstrap.server = '${kafka.broker.bootstrap}', scan.startup.timestamp.millis = '${from}') FORMAT PLAIN ENCODE JSON`);
    await kafka.committed('stamped', 4);
    expect(await lines('SELECT v, (extract(epoch FROM ts) * 1000)::int8 FROM stamped')).toEqual(sorted([2, 1].map((m) => `${m} | ${now - m * 60_000}`)));
  });

  it('picks up partitions added to the topic', async () => {
    await kafka.broker.createTopic('growing', 1);
    await kafka.client.query(`CREATE SOURCE growing (v int) WITH (connector = 'kafka', topic = 'growing', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await kafka.broker.send('growing', [{ value: '{"v":1}' }]);
    await kafka.committed('growing', 1);
    await kafka.broker.admin.createPartitions({ topicPartitions: [{ topic: 'growing', count: 3 }] });
    await kafka.broker.sendFresh('growing', [{ value: '{"v":2}', partition: 1 }, { value: '{"v":3}', partition: 2 }]);
    await kafka.committed('growing', 3);
    expect(await lines('SELECT v FROM growing')).toEqual(['1', '2', '3']);
  });
});

describe('errors', () => {
  it('refuses bad connector definitions with clear errors', async () => {
    expect(await kafka.sqlError(`CREATE SOURCE s1 (v int) WITH (connector = 'kafka', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`)).toEqual({
      code: '22023',
      message: 'the Kafka option "topic" is required',
    });
    expect(await kafka.sqlError(`CREATE SOURCE s1 (v int) WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = 'nowhere') FORMAT PLAIN ENCODE JSON`)).toEqual({
      code: '22023',
      message: 'invalid Kafka broker address "nowhere"',
    });
    expect(await kafka.sqlError(`CREATE SOURCE s1 (v int) WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '${kafka.broker.bootstrap}', scan.startup.mode = 'soon') FORMAT PLAIN ENCODE JSON`)).toMatchObject({
      code: '22023',
    });
    expect(await kafka.sqlError(`CREATE TABLE s1 (v int) WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`)).toEqual({
      code: '42P16',
      message: 'FORMAT UPSERT requires a primary key',
    });
    expect(await kafka.sqlError(`CREATE SOURCE s1 (v int) WITH (connector = 'pulsar', topic = 't') FORMAT PLAIN ENCODE JSON`)).toEqual({
      code: '0A000',
      message: 'connector "pulsar" is not supported',
    });
    expect(await lines("SELECT count(*) FROM pg_class WHERE relname = 's1'")).toEqual(['0']);
  });

  it('checks the broker and the topic at CREATE, unless validate = false', async () => {
    expect(await kafka.sqlError(`CREATE SOURCE s2 (v int) WITH (connector = 'kafka', topic = 'no_such_topic', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`)).toEqual({
      code: '42704',
      message: `Kafka topic "no_such_topic" does not exist on ${kafka.broker.bootstrap}`,
    });
    expect(await kafka.sqlError(`CREATE TABLE s2 (v int PRIMARY KEY) WITH (connector = 'kafka', topic = 'no_such_topic', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`)).toMatchObject({ code: '42704' });
    // Nothing listens on port 9 (discard): refused, or no answer within the deadline.
    const started = Date.now();
    const unreachable = await kafka.sqlError(`CREATE SOURCE s2 (v int) WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '127.0.0.1:9') FORMAT PLAIN ENCODE JSON`);
    expect(unreachable.code).toBe('08006');
    expect(unreachable.message).toMatch(/Kafka broker 127\.0\.0\.1:9/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await kafka.sqlError(`CREATE SOURCE s2 (v int) WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '${kafka.broker.bootstrap}', validate = 'maybe') FORMAT PLAIN ENCODE JSON`)).toMatchObject({ code: '22023' });
    expect(await lines("SELECT count(*) FROM pg_class WHERE relname = 's2'")).toEqual(['0']);
    await kafka.client.query(`CREATE SOURCE s2 (v int) WITH (connector = 'kafka', topic = 'later_topic', properties.bootstrap.server = '${kafka.broker.bootstrap}', validate = 'false') FORMAT PLAIN ENCODE JSON`);
    expect(await lines("SELECT count(*) FROM pg_class WHERE relname = 's2'")).toEqual(['1']);
    await kafka.client.query('DROP SOURCE s2');
  });

  it('records a deleted topic as trouble and keeps running', async () => {
    await kafka.broker.createTopic('doomed', 1);
    await kafka.client.query(`CREATE SOURCE doomed (v int) WITH (connector = 'kafka', topic = 'doomed', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await kafka.broker.send('doomed', [{ value: '{"v":1}' }]);
    await kafka.committed('doomed', 1);
    await kafka.broker.admin.deleteTopics({ topics: ['doomed'] });
    const trouble = await waitFor('the deleted topic in source_errors', async () => {
      const rows = await lines("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'doomed' AND partition_id IS NULL");
      return rows.length > 0 ? rows : undefined;
    });
    expect(trouble.join('\n')).toContain('"doomed"');
    expect(kafka.oxbow.stderr()).toContain('source public.doomed');
    // The source stores no rows: a read replays the topic, which is gone (a clear error, no hang).
    expect(await kafka.sqlError('SELECT v FROM doomed')).toEqual({ code: '08006', message: `source "doomed": cannot replay Kafka topic "doomed" from ${kafka.broker.bootstrap}: the topic does not exist (deleted?)` });
    await kafka.client.query('DROP SOURCE doomed');
    await expect(kafka.client.query('SELECT v FROM doomed')).rejects.toMatchObject({ code: '42P01' });
  });
});
