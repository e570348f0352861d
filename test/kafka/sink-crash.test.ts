// Exactly once into Kafka across SIGKILL of oxbow at random moments: a sink delivers every 50 ms
// (so kills land before, during and after Kafka transactions and progress commits) while
// statements run; every statement writes a value never written before, so each row version is
// one unique PLAIN message. After four kills, the topic read back (read_committed, until quiet)
// must hold every committed version exactly once. The versions that committed are known to the
// test (a statement cut off by a kill is looked up after the restart). Then the broker goes away
// for longer than the time-travel retention while rows change and oxbow is killed in the middle:
// the sink holds the history it has yet to deliver, and the topic gets every version once. The
// one-window fault (death between the Kafka commit and the progress commit) is sinks.test.ts's.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import kafkajs from 'kafkajs';
import { useKafkaHarness } from './harness.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { seededRandom } from '../support/seeded-random.js';

const kafka = useKafkaHarness({ server: false });
const seed = Number(process.env['OXBOW_SINK_CRASH_SEED'] ?? Date.now() % 100_000);
const random = seededRandom(seed);
const ARGS = ['--barrier-interval-ms', '50', '--time-travel-retention', '2s'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const KAFKA_SCRIPT = fileURLToPath(new URL('../../scripts/kafka.mjs', import.meta.url));

/** Stops the file's broker (its data kept) until `start()`: a target away for a while. */
function brokerOutage(port: number): { start(): void } {
  spawnSync(process.execPath, [KAFKA_SCRIPT, '--stop', '--port', String(port)], { encoding: 'utf8' });
  return {
    start() {
      const started = spawnSync(process.execPath, [KAFKA_SCRIPT, '--port', String(port), '--timeout-ms', '120000', '--keep-data'], { encoding: 'utf8' });
      if (started.status !== 0) throw new Error(`the broker did not start again: ${started.stdout}${started.stderr}`);
    },
  };
}

const versions = new Set<string>();
const model = new Map<number, number>();
let nextId = 1;
let nextValue = 1;
let uncertain: { id: number; v: number } | undefined;

async function connect(server: OxbowServer): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: server.url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

async function load(client: pg.Client, stop: { done: boolean }): Promise<void> {
  while (!stop.done) {
    const ids = [...model.keys()];
    const update = ids.length > 0 && random() < 0.5;
    const id = update ? ids[Math.floor(random() * ids.length)]! : nextId++;
    const v = nextValue++;
    uncertain = { id, v };
    try {
      await client.query(update ? `UPDATE items SET v = ${v} WHERE id = ${id}` : `INSERT INTO items VALUES (${id}, ${v})`);
    } catch {
      return;
    }
    uncertain = undefined;
    versions.add(JSON.stringify({ id, v }));
    model.set(id, v);
    if (random() < 0.3) await sleep(Math.floor(random() * 20));
  }
}

/** After a restart: did the statement cut off by the kill commit? */
async function settleUncertain(client: pg.Client): Promise<void> {
  const cut = uncertain;
  uncertain = undefined;
  if (cut === undefined) return;
  const found = await client.query('SELECT v FROM items WHERE id = $1', [cut.id]);
  if (found.rows[0]?.v === cut.v) {
    versions.add(JSON.stringify(cut));
    model.set(cut.id, cut.v);
  }
}

/** Every committed message of the topic, once no new one arrived for `quietMs`. */
async function readAll(bootstrap: string, topic: string, atLeast: number, quietMs = 3000): Promise<string[]> {
  const client = new kafkajs.Kafka({ clientId: 'oxbow-test-read', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const consumer = client.consumer({ groupId: `read-all-${topic}-${Date.now()}`, readUncommitted: false });
  const seen: string[] = [];
  let lastAt = Date.now();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message.value?.toString() ?? 'null');
      lastAt = Date.now();
    },
  });
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline && (seen.length < atLeast || Date.now() - lastAt < quietMs)) await sleep(100);
  await consumer.disconnect();
  return seen;
}

describe('Kafka sink, exactly once', () => {
  it(`sends every committed row version once across SIGKILLs (seed ${seed})`, { timeout: 240_000 }, async () => {
    await kafka.broker.createTopic('crash_out', 1);
    let server = await startOxbow({ dataDir: kafka.dataDir, args: ARGS });
    let client = await connect(server);
    await client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await client.query(`CREATE SINK items_out FROM items WITH (connector = 'kafka', topic = 'crash_out', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    // The first delivery sends the contents as they are then: the changes start after it.
    await client.query('INSERT INTO items VALUES (0, 0)');
    versions.add(JSON.stringify({ id: 0, v: 0 }));
    model.set(0, 0);
    await kafka.broker.readTopic('crash_out', 1);
    for (let round = 0; round < 4; round++) {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(300 + Math.floor(random() * 900));
      await server.kill('SIGKILL');
      stop.done = true;
      await loading;
      await client.end().catch(() => undefined);
      server = await startOxbow({ dataDir: kafka.dataDir, args: ARGS });
      client = await connect(server);
      await settleUncertain(client);
    }
    try {
      expect(versions.size).toBeGreaterThan(50);
      const messages = await readAll(kafka.broker.bootstrap, 'crash_out', versions.size);
      const counts = new Map<string, number>();
      for (const message of messages) counts.set(message, (counts.get(message) ?? 0) + 1);
      expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
      expect([...counts.keys()].sort()).toEqual([...versions].sort());
    } finally {
      await client.end();
      await server.stop();
    }
  });

  it(`sends every change after a broker outage longer than the retention, across a SIGKILL in it (seed ${seed})`, { timeout: 300_000 }, async () => {
    versions.clear();
    model.clear();
    uncertain = undefined;
    await kafka.broker.createTopic('outage_out', 1);
    let server = await startOxbow({ dataDir: kafka.dataDir, args: ARGS });
    let client = await connect(server);
    await client.query('DROP TABLE IF EXISTS items CASCADE');
    await client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await client.query(`CREATE SINK outage_out FROM items WITH (connector = 'kafka', topic = 'outage_out', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await client.query('INSERT INTO items VALUES (0, 0)');
    versions.add(JSON.stringify({ id: 0, v: 0 }));
    model.set(0, 0);
    await kafka.broker.readTopic('outage_out', 1);
    // The broker goes away for longer than the 2 s retention while rows change; oxbow is killed
    // and restarted in the middle of it.
    const outage = brokerOutage(kafka.broker.port);
    const run = async (ms: number) => {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(ms);
      stop.done = true;
      await loading;
    };
    await run(2500);
    {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(300);
      await server.kill('SIGKILL');
      stop.done = true;
      await loading;
      await client.end().catch(() => undefined);
    }
    server = await startOxbow({ dataDir: kafka.dataDir, args: ARGS });
    client = await connect(server);
    await settleUncertain(client);
    await run(2500);
    outage.start();
    try {
      const messages = await readAll(kafka.broker.bootstrap, 'outage_out', versions.size);
      const counts = new Map<string, number>();
      for (const message of messages) counts.set(message, (counts.get(message) ?? 0) + 1);
      expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
      expect([...counts.keys()].sort()).toEqual([...versions].sort());
    } finally {
      await client.end();
      await server.stop();
    }
  });
});
