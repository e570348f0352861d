// KeyedSeedRead over a real RocksDB: a read started at epoch E, stepped a few entries at a time
// while later epochs (updates, tombstones of keys that were rows at E, a tombstone over nothing, a
// key born and deleted after E, a key deleted and put again) are written and kept, must make for
// each share the same entries as a read at once of the final database (keyedSeeds, the routing
// of committed state, an independent path for the kept writes), and count the same rows.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StateTableDeclaration } from '../../../planner/stream/stream-plan.js';
import { type as scalar } from '../../../sql/types.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { epochSuffix } from '../../../storage/mvcc-key.js';
import { RocksDatabase } from '../../../storage/rocksdb.js';
import { encodeRow, ROW_TOMBSTONE } from '../../../storage/row-codec.js';
import { forEachBatchEntry, WriteBatchBuilder } from '../../../storage/write-batch.js';
import { KeyedSeedRead, keyedSeeds } from '../parallel/keyed-seed.js';

const KEYED = 7;
const WHOLE = 8;
const tables: StateTableDeclaration[] = [
  { tableId: KEYED, purpose: 'groups', columnTypes: [scalar('int4'), scalar('int8')], primaryKey: [0] },
  { tableId: WHOLE, purpose: 'singleton', columnTypes: [scalar('int4')], primaryKey: [0] },
];
const vnodes = new Map<number, readonly number[]>([[KEYED, [0]]]);

function key(tableId: number, k: number, epoch: bigint): Buffer {
  const out = Buffer.alloc(4 + 1 + 4 + 8);
  out.writeUInt32BE(tableId, 0);
  out.writeUInt32BE(k, 5);
  epochSuffix(epoch).copy(out, 9);
  return out;
}

function row(values: number[]): Buffer {
  const writer = new ByteWriter(64);
  encodeRow(writer, values);
  return Buffer.from(writer.view());
}

const TOMBSTONE = Buffer.from([ROW_TOMBSTONE]);

/** The entries of a packed write batch, sorted, as text. */
function entries(bytes: Uint8Array): string[] {
  const out: string[] = [];
  forEachBatchEntry(Buffer.from(bytes), (operation, buffer, keyStart, keyEnd, valueStart, valueEnd) => {
    out.push(`${operation}:${buffer.toString('hex', keyStart, keyEnd)}=${buffer.toString('hex', valueStart, valueEnd)}`);
  });
  return out.sort();
}

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('KeyedSeedRead', () => {
  it('makes, with the writes kept during the read, the seeds of the final state', () => {
    dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-seed-'));
    const database = RocksDatabase.open(join(dir, 'db'));
    try {
      const write = (epoch: bigint, puts: [number, number, number[] | null][]): Buffer => {
        const batch = new WriteBatchBuilder();
        for (const [tableId, k, values] of puts) batch.put(key(tableId, k, epoch), values === null ? TOMBSTONE : row(values));
        const bytes = Buffer.from(batch.view());
        database.write(bytes);
        return bytes;
      };
      write(1n, [
        ...Array.from({ length: 300 }, (_, k): [number, number, number[]] => [KEYED, k, [k, k * 10]]),
        ...Array.from({ length: 5 }, (_, k): [number, number, number[]] => [WHOLE, k, [k]]),
      ]);
      write(2n, [
        [KEYED, 3, null],
        [KEYED, 4, [4, 41]],
        [KEYED, 5, null],
      ]);
      for (const [first, owners] of [
        [2, 3],
        [1, 3],
        [2, 4],
      ] as const) {
        const read = new KeyedSeedRead(database, tables, vnodes, first, owners);
        expect(read.step(7)).toBe(false);
        // Later epochs, kept: each a batch as the owners hand it over.
        const e = 100n * BigInt(first * 10 + owners);
        read.keep([write(e + 1n, [[KEYED, 10, [10, 1]], [KEYED, 11, null], [KEYED, 5, null], [KEYED, 1000, null], [KEYED, 500, [500, 5]], [WHOLE, 2, null]])]);
        expect(read.step(50)).toBe(false);
        read.keep([write(e + 2n, [[KEYED, 500, null], [KEYED, 11, [11, 7]], [KEYED, 12, null], [WHOLE, 9, [9]]])]);
        read.keep([write(e + 3n, [[KEYED, 501, [501, 1]], [KEYED, 12, [12, 8]]])]);
        while (!read.step(13));
        read.keep([write(e + 4n, [[KEYED, 13, null], [KEYED, 501, [501, 2]]])]);
        const seeds = read.finish();
        const whole = keyedSeeds(database, tables, vnodes, first, owners);
        expect(seeds.length).toBe(owners - first);
        seeds.forEach((seed, share) => {
          expect(entries(seed.bytes)).toEqual(entries(whole[share]!.bytes));
          expect(seed.rows).toBe(whole[share]!.rows);
          expect(seed.rows).toBeGreaterThan(0);
        });
        expect(read.keptEpochs).toBe(4);
      }
    } finally {
      void database.close();
    }
  });

  it('closes its iterators when abandoned, and cannot be stepped after', () => {
    dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-seed-'));
    const database = RocksDatabase.open(join(dir, 'db'));
    try {
      const batch = new WriteBatchBuilder();
      for (let k = 0; k < 50; k++) batch.put(key(KEYED, k, 1n), row([k, k]));
      database.write(batch.view());
      const read = new KeyedSeedRead(database, tables, vnodes, 2, 3);
      expect(read.step(5)).toBe(false);
      read.keep([Buffer.from(batch.view())]);
      read.close();
      expect(() => read.step(5)).toThrow(/closed/);
      expect(() => read.finish()).toThrow(/not done/);
    } finally {
      void database.close();
    }
  });
});
