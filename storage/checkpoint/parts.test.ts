// Another node's keyed share store taken into a database (parts.ts): each part's vnodes of its
// tables keyed by vnode read afterwards exactly as the part held them at the checkpoint's epoch
// (its later versions left out, the keys this database held there and the part did not gone);
// every other vnode, every other table and the store's records stay as they were; a part of an
// older view, owning no vnode or naming a table this database does not hold is left out.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import { openRocksStateStore } from '../rocks-state-store.js';
import { RocksDatabase } from '../rocksdb.js';
import type { StateTableSchema } from '../state-table.js';
import { VnodeHasher } from '../vnode-hash.js';
import type { ManifestPart } from './manifest.js';
import { partRanges, takeParts } from './parts.js';

const directories: string[] = [];
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-parts-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const keyed: StateTableSchema = { tableId: 21, columnTypes: [type('int8'), type('varchar')], primaryKey: [0], vnodeColumns: [0] };
const plain: StateTableSchema = { tableId: 22, columnTypes: [type('int8'), type('varchar')], primaryKey: [0] };
const epoch = (seconds: number) => epochFromMillis(Date.UTC(2026, 0, 1) + seconds * 1000);
const hasher = new VnodeHasher([type('int8')]);
const vnodeOf = (id: bigint) => hasher.of([id]);

function part(vnodes: readonly number[], tables?: readonly number[]): ManifestPart {
  return { node: 'node-b', incarnation: 'abc', view: 16400, owner: 2, vnodes, ...(tables === undefined ? {} : { tables }), epoch: epoch(3).toString(), files: [], totalBytes: 0 };
}

describe("another node's store taken into a database", () => {
  it("replaces the part's vnodes with its entries as of the checkpoint, nothing else", async () => {
    const nodeDir = freshDirectory();
    const leaderDir = freshDirectory();
    const node = openRocksStateStore({ dir: nodeDir });
    const leader = openRocksStateStore({ dir: leaderDir });
    const owned = Array.from({ length: 128 }, (_, i) => i * 2);
    const ownedSet = new Set(owned);
    try {
      const nodeTable = node.table(keyed);
      for (let id = 0n; id < 2000n; id++) nodeTable.insert([id, 'node e1']);
      await node.commit(epoch(1));
      for (let id = 0n; id < 2000n; id += 5n) nodeTable.delete([id, 'node e1']);
      for (let id = 7n; id < 2000n; id += 35n) nodeTable.insert([id, 'node e2']);
      await node.commit(epoch(2));
      // Past the checkpoint's epoch: the cut holds it, the restore must not.
      for (let id = 1n; id < 2000n; id += 2n) nodeTable.insert([id, 'node e3']);
      for (let id = 5000n; id < 5100n; id++) nodeTable.insert([id, 'node e3']);
      await node.commit(epoch(3));

      const leaderTable = leader.table(keyed);
      const other = leader.table(plain);
      for (let id = 0n; id < 2000n; id++) leaderTable.insert([id, 'leader']);
      // Keys the node never had: in its vnodes they go, elsewhere they stay.
      for (let id = 3000n; id < 3100n; id++) leaderTable.insert([id, 'leader only']);
      for (let id = 0n; id < 50n; id++) other.insert([id, 'other table']);
      await leader.commit(epoch(2));
    } finally {
      await leader.close();
    }

    const database = RocksDatabase.open(leaderDir);
    const workDir = join(freshDirectory(), 'parts');
    let taken;
    try {
      taken = await takeParts(database, [part(owned, [21]), part(owned), part([], [21]), part(owned, [21, 99])], epoch(2), workDir, (_, dir) => node.database.checkpoint(dir));
    } finally {
      await database.close();
      await node.close();
    }
    expect(taken.parts).toBe(1);
    expect(taken.skipped).toBe(3);
    expect(taken.ranges).toBe(partRanges(part(owned, [21])).length);
    expect(taken.ranges).toBe(128);
    expect(taken.entries).toBeGreaterThan(0);

    const expected = new Map<bigint, string>();
    for (let id = 0n; id < 2000n; id++) {
      if (!ownedSet.has(vnodeOf(id))) expected.set(id, 'leader');
      else if (id % 35n === 7n) expected.set(id, 'node e2');
      else if (id % 5n !== 0n) expected.set(id, 'node e1');
    }
    for (let id = 3000n; id < 3100n; id++) if (!ownedSet.has(vnodeOf(id))) expected.set(id, 'leader only');
    expect([...expected.values()].filter((value) => value === 'leader only').length).toBeGreaterThan(20);

    const reopened = openRocksStateStore({ dir: leaderDir });
    try {
      const read = new Map<bigint, string>();
      for (const row of reopened.table(keyed).scan() as Iterable<Row>) read.set(row[0] as bigint, row[1] as string);
      expect(read.size).toBe(expected.size);
      expect(read).toEqual(expected);
      const others: Row[] = [...(reopened.table(plain).scan() as Iterable<Row>)];
      expect(others).toHaveLength(50);
      expect(reopened.committedEpoch).toBe(epoch(2));
    } finally {
      await reopened.close();
    }
  });
});
