// One epoch's RocksDB write on the libuv thread, alone: packed batches of ROWS q0-shaped rows
// (49-byte keys: table prefix, four int8 key columns, ~epoch; 40-byte values) written with
// writeAsync(sync) one after another into a fresh database, as a source barrier's epochs are.
// Keys in random order (a view keyed by its whole row) or increasing (keyed by an id). Prints
// wall and process CPU per row (the main thread only waits, so the CPU is the write's: memtable
// inserts, WAL, and the flushes it triggers).
// `--base DIR` loads another build's addon wrapper (DIR/dist/storage/rocksdb.js, e.g. a baseline
// worktree) so both run side by side: the packed batch format is the same.
// Run: npm run build && node dist/bench/epoch-write.js [--rows 200000] [--epochs 6] [--rounds 2] [--base /tmp/base]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RocksDatabase } from '../storage/rocksdb.js';
import { BENCH_SCALE, flag, reporter } from './support/harness.js';

const ROWS = Number(flag('--rows') ?? Math.round(200_000 * BENCH_SCALE));
const EPOCHS = Number(flag('--epochs') ?? '6');
const ROUNDS = Number(flag('--rounds') ?? '2');
const BASE = flag('--base');
const emit = reporter('epoch-write', 2);

interface Opener {
  open(path: string, options: object): { writeAsync(packed: Buffer, sync?: boolean): Promise<void>; close(): Promise<void> };
}

/** A packed batch (storage/write-batch.ts) of ROWS rows of epoch `epoch`. */
function batch(epoch: number, random: boolean, seed: { value: number }): Buffer {
  const keyBytes = random ? 5 + 4 * 9 + 8 : 5 + 9 + 8;
  const valueBytes = 40;
  const entry = 1 + 4 + keyBytes + 4 + valueBytes;
  const packed = Buffer.alloc(entry * ROWS);
  const next = (): number => (seed.value = (Math.imul(seed.value, 1103515245) + 12345) >>> 0);
  let at = 0;
  for (let row = 0; row < ROWS; row++) {
    packed[at++] = 1;
    packed.writeUInt32LE(keyBytes, at);
    at += 4;
    packed.writeUInt32BE(7, at);
    at += 4;
    packed[at++] = 0;
    const columns = random ? 4 : 1;
    for (let column = 0; column < columns; column++) {
      packed[at++] = 1;
      if (random) {
        packed.writeUInt32BE(next(), at);
        packed.writeUInt32BE(next(), at + 4);
      } else {
        packed.writeUInt32BE(0x80000000, at);
        packed.writeUInt32BE(epoch * ROWS + row, at + 4);
      }
      at += 8;
    }
    packed.writeUInt32BE(0xffffffff, at);
    packed.writeUInt32BE(~epoch >>> 0, at + 4);
    at += 8;
    packed.writeUInt32LE(valueBytes, at);
    at += 4;
    packed[at] = 1;
    for (let byte = 1; byte < valueBytes; byte++) packed[at + byte] = (row * 7 + byte) & 0xff;
    at += valueBytes;
  }
  return packed;
}

async function run(database: Opener, label: string, random: boolean): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-bench-epoch-write-'));
  const db = database.open(directory, { blockCacheBytes: 64 << 20 });
  const seed = { value: 42 };
  let wall = 0;
  let cpu = 0;
  try {
    for (let epoch = 1; epoch <= EPOCHS; epoch++) {
      const packed = batch(epoch, random, seed);
      const started = performance.now();
      const cpuStarted = process.cpuUsage();
      await db.writeAsync(packed, true);
      const used = process.cpuUsage(cpuStarted);
      wall += performance.now() - started;
      cpu += (used.user + used.system) / 1000;
    }
  } finally {
    await db.close();
    rmSync(directory, { recursive: true, force: true });
  }
  const perRow = (ms: number): number => (ms * 1000) / (ROWS * EPOCHS);
  const keys = random ? 'random' : 'increasing';
  emit(`${label}_${keys}_keys_wall`, perRow(wall), 'us/row');
  emit(`${label}_${keys}_keys_cpu`, perRow(cpu), 'us/row');
}

const builds: [string, Opener][] = [['head', RocksDatabase as unknown as Opener]];
if (BASE !== undefined) {
  const module = (await import(join(BASE, 'dist', 'storage', 'rocksdb.js'))) as { RocksDatabase: Opener };
  builds.unshift(['base', module.RocksDatabase]);
}
for (let round = 0; round < ROUNDS; round++) {
  for (const random of [true, false]) for (const [label, database] of builds) await run(database, label, random);
}
