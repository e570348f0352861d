// Kafka sources that store no rows (executor/connectors/kafka/kafka-replay.ts), against a real broker
// and real oxbow server processes: an append-only source commits only its offsets (and the first
// offset per partition), and every read replays the topic from the broker with the same decoder
// and the same row ids (offset * 2^16 + partition). Expected rows are computed here from the
// messages produced; waiting is on committed offsets, never on time.
//
// - SELECT from the source equals the messages produced (INCLUDE columns, row ids, row-id order,
//   malformed messages skipped), and state_size shows only positions.
// - A view created after N messages equals one created before and the batch recomputation.
// - AS OF a moment between two bursts returns exactly the first burst; BETWEEN dates each row.
// - Messages the broker no longer retains: 72000 naming the source, partition and offsets.
// - A filter narrows the replay (the broker having dropped part of the topic, a whole read is
//   72000 while these succeed): point reads by row id, IN lists, a parameter, AS OF, filters on
//   the INCLUDE partition and offset columns, a self-join; record batches larger than a point
//   read's share of a fetch.
// - SIGKILL and restart: the source neither loses nor repeats a message; a small --memory-limit
//   turns a replay that does not fit into 53200 naming the source.
// - A broker restarted between two fetches of a replay: the failed fetch is retried.
// - An unreachable broker: 08006 within seconds, not a hang.
// Broker and server: harness.ts.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { RelationDef } from '../../sql/catalog.js';
import { type } from '../../sql/types.js';
import { replayChunks } from '../../executor/connectors/kafka/kafka-replay.js';
import { useKafkaHarness } from './harness.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const kafka = useKafkaHarness();

interface Produced {
  readonly id: number;
  readonly k: number;
  readonly partition: number;
  readonly offset: number;
}

/** Sends ids [from, to) as JSON {id, k, label} pinned to partition id % partitions; returns them with their offsets. */
async function produce(topic: string, partitions: number, from: number, to: number, nextOffsets: number[]): Promise<Produced[]> {
  const out: Produced[] = [];
  const messages = [];
  for (let id = from; id < to; id++) {
    const partition = id % partitions;
    messages.push({ value: JSON.stringify({ id, k: id % 7, label: `m${id}` }), partition });
    out.push({ id, k: id % 7, partition, offset: nextOffsets[partition]!++ });
  }
  await kafka.broker.send(topic, messages);
  return out;
}

const rowId = (message: Produced): bigint => BigInt(message.offset) * 65536n + BigInt(message.partition);

function source(name: string, topic: string, extra = ''): string {
  return `CREATE SOURCE ${name} (id bigint, k int, label varchar) ${extra} WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`;
}

