// MvccStateStore.startAt on a real RocksDB: a store that replays epochs another store already wrote
// (a keyed share's worker taken over by the leader, executor/cluster/README.md "Keyed shares")
// reads the database as of its base epoch, point reads and scans alike, while its own replayed
// writes stand for the newer versions; once the replayed epochs are durable here it reads the
// latest versions again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import type { StateTableSchema } from '../../storage/state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
const schema: StateTableSchema = { tableId: 9, columnTypes: [type('int4'), type('text')], primaryKey: [0] };

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('MvccStateStore.startAt', () => {
  it('reads no version newer than the last epoch durable here until the replayed ones are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-start-at-'));
    directories.push(dir);
    // The node's history: epoch 1 writes keys 1-3, epochs 2 and 3 (handed over, written) change them.
    const writer = openRocksStateStore({ dir });
    const table = writer.table(schema);
    for (const key of [1, 2, 3]) table.insert([key, `v1-${key}`]);
    writer.commit(epochAt(1));
    table.insert([1, 'v2-1']);
    table.delete([2, 'v1-2']);
    writer.commit(epochAt(2));
    table.insert([4, 'v3-4']);
    writer.commit(epochAt(3));
    await writer.close();

    const replay = openRocksStateStore({ dir });
    replay.startAt(epochAt(1), epochAt(3));
    expect(replay.readCeiling).toBe(epochAt(1));
    const replayed = replay.table(schema);
    // As of epoch 1, not the newest versions.
    expect(replayed.get([1])).toEqual([1, 'v1-1']);
    expect(replayed.get([2])).toEqual([2, 'v1-2']);
    expect(replayed.get([4])).toBeUndefined();
    expect([...replayed.scan()]).toEqual([[1, 'v1-1'], [2, 'v1-2'], [3, 'v1-3']]);

    // Epoch 2 replayed: its writes over epoch 1's; durable here, the ceiling follows it.
    replayed.insert([1, 'v2-1']);
    replayed.delete([2, 'v1-2']);
    await replay.commitAsync(epochAt(2));
    expect(replay.readCeiling).toBe(epochAt(2));
    expect(replayed.get([4])).toBeUndefined();
    expect([...replayed.scan()]).toEqual([[1, 'v2-1'], [3, 'v1-3']]);

    // Epoch 3 (the last handed over) durable: the latest versions again.
    replayed.insert([4, 'v3-4']);
    await replay.commitAsync(epochAt(3));
    expect(replay.readCeiling).toBeUndefined();
    expect([...replayed.scan()]).toEqual([[1, 'v2-1'], [3, 'v1-3'], [4, 'v3-4']]);
    expect(replay.committedEpoch).toBe(epochAt(3));
    await replay.close();
  });
});
