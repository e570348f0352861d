// A node's keyed share store cut and uploaded for the leader's checkpoints (share-store-checkpoint.ts),
// on a real RocksDB and a folder object store: the part read at the checkpoint's epoch holds that
// epoch's versions even though the store runs ahead and its tables' watermarks would drop them
// (the cap), the versions no later checkpoint needs go once the cap moves on, files already sent
// are named again without being sent, and a file deleted from the store is sent again; a part
// names the vnodes its share owned at the checkpoint's epoch, not those of a cut after it. The
// leader's end takes a well-formed answer and refuses a malformed part, another node's, a refusal
// and silence, each with a clear reason.

import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../../../sql/epoch.js';
import { type } from '../../../sql/types.js';
import type { ManifestPart } from '../../../storage/checkpoint/manifest.js';
import { epochSuffix, tableLowerBound, tableUpperBound } from '../../../storage/mvcc-key.js';
import { openObjectStore } from '../../../storage/object-store/open-object-store.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { forEachPacked, RocksDatabase } from '../../../storage/rocksdb.js';
import { frame, newNonce, proofMatches, proofOf, readFrames, SHARE_PROTOCOL_VERSION, type Handshake } from '../remote-share-link.js';
import { askNodeParts, checkpointStores, newStoreIncarnation, ownedVnodes, ownerAt, type CheckpointedStore } from '../share-store-checkpoint.js';

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number): bigint => epochFromMillis(T0 + second * 1000);

/** The part's files copied out of the folder and opened read-only; table 7's values visible at `second`, by key. */
async function valuesAt(folder: string, part: ManifestPart, second: number, scratch: string): Promise<Map<number, string>> {
  mkdirSync(scratch, { recursive: true });
  for (const file of part.files) copyFileSync(join(folder, file.key), join(scratch, file.name));
  const database = RocksDatabase.open(scratch, { readOnly: true });
  const found = new Map<number, string>();
  try {
    const iterator = database.iterator({ lowerBound: tableLowerBound(7), upperBound: tableUpperBound(7), epochSuffix: epochSuffix(epochAt(second)) });
    iterator.seek(tableLowerBound(7));
    for (let packed = iterator.nextPacked(); packed !== null; packed = iterator.nextPacked()) {
      forEachPacked(packed, (buffer, _keyStart, _keyEnd, valueStart, valueEnd) => {
        const text = buffer.subarray(valueStart, valueEnd).toString('latin1');
        const match = /(\d+)@(\d+)/.exec(text);
        if (match !== null) found.set(Number(match[1]), match[0]);
      });
    }
    iterator.close();
  } finally {
    await database.close();
  }
  return found;
}

