// ENCODE AVRO and PROTOBUF sources against a real broker and a real schema registry (Karapace, registry.ts):
// messages in the Confluent wire format encoded here with avsc, schemas registered through the
// registry's REST API; rows compared with the values produced. Columns from the registry, schema
// evolution (v1 and v2 writers read with the v2 reader), UPSERT with Avro keys and tombstones,
// bad messages in source_errors, a registry that goes down and comes back, errors at CREATE;
// Protobuf from the registry (Confluent framing) and from a FileDescriptorSet made here with protobufjs;
// an Avro sink read back and decoded with the schema the registry holds for it.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import avro from 'avsc';
import kafkajs from 'kafkajs';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';
import { registryInstalled, startRegistry, type Registry } from './registry.js';

const installed = registryInstalled();
const kafka = useKafkaHarness();
let registry: Registry;

beforeAll(async () => {
  if (installed) registry = await startRegistry(kafka.broker.bootstrap);
}, 180_000);
afterAll(async () => {
  await registry?.stop();
});

function framed(id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([header, payload]);
}

const ORDER_V1 = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'item', type: 'string' },
    { name: 'price', type: 'double' },
    { name: 'qty', type: 'int' },
    { name: 'paid', type: 'boolean' },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID', 'SHIPPED'] } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'uid', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'raw', type: 'bytes' },
  ],
};
const ORDER_V2 = { ...ORDER_V1, fields: [...ORDER_V1.fields, { name: 'discount', type: 'double', default: 0.25 }] };

/** Unscaled cents as an Avro decimal's two's-complement big-endian bytes. */
function decimalBytes(cents: number): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigInt64BE(BigInt(cents));
  return buffer;
}

const BASE_MILLIS = Date.UTC(2026, 2, 1, 12, 0, 0);
const BASE_DAY = Math.floor(BASE_MILLIS / 86_400_000);

function order(i: number, v2: boolean): Record<string, unknown> {
  const value: Record<string, unknown> = {
    id: i,
    item: `item-${i % 7}`,
    price: i * 1.5,
    qty: i % 5,
    paid: i % 2 === 0,
    status: ['NEW', 'PAID', 'SHIPPED'][i % 3],
    day: BASE_DAY + (i % 10),
    at: BASE_MILLIS + i * 1000,
    amount: decimalBytes(i * 101 - 500),
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    note: i % 4 === 0 ? null : `note ${i}`,
    tags: [`t${i % 3}`, 'x'],
    raw: Buffer.from([i % 256, 1, 2]),
  };
  if (v2) value['discount'] = i / 100;
  return value;
}

/** The expected text of order i as oxbow returns it (`id | item | ... | discount`). */
function expectedLine(i: number, v2: boolean): string {
  const cents = i * 101 - 500;
  const amount = `${cents < 0 ? '-' : ''}${Math.trunc(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;
  const day = new Date((BASE_DAY + (i % 10)) * 86_400_000).toISOString().slice(0, 10);
  const at = new Date(BASE_MILLIS + i * 1000).toISOString().replace('T', ' ').replace('.000Z', '+00');
  const note = i % 4 === 0 ? 'NULL' : `note ${i}`;
  const raw = `\\x${Buffer.from([i % 256, 1, 2]).toString('hex')}`;
  return [i, `item-${i % 7}`, i * 1.5, i % 5, i % 2 === 0 ? 't' : 'f', ['NEW', 'PAID', 'SHIPPED'][i % 3], day, at, amount, `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, note, `["t${i % 3}", "x"]`, raw, v2 ? i / 100 : 0.25].join(' | ');
}

async function textRows(sql: string): Promise<string[]> {
  const result = await kafka.client.query({ text: sql, rowMode: 'array', types: { getTypeParser: () => (value: string) => value } });
  return (result.rows as (string | null)[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value)).join(' | '));
}