describe('a Kafka source that stores no rows', () => {
  it('SELECT replays exactly the messages produced, with their row ids, in row-id order', async () => {
    await kafka.broker.createTopic('rp', 3);
    await kafka.client.query(source('rp', 'rp', 'INCLUDE partition AS part INCLUDE offset AS off'));
    const offsets = [0, 0, 0];
    const produced = await produce('rp', 3, 0, 900, offsets);
    // Malformed messages: skipped by the stream and by every replay, their offsets counted.
    await kafka.broker.send('rp', [
      { value: 'not json{', partition: 1 },
      { value: '{"id":"x"}', partition: 2 },
    ]);
    offsets[1]!++;
    offsets[2]!++;
    produced.push(...(await produce('rp', 3, 900, 960, offsets)));
    await kafka.committed('rp', 962);

    const expected = [...produced].sort((a, b) => (rowId(a) < rowId(b) ? -1 : 1)).map((m) => [String(m.id), String(m.k), `m${m.id}`, String(m.partition), String(m.offset), String(rowId(m))]);
    // No ORDER BY: a replay comes in row-id order, as a stored source's scan came in key order.
    expect(await kafka.rows('SELECT id, k, label, part, off, _row_id FROM rp')).toEqual(expected);
    expect(await kafka.rows('SELECT count(*), sum(id), count(DISTINCT _row_id) FROM rp')).toEqual([['960', String((959 * 960) / 2), '960']]);
    const one = produced[500]!;
    expect(await kafka.rows(`SELECT id, part, off FROM rp WHERE _row_id = ${rowId(one)}`)).toEqual([[String(one.id), String(one.partition), String(one.offset)]]);
    expect(await kafka.rows(`SELECT id FROM rp WHERE _row_id = ${rowId(one) + 3n * 65536n * 1000n}`)).toEqual([]);
    // COPY source TO STDOUT reads the replay too (real psql).
    const copy = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(kafka.oxbow.port), '-U', 'oxbow', '-d', 'oxbow', '-c', 'COPY rp (id, part, off) TO STDOUT'], { encoding: 'utf8' });
    expect(copy.stderr).toBe('');
    expect(copy.stdout.trim().split('\n')).toEqual(expected.map((row) => `${row[0]}\t${row[3]}\t${row[4]}`));

    // The source's state: its positions (a next and a first offset per partition), not its rows.
    const [size] = await kafka.rows("SELECT purpose, keys FROM oxbow_catalog.state_size WHERE object_name = 'rp'");
    expect(size![0]).toBe('source positions');
    expect(Number(size![1])).toBeLessThan(100);
    // A FROM sink reads stored changes, which this source does not have; the hint says what works.
    const sink = `WITH (connector = 'kafka', topic = 'rp_out', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`;
    const from = await kafka.client.query(`CREATE SINK rp_sink FROM rp ${sink}`).catch((error: unknown) => error as { code: string; hint: string });
    expect(from).toMatchObject({ code: '0A000', hint: 'A Kafka source without a primary key is replayed from its topic, not stored: CREATE MATERIALIZED VIEW v AS SELECT * FROM rp, then CREATE SINK rp_sink FROM v.' });
  });

  it('backfills a view created after N messages to equal one created before and the batch query', async () => {
    await kafka.broker.createTopic('rv', 2);
    await kafka.client.query(source('rv', 'rv'));
    const query = 'SELECT k, count(*) AS n, sum(id) AS ids, max(label) AS top FROM rv GROUP BY k';
    await kafka.client.query(`CREATE MATERIALIZED VIEW rv_before AS ${query}`);
    await kafka.client.query('CREATE MATERIALIZED VIEW rv_even_before AS SELECT id, label FROM rv WHERE id % 2 = 0');
    const offsets = [0, 0];
    const produced = await produce('rv', 2, 0, 3000, offsets);
    await kafka.committed('rv', 3000);
    await kafka.client.query(`CREATE MATERIALIZED VIEW rv_after AS ${query}`);
    await kafka.client.query('CREATE MATERIALIZED VIEW rv_even_after AS SELECT id, label FROM rv WHERE id % 2 = 0');
    produced.push(...(await produce('rv', 2, 3000, 5000, offsets)));
    await kafka.committed('rv', 5000);

    const groups = new Map<number, { n: number; ids: number; top: string }>();
    for (const m of produced) {
      const group = groups.get(m.k) ?? { n: 0, ids: 0, top: '' };
      group.n++;
      group.ids += m.id;
      if (`m${m.id}` > group.top) group.top = `m${m.id}`;
      groups.set(m.k, group);
    }
    const expected = [...groups].sort((a, b) => a[0] - b[0]).map(([k, g]) => [String(k), String(g.n), String(g.ids), g.top]);
    expect(await kafka.rows('SELECT * FROM rv_before ORDER BY k')).toEqual(expected);
    expect(await kafka.rows('SELECT * FROM rv_after ORDER BY k')).toEqual(expected);
    expect(await kafka.rows(`${query} ORDER BY k`)).toEqual(expected);
    const evens = produced.filter((m) => m.id % 2 === 0).map((m) => [String(m.id), `m${m.id}`]).sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(await kafka.rows('SELECT id, label FROM rv_even_before ORDER BY id')).toEqual(evens);
    expect(await kafka.rows('SELECT id, label FROM rv_even_after ORDER BY id')).toEqual(evens);
  });

  it('AS OF a moment between two bursts reads exactly the first; BETWEEN dates each message', async () => {
    await kafka.broker.createTopic('rt', 2);
    await kafka.client.query(source('rt', 'rt'));
    const offsets = [0, 0];
    const first = await produce('rt', 2, 0, 400, offsets);
    await kafka.committed('rt', 400);
    const moment = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await produce('rt', 2, 400, 1000, offsets);
    await kafka.committed('rt', 1000);
    const ids = (messages: Produced[]): string[][] => messages.map((m) => [String(m.id)]).sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(await kafka.rows(`SELECT id FROM rt FOR SYSTEM_TIME AS OF TIMESTAMPTZ '${moment}' ORDER BY id`)).toEqual(ids(first));
    expect(await kafka.rows('SELECT id FROM rt ORDER BY id')).toEqual(ids([...first, ...second]));
    expect(await kafka.rows(`SELECT count(*), count(*) FILTER (WHERE oxbow_valid_from <= TIMESTAMPTZ '${moment}'), count(oxbow_valid_to) FROM rt FOR SYSTEM_TIME BETWEEN TIMESTAMPTZ '${moment}' AND now()`)).toEqual([['1000', '400', '0']]);
  });

  it('fails with 72000 naming the source, partition and offsets once the broker dropped messages', async () => {
    await kafka.broker.createTopic('rr', 2);
    await kafka.client.query(source('rr', 'rr'));
    await kafka.client.query('CREATE MATERIALIZED VIEW rr_count AS SELECT count(*) AS n FROM rr');
    await produce('rr', 2, 0, 200, [0, 0]);
    await kafka.committed('rr', 200);
    await kafka.broker.admin.deleteTopicRecords({ topic: 'rr', partitions: [{ partition: 1, offset: '10' }] });
    const error = await kafka.sqlError('SELECT count(*) FROM rr');
    expect(error).toEqual({ code: '72000', message: 'source "rr": Kafka topic "rr" partition 1 no longer has offsets 0 to 9 (the broker\'s log starts at offset 10)' });
    // The view keeps its rows: it stores them.
    expect(await kafka.rows('SELECT n FROM rr_count')).toEqual([['200']]);
  });
});

