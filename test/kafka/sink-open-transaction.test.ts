// A Kafka sink after an earlier producer of its own left a transaction open in its topic, as a
// cluster leader SIGKILLed between a delivery's send and its commit does: the open transaction
// holds the topic's last stable offset, so no read_committed consumer (the sink's own read of the
// topic's tail at start included) sees past it until the broker aborts it at its
// transaction.timeout.ms. Here that producer (the sink's transactional id, a 15-minute timeout)
// sends three messages and never ends its transaction while oxbow is down; after the restart the sink
// must fence it at once (the transaction aborted, never delivered) and go on delivering: every
// committed row reaches a read_committed reader, the open transaction's messages never do, and
// the sink reports no failed round. Without the fence the sink's rounds fail ("could not read the
// end of topic") for the 15 minutes, and the reader sees nothing new.

import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { useKafkaHarness } from './harness.js';
import { readAllCommitted } from './broker.js';

const { Kafka, logLevel } = kafkajs;
const kafka = useKafkaHarness();
/** The broker's default transaction.max.timeout.ms: far longer than the test. */
const OPEN_FOR_MS = 900_000;

describe('Kafka sink after a transaction left open in its topic', () => {
  it('fences the open transaction at start and delivers past it', { timeout: 180_000 }, async () => {
    const topic = 'open_txn_out';
    await kafka.broker.createTopic(topic, 1);
    await kafka.client.query('CREATE TABLE items (id int PRIMARY KEY)');
    await kafka.client.query(`CREATE SINK open_txn_out FROM items WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`);
    await kafka.client.query('INSERT INTO items VALUES (1)');
    expect(await kafka.broker.readTopic(topic, 1)).toEqual(['null -> {"id":1}']);
    const sinkId = Number((await kafka.client.query(`select sink_id from oxbow_catalog.sink_status where sink_name = 'open_txn_out'`)).rows[0].sink_id);

    await kafka.client.end();
    await kafka.oxbow.kill('SIGKILL');
    // The dead producer's transaction: the sink's transactional id, one message sent, never ended.
    const client = new Kafka({ clientId: 'open-transaction', brokers: [kafka.broker.bootstrap], logLevel: logLevel.NOTHING });
    const producer = client.producer({ transactionalId: `oxbow-sink-${sinkId}`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: OPEN_FOR_MS });
    await producer.connect();
    const open = await producer.transaction();
    // More than one message: the sink's tail read stops at the open transaction's first offset,
    // short of the partition's high watermark by more than a transaction marker.
    await open.send({ topic, messages: ['a', 'b', 'c'].map((left) => ({ value: JSON.stringify({ left }), headers: { 'oxbow.epoch': '1' } })) });
    await producer.disconnect();

    await kafka.restart();
    await kafka.client.query('INSERT INTO items VALUES (2), (3)');
    const messages = await readAllCommitted(kafka.broker.bootstrap, topic, 3, { name: 'open-transaction-read', timeoutMs: 90_000 });
    expect(messages.sort()).toEqual(['{"id":1}', '{"id":2}', '{"id":3}']);
    expect((await kafka.client.query('select error from oxbow_catalog.sink_errors')).rows).toEqual([]);
  });
});