describe("a node's keyed share store in the leader's checkpoints", () => {
  it('keeps the versions each checkpoint needs, sends each file once, and again when it is gone', async () => {
    const work = mkdtempSync(join(tmpdir(), 'oxbow-share-store-checkpoint-'));
    directories.push(work);
    const folder = join(work, 'checkpoints');
    const objectStore = await openObjectStore(pathToFileURL(folder).href);
    // The tables' own retention is one second: without the cap a compaction at 30 s keeps only
    // the versions of 29 and 30.
    const state = openRocksStateStore({ dir: join(work, 'store'), retentionMs: 1000 });
    const table = state.table({ tableId: 7, columnTypes: [type('int4'), type('text')], primaryKey: [0] });
    state.database.capRetentionWatermarks(0n);
    const store: CheckpointedStore = { database: state.database, path: join(work, 'store'), incarnation: newStoreIncarnation(), uploaded: new Map(), view: 16400, owner: 2, vnodes: new Uint16Array(256).map((_, vnode) => vnode % 3), tables: [7], share: '5eed', committed: 0n };
    const write = async (from: number, to: number): Promise<void> => {
      for (let second = from; second <= to; second++) {
        // Odd keys skip every fifth second: a read then finds their version of the second before.
        for (let key = 0; key < 200; key++) if (second % 5 !== 0 || key % 2 === 0) table.insert([key, `${key}@${second}`]);
        state.commit(epochAt(second));
        store.committed = epochAt(second);
      }
      await state.database.flush();
      await state.compact();
    };
    const expected = (second: number): Map<number, string> => new Map(Array.from({ length: 200 }, (_, key) => [key, `${key}@${second % 5 === 0 && key % 2 === 1 ? second - 1 : second}`]));
    let sent = 0;
    const progress = (): void => void sent++;

    await write(1, 12);
    // The leader's checkpoint at 10: the store is at 12 already.
    const { parts: [first] } = await checkpointStores(objectStore, 'node-b', epochAt(10), [store], progress, () => false);
    expect(first!.vnodes).toEqual(ownedVnodes(store.vnodes, 2));
    expect(first!.vnodes.length).toBe(85);
    expect(first!.tables).toEqual([7]);
    expect(first!.share).toBe('5eed');
    expect(first!.epoch).toBe(epochAt(12).toString());
    expect(first!.files.every((file) => file.key.startsWith(`nodes/node-b/`))).toBe(true);
    expect(await valuesAt(folder, first!, 10, join(work, 'read-1'))).toEqual(expected(10));

    // The store runs on to 30 and compacts; the leader's next checkpoint is at 25.
    await write(13, 30);
    const { parts: [second] } = await checkpointStores(objectStore, 'node-b', epochAt(25), [store], progress, () => false);
    expect(await valuesAt(folder, second!, 25, join(work, 'read-2'))).toEqual(expected(25));
    expect(await valuesAt(folder, second!, 30, join(work, 'read-3'))).toEqual(expected(30));

    // Nothing written since: the SST files are named again, not sent; the small files are.
    sent = 0;
    const { parts: [third], uploadedFiles } = await checkpointStores(objectStore, 'node-b', epochAt(30), [store], progress, () => false);
    const shared = third!.files.filter((file) => file.key.includes('/sst/'));
    expect(shared.length).toBeGreaterThan(0);
    expect(shared.map((file) => file.key).every((key) => second!.files.some((file) => file.key === key))).toBe(true);
    expect(sent).toBe(third!.files.length - shared.length);
    expect(uploadedFiles).toBe(sent);

    // A file deleted from the object store (retention after a part that failed) is sent again.
    await objectStore.delete([shared[0]!.key]);
    sent = 0;
    const { parts: [fourth] } = await checkpointStores(objectStore, 'node-b', epochAt(30), [store], progress, () => false);
    expect(sent).toBe(third!.files.length - shared.length + 1);
    expect(await valuesAt(folder, fourth!, 30, join(work, 'read-4'))).toEqual(expected(30));

    // The cap moved to 30 with the last cut: a compaction now drops what no later checkpoint needs
    // (every version before the newest at or below 30), not the 40 seconds' worth.
    await write(31, 40);
    let versions = 0;
    const iterator = state.database.iterator({ lowerBound: tableLowerBound(7), upperBound: tableUpperBound(7) });
    iterator.seek(tableLowerBound(7));
    for (let packed = iterator.nextPacked(); packed !== null; packed = iterator.nextPacked()) forEachPacked(packed, () => void versions++);
    iterator.close();
    // Per key: its version at 30 (or 29) and those of 31..40 (odd keys skip 35 and 40).
    expect(versions).toBe(100 * 11 + 100 * 9);
    objectStore.close();
    await state.close();
  });

  it('names the vnodes the share owned at the checkpoint, not those of a remap after it', async () => {
    const work = mkdtempSync(join(tmpdir(), 'oxbow-share-store-checkpoint-'));
    directories.push(work);
    const objectStore = await openObjectStore(pathToFileURL(join(work, 'checkpoints')).href);
    const state = openRocksStateStore({ dir: join(work, 'store') });
    const table = state.table({ tableId: 7, columnTypes: [type('int4'), type('text')], primaryKey: [0] });
    const before = new Uint16Array(256).map((_, vnode) => vnode % 3);
    // A cut kept the share (owner 2, then 1) and gave it a fourth's vnodes more, after epoch 12.
    const after = new Uint16Array(256).map((_, vnode) => (vnode % 3 === 2 || vnode % 4 === 0 ? 1 : 0));
    const store: CheckpointedStore = { database: state.database, path: join(work, 'store'), incarnation: newStoreIncarnation(), uploaded: new Map(), view: 16400, owner: 1, vnodes: after, tables: [7], share: '5eed', committed: 0n, remaps: [{ until: epochAt(12), owner: 2, vnodes: before }] };
    for (let second = 1; second <= 14; second++) {
      table.insert([second, `v${second}`]);
      state.commit(epochAt(second));
      store.committed = epochAt(second);
    }
    expect(ownerAt(store, epochAt(12)).owner).toBe(2);
    expect(ownerAt(store, epochAt(13)).owner).toBe(1);
    const { parts: [atTwelve] } = await checkpointStores(objectStore, 'node-b', epochAt(12), [store], () => undefined, () => false);
    expect(atTwelve!.owner).toBe(2);
    expect(atTwelve!.vnodes).toEqual(ownedVnodes(before, 2));
    const { parts: [atThirteen] } = await checkpointStores(objectStore, 'node-b', epochAt(13), [store], () => undefined, () => false);
    expect(atThirteen!.owner).toBe(1);
    expect(atThirteen!.vnodes).toEqual(ownedVnodes(after, 1));
    expect(atThirteen!.vnodes.length).toBeGreaterThan(atTwelve!.vnodes.length);
    // No later checkpoint is before the remap: it is forgotten.
    expect(store.remaps).toEqual([]);
    objectStore.close();
    await state.close();
  });

  it("refuses a node's malformed answer to the leader's request, with the reason", async () => {
    const key = 'ab'.repeat(32);
    const good: ManifestPart = {
      node: 'node-b',
      incarnation: 'f00d',
      view: 16400,
      owner: 2,
      vnodes: [2, 5],
      epoch: '117746041759924224',
      files: [{ name: 'CURRENT', key: 'nodes/node-b/files/00117746041759924224/f00d/CURRENT', sizeBytes: 16, sha256: 'a'.repeat(64) }],
      totalBytes: 16,
    };
    // A node that proves the key, then answers `checkpoint-stores` with what the test chose (or nothing).
    const answers: (Handshake | undefined)[] = [];
    const server = createServer((socket: Socket) => {
      let nonce: Uint8Array | undefined;
      socket.on('error', () => undefined);
      readFrames(socket, (message) => {
        const received = message as Handshake;
        if (received.t === 'hello') {
          nonce = newNonce();
          socket.write(frame({ t: 'challenge', nonce, proof: proofOf(key, 'server', received.nonce), version: SHARE_PROTOCOL_VERSION }));
        } else if (received.t === 'proof') {
          if (!proofMatches(key, 'client', nonce!, received.proof)) socket.destroy();
        } else if (received.t === 'checkpoint-stores') {
          const answer = answers.shift();
          if (answer !== undefined) socket.write(frame(answer));
        }
      }, () => socket.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ask = (answer: Handshake | undefined) => {
      answers.push(answer);
      return askNodeParts('node-b', address, key, 117746041759924224n, 500);
    };
    try {
      expect(await ask({ t: 'checkpointed', parts: [good] })).toEqual([good]);
      const bad: [unknown, RegExp][] = [
        [{ ...good, files: [{ ...good.files[0]!, key: 'sst/x/CURRENT' }] }, /outside its folder/],
        [{ ...good, files: [{ ...good.files[0]!, name: 'OPTIONS-1' }] }, /names no CURRENT file/],
        [{ ...good, vnodes: [256] }, /vnodes outside 0-255/],
        [{ ...good, tables: [9, 7] }, /tables out of order/],
        [{ ...good, share: '../x' }, /names its share wrongly/],
        [{ ...good, node: '../etc' }, /not a node id/],
        [{ ...good, files: [{ ...good.files[0]!, sha256: 'nope' }] }, /size and SHA-256/],
        ['garbage', /not an object/],
        [{ ...good, node: 'node-c', files: [{ ...good.files[0]!, key: 'nodes/node-c/CURRENT' }] }, /a part of node node-c/],
      ];
      for (const [part, reason] of bad) await expect(ask({ t: 'checkpointed', parts: [part as ManifestPart] })).rejects.toThrow(reason);
      await expect(ask({ t: 'refused', reason: 'the object store is unreachable' })).rejects.toThrow(/refused: the object store is unreachable/);
      await expect(ask({ t: 'staged', id: 'x' })).rejects.toThrow(/an unexpected staged frame/);
      await expect(ask(undefined)).rejects.toThrow(/no answer within 500 ms/);
    } finally {
      server.close();
    }
  });
});
