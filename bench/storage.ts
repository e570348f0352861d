// Storage benchmarks, side by side in one run, as JSON lines {"bench","metric","value","unit"}:
//   - MVCC latest-version point read (memory tier off) vs a raw get through the same addon;
//   - batched MVCC writes (insert + commit of an epoch, WAL synced) vs raw batched puts (synced);
//   - AS OF read of a key with 10 versions vs a latest read (both from RocksDB);
//   - cache-hit state access (the memory tier);
//   - the same point reads and batched writes on @nxtedition/rocksdb and on a JS Map.
// Run: npm run build && node dist/bench/storage.js   (BENCH_SCALE=0.2 for a quick run)

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { ByteWriter } from '../storage/byte-writer.js';
import { openRocksStateStore } from '../storage/rocks-state-store.js';
import { RocksDatabase } from '../storage/rocksdb.js';
import { decodeRow, encodeRow } from '../storage/row-codec.js';
import type { StateTableSchema } from '../storage/state-table.js';
import { WriteBatchBuilder } from '../storage/write-batch.js';

const scale = Number(process.env.BENCH_SCALE ?? '1');
const KEYS = Math.round(100_000 * scale);
const READS = Math.round(100_000 * scale);
const WRITE_BATCH_ROWS = 1000;
const WRITE_BATCHES = Math.max(5, Math.round(40 * scale));
const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
const root = mkdtempSync(join(tmpdir(), 'oxbow-bench-storage-'));

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'storage', metric, value: Number(value.toPrecision(4)), unit }));
}

/** Runs `body` (which performs `operations` operations) and returns operations per second. */
function opsPerSecond(operations: number, body: () => void): number {
  const start = process.hrtime.bigint();
  body();
  const elapsedNs = Number(process.hrtime.bigint() - start);
  return operations / (elapsedNs / 1e9);
}

/**
 * Runs the contenders in alternating rounds and keeps each one's best round: on a shared machine a
 * burst of load then hits both sides alike, and the best round is the least disturbed one.
 */
function bestOf(rounds: number, contenders: (() => number)[]): number[] {
  const best = contenders.map(() => 0);
  for (let round = 0; round < rounds; round++) {
    contenders.forEach((run, index) => {
      best[index] = Math.max(best[index]!, run());
    });
  }
  return best;
}

async function opsPerSecondAsync(operations: number, body: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  await body();
  const elapsedNs = Number(process.hrtime.bigint() - start);
  return operations / (elapsedNs / 1e9);
}

const schema: StateTableSchema = { tableId: 1, columnTypes: [type('int4'), type('text'), type('int8')], primaryKey: [0] };
const rowOf = (id: number, version = 0): Row => [id, `name-${id}-${version}-${'p'.repeat(40)}`, BigInt(id * 1000 + version)];

// Random read order, the same for every contender.
let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const readOrder = Int32Array.from({ length: READS }, () => Math.floor(random() * KEYS));

// ---- MVCC store, memory tier off: every read is a RocksDB seek. ----
const store = openRocksStateStore({ dir: join(root, 'mvcc'), memoryLimitBytes: 0, retentionMs: 3_600_000 });
const table = store.table(schema);
for (let id = 0; id < KEYS; id++) table.insert(rowOf(id));
store.commit(epochAt(1));
await store.database.flush();
await store.database.compactRange();

// ---- Raw addon database with the same rows under 4-byte keys. ----
const raw = RocksDatabase.open(join(root, 'raw'));
{
  const batch = new WriteBatchBuilder();
  const writer = new ByteWriter();
  const key = Buffer.alloc(4);
  for (let id = 0; id < KEYS; id++) {
    key.writeUInt32BE(id);
    writer.reset();
    encodeRow(writer, rowOf(id));
    batch.put(key, writer.view());
  }
  raw.write(batch.view(), true);
  await raw.flush();
  await raw.compactRange();
}
const rawKeys = Array.from({ length: KEYS }, (_unused, id) => {
  const key = Buffer.alloc(4);
  key.writeUInt32BE(id);
  return key;
});

