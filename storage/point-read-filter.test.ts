// A point read of a large SST loads one small filter partition, not the file's whole bloom filter.
// With one filter per file, a file of ~800k keys has a ~2 MB filter: larger than one shard of the
// 64 MiB block cache (64 shards of 1 MiB), so it was never kept and every point read read it again
// (13.7 ms per read at 3M keys instead of 0.03 ms; the join view's slow INSERT, BENCHMARKS.md). The
// tickers count what the block cache took in: here, after warm-up, no filter bytes at all per read
// where the unpartitioned filter took the whole filter (megabytes) every time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RocksDatabase } from './rocksdb.js';

const KEYS = 800_000;

/** An MVCC-shaped key: table id, vnode, an 8-byte key, the 8-byte inverted epoch (the prefix extractor drops the last 8 bytes). */
function mvccKey(index: number, epoch: number): Buffer {
  const key = Buffer.alloc(21);
  key.writeUInt32BE(16390, 0);
  key[4] = index % 256;
  key.writeBigUInt64BE(BigInt(index) * 7919n, 5);
  key.writeBigUInt64BE(0xffffffffffffn - BigInt(epoch), 13);
  return key;
}

/** A packed batch of puts (write-batch.ts's layout: [u8 op][u32le key length][key][u32le value length][value]), written in place. */
function packedPuts(from: number, to: number): Buffer {
  const entryBytes = 1 + 4 + 21 + 4 + 24;
  const packed = Buffer.alloc((to - from) * entryBytes);
  let at = 0;
  for (let index = from; index < to; index++) {
    packed[at] = 1;
    packed.writeUInt32LE(21, at + 1);
    mvccKey(index, 5).copy(packed, at + 5);
    packed.writeUInt32LE(24, at + 26);
    packed.fill(index % 251, at + 30, at + 54);
    at += entryBytes;
  }
  return packed;
}

describe('point reads of a large SST file', () => {
  it('load a filter partition, not the whole filter, and keep it cached', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'oxbow-filter-'));
    const database = RocksDatabase.open(directory, { statistics: true, blockCacheBytes: 64 << 20 });
    try {
      for (let from = 0; from < KEYS; from += 200_000) database.write(packedPuts(from, Math.min(KEYS, from + 200_000)));
      await database.compactRange();
      const out = Buffer.alloc(256);
      const read = (round: number) => {
        const index = (round * 104_729) % KEYS;
        expect(database.getLatestVersionInto(mvccKey(index, 9), out), `key ${index}`).toBe(24);
      };
      for (let round = 0; round < 200; round++) read(round);
      const ticker = (name: string) => database.statistics()!.tickers[name] ?? 0;
      const filterBytesBefore = ticker('rocksdb.block.cache.filter.bytes.insert');
      const filterMissesBefore = ticker('rocksdb.block.cache.filter.miss');
      for (let round = 0; round < 200; round++) read(round);
      // The same keys again: every filter partition they need is cached (not the whole ~2 MB filter each time).
      expect(ticker('rocksdb.block.cache.filter.miss') - filterMissesBefore).toBe(0);
      expect(ticker('rocksdb.block.cache.filter.bytes.insert') - filterBytesBefore).toBe(0);
    } finally {
      await database.close();
      rmSync(directory, { recursive: true, force: true });
    }
  }, 60_000);
});