describe('a replay narrowed by the filter', () => {
  // The broker drops partition 1's offsets below 100: a replay of the whole source fails (72000),
  // so every read below that succeeds fetched only the messages its filter can match.
  it('reads a point read by row id, IN lists, parameters, partition and offset filters without fetching the rest', async () => {
    await kafka.broker.createTopic('rn', 3);
    await kafka.client.query(source('rn', 'rn', 'INCLUDE partition AS part INCLUDE offset AS off'));
    const offsets = [0, 0, 0];
    // 3000 messages a partition in one request: record batches of ~130 KB, more than a point
    // read's fetch size (64 KiB; in a request of several partitions the broker would send only a
    // part of such a batch for all but the first).
    const first = await produce('rn', 3, 0, 9000, offsets);
    await kafka.committed('rn', 9000);
    const moment = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await produce('rn', 3, 9000, 9030, offsets);
    await kafka.committed('rn', 9030);
    const all = [...first, ...second];
    await kafka.broker.admin.deleteTopicRecords({ topic: 'rn', partitions: [{ partition: 1, offset: '100' }] });
    expect((await kafka.sqlError('SELECT count(*) FROM rn')).code).toBe('72000');

    const at = (partition: number, offset: number): Produced => all.find((m) => m.partition === partition && m.offset === offset)!;
    const line = (m: Produced): string[] => [String(m.id), String(m.partition), String(m.offset)];
    const byRowId = (messages: Produced[]): string[][] => [...messages].sort((a, b) => (rowId(a) < rowId(b) ? -1 : 1)).map(line);
    const kept = at(1, 150);
    expect(await kafka.rows(`SELECT id, part, off FROM rn WHERE _row_id = ${rowId(kept)}`)).toEqual([line(kept)]);
    // A dropped message is still 72000 when read by its id.
    expect(await kafka.sqlError(`SELECT id FROM rn WHERE _row_id = ${rowId(at(1, 50))}`)).toMatchObject({ code: '72000' });
    // Past the committed offsets: no such row (and nothing to fetch).
    expect(await kafka.rows(`SELECT id FROM rn WHERE _row_id = ${BigInt(offsets[0]! + 5) * 65536n}`)).toEqual([]);
    const some = [at(0, 7), at(2, 199), kept, at(1, 100), at(0, 209)];
    expect(await kafka.rows(`SELECT id, part, off FROM rn WHERE _row_id IN (${some.map(rowId).join(', ')})`)).toEqual(byRowId(some));
    expect(await kafka.rows(`SELECT id, part, off FROM rn WHERE _row_id = ${rowId(at(2, 3))} OR _row_id = ${rowId(at(0, 3))} AND id >= 0`)).toEqual(byRowId([at(0, 3), at(2, 3)]));
    // A parameter (the extended protocol) narrows as a literal does.
    const bound = await kafka.client.query({ text: 'SELECT id, part, off FROM rn WHERE _row_id = $1', values: [String(rowId(kept))], rowMode: 'array' });
    expect((bound.rows as unknown[][]).map((row) => row.map(String))).toEqual([line(kept)]);
    // INCLUDE partition / offset columns.
    const sum = (messages: Produced[]): string[][] => [[String(messages.length), String(messages.reduce((total, m) => total + m.id, 0))]];
    expect(await kafka.rows('SELECT count(*), sum(id) FROM rn WHERE part IN (0, 2)')).toEqual(sum(all.filter((m) => m.partition !== 1)));
    expect(await kafka.rows('SELECT count(*), sum(id) FROM rn WHERE part = 1 AND off >= 100')).toEqual(sum(all.filter((m) => m.partition === 1 && m.offset >= 100)));
    expect(await kafka.rows('SELECT id, part, off FROM rn WHERE off BETWEEN 120 AND 122 AND part >= 1')).toEqual(byRowId(all.filter((m) => m.partition >= 1 && m.offset >= 120 && m.offset <= 122)));
    expect(await kafka.rows(`SELECT count(*) FROM rn WHERE _row_id >= ${rowId(at(0, 150))} AND part <> 1`)).toEqual([[String(all.filter((m) => m.partition !== 1 && rowId(m) >= rowId(at(0, 150))).length)]]);
    // AS OF the moment between the bursts: a message of the second burst does not exist yet.
    const late = second.find((m) => m.partition === 1)!;
    expect(await kafka.rows(`SELECT id FROM rn FOR SYSTEM_TIME AS OF TIMESTAMPTZ '${moment}' WHERE _row_id IN (${rowId(late)}, ${rowId(kept)})`)).toEqual([[String(kept.id)]]);
    expect(await kafka.rows(`SELECT id FROM rn WHERE _row_id IN (${rowId(late)}, ${rowId(kept)})`)).toEqual([[String(kept.id)], [String(late.id)]]);
    // A self-join: the union of both scans' reads.
    expect(await kafka.rows(`SELECT a.id, b.id FROM rn a JOIN rn b ON a.k = b.k WHERE a._row_id = ${rowId(kept)} AND b._row_id = ${rowId(at(0, 200))}`)).toEqual(
      kept.k === at(0, 200).k ? [[String(kept.id), String(at(0, 200).id)]] : [],
    );
    // A filter that names no coordinate still reads everything: 72000.
    expect((await kafka.sqlError('SELECT count(*) FROM rn WHERE id = 5')).code).toBe('72000');
  });
});