function mvccPointReads(): number {
  let found = 0;
  return opsPerSecond(READS, () => {
    for (let index = 0; index < READS; index++) if (table.get([readOrder[index]!]) !== undefined) found++;
    if (found !== READS) throw new Error('mvcc read missed');
  });
}

function rawPointReads(decode: boolean): number {
  let found = 0;
  return opsPerSecond(READS, () => {
    for (let index = 0; index < READS; index++) {
      const value = raw.get(rawKeys[readOrder[index]!]!);
      if (value !== undefined && (!decode || decodeRow(value) !== undefined)) found++;
    }
    if (found !== READS) throw new Error('raw read missed');
  });
}

mvccPointReads(); // warm-up: block cache and JIT
rawPointReads(true);
const [mvccRead, rawRead, rawReadDecoded] = bestOf(5, [mvccPointReads, () => rawPointReads(false), () => rawPointReads(true)]) as [number, number, number];
emit('mvcc_point_read', mvccRead, 'ops/s');
emit('raw_addon_get', rawRead, 'ops/s');
emit('raw_addon_get_and_decode', rawReadDecoded, 'ops/s');
emit('mvcc_point_read_vs_raw_get', mvccRead / rawRead, 'ratio');
emit('mvcc_point_read_vs_raw_get_and_decode', mvccRead / rawReadDecoded, 'ratio');

// ---- Range scans: every row of the table, MVCC (decoded rows) vs a raw packed iterator (decoded). ----
function mvccScan(): number {
  let count = 0;
  const rate = opsPerSecond(KEYS, () => {
    for (const row of table.scan()) if (row.length === 3) count++;
  });
  if (count !== KEYS) throw new Error(`mvcc scan saw ${count} rows`);
  return rate;
}
function rawScan(): number {
  let count = 0;
  const rate = opsPerSecond(KEYS, () => {
    const iterator = raw.iterator({});
    for (let packed = iterator.nextPacked(512); packed !== null; packed = iterator.nextPacked(512)) {
      let offset = 0;
      while (offset < packed.length) {
        const keyEnd = offset + 4 + packed.readUInt32LE(offset);
        const valueStart = keyEnd + 4;
        const valueEnd = valueStart + packed.readUInt32LE(keyEnd);
        if (decodeRow(packed, valueStart)!.length === 3) count++;
        offset = valueEnd;
      }
    }
    iterator.close();
  });
  if (count !== KEYS) throw new Error(`raw scan saw ${count} rows`);
  return rate;
}
mvccScan();
const [mvccScanRate, rawScanRate] = bestOf(3, [mvccScan, rawScan]) as [number, number];
emit('mvcc_scan', mvccScanRate, 'rows/s');
emit('raw_addon_scan_and_decode', rawScanRate, 'rows/s');
emit('mvcc_scan_vs_raw', mvccScanRate / rawScanRate, 'ratio');

// ---- AS OF a key with 10 versions vs latest. ----
const versioned = store.table({ ...schema, tableId: 2 });
const VERSIONED_KEYS = Math.round(20_000 * scale);
for (let version = 0; version < 10; version++) {
  for (let id = 0; id < VERSIONED_KEYS; id++) versioned.insert(rowOf(id, version));
  store.commit(epochAt(2 + version));
}
await store.database.flush();
await store.database.compactRange();
const oldestVersion = epochAt(2);
function versionedReads(epoch: bigint | undefined): number {
  return opsPerSecond(READS, () => {
    for (let index = 0; index < READS; index++) {
      const row = versioned.get([readOrder[index]! % VERSIONED_KEYS], epoch);
      if (row === undefined) throw new Error('versioned read missed');
    }
  });
}
versionedReads(oldestVersion);
const [asOfRead, latestRead] = bestOf(5, [() => versionedReads(oldestVersion), () => versionedReads(undefined)]) as [number, number];
emit('as_of_read_10_versions', asOfRead, 'ops/s');
emit('latest_read_10_versions', latestRead, 'ops/s');
emit('as_of_latency_vs_latest', latestRead / asOfRead, 'ratio');

