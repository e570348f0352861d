// The records column family (DESIGN.md §6, "The records family"): the store's records (table id
// 0xFFFFFFFF) and the tables marked as records tables land in it and nowhere else; reads route by
// key and merge across families (plain and MVCC, forward and reverse) exactly as a model computed
// here says; a database written before the family (opened with `recordsFamily: false`) has its
// records moved at open and its records tables when they are marked, and reads the same after;
// read-only opens, databases shared with another wrapper, and the WAL files the family must not
// keep alive.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { epochSuffix } from './mvcc-key.js';
import { openRocksStateStore } from './rocks-state-store.js';
import { forEachPacked, RocksDatabase, type ColumnFamily, type IteratorOptions } from './rocksdb.js';
import type { StateTableSchema } from './state-table.js';
import { WriteBatchBuilder } from './write-batch.js';

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-records-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const STORE = 0xffffffff;

function key(table: number, tail: readonly number[]): Buffer {
  const bytes = Buffer.alloc(4 + tail.length);
  bytes.writeUInt32BE(table >>> 0, 0);
  Buffer.from(tail).copy(bytes, 4);
  return bytes;
}

/** The persisted mark of a records table (records-family.h): 0xFFFFFFFF | 'r' | table id. */
function markKey(table: number): Buffer {
  return key(STORE, [0x72, (table >>> 24) & 0xff, (table >>> 16) & 0xff, (table >>> 8) & 0xff, table & 0xff]);
}

function read(database: RocksDatabase, options: IteratorOptions = {}): [string, string][] {
  const iterator = database.iterator(options);
  const out: [string, string][] = [];
  try {
    for (let packed = iterator.nextPacked(7); packed !== null; packed = iterator.nextPacked(7)) {
      forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
        out.push([buffer.toString('hex', keyStart, keyEnd), buffer.toString('hex', valueStart, valueEnd)]);
      });
    }
  } finally {
    iterator.close();
  }
  return out;
}

