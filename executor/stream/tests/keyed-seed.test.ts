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
import { balancedMap, rebalanceMap } from '../parallel/vnode-map.js';
import { vnodeOf } from '../../../storage/vnode-hash.js';

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
        read.keep([write(e + 1n, [[KEYED, 10, [10, 1]], [KEYED, 11, null], [KEYED, 5, null], [KEYED, 1000, null], [KEYED, 500, [500, 5]], [WHOLE, 2, null]])], e + 1n);
        expect(read.step(50)).toBe(false);
        read.keep([write(e + 2n, [[KEYED, 500, null], [KEYED, 11, [11, 7]], [KEYED, 12, null], [WHOLE, 9, [9]]])], e + 2n);
        read.keep([write(e + 3n, [[KEYED, 501, [501, 1]], [KEYED, 12, [12, 8]]])], e + 3n);
        while (!read.step(13));
        read.keep([write(e + 4n, [[KEYED, 13, null], [KEYED, 501, [501, 2]]])], e + 4n);
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

  it('knows each kept key at E before the cut: the steps mark the keys ahead, the others are looked up a few at a time', () => {
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
      // At E: even keys 0..3998 rows, every tenth of them a tombstone on top; the whole table's rows.
      write(1n, [
        ...Array.from({ length: 2000 }, (_, k): [number, number, number[]] => [KEYED, 2 * k, [2 * k, k]]),
        ...Array.from({ length: 20 }, (_, k): [number, number, number[]] => [WHOLE, k, [k]]),
      ]);
      write(2n, Array.from({ length: 200 }, (_, k): [number, number, null] => [KEYED, 20 * k, null]));
      // Each read starts where the one before ended: kept epochs are newer than everything it reads.
      let epoch = 2n;
      // A model of the whole table's rows (every share has them).
      const live = new Map<number, boolean>();
      for (let k = 0; k < 20; k++) live.set(k, true);
      for (const settle of [true, false]) {
        for (const [first, owners] of [
          [1, 3],
          [2, 4],
        ] as const) {
          const read = new KeyedSeedRead(database, tables, vnodes, first, owners, epoch);
          // Each epoch: new keys (odd), deletes of rows at E, puts over tombstones at E, deletes over nothing, the whole table.
          const churn = (at: number): void => {
            epoch++;
            const puts: [number, number, number[] | null][] = [];
            for (let k = 0; k < 40; k++) {
              const n = (at * 997 + k * 101) % 4000;
              puts.push([KEYED, n | 1, [n | 1, at]]);
              puts.push([KEYED, n & ~1, k % 3 === 0 ? [n & ~1, at] : null]);
              puts.push([KEYED, 100000 + n, null]);
            }
            // Keys never written before: a group born, one deleted over nothing.
            for (let k = 0; k < 10; k++) puts.push([KEYED, 200000 + at * 10 + k, k % 2 === 0 ? [k, at] : null]);
            puts.push([WHOLE, at % 30, at % 2 === 0 ? null : [at]]);
            live.set(at % 30, at % 2 !== 0);
            read.keep([write(epoch, puts)], epoch);
          };
          let at = 0;
          while (!read.step(97)) churn(at++);
          expect(read.marked).toBeGreaterThan(0);
          // Read done: what is kept now is looked up in slices (settleWithin), bounded each time.
          for (let more = 0; more < 5; more++) churn(at++);
          if (settle) {
            expect(read.settled).toBe(false);
            let slices = 0;
            for (let done = read.settleWithin(16); done > 0; done = read.settleWithin(16)) {
              expect(done).toBeLessThanOrEqual(16);
              slices++;
            }
            expect(slices).toBeGreaterThan(1);
            expect(read.settled).toBe(true);
          }
          const before = read.lookUps;
          const seeds = read.finish();
          if (settle) {
            // The cut seeks nothing: every kept key's state at E was known before it.
            expect(read.cutLookUps).toBe(0);
            expect(read.lookUps).toBe(before);
          } else {
            expect(read.cutLookUps).toBeGreaterThan(0);
          }
          const whole = keyedSeeds(database, tables, vnodes, first, owners);
          seeds.forEach((seed, share) => {
            expect(entries(seed.bytes)).toEqual(entries(whole[share]!.bytes));
            expect(seed.rows).toBe(whole[share]!.rows);
          });
          // Rows of the whole table: counted from the model of what was written.
          const keyedRows = seeds.map((seed) => seed.rows);
          const wholeRows = [...live.values()].filter((alive) => alive).length;
          const { rows: wholeOnly } = keyedSeeds(database, [tables[1]!], vnodes, first, owners)[0]!;
          expect(wholeOnly).toBe(wholeRows);
          expect(keyedRows.every((rows) => rows > wholeRows)).toBe(true);
        }
      }
    } finally {
      void database.close();
    }
  });

  it('gives a share whose store a checkpoint made only the kept writes after that checkpoint, on its vnodes', () => {
    dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-seed-'));
    const database = RocksDatabase.open(join(dir, 'db'));
    try {
      const written: { epoch: bigint; bytes: Buffer }[] = [];
      const write = (epoch: bigint, puts: [number, number, number[] | null][]): Buffer => {
        const batch = new WriteBatchBuilder();
        for (const [tableId, k, values] of puts) batch.put(key(tableId, k, epoch), values === null ? TOMBSTONE : row(values));
        const bytes = Buffer.from(batch.view());
        database.write(bytes);
        written.push({ epoch, bytes });
        return bytes;
      };
      write(1n, [
        ...Array.from({ length: 300 }, (_, k): [number, number, number[]] => [KEYED, k, [k, k * 10]]),
        ...Array.from({ length: 5 }, (_, k): [number, number, number[]] => [WHOLE, k, [k]]),
      ]);
      write(2n, [[KEYED, 3, null], [KEYED, 4, [4, 41]]]);
      // E = 2; share 0's node made its store from checkpoint 4 (epochs 3 and 4 in it), share 1's seed is read.
      const read = new KeyedSeedRead(database, tables, vnodes, 2, 4, 2n);
      read.keep([write(3n, [[KEYED, 10, [10, 1]], [KEYED, 500, [500, 5]], [WHOLE, 2, null]])], 3n);
      read.keep([write(4n, [[KEYED, 11, null], [KEYED, 501, [501, 1]]])], 4n);
      expect(() => read.fromCheckpoints([1n, undefined])).toThrow(/older than the read's start/);
      read.fromCheckpoints([4n, undefined]);
      expect(read.step(5)).toBe(false);
      // After the checkpoint: a tombstone of a key put at E, of one put in a kept epoch before the checkpoint, a row again, a whole table's change.
      read.keep([write(5n, [[KEYED, 20, null], [KEYED, 500, null], [KEYED, 501, [501, 2]], [WHOLE, 3, null]])], 5n);
      while (!read.step(13));
      read.keep([write(6n, [[KEYED, 21, [21, 9]], [KEYED, 10, null], [KEYED, 4, null]])], 6n);
      const [fromCheckpoint, fromRead] = read.finish();
      const whole = keyedSeeds(database, tables, vnodes, 2, 4);
      expect(fromCheckpoint!.checkpoint).toBe(4n);
      expect(fromRead!.checkpoint).toBeUndefined();
      expect(entries(fromRead!.bytes)).toEqual(entries(whole[1]!.bytes));
      // The node's store: every entry of the checkpoint (epochs 1 to 4), then what the cut sends.
      const store = new Map<string, string>();
      const apply = (bytes: Uint8Array): void =>
        forEachBatchEntry(Buffer.from(bytes), (_operation, buffer, keyStart, keyEnd, valueStart, valueEnd) => {
          store.set(buffer.toString('hex', keyStart, keyEnd), buffer.toString('hex', valueStart, valueEnd));
        });
      for (const batch of written) if (batch.epoch <= 4n) apply(batch.bytes);
      const sent = entries(fromCheckpoint!.bytes);
      apply(fromCheckpoint!.bytes);
      // On the share's vnodes (and the whole table) it holds what a read of the final database gives that share.
      const expected = entries(whole[0]!.bytes).map((entry) => entry.slice(entry.indexOf(':') + 1));
      const prefixes = new Set(expected.map((entry) => entry.slice(0, 2 * (4 + 1 + 4))));
      const held = [...store].filter(([hex]) => prefixes.has(hex.slice(0, 2 * (4 + 1 + 4)))).map(([hex, value]) => `${hex}=${value}`).sort();
      expect(held).toEqual(expected.sort());
      // Nothing of the epochs the checkpoint holds crossed, and nothing of another share's vnodes.
      expect(sent.filter((entry) => written.some((batch) => batch.epoch <= 4n && entries(batch.bytes).includes(entry)))).toEqual([]);
      expect(sent.filter((entry) => !prefixes.has(entry.slice(entry.indexOf(':') + 1, entry.indexOf(':') + 1 + 2 * (4 + 1 + 4))))).toEqual([]);
      expect(sent.length).toBeGreaterThan(0);
      expect(fromCheckpoint!.rows).toBe(0);
    } finally {
      void database.close();
    }
  });

  it("reads nothing when every share's store was made from a checkpoint", () => {
    dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-seed-'));
    const database = RocksDatabase.open(join(dir, 'db'));
    try {
      const batch = new WriteBatchBuilder();
      for (let k = 0; k < 50; k++) batch.put(key(KEYED, k, 1n), row([k, k]));
      database.write(batch.view());
      const read = new KeyedSeedRead(database, tables, vnodes, 2, 4, 1n);
      read.fromCheckpoints([3n, 1n]);
      expect(read.done).toBe(true);
      expect(read.takeBases().map((base) => base.length)).toEqual([0, 0]);
      expect(read.finish().map((seed) => seed.bytes.length)).toEqual([0, 0]);
    } finally {
      void database.close();
    }
  });

  it('reads only the vnodes its shares take when the keys carry their vnode, and makes the same seeds', () => {
    dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-seed-'));
    // The same writes into a database whose KEYED keys carry their vnode (a view of plan version 11)
    // and one whose keys have vnode byte 0: the seeds must hold the same entries but for that byte.
    const layouts = [true, false].map((keyed) => ({
      keyed,
      database: RocksDatabase.open(join(dir!, keyed ? 'keyed' : 'flat')),
      tables: keyed ? [{ ...tables[0]!, vnodeColumns: [0] }, tables[1]!] : tables,
    }));
    const vnodeKey = (tableId: number, k: number, epoch: bigint, keyed: boolean): Buffer => {
      const out = key(tableId, k, epoch);
      if (keyed && tableId === KEYED) out[4] = vnodeOf([k], [scalar('int4')]);
      return out;
    };
    /** A seed's entries with every key's vnode byte set to 0. */
    const flat = (bytes: Uint8Array): string[] =>
      entries(bytes).map((entry) => {
        const at = entry.indexOf(':') + 1;
        return `${entry.slice(0, at)}${entry.slice(at, at + 8)}00${entry.slice(at + 10)}`;
      }).sort();
    try {
      const write = (epoch: bigint, puts: [number, number, number[] | null][]): Buffer[] =>
        layouts.map(({ keyed, database }) => {
          const batch = new WriteBatchBuilder();
          for (const [tableId, k, values] of puts) batch.put(vnodeKey(tableId, k, epoch, keyed), values === null ? TOMBSTONE : row(values));
          const bytes = Buffer.from(batch.view());
          database.write(bytes);
          return bytes;
        });
      write(1n, [
        ...Array.from({ length: 3000 }, (_, k): [number, number, number[]] => [KEYED, k, [k, k * 10]]),
        ...Array.from({ length: 5 }, (_, k): [number, number, number[]] => [WHOLE, k, [k]]),
      ]);
      write(2n, [[KEYED, 3, null], [KEYED, 4, [4, 41]], [KEYED, 5, null]]);
      // A map rebalanced once (owners 0-2 threads, 3 and 4 shares, share 4 taking vnodes from each in turn).
      const rebalanced = rebalanceMap(balancedMap(4), [0, 1, 2, 3], 5);
      for (const [first, owners, map] of [
        [2, 3, undefined],
        [3, 4, undefined],
        [3, 5, rebalanced],
      ] as const) {
        const reads = layouts.map(({ database, tables: declared }) => new KeyedSeedRead(database, declared, vnodes, first, owners, 0n, map));
        const e = 100n * BigInt(first * 10 + owners);
        reads.forEach((read) => expect(read.step(7)).toBe(false));
        const kept = (epoch: bigint, puts: [number, number, number[] | null][]): void => write(epoch, puts).forEach((bytes, index) => reads[index]!.keep([bytes], epoch));
        kept(e + 1n, [[KEYED, 10, [10, 1]], [KEYED, 11, null], [KEYED, 5, null], [KEYED, 4000, null], [KEYED, 2500, [2500, 5]], [WHOLE, 2, null]]);
        reads.forEach((read) => expect(read.step(50)).toBe(false));
        kept(e + 2n, [[KEYED, 2500, null], [KEYED, 11, [11, 7]], [KEYED, 12, null], [KEYED, 2999, null], [WHOLE, 9, [9]]]);
        for (const read of reads) while (!read.step(13));
        kept(e + 3n, [[KEYED, 13, null], [KEYED, 2501, [2501, 2]], [KEYED, 1, null]]);
        const [keyedSeeds, flatSeeds] = reads.map((read) => read.finish());
        // Key 4000 never had a row: its kept tombstone goes nowhere when the owner comes from a put,
        // to its vnode's owner when the key names it (a delete of nothing there).
        const never = (entry: string): boolean => entry.includes(':000000070000000fa0');
        const owner = (map ?? balancedMap(owners))[vnodeOf([4000], [scalar('int4')])]!;
        flatSeeds!.forEach((seed, share) => {
          expect(flat(seed.bytes).filter(never)).toEqual([]);
          expect(flat(keyedSeeds![share]!.bytes).filter(never).length).toBe(owner === first + share ? 1 : 0);
          expect(flat(keyedSeeds![share]!.bytes).filter((entry) => !never(entry))).toEqual(flat(seed.bytes));
          expect(keyedSeeds![share]!.rows).toBe(seed.rows);
          expect(seed.rows).toBeGreaterThan(0);
        });
        // The keyed read passed over the threads' vnodes by seeks: it met a few of their entries only.
        const threads = [...(map ?? balancedMap(owners))].filter((owner) => owner < first).length;
        expect(threads).toBeGreaterThan(0);
        expect(reads[0]!.skipped).toBeGreaterThan(0);
        expect(reads[0]!.skipped).toBeLessThan(3000 / 4);
        expect(reads[1]!.skipped).toBe(0);
      }
    } finally {
      for (const { database } of layouts) void database.close();
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
      read.keep([Buffer.from(batch.view())], 2n);
      read.close();
      expect(() => read.step(5)).toThrow(/closed/);
      expect(() => read.finish()).toThrow(/not done/);
    } finally {
      void database.close();
    }
  });
});