// ---- Batched writes: MVCC insert + commit vs raw packed batch, both WAL synced. ----
let nextSecond = 100;
function mvccWrites(): number {
  const writeTable = store.table({ ...schema, tableId: 3 });
  return opsPerSecond(WRITE_BATCHES * WRITE_BATCH_ROWS, () => {
    for (let batchIndex = 0; batchIndex < WRITE_BATCHES; batchIndex++) {
      const base = batchIndex * WRITE_BATCH_ROWS;
      for (let offset = 0; offset < WRITE_BATCH_ROWS; offset++) writeTable.insert(rowOf((base + offset) % KEYS, batchIndex));
      store.commit(epochAt(nextSecond++));
    }
  });
}
function rawWrites(): number {
  const batch = new WriteBatchBuilder();
  const writer = batch.writer;
  return opsPerSecond(WRITE_BATCHES * WRITE_BATCH_ROWS, () => {
    for (let batchIndex = 0; batchIndex < WRITE_BATCHES; batchIndex++) {
      batch.reset();
      const base = batchIndex * WRITE_BATCH_ROWS;
      for (let offset = 0; offset < WRITE_BATCH_ROWS; offset++) {
        batch.beginKey(1);
        writer.uint32BigEndian((base + offset) % KEYS);
        batch.beginValue();
        encodeRow(writer, rowOf((base + offset) % KEYS, batchIndex));
        batch.endValue();
      }
      raw.write(batch.view(), true);
    }
  });
}
mvccWrites();
rawWrites();
const [mvccWrite, rawWrite] = bestOf(5, [mvccWrites, rawWrites]) as [number, number];
emit('mvcc_batched_write', mvccWrite, 'rows/s');
emit('raw_batched_put', rawWrite, 'rows/s');
emit('mvcc_write_vs_raw', mvccWrite / rawWrite, 'ratio');

// ---- The same writes through commitAsync: each epoch sealed, its batch written on the libuv pool
// while the next epoch is filled (at most MAX_SEALED_EPOCHS in flight), all durable at the end. ----
async function mvccAsyncWrites(): Promise<number> {
  const writeTable = store.table({ ...schema, tableId: 3 });
  return opsPerSecondAsync(WRITE_BATCHES * WRITE_BATCH_ROWS, async () => {
    for (let batchIndex = 0; batchIndex < WRITE_BATCHES; batchIndex++) {
      await store.whenWritable();
      const base = batchIndex * WRITE_BATCH_ROWS;
      for (let offset = 0; offset < WRITE_BATCH_ROWS; offset++) writeTable.insert(rowOf((base + offset) % KEYS, batchIndex));
      void store.commitAsync(epochAt(nextSecond++));
    }
    await store.settled();
  });
}
if (typeof store.commitAsync === 'function') {
  await mvccAsyncWrites();
  let best = 0;
  let bestSync = 0;
  for (let round = 0; round < 5; round++) {
    best = Math.max(best, await mvccAsyncWrites());
    bestSync = Math.max(bestSync, mvccWrites());
  }
  emit('mvcc_async_batched_write', best, 'rows/s');
  emit('mvcc_sync_batched_write_alongside', bestSync, 'rows/s');
}

// ---- Memory tier: cache hits. ----
const cachedStore = openRocksStateStore({ dir: join(root, 'cached'), memoryLimitBytes: 512 << 20 });
const cached = cachedStore.table(schema);
const HOT_KEYS = 10_000;
for (let id = 0; id < HOT_KEYS; id++) cached.insert(rowOf(id));
cachedStore.commit(epochAt(1));
for (let id = 0; id < HOT_KEYS; id++) cached.get([id]);
const hotKeys = Array.from({ length: HOT_KEYS }, (_unused, id) => [id]);
function cacheHits(): number {
  const count = READS * 3;
  return opsPerSecond(count, () => {
    for (let index = 0; index < count; index++) if (cached.get(hotKeys[index % HOT_KEYS]!) === undefined) throw new Error('cache miss on hot key');
  });
}
cacheHits();
emit('cache_hit_state_access', bestOf(3, [cacheHits])[0]!, 'ops/s');

