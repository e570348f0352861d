// A keyed fragment fed by a Kafka source, shared with other nodes (--remote-shares on): real oxbow
// nodes on a real etcd at --parallelism 2 (--cores 8), a real Kafka broker, the test producing
// into a topic of 3 partitions all along (a batch every 30 ms, so every barrier has rows). One
// GROUP BY view and one join view over the topic (the join of the topic with a table on k,
// grouped by k: one fragment).
// Every worker hands each epoch's batch over 400 ms late (OXBOW_TEST_HANDOFF_DELAY_MS), so each
// epoch becomes durable well after the next barrier routed that epoch's rows: the source's epochs
// always overlap, as under a topic read behind on a loaded machine, and a fragment is never at an
// epoch boundary with nothing in flight unless something makes it so.
//
// - the leader and node b: the views are built with a share on b, whose share_rows grow;
// - node c joins while the topic is produced into: each fragment cuts its owners again for b and
//   c (the safe point made by the gap the source manager leaves between epochs while a cut waits;
//   waiting for a gap instead, the cuts did not come before the deadline), then c's share_rows
//   grow;
// - node b is SIGKILLed while producing: the leader replays b's epochs not yet durable; once its
//   lease is gone the owners are cut again, the threads and c taking b's vnodes and running on
//   (no owner held those before), and more messages come after that cut;
// - production stops: each view equals its recomputation from the messages the test produced
//   (count and sum per key, computed here from the ids), every message counted once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../kafka/broker.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { explain, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';
import { produceIds } from './id-producer.js';

const cluster = clusterNodes('oxbow-keyed-share-kafka-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_TEST_HANDOFF_DELAY_MS: '400',
});

const PARTITIONS = 3;
const KEYS = 97;
/** The join's table: one row per key under JOINED, w = 1000 k. */
const JOINED = 60;
const valueOf = (id: number): number => (id * 37) % 1000;

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
}, 180_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

describe('keyed shares of a view over a Kafka source', () => {
  it('built with a share, cut again when a node joins, failed over when one is SIGKILLed: every message counted once', async () => {
    await broker.createTopic('ks_in', PARTITIONS);
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    let c: Awaited<ReturnType<typeof cluster.startNode>> | undefined;
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}${c === undefined ? '' : `\n--- c ---\n${c.stderr()}`}`;
    const bId = await shareAddressListed(leader, b, stderr);

    await leader.query(`CREATE SOURCE ks_in (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'ks_in',
      properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await leader.query('create table kt (k int primary key, w int8)');
    await leader.query(`insert into kt select g, g * 1000 from generate_series(0, ${JOINED - 1}) g`);
    await leader.query('create materialized view kc as select k, count(*) as n, sum(v) as s from ks_in group by k');
    await leader.query('create materialized view kj as select ks_in.k, count(*) as n, sum(ks_in.v + kt.w) as s from ks_in join kt on ks_in.k = kt.k group by ks_in.k');
    for (const view of ['kc', 'kj']) expect(await explain(leader, view)).toMatch(/to 2 workers and 1 other node/);

    const producer = produceIds(broker, { topic: 'ks_in', keys: KEYS, partitions: PARTITIONS, valueOf, batch: 30, pauseMs: 30 });
    const shareRows = async (id: string) =>
      Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [id])).rows[0]?.share_rows ?? 0);
    try {
      await until('node b processed no rows of the Kafka-fed views', async () => ((await shareRows(bId)) >= 500 ? true : undefined), 60_000, stderr);

      // A node joins while messages come every barrier: the owners are cut again at a safe point
      // the sources make while the cut waits (the epochs overlapping, none comes otherwise).
      c = await cluster.startNode('c');
      const cId = await shareAddressListed(leader, c, stderr);
      const atListed = producer.produced();
      for (const view of ['kc', 'kj']) {
        await until(`${view} never cut its owners for node c while the topic was produced into`, async () => (/to 2 workers and 2 other nodes, vnodes cut again 1 time/.test(await explain(leader, view)) ? true : undefined), 60_000, stderr);
      }
      // Still producing: the cut did not wait for the messages to stop.
      expect(producer.produced()).toBeGreaterThan(atListed);
      process.stdout.write(`${await explain(leader, 'kc')}\n`);
      expect(a.stderr()).toMatch(new RegExp(`node ${cId} took vnodes`));
      const cBefore = await shareRows(cId);
      await until('node c processed no rows of the Kafka-fed views', async () => ((await shareRows(cId)) > cBefore + 300 ? true : undefined), 60_000, stderr);

      // Node b dies while the topic is produced into: the leader replays what it had not made durable.
      const bBefore = await shareRows(bId);
      expect(bBefore).toBeGreaterThan(0);
      await b.kill('SIGKILL');
      await until('the leader never took b\'s share over', async () => (new RegExp(`the keyed share on node ${bId} \\(127\\.0\\.0\\.1:\\d+\\) failed: `).test(a.stderr()) ? true : undefined), 30_000, stderr);
      const atKill = producer.produced();
      await until('no messages after the kill', async () => (producer.produced() > atKill + 1500 ? true : undefined), 60_000, stderr);
      // Once b's lease is gone the owners are cut again: the threads and c take b's vnodes (never
      // theirs) and run on; messages of those vnodes' keys keep coming after the cut.
      for (const view of ['kc', 'kj']) {
        await until(`${view} never cut its owners without node b`, async () => (/to 2 workers and 1 other node, vnodes cut again 2 times \(\d+ owners kept, [1-9]\d* of them taking vnodes, \d+ started\)/.test(await explain(leader, view)) ? true : undefined), 60_000, stderr);
      }
      const atCut = producer.produced();
      await until('no messages after the cut', async () => (producer.produced() > atCut + 1500 ? true : undefined), 60_000, stderr);
    } finally {
      await producer.stop();
    }

    // Every message once: the views against the groups of the ids produced.
    const total = producer.produced();
    const model = new Map<number, { n: number; s: number; js: number }>();
    for (let id = 0; id < total; id++) {
      const k = id % KEYS;
      const entry = model.get(k) ?? { n: 0, s: 0, js: 0 };
      entry.n++;
      entry.s += valueOf(id);
      entry.js += valueOf(id) + k * 1000;
      model.set(k, entry);
    }
    const counted = async () => Number((await leader.query<{ n: string | null }>('select sum(n) as n from kc')).rows[0]?.n ?? 0);
    await until('the view never counted every message produced', async () => ((await counted()) >= total ? true : undefined), 90_000, stderr);
    const kc = (await leader.query<{ k: number; n: string; s: string }>('select k, n::int8 as n, s::int8 as s from kc order by k')).rows;
    const expected = [...model].sort(([left], [right]) => left - right);
    expect(kc).toEqual(expected.map(([k, entry]) => ({ k, n: String(entry.n), s: String(entry.s) })));
    const joinedTotal = expected.filter(([k]) => k < JOINED).reduce((sum, [, entry]) => sum + entry.n, 0);
    await until('the join view never counted every joined message', async () => (Number((await leader.query<{ n: string | null }>('select sum(n) as n from kj')).rows[0]?.n ?? 0) >= joinedTotal ? true : undefined), 60_000, stderr);
    const kj = (await leader.query<{ k: number; n: string; s: string }>('select k, n::int8 as n, s::int8 as s from kj order by k')).rows;
    expect(kj).toEqual(expected.filter(([k]) => k < JOINED).map(([k, entry]) => ({ k, n: String(entry.n), s: String(entry.js) })));

    await leader.end();
  }, 240_000);
});
