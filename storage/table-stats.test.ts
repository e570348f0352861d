// tableStats(tableId, start, end): the bytes each table keeps in blob files, which approximateSize
// does not see (values of 256 bytes or more), and the entries its SST files hold (native
// table-stats-collector.h). The oracle for the bytes is the blob files on disk: each holds a
// 30-byte header, a 32-byte footer and per value a 32-byte record header followed by the key and
// the stored (ZSTD-compressed) value, so the tables' blob bytes plus those fixed parts add up exactly
// to the files' sizes, after a flush and again after a full compaction; for the entries, the rows
// written (one version each).
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { RocksDatabase } from './rocksdb.js';
import { WriteBatchBuilder } from './write-batch.js';

const BLOB_FILE_FIXED_BYTES = 30 + 32;
const BLOB_RECORD_HEADER_BYTES = 32;

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function key(tableId: number, index: number): Buffer {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32BE(tableId, 0);
  bytes.writeUInt32BE(index, 4);
  return bytes;
}

/** A deterministic value of `length` bytes that ZSTD cannot shrink (xorshift bytes). */
function noise(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = seed | 1;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[index] = state & 0xff;
  }
  return bytes;
}

function bounds(tableId: number): [Buffer, Buffer] {
  const lower = Buffer.alloc(4);
  lower.writeUInt32BE(tableId);
  const upper = Buffer.alloc(4);
  upper.writeUInt32BE(tableId + 1);
  return [lower, upper];
}

function blobBytes(database: RocksDatabase, tableId: number): number {
  return database.tableStats(tableId, ...bounds(tableId)).blobBytes;
}

function fileEntries(database: RocksDatabase, tableId: number): number {
  return database.tableStats(tableId, ...bounds(tableId)).fileEntries;
}

function blobFiles(directory: string): { files: number; bytes: number } {
  const names = readdirSync(directory).filter((name) => name.endsWith('.blob'));
  return { files: names.length, bytes: names.reduce((sum, name) => sum + statSync(join(directory, name)).size, 0) };
}

it('counts each table its blob records exactly (the blob files on disk) and its entries, small values no blob bytes', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-table-stats-'));
  directories.push(directory);
  const database = RocksDatabase.open(directory);
  try {
    const batch = new WriteBatchBuilder();
    let rawBytes7 = 0;
    let blobValues = 0;
    for (let index = 0; index < 2000; index++) {
      const large = noise(300 + ((index * 37) % 1700), index + 1);
      batch.put(key(7, index), large);
      rawBytes7 += 12 + large.length;
      batch.put(key(8, index), noise(100, index + 7)); // below 256 bytes: stays in the SST
      batch.put(key(9, index), Buffer.alloc(1000, index % 251)); // compressible: stored small
      blobValues += 2;
    }
    database.write(batch.view(), true);
    expect([blobBytes(database, 7), blobBytes(database, 8), blobBytes(database, 9)]).toEqual([0, 0, 0]); // still in the memtable
    expect([fileEntries(database, 7), fileEntries(database, 8), fileEntries(database, 9)]).toEqual([0, 0, 0]);
    expect(database.tableStats(7, ...bounds(7)).memtableEntries).toBeGreaterThan(0); // RocksDB's estimate
    await database.flush();
    const afterFlush = [blobBytes(database, 7), blobBytes(database, 8), blobBytes(database, 9)];
    expect([fileEntries(database, 7), fileEntries(database, 8), fileEntries(database, 9)]).toEqual([2000, 2000, 2000]);
    expect(database.tableStats(7, ...bounds(7)).memtableEntries).toBe(0);
    const onDisk = blobFiles(directory);
    expect(afterFlush[0]! + afterFlush[2]! + blobValues * BLOB_RECORD_HEADER_BYTES + onDisk.files * BLOB_FILE_FIXED_BYTES).toBe(onDisk.bytes);
    expect(afterFlush[0]).toBeGreaterThanOrEqual(rawBytes7); // noise does not compress
    expect(afterFlush[1]).toBe(0);
    expect(afterFlush[2]).toBeLessThan(2000 * (12 + 100)); // 1,000 equal bytes compress to a few dozen
    expect(afterFlush[2]).toBeGreaterThan(2000 * 12);

    await database.compactRange(); // rewrites every SST file and relocates every blob (full GC)
    const afterCompaction = blobFiles(directory);
    expect(blobBytes(database, 7) + blobBytes(database, 9) + blobValues * BLOB_RECORD_HEADER_BYTES + afterCompaction.files * BLOB_FILE_FIXED_BYTES).toBe(afterCompaction.bytes);
    expect(blobBytes(database, 7)).toBe(afterFlush[0]);
    expect([fileEntries(database, 7), fileEntries(database, 8), fileEntries(database, 9)]).toEqual([2000, 2000, 2000]);
  } finally {
    await database.close();
  }
});
