// CREATE SINK name AS SELECT ... (RisingWave's form) against a real broker and a real server
// process, in every FORMAT the sink writes (PLAIN, UPSERT, DEBEZIUM): the sink owns the query's
// dataflow (no view is created), delivers its initial contents and then every committed change,
// and keeps doing so after a restart. The expected messages are derived here from the statements
// run (a model of the table and of the query), not from oxbow's output.

import { describe, expect, it } from 'vitest';
import { useKafkaHarness } from './harness.js';

const kafka = useKafkaHarness();

function readTopic(topic: string, count: number): Promise<string[]> {
  return kafka.broker.readTopic(topic, count);
}

const options = (topic: string) => `connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}'`;

describe('CREATE SINK ... AS SELECT', () => {
  // The table's model: id -> [owner, amount].
  const orders = new Map<number, [string, number]>([
    [1, ['ann', 10]],
    [2, ['bob', 3]],
    [3, ['ann', 7]],
  ]);
  const totals = (): Map<string, number> => {
    const out = new Map<string, number>();
    for (const [owner, amount] of orders.values()) out.set(owner, (out.get(owner) ?? 0) + amount);
    return out;
  };
  const totalRow = (owner: string, total: number) => JSON.stringify({ owner, total });
  // A GROUP BY query's rows are stored by its group key (planner/stream/unique-key.ts), and the
  // sink's messages are keyed by it: a changed aggregate is one upsert of its group's key.
  const totalKey = (owner: string) => JSON.stringify({ owner });
  const before = totals();

  it('delivers the query in each format, then its changes', async () => {
    for (const topic of ['as_plain', 'as_upsert', 'as_debezium']) await kafka.broker.createTopic(topic, 1);
    await kafka.client.query('CREATE TABLE orders (id int PRIMARY KEY, owner varchar, amount int)');
    await kafka.client.query(`INSERT INTO orders VALUES ${[...orders].map(([id, [owner, amount]]) => `(${id}, '${owner}', ${amount})`).join(', ')}`);
    const created = await kafka.client.query(`CREATE SINK as_plain AS SELECT id, amount * 2 AS doubled FROM orders WHERE amount > 5 WITH (${options('as_plain')}) FORMAT PLAIN ENCODE JSON`);
    expect(created.command).toBe('CREATE');
    await kafka.client.query(`CREATE SINK as_upsert AS SELECT owner, sum(amount) AS total FROM orders GROUP BY owner WITH (${options('as_upsert')}) FORMAT UPSERT ENCODE JSON`);
    await kafka.client.query(`CREATE SINK IF NOT EXISTS as_debezium AS SELECT owner, sum(amount) AS total FROM orders GROUP BY owner WITH (${options('as_debezium')}) FORMAT DEBEZIUM ENCODE JSON`);
    // No view appears; the sinks are listed as sinks.
    expect((await kafka.client.query({ text: 'SHOW SINKS', rowMode: 'array' })).rows.flat()).toEqual(['as_debezium', 'as_plain', 'as_upsert']);
    expect((await kafka.client.query({ text: 'SHOW MATERIALIZED VIEWS', rowMode: 'array' })).rows).toEqual([]);

    const doubled = [...orders].filter(([, [, amount]]) => amount > 5).map(([id, [, amount]]) => `null -> ${JSON.stringify({ id, doubled: amount * 2 })}`);
    expect((await readTopic('as_plain', doubled.length)).sort()).toEqual([...doubled].sort());
    const initialTotals = [...before].map(([owner, total]) => `${totalKey(owner)} -> ${totalRow(owner, total)}`);
    expect((await readTopic('as_upsert', before.size)).sort()).toEqual([...initialTotals].sort());
    await readTopic('as_debezium', before.size);

    // One change per statement (each its own epoch): bob's order grows; ann gets a new order.
    await kafka.client.query('UPDATE orders SET amount = 9 WHERE id = 2');
    orders.set(2, ['bob', 9]);
    const after = totals();
    const plain = await readTopic('as_plain', doubled.length + 1);
    expect(plain.slice(doubled.length)).toEqual([`null -> ${JSON.stringify({ id: 2, doubled: 18 })}`]);
    const upserts = await readTopic('as_upsert', before.size + 1);
    expect(upserts.slice(before.size)).toEqual([`${totalKey('bob')} -> ${totalRow('bob', after.get('bob')!)}`]);
    const events = (await readTopic('as_debezium', before.size + 1)).map((line) => {
      const event = JSON.parse(line.split(' -> ')[1]!) as { before: unknown; after: unknown; op: string };
      return `${event.op} ${JSON.stringify(event.before)} ${JSON.stringify(event.after)}`;
    });
    expect(events.slice(0, before.size).sort()).toEqual([...before].map(([owner, total]) => `c null ${totalRow(owner, total)}`).sort());
    expect(events.slice(before.size)).toEqual([`u ${totalRow('bob', before.get('bob')!)} ${totalRow('bob', after.get('bob')!)}`]);
  });

  it('keeps delivering after a restart (the dataflow is rebuilt, nothing resent)', async () => {
    const plainBefore = (await readTopic('as_plain', 3)).length;
    await kafka.restart();
    await kafka.client.query("INSERT INTO orders VALUES (4, 'cat', 50)");
    orders.set(4, ['cat', 50]);
    const plain = await readTopic('as_plain', plainBefore + 1);
    expect(plain.slice(plainBefore)).toEqual([`null -> ${JSON.stringify({ id: 4, doubled: 100 })}`]);
    const upserts = await readTopic('as_upsert', before.size + 2);
    expect(upserts.slice(before.size + 1)).toEqual([`${totalKey('cat')} -> ${totalRow('cat', 50)}`]);
    // By now a resent delivery would have arrived too.
    expect(await readTopic('as_plain', plainBefore + 1)).toHaveLength(plainBefore + 1);
  });

  it('refuses what it cannot sink, and drops cleanly', async () => {
    await expect(kafka.client.query(`CREATE SINK bad AS SELECT * FROM nowhere WITH (${options('x')}) FORMAT PLAIN ENCODE JSON`)).rejects.toMatchObject({ code: '42P01' });
    await expect(kafka.client.query(`CREATE SINK bad AS SELECT 1 AS one WITH (connector = 'kafka', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE JSON`)).rejects.toMatchObject({ code: '22023' });
    await expect(kafka.client.query(`CREATE SINK bad AS SELECT id FROM orders WITH (${options('x')}) FORMAT PLAIN ENCODE PROTOBUF`)).rejects.toMatchObject({ code: '0A000' });
    await expect(kafka.client.query(`CREATE SINK bad AS SELECT id FROM orders WITH (${options('x')}) FORMAT PLAIN ENCODE AVRO`)).rejects.toMatchObject({ code: '22023' });
    await expect(kafka.client.query(`CREATE SINK bad AS SELECT id FROM orders WITH (${options('x')}) FORMAT UPSERT ENCODE AVRO (schema.registry = 'http://127.0.0.1:1')`)).rejects.toMatchObject({ code: '0A000' });
    await expect(kafka.client.query(`CREATE SINK as_plain AS SELECT id FROM orders WITH (${options('x')}) FORMAT PLAIN ENCODE JSON`)).rejects.toMatchObject({ code: '42P07' });
    await expect(kafka.client.query('SELECT * FROM as_plain')).rejects.toMatchObject({ code: '42809' });
    await expect(kafka.client.query('DROP TABLE orders')).rejects.toMatchObject({ code: '2BP01' });
    for (const name of ['as_plain', 'as_upsert', 'as_debezium']) expect((await kafka.client.query(`DROP SINK ${name}`)).command).toBe('DROP');
    expect((await kafka.client.query('DROP TABLE orders')).command).toBe('DROP');
  });
});
