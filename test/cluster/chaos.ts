// The chaos run of chaos.test.ts and chaos-shares.test.ts, against real parts only: three oxbow
// nodes on a real etcd (test/support/etcd.ts), checkpoints in a real S3-compatible server (s3rver),
// a real Kafka broker (test/kafka/broker.ts), all on loopback. The leader reads a Kafka topic into
// materialized views and a Kafka sink (CREATE SINK ... AS SELECT, FORMAT PLAIN) while the test keeps
// producing into the topic. SIGKILLs of random nodes, the leader every other time, each killed node
// restarted on its data directory at once. At the end:
//
// - the views equal their recomputation from the messages the test produced (every message once:
//   count, distinct ids, min and max; per key count and sum), and the query recomputed by the
//   leader over the source; a second source over the same topic feeds a filter alone (a Kafka
//   source fragment: under --remote-shares on the nodes fetch its offset ranges themselves), whose
//   view holds every even id once;
// - with the sink (`sink`), its topic, read back read_committed, holds every produced message
//   exactly once: none twice (a failover re-running epochs a dead leader had delivered) and none
//   missing.
//
// OXBOW_CHAOS_SEED replays a failing run's schedule; OXBOW_CHAOS_KILLS changes the number of kills.
// Each node incarnation's stdout and stderr go to files `<node>-<n>.stdout|stderr` in a folder
// of their own, kept and named on failure, removed when the run passes. A failed check also prints
// what the leader says (sink_status, sink_errors, source_errors, nodes, checkpoints, view_errors)
// and, with the sink, its topic as the broker holds it: offsets, an uncommitted read with each
// message's `oxbow.epoch`, and a second committed read (never sent, aborted, or behind an open
// transaction).

import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAllCommitted, readAllMessages, startBroker, type Broker } from '../kafka/broker.js';
import { startS3rver, type S3rverProcess } from '../checkpoint/support/s3rver.js';
import { startEtcd, type EtcdServer } from '../support/etcd.js';
import { seededRandom } from '../support/seeded-random.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { produceIds } from './id-producer.js';

const { Kafka, logLevel } = kafkajs;
const PARTITIONS = 3;
const KEYS = 13;
/** The groups of the second grouped view: enough keys for every owner's vnodes to hold some. */
const GROUPS = 997;
const sleep = (ms: number) => new Promise((resolveWait) => setTimeout(resolveWait, ms));
const valueOf = (id: number): number => (id * 37) % 1000;

export interface ChaosOptions {
  /** What the run is called in the test's name and its temporary folders. */
  readonly name: string;
  /** More arguments for every node. */
  readonly args: readonly string[];
  /**
   * Whether the work is shared with the other nodes (`--remote-shares on`): then some node other
   * than the leader must have processed rows of a keyed fragment, and fetched Kafka offsets for
   * the filter's source fragment, at some point of the run.
   */
  readonly shares: boolean;
  /** Whether the run has the Kafka sink, whose topic must then hold every message once. */
  readonly sink: boolean;
  /** More environment for every node. */
  readonly env?: Readonly<Record<string, string>>;
  /** A line some node's output must hold by the end of the run (what the run's setting makes the nodes do). */
  readonly logged?: RegExp;
}

