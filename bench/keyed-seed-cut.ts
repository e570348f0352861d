// The cut of a keyed fragment whose share is seeded by a read (executor/stream/parallel/keyed-seed.ts,
// executor/cluster/README.md "Keyed shares"): what the main thread does in one go at the cut when
// many new keys are written while the seeds are read. In process, over a real RocksDB: BENCH_GROUPS
// rows (default 200,000) at E in a keyed table (owner = vnode mod 3, the share gets a third), then
// the read stepped as the fragment steps it (4,096 entries a step) while epochs of BENCH_NEW_KEYS
// (default 30,000) new groups in all, 500 an epoch, and as many deletes over nothing, are kept, a
// few more epochs after the read is done, then the cut (`finish`). Two ways, alternating A B A B
// (BENCH_ROUNDS, default 2): `at_cut`, every kept key's state at E looked up at the cut (the epochs
// kept after the read is done and no slice before the cut: the seeks of a cut before the keys were
// known ahead), and `ahead`, the fragment's way (an epoch kept every step, slices of `settleWithin`
// between epochs once the read is done). Printed per way: the cut's time (ms, wall and CPU), the
// seeks at the cut, the longest other block of the read of each kind (a step, a keep, a slice; wall and CPU) and the share's
// seed rows (equal in both ways, checked against a read at once of the final database).
// Run: npm run build && node dist/bench/keyed-seed-cut.js

import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SEED_STEP_ENTRIES, KeyedSeedRead, keyedSeeds } from '../executor/stream/parallel/keyed-seed.js';
import type { StateTableDeclaration } from '../planner/stream/stream-plan.js';
import { type as scalar } from '../sql/types.js';
import { ByteWriter } from '../storage/byte-writer.js';
import { epochSuffix } from '../storage/mvcc-key.js';
import { RocksDatabase } from '../storage/rocksdb.js';
import { encodeRow, ROW_TOMBSTONE } from '../storage/row-codec.js';
import { WriteBatchBuilder } from '../storage/write-batch.js';

const GROUPS = Number(process.env['BENCH_GROUPS'] ?? '200000');
const NEW_KEYS = Number(process.env['BENCH_NEW_KEYS'] ?? '30000');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? '2');
const PER_EPOCH = 500;
const TABLE = 7;
const tables: StateTableDeclaration[] = [{ tableId: TABLE, purpose: 'groups', columnTypes: [scalar('int4'), scalar('int8')], primaryKey: [0] }];
const vnodes = new Map<number, readonly number[]>([[TABLE, [0]]]);
const TOMBSTONE = Buffer.from([ROW_TOMBSTONE]);

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'keyed-seed-cut', metric, value: Number(value.toPrecision(4)), unit }));
}

function key(k: number, epoch: bigint): Buffer {
  const out = Buffer.alloc(4 + 1 + 4 + 8);
  out.writeUInt32BE(TABLE, 0);
  out.writeUInt32BE(k, 5);
  epochSuffix(epoch).copy(out, 9);
  return out;
}

function row(k: number, v: number): Buffer {
  const writer = new ByteWriter(32);
  encodeRow(writer, [k, v]);
  return Buffer.from(writer.view());
}

function run(way: 'at_cut' | 'ahead', round: number): void {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-bench-seed-cut-'));
  const database = RocksDatabase.open(join(dir, 'db'));
  try {
    // Groups at even keys; the new ones odd (behind and ahead of the read), deletes over nothing far past them.
    for (let start = 0; start < GROUPS; start += 50_000) {
      const batch = new WriteBatchBuilder();
      for (let k = start; k < Math.min(GROUPS, start + 50_000); k++) batch.put(key(2 * k, 1n), row(2 * k, k));
      database.write(batch.view());
    }
    let epoch = 1n;
    const read = new KeyedSeedRead(database, tables, vnodes, 2, 3, epoch);
    let written = 0;
    const epochOf = (): Buffer => {
      epoch++;
      const batch = new WriteBatchBuilder();
      for (let i = 0; i < PER_EPOCH && written < NEW_KEYS; i++, written++) {
        // Spread over the key space: some behind the read, some ahead.
        const k = ((written * 7919) % GROUPS) * 2 + 1;
        batch.put(key(k, epoch), row(k, written));
        batch.put(key(4 * GROUPS + written, epoch), TOMBSTONE);
      }
      const bytes = Buffer.from(batch.view());
      database.write(bytes);
      return bytes;
    };
    // The longest block of each kind, wall and CPU ms (the machine is shared: the CPU one is the figure).
    const longest = { step: [0, 0], keep: [0, 0], slice: [0, 0] };
    const timed = (kind: keyof typeof longest, work: () => void): void => {
      const cpu = process.cpuUsage();
      const began = performance.now();
      work();
      const used = process.cpuUsage(cpu);
      longest[kind][0] = Math.max(longest[kind][0]!, performance.now() - began);
      longest[kind][1] = Math.max(longest[kind][1]!, (used.user + used.system) / 1000);
    };
    let done = false;
    while (!done) {
      timed('step', () => (done = read.step(DEFAULT_SEED_STEP_ENTRIES)));
      if (way === 'ahead' && written < NEW_KEYS) {
        const bytes = epochOf();
        timed('keep', () => read.keep([bytes], epoch));
      }
    }
    while (written < NEW_KEYS) {
      const bytes = epochOf();
      timed('keep', () => read.keep([bytes], epoch));
      if (way === 'ahead') timed('slice', () => read.settleWithin(16));
    }
    if (way === 'ahead') while (!read.settled) timed('slice', () => read.settleWithin(16));
    const cpu = process.cpuUsage();
    const began = performance.now();
    const [seed] = read.finish();
    const cutMs = performance.now() - began;
    const used = process.cpuUsage(cpu);
    const [whole] = keyedSeeds(database, tables, vnodes, 2, 3);
    if (seed!.rows !== whole!.rows) throw new Error(`${way}: ${seed!.rows} seed rows, a read of the final database counts ${whole!.rows}`);
    emit(`${way}_cut_ms`, cutMs, 'ms');
    emit(`${way}_cut_cpu_ms`, (used.user + used.system) / 1000, 'ms');
    emit(`${way}_cut_lookups`, read.cutLookUps, 'seeks');
    emit(`${way}_lookups_before_cut`, read.lookUps - read.cutLookUps, 'seeks');
    emit(`${way}_marked_by_steps`, read.marked, 'keys');
    for (const [kind, [wall, cpuMs]] of Object.entries(longest)) {
      emit(`${way}_longest_${kind}_ms`, wall!, 'ms');
      emit(`${way}_longest_${kind}_cpu_ms`, cpuMs!, 'ms');
    }
    emit(`${way}_seed_rows`, seed!.rows, 'rows');
    emit(`${way}_round`, round, 'round');
  } finally {
    void database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

emit('load_1min_before', loadavg()[0]!, 'load');
for (let round = 1; round <= ROUNDS; round++) {
  run('at_cut', round);
  run('ahead', round);
}
emit('load_1min_after', loadavg()[0]!, 'load');