describe('a Kafka source that stores no rows across SIGKILL', () => {
  let dataDir: string;
  let server: OxbowServer | undefined;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'oxbow-kafka-replay-'));
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function start(args: string[] = []): Promise<pg.Client> {
    server = await startOxbow({ dataDir, args: ['--barrier-interval-ms', '100', ...args] });
    const connection = new pg.Client({ connectionString: server.url });
    await connection.connect();
    connection.on('error', () => undefined);
    return connection;
  }

  it('resumes at its committed offsets: no message lost or repeated; a replay past --memory-limit is 53200', async () => {
    await kafka.broker.createTopic('rk', 3);
    let connection = await start();
    await connection.query(source('rk', 'rk'));
    await connection.query('CREATE MATERIALIZED VIEW rk_sum AS SELECT count(*) AS n, sum(id) AS ids FROM rk');
    const offsets = [0, 0, 0];
    const produced = await produce('rk', 3, 0, 2000, offsets);
    await kafka.committed('rk', 2000, connection);
    const before = await kafka.rows('SELECT _row_id, id FROM rk', connection);
    await server!.kill('SIGKILL');
    await connection.end().catch(() => undefined);
    produced.push(...(await produce('rk', 3, 2000, 3000, offsets)));
    connection = await start();
    produced.push(...(await produce('rk', 3, 3000, 4000, offsets)));
    await kafka.committed('rk', 4000, connection);
    const total = String(produced.reduce((sum, m) => sum + m.id, 0));
    expect(await kafka.rows('SELECT count(*), count(DISTINCT id), count(DISTINCT _row_id), sum(id) FROM rk', connection)).toEqual([['4000', '4000', '4000', total]]);
    expect(await kafka.rows('SELECT n, ids FROM rk_sum', connection)).toEqual([['4000', total]]);
    // The rows read before the kill replay with the same row ids.
    const after = new Map((await kafka.rows('SELECT _row_id, id FROM rk', connection)).map(([id, value]) => [id!, value!]));
    for (const [id, value] of before) expect(after.get(id!)).toBe(value);

    // 4000 messages of ~40 bytes do not fit a replay budget of 64 KiB.
    await server!.kill('SIGKILL');
    await connection.end().catch(() => undefined);
    connection = await start(['--memory-limit', '64KB']);
    const error = await kafka.sqlError('SELECT count(*) FROM rk', connection);
    expect(error.code).toBe('53200');
    expect(error.message).toMatch(/^source "rk": replaying its Kafka topic needs more than \d+ KiB of memory$/);
    expect(await kafka.rows('SELECT n FROM rk_sum', connection)).toEqual([['4000']]);
    await connection.end();
  });
});

