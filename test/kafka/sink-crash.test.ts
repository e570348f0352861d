// Exactly once into Kafka across SIGKILL of oxbow at random moments: a sink delivers every 50 ms
// (so kills land before, during and after Kafka transactions and progress commits) while
// statements run; every statement writes a value never written before, so each row version is
// one unique PLAIN message. After four kills, the topic read back (read_committed, until quiet)
// must hold every committed version exactly once. The versions that committed are known to the
// test (a statement cut off by a kill is looked up after the restart). Then the broker goes away
// for longer than the time-travel retention while rows change and oxbow is killed in the middle:
// the sink holds the history it has yet to deliver, and the topic gets every version once. The
// one-window fault (death between the Kafka commit and the progress commit) is sinks.test.ts's.

import { describe, expect, it } from 'vitest';
import { useKafkaHarness } from './harness.js';
import { readAllCommitted, restartBroker, stopBroker } from './broker.js';
import { CrashLoad } from '../support/crash-load.js';
import { seededRandom } from '../support/seeded-random.js';

const kafka = useKafkaHarness({ server: false });
const seed = Number(process.env['OXBOW_SINK_CRASH_SEED'] ?? Date.now() % 100_000);
const random = seededRandom(seed);
const ARGS = ['--barrier-interval-ms', '50', '--time-travel-retention', '2s'];
/** Stops the file's broker (its data and its port pair kept) until `start()`: a target away for a while. */
function brokerOutage(port: number): { start(): void } {
  stopBroker(port, { keepClaim: true });
  return {
    start() {
      restartBroker(port);
    },
  };
}

/** Every committed message of the topic, once no new one arrived for 3 s. */
const readAll = (bootstrap: string, topic: string, atLeast: number): Promise<string[]> => readAllCommitted(bootstrap, topic, atLeast, { name: 'read-all', timeoutMs: 90_000 });

/** A server with `items` and a sink of it into a new topic, the first row delivered. */
async function startWithSink(topic: string): Promise<CrashLoad> {
  await kafka.broker.createTopic(topic, 1);
  const load = await CrashLoad.start({ oxbow: { dataDir: kafka.dataDir, args: ARGS }, random, key: (id, v) => JSON.stringify({ id, v }) });
  await load.client.query('DROP TABLE IF EXISTS items CASCADE');
  await load.client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
  await load.client.query(`CREATE SINK ${topic} FROM items WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
  // The first delivery sends the contents as they are then: the changes start after it.
  await load.client.query('INSERT INTO items VALUES (0, 0)');
  load.committed(0, 0);
  await kafka.broker.readTopic(topic, 1);
  return load;
}

/** The topic holds every committed version once, and nothing else. */
async function expectEveryVersionOnce(load: CrashLoad, topic: string): Promise<void> {
  const messages = await readAll(kafka.broker.bootstrap, topic, load.versions.size);
  const counts = new Map<string, number>();
  for (const message of messages) counts.set(message, (counts.get(message) ?? 0) + 1);
  expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
  expect([...counts.keys()].sort()).toEqual([...load.versions].sort());
}

describe('Kafka sink, exactly once', () => {
  it(`sends every committed row version once across SIGKILLs (seed ${seed})`, { timeout: 240_000 }, async () => {
    const load = await startWithSink('crash_out');
    for (let round = 0; round < 4; round++) await load.killAndRestart(300 + Math.floor(random() * 900));
    try {
      expect(load.versions.size).toBeGreaterThan(50);
      await expectEveryVersionOnce(load, 'crash_out');
    } finally {
      await load.stop();
    }
  });

  it(`sends every change after a broker outage longer than the retention, across a SIGKILL in it (seed ${seed})`, { timeout: 300_000 }, async () => {
    const load = await startWithSink('outage_out');
    // The broker goes away for longer than the 2 s retention while rows change; oxbow is killed
    // and restarted in the middle of it.
    const outage = brokerOutage(kafka.broker.port);
    await load.loadWhile(2500);
    await load.killAndRestart(300);
    await load.loadWhile(2500);
    outage.start();
    try {
      await expectEveryVersionOnce(load, 'outage_out');
    } finally {
      await load.stop();
    }
  });
});
