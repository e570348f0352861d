// A Kafka source fragment whose partitions the nodes fetch themselves (executor/cluster/README.md,
// "Kafka partitions fetched by the nodes"): real oxbow nodes on a real etcd at --parallelism 2
// (--cores 8, --remote-shares on), a real Kafka broker, the test producing JSON messages into a
// topic of 4 partitions all along. A view of a filter and a projection over the topic (a source
// that stores no rows).
//
// - the leader a and nodes b and c: the leader reads only the partitions' last stable offsets and
//   hands out offset ranges to the nodes' shares (OXBOW_KAFKA_NODE_FETCH's default, `nodes`); b's
//   and c's share_units (offsets their shares fetched and answered) grow, and the leader's threads
//   were given fewer offsets than were produced (EXPLAIN ANALYZE);
// - node b is stopped (SIGSTOP) while producing, then SIGKILLed: the leader's relay fetches b's
//   unanswered ranges again;
// - a GROUP BY over the same source is created while producing: it reads the rows on the leader,
//   so the source goes back to the leader's Kafka worker (ranges handed out and not yet written
//   are read again by it);
// - production stops: the filtered view equals the filter and projection of the ids produced,
//   computed here, each id once, the GROUP BY the count per key of the ids produced, and the
//   source's message counters the messages produced;
// - EXPLAIN ANALYZE of the filtered view counts every worker the fragment had, b's share included:
//   its units and the messages its main thread read after the GROUP BY are the offsets produced,
//   its rows and the rows its main thread stored are the view's; the offsets it says the nodes
//   fetched, less those fetched again after b failed, are those b and c answered (their
//   share_units), and the threads fetched at least those fetched again.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../kafka/broker.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { explain, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';
import { produceIds } from './id-producer.js';

const cluster = clusterNodes('oxbow-kafka-node-fetch-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

const PARTITIONS = 4;
const KEYS = 7;
const valueOf = (id: number): number => (id * 37) % 1000;

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
}, 180_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