describe('a broker restarted during a replay', () => {
  it('retries the fetch that failed and reads every message once, in order', async () => {
    await kafka.broker.createTopic('rb', 1);
    // 5000 messages of about 2 KiB: at 4 MiB per partition and fetch, at least three fetches.
    const total = 5000;
    const pad = 'x'.repeat(2000);
    for (let from = 0; from < total; from += 250) {
      await kafka.broker.send('rb', Array.from({ length: 250 }, (_, i) => ({ value: JSON.stringify({ id: from + i, pad }), partition: 0 })));
    }
    const relation = {
      id: 40001,
      kind: 'source',
      schema: 'public',
      name: 'rb',
      columns: [
        { name: 'id', type: type('int8'), nullable: true, hidden: false },
        { name: 'pad', type: type('varchar'), nullable: true, hidden: false },
        { name: '_row_id', type: type('int8'), nullable: false, hidden: true },
      ],
      primaryKey: [2],
      dependsOn: [],
      options: { connector: 'kafka', topic: 'rb', 'properties.bootstrap.server': kafka.broker.bootstrap },
      format: 'plain',
      encode: 'json',
      replayed: true,
    } as RelationDef;
    const chunks = replayChunks(relation, new Map([[0, { partition: 0, from: 0n, to: BigInt(total) }]]));
    const ids: number[] = [];
    const first = await chunks.next();
    for (const row of first.value!.rows) ids.push(Number(row[0]));
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(total);
    // The replay's connection dies with the broker; its next fetch fails and is retried.
    kafka.broker.restart();
    for await (const chunk of chunks) for (const row of chunk.rows) ids.push(Number(row[0]));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => i));
  }, 180_000);
});

describe('an unreachable broker', () => {
  it('fails a read with 08006 instead of hanging', async () => {
    await kafka.broker.createTopic('ru', 1);
    await kafka.client.query(source('ru', 'ru'));
    await produce('ru', 1, 0, 10, [0]);
    await kafka.committed('ru', 10);
    await kafka.broker.stop();
    // Each broker request of a replay is bounded (10 s), so this returns well within the test's timeout.
    const error = await kafka.sqlError('SELECT count(*) FROM ru');
    expect(error.code).toBe('08006');
    expect(error.message).toContain(`source "ru": cannot replay Kafka topic "ru" from ${kafka.broker.bootstrap}`);
  }, 90_000);
});
