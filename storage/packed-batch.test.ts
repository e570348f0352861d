// The addon adds each run of puts of a packed batch in key order (native/src/packed-batch.h): the
// order it uses equals a stable sort by Buffer.compare recomputed here, and a batch so reordered
// leaves RocksDB exactly as applying its entries one by one, in packed order, does; entries routed
// to the records column family and range deletions spanning both families leave it as a map says.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { forEachPacked, packedBatchOrder, RocksDatabase, RocksDbError } from './rocksdb.js';
import { BATCH_DELETE, BATCH_DELETE_RANGE, BATCH_PUT, WriteBatchBuilder } from './write-batch.js';

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-packed-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

interface Op {
  readonly op: number;
  readonly key: Buffer;
  readonly value: Buffer;
}

// Keys share a table-like prefix or not, with bytes around the sort words' zero padding (0x00)
// and sign bits (0x7f, 0x80, 0xff), lengths 1..24 so some keys are prefixes of others.
const keyArbitrary = fc
  .tuple(fc.boolean(), fc.array(fc.constantFrom(0x00, 0x01, 0x7f, 0x80, 0xff, 0x42), { minLength: 1, maxLength: 24 }))
  .map(([prefixed, tail]) => Buffer.from(prefixed ? [0, 0, 0, 7, 0, ...tail] : tail));
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(keyArbitrary, fc.uint8Array({ maxLength: 6 })).map(([key, value]) => ({ op: BATCH_PUT, key, value: Buffer.from(value) })) },
  { weight: 1, arbitrary: keyArbitrary.map((key) => ({ op: BATCH_DELETE, key, value: Buffer.alloc(0) })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(keyArbitrary, keyArbitrary)
      .filter(([a, b]) => Buffer.compare(a, b) !== 0)
      .map(([a, b]) => (Buffer.compare(a, b) < 0 ? { op: BATCH_DELETE_RANGE, key: a, value: b } : { op: BATCH_DELETE_RANGE, key: b, value: a })),
  },
);

function pack(ops: readonly Op[]): Buffer {
  const batch = new WriteBatchBuilder();
  for (const { op, key, value } of ops) {
    if (op === BATCH_PUT) batch.put(key, value);
    else if (op === BATCH_DELETE) batch.delete(key);
    else batch.deleteRange(key, value);
  }
  return Buffer.from(batch.view());
}

/** The expected order: each run of consecutive puts stably sorted by key bytes. */
function expectedOrder(ops: readonly Op[]): number[] {
  const order: number[] = [];
  let run: number[] = [];
  const endRun = (): void => {
    run.sort((a, b) => Buffer.compare(ops[a]!.key, ops[b]!.key) || a - b);
    order.push(...run);
    run = [];
  };
  ops.forEach((op, index) => {
    if (op.op === BATCH_PUT) run.push(index);
    else {
      endRun();
      order.push(index);
    }
  });
  endRun();
  return order;
}

function contents(database: RocksDatabase): [string, string][] {
  const iterator = database.iterator({});
  const out: [string, string][] = [];
  for (let packed = iterator.nextPacked(256); packed !== null; packed = iterator.nextPacked(256)) {
    forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
      out.push([buffer.toString('hex', keyStart, keyEnd), buffer.toString('hex', valueStart, valueEnd)]);
    });
  }
  iterator.close();
  return out;
}

