// A Kafka source fragment whose partitions the nodes fetch themselves (executor/cluster/README.md,
// "Kafka partitions fetched by the nodes") over a transactional topic: real oxbow nodes on a real
// etcd at --parallelism 2 (--cores 8, --remote-shares on), a real Kafka broker. The leader a hands
// out offset ranges and node b fetches them; a transactional producer commits and aborts
// transactions over both partitions, so control records (one per partition of each transaction)
// and aborted messages take offsets that are not messages.
//
// - the source's message counters (oxbow_catalog.source_partitions.messages, the leader's) equal
//   the messages committed, computed here from what was produced, once every offset is committed;
//   b fetched the transactional part (share_units, EXPLAIN ANALYZE's offsets fetched by other
//   nodes, at least the offsets the transactions took, read from the broker);
// - the view holds exactly the committed rows;
// - one oxbow server without a cluster (its Kafka worker reads the topic) shows the same counts
//   and rows.

import kafkajs from 'kafkajs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../kafka/broker.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { explain, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-kafka-node-fetch-tx-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

const TOPIC = 'kt_in';
const PARTITIONS = 2;
/** Plain messages before the transactions (while the source switches to ranges). */
const PLAIN = 40;
const ROUNDS = 30;
const COMMITTED_PER_ROUND = 24;
const ABORTED_PER_ROUND = 10;
/** Aborted messages' ids: far from the committed ones, so one in a view shows. */
const ABORTED_BASE = 1_000_000;
const valueOf = (id: number): number => (id * 37) % 1000;
const message = (id: number) => ({ value: JSON.stringify({ id, k: id % 7, v: valueOf(id) }), partition: id % PARTITIONS });

let broker: Broker;
const servers: OxbowServer[] = [];
beforeAll(async () => {
  broker = await startBroker();
}, 180_000);
afterAll(async () => {
  for (const server of servers) await server.stop().catch(() => undefined);
  await broker?.stop();
}, 60_000);

/** The sum of the partitions' end offsets (every transaction ended: the last stable offsets). */
async function endOffsets(): Promise<number> {
  const offsets = await broker.admin.fetchTopicOffsets(TOPIC);
  return offsets.reduce((sum, { high }) => sum + Number(high), 0);
}

/** The source's messages and committed offsets summed over its partitions, as oxbow_catalog.source_partitions shows them. */
async function sourceCounts(client: pg.Client): Promise<{ messages: number; committed: number }> {
  const row = (
    await client.query<{ messages: string | null; committed: string | null }>(
      `select sum(messages)::int8 as messages, sum(committed_offset)::int8 as committed from oxbow_catalog.source_partitions where source_name = '${TOPIC}'`,
    )
  ).rows[0];
  return { messages: Number(row?.messages ?? 0), committed: Number(row?.committed ?? 0) };
}