// ---- @nxtedition/rocksdb: the same point reads and batched writes. ----
interface NxtBatch {
  put(key: Buffer, value: Buffer): void;
  write(options?: { sync?: boolean }): Promise<void>;
}
interface NxtDatabase {
  open(): Promise<void>;
  close(): Promise<void>;
  get(key: Buffer, options: object): Promise<Buffer | undefined>;
  _getManySync(keys: Buffer[], options: object): (Buffer | undefined)[];
  batch(): NxtBatch;
}
const require = createRequire(import.meta.url);
const { RocksLevel } = require('@nxtedition/rocksdb') as { RocksLevel: new (location: string, options: object) => NxtDatabase };
const nxt = new RocksLevel(join(root, 'nxt'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
await nxt.open();
{
  const writer = new ByteWriter();
  for (let start = 0; start < KEYS; start += 10_000) {
    const batch = nxt.batch();
    for (let id = start; id < Math.min(KEYS, start + 10_000); id++) {
      writer.reset();
      encodeRow(writer, rowOf(id));
      batch.put(rawKeys[id]!, writer.copy());
    }
    await batch.write({ sync: true });
  }
}
const nxtOptions = { keyEncoding: 'buffer', valueEncoding: 'buffer' };
function nxtSyncReads(): number {
  return opsPerSecond(READS, () => {
    for (let index = 0; index < READS; index++) {
      const [value] = nxt._getManySync([rawKeys[readOrder[index]!]!], nxtOptions);
      if (value === undefined || decodeRow(value) === undefined) throw new Error('nxtedition read missed');
    }
  });
}
async function nxtAsyncReads(count: number): Promise<number> {
  return opsPerSecondAsync(count, async () => {
    for (let index = 0; index < count; index++) {
      const value = await nxt.get(rawKeys[readOrder[index]!]!, nxtOptions);
      if (value === undefined) throw new Error('nxtedition read missed');
    }
  });
}
async function nxtWrites(): Promise<number> {
  const writer = new ByteWriter();
  return opsPerSecondAsync(WRITE_BATCHES * WRITE_BATCH_ROWS, async () => {
    for (let batchIndex = 0; batchIndex < WRITE_BATCHES; batchIndex++) {
      const batch = nxt.batch();
      const base = batchIndex * WRITE_BATCH_ROWS;
      for (let offset = 0; offset < WRITE_BATCH_ROWS; offset++) {
        writer.reset();
        encodeRow(writer, rowOf((base + offset) % KEYS, batchIndex));
        batch.put(rawKeys[(base + offset) % KEYS]!, writer.copy());
      }
      await batch.write({ sync: true });
    }
  });
}
nxtSyncReads();
emit('nxtedition_sync_get_and_decode', bestOf(3, [nxtSyncReads])[0]!, 'ops/s');
await nxtAsyncReads(Math.round(READS / 10));
emit('nxtedition_async_get', await nxtAsyncReads(Math.round(READS / 3)), 'ops/s');
await nxtWrites();
emit('nxtedition_batched_put', await nxtWrites(), 'rows/s');
await nxt.close();

// ---- A JS Map: the ceiling for in-process state. ----
const map = new Map<number, Row>();
for (let id = 0; id < KEYS; id++) map.set(id, rowOf(id));
function mapReads(): number {
  return opsPerSecond(READS, () => {
    for (let index = 0; index < READS; index++) if (map.get(readOrder[index]!) === undefined) throw new Error('map miss');
  });
}
mapReads();
emit('js_map_get', bestOf(3, [mapReads])[0]!, 'ops/s');
emit(
  'js_map_batched_set',
  opsPerSecond(WRITE_BATCHES * WRITE_BATCH_ROWS, () => {
    for (let index = 0; index < WRITE_BATCHES * WRITE_BATCH_ROWS; index++) map.set(index % KEYS, rowOf(index % KEYS, 1));
  }),
  'rows/s',
);

await store.close();
await cachedStore.close();
await raw.close();
rmSync(root, { recursive: true, force: true });