describe.runIf(installed)('FORMAT PLAIN ENCODE AVRO with a schema registry', () => {
  const V1_COUNT = 40;
  const V2_COUNT = 30;
  let v1Id: number;
  let v2Id: number;

  beforeAll(async () => {
    await kafka.broker.createTopic('orders', 2);
    v1Id = await registry.register('orders-value', ORDER_V1);
    const v1 = avro.Type.forSchema(ORDER_V1 as avro.Schema);
    await kafka.broker.send('orders', Array.from({ length: V1_COUNT }, (_, i) => ({ value: framed(v1Id, v1.toBuffer(order(i, false))), partition: i % 2 })));
    // v2 adds a field with a default (BACKWARD compatible): the registry's latest, so the reader.
    v2Id = await registry.register('orders-value', ORDER_V2);
    const v2 = avro.Type.forSchema(ORDER_V2 as avro.Schema);
    await kafka.broker.send('orders', Array.from({ length: V2_COUNT }, (_, n) => ({ value: framed(v2Id, v2.toBuffer(order(V1_COUNT + n, true))), partition: n % 2 })));
    await kafka.client.query(`CREATE SOURCE orders WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '${kafka.broker.bootstrap}')
      FORMAT PLAIN ENCODE AVRO (schema.registry = '${registry.url}')`);
    await kafka.client.query('CREATE MATERIALIZED VIEW orders_by_item AS SELECT item, count(*) AS n, sum(amount) AS total, sum(discount) AS discounts FROM orders GROUP BY item');
    try {
      await kafka.committed('orders', V1_COUNT + V2_COUNT);
    } catch (error) {
      console.log(await textRows('SELECT partition_id, message_offset, error FROM oxbow_catalog.source_errors'));
      throw error;
    }
  }, 180_000);

  it('takes its columns and their types from the registry', async () => {
    const columns = await textRows(`SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'orders' ORDER BY ordinal_position`);
    expect(columns).toEqual([
      'id | bigint | NO',
      'item | character varying | NO',
      'price | double precision | NO',
      'qty | integer | NO',
      'paid | boolean | NO',
      'status | character varying | NO',
      'day | date | NO',
      'at | timestamp with time zone | NO',
      'amount | numeric | NO',
      'uid | uuid | NO',
      'note | character varying | YES',
      'tags | jsonb | NO',
      'raw | bytea | NO',
      'discount | double precision | NO',
    ]);
  });

  it('reads messages of both writer schemas as the values produced', async () => {
    await kafka.client.query(`SET timezone = 'UTC'`);
    const rows = await textRows('SELECT id, item, price, qty, paid, status, day, at, amount, uid, note, tags, raw, discount FROM orders ORDER BY id');
    const expected = [...Array.from({ length: V1_COUNT }, (_, i) => expectedLine(i, false)), ...Array.from({ length: V2_COUNT }, (_, n) => expectedLine(V1_COUNT + n, true))];
    expect(rows).toEqual(expected);
  });

  it('feeds a view that equals its query computed from the messages', async () => {
    const groups = new Map<string, { n: number; cents: number; discounts: number }>();
    for (let i = 0; i < V1_COUNT + V2_COUNT; i++) {
      const group = groups.get(`item-${i % 7}`) ?? { n: 0, cents: 0, discounts: 0 };
      group.n++;
      group.cents += i * 101 - 500;
      group.discounts += i < V1_COUNT ? 0.25 : i / 100;
      groups.set(`item-${i % 7}`, group);
    }
    const rows = await textRows('SELECT item, n, total, round(discounts::numeric, 6) FROM orders_by_item ORDER BY item');
    expect(rows).toEqual(
      [...groups.entries()].sort().map(([item, group]) => `${item} | ${group.n} | ${(group.cents / 100).toFixed(2)} | ${group.discounts.toFixed(6)}`),
    );
  });

  it('records bad messages in source_errors and keeps reading', async () => {
    const v2 = avro.Type.forSchema(ORDER_V2 as avro.Schema);
    const good = v2.toBuffer(order(1000, true));
    await kafka.broker.send('orders', [
      { value: Buffer.from('{"id": 1}'), partition: 0 },
      { value: framed(987_654, good), partition: 0 },
      { value: framed(v2Id, good.subarray(0, good.length - 6)), partition: 0 },
      { value: framed(v2Id, v2.toBuffer(order(1001, true))), partition: 0 },
    ]);
    await waitFor('the good message after three bad ones', async () => ((await textRows('SELECT count(*) FROM orders WHERE id = 1001'))[0] === '1' ? true : undefined));
    const errors = await textRows(`SELECT partition_id, message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'orders' AND partition_id IS NOT NULL ORDER BY message_offset`);
    const offset = Math.ceil(V1_COUNT / 2) + Math.ceil(V2_COUNT / 2);
    expect(errors).toEqual([
      `0 | ${offset} | message does not start with the schema registry's magic byte 0 (found 123)`,
      `0 | ${offset + 1} | unknown schema id 987654: the schema registry has no such schema`,
      expect.stringMatching(new RegExp(`^0 \\| ${offset + 2} \\| truncated Avro record \\(schema id ${v2Id}, `)),
    ]);
    expect(await textRows('SELECT count(*) FROM orders')).toEqual([String(V1_COUNT + V2_COUNT + 1)]);
  });

  it('holds messages while the registry is down and decodes them once it is back', async () => {
    // A v3 schema the source has not seen: its messages need the registry.
    const v3Schema = { ...ORDER_V2, fields: [...ORDER_V2.fields, { name: 'gift', type: 'boolean', default: false }] };
    const v3Id = await registry.register('orders-value', v3Schema);
    const v3 = avro.Type.forSchema(v3Schema as avro.Schema);
    await registry.pause();
    try {
      await kafka.broker.send('orders', Array.from({ length: 5 }, (_, n) => ({ value: framed(v3Id, v3.toBuffer({ ...order(2000 + n, true), gift: true })), partition: 1 })));
      await waitFor('trouble naming the registry', async () => {
        const trouble = await textRows(`SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'orders' AND partition_id IS NULL`);
        return trouble.some((line) => line.includes(registry.url) && line.includes('unreachable')) ? true : undefined;
      });
      // The lag grows: the broker's high watermark moves while the held messages are not committed.
      await waitFor('a lag of the 5 held messages', async () => {
        const lag = await textRows(`SELECT sum(lag) FROM oxbow_catalog.source_partitions WHERE source_name = 'orders'`);
        return Number(lag[0]) >= 5 ? true : undefined;
      }, 30_000);
      expect(await textRows('SELECT count(*) FROM orders WHERE id >= 2000')).toEqual(['0']);
    } finally {
      await registry.start();
    }
    await waitFor('the held messages', async () => ((await textRows('SELECT count(*) FROM orders WHERE id >= 2000'))[0] === '5' ? true : undefined), 90_000).catch(async (error: unknown) => {
      console.log(await textRows(`SELECT partition_id, message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'orders'`));
      throw error;
    });
    expect(await textRows('SELECT id, discount FROM orders WHERE id >= 2000 ORDER BY id')).toEqual(Array.from({ length: 5 }, (_, n) => `${2000 + n} | ${(2000 + n) / 100}`));
  }, 180_000);

  it('checks declared columns against the schema at CREATE', async () => {
    const create = (columns: string, topic = 'orders'): string =>
      `CREATE SOURCE bad_orders (${columns}) WITH (connector = 'kafka', topic = '${topic}', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE AVRO (schema.registry = '${registry.url}')`;
    expect(await kafka.sqlError(create('id bigint, item integer'))).toEqual({ code: '42804', message: expect.stringContaining('column "item" is incompatible with subject "orders-value": cannot read Avro type character varying into integer') });
    expect(await kafka.sqlError(create('id bigint, missing text'))).toEqual({ code: '42703', message: expect.stringContaining('column "missing" has no field in the Avro schema of subject "orders-value"') });
    expect(await kafka.sqlError(create('id bigint', 'nowhere'))).toEqual({ code: '42704', message: 'the schema registry has no subject "nowhere-value"' });
    const down = `CREATE SOURCE bad_orders WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE AVRO (schema.registry = 'http://127.0.0.1:1')`;
    expect((await kafka.sqlError(down)).code).toBe('08006');
    // Declared columns may be a subset, widened.
    await kafka.client.query(create('id bigint, qty bigint, item text'));
    await waitFor('the subset source', async () => (Number((await textRows('SELECT count(*) FROM bad_orders'))[0]) >= V1_COUNT + V2_COUNT ? true : undefined));
    expect(await textRows('SELECT id, qty, item FROM bad_orders WHERE id < 3 ORDER BY id')).toEqual(['0 | 0 | item-0', '1 | 1 | item-1', '2 | 2 | item-2']);
  }, 120_000);
});

