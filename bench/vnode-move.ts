// Moving vnodes of a keyed fragment's state from one store into another (executor/cluster/README.md,
// "Keyed shares": a kept share's node takes the vnodes it gains out of a store made from its
// checkpoint), the two ways a node does it, as JSON lines {"bench","metric","value","unit"}:
//
// - `read`: the entries read with KeyedSeedRead (steps of 4,096 entries, the event loop's turn
//   between them) into one packed batch in memory, then written into the target in pieces of whole
//   entries of 16 MiB with writeAsync (the path of views before plan version 11);
// - `files`: the vnodes' key ranges copied into an SST file (RocksDatabase.exportRanges), then
//   ingested into the target (RocksDatabase.ingest; storage/DESIGN.md §2, "Vnode ranges as files").
//
// A state table keyed by vnode (plan version 11's layout) holds BENCH_ROWS rows (default 2,000,000;
// an int8 key, a random 100-character text, an int8), written through the state store in epochs of 100,000
// rows and flushed: the source. The target holds the same table without the moved vnodes (their
// ranges deleted and compacted away), as a share's store holds its own vnodes only. BENCH_VNODES
// (default 128) vnodes move, every other one. Each run is a child process over hard-linked copies
// of both (RocksDB checkpoints, as a node's store from a checkpoint is), the ways alternating
// A B A B (BENCH_ROUNDS, default 2). Printed per way and run: the time to take the entries out
// (read or export), to put them in (write or ingest), the total, the process's CPU seconds over
// both (every thread: RocksDB's pool included), the bytes held between the two (the packed batch,
// or the file), the child's peak resident set (VmHWM) and its resident set before the move; each
// run's entries in the moved ranges of the target and a digest of them are checked equal to the
// source's (a difference exits non-zero). Then the medians and the 1-minute load.
// Run: npm run build && node dist/bench/vnode-move.js

import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { wholeEntryPieces } from '../executor/cluster/remote-share-link.js';
import { DEFAULT_SEED_STEP_ENTRIES, KeyedSeedRead } from '../executor/stream/parallel/keyed-seed.js';
import { VNODE_COUNT } from '../executor/stream/parallel/vnode.js';
import type { StateTableDeclaration } from '../planner/stream/stream-plan.js';
import { epochFromMillis } from '../sql/epoch.js';
import { type as scalar } from '../sql/types.js';
import { vnodeRange } from '../storage/mvcc-key.js';
import { openRocksStateStore } from '../storage/rocks-state-store.js';
import { forEachPacked, RocksDatabase } from '../storage/rocksdb.js';

