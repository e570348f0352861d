// Avro from Kafka into oxbow: order records in the Confluent wire format (encoded here with avsc,
// the schema registered in a real schema registry, Karapace from `.cache/karapace`, see
// test/kafka/registry.ts) in a real broker (scripts/kafka.mjs), read by
// `CREATE SOURCE orders WITH (...) FORMAT PLAIN ENCODE AVRO (schema.registry = ...)` (columns from
// the registry) into a grouped view, in a fresh in-process engine on RocksDB. Also the decoding
// alone, in this thread: the same messages through MessageDecoder and BatchPacker (what the Kafka
// worker runs per batch), without broker or engine.
//
// Rates: messages per second from CREATE SOURCE until the epoch that commits the last one
// (includes the consumer joining), and steady (from the first committed epoch to the last); the
// run checks the view counts every message. The load average is printed with the figures.
// Prints JSON lines {"bench":"avro","metric","value","unit"}.
// Run: npm run build && npm run bench -- avro [--messages N] (default 500,000 times BENCH_SCALE)

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import kafkajs from 'kafkajs';
import { createEngine } from '../executor/engine/create-engine.js';
import { MessageDecoder } from '../executor/connectors/message-decoder.js';
import { BatchPacker } from '../executor/connectors/kafka/batch-packer.js';
import { sourceLayout } from '../executor/connectors/source-layout.js';
import type { RelationDef } from '../sql/catalog.js';
import { type } from '../sql/types.js';
import { freePortPair } from '../test/kafka/broker.js';
import { registryInstalled, startRegistry } from '../test/kafka/registry.js';
import { BENCH_SCALE, flag, openSession, reporter, runSql } from './support/harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = HERE.endsWith(join('dist', 'bench')) ? join(HERE, '..', '..') : join(HERE, '..');
const SCRIPT = join(ROOT, 'scripts', 'kafka.mjs');

const MESSAGES = Number(flag('--messages') ?? Math.round(500_000 * BENCH_SCALE));
const PARTITIONS = 4;
const TOPIC = 'orders';

const report = reporter('avro', 1);

const SCHEMA = {
  type: 'record',
  name: 'Order',
  namespace: 'bench',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'item', type: 'string' },
    { name: 'price', type: 'double' },
    { name: 'qty', type: 'int' },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};
const orderType = avro.Type.forSchema(SCHEMA as avro.Schema);
const BASE = Date.UTC(2026, 0, 1);

function message(id: number, schemaId: number): Buffer {
  const body = orderType.toBuffer({ id, item: `item-${id % 100}`, price: (id % 1000) / 4, qty: id % 7, at: BASE + id, note: id % 3 === 0 ? null : 'gift wrap' });
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, body]);
}

/** The decoding alone: MessageDecoder + BatchPacker over batches of 1,000 messages. */
function decodeOnly(schemaId: number, registryUrl: string, values: Buffer[]): number {
  const relation = {
    id: 1,
    kind: 'source',
    schema: 'public',
    name: 'orders',
    columns: [
      { name: 'id', type: type('int8'), nullable: false, hidden: false },
      { name: 'item', type: type('varchar'), nullable: false, hidden: false },
      { name: 'price', type: type('float8'), nullable: false, hidden: false },
      { name: 'qty', type: type('int4'), nullable: false, hidden: false },
      { name: 'at', type: type('timestamptz'), nullable: false, hidden: false },
      { name: 'note', type: type('varchar'), nullable: true, hidden: false },
      { name: '_row_id', type: type('int8'), nullable: false, hidden: true },
    ],
    primaryKey: [6],
    format: 'plain',
    encode: 'avro',
    options: { 'encode.schema.registry': registryUrl, 'encode.avro.reader.schema': JSON.stringify(SCHEMA), 'encode.avro.reader.id': String(schemaId) },
  } as unknown as RelationDef;
  const layout = sourceLayout(relation);
  const decoder = new MessageDecoder(layout, 1 << 20, () => 0n);
  const packer = new BatchPacker(layout, decoder, 1 << 20, () => 0n);
  const BATCH = 1000;
  let rejected = 0;
  const start = performance.now();
  for (let first = 0; first < values.length; first += BATCH) {
    const slice = values.slice(first, first + BATCH);
    const batch = {
      partition: 0,
      offsets: slice.map((_, i) => BigInt(first + i)),
      values: slice,
      keys: slice.map(() => null),
      timestamps: slice.map(() => BASE),
      highWatermark: BigInt(values.length),
    };
    packer.pack(batch, 0, () => rejected++);
  }
  if (rejected > 0) throw new Error(`${rejected} messages rejected in the decode-only run`);
  return values.length / ((performance.now() - start) / 1000);
}

