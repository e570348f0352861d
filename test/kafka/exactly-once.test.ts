// Exactly once across crashes: messages are produced to a 4-partition topic while the oxbow server
// reading them is SIGKILLed several times and restarted on the same data directory. After the last
// restart the view's count and sum of ids equal what was produced, exactly: no message lost (the
// source resumes at the offsets committed with the last epoch) and none twice (data, view and
// offsets commit in one atomic write).
//
// CI size: 40,000 messages, 5 kills. Full size (issue 7: 1M messages):
//   OXBOW_KAFKA_EOS_MESSAGES=1000000 npx vitest run test/kafka/exactly-once.test.ts

import { afterAll, expect, it } from 'vitest';
import pg from 'pg';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets } from '../support/source-offsets.js';

const TOTAL = Number(process.env['OXBOW_KAFKA_EOS_MESSAGES'] ?? 40_000);
const KILLS = 5;
const PARTITIONS = 4;
const BATCH = 1000;
const KEYS = 10;

const kafka = useKafkaHarness({ server: false });
let oxbow: OxbowServer | undefined;

afterAll(async () => {
  await oxbow?.stop();
});

async function start(): Promise<{ server: OxbowServer; client: pg.Client }> {
  const server = await startOxbow({ dataDir: kafka.dataDir, args: ['--barrier-interval-ms', '100'] });
  return { server, client: await connectToKillable(server) };
}

it(`reflects ${TOTAL} messages exactly once across ${KILLS} SIGKILLs`, async () => {
  await kafka.broker.createTopic('events', PARTITIONS);
  let { server, client } = await start();
  oxbow = server;
  await client.query(`CREATE SOURCE events (id bigint, k int) WITH (connector = 'kafka', topic = 'events',
    properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
  await client.query('CREATE MATERIALIZED VIEW event_counts AS SELECT k, count(*) AS n, sum(id) AS ids FROM events GROUP BY k');

  let produced = 0;
  const producing = (async () => {
    for (let first = 0; first < TOTAL; first += BATCH) {
      const messages = [];
      for (let id = first; id < Math.min(first + BATCH, TOTAL); id++) messages.push({ value: JSON.stringify({ id, k: id % KEYS }), partition: id % PARTITIONS });
      await kafka.broker.send('events', messages);
      produced += messages.length;
    }
  })();

  for (let kill = 0; kill < KILLS; kill++) {
    // Kill while the source is busy: after it committed something new since the (re)start.
    const before = await committedOffsets(client, 'events').catch(() => 0);
    await waitFor('progress before the kill', async () => ((await committedOffsets(client, 'events')) > before || produced === TOTAL ? true : undefined), 120_000);
    await server.kill('SIGKILL');
    await client.end().catch(() => undefined);
    ({ server, client } = await start());
    oxbow = server;
  }
  await producing;
  await waitFor('every message committed', async () => ((await committedOffsets(client, 'events')) === TOTAL ? true : undefined), 180_000);

  const expected = new Map<number, { n: number; ids: bigint }>();
  for (let id = 0; id < TOTAL; id++) {
    const entry = expected.get(id % KEYS) ?? { n: 0, ids: 0n };
    entry.n++;
    entry.ids += BigInt(id);
    expected.set(id % KEYS, entry);
  }
  const rows = await client.query({ text: 'SELECT k, n, ids FROM event_counts ORDER BY k', rowMode: 'array' });
  expect(rows.rows.map((row: unknown[]) => row.map(String).join(' | '))).toEqual([...expected].sort((a, b) => a[0] - b[0]).map(([k, e]) => `${k} | ${e.n} | ${e.ids}`));
  const table = await client.query('SELECT count(*)::int8 AS n, count(DISTINCT id)::int8 AS d FROM events');
  expect([Number(table.rows[0].n), Number(table.rows[0].d)]).toEqual([TOTAL, TOTAL]);
  await client.end();
}, 300_000);