const ROWS = Number(process.env['BENCH_ROWS'] ?? '2000000');
const MOVED = Number(process.env['BENCH_VNODES'] ?? '128');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? '2');
if (!Number.isInteger(ROWS) || ROWS < 1) throw new Error(`BENCH_ROWS must be a positive whole number, not ${process.env['BENCH_ROWS']}`);
if (!Number.isInteger(MOVED) || MOVED < 1 || MOVED > VNODE_COUNT / 2) throw new Error(`BENCH_VNODES must be a whole number from 1 to ${VNODE_COUNT / 2}, not ${process.env['BENCH_VNODES']}`);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS must be a positive whole number, not ${process.env['BENCH_ROUNDS']}`);

const TABLE = 21;
const declaration: StateTableDeclaration = { tableId: TABLE, purpose: 'groups', columnTypes: [scalar('int8'), scalar('text'), scalar('int8')], primaryKey: [0], vnodeColumns: [0] };
const stateVnodes = new Map<number, readonly number[]>([[TABLE, [0]]]);
/** Every other vnode, MOVED of them. */
const moved = new Uint8Array(VNODE_COUNT);
for (let index = 0; index < MOVED; index++) moved[index * 2] = 1;
const ranges = Array.from({ length: VNODE_COUNT }, (_, vnode) => vnode)
  .filter((vnode) => moved[vnode] === 1)
  .map((vnode) => vnodeRange(TABLE, vnode, vnode + 1));

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'vnode-move', metric, value: Number(value.toPrecision(4)), unit }));
}

const rssMiB = (field: 'VmHWM' | 'VmRSS'): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;

/** The entries of the moved ranges: their count and a digest of their keys and values, in key order. */
function movedEntries(database: RocksDatabase): { entries: number; digest: string } {
  const hash = createHash('sha256');
  let entries = 0;
  for (const range of ranges) {
    const iterator = database.iterator({ lowerBound: range.lower, upperBound: range.upper });
    try {
      for (let packed = iterator.nextPacked(4096); packed !== null; packed = iterator.nextPacked(4096)) {
        forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
          hash.update(buffer.subarray(keyStart, keyEnd));
          hash.update(buffer.subarray(valueStart, valueEnd));
          entries++;
        });
      }
    } finally {
      iterator.close();
    }
  }
  return { entries, digest: hash.digest('hex') };
}

/** A child's run: moves the vnodes from `source` into `target` one way and prints what it measured as one JSON line. */
async function child(way: 'read' | 'files', source: string, target: string, scratch: string): Promise<void> {
  const from = RocksDatabase.open(source);
  const into = RocksDatabase.open(target);
  const rssBefore = rssMiB('VmRSS');
  const cpu = process.cpuUsage();
  const started = performance.now();
  let held = 0;
  let outMs: number;
  if (way === 'read') {
    const map = new Uint16Array(VNODE_COUNT);
    for (let vnode = 0; vnode < VNODE_COUNT; vnode++) map[vnode] = moved[vnode] === 1 ? 1 : 0;
    const read = new KeyedSeedRead(from, [declaration], stateVnodes, 1, 2, 0n, map);
    let bytes: Uint8Array;
    try {
      while (!read.step(DEFAULT_SEED_STEP_ENTRIES)) await new Promise((resolve) => setImmediate(resolve));
      bytes = read.finish()[0]!.bytes;
    } finally {
      read.close();
    }
    held = bytes.length;
    outMs = performance.now() - started;
    for (const piece of wholeEntryPieces(bytes, 16 * 1024 * 1024)) await into.writeAsync(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
  } else {
    mkdirSync(scratch, { recursive: true });
    const files = await from.exportRanges(scratch, ranges);
    held = files.reduce((sum, file) => sum + file.bytes, 0);
    outMs = performance.now() - started;
    await into.ingest(files);
  }
  const totalMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const check = movedEntries(into);
  console.log(JSON.stringify({ outMs, inMs: totalMs - outMs, totalMs, cpuS: (used.user + used.system) / 1e6, held, peakRssMiB: rssMiB('VmHWM'), rssBeforeMiB: rssBefore, ...check }));
  await from.close();
  await into.close();
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-vnode-move-'));
  try {
    // The source: ROWS rows through the state store (the table's record and keys as a view writes them).
    const started = performance.now();
    const store = openRocksStateStore({ dir: join(work, 'source') });
    const table = store.table(declaration);
    for (let id = 0; id < ROWS; id++) {
      table.insert([BigInt(id), randomBytes(75).toString('base64'), BigInt(id * 7)]);
      if ((id + 1) % 100_000 === 0 || id === ROWS - 1) await store.commitAsync(epochFromMillis(Date.UTC(2026, 0, 1) + id));
    }
    await store.close();
    const source = RocksDatabase.open(join(work, 'source'));
    await source.flush();
    const expected = movedEntries(source);
    emit('rows', ROWS, 'rows');
    emit('build_s', (performance.now() - started) / 1000, 's');
    emit('moved_vnodes', MOVED, 'vnodes');
    emit('moved_entries', expected.entries, 'entries');
    // The target: the same without the moved vnodes, compacted so none of their entries are left.
    await source.checkpoint(join(work, 'target'));
    const target = RocksDatabase.open(join(work, 'target'));
    for (const range of ranges) target.deleteRange(range.lower, range.upper);
    await target.compactRange();
    if (movedEntries(target).entries !== 0) throw new Error('the target still holds moved entries');

    const results = new Map<string, Record<string, number>[]>([
      ['read', []],
      ['files', []],
    ]);
    let run = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of ['read', 'files'] as const) {
        run++;
        const runDir = join(work, `run-${run}`);
        mkdirSync(runDir);
        await source.checkpoint(join(runDir, 'source'));
        await target.checkpoint(join(runDir, 'target'));
        const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', way, join(runDir, 'source'), join(runDir, 'target'), join(runDir, 'files')], { encoding: 'utf8', env: process.env, maxBuffer: 1 << 20 });
        const result = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, number> & { digest: string };
        if (result.entries !== expected.entries || result.digest !== expected.digest) {
          throw new Error(`${way}: the target's moved ranges hold ${result.entries} entries (digest ${result.digest}), the source's ${expected.entries} (digest ${expected.digest})`);
        }
        const tag = `${way}_${round + 1}`;
        emit(`${tag}_out_ms`, result['outMs']!, 'ms');
        emit(`${tag}_in_ms`, result['inMs']!, 'ms');
        emit(`${tag}_total_ms`, result['totalMs']!, 'ms');
        emit(`${tag}_cpu_s`, result['cpuS']!, 's');
        emit(`${tag}_held_bytes`, result['held']!, 'bytes');
        emit(`${tag}_peak_rss_mib`, result['peakRssMiB']!, 'MiB');
        emit(`${tag}_rss_before_mib`, result['rssBeforeMiB']!, 'MiB');
        results.get(way)!.push(result);
        rmSync(runDir, { recursive: true, force: true });
      }
    }
    for (const [way, runs] of results) {
      emit(`${way}_total_ms_median`, median(runs.map((result) => result['totalMs']!)), 'ms');
      emit(`${way}_cpu_s_median`, median(runs.map((result) => result['cpuS']!)), 's');
      emit(`${way}_peak_rss_mib_median`, median(runs.map((result) => result['peakRssMiB']!)), 'MiB');
    }
    emit('load_1m', loadavg()[0]!, 'load');
    await target.close();
    await source.close();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') {
  await child(process.argv[3] as 'read' | 'files', process.argv[4]!, process.argv[5]!, process.argv[6]!);
} else {
  await main();
}