/** Declares the chaos test of `options` (its services started before it and stopped after). */
export function describeChaos(options: ChaosOptions): void {
  const seed = Number(process.env['OXBOW_CHAOS_SEED'] ?? Date.now() % 100_000);
  const KILLS = Number(process.env['OXBOW_CHAOS_KILLS'] ?? 10);
  const random = seededRandom(seed);

  let etcd: EtcdServer;
  let s3rver: S3rverProcess;
  let broker: Broker;
  let work: string;
  /** Every node incarnation's output (kept when the run fails). */
  let logs: string;
  let passed = false;
  const incarnations = new Map<string, number>();
  const nodes = new Map<string, OxbowServer>();

  beforeAll(async () => {
    etcd = await startEtcd();
    s3rver = await startS3rver();
    broker = await startBroker();
    work = mkdtempSync(join(tmpdir(), `oxbow-${options.name}-`));
    logs = mkdtempSync(join(tmpdir(), `oxbow-${options.name}-logs-`));
  }, 180_000);

  afterAll(async () => {
    for (const node of nodes.values()) await node.kill('SIGKILL').catch(() => undefined);
    await broker?.stop();
    await s3rver?.dispose();
    await etcd?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
    if (logs !== undefined) {
      if (passed) rmSync(logs, { recursive: true, force: true });
      else process.stdout.write(`${options.name}: the nodes' output is kept in ${logs}\n`);
    }
  }, 60_000);

  async function startNode(name: string): Promise<OxbowServer> {
    const node = await startOxbow({
      dataDir: join(work, name),
      args: ['--cluster', etcd.url, '--checkpoint-url', `s3://oxbow/${options.name}`, '--checkpoint-interval-ms', '500', '--barrier-interval-ms', '100', ...options.args],
      env: { ...s3rver.env, OXBOW_CLUSTER_LEASE_TTL_S: '2', ...options.env },
    });
    const incarnation = (incarnations.get(name) ?? 0) + 1;
    incarnations.set(name, incarnation);
    const file = join(logs, `${name}-${incarnation}`);
    // What stderr held before the ready line, then everything written after it.
    writeFileSync(`${file}.stderr`, node.stderr());
    writeFileSync(`${file}.stdout`, '');
    node.process.stderr!.on('data', (text: string) => appendFileSync(`${file}.stderr`, text));
    node.process.stdout!.on('data', (text: string) => appendFileSync(`${file}.stdout`, text));
    nodes.set(name, node);
    return node;
  }

  async function tryConnect(node: OxbowServer): Promise<pg.Client | undefined> {
    const client = new pg.Client({ connectionString: node.url, connectionTimeoutMillis: 3000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return client;
    } catch {
      await client.end().catch(() => undefined);
      return undefined;
    }
  }

  /** The leader's name and a session on it, once one node leads. */
  async function findLeader(timeoutMs: number): Promise<{ name: string; client: pg.Client }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const [name, node] of nodes) {
        const client = await tryConnect(node);
        if (client === undefined) continue;
        const leads = await client.query('show in_hot_standby').then(
          (result) => result.rows[0].in_hot_standby === 'off',
          () => false,
        );
        if (leads) return { name, client };
        await client.end().catch(() => undefined);
      }
      if (Date.now() > deadline) throw new Error(`no leader within ${timeoutMs} ms\n${[...nodes].map(([name, node]) => `--- ${name}\n${node.stderr().slice(-3000)}`).join('\n')}`);
      await sleep(200);
    }
  }

  /**
   * The rows of keyed fragments the other nodes processed for the leader and the units (Kafka
   * offsets) they fetched for its source fragments (0 when none did or the leader does not answer).
   */
  async function otherNodesWork(client: pg.Client): Promise<{ rows: number; units: number }> {
    return client.query<{ rows: string | null; units: string | null }>('select sum(share_rows)::int8 as rows, sum(share_units)::int8 as units from oxbow_catalog.nodes where not is_self').then(
      (result) => ({ rows: Number(result.rows[0]?.rows ?? 0), units: Number(result.rows[0]?.units ?? 0) }),
      () => ({ rows: 0, units: 0 }),
    );
  }

  /** What the leader says of the sink and the nodes (for a failed run's report). */
  async function diagnostics(client: pg.Client): Promise<string> {
    const lines: string[] = [];
    for (const query of [
      'select * from oxbow_catalog.sink_status',
      'select * from oxbow_catalog.sink_errors order by error_at',
      'select * from oxbow_catalog.source_errors',
      'select * from oxbow_catalog.nodes',
      'select * from oxbow_catalog.checkpoints',
      'select * from oxbow_catalog.view_errors',
    ]) {
      const rows = await client.query(query).then(
        (result) => result.rows.map((row) => JSON.stringify(row, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value))),
        (error: unknown) => [`failed: ${error instanceof Error ? error.message : String(error)}`],
      );
      lines.push(`--- ${query}`, ...rows);
    }
    return `${lines.join('\n')}\n`;
  }

  /**
   * The sink's topic as the broker holds it (for a failed run's report): its offsets, every
   * message read uncommitted (with its `oxbow.epoch` header) and read committed once more, so a
   * message missing from the committed read shows whether it was never sent, sent in a transaction
   * that did not commit, or behind an open one.
   */
  async function topicDiagnostics(topic: string, total: number): Promise<string> {
    const kafka = new Kafka({ clientId: `${options.name}-diagnostics`, brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
    const high = offsets.reduce((sum, partition) => sum + Number(partition.high), 0);
    const read = async (uncommitted: boolean) =>
      (await readAllMessages(broker.bootstrap, topic, 0, { name: `${options.name}-diagnostics-${uncommitted}`, timeoutMs: 30_000, quietMs: 5000, uncommitted })).map((message) => ({
        offset: message.offset,
        id: (JSON.parse(message.value === 'null' ? '{}' : message.value) as { id?: number }).id ?? -1,
        epoch: message.headers['oxbow.epoch'] ?? '',
      }));
    const lines = [`--- topic ${topic}: offsets ${JSON.stringify(offsets)} (${high} in all, transaction markers included)`];
    for (const uncommitted of [true, false]) {
      const seen = await read(uncommitted);
      const ids = new Set(seen.map((message) => message.id));
      let firstMissing = -1;
      for (let id = 0; id < total && firstMissing < 0; id++) if (!ids.has(id)) firstMissing = id;
      const at = seen.findIndex((message) => message.id === firstMissing - 1);
      // An id sent twice: each copy's offset and epoch (a copy in a later epoch is a replay the gate
      // let through; one in the same epoch, a delivery the tail read did not see).
      const copies = new Map<number, { offset: number; epoch: string }[]>();
      for (const message of seen) {
        let list = copies.get(message.id);
        if (list === undefined) copies.set(message.id, (list = []));
        list.push({ offset: message.offset, epoch: message.epoch });
      }
      const twice = [...copies].filter(([, list]) => list.length > 1);
      const epochPairs = new Map<string, number>();
      for (const [, list] of twice) {
        const pair = list.map((copy) => copy.epoch).join(' -> ');
        epochPairs.set(pair, (epochPairs.get(pair) ?? 0) + 1);
      }
      lines.push(
        `read ${uncommitted ? 'uncommitted' : 'committed again'}: ${seen.length} messages, ${ids.size} distinct ids, first missing ${firstMissing}, last offset ${seen[seen.length - 1]?.offset ?? 'none'}`,
        `  around the first missing id: ${JSON.stringify(seen.slice(Math.max(0, at - 3), at + 4))}`,
        `  epochs: ${[...new Set(seen.map((message) => message.epoch))].length} distinct, the last ${JSON.stringify(seen.slice(-3))}`,
        `  ids more than once: ${twice.length}; the first ${JSON.stringify(twice.slice(0, 3))}; their copies' epochs: ${JSON.stringify([...epochPairs].slice(0, 10))}`,
      );
    }
    return `${lines.join('\n')}\n`;
  }

  /** Every committed message of the topic, once there are `atLeast` and none arrived for 3 s. */
  const readAll = (topic: string, atLeast: number): Promise<string[]> => readAllCommitted(broker.bootstrap, topic, atLeast, { name: `${options.name}-read`, timeoutMs: 120_000 });

  describe(`a cluster under random SIGKILLs (${options.name})`, () => {
    it(`${KILLS} SIGKILLs while producing into Kafka: views equal their recomputation, the sink holds every message once (seed ${seed})`, async () => {
      await broker.createTopic('chaos_in', PARTITIONS);
      await broker.createTopic('chaos_out', 1);
      await startNode('a');
      let { client: leader } = await findLeader(60_000);
      await leader.query(`CREATE SOURCE chaos_in (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'chaos_in',
        properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
      await leader.query('CREATE MATERIALIZED VIEW by_k AS SELECT k, count(*) AS n, sum(v) AS total FROM chaos_in GROUP BY k');
      await leader.query(`CREATE MATERIALIZED VIEW by_g AS SELECT id % ${GROUPS} AS g, count(*) AS n, sum(v) AS total FROM chaos_in GROUP BY id % ${GROUPS}`);
      await leader.query('CREATE MATERIALIZED VIEW ids AS SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM chaos_in');
      // A source read by a filter alone: a Kafka source fragment (the nodes fetch its ranges under shares).
      await leader.query(`CREATE SOURCE chaos_again (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'chaos_in',
        properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
      await leader.query('CREATE MATERIALIZED VIEW evens AS SELECT id, v FROM chaos_again WHERE id % 2 = 0');
      if (options.sink) {
        await leader.query(`CREATE SINK chaos_out AS SELECT id, k, v FROM chaos_in WITH (connector = 'kafka', topic = 'chaos_out',
          properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
      }
      await leader.end();
      await startNode('b');
      await startNode('c');

      // The producer: a batch every 50 ms for the whole run.
      const producer = produceIds(broker, { topic: 'chaos_in', keys: KEYS, partitions: PARTITIONS, valueOf, batch: 20, pauseMs: 50 });

      const schedule: string[] = [];
      const startedAt = Date.now();
      let sharedRows = 0;
      let sharedUnits = 0;
      try {
        for (let kill = 0; kill < KILLS; kill++) {
          await sleep(1000 + Math.floor(random() * 2000));
          let victim: string;
          if (kill % 2 === 0) {
            const found = await findLeader(60_000);
            if (options.shares) {
              const work = await otherNodesWork(found.client);
              sharedRows = Math.max(sharedRows, work.rows);
              sharedUnits = Math.max(sharedUnits, work.units);
            }
            await found.client.end().catch(() => undefined);
            victim = found.name;
          } else {
            const names = [...nodes.keys()];
            victim = names[Math.floor(random() * names.length)]!;
          }
          schedule.push(`${victim}${kill % 2 === 0 ? ' (the leader)' : ''} at ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
          await nodes.get(victim)!.kill('SIGKILL');
          await startNode(victim);
        }
      } finally {
        await producer.stop();
      }

      const total = producer.produced();
      const found = await findLeader(60_000);
      leader = found.client;
      try {
        // The source catches up with everything produced.
        const deadline = Date.now() + 120_000;
        let counted = (await leader.query('select n::int8 as n, d::int8 as d, lo::int8 as lo, hi::int8 as hi from ids')).rows[0];
        while (Number(counted?.n ?? 0) < total && Date.now() < deadline) {
          await sleep(250);
          counted = (await leader.query('select n::int8 as n, d::int8 as d, lo::int8 as lo, hi::int8 as hi from ids')).rows[0];
        }
        expect(counted).toEqual({ n: String(total), d: String(total), lo: '0', hi: String(total - 1) });

        // The views against the messages produced, and against the query recomputed by the leader.
        const expectedOf = (groupOf: (id: number) => number): { group: number; n: string; total: string }[] => {
          const expected = new Map<number, { n: number; total: number }>();
          for (let id = 0; id < total; id++) {
            const entry = expected.get(groupOf(id)) ?? { n: 0, total: 0 };
            entry.n++;
            entry.total += valueOf(id);
            expected.set(groupOf(id), entry);
          }
          return [...expected].sort(([left], [right]) => left - right).map(([group, entry]) => ({ group, n: String(entry.n), total: String(entry.total) }));
        };
        const byK = (await leader.query('select k as group, n::int8 as n, total::int8 as total from by_k order by k')).rows;
        expect(byK).toEqual(expectedOf((id) => id % KEYS));
        // The recomputation replays the topic from the broker, which three nodes, etcd and s3rver
        // share two cores with: a replay that got no answer in time is asked again, twice at most.
        const recompute = async (tries: number): Promise<unknown[]> => {
          try {
            return (await leader.query('select k as group, count(*)::int8 as n, sum(v)::int8 as total from chaos_in group by k order by k')).rows;
          } catch (error) {
            if (tries <= 1 || !/no answer within/.test(String((error as Error).message))) throw error;
            await sleep(1000);
            return recompute(tries - 1);
          }
        };
        const recomputed = await recompute(3);
        expect(byK).toEqual(recomputed);
        const byG = (await leader.query('select g::int8 as group, n::int8 as n, total::int8 as total from by_g order by g')).rows.map((row) => ({ ...row, group: Number(row.group) }));
        expect(byG).toEqual(expectedOf((id) => id % GROUPS));

        // The filter over the second source: every even id once, with its value.
        const evensOf = async () => (await leader.query('select count(*)::int8 as n, count(distinct id)::int8 as d, coalesce(sum(id), 0)::int8 as ids, coalesce(sum(v), 0)::int8 as vs from evens')).rows[0];
        let evens = await evensOf();
        const evenCount = Math.ceil(total / 2);
        while (Number(evens.n) < evenCount && Date.now() < deadline) {
          await sleep(250);
          evens = await evensOf();
        }
        let evenIds = 0;
        let evenValues = 0;
        for (let id = 0; id < total; id += 2) {
          evenIds += id;
          evenValues += valueOf(id);
        }
        expect(evens).toEqual({ n: String(evenCount), d: String(evenCount), ids: String(evenIds), vs: String(evenValues) });

        // The sink's topic: every produced message once.
        const messages = options.sink ? await readAll('chaos_out', total) : [];
        const counts = new Map<number, number>();
        for (const message of messages) {
          const row = JSON.parse(message) as { id: number; k: number; v: number };
          expect(row.v).toBe(valueOf(row.id));
          counts.set(row.id, (counts.get(row.id) ?? 0) + 1);
        }
        const twice = [...counts].filter(([, count]) => count > 1).map(([id]) => id);
        const missing: number[] = [];
        for (let id = 0; id < total; id++) if (!counts.has(id)) missing.push(id);
        if (options.sink) {
          expect({ twice: twice.slice(0, 20), twiceCount: twice.length, missing: missing.slice(0, 20), missingCount: missing.length }).toEqual({ twice: [], twiceCount: 0, missing: [], missingCount: 0 });
          expect(messages.length).toBe(total);
        }
        expect(schedule.length).toBe(KILLS);
        if (options.logged !== undefined) {
          const pattern = options.logged;
          const output = readdirSync(logs).filter((file) => file.endsWith('.stderr')).map((file) => readFileSync(join(logs, file), 'utf8'));
          expect(output.some((text) => pattern.test(text)), `no node logged ${pattern}`).toBe(true);
        }
        // The work was spread: some node other than the leader of the moment processed keyed rows.
        if (options.shares) {
          const work = await otherNodesWork(leader);
          sharedRows = Math.max(sharedRows, work.rows);
          sharedUnits = Math.max(sharedUnits, work.units);
          expect({ rows: sharedRows > 0, units: sharedUnits > 0 }).toEqual({ rows: true, units: true });
        }
        process.stdout.write(`${options.name} (seed ${seed}): killed ${schedule.join(', ')}; ${total} messages through the views${options.sink ? ' and the sink' : ''}${options.shares ? `; other nodes processed ${sharedRows} keyed rows and fetched ${sharedUnits} offsets at most` : ''}\n`);
        passed = true;
      } catch (error) {
        process.stdout.write(`${options.name} (seed ${seed}) failed: killed ${schedule.join(', ')}; ${total} messages produced\n${await diagnostics(leader)}`);
        if (options.sink) process.stdout.write(await topicDiagnostics('chaos_out', total).catch((failure: unknown) => `the topic could not be read: ${String(failure)}\n`));
        throw error;
      } finally {
        await leader.end().catch(() => undefined);
      }
    }, 600_000);
  });
}
