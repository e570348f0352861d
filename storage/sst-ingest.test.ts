// Key ranges copied between databases as SST files (native/src/sst-files.h; DESIGN.md §2, "Vnode
// ranges as files"): `exportRanges` writes exactly the entries of its ranges as of one moment, per
// column family; `ingest` makes them the newest versions of their keys in another database (over
// older puts, deletes and range deletions there), moves the files in, survives a reopen, and
// leaves every key outside the ranges as it was. Each expectation is a model kept here beside the
// databases. An export as of a snapshot the caller names sees nothing written after it, though
// the snapshot is released while the export runs. A state table keyed by vnode reads, after an
// ingest of some vnodes' ranges, those vnodes' rows as the source held them.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { epochSuffix, vnodeRange } from './mvcc-key.js';
import { openRocksStateStore } from './rocks-state-store.js';
import { forEachPacked, RocksDatabase } from './rocksdb.js';
import type { StateTableSchema } from './state-table.js';
import { VnodeHasher, VNODE_COUNT } from './vnode-hash.js';
import { WriteBatchBuilder } from './write-batch.js';

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-sst-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function key(table: number, tail: readonly number[]): Buffer {
  const bytes = Buffer.alloc(4 + tail.length);
  bytes.writeUInt32BE(table >>> 0, 0);
  Buffer.from(tail).copy(bytes, 4);
  return bytes;
}

function entries(database: RocksDatabase): Map<string, string> {
  const out = new Map<string, string>();
  const iterator = database.iterator({});
  try {
    for (let packed = iterator.nextPacked(64); packed !== null; packed = iterator.nextPacked(64)) {
      forEachPacked(packed, (buffer, keyStart, keyEnd, valueStart, valueEnd) => {
        out.set(buffer.toString('hex', keyStart, keyEnd), buffer.toString('hex', valueStart, valueEnd));
      });
    }
  } finally {
    iterator.close();
  }
  return out;
}

const within = (hex: string, ranges: readonly { lower: Buffer; upper: Buffer }[]): boolean =>
  ranges.some((range) => hex >= range.lower.toString('hex') && hex < range.upper.toString('hex'));

