// A Kafka broker behind a fault proxy: the broker advertises the proxy's port (scripts/kafka.mjs
// --advertised-port), so every connection a client makes after the bootstrap goes through it. A
// source reads a topic and a sink writes a table's rows to another while a writer keeps
// inserting; the broker hangs (the proxy holds every byte), connections are cut with an RST
// mid-transfer, every byte arrives 3 s late (past the 2 s request deadline), and the broker's JVM
// is stopped with SIGSTOP. Each time: oxbow keeps running, the sink's failed rounds are rows of
// oxbow_catalog.sink_errors, CREATE SOURCE against the hung broker fails within its deadline, and
// once the fault clears both catch up by themselves. At the end the sink's topic holds every
// acknowledged row exactly once (read_committed, counted by key), the source every produced
// message once, and the view equals its query.

import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { freePortPair, listensOn, portTaken, startBroker, type Broker } from '../kafka/broker.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { eventually, expectAlive, expectRefusedQuickly, expectViewEqualsQuery, report, signalTree, startWriter, useFaultRig } from './support.js';

const { Kafka, logLevel } = kafkajs;

const rig = useFaultRig(async () => {
  // The proxy forwards to the broker's port, chosen first: another pair when a process of another
  // test file claimed or bound this one before the broker did.
  let proxy: FaultProxy;
  let broker: Broker;
  for (let attempt = 1; ; attempt++) {
    const port = await freePortPair();
    proxy = await FaultProxy.start(port);
    try {
      broker = await startBroker({ port, advertisedPort: proxy.port });
      break;
    } catch (error) {
      await proxy.close();
      if (attempt >= 5 || !portTaken(port, error)) throw error;
    }
  }
  await broker.createTopic('in', 1);
  await broker.createTopic('out', 1);
  return {
    proxy,
    broker,
    get pid() {
      return broker.pid;
    },
    stop: () => broker.stop(),
  };
}, []);

/** The state letter of process `pid` (/proc/<pid>/stat: R, S, T for stopped...), '' when it is gone. */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
  } catch {
    return '';
  }
}

/** The broker the clients reach is the JVM the SIGSTOP stopped (not a process that merely had its pid). */
function expectBrokerStopped(): void {
  const { pid, port } = rig.target.broker;
  expect(listensOn(pid, port), `broker pid ${pid} holds the listening socket of port ${port}`).toBe(true);
  // The kernel stops every thread of the JVM at once, but not necessarily before kill() returns.
  const deadline = Date.now() + 5000;
  while (processState(pid) !== 'T' && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  expect(processState(pid), `state of broker pid ${pid}`).toBe('T');
}

function kafkaOptions(topic: string): string {
  return `connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '127.0.0.1:${rig.target.proxy.port}', connect.timeout.ms = '1000', request.timeout.ms = '2000'`;
}

let produced = 0;
async function produce(count: number): Promise<void> {
  const messages = [];
  for (let i = 0; i < count; i++) {
    produced++;
    messages.push({ value: JSON.stringify({ id: produced, v: produced * 3 }) });
  }
  await rig.target.broker.send('in', messages);
}

async function count(sql: string): Promise<number> {
  return Number((await rig.client.query<{ n: string }>(sql)).rows[0]!.n);
}

/** Every committed message of topic `out` as its key, once the topic has been quiet for 3 s with at least `atLeast`. */
async function committedKeys(atLeast: number): Promise<string[]> {
  const kafka = new Kafka({ clientId: 'oxbow-faults-read', brokers: [rig.target.broker.bootstrap], logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `faults-read-${Date.now()}`, readUncommitted: false });
  const keys: string[] = [];
  let lastAt = Date.now();
  await consumer.connect();
  await consumer.subscribe({ topic: 'out', fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      keys.push(message.key?.toString() ?? 'null');
      lastAt = Date.now();
    },
  });
  try {
    await eventually(`${atLeast} messages in topic out`, 60_000, () => (keys.length >= atLeast && Date.now() - lastAt > 3000 ? true : undefined));
    return [...keys];
  } finally {
    await consumer.disconnect();
  }
}