async function createView(client: pg.Client): Promise<void> {
  await client.query(`CREATE SOURCE ${TOPIC} (id bigint, k int, v int) WITH (connector = 'kafka', topic = '${TOPIC}',
    properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
  await client.query(`create materialized view kt as select id, v * 2 as w from ${TOPIC} where k >= 0`);
}

/**
 * Waits until the source committed offsets up to `offsets` (summed over the partitions) and the
 * view holds `rows`; returns the source's counts then.
 */
async function settled(client: pg.Client, offsets: number, rows: number, stderr: () => string): Promise<{ messages: number; committed: number }> {
  let last = '';
  await until(
    `the source never committed ${offsets} offsets of the topic with the view full`,
    async () => {
      const counts = await sourceCounts(client);
      const held = Number((await client.query<{ n: string }>('select count(*) as n from kt')).rows[0]!.n);
      last = `committed ${counts.committed}, messages ${counts.messages}, view rows ${held} of ${rows}`;
      return counts.committed >= offsets && held >= rows ? true : undefined;
    },
    120_000,
    () => `${last}\n${stderr()}`,
  );
  return sourceCounts(client);
}

describe('a Kafka source fragment fetched by the nodes over a transactional topic', () => {
  it('counts the committed messages, not the offsets handed out, and holds exactly the committed rows', async () => {
    await broker.createTopic(TOPIC, PARTITIONS);
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const bId = await shareAddressListed(leader, b, stderr);
    await createView(leader);
    expect(await explain(leader, 'kt')).toMatch(/partitions split across 2 workers and 1 other node/);
    const shareUnits = async () =>
      Number((await leader.query<{ share_units: string | null }>('select share_units from oxbow_catalog.nodes where node_id = $1', [bId])).rows[0]?.share_units ?? 0);

    // Plain messages first: once b fetched some, the source hands out ranges, and the transactions are fetched by b.
    const committed: number[] = [];
    let next = 0;
    for (let sent = 0; sent < PLAIN; sent += 10) {
      const ids = Array.from({ length: 10 }, () => next++);
      await broker.send(TOPIC, ids.map(message));
      committed.push(...ids);
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    await until('node b fetched no offsets of the Kafka source fragment', async () => ((await shareUnits()) > 0 ? true : undefined), 60_000, stderr);
    const offsetsBefore = await endOffsets();
    expect(offsetsBefore).toBe(PLAIN);

    const client = new kafkajs.Kafka({ clientId: 'oxbow-node-fetch-tx', brokers: [broker.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    const producer = client.producer({ transactionalId: 'oxbow-node-fetch-tx', idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    let aborted = 0;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        // Committed, aborted, committed again: control records and aborted messages inside ranges and at their ends.
        const ids = Array.from({ length: COMMITTED_PER_ROUND }, () => next++);
        const first = ids.slice(0, COMMITTED_PER_ROUND / 2);
        const second = ids.slice(COMMITTED_PER_ROUND / 2);
        let transaction = await producer.transaction();
        await transaction.send({ topic: TOPIC, messages: first.map(message) });
        await transaction.commit();
        committed.push(...first);
        transaction = await producer.transaction();
        await transaction.send({ topic: TOPIC, messages: Array.from({ length: ABORTED_PER_ROUND }, () => message(ABORTED_BASE + aborted++)) });
        await transaction.abort();
        transaction = await producer.transaction();
        await transaction.send({ topic: TOPIC, messages: second.map(message) });
        await transaction.commit();
        committed.push(...second);
        await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
    } finally {
      await producer.disconnect();
    }

    // Every transaction took offsets for its markers: the offsets are more than the messages committed.
    const total = await endOffsets();
    expect(total).toBe(PLAIN + ROUNDS * (COMMITTED_PER_ROUND + ABORTED_PER_ROUND) + ROUNDS * 3 * PARTITIONS);
    expect(committed.length).toBe(PLAIN + ROUNDS * COMMITTED_PER_ROUND);
    const expected = committed.map((id) => ({ id: String(id), w: valueOf(id) * 2 })).sort((left, right) => Number(left.id) - Number(right.id));

    const counts = await settled(leader, total, expected.length, stderr);
    expect(counts.committed).toBe(total);
    // The source's messages: the committed ones, each once (the Kafka worker's before the ranges, b's after).
    expect(counts.messages).toBe(committed.length);
    const rows = (await leader.query<{ id: string; w: number }>('select id, w from kt order by id')).rows;
    expect(rows).toEqual(expected);

    // b fetched the transactional part: every offset from the ranges' start on went to it.
    const plan = await explain(leader, 'kt');
    process.stdout.write(`${plan}\n`);
    const fetched = /Kafka offsets fetched (\d+) by this node's threads and (\d+) by other nodes/.exec(plan);
    expect(fetched).not.toBeNull();
    expect(Number(fetched![1])).toBe(0);
    expect(Number(fetched![2])).toBeGreaterThanOrEqual(total - offsetsBefore);
    expect(await shareUnits()).toBeGreaterThanOrEqual(total - offsetsBefore);
    await leader.end();

    // One server without a cluster reads the same topic with its Kafka worker: the same counts and
    // rows. Its consumer's positions stop after the last message, short of the last transaction's
    // markers (one per partition).
    const single = await startOxbow({ args: ['--barrier-interval-ms', '100'], env: { OXBOW_PARALLELISM: '2', OXBOW_CORES: '8' } });
    servers.push(single);
    const alone = await connectWhenServing(single);
    await createView(alone);
    expect(await explain(alone, 'kt')).toMatch(/partitions split across 2 workers/);
    const aloneCounts = await settled(alone, total - PARTITIONS, expected.length, () => single.stderr());
    expect(aloneCounts.messages).toBe(committed.length);
    expect((await alone.query<{ id: string; w: number }>('select id, w from kt order by id')).rows).toEqual(expected);
    await alone.end();
  }, 300_000);
});