describe('SST export and ingest', () => {
  it('copies exactly the ranges, newest over what the target held, and survives a reopen', async () => {
    const sourceDir = freshDirectory();
    const targetDir = freshDirectory();
    const source = RocksDatabase.open(sourceDir);
    let target = RocksDatabase.open(targetDir);
    const records = 7;
    expect(source.markRecordsTable(records)).toBe(true);
    expect(target.markRecordsTable(records)).toBe(true);
    const sourceBatch = new WriteBatchBuilder();
    for (const table of [3, 4, records]) {
      for (let index = 0; index < 200; index++) sourceBatch.put(key(table, [index >> 4, index & 15]), Buffer.from(`s${table}:${index}`));
    }
    source.write(sourceBatch.view());
    await source.flush();
    // A later write the export must see too (memtable and files both).
    const later = new WriteBatchBuilder();
    for (let index = 0; index < 200; index += 3) later.put(key(3, [index >> 4, index & 15]), Buffer.from(`s3-later:${index}`));
    later.delete(key(3, [1, 1]));
    source.write(later.view());

    // The target holds older versions of some keys, deletes of others, keys outside the ranges.
    const targetBatch = new WriteBatchBuilder();
    for (const table of [3, 4, records]) {
      for (let index = 0; index < 200; index += 2) targetBatch.put(key(table, [index >> 4, index & 15]), Buffer.from(`t${table}:${index}`));
    }
    targetBatch.put(key(3, [1, 1]), Buffer.from('stale, deleted in the source'));
    targetBatch.put(key(3, [2, 200]), Buffer.from('a key only the target has'));
    target.write(targetBatch.view());
    await target.flush();
    const ranges = [
      { lower: key(3, [1]), upper: key(3, [4]) },
      { lower: key(3, [9]), upper: key(4, [2]) },
      { lower: key(records, [0]), upper: key(records, [5]) },
    ];
    // The target deletes its keys in the ranges first, as a node drops vnodes before it takes them.
    for (const range of ranges) target.deleteRange(range.lower, range.upper);

    const sourceEntries = entries(source);
    const before = entries(target);
    const exportDir = join(freshDirectory(), 'export');
    mkdirSync(exportDir);
    const files = await source.exportRanges(exportDir, ranges);
    expect(files.map((file) => file.family).sort()).toEqual(['default', 'records']);
    const expected = new Map<string, string>();
    for (const [hex, value] of before) if (!within(hex, ranges)) expected.set(hex, value);
    let inRanges = 0;
    for (const [hex, value] of sourceEntries) {
      if (!within(hex, ranges)) continue;
      expected.set(hex, value);
      inRanges++;
    }
    expect(inRanges).toBeGreaterThan(100);
    expect(files.reduce((sum, file) => sum + file.entries, 0)).toBe(inRanges);
    for (const file of files) expect(file.bytes).toBeGreaterThan(0);

    await target.ingest(files);
    for (const file of files) expect(existsSync(file.path)).toBe(false);
    const sorted = (map: Map<string, string>) => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    expect(sorted(entries(target))).toEqual(sorted(expected));
    expect(target.get(key(3, [1, 1]))).toBeUndefined();
    expect(target.get(key(3, [2, 200]))).toBeUndefined();
    expect(target.get(key(3, [0, 0]))?.toString()).toBe('t3:0');
    expect(target.get(key(3, [2, 4]))?.toString()).toBe('s3-later:36');
    expect(target.get(key(3, [2, 3]))?.toString()).toBe('s3:35');

    // A write after the ingest is newer than it.
    const after = new WriteBatchBuilder();
    after.put(key(3, [2, 3]), Buffer.from('after'));
    target.write(after.view());
    expect(target.get(key(3, [2, 3]))?.toString()).toBe('after');
    expected.set(key(3, [2, 3]).toString('hex'), Buffer.from('after').toString('hex'));
    await source.close();
    await target.close();
    target = RocksDatabase.open(targetDir);
    expect(sorted(entries(target))).toEqual(sorted(expected));
    await target.close();
  });

  it('writes no file for ranges with no entry, and refuses bad ranges and files', async () => {
    const database = RocksDatabase.open(freshDirectory());
    expect(database.markRecordsTable(7)).toBe(true);
    const batch = new WriteBatchBuilder();
    batch.put(key(3, [1]), Buffer.from('x'));
    database.write(batch.view());
    const exportDir = freshDirectory();
    expect(await database.exportRanges(exportDir, [{ lower: key(5, []), upper: key(6, []) }])).toEqual([]);
    await expect(database.exportRanges(exportDir, [{ lower: key(4, []), upper: key(5, []) }, { lower: key(3, []), upper: key(4, []) }])).rejects.toThrow(/not sorted/);
    await expect(database.exportRanges(exportDir, [{ lower: key(4, []), upper: key(4, []) }])).rejects.toThrow(/not below/);
    await expect(database.exportRanges(exportDir, [{ lower: key(6, []), upper: key(8, []) }])).rejects.toThrow(/spans the main and the records family/);
    await expect(database.exportRanges(join(exportDir, 'missing'), [{ lower: key(3, []), upper: key(4, []) }])).rejects.toThrow();
    await expect(database.ingest([{ path: join(exportDir, 'none.sst'), family: 'default' }])).rejects.toThrow();
    await expect(database.ingest([{ path: join(exportDir, 'none.sst'), family: 'other' as 'default' }])).rejects.toThrow(/unknown column family/);
    expect(database.get(key(3, [1]))?.toString()).toBe('x');
    await database.close();
  });

  it('exports as of a snapshot given, held while the export runs though released at once', async () => {
    const database = RocksDatabase.open(freshDirectory());
    const before = new Map<string, string>();
    const batch = new WriteBatchBuilder();
    for (let i = 0; i < 20_000; i++) {
      const k = key(3, [i >> 8, i & 0xff]);
      batch.put(k, Buffer.from(`v${i}`));
      before.set(k.toString('hex'), Buffer.from(`v${i}`).toString('hex'));
    }
    database.write(batch.view());
    const snapshot = database.snapshot();
    // After the snapshot: a put, an overwrite, a delete and a range delete, none of which the export may see.
    const after = new WriteBatchBuilder();
    after.put(key(3, [200, 0]), Buffer.from('later'));
    after.put(key(3, [0, 1]), Buffer.from('changed'));
    after.delete(key(3, [0, 2]));
    after.deleteRange(key(3, [10]), key(3, [20]));
    database.write(after.view());
    const exportDir = freshDirectory();
    const exported = database.exportRanges(exportDir, [{ lower: key(3, []), upper: key(4, []) }], snapshot);
    // Released while the export may still read it: it is freed when the export is done.
    database.releaseSnapshot(snapshot);
    const files = await exported;
    expect(files.map((file) => [file.family, file.entries])).toEqual([['default', 20_000]]);
    const copy = RocksDatabase.open(freshDirectory());
    await copy.ingest(files);
    const sorted = (map: Map<string, string>) => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    expect(sorted(entries(copy))).toEqual(sorted(before));
    // Without a snapshot the export reads the database as it is when it runs.
    const nowDir = freshDirectory();
    const now = await database.exportRanges(nowDir, [{ lower: key(3, []), upper: key(4, []) }]);
    expect(now[0]!.entries).toBe(20_000 + 1 - 1 - 10 * 256);
    // A released snapshot cannot be named again.
    await expect(database.exportRanges(freshDirectory(), [{ lower: key(3, []), upper: key(4, []) }], snapshot)).rejects.toThrow(/unknown or released snapshot/);
    await copy.close();
    await database.close();
  });

  it('leaves out the versions past a newest epoch, never the store records nor the records family', async () => {
    const database = RocksDatabase.open(freshDirectory());
    expect(database.markRecordsTable(7)).toBe(true);
    const versioned = (table: number, tail: readonly number[], epoch: bigint) => Buffer.concat([key(table, tail), epochSuffix(epoch)]);
    const batch = new WriteBatchBuilder();
    const expected: string[] = [];
    for (let i = 0; i < 50; i++) {
      for (const epoch of [10n, 20n, 21n, 30n]) {
        const k = versioned(3, [0, i], epoch);
        batch.put(k, Buffer.from(`v${i}@${epoch}`));
        if (epoch <= 20n) expected.push(k.toString('hex'));
      }
    }
    // The records family and the store's records (table 0xFFFFFFFF) are not filtered: their keys
    // need not end with an epoch.
    const record = versioned(7, [1], 99n);
    batch.put(record, Buffer.from('records family'));
    const storeRecord = key(0xffffffff, [0x65]);
    batch.put(storeRecord, Buffer.from('store record'));
    database.write(batch.view());
    const files = await database.exportRanges(
      freshDirectory(),
      [
        { lower: key(3, []), upper: key(4, []) },
        { lower: key(7, []), upper: key(8, []) },
        { lower: key(0xffffffff, []), upper: Buffer.alloc(12, 0xff) },
      ],
      undefined,
      20n,
    );
    const copy = RocksDatabase.open(freshDirectory());
    await copy.ingest(files);
    const copied = [...entries(copy).keys()].sort();
    const unfiltered = [...entries(database).keys()].filter((hex) => !hex.startsWith('00000003'));
    expect(unfiltered).toContain(record.toString('hex'));
    expect(unfiltered).toContain(storeRecord.toString('hex'));
    expect(copied).toEqual([...expected, ...unfiltered].sort());
    expect(copy.get(versioned(3, [0, 4], 20n))?.toString()).toBe('v4@20');
    expect(copy.get(versioned(3, [0, 4], 21n))).toBeUndefined();
    await expect(database.exportRanges(freshDirectory(), [{ lower: key(3, []), upper: key(4, []) }], undefined, -1n)).rejects.toThrow(/64 bits/);
    await copy.close();
    await database.close();
  });

  it('moves vnodes of a state table keyed by vnode into another store', async () => {
    const schema: StateTableSchema = { tableId: 21, columnTypes: [type('int8'), type('varchar')], primaryKey: [0], vnodeColumns: [0] };
    const epoch = (seconds: number) => epochFromMillis(Date.UTC(2026, 0, 1) + seconds * 1000);
    const sourceDir = freshDirectory();
    const targetDir = freshDirectory();
    const source = openRocksStateStore({ dir: sourceDir });
    const target = openRocksStateStore({ dir: targetDir });
    try {
      const sourceTable = source.table(schema);
      const targetTable = target.table(schema);
      const rows: Row[] = [];
      for (let id = 0n; id < 2000n; id++) rows.push([id, `source ${id}`]);
      for (const row of rows) sourceTable.insert(row);
      await source.commit(epoch(1));
      for (let id = 0n; id < 2000n; id += 5n) sourceTable.delete([id, `source ${id}`]);
      await source.commit(epoch(2));
      // The target owned every vnode with older rows; it gives up and takes back the even vnodes.
      for (const row of rows) targetTable.insert([row[0], 'target']);
      await target.commit(epoch(1));
      const hasher = new VnodeHasher([type('int8')]);
      const vnodeOf = (row: Row) => hasher.of([row[0]]);
      const moved = (vnode: number) => vnode % 2 === 0;
      const ranges: { lower: Buffer; upper: Buffer }[] = [];
      for (let vnode = 0; vnode < VNODE_COUNT; vnode += 2) ranges.push(vnodeRange(schema.tableId, vnode, vnode + 1));
      for (const range of ranges) target.database.deleteRange(range.lower, range.upper);
      const exportDir = freshDirectory();
      const files = await source.database.exportRanges(exportDir, ranges);
      expect(files).toHaveLength(1);
      await target.database.ingest(files);
      target.rowsAddedElsewhere();
      const expected = new Map<bigint, string>();
      for (const row of rows) {
        const id = row[0] as bigint;
        if (!moved(vnodeOf(row))) expected.set(id, 'target');
        else if (id % 5n !== 0n) expected.set(id, `source ${id}`);
      }
      const read = new Map<bigint, string>();
      for (const row of targetTable.scan()) read.set(row[0] as bigint, row[1] as string);
      expect(read.size).toBe(expected.size);
      expect(read).toEqual(expected);
      expect(targetTable.get([4n])).toEqual(expected.has(4n) ? [4n, expected.get(4n)] : undefined);
    } finally {
      await source.close();
      await target.close();
    }
  });
});