describe('packed batches in key order', () => {
  it('orders each run of puts by key bytes, equal keys in packed order, deletes in place', () => {
    fc.assert(
      fc.property(fc.array(opArbitrary, { maxLength: 60 }), (ops) => {
        expect(packedBatchOrder(pack(ops))).toEqual(expectedOrder(ops));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves RocksDB as applying the entries one at a time in packed order does (write and writeAsync)', async () => {
    // Three databases for all runs; each run's keys start with its own two bytes, so runs (and
    // their range deletes, whose bounds share that start) never touch each other's keys.
    const sorted = RocksDatabase.open(freshDirectory());
    const sortedAsync = RocksDatabase.open(freshDirectory());
    const oneByOne = RocksDatabase.open(freshDirectory());
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArbitrary, { maxLength: 40 }), fc.array(opArbitrary, { minLength: 1, maxLength: 80 }), async (beforeOps, batchOps) => {
          const tag = Buffer.alloc(2);
          tag.writeUInt16BE(run++);
          const scoped = (op: Op): Op => ({ op: op.op, key: Buffer.concat([tag, op.key]), value: op.op === BATCH_DELETE_RANGE ? Buffer.concat([tag, op.value]) : op.value });
          const before = beforeOps.map(scoped);
          const ops = batchOps.map(scoped);
          for (const database of [sorted, sortedAsync, oneByOne]) database.write(pack(before), false);
          sorted.write(pack(ops), false);
          await sortedAsync.writeAsync(pack(ops), false);
          for (const op of ops) oneByOne.write(pack([op]), false);
          const expected = contents(oneByOne);
          expect(contents(sorted)).toEqual(expected);
          expect(contents(sortedAsync)).toEqual(expected);
        }),
        { numRuns: 150 },
      );
    } finally {
      await Promise.all([sorted.close(), sortedAsync.close(), oneByOne.close()]);
    }
  });

  it('a 50,000-row batch of random keys reads back every row (sorted on the libuv thread)', async () => {
    const database = RocksDatabase.open(freshDirectory());
    try {
      const batch = new WriteBatchBuilder();
      const expected = new Map<string, string>();
      let seed = 12345;
      for (let index = 0; index < 50_000; index++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        const key = Buffer.alloc(12);
        key.writeUInt32BE(9, 0);
        key.writeUInt32BE(seed, 4);
        key.writeUInt32BE(index, 8);
        const value = Buffer.from(String(index));
        batch.put(key, value);
        expected.set(key.toString('hex'), value.toString('hex'));
      }
      await database.writeAsync(Buffer.from(batch.view()), true);
      expect(contents(database)).toEqual([...expected].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    } finally {
      await database.close();
    }
  });

  it('range deletions starting among the puts of the same table keep the memtable whole (insert hints)', async () => {
    // The memtable keeps an insert hint per `tableId | vnode`, shared in RocksDB 7.8 by its skiplist
    // of keys and that of range deletions: a range deletion starting at a key of the table must not
    // use it (epoch-prefix-transform.h). Batches of random puts of one table, with range deletions
    // (in the batch and by deleteRange) starting at keys of that table, against a plain map.
    const database = RocksDatabase.open(freshDirectory());
    try {
      const expected = new Map<string, string>();
      const key = (id: number, tail: number[] = []): Buffer => {
        const bytes = Buffer.alloc(9);
        bytes.writeUInt32BE(7, 0);
        bytes.writeUInt32BE(id, 5);
        return Buffer.concat([bytes, Buffer.from(tail)]);
      };
      const deleteBetween = (start: Buffer, end: Buffer): void => {
        for (const hex of [...expected.keys()]) {
          const stored = Buffer.from(hex, 'hex');
          if (Buffer.compare(stored, start) >= 0 && Buffer.compare(stored, end) < 0) expected.delete(hex);
        }
      };
      let seed = 777;
      const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 100_000;
      for (let round = 0; round < 300; round++) {
        const batch = new WriteBatchBuilder();
        for (let row = 0; row < 40; row++) {
          const put = key(next());
          const value = Buffer.from(String(round));
          batch.put(put, value);
          expected.set(put.toString('hex'), value.toString('hex'));
        }
        const low = next();
        const start = key(low, [0x42]);
        const end = key(low + 500);
        batch.deleteRange(start, end);
        deleteBetween(start, end);
        if (round % 2 === 0) database.write(Buffer.from(batch.view()), false);
        else await database.writeAsync(Buffer.from(batch.view()), false);
        if (round % 5 === 0) {
          const at = next();
          database.deleteRange(key(at), key(at + 300));
          deleteBetween(key(at), key(at + 300));
        }
      }
      expect(contents(database)).toEqual([...expected].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    } finally {
      await database.close();
    }
  });

  it('routes batches across the records family as applying them to a map does (range deletions spanning both)', async () => {
    // Tables 3 and 9 in the default family, table 5 (marked) and the store's records (0xFFFFFFFF)
    // in the records family; keys of every length from the bare table id on, range deletions
    // between any two of them. After each batch: whole scans both ways, each family alone, point
    // reads and a bounded scan against the map; a flush now and then moves the state into files.
    const database = RocksDatabase.open(freshDirectory());
    const tableKey = (table: number, tail: readonly number[]): Buffer => {
      const bytes = Buffer.alloc(4 + tail.length);
      bytes.writeUInt32BE(table, 0);
      Buffer.from(tail).copy(bytes, 4);
      return bytes;
    };
    const recordsTables = new Set([5, 0xffffffff]);
    const model = new Map<string, string>();
    expect(database.markRecordsTable(5)).toBe(true);
    model.set(tableKey(0xffffffff, [0x72, 0, 0, 0, 5]).toString('hex'), ''); // the persisted mark
    const routedKey = fc
      .tuple(fc.constantFrom(3, 5, 9, 0xffffffff), fc.array(fc.constantFrom(0x00, 0x01, 0x72, 0x80, 0xff, 0x42), { maxLength: 6 }))
      .map(([table, tail]) => tableKey(table, tail));
    const routedOp: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(routedKey, fc.uint8Array({ maxLength: 4 })).map(([key, value]) => ({ op: BATCH_PUT, key, value: Buffer.from(value) })) },
      { weight: 2, arbitrary: routedKey.map((key) => ({ op: BATCH_DELETE, key, value: Buffer.alloc(0) })) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(routedKey, routedKey)
          .filter(([a, b]) => Buffer.compare(a, b) !== 0)
          .map(([a, b]) => (Buffer.compare(a, b) < 0 ? { op: BATCH_DELETE_RANGE, key: a, value: b } : { op: BATCH_DELETE_RANGE, key: b, value: a })),
      },
    );
    const sorted = (entries: Iterable<[string, string]>): [string, string][] => [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const scan = (options: Parameters<RocksDatabase['iterator']>[0]): [string, string][] => {
      const iterator = database.iterator(options);
      const out: [string, string][] = [];
      for (let packed = iterator.nextPacked(5); packed !== null; packed = iterator.nextPacked(5)) {
        forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => out.push([buffer.toString('hex', keyStart, keyEnd), buffer.toString('hex', valueStart, valueEnd)]));
      }
      iterator.close();
      return out;
    };
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(routedOp, { minLength: 1, maxLength: 50 }), fc.boolean(), fc.nat(7), routedKey, routedKey, async (ops, writeAsync, dice, boundA, boundB) => {
          if (writeAsync) await database.writeAsync(pack(ops), false);
          else database.write(pack(ops), false);
          for (const { op, key, value } of ops) {
            if (op === BATCH_PUT) model.set(key.toString('hex'), value.toString('hex'));
            else if (op === BATCH_DELETE) model.delete(key.toString('hex'));
            else {
              for (const hex of [...model.keys()]) {
                const stored = Buffer.from(hex, 'hex');
                if (Buffer.compare(stored, key) >= 0 && Buffer.compare(stored, value) < 0) model.delete(hex);
              }
            }
          }
          if (dice === 0) await database.flush();
          const all = sorted(model);
          expect(scan({})).toEqual(all);
          expect(scan({ reverse: true })).toEqual([...all].reverse());
          const inRecords = ([hex]: [string, string]): boolean => recordsTables.has(Buffer.from(hex, 'hex').readUInt32BE(0));
          expect(scan({ family: 'records' })).toEqual(all.filter(inRecords));
          expect(scan({ family: 'default' })).toEqual(all.filter((entry) => !inRecords(entry)));
          const probes = ops.map((op) => op.key);
          expect(database.multiGet(probes).map((value) => value?.toString('hex'))).toEqual(probes.map((probe) => model.get(probe.toString('hex'))));
          for (const probe of probes) expect(database.get(probe)?.toString('hex')).toBe(model.get(probe.toString('hex')));
          const [lowerBound, upperBound] = Buffer.compare(boundA, boundB) <= 0 ? [boundA, boundB] : [boundB, boundA];
          if (Buffer.compare(lowerBound, upperBound) < 0) {
            const inside = all.filter(([hex]) => Buffer.compare(Buffer.from(hex, 'hex'), lowerBound) >= 0 && Buffer.compare(Buffer.from(hex, 'hex'), upperBound) < 0);
            expect(scan({ lowerBound, upperBound })).toEqual(inside);
            expect(scan({ lowerBound, upperBound, reverse: true })).toEqual([...inside].reverse());
          }
        }),
        { numRuns: 250 },
      );
    } finally {
      await database.close();
    }
  });

  it('refuses a malformed batch with InvalidArgument and writes nothing', async () => {
    const database = RocksDatabase.open(freshDirectory());
    try {
      const good = pack([
        { op: BATCH_PUT, key: Buffer.from('b'), value: Buffer.from('1') },
        { op: BATCH_PUT, key: Buffer.from('a'), value: Buffer.from('2') },
      ]);
      const truncated = good.subarray(0, good.length - 1);
      expect(() => packedBatchOrder(truncated)).toThrow(RocksDbError);
      expect(() => database.write(truncated, false)).toThrow(/truncated/);
      await expect(database.writeAsync(Buffer.from(truncated), false)).rejects.toThrow(/truncated/);
      const unknown = Buffer.from(good);
      unknown[0] = 9;
      expect(() => database.write(unknown, false)).toThrow(/unknown operation/);
      expect(contents(database)).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