describe.runIf(installed)('FORMAT UPSERT ENCODE AVRO with Avro keys', () => {
  const KEY = { type: 'record', name: 'UserKey', fields: [{ name: 'id', type: 'long' }] };
  const VALUE = { type: 'record', name: 'User', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }, { name: 'score', type: ['null', 'int'], default: null }] };

  it('upserts by the Avro key and deletes on a tombstone', async () => {
    await kafka.broker.createTopic('users', 1);
    const keyId = await registry.register('users-key', KEY);
    const valueId = await registry.register('users-value', VALUE);
    const keyType = avro.Type.forSchema(KEY as avro.Schema);
    const valueType = avro.Type.forSchema(VALUE as avro.Schema);
    const key = (id: number): Buffer => framed(keyId, keyType.toBuffer({ id }));
    const value = (id: number, name: string, score: number | null): Buffer => framed(valueId, valueType.toBuffer({ id, name, score }));
    await kafka.broker.send('users', [
      { key: key(1) as unknown as string, value: value(1, 'ann', 3) },
      { key: key(2) as unknown as string, value: value(2, 'bob', null) },
      { key: key(3) as unknown as string, value: value(3, 'cy', 9) },
      { key: key(1) as unknown as string, value: value(1, 'ann', 4) },
      { key: key(2) as unknown as string, value: null },
    ]);
    await kafka.client.query(`CREATE SOURCE users (id bigint, name varchar, score int, PRIMARY KEY (id))
      WITH (connector = 'kafka', topic = 'users', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT UPSERT ENCODE AVRO (schema.registry = '${registry.url}')`);
    await kafka.committed('users', 5);
    expect(await textRows('SELECT id, name, score FROM users ORDER BY id')).toEqual(['1 | ann | 4', '3 | cy | 9']);
  }, 120_000);
});