const familyOf = (database: RocksDatabase, family: ColumnFamily): [string, string][] => read(database, { family });
const tableOf = (hex: string): number => Buffer.from(hex, 'hex').readUInt32BE(0);
const sortedEntries = (model: Map<string, string>): [string, string][] => [...model].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe('the records family', () => {
  it('takes the store records and the marked tables, and only them (routing, flushed files)', async () => {
    const database = RocksDatabase.open(freshDirectory());
    try {
      expect(database.recordsTables()).toEqual([]);
      expect(database.markRecordsTable(5)).toBe(true);
      expect(database.markRecordsTable(5)).toBe(false);
      expect(database.recordsTables()).toEqual([5]);
      const batch = new WriteBatchBuilder();
      const counts = new Map<number, number>([
        [3, 40],
        [5, 7],
        [9, 25],
        [STORE, 4],
      ]);
      for (const [table, count] of counts) {
        for (let index = 0; index < count; index++) batch.put(key(table, [0, index]), Buffer.from([1, index]));
      }
      database.write(Buffer.from(batch.view()), true);
      await database.flush();
      const records = familyOf(database, 'records').map(([hex]) => tableOf(hex));
      const main = familyOf(database, 'default').map(([hex]) => tableOf(hex));
      // The mark itself is a store record.
      expect(records.filter((table) => table === 5).length).toBe(7);
      expect(records.filter((table) => table === STORE).length).toBe(4 + 1);
      expect(records.length).toBe(7 + 5);
      expect(main.filter((table) => table === 3).length).toBe(40);
      expect(main.filter((table) => table === 9).length).toBe(25);
      expect(main.length).toBe(65);
      // Both flushed; each family's files hold its own tables only.
      const files = database.liveFiles();
      expect(new Set(files.map((file) => file.family))).toEqual(new Set(['default', 'records']));
      for (const file of files) {
        const tables = [file.smallestKey.readUInt32BE(0), file.largestKey.readUInt32BE(0)];
        for (const table of tables) expect(file.family === 'records').toBe(table === 5 || table === STORE);
      }
      expect(Number(database.getProperty('rocksdb.estimate-num-keys', 'records'))).toBe(12);
      expect(Number(database.getProperty('rocksdb.estimate-num-keys', 'default'))).toBe(65);
    } finally {
      await database.close();
    }
  });

  it('reads across families: get, multiGet, iterators by bounds, MVCC mode, forward and reverse', async () => {
    const database = RocksDatabase.open(freshDirectory());
    try {
      database.markRecordsTable(5);
      // Versioned keys `table | 0 | k | ~epoch` in tables 3, 5, 9 and the store's; values start
      // with 1 (a row) or are a tombstone (0).
      const versions = new Map<string, Map<bigint, Buffer>>(); // prefix hex -> epoch -> value
      const raw = new Map<string, string>([[markKey(5).toString('hex'), '']]);
      const batch = new WriteBatchBuilder();
      let seed = 99;
      const next = (bound: number): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % bound;
      for (const table of [3, 5, 9, STORE]) {
        for (let k = 0; k < 12; k++) {
          const prefix = key(table, [0, k]);
          const byEpoch = new Map<bigint, Buffer>();
          for (let version = 0; version < 1 + next(4); version++) {
            const epoch = BigInt(1 + next(9));
            const value = next(5) === 0 ? Buffer.from([0]) : Buffer.from([1, table & 0xff, k, Number(epoch)]);
            byEpoch.set(epoch, value);
          }
          versions.set(prefix.toString('hex'), byEpoch);
          for (const [epoch, value] of byEpoch) {
            const full = Buffer.concat([prefix, epochSuffix(epoch)]);
            batch.put(full, value);
            raw.set(full.toString('hex'), value.toString('hex'));
          }
        }
      }
      database.write(Buffer.from(batch.view()), true);
      // Half the keys in SST files, the rest in the memtables.
      await database.flush();
      const later = new WriteBatchBuilder();
      for (const [prefixHex, byEpoch] of versions) {
        if (next(2) === 0) continue;
        const value = Buffer.from([1, 0xee]);
        byEpoch.set(10n, value);
        const full = Buffer.concat([Buffer.from(prefixHex, 'hex'), epochSuffix(10n)]);
        later.put(full, value);
        raw.set(full.toString('hex'), value.toString('hex'));
      }
      await database.writeAsync(Buffer.from(later.view()), true);

      // Plain reads.
      const all = sortedEntries(raw);
      expect(read(database)).toEqual(all);
      expect(read(database, { reverse: true })).toEqual([...all].reverse());
      const probes = [...all.map(([hex]) => Buffer.from(hex, 'hex')), key(5, [0, 99]), key(STORE, [1]), key(4, [])];
      for (const probe of probes) expect(database.get(probe)?.toString('hex')).toBe(raw.get(probe.toString('hex')));
      expect(database.multiGet(probes).map((value) => value?.toString('hex'))).toEqual(probes.map((probe) => raw.get(probe.toString('hex'))));
      // Bounded iterators: every pair of bounds among table edges and keys inside tables.
      const bounds = [key(0, []), key(3, [0, 5]), key(4, []), key(5, []), key(5, [0, 6]), key(6, []), key(9, [0, 3]), key(STORE, []), key(STORE, [0, 8]), Buffer.alloc(9, 0xff)];
      for (const lowerBound of bounds) {
        for (const upperBound of bounds) {
          if (Buffer.compare(lowerBound, upperBound) >= 0) continue;
          const inside = all.filter(([hex]) => Buffer.compare(Buffer.from(hex, 'hex'), lowerBound) >= 0 && Buffer.compare(Buffer.from(hex, 'hex'), upperBound) < 0);
          expect(read(database, { lowerBound, upperBound })).toEqual(inside);
          expect(read(database, { lowerBound, upperBound, reverse: true })).toEqual([...inside].reverse());
        }
      }
      // Seeks from a key of table 5: forward on into table 9 and the store's, backward into table 3.
      const forward = database.iterator({});
      forward.seek(key(5, [0, 11]));
      const fromFive = all.filter(([hex]) => hex >= key(5, [0, 11]).toString('hex'));
      const got: string[] = [];
      for (let packed = forward.nextPacked(3); packed !== null; packed = forward.nextPacked(3)) forEachPacked(packed, (buffer, s, e) => got.push(buffer.toString('hex', s, e)));
      forward.close();
      expect(got).toEqual(fromFive.map(([hex]) => hex));
      const backward = database.iterator({ reverse: true });
      backward.seek(key(5, [0, 3]));
      const downFromFive = all.filter(([hex]) => hex <= key(5, [0, 3]).toString('hex')).reverse();
      const gotBack: string[] = [];
      for (let packed = backward.nextPacked(3); packed !== null; packed = backward.nextPacked(3)) forEachPacked(packed, (buffer, s, e) => gotBack.push(buffer.toString('hex', s, e)));
      backward.close();
      expect(gotBack).toEqual(downFromFive.map(([hex]) => hex));

      // MVCC reads at every epoch, against the model.
      for (let epoch = 0n; epoch <= 11n; epoch++) {
        const visible: [string, string][] = [];
        const visibleWithTombstones: [string, string][] = [];
        for (const [prefixHex, byEpoch] of [...versions].sort(([a], [b]) => (a < b ? -1 : 1))) {
          const newest = [...byEpoch.keys()].filter((at) => at <= epoch).sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))[0];
          const prefix = Buffer.from(prefixHex, 'hex');
          const seekKey = Buffer.concat([prefix, epochSuffix(epoch)]);
          const expected = newest === undefined ? undefined : byEpoch.get(newest)!;
          expect(database.getLatestVersion(seekKey)?.toString('hex')).toBe(expected?.toString('hex'));
          if (newest === undefined) continue;
          const entry: [string, string] = [Buffer.concat([prefix, epochSuffix(newest)]).toString('hex'), expected!.toString('hex')];
          visibleWithTombstones.push(entry);
          if (expected![0] !== 0) visible.push(entry);
        }
        const suffix = epochSuffix(epoch);
        // The mark (a 9-byte store record, no version) is not an MVCC key of the model: bound it out.
        const upperBound = key(STORE, [0x01]);
        expect(read(database, { epochSuffix: suffix, upperBound })).toEqual(visible);
        expect(read(database, { epochSuffix: suffix, upperBound, reverse: true })).toEqual([...visible].reverse());
        expect(read(database, { epochSuffix: suffix, upperBound, keepTombstones: true })).toEqual(visibleWithTombstones);
        const lowerBound = key(3, [0, 6]);
        const middle = visible.filter(([hex]) => hex >= lowerBound.toString('hex') && hex < key(9, [0, 2]).toString('hex'));
        expect(read(database, { epochSuffix: suffix, lowerBound, upperBound: key(9, [0, 2]), reverse: true })).toEqual([...middle].reverse());
      }
    } finally {
      await database.close();
    }
  });

  it('moves a database written before it: the store records at open, a records table when marked; reads stay the same', async () => {
    const dir = freshDirectory();
    const positions: StateTableSchema = { tableId: 100, columnTypes: [type('int8'), type('int8')], primaryKey: [0], records: true };
    const view: StateTableSchema = { tableId: 101, columnTypes: [type('int8'), type('text')], primaryKey: [0] };
    const positionModel = new Map<bigint, bigint>();
    const viewModel = new Map<bigint, string>();
    let clock = Date.now();
    let lastEpoch = 0n;
    let before: [string, string][];
    {
      // The old layout: every key in the default family.
      const store = openRocksStateStore({ dir, memoryLimitBytes: 0, rocksdb: { recordsFamily: false, writeBufferBytes: 1 << 20 } });
      for (let round = 0; round < 6; round++) {
        const positionTable = store.table(positions);
        const viewTable = store.table(view);
        for (let split = 0n; split < 3n; split++) {
          const position = BigInt(round * 10) + split;
          positionTable.insert([split, position]);
          positionModel.set(split, position);
        }
        for (let row = 0; row < 50; row++) {
          const id = BigInt(round * 50 + row);
          viewTable.insert([id, `row ${id}`]);
          viewModel.set(id, `row ${id}`);
        }
        store.putMeta('source-offsets/100', new TextEncoder().encode(String(round)));
        clock += 1000;
        lastEpoch = epochFromMillis(clock);
        store.commit(lastEpoch);
        if (round === 2) await store.database.flush();
      }
      expect(store.database.recordsTables()).toBeNull();
      expect(() => store.database.iterator({ family: 'records' })).toThrow(/no column family/);
      before = read(store.database);
      expect(before.some(([hex]) => tableOf(hex) === STORE)).toBe(true);
      await store.close();
    }
    {
      // Opened with the family: the store's records moved at open, table 100 still in the default family.
      const database = RocksDatabase.open(dir);
      try {
        expect(database.recordsTables()).toEqual([]);
        expect(read(database)).toEqual(before);
        const records = familyOf(database, 'records');
        expect(records).toEqual(before.filter(([hex]) => tableOf(hex) === STORE));
        expect(familyOf(database, 'default')).toEqual(before.filter(([hex]) => tableOf(hex) !== STORE));
      } finally {
        await database.close();
      }
    }
    {
      // The store marks table 100 when it opens it (records: true): its keys move in one write.
      const store = openRocksStateStore({ dir, memoryLimitBytes: 0 });
      try {
        expect(store.committedEpoch).toBe(lastEpoch);
        const positionRows = [...store.table(positions).scan()];
        expect(store.database.recordsTables()).toEqual([100]);
        const expectedPositions: Row[] = [...positionModel].map(([split, position]) => [split, position]);
        expect(positionRows).toEqual(expectedPositions);
        expect([...store.table(view).scan()]).toEqual([...viewModel].map(([id, text]) => [id, text]));
        const withMark = sortedEntries(new Map([...before, [markKey(100).toString('hex'), '']]));
        expect(read(store.database)).toEqual(withMark);
        expect(familyOf(store.database, 'records')).toEqual(withMark.filter(([hex]) => tableOf(hex) === STORE || tableOf(hex) === 100));
        expect(familyOf(store.database, 'default')).toEqual(withMark.filter(([hex]) => tableOf(hex) === 101));
        // New writes of table 100 go to the records family.
        store.table(positions).insert([7n, 70n]);
        clock += 1000;
        store.commit(epochFromMillis(clock));
        expect(familyOf(store.database, 'default').every(([hex]) => tableOf(hex) === 101)).toBe(true);
      } finally {
        await store.close();
      }
    }
    {
      // Read-only: routes by the persisted mark, moves nothing.
      const database = RocksDatabase.open(dir, { readOnly: true, createIfMissing: false });
      try {
        expect(database.recordsTables()).toEqual([100]);
        expect(database.markRecordsTable(200)).toBe(false);
        expect(familyOf(database, 'default').every(([hex]) => tableOf(hex) === 101)).toBe(true);
      } finally {
        await database.close();
      }
      const store = openRocksStateStore({ dir, memoryLimitBytes: 0 });
      try {
        positionModel.set(7n, 70n);
        expect([...store.table(positions).scan()]).toEqual([...positionModel].map(([split, position]) => [split, position]));
      } finally {
        await store.close();
      }
    }
    expect(() => RocksDatabase.open(dir, { recordsFamily: false })).toThrow(/cannot open a database that has a records family/);
  });

  it('an old database opened read-only reads everything from its one family', async () => {
    const dir = freshDirectory();
    const old = RocksDatabase.open(dir, { recordsFamily: false });
    const batch = new WriteBatchBuilder();
    batch.put(key(3, [1]), Buffer.from([1]));
    batch.put(key(STORE, [0x65]), Buffer.from([2]));
    old.write(Buffer.from(batch.view()), true);
    await old.close();
    const database = RocksDatabase.open(dir, { readOnly: true, createIfMissing: false });
    try {
      expect(database.recordsTables()).toBeNull();
      expect(database.get(key(STORE, [0x65]))).toEqual(Buffer.from([2]));
      expect(read(database).map(([hex]) => hex)).toEqual([key(3, [1]).toString('hex'), key(STORE, [0x65]).toString('hex')]);
      expect(database.getProperty('rocksdb.estimate-num-keys', 'records')).toBeUndefined();
    } finally {
      await database.close();
    }
  });

  it('a mark made through one wrapper routes the writes of another attached to the same database', async () => {
    const dir = freshDirectory();
    const database = RocksDatabase.open(dir);
    const token = database.share();
    const attached = RocksDatabase.attach(token, dir);
    try {
      expect(database.markRecordsTable(8)).toBe(true);
      expect(attached.recordsTables()).toEqual([8]);
      const batch = new WriteBatchBuilder();
      batch.put(key(8, [1]), Buffer.from([1]));
      batch.put(key(7, [1]), Buffer.from([2]));
      await attached.writeAsync(Buffer.from(batch.view()), true);
      expect(familyOf(database, 'records').map(([hex]) => hex)).toEqual([key(8, [1]).toString('hex'), markKey(8).toString('hex')]);
      expect(familyOf(database, 'default').map(([hex]) => hex)).toEqual([key(7, [1]).toString('hex')]);
      expect(attached.get(key(8, [1]))).toEqual(Buffer.from([1]));
    } finally {
      await attached.close();
      await database.close();
    }
  });

  it('keeps no WAL file alive: every flush of the tables flushes the records too', async () => {
    const dir = freshDirectory();
    const database = RocksDatabase.open(dir, { writeBufferBytes: 1 << 20 });
    try {
      // 24 MiB of table rows, one store record per batch: 24 memtables of the default family.
      const value = Buffer.alloc(4096, 7);
      for (let round = 0; round < 96; round++) {
        const batch = new WriteBatchBuilder();
        for (let row = 0; row < 64; row++) batch.put(key(3, [0, round, row]), value);
        batch.put(key(STORE, [0x65]), Buffer.from([round]));
        await database.writeAsync(Buffer.from(batch.view()), false);
      }
      // Wait (with a deadline) for the automatic flushes to finish, then count the WAL files.
      const deadline = Date.now() + 30_000;
      while (database.getProperty('rocksdb.mem-table-flush-pending') !== '0' || database.getProperty('rocksdb.num-running-flushes') !== '0') {
        if (Date.now() > deadline) throw new Error('flushes still pending after 30 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const wals = readdirSync(dir).filter((name) => name.endsWith('.log'));
      // The family's memtable flushed with the tables' (so its records are in SST files) and at
      // most the current WAL and the one being replaced remain; pinned, there would be one per memtable.
      expect(database.liveFiles().some((file) => file.family === 'records')).toBe(true);
      expect(wals.length).toBeLessThanOrEqual(2);
    } finally {
      await database.close();
    }
  });
});
