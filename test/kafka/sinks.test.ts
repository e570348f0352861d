// Kafka sinks end to end: a real broker and oxbow server; DML on a table, sinks in the three
// formats, the topics read back with a read_committed consumer. The expected messages are derived
// here from the statements run (a model of the table), not from oxbow's output.

import { describe, expect, it } from 'vitest';
import kafkajs from 'kafkajs';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useKafkaHarness } from './harness.js';
import { startOxbow } from '../support/server.js';

const { Kafka, logLevel } = kafkajs;
const kafka = useKafkaHarness();

function readTopic(topic: string, count: number): Promise<string[]> {
  return kafka.broker.readTopic(topic, count);
}

describe('CREATE SINK', () => {
  it('writes upserts, tombstones and Debezium events of committed changes only', async () => {
    for (const topic of ['sink_upsert', 'sink_debezium', 'sink_plain']) await kafka.broker.createTopic(topic, 1);
    await kafka.client.query('CREATE TABLE accounts (id int PRIMARY KEY, owner varchar, balance int)');
    await kafka.client.query("INSERT INTO accounts VALUES (1, 'ann', 10), (2, 'bob', 20)");
    for (const [name, format] of [['sink_upsert', 'UPSERT'], ['sink_debezium', 'DEBEZIUM'], ['sink_plain', 'PLAIN']]) {
      await kafka.client.query(`CREATE SINK ${name} FROM accounts WITH (connector = 'kafka', topic = '${name}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT ${format} ENCODE JSON`);
    }
    // Let the sinks deliver the initial contents before the changes, so each change is its own epoch.
    await readTopic('sink_plain', 2);
    await kafka.client.query('UPDATE accounts SET balance = 15 WHERE id = 1');
    await kafka.client.query('DELETE FROM accounts WHERE id = 2');
    await kafka.client.query("INSERT INTO accounts VALUES (3, 'cat', 30)");
    // A failing statement commits nothing, so nothing of it may reach a sink.
    await expect(kafka.client.query("INSERT INTO accounts VALUES (4, 'dan', 40), (1, 'dup', 0)")).rejects.toMatchObject({ code: '23505' });

    const row = (id: number, owner: string, balance: number) => JSON.stringify({ id, owner, balance });
    const key = (id: number) => JSON.stringify({ id });
    const initial = [`${key(1)} -> ${row(1, 'ann', 10)}`, `${key(2)} -> ${row(2, 'bob', 20)}`];
    const upserts = await readTopic('sink_upsert', 5);
    expect([...upserts.slice(0, 2)].sort()).toEqual(initial);
    expect(upserts.slice(2)).toEqual([`${key(1)} -> ${row(1, 'ann', 15)}`, `${key(2)} -> null`, `${key(3)} -> ${row(3, 'cat', 30)}`]);

    const events = (await readTopic('sink_debezium', 5)).map((line) => {
      const [k, value] = line.split(' -> ') as [string, string];
      const event = JSON.parse(value) as { before: unknown; after: unknown; op: string };
      return `${k} ${event.op} ${JSON.stringify(event.before)} ${JSON.stringify(event.after)}`;
    });
    expect(events.slice(2)).toEqual([
      `${key(1)} u ${row(1, 'ann', 10)} ${row(1, 'ann', 15)}`,
      `${key(2)} d ${row(2, 'bob', 20)} null`,
      `${key(3)} c null ${row(3, 'cat', 30)}`,
    ]);
    // PLAIN is append-only: every inserted row version, no deletes.
    const plain = await readTopic('sink_plain', 4);
    expect(plain.slice(2)).toEqual([`null -> ${row(1, 'ann', 15)}`, `null -> ${row(3, 'cat', 30)}`]);
    expect(plain).toHaveLength(4);
  });

  it('refuses sinks it cannot write', async () => {
    await expect(kafka.client.query(`CREATE SINK bad FROM nowhere WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`)).rejects.toMatchObject({ code: '42P01' });
    await expect(kafka.client.query(`CREATE SINK bad FROM accounts WITH (connector = 'kafka', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`)).rejects.toMatchObject({ code: '22023' });
  });

  it('drops sinks; the relation they read needs CASCADE while they exist', async () => {
    await expect(kafka.client.query('DROP TABLE accounts')).rejects.toMatchObject({ code: '2BP01' });
    expect((await kafka.client.query('DROP SINK sink_plain')).command).toBe('DROP');
    await expect(kafka.client.query('DROP SINK sink_plain')).rejects.toMatchObject({ code: '42P01' });
    await kafka.client.query('DROP TABLE accounts CASCADE');
  });

  it("keys messages by primary_key = '...' (a view's group), with clear errors for bad names", async () => {
    for (const topic of ['sink_totals', 'sink_totals_dbz']) await kafka.broker.createTopic(topic, 1);
    await kafka.client.query('CREATE TABLE orders (id int PRIMARY KEY, owner varchar, amount int)');
    await kafka.client.query("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 5)");
    await kafka.client.query('CREATE MATERIALIZED VIEW totals AS SELECT owner, sum(amount) AS total, count(*) AS n FROM orders GROUP BY owner');
    const options = (topic: string, key: string) => `WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}', primary_key = '${key}')`;
    await kafka.client.query(`CREATE SINK totals_out FROM totals ${options('sink_totals', 'owner')} FORMAT UPSERT ENCODE JSON`);
    await kafka.client.query(`CREATE SINK totals_dbz AS SELECT owner, sum(amount) AS total FROM orders GROUP BY owner ${options('sink_totals_dbz', 'OWNER')} FORMAT DEBEZIUM ENCODE JSON`);
    await readTopic('sink_totals', 2);
    await readTopic('sink_totals_dbz', 2);
    await kafka.client.query("INSERT INTO orders VALUES (3, 'ann', 7)");
    await kafka.client.query('DELETE FROM orders WHERE id = 2');

    // The model: per owner the sum and count of its orders after each statement.
    const key = (owner: string) => JSON.stringify({ owner });
    const upsert = await readTopic('sink_totals', 4);
    expect(upsert.slice(0, 2).sort()).toEqual([`${key('ann')} -> ${JSON.stringify({ owner: 'ann', total: 10, n: 1 })}`, `${key('bob')} -> ${JSON.stringify({ owner: 'bob', total: 5, n: 1 })}`]);
    expect(upsert.slice(2)).toEqual([`${key('ann')} -> ${JSON.stringify({ owner: 'ann', total: 17, n: 2 })}`, `${key('bob')} -> null`]);
    const events = (await readTopic('sink_totals_dbz', 4)).slice(2).map((line) => {
      const [k, value] = line.split(' -> ') as [string, string];
      const event = JSON.parse(value) as { before: unknown; after: unknown; op: string };
      return `${k} ${event.op} ${JSON.stringify(event.before)} ${JSON.stringify(event.after)}`;
    });
    expect(events).toEqual([`${key('ann')} u {"owner":"ann","total":10} {"owner":"ann","total":17}`, `${key('bob')} d {"owner":"bob","total":5} null`]);

    const bad = async (sql: string) => kafka.client.query(sql).then(() => 'created', (error: { code: string; message: string }) => `${error.code} ${error.message}`);
    expect(await bad(`CREATE SINK k1 FROM totals ${options('t', 'nobody')} FORMAT UPSERT ENCODE JSON`)).toBe('42703 column "nobody" named in primary_key does not exist in "totals"');
    expect(await bad(`CREATE SINK k1 FROM totals ${options('t', 'owner, owner')} FORMAT UPSERT ENCODE JSON`)).toBe('42701 column "owner" appears more than once in primary_key');
    expect(await bad(`CREATE SINK k1 FROM totals ${options('t', 'owner,')} FORMAT UPSERT ENCODE JSON`)).toBe('22023 invalid value for "primary_key": "owner,"');
    expect(await bad(`CREATE SINK k1 AS SELECT owner FROM orders ${options('t', 'total')} FORMAT UPSERT ENCODE JSON`)).toBe('42703 column "total" named in primary_key does not exist in "k1"');
    expect((await kafka.client.query("SELECT count(*)::int AS n FROM pg_class WHERE relname = 'k1'")).rows).toEqual([{ n: 0 }]);
    await kafka.client.query('DROP SINK totals_out');
    await kafka.client.query('DROP SINK totals_dbz');
  });

  it("delivers an epoch bigger than the broker's largest message in several produce requests", async () => {
    await kafka.broker.createTopic('sink_big', 1);
    await kafka.client.query('CREATE TABLE big_rows (id int PRIMARY KEY, pad varchar)');
    await kafka.client.query(`CREATE SINK big_out FROM big_rows WITH (connector = 'kafka', topic = 'sink_big', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
    // One statement, one epoch: 3,000 messages of about 1 KB, three times the broker's 1 MiB default.
    await kafka.client.query("INSERT INTO big_rows SELECT g, repeat('x', 1000) FROM generate_series(1, 3000) g");
    const delivered = await readTopic('sink_big', 3000);
    expect(delivered).toHaveLength(3000);
    expect(new Set(delivered.map((line) => line.split(' -> ')[0])).size).toBe(3000);
    const errors = await kafka.client.query("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'big_out'");
    expect(errors.rows).toEqual([]);
  });

  it('keeps delivering after idling longer than the time-travel retention', async () => {
    await kafka.broker.createTopic('sink_idle', 1);
    // A three-second history: the sink's relation idles longer, first with nothing committed at
    // all, then while another table commits every 100 ms (the window moves on).
    const short = await startOxbow({ args: ['--barrier-interval-ms', '100', '--time-travel-retention', '3s'] });
    const sql = new pg.Client({ connectionString: short.url });
    await sql.connect();
    try {
      await sql.query('CREATE TABLE quiet (id int PRIMARY KEY, v int)');
      await sql.query('CREATE TABLE busy (x int)');
      await sql.query('INSERT INTO quiet VALUES (1, 10)');
      await sql.query(`CREATE SINK quiet_out FROM quiet WITH (connector = 'kafka', topic = 'sink_idle', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
      await readTopic('sink_idle', 1);
      await new Promise((resolve) => setTimeout(resolve, 5000));
      await sql.query('INSERT INTO quiet VALUES (2, 20)');
      await readTopic('sink_idle', 2);
      for (let i = 0; i < 50; i++) {
        await sql.query(`INSERT INTO busy VALUES (${i})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await sql.query('UPDATE quiet SET v = 11 WHERE id = 1');
      await sql.query('DELETE FROM quiet WHERE id = 2');
      const line = (id: number, v: number | null) => `${JSON.stringify({ id })} -> ${v === null ? 'null' : JSON.stringify({ id, v })}`;
      const delivered = await readTopic('sink_idle', 4);
      const errors = await sql.query("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'quiet_out'");
      expect(errors.rows).toEqual([]);
      expect(delivered).toEqual([line(1, 10), line(2, 20), line(1, 11), line(2, null)]);
    } finally {
      await sql.end();
      await short.stop();
    }
  });

  it('catches up after a restart that outlasted the time-travel retention', async () => {
    await kafka.broker.createTopic('sink_restart', 1);
    const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sink-restart-'));
    const args = ['--barrier-interval-ms', '100', '--time-travel-retention', '4s'];
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      const first = await startOxbow({ dataDir, args });
      const before = new pg.Client({ connectionString: first.url });
      await before.connect();
      await before.query('CREATE TABLE kept (id int PRIMARY KEY, v int)');
      await before.query('INSERT INTO kept VALUES (1, 10)');
      await before.query(`CREATE SINK kept_out FROM kept WITH (connector = 'kafka', topic = 'sink_restart', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
      await readTopic('sink_restart', 1);
      // Committed right before the stop: delivered before it or after the restart, never twice.
      await before.query('UPDATE kept SET v = 11 WHERE id = 1');
      await before.end();
      await first.stop();
      // Down for longer than the retention: the first commit after the restart moves the window
      // past everything before the stop.
      await sleep(5000);
      const again = await startOxbow({ dataDir, args });
      try {
        const after = new pg.Client({ connectionString: again.url });
        await after.connect();
        await after.query('INSERT INTO kept VALUES (2, 20)');
        await readTopic('sink_restart', 3);
        await after.query('DELETE FROM kept WHERE id = 1');
        const delivered = await readTopic('sink_restart', 4);
        const errors = await after.query("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'kept_out'");
        await after.end();
        const line = (id: number, v: number | null) => `${JSON.stringify({ id })} -> ${v === null ? 'null' : JSON.stringify({ id, v })}`;
        expect(errors.rows).toEqual([]);
        expect(delivered).toEqual([line(1, 10), line(1, 11), line(2, 20), line(1, null)]);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // Twice: as the server left the topic, and with 1,500 messages of an aborted transaction after
  // its delivery (a leader killed mid-delivery leaves such a tail; its successor's tail read must
  // look past them to find the last delivery, or it sends that delivery again).
  it.each([
    ['as it left the topic', 'sink_crash', 0],
    ['behind an aborted transaction longer than the tail read', 'sink_crash_aborted', 1500],
  ] as const)('sends nothing twice when the server dies between the Kafka commit and its own, %s', async (_name, topic, aborted) => {
    await kafka.broker.createTopic(topic, 1);
    const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sink-crash-'));
    try {
      // This server kills itself right after its first Kafka transaction commits, before the
      // sink's progress is committed: the window where a naive sink would send again.
      const doomed = await startOxbow({ dataDir, args: ['--barrier-interval-ms', '100'], env: { OXBOW_FAULT_KILL_AFTER_SINK_COMMIT: '1' } });
      const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
      const first = new pg.Client({ connectionString: doomed.url });
      await first.connect();
      first.on('error', () => undefined);
      await first.query('CREATE TABLE items (id int PRIMARY KEY, label varchar)');
      await first.query("INSERT INTO items VALUES (1, 'one'), (2, 'two')");
      await first.query(`CREATE SINK items_out FROM items WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE JSON`);
      await exited;
      await first.end().catch(() => undefined);
      expect(doomed.process.signalCode).toBe('SIGKILL');
      if (aborted > 0) {
        const producer = new Kafka({ clientId: 'oxbow-test-aborted-tail', brokers: [kafka.broker.bootstrap], logLevel: logLevel.NOTHING }).producer({ transactionalId: 'oxbow-test-aborted-tail', idempotent: true, maxInFlightRequests: 1 });
        await producer.connect();
        const transaction = await producer.transaction();
        await transaction.send({ topic, messages: Array.from({ length: aborted }, (_, index) => ({ value: `aborted ${index}`, headers: { 'oxbow.epoch': '1' } })) });
        await transaction.abort();
        await producer.disconnect();
      }

      const again = await startOxbow({ dataDir, args: ['--barrier-interval-ms', '100'] });
      try {
        const second = new pg.Client({ connectionString: again.url });
        await second.connect();
        await second.query("INSERT INTO items VALUES (3, 'three')");
        const messages = await readTopic(topic, 3);
        // Give a duplicate delivery every chance to show up: the next insert must come right after.
        await second.query("INSERT INTO items VALUES (4, 'four')");
        const all = await readTopic(topic, 4);
        await second.end();
        const line = (id: number, label: string) => `${JSON.stringify({ id })} -> ${JSON.stringify({ id, label })}`;
        expect(messages.slice(0, 2).sort()).toEqual([line(1, 'one'), line(2, 'two')]);
        expect(all.slice(2)).toEqual([line(3, 'three'), line(4, 'four')]);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