describe('a Kafka source fragment whose partitions the nodes fetch', () => {
  it('the nodes fetch offset ranges the leader fixes; a node SIGKILLed: every message once', async () => {
    await broker.createTopic('kf_in', PARTITIONS);
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    // b's record outlives it (a lease of 30 s): its share_units are read after its share is taken over.
    const b = await cluster.startNode('b', { OXBOW_CLUSTER_LEASE_TTL_S: '30' });
    const c = await cluster.startNode('c');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}\n--- c ---\n${c.stderr()}`;
    const bId = await shareAddressListed(leader, b, stderr);
    const cId = await shareAddressListed(leader, c, stderr);

    await leader.query(`CREATE SOURCE kf_in (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'kf_in',
      properties.bootstrap.server = '${broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await leader.query('create materialized view kf as select id, v * 2 as w from kf_in where k % 3 = 1');
    expect(await explain(leader, 'kf')).toMatch(/partitions split across 2 workers and 2 other nodes/);

    const producer = produceIds(broker, { topic: 'kf_in', keys: KEYS, partitions: PARTITIONS, valueOf, batch: 40, pauseMs: 20 });
    const shareUnitsListed = async (id: string) =>
      (await leader.query<{ share_units: string | null }>('select share_units from oxbow_catalog.nodes where node_id = $1', [id])).rows[0]?.share_units;
    const shareUnits = async (id: string) => Number((await shareUnitsListed(id)) ?? 0);
    let bAnswered = -1;
    try {
      await until('node b fetched no offsets of the Kafka source fragment', async () => ((await shareUnits(bId)) >= 500 ? true : undefined), 60_000, stderr);
      await until('node c fetched no offsets of the Kafka source fragment', async () => ((await shareUnits(cId)) >= 500 ? true : undefined), 60_000, stderr);

      // Node b dies while the topic is produced into: stopped first, so ranges sent to it after
      // that are unanswered for sure, then SIGKILLed; its unanswered ranges are fetched again on the leader.
      const nodesFetched = async () => Number(/by this node's threads and (\d+) by other nodes/.exec(await explain(leader, 'kf'))?.[1] ?? 0);
      const atStop = await nodesFetched();
      const takenOver = () => new RegExp(`the remote share on node ${bId} \\(127\\.0\\.0\\.1:\\d+\\) failed: `).test(a.stderr());
      b.process.kill('SIGSTOP');
      await until('no ranges sent to the nodes after b stopped', async () => ((await nodesFetched()) >= atStop + 400 || takenOver() ? true : undefined), 30_000, stderr);
      await b.kill('SIGKILL');
      await until("the leader never took b's share over", async () => (takenOver() ? true : undefined), 30_000, stderr);
      // Taken over: b answers nothing more.
      const listed = await shareUnitsListed(bId);
      expect(listed, 'node b was no longer listed right after the leader took its share over').not.toBeUndefined();
      bAnswered = Number(listed);
      const atKill = producer.produced();
      const cAtKill = await shareUnits(cId);
      await until('no messages after the kill', async () => (producer.produced() > atKill + 2000 ? true : undefined), 60_000, stderr);
      await until('node c fetched nothing after the kill', async () => ((await shareUnits(cId)) > cAtKill + 200 ? true : undefined), 60_000, stderr);

      // A view that needs the rows on the leader's main thread: the Kafka worker reads the topic again.
      await leader.query('create materialized view kc as select k, count(*) as n from kf_in group by k');
      const atGroup = producer.produced();
      await until('no messages after the GROUP BY', async () => (producer.produced() > atGroup + 1000 ? true : undefined), 60_000, stderr);
    } finally {
      await producer.stop();
    }

    // Every message once: the view against the filter and projection of the ids produced.
    const total = producer.produced();
    const expected: { id: string; w: number }[] = [];
    for (let id = 0; id < total; id++) if ((id % KEYS) % 3 === 1) expected.push({ id: String(id), w: valueOf(id) * 2 });
    const count = async () => Number((await leader.query<{ n: string }>('select count(*) as n from kf')).rows[0]!.n);
    await until('the view never held every filtered message produced', async () => ((await count()) >= expected.length ? true : undefined), 90_000, stderr);
    const rows = (await leader.query<{ id: string; w: number }>('select id, w from kf order by id')).rows;
    expect(rows.length).toBe(expected.length);
    expect(rows).toEqual(expected);

    // The leader's threads fetched a part only; the nodes the rest (b's share until its death, then on the leader).
    let plan = await explain(leader, 'kf');
    const figures = () => {
      const fragment = /StreamSourceFragment kf_in [^:]*: (\d+) units, (\d+) rows, Kafka offsets fetched (\d+) by this node's threads and (\d+) by other nodes, (\d+) of those again here after a node failed/.exec(plan);
      const materialized = /^StreamMaterialize kf .*?\(actual id=\d+ rows in=(\d+) /.exec(plan);
      const scanned = /StreamTableScan public\.kf_in .*\(actual id=\d+ rows in=(\d+) /.exec(plan);
      expect(fragment, plan).not.toBeNull();
      expect(materialized, plan).not.toBeNull();
      expect(scanned, plan).not.toBeNull();
      const [units, rows, here, nodes, again] = fragment!.slice(1).map(Number) as [number, number, number, number, number];
      return { units, rows, here, nodes, again, materialized: Number(materialized![1]), scanned: Number(scanned![1]) };
    };
    // The nodes' offsets less those fetched again are those b and c answered (the relays count
    // their answers); c's last batch may still be on its way.
    await until('the nodes never answered every offset sent to them', async () => {
      plan = await explain(leader, 'kf');
      const { nodes, again } = figures();
      return nodes - again === bAnswered + (await shareUnits(cId)) ? true : undefined;
    }, 30_000, () => `${plan}\nb answered ${bAnswered}\n${stderr()}`);
    process.stdout.write(`${plan}\nb answered ${bAnswered}, c ${await shareUnits(cId)}, produced ${total}\n`);
    const { units, rows: fragmentRows, here, nodes, again, materialized, scanned } = figures();
    // Every offset once: the fragment's units (b's share's included) and the messages the main
    // thread read after the GROUP BY; every view row once, stored by a worker or the main thread.
    expect(units + scanned).toBe(total);
    expect(fragmentRows + materialized).toBe(expected.length);
    // The offsets handed out as ranges are units of the fragment (the rest its threads got as
    // messages the leader fetched, before the ranges began); the threads fetched those fetched again.
    expect(here + nodes - again).toBeLessThanOrEqual(units);
    expect(again).toBeGreaterThan(0);
    expect(here).toBeGreaterThanOrEqual(again);
    expect(here).toBeLessThan(total);
    expect(bAnswered).toBeGreaterThanOrEqual(500);
    expect(await shareUnits(cId)).toBeGreaterThan(0);

    // The GROUP BY counts every message once.
    const perKey = new Map<number, number>();
    for (let id = 0; id < total; id++) perKey.set(id % KEYS, (perKey.get(id % KEYS) ?? 0) + 1);
    await until('the GROUP BY never counted every message produced', async () => (Number((await leader.query<{ n: string | null }>('select sum(n) as n from kc')).rows[0]?.n ?? 0) >= total ? true : undefined), 60_000, stderr);
    const groups = (await leader.query<{ k: number; n: string }>('select k, n::int8 as n from kc order by k')).rows;
    expect(groups).toEqual([...perKey].sort(([left], [right]) => left - right).map(([k, n]) => ({ k, n: String(n) })));

    // The source's message counters: every message once, whoever fetched it (b's answered ranges,
    // its unanswered ones fetched again on the leader, the Kafka worker's after the GROUP BY).
    const status = async () =>
      (await leader.query<{ messages: string; committed: string }>("select sum(messages)::int8 as messages, sum(committed_offset)::int8 as committed from oxbow_catalog.source_partitions where source_name = 'kf_in'")).rows[0]!;
    await until('the source never committed every offset produced', async () => (Number((await status()).committed) >= total ? true : undefined), 60_000, stderr);
    expect(Number((await status()).messages)).toBe(total);
    await leader.end();
  }, 240_000);
});
