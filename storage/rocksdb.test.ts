// The native addon through its typed wrapper: every call issue 4 lists, on a real RocksDB.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forEachPacked, mallocInfo, RocksDatabase, RocksDbError, rocksdbVersion } from './rocksdb.js';
import { WriteBatchBuilder } from './write-batch.js';
import { epochSuffix } from './mvcc-key.js';

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-rocks-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const bytes = (text: string) => Buffer.from(text, 'utf8');

function putAll(database: RocksDatabase, entries: [string, string][], sync = false): void {
  const batch = new WriteBatchBuilder();
  for (const [key, value] of entries) batch.put(bytes(key), bytes(value));
  database.write(batch.view(), sync);
}

function readAll(database: RocksDatabase, options: Parameters<RocksDatabase['iterator']>[0] = {}, batchSize = 2): [string, string][] {
  const iterator = database.iterator(options);
  const out: [string, string][] = [];
  for (let packed = iterator.nextPacked(batchSize); packed !== null; packed = iterator.nextPacked(batchSize)) {
    forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
      out.push([buffer.toString('utf8', keyStart, keyEnd), buffer.toString('utf8', valueStart, valueEnd)]);
    });
  }
  iterator.close();
  return out;
}

describe('RocksDB addon', () => {
  it('reports the linked RocksDB version', () => {
    expect(rocksdbVersion()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('gets, multi-gets, writes atomic batches with deletes and range deletes', async () => {
    const database = RocksDatabase.open(freshDirectory());
    putAll(database, [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
      ['d', '4'],
    ]);
    expect(database.get(bytes('b'))?.toString()).toBe('2');
    expect(database.get(bytes('zz'))).toBeUndefined();
    expect(database.multiGet([bytes('a'), bytes('x'), bytes('d')]).map((value) => value?.toString())).toEqual(['1', undefined, '4']);
    const batch = new WriteBatchBuilder();
    batch.delete(bytes('a'));
    batch.deleteRange(bytes('b'), bytes('d'));
    batch.put(bytes('e'), bytes('5'));
    database.write(batch.view(), true);
    expect(readAll(database)).toEqual([
      ['d', '4'],
      ['e', '5'],
    ]);
    database.deleteRange(bytes('d'), bytes('e'));
    expect(readAll(database)).toEqual([['e', '5']]);
    await database.close();
  });

  it('iterates in batches forward, reverse, within bounds, from a seek', async () => {
    const database = RocksDatabase.open(freshDirectory());
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    putAll(
      database,
      keys.map((key) => [key, key.toUpperCase()]),
    );
    expect(readAll(database).map(([key]) => key)).toEqual(keys);
    expect(readAll(database, { reverse: true }).map(([key]) => key)).toEqual([...keys].reverse());
    expect(readAll(database, { lowerBound: bytes('k2'), upperBound: bytes('k5') }).map(([key]) => key)).toEqual(['k2', 'k3', 'k4']);
    expect(readAll(database, { lowerBound: bytes('k2'), upperBound: bytes('k5'), reverse: true }).map(([key]) => key)).toEqual(['k4', 'k3', 'k2']);
    const iterator = database.iterator({});
    iterator.seek(bytes('k35'));
    const packed = iterator.nextPacked(2)!;
    const seen: string[] = [];
    forEachPacked(packed, (buffer, keyStart, keyEnd) => seen.push(buffer.toString('utf8', keyStart, keyEnd)));
    expect(seen).toEqual(['k4', 'k5']);
    iterator.close();
    await database.close();
  });

  it('iterates in MVCC mode: newest version at or before an epoch, tombstones skipped', async () => {
    const database = RocksDatabase.open(freshDirectory());
    const batch = new WriteBatchBuilder();
    const key = (name: string, epoch: bigint) => Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), bytes(name), epochSuffix(epoch)]);
    const put = (name: string, epoch: bigint, value: string) => batch.put(key(name, epoch), Buffer.concat([Buffer.from([1]), bytes(value)]));
    put('a', 1n, 'a1');
    put('a', 5n, 'a5');
    put('b', 2n, 'b2');
    batch.put(key('b', 4n), Buffer.from([0]));
    put('c', 6n, 'c6');
    database.write(batch.view());
    const at = (epoch: bigint, reverse = false, keepTombstones = false) =>
      readAll(database, { lowerBound: Buffer.from([0, 0, 0, 1]), upperBound: Buffer.from([0, 0, 0, 2]), epochSuffix: epochSuffix(epoch), reverse, keepTombstones }, 1).map(
        ([, value]) => value.slice(1),
      );
    expect(at(0n)).toEqual([]);
    expect(at(1n)).toEqual(['a1']);
    expect(at(3n)).toEqual(['a1', 'b2']);
    expect(at(4n)).toEqual(['a1']);
    expect(at(4n, false, true)).toEqual(['a1', '']);
    expect(at(5n)).toEqual(['a5']);
    expect(at(9n)).toEqual(['a5', 'c6']);
    expect(at(3n, true)).toEqual(['b2', 'a1']);
    expect(at(9n, true)).toEqual(['c6', 'a5']);
    expect(database.getLatestVersion(key('a', 4n))?.subarray(1).toString()).toBe('a1');
    expect(database.getLatestVersion(key('a', 0n))).toBeUndefined();
    expect(database.getLatestVersion(key('c', 5n))).toBeUndefined();
    await database.close();
  });

  it('reads a snapshot as of its creation', async () => {
    const database = RocksDatabase.open(freshDirectory());
    putAll(database, [['a', 'old']]);
    const snapshot = database.snapshot();
    putAll(database, [
      ['a', 'new'],
      ['b', 'new'],
    ]);
    expect(database.get(bytes('a'), snapshot)?.toString()).toBe('old');
    expect(readAll(database, { snapshot })).toEqual([['a', 'old']]);
    database.releaseSnapshot(snapshot);
    expect(() => database.get(bytes('a'), snapshot)).toThrow(/snapshot/);
    await database.close();
  });

  it('flushes, lists live SST files, reports properties and statistics, compacts', async () => {
    const database = RocksDatabase.open(freshDirectory(), { statistics: true });
    for (let round = 0; round < 3; round++) {
      putAll(
        database,
        Array.from({ length: 200 }, (_unused, index) => [`key${index}`, `value ${round} ${index}`]),
      );
      await database.flush();
    }
    const files = database.liveFiles();
    // Three flushes made three L0 files; the background compaction may have merged some already.
    expect(files.length).toBeGreaterThanOrEqual(1);
    for (const file of files) {
      expect(file.name).toMatch(/^\d+\.sst$/);
      expect(statSync(join(database.path, file.name)).size).toBe(file.sizeBytes);
    }
    expect(Number(database.getProperty('rocksdb.estimate-num-keys'))).toBeGreaterThan(0);
    expect(database.getProperty('rocksdb.no-such-property')).toBeUndefined();
    expect(database.statistics()!.tickers['rocksdb.number.keys.written']).toBe(600);
    expect(database.approximateSize(bytes('key'), bytes('kez'))).toBeGreaterThan(0);
    await database.compactRange();
    expect(database.liveFiles().length).toBe(1);
    expect(database.get(bytes('key7'))?.toString()).toBe('value 2 7');
    await database.close();
  });

  it('memoryUsage: the block cache as configured and filled by reads, memtables holding the writes until a flush', async () => {
    const database = RocksDatabase.open(freshDirectory(), { blockCacheBytes: 8 << 20 });
    expect(database.memoryUsage().blockCacheCapacityBytes).toBe(8 << 20);
    // 2,000 values of 1 KiB go into the memtable.
    putAll(database, Array.from({ length: 2000 }, (_unused, index) => [`key${String(index).padStart(5, '0')}`, String(index).repeat(1024).slice(0, 1024)]));
    const written = database.memoryUsage();
    expect(written.memtableBytes).toBeGreaterThan(2000 * 1024);
    expect(written.memtableUnflushedBytes).toBeGreaterThan(2000 * 1024);
    await database.flush();
    const flushed = database.memoryUsage();
    expect(flushed.memtableUnflushedBytes).toBeLessThan(written.memtableUnflushedBytes / 10);
    // Reading every key loads the SST's blocks into the cache.
    expect(readAll(database, {}, 500)).toHaveLength(2000);
    const read = database.memoryUsage();
    expect(read.blockCacheBytes).toBeGreaterThan(flushed.blockCacheBytes);
    expect(read.blockCacheBytes).toBeLessThanOrEqual(8 << 20);
    expect(read.blockCachePinnedBytes).toBeLessThanOrEqual(read.blockCacheBytes);
    expect(read.tableReaderBytes).toBeGreaterThanOrEqual(0);
    // The C heap holds at least what the block cache took from it.
    const malloc = mallocInfo();
    expect(malloc.inUseBytes).toBeGreaterThan(read.blockCacheBytes);
    expect(malloc.freeBytes).toBeGreaterThanOrEqual(0);
    await database.close();
  });

  it('takes a checkpoint of hard links that opens as a database', async () => {
    const directory = freshDirectory();
    const database = RocksDatabase.open(join(directory, 'db'));
    putAll(database, [['a', '1']]);
    await database.flush();
    putAll(database, [['b', '2']]);
    await database.checkpoint(join(directory, 'checkpoint'));
    const sst = database.liveFiles()[0]!;
    // A hard link: the same inode as the live file.
    expect(statSync(join(directory, 'checkpoint', sst.name)).ino).toBe(statSync(join(directory, 'db', sst.name)).ino);
    await database.close();
    const copy = RocksDatabase.open(join(directory, 'checkpoint'));
    expect(readAll(copy)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    await copy.close();
    await expect(RocksDatabase.open(join(directory, 'db')).checkpoint(join(directory, 'checkpoint'))).rejects.toThrow(RocksDbError);
  });

  it('runs long calls off the main thread and close waits for them', async () => {
    const database = RocksDatabase.open(freshDirectory());
    putAll(
      database,
      Array.from({ length: 5000 }, (_unused, index) => [`key${index}`, 'x'.repeat(100)]),
    );
    const compaction = database.compactRange();
    // The main thread is free while the compaction runs on the thread pool.
    expect(database.get(bytes('key42'))?.toString()).toBe('x'.repeat(100));
    await database.close();
    await compaction;
    expect(database.isClosed).toBe(true);
  });

  it('fails with typed errors, never a crash', async () => {
    const directory = freshDirectory();
    const database = RocksDatabase.open(directory);
    let caught: unknown;
    try {
      RocksDatabase.open(directory);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RocksDbError);
    expect((caught as RocksDbError).code).toBe('LockHeld');
    await database.close();
    expect(() => database.get(bytes('a'))).toThrow(expect.objectContaining({ code: 'Closed' }));
    expect(() => RocksDatabase.open(join(directory, 'missing', 'deeper'), { createIfMissing: false })).toThrow(RocksDbError);
    expect(() => RocksDatabase.open(freshDirectory(), { compression: 'brotli' as never })).toThrow(/unknown compression/);
    expect(existsSync(join(directory, 'CURRENT'))).toBe(true);
    expect(readdirSync(directory).length).toBeGreaterThan(0);
  });
});