describe('Kafka broker faults', () => {
  it('survives a hang, resets, latency and SIGSTOP; the sink delivers every acknowledged row once, the source reads every message once', { timeout: 240_000 }, async () => {
    await produce(200);
    await rig.client.query(`create source src_in (id int, v bigint) with (${kafkaOptions('in')}) format plain encode json`);
    await rig.client.query('create materialized view in_totals as select count(*) as n, sum(v) as s, max(id) as top from src_in');
    await rig.client.query('create table t (id int primary key, v bigint)');
    await rig.client.query(`create sink t_out from t with (${kafkaOptions('out')}, primary_key = 'id', transaction.timeout.ms = '4000') format plain encode json`);
    const writer = startWriter((id) => rig.client.query('insert into t values ($1, $2)', [id, id * 10]));
    await eventually('the first messages read', 60_000, async () => ((await count('select count(*) as n from src_in')) === produced ? true : undefined));

    const sinkErrors = async (): Promise<string[]> => (await rig.client.query<{ error: string }>("select error from oxbow_catalog.sink_errors where sink_name = 't_out' order by error_at")).rows.map((row) => row.error);
    // Rounds delivered and the current trouble. A round delivers everything committed when it
    // starts; rows_delivered is no measure (a commit whose answer was lost is found in the topic
    // by the next round, not counted again).
    const sinkState = async (): Promise<{ deliveries: number; trouble: string | null }> => {
      const row = (await rig.client.query<{ deliveries: string; trouble: string | null }>("select deliveries, trouble from oxbow_catalog.sink_status where sink_name = 't_out'")).rows[0];
      return { deliveries: Number(row?.deliveries ?? 0), trouble: row === undefined ? 'no status yet' : row.trouble };
    };
    /** Waits for two successful rounds after now: the second started after it. */
    const twoRoundsFromNow = async (what: string): Promise<void> => {
      const from = (await sinkState()).deliveries;
      await eventually(what, 60_000, async () => {
        const state = await sinkState();
        return state.trouble === null && state.deliveries >= from + 2 ? true : undefined;
      });
    };
    const faults: { name: string; inject(): void; clear(): void; probeCreate: boolean }[] = [
      { name: 'hang', inject: () => rig.target.proxy.hang(), clear: () => rig.target.proxy.resume(), probeCreate: true },
      { name: 'reset', inject: () => rig.target.proxy.reset(1000), clear: () => rig.target.proxy.resume(), probeCreate: false },
      { name: 'latency', inject: () => rig.target.proxy.latency(3000), clear: () => rig.target.proxy.pass(), probeCreate: false },
      {
        name: 'sigstop',
        inject: () => {
          signalTree(rig.target.broker.pid, 'SIGSTOP');
          expectBrokerStopped();
        },
        clear: () => signalTree(rig.target.broker.pid, 'SIGCONT'),
        probeCreate: true,
      },
    ];
    for (const fault of faults) {
      // Steady first: the sink delivering without trouble, so the next error row is the fault's.
      await twoRoundsFromNow(`the sink steady before the ${fault.name}`);
      const before = (await sinkErrors()).length;
      fault.inject();
      if (fault.probeCreate) {
        const probe = `create source probe (id int, v bigint) with (${kafkaOptions('in')}) format plain encode json`;
        await expectRefusedQuickly(rig.client, probe, /^08/, /did not answer within 2000 ms|cannot reach Kafka broker/);
      }
      const errors = await eventually(`a sink_errors row for the ${fault.name}`, 45_000, async () => {
        const rows = await sinkErrors();
        return rows.length > before ? rows.slice(before) : undefined;
      });
      expect(errors.join('\n')).toMatch(/transaction\.timeout\.ms|timed out|timeout|Connection|ECONNRESET|closed|not available|could not read the end|coordinator/i);
      expectAlive(rig.oxbow);

      const cleared = Date.now();
      fault.clear();
      await twoRoundsFromNow(`the sink delivering again after the ${fault.name}`);
      report(`kafka_sink_${fault.name}_recovery`, Date.now() - cleared, 'ms');
      await produce(100);
      await eventually(`the source caught up after the ${fault.name}`, 60_000, async () => ((await count('select count(*) as n from src_in')) === produced ? true : undefined));
      report(`kafka_source_${fault.name}_recovery`, Date.now() - cleared, 'ms');
    }
    await writer.stop();
    const acked = writer.acked;
    const keys = await committedKeys(acked.length);
    const byKey = new Map<string, number>();
    for (const key of keys) byKey.set(key, (byKey.get(key) ?? 0) + 1);
    const lost = acked.filter((id) => !byKey.has(JSON.stringify({ id })));
    const duplicated = [...byKey.values()].filter((n) => n > 1).length;
    expect(lost).toEqual([]);
    expect(duplicated).toBe(0);
    expect(keys.length).toBe(acked.length);
    report('kafka_sink_acknowledged_rows', acked.length, 'rows');
    report('kafka_sink_lost', lost.length, 'rows');
    report('kafka_sink_duplicates', duplicated, 'rows');

    expect(await count('select count(*) as n from src_in')).toBe(produced);
    expect(await count('select count(distinct id) as n from src_in')).toBe(produced);
    report('kafka_source_messages', produced, 'messages');
    await expectViewEqualsQuery(rig.client, 'in_totals', 'select count(*) as n, sum(v) as s, max(id) as top from src_in');
    expectAlive(rig.oxbow);
  });
});
