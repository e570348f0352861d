// A Kafka source fragment (executor/stream/PARALLEL.md, "Source fragments", Kafka): a view of a
// source that stores no rows, through a filter and a projection, at --parallelism 2 has its
// partitions' rows transformed and stored by two workers. The view equals its query recomputed
// here from what the test produced (count, sum, count per key); the malformed messages are in
// source_errors, as at parallelism 1 (the later ones rejected by the workers, which decode). Then
// the server is SIGKILLed mid-production and restarted at 3 with decoding left in the source's
// Kafka worker (the workers get rows), killed again and restarted at 1: every produced message is
// in the view once, and in a second view created (backfilled) between.

import { afterAll, expect, it } from 'vitest';
import pg from 'pg';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets } from '../support/source-offsets.js';

const PARTITIONS = 4;
const KEYS = 7;
const FIRST = 20_000;
const TOTAL = 60_000;
const BATCH = 1000;
/** Malformed messages produced to partition 1 before the first good one (offsets 0..2 there), and again after the first messages (decoded by the workers). */
const BAD = ['not json', '{"id": "x"', '[1, 2'];

const kafka = useKafkaHarness({ server: false });
let oxbow: OxbowServer | undefined;

afterAll(async () => {
  await oxbow?.stop();
});

/** `decodeInWorkers` false: the source's Kafka worker decodes and the fragment's workers get rows (OXBOW_KAFKA_FRAGMENT_DECODE=0). */
async function start(parallelism: number, decodeInWorkers = true): Promise<{ server: OxbowServer; client: pg.Client }> {
  const server = await startOxbow({
    dataDir: kafka.dataDir,
    args: ['--barrier-interval-ms', '100', '--parallelism', String(parallelism), '--cores', '8'],
    ...(decodeInWorkers ? {} : { env: { OXBOW_KAFKA_FRAGMENT_DECODE: '0' } }),
  });
  return { server, client: await connectToKillable(server) };
}

function message(id: number): { value: string; partition: number } {
  return { value: JSON.stringify({ id, k: id % KEYS, v: (id * 7919) % 1000 }), partition: id % PARTITIONS };
}

/** The view's query (WHERE v % 3 <> 0, w = v * 2) over ids [0, count), computed here: count, sum of w, count per k. */
function expected(count: number): string[] {
  let n = 0;
  let sum = 0n;
  const perKey = new Array<number>(KEYS).fill(0);
  for (let id = 0; id < count; id++) {
    const v = (id * 7919) % 1000;
    if (v % 3 === 0) continue;
    n++;
    sum += BigInt(v * 2);
    perKey[id % KEYS]!++;
  }
  return [`${n} | ${sum} | ${n}`, ...perKey.map((c, k) => `${k} | ${c}`).filter((_, k) => perKey[k]! > 0)];
}

async function viewState(client: pg.Client): Promise<string[]> {
  const total = await client.query({ text: 'SELECT count(*), sum(w), count(DISTINCT id) FROM evens', rowMode: 'array' });
  const perKey = await client.query({ text: 'SELECT k, count(*) FROM evens GROUP BY k ORDER BY k', rowMode: 'array' });
  return [...total.rows, ...perKey.rows].map((row: unknown[]) => row.map(String).join(' | '));
}

/** The second view's query (WHERE k = 3: count and sum of v) over ids [0, count), computed here. */
function expectedThrees(count: number): string[] {
  let n = 0;
  let sum = 0;
  for (let id = 0; id < count; id++) {
    if (id % KEYS !== 3) continue;
    n++;
    sum += (id * 7919) % 1000;
  }
  return [`${n} | ${sum}`];
}

async function threesState(client: pg.Client): Promise<string[]> {
  const rows = await client.query({ text: 'SELECT count(*), sum(v) FROM threes', rowMode: 'array' });
  return rows.rows.map((row: unknown[]) => row.map(String).join(' | '));
}