if (!registryInstalled()) throw new Error('bench avro needs the schema registry: ../shared/registry/install.sh .cache/karapace');
const port = await freePortPair();
const started = spawnSync(process.execPath, [SCRIPT, '--port', String(port), '--timeout-ms', '120000'], { encoding: 'utf8' });
if (started.status !== 0) throw new Error(`broker did not start: ${started.stdout}${started.stderr}`);
const bootstrap = `127.0.0.1:${port}`;
const registry = await startRegistry(bootstrap);
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-avro-'));
try {
  const schemaId = await registry.register(`${TOPIC}-value`, SCHEMA);
  const values = Array.from({ length: MESSAGES }, (_, id) => message(id, schemaId));
  report('decode only (MessageDecoder + BatchPacker, one thread)', decodeOnly(schemaId, registry.url, values), 'messages/s');

  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const produceStart = performance.now();
  for (let first = 0; first < MESSAGES; first += 5000) {
    const messages = values.slice(first, first + 5000).map((value, i) => ({ value, partition: (first + i) % PARTITIONS }));
    await producer.send({ topic: TOPIC, acks: 1, messages });
  }
  await producer.disconnect();
  report('produce (kafkajs, acks=1)', MESSAGES / ((performance.now() - produceStart) / 1000), 'messages/s');

  const engine = await createEngine({ dataDir, checkpointUrl: `file://${dataDir}/checkpoints`, barrierIntervalMs: 1000, checkpointIntervalMs: 600_000, timeTravelRetentionMs: 60_000, memoryLimitBytes: 1 << 30 });
  const session = openSession(engine);
  const run = (sql: string): Promise<unknown[][]> => runSql(session, sql);
  try {
    const load = loadavg();
    const start = performance.now();
    await run(`CREATE SOURCE orders WITH (connector = 'kafka', topic = '${TOPIC}', properties.bootstrap.server = '${bootstrap}') FORMAT PLAIN ENCODE AVRO (schema.registry = '${registry.url}')`);
    await run('CREATE MATERIALIZED VIEW by_item AS SELECT item, count(*) AS n, sum(qty) AS qty FROM orders GROUP BY item');
    let firstAt: number | undefined;
    let firstCount = 0;
    for (;;) {
      const rows = await run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name = 'orders'`);
      const count = Number(rows[0]![0]);
      if (firstAt === undefined && count > 0) {
        firstAt = performance.now();
        firstCount = count;
      }
      if (count >= MESSAGES) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const end = performance.now();
    const counted = Number((await run('SELECT sum(n)::int8 FROM by_item'))[0]![0]);
    if (counted !== MESSAGES) throw new Error(`the view counts ${counted} messages, expected ${MESSAGES}`);
    report('Avro source into a grouped view, from CREATE SOURCE', MESSAGES / ((end - start) / 1000), 'messages/s');
    if (firstAt !== undefined && end > firstAt) report('Avro source into a grouped view, steady', (MESSAGES - firstCount) / ((end - firstAt) / 1000), 'messages/s');
    const after = loadavg();
    report('load average (1 min) at the start', load[0]!, 'load');
    report('load average (1 min) at the end', after[0]!, 'load');
  } finally {
    await engine.close();
  }
} finally {
  await registry.stop();
  spawnSync(process.execPath, [SCRIPT, '--stop', '--port', String(port)], { encoding: 'utf8' });
  rmSync(dataDir, { recursive: true, force: true });
}
