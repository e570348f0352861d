// The row cache's accounting against the V8 heap: for typical rows (ints, int8, short and long
// strings, numerics, timestamps, NULLs, a Nexmark bid, "known absent"), keys and rows made the way
// the state table makes them (memcomparable key as a latin1 string, the row decoded from its stored
// bytes), the heap bytes each cached entry really takes (`heapUsed` after a full GC, over N
// entries) against the bytes the cache charges for it; then a cache held at a budget under steady
// eviction (the --memory-limit case: the Map's table keeps deleted slots until it rehashes).
// Needs `node --expose-gc`; re-runs itself with it when started without (`npm run bench -- row-cache`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ByteWriter } from '../storage/byte-writer.js';
import { encodeKey } from '../storage/memcomparable.js';
import { writeTablePrefix } from '../storage/mvcc-key.js';
import { MemoryBudget, RowCache } from '../storage/row-cache.js';
import { decodeRow, encodeRow } from '../storage/row-codec.js';
import { Numeric } from '../sql/numeric.js';
import type { DataType } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { BENCH_SCALE, flag, reporter } from './support/harness.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  const child = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit', env: process.env });
  process.exit(child.status ?? 1);
}
const collect = gc!;

const report = reporter('row-cache');
const ENTRIES = Math.max(10_000, Math.round(Number(flag('--entries') ?? '100000') * BENCH_SCALE));
const INT8: DataType = { name: 'int8', typmod: -1 };
const INT4: DataType = { name: 'int4', typmod: -1 };
const BASE_MICROS = 1_764_460_800_000_000; // 2025-11-30 00:00 UTC in microseconds: a heap number

interface Shape {
  readonly name: string;
  readonly keyType: DataType;
  readonly key: (i: number) => number | bigint;
  /** A second key column (a composite key such as a join's (key, row id)): a 23-byte key. */
  readonly key2?: (i: number) => number | bigint;
  readonly row: ((i: number) => Row) | null;
}

const SHAPES: readonly Shape[] = [
  { name: 'ints', keyType: INT4, key: (i) => i, row: (i) => [i, i * 7, i % 1000, 42] },
  { name: 'int8s', keyType: INT8, key: (i) => BigInt(i), row: (i) => [BigInt(i), BigInt(i * 3), BigInt(i % 97)] },
  { name: 'short_strings', keyType: INT4, key: (i) => i, row: (i) => [i, `name ${i}`, `city ${i % 50}`, 'OR'] },
  { name: 'long_strings', keyType: INT4, key: (i) => i, row: (i) => [i, `description ${i} `.padEnd(200, 'x')] },
  { name: 'numerics', keyType: INT4, key: (i) => i, row: (i) => [i, new Numeric(BigInt(i) * 100n + 99n, 2), new Numeric(BigInt(i), 0)] },
  { name: 'timestamps', keyType: INT4, key: (i) => i, row: (i) => [i, BASE_MICROS + i * 1_000_003, BASE_MICROS - i * 7] },
  { name: 'nulls', keyType: INT4, key: (i) => i, row: (i) => [i, null, null, null] },
  {
    name: 'nexmark_bid',
    keyType: INT8,
    key: (i) => BigInt(i),
    row: (i) => [BigInt(1000 + (i % 5000)), BigInt(i % 100_000), BigInt(100 + i), 'channel-3', `https://www.nexmark.com/xnz/ytq/item.htm?query=1&channel_id=${i % 1000}`, BASE_MICROS + i * 1000, ''],
  },
  {
    name: 'composite_key',
    keyType: INT8,
    key: (i) => BigInt(i % 5000),
    key2: (i) => BigInt(i),
    row: (i) => [BigInt(i % 5000), BigInt(i), BigInt(100 + i), BASE_MICROS + i * 1000],
  },
  { name: 'absent', keyType: INT8, key: (i) => BigInt(i), row: null },
];

function makeKey(writer: ByteWriter, shape: Shape, i: number): string {
  writer.reset();
  writeTablePrefix(writer, 7);
  if (shape.key2 === undefined) encodeKey(writer, [shape.key(i)], [shape.keyType]);
  else encodeKey(writer, [shape.key(i), shape.key2(i)], [shape.keyType, shape.keyType]);
  return writer.latin1();
}

function makeRow(writer: ByteWriter, shape: Shape, i: number): Row | null {
  if (shape.row === null) return null;
  writer.reset();
  encodeRow(writer, shape.row(i));
  return decodeRow(writer.copy())!;
}

function heapAfterGc(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

const writer = new ByteWriter(256);
let totalHeap = 0;
let totalCharged = 0;
for (const shape of SHAPES) {
  const budget = new MemoryBudget(Number.MAX_SAFE_INTEGER);
  const before = heapAfterGc();
  const cache = new RowCache(budget);
  for (let i = 0; i < ENTRIES; i++) cache.set(makeKey(writer, shape, i), makeRow(writer, shape, i));
  const heap = heapAfterGc() - before;
  const charged = cache.bytes;
  totalHeap += heap;
  totalCharged += charged;
  report(`${shape.name}_heap_bytes_per_entry`, heap / ENTRIES, 'bytes');
  report(`${shape.name}_charged_bytes_per_entry`, charged / ENTRIES, 'bytes');
  report(`${shape.name}_heap_bytes_per_charged_byte`, heap / charged, 'ratio');
  cache.dispose();
}
report('heap_bytes_per_charged_byte', totalHeap / totalCharged, 'ratio');

// Steady state under a budget: 4x more entries set than fit (the --memory-limit case), per shape.
const limit = 16 * 1024 * 1024;
report('at_budget_limit_bytes', limit, 'bytes');
for (const name of ['nexmark_bid', 'composite_key']) {
  const shape = SHAPES.find((candidate) => candidate.name === name)!;
  const budget = new MemoryBudget(limit);
  const before = heapAfterGc();
  const cache = new RowCache(budget);
  for (let i = 0; i < 4 * ENTRIES; i++) cache.set(makeKey(writer, shape, i), makeRow(writer, shape, i));
  const heap = heapAfterGc() - before;
  report(`at_budget_${name}_charged_bytes`, budget.usedBytes, 'bytes');
  report(`at_budget_${name}_heap_bytes`, heap, 'bytes');
  report(`at_budget_${name}_entries`, cache.size, 'entries');
  report(`at_budget_${name}_heap_bytes_per_charged_byte`, heap / budget.usedBytes, 'ratio');
  cache.dispose();
}
