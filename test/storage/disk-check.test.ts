// The disk reserve check (storage/rocks-backend.ts) reuses its last statfs figure only far from
// full: once the free space is within four reserves of the edge, every commit asks the disk again,
// so a disk filled by someone else fails the very next commit with 53100 and nothing is lost.
// Mounting the tmpfs needs root, which the project's test machines are (as faults.test.ts).
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqlError } from '../../sql/errors.js';
import { epochFromMillis } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import type { StateTableSchema } from '../../storage/state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
const schema: StateTableSchema = { tableId: 5, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const MIB = 1024 * 1024;

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

/** Writes a file of zeros into `directory` until `leaveBytes` (about) are free on its disk. */
function fillUntil(directory: string, name: string, leaveBytes: number): void {
  const stats = statfsSync(directory);
  const free = stats.bavail * stats.bsize;
  const descriptor = openSync(join(directory, name), 'w');
  const chunk = Buffer.alloc(MIB);
  for (let left = free - leaveBytes; left > 0; left -= chunk.length) writeSync(descriptor, chunk, 0, Math.min(chunk.length, left));
  closeSync(descriptor);
}

describe('the disk reserve check', () => {
  it('near the reserve, every commit asks the disk: one filled by another process fails the next commit with 53100', async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'oxbow-disk-check-'));
    cleanups.push(() => rmSync(mountPoint, { recursive: true, force: true }));
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mountPoint], { encoding: 'utf8' });
    expect(mount.status, `mounting a tmpfs needs root: ${mount.stderr}`).toBe(0);
    cleanups.push(() => spawnSync('umount', ['-l', mountPoint]));
    // 1 MiB memtables: a reserve of 4 MiB; a statfs figure is reused only above 16 MiB free.
    const store = openRocksStateStore({ dir: join(mountPoint, 'state'), rocksdb: { writeBufferBytes: MIB, compression: 'none', bottommostCompression: 'none' } });
    try {
      const table = store.table(schema);
      table.insert([1, 'one']);
      store.commit(epochAt(1));
      // 10 MiB free: above the reserve, within four of it. After the figure's age limit (1 s) the
      // next commit takes a new figure, which is below the margin.
      fillUntil(mountPoint, 'filler-1', 10 * MIB);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      table.insert([2, 'two']);
      await store.commitAsync(epochAt(2));
      // Another process leaves 2 MiB, under the reserve: the very next commit is refused.
      fillUntil(mountPoint, 'filler-2', 2 * MIB);
      table.insert([3, 'three']);
      let failure: unknown;
      try {
        await store.commitAsync(epochAt(3));
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(SqlError);
      expect((failure as SqlError).code).toBe('53100');
      expect((failure as SqlError).message).toMatch(/nearly full/);
      // Nothing was sealed: the store takes commits again once there is room.
      rmSync(join(mountPoint, 'filler-2'));
      await store.commitAsync(epochAt(4));
      expect(store.committedEpoch).toBe(epochAt(4));
      expect(table.get([3])).toEqual([3, 'three']);
      expect(table.get([1])).toEqual([1, 'one']);
    } finally {
      await store.close();
    }
  });
});