const ORDER_PROTO = `syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  string item = 2;
  double price = 3;
  Status status = 4;
  repeated string tags = 5;
  Detail detail = 6;
  bool paid = 7;
  uint32 qty = 8;
  enum Status {
    NEW = 0;
    PAID = 1;
  }
  message Detail {
    int32 a = 1;
  }
}
`;

function protoOrder(i: number): Record<string, unknown> {
  return { id: String(1_000_000_000_000 + i), item: `p-${i % 3}`, price: i / 4, status: i % 2, tags: [`t${i}`], detail: { a: i }, paid: i % 2 === 1, qty: 4_000_000_000 + i };
}

function protoLine(i: number): string {
  return [1_000_000_000_000 + i, `p-${i % 3}`, i / 4, i % 2 === 1 ? 'PAID' : 'NEW', `["t${i}"]`, i === 0 ? '{}' : `{"a": ${i}}`, i % 2 === 1 ? 't' : 'f', 4_000_000_000 + i].join(' | ');
}

describe.runIf(installed)('ENCODE PROTOBUF', () => {
  const COUNT = 25;
  const root = protobuf.parse(ORDER_PROTO, { keepCase: true }).root;
  const Order = root.lookupType('shop.Order');
  const encode = (i: number): Buffer => Buffer.from(Order.encode(Order.fromObject(protoOrder(i))).finish());
  const expected = Array.from({ length: COUNT }, (_, i) => protoLine(i));
  const columns = 'id, item, price, status, tags, detail, paid, qty';

  it('reads the Confluent Protobuf framing with the schema from the registry', async () => {
    await kafka.broker.createTopic('porders', 1);
    const id = await registry.register('porders-value', ORDER_PROTO, 'PROTOBUF');
    // The message-indexes array [0] (the first message of the file) is the single byte 0.
    await kafka.broker.send('porders', Array.from({ length: COUNT }, (_, i) => ({ value: framed(id, Buffer.concat([Buffer.from([0]), encode(i)])) })));
    await kafka.broker.send('porders', [{ value: framed(id + 1000, Buffer.from([0])) }, { value: encode(99) }]);
    await kafka.client.query(`CREATE SOURCE porders WITH (connector = 'kafka', topic = 'porders', properties.bootstrap.server = '${kafka.broker.bootstrap}')
      FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.registry = '${registry.url}')`);
    await kafka.committed('porders', COUNT + 2);
    expect(await textRows(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'porders' ORDER BY ordinal_position`)).toEqual([
      'id | bigint',
      'item | character varying',
      'price | double precision',
      'status | character varying',
      'tags | jsonb',
      'detail | jsonb',
      'paid | boolean',
      'qty | bigint',
    ]);
    expect(await textRows(`SELECT ${columns} FROM porders ORDER BY id`)).toEqual(expected);
    expect(await textRows(`SELECT message_offset, error FROM oxbow_catalog.source_errors WHERE source_name = 'porders' ORDER BY message_offset`)).toEqual([
      `${COUNT} | unknown schema id ${id + 1000}: the schema registry has no such schema`,
      expect.stringMatching(new RegExp(`^${COUNT + 1} \\| message does not start with the schema registry's magic byte 0`)),
    ]);
  }, 120_000);

  it('reads bare Protobuf messages with a FileDescriptorSet file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-proto-'));
    try {
      const set = (root as unknown as { toDescriptor(syntax: string): unknown }).toDescriptor('proto3');
      const file = join(dir, 'orders.pb');
      writeFileSync(file, (descriptor as unknown as { FileDescriptorSet: { encode(set: unknown): { finish(): Uint8Array } } }).FileDescriptorSet.encode(set).finish());
      await kafka.broker.createTopic('forders', 1);
      await kafka.broker.send('forders', Array.from({ length: COUNT }, (_, i) => ({ value: encode(i) })));
      await kafka.client.query(`CREATE SOURCE forders (id bigint, item varchar, price float8, status varchar, tags jsonb, detail jsonb, paid boolean, qty bigint)
        WITH (connector = 'kafka', topic = 'forders', properties.bootstrap.server = '${kafka.broker.bootstrap}')
        FORMAT PLAIN ENCODE PROTOBUF (message = 'shop.Order', schema.location = 'file://${file}')`);
      await kafka.committed('forders', COUNT);
      expect(await textRows(`SELECT ${columns} FROM forders ORDER BY id`)).toEqual(expected);
      const bad = (options: string): string =>
        `CREATE SOURCE bad_forders WITH (connector = 'kafka', topic = 'forders', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE PROTOBUF (${options})`;
      expect(await kafka.sqlError(bad(`message = 'shop.Nope', schema.location = 'file://${file}'`))).toEqual({ code: '22023', message: expect.stringContaining('message type "shop.Nope" is not in the schema (it has shop.Order, shop.Order.Detail)') });
      expect((await kafka.sqlError(bad(`message = 'shop.Order', schema.location = 'file://${dir}/missing.pb'`))).code).toBe('58P01');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.runIf(installed)('Kafka sinks with FORMAT PLAIN ENCODE AVRO', () => {
  it('registers the relation schema under <topic>-value and writes the Confluent framing', async () => {
    await kafka.broker.createTopic('sunk_avro', 1);
    await kafka.client.query('CREATE TABLE sunk (id int, name text, amount numeric(10,2), at timestamptz, ok boolean, big bigint, doc jsonb)');
    await kafka.client.query(`INSERT INTO sunk VALUES (1, 'one', 12.34, '2026-03-01 12:00:00.123456+00', true, 9223372036854775807, '{"a": [1, 2]}'),
      (2, NULL, -0.05, NULL, false, -3, NULL), (3, 'three', 99999999.99, '1999-12-31 23:59:59+00', NULL, 0, '"x"')`);
    await kafka.client.query(`CREATE SINK sunk_avro FROM sunk WITH (connector = 'kafka', topic = 'sunk_avro', properties.bootstrap.server = '${kafka.broker.bootstrap}')
      FORMAT PLAIN ENCODE AVRO (schema.registry = '${registry.url}')`);
    const values = await readValues('sunk_avro', 3).catch(async (error: unknown) => {
      console.log(await textRows('SELECT source_name, error FROM oxbow_catalog.source_errors'));
      throw error;
    });
    const ids = new Set(values.map((value) => (value[0] === 0 ? value.readUInt32BE(1) : -1)));
    expect(ids.size).toBe(1);
    const id = [...ids][0]!;
    const latest = (await (await fetch(`${registry.url}/subjects/sunk_avro-value/versions/latest`)).json()) as { id: number; schema: string };
    expect(latest.id).toBe(id);
    // Longs as bigint, to see bigint values exactly.
    const long = avro.types.LongType.__with({
      fromBuffer: (buffer: Buffer) => buffer.readBigInt64LE(0),
      toBuffer: () => Buffer.alloc(8),
      fromJSON: (value: unknown) => BigInt(value as number),
      toJSON: (value: bigint) => Number(value),
      isValid: (value: unknown) => typeof value === 'bigint',
      compare: () => 0,
    });
    const type = avro.Type.forSchema(JSON.parse(latest.schema) as avro.Schema, { wrapUnions: 'auto', registry: { long } });
    const rows = values.map((value) => type.fromBuffer(value.subarray(5)) as Record<string, unknown>).sort((a, b) => (a['id'] as number) - (b['id'] as number));
    const cents = (bytes: unknown): bigint => {
      const buffer = bytes as Buffer;
      let unscaled = BigInt(`0x${buffer.toString('hex')}`);
      if (buffer[0]! & 0x80) unscaled -= 1n << BigInt(buffer.length * 8);
      return unscaled;
    };
    expect(rows.map((row) => ({ ...row, amount: cents(row['amount']) }))).toEqual([
      { id: 1, name: 'one', amount: 1234n, at: Date.UTC(2026, 2, 1, 12, 0, 0) * 1000 + 123456, ok: true, big: 9223372036854775807n, doc: '{"a": [1, 2]}' },
      { id: 2, name: null, amount: -5n, at: null, ok: false, big: -3n, doc: null },
      { id: 3, name: 'three', amount: 9999999999n, at: Date.UTC(1999, 11, 31, 23, 59, 59) * 1000, ok: null, big: 0n, doc: '"x"' },
    ]);
  }, 120_000);
});

describe.runIf(installed)('a schema registry with HTTP basic auth', () => {
  it('reads with schema.registry.username/password and refuses CREATE without them (28000)', async () => {
    const secured = await startRegistry(kafka.broker.bootstrap, { username: 'oxbow', password: 's3cret' });
    try {
      const schema = { type: 'record', name: 'Point', fields: [{ name: 'x', type: 'int' }, { name: 'label', type: 'string' }] };
      const id = await secured.register('points-value', schema);
      const pointType = avro.Type.forSchema(schema as avro.Schema);
      await kafka.broker.createTopic('points', 1);
      await kafka.broker.send('points', [1, 2, 3].map((x) => ({ value: framed(id, pointType.toBuffer({ x, label: `p${x}` })) })));
      const create = (credentials: string): string =>
        `CREATE SOURCE points WITH (connector = 'kafka', topic = 'points', properties.bootstrap.server = '${kafka.broker.bootstrap}') FORMAT PLAIN ENCODE AVRO (schema.registry = '${secured.url}'${credentials})`;
      expect(await kafka.sqlError(create(''))).toEqual({ code: '28000', message: expect.stringContaining('refused the credentials (401)') });
      expect((await kafka.sqlError(create(", schema.registry.username = 'oxbow', schema.registry.password = 'wrong'"))).code).toBe('28000');
      await kafka.client.query(create(", schema.registry.username = 'oxbow', schema.registry.password = 's3cret'"));
      await kafka.committed('points', 3);
      expect(await textRows('SELECT x, label FROM points ORDER BY x')).toEqual(['1 | p1', '2 | p2', '3 | p3']);
    } finally {
      await secured.stop();
    }
  }, 180_000);
});

/** The first `count` message values of a topic, read with a fresh consumer group. */
async function readValues(topic: string, count: number): Promise<Buffer[]> {
  const client = new kafkajs.Kafka({ clientId: 'oxbow-test-reader', brokers: [kafka.broker.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const consumer = client.consumer({ groupId: `reader-${topic}-${Date.now()}`, readUncommitted: false });
  const values: Buffer[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value !== null) values.push(message.value);
      },
    });
    await waitFor(`${count} messages in ${topic}`, async () => (values.length >= count ? true : undefined), 20_000);
  } finally {
    await consumer.disconnect();
  }
  return values;
}