async function produce(from: number, to: number, progress?: { produced: number }): Promise<void> {
  for (let first = from; first < to; first += BATCH) {
    const messages = [];
    for (let id = first; id < Math.min(first + BATCH, to); id++) messages.push(message(id));
    await kafka.broker.send('events', messages);
    if (progress !== undefined) progress.produced = Math.min(first + BATCH, to);
  }
}

it('splits a Kafka source\'s partitions across the workers, exactly once across SIGKILLs at another parallelism', async () => {
  await kafka.broker.createTopic('events', PARTITIONS);
  await kafka.broker.send('events', BAD.map((value) => ({ value, partition: 1 })));
  let { server, client } = await start(2);
  oxbow = server;
  await client.query(`CREATE SOURCE events (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'events',
    properties.bootstrap.server = '${kafka.broker.bootstrap}', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`);
  await client.query('CREATE MATERIALIZED VIEW evens AS SELECT id, k, v * 2 AS w FROM events WHERE v % 3 <> 0');
  const plan = (await client.query({ text: 'EXPLAIN evens', rowMode: 'array' })).rows.map((row: unknown[]) => String(row[0])).join('\n');
  expect(plan).toContain('StreamSourceFragment events partitions split across 2 workers');

  await produce(0, FIRST);
  await kafka.broker.send('events', BAD.map((value) => ({ value, partition: 1 })));
  await waitFor('the first messages committed', async () => ((await committedOffsets(client, 'events')) === FIRST + 2 * BAD.length ? true : undefined), 120_000);
  expect(await viewState(client)).toEqual(expected(FIRST));
  // Partition 1 holds the first malformed messages, its FIRST / 4 good ones, then the second.
  const errors = await client.query({ text: "SELECT partition_id, message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'events' ORDER BY message_offset", rowMode: 'array' });
  const badOffsets = [...BAD.map((_, offset) => offset), ...BAD.map((_, i) => BAD.length + FIRST / PARTITIONS + i)];
  expect(errors.rows.map((row: unknown[]) => `${String(row[0])} | ${String(row[1])}`)).toEqual(badOffsets.map((offset) => `1 | ${offset}`));
  for (const row of errors.rows as unknown[][]) expect(String(row[2])).not.toBe('');
  // EXPLAIN ANALYZE: the workers stored the rows (the main thread's chain under the fragment stored none).
  const analyzed = (await client.query({ text: 'EXPLAIN ANALYZE evens', rowMode: 'array' })).rows.map((row: unknown[]) => String(row[0])).join('\n');
  expect(analyzed).toMatch(/StreamSourceFragment events partitions split across 2 workers: [1-9]\d* units, [1-9]\d* rows/);

  // A second view over the source: its backfill replays the topic through the main thread, then
  // both views' workers take every batch (the first fragment gets copies).
  await client.query('CREATE MATERIALIZED VIEW threes AS SELECT id, v FROM events WHERE k = 3');
  expect((await client.query({ text: 'EXPLAIN threes', rowMode: 'array' })).rows.map((row: unknown[]) => String(row[0])).join('\n')).toContain('StreamSourceFragment events partitions split across 2 workers');
  expect(await threesState(client)).toEqual(expectedThrees(FIRST));

  const progress = { produced: FIRST };
  const producing = produce(FIRST, TOTAL, progress);
  for (const next of [3, 1]) {
    // Kill while the source is busy: after it committed something new since the (re)start.
    const before = await committedOffsets(client, 'events');
    await waitFor('progress before the kill', async () => ((await committedOffsets(client, 'events')) > before || progress.produced === TOTAL ? true : undefined), 120_000);
    await server.kill('SIGKILL');
    await client.end().catch(() => undefined);
    // At 3 the Kafka worker decodes and the fragment's workers take rows; at 1 there is no fragment.
    ({ server, client } = await start(next, next !== 3));
    oxbow = server;
  }
  await producing;
  await waitFor('every message committed', async () => ((await committedOffsets(client, 'events')) === TOTAL + 2 * BAD.length ? true : undefined), 180_000);
  expect(await viewState(client)).toEqual(expected(TOTAL));
  expect(await threesState(client)).toEqual(expectedThrees(TOTAL));
  await client.end();
}, 300_000);
