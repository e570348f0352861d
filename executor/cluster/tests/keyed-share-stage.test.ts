// A keyed share's seed sent ahead of its cut (keyed-share-stage.ts, remote-share-server.ts) over
// real loopback sockets to a real server writing a real RocksDB: the seed crosses in pieces of
// whole entries; the server writes it to a store of its own and names it; closing the link before
// a share takes it removes the store, as does the hold deadline; a client without the key stages
// nothing; an `open` naming no staged seed is refused. A store of SST files (`stage-files`) the
// leader exported crosses in pieces, is ingested and named with the export's epoch, the leader's
// copies removed; a kept share's gained vnodes so sent are kept as files by name; a link that ends
// mid-way, or sends more bytes than it named, leaves nothing.

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RocksDatabase } from '../../../storage/rocksdb.js';
import { forEachBatchEntry, WriteBatchBuilder } from '../../../storage/write-batch.js';
import { vnodeRange } from '../../../storage/mvcc-key.js';
import type { GainedVnodes } from '../../stream/parallel/protocol.js';
import { entryPieces, SeedStage, StoreStaging } from '../keyed-share-stage.js';
import { frame, newNonce, ownStoreRanges, parseAddress, proofOf, readFrames, SHARE_PROTOCOL_VERSION, type Handshake } from '../remote-share-link.js';
import { seedOf, useShareServer } from './support/share-server.js';

const KEY = randomBytes(32).toString('hex');
const rig = useShareServer('oxbow-keyed-share-stage-', KEY, 300);
const log = rig.log;

function stores(): string[] {
  const path = join(rig.dir, 'remote-keyed-shares');
  return existsSync(path) ? readdirSync(path) : [];
}

async function eventually(what: string, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`${what} within 10000 ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a keyed share's seed sent ahead", () => {
  it('cuts a seed into pieces of whole entries that join back to it', () => {
    const seed = seedOf(500);
    const pieces = entryPieces(seed, 1_000);
    expect(pieces.length).toBeGreaterThan(10);
    expect(Buffer.concat(pieces).equals(seed)).toBe(true);
    let entries = 0;
    for (const piece of pieces) {
      expect(piece.length <= 1_000 || pieces.length === 1).toBe(true);
      forEachBatchEntry(Buffer.from(piece), () => void entries++);
    }
    expect(entries).toBe(500);
    // An entry over the bound goes alone.
    expect(entryPieces(seed, 1).length).toBe(500);
    expect(entryPieces(new Uint8Array(0), 1_000)).toEqual([]);
  });

  it('is written and named by the node, and removed when its link closes before a share takes it', async () => {
    process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES'] = '2048';
    try {
      const stage = new SeedStage('b', rig.server.address, KEY, seedOf(2_000), 2_000);
      await stage.settled;
      expect([stage.state, stage.reason]).toEqual(['staged', undefined]);
      expect(stage.id).toMatch(/^[0-9a-f]{32}$/);
      expect(stores().length).toBe(1);
      expect(log.some((line) => line.includes("a keyed share's seed sent ahead is written"))).toBe(true);
      stage.close();
      await eventually('the staged store was not removed', () => stores().length === 0);
    } finally {
      delete process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES'];
    }
  });

  it('goes when no share takes it within the hold deadline', async () => {
    const stage = new SeedStage('b', rig.server.address, KEY, seedOf(10), 2_000);
    await stage.settled;
    expect(stage.state).toBe('staged');
    // 6 handshake deadlines of 300 ms: the node ends the link and removes the store.
    await eventually('the node kept a seed no share took', () => stage.state === 'failed' && stores().length === 0);
    expect(stage.reason).toMatch(/the link closed after the seed was staged/);
  });

  it('stages nothing for a client without the key', async () => {
    const stage = new SeedStage('b', rig.server.address, randomBytes(32).toString('hex'), seedOf(10), 2_000);
    await stage.settled;
    expect(stage.state).toBe('failed');
    expect(stores()).toEqual([]);
  });

  it("refuses an open that names no staged seed", async () => {
    const socket = connect(parseAddress(rig.server.address));
    const messages: Handshake[] = [];
    readFrames(socket, (message) => void messages.push(message as Handshake), () => socket.destroy());
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const nonce = newNonce();
    socket.write(frame({ t: 'hello', nonce, version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
    await eventually('no challenge', () => messages.length > 0);
    const challenge = messages[0] as Extract<Handshake, { t: 'challenge' }>;
    socket.write(frame({ t: 'proof', proof: proofOf(KEY, 'client', challenge.nonce) } satisfies Handshake));
    socket.write(frame({ t: 'open', data: { kind: 'keyed', seed: new Uint8Array(0), staged: 'ab'.repeat(16) } } satisfies Handshake));
    await closed;
    expect(log.some((line) => line.includes('no seed was sent ahead under that name'))).toBe(true);
    expect(stores()).toEqual([]);
  });

  /** A database holding rows of table 21 (keyed by vnode) in every vnode, and the vnodes a share owns (every fourth). */
  async function exported(): Promise<{ directory: string; files: Awaited<ReturnType<RocksDatabase['exportRanges']>>; own: GainedVnodes; done: () => void }> {
    const sourceDir = mkdtempSync(join(tmpdir(), 'oxbow-stage-files-'));
    const directory = join(sourceDir, 'export');
    mkdirSync(directory);
    const source = RocksDatabase.open(join(sourceDir, 'db'));
    const batch = new WriteBatchBuilder();
    for (let vnode = 0; vnode < 256; vnode++) {
      for (let row = 0; row < 40; row++) batch.put(Buffer.concat([vnodeRange(21, vnode, vnode + 1).lower, Buffer.from(`row-${row}`)]), Buffer.alloc(64, row));
    }
    source.write(batch.view());
    const vnodes = new Uint8Array(256);
    for (let vnode = 0; vnode < 256; vnode += 4) vnodes[vnode] = 1;
    const own: GainedVnodes = { vnodes, tables: [{ tableId: 21, purpose: 'groups', columnTypes: [{ name: 'int8' } as never], primaryKey: [0], vnodeColumns: [0] }], stateVnodes: new Map([[21, [0]]]) };
    const files = await source.exportRanges(directory, ownStoreRanges([21], own));
    await source.close();
    return { directory, files, own, done: () => rmSync(sourceDir, { recursive: true, force: true }) };
  }

  it('makes a store of SST files the leader sends, named with their epoch, and removes the leader copies once sent', async () => {
    process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES'] = '4096';
    const { directory, files, own, done } = await exported();
    try {
      expect(files.map((file) => [file.family, file.entries])).toEqual([['default', 64 * 40]]);
      log.length = 0;
      const stage = new SeedStage('b', rig.server.address, KEY, { files, directory, epoch: 77n, tables: [21], own }, 2_000);
      await stage.settled;
      expect([stage.state, stage.reason, stage.epoch, stage.ofFiles]).toEqual(['staged', undefined, 77n, true]);
      expect(stage.bytes).toBe(files[0]!.bytes);
      expect(existsSync(directory)).toBe(false);
      // One store, its files ingested and their directory gone.
      expect(stores().length).toBe(1);
      const made = log.find((line) => line.includes("a keyed share's store is made of 1 SST file the leader copied out of its database at epoch 77"));
      expect(made, log.join('\n')).toContain(`${files[0]!.bytes} bytes received`);
      stage.close();
      await eventually('the store of files was not removed', () => stores().length === 0);
    } finally {
      delete process.env['OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES'];
      done();
    }
  });

  it("keeps a kept share's gained vnodes sent as SST files by name, and removes them when their link ends untaken", async () => {
    const { directory, files, own, done } = await exported();
    try {
      log.length = 0;
      const stage = new SeedStage('b', rig.server.address, KEY, { files, directory, epoch: 78n, tables: [21], gain: own }, 2_000);
      await stage.settled;
      expect([stage.state, stage.reason, stage.epoch]).toEqual(['staged', undefined, 78n]);
      expect(existsSync(directory)).toBe(false);
      // No store: the files wait, whole, for the share's add-store.
      expect(stores()).toEqual([expect.stringMatching(/^\d+-gained$/)]);
      expect(readdirSync(join(rig.dir, 'remote-keyed-shares', stores()[0]!))).toEqual(['default.sst']);
      expect(log.join('\n')).toContain(`a keyed share's gained vnodes came as 1 SST file the leader copied out of its database at epoch 78 (${64 * 40} entries, ${files[0]!.bytes} bytes received`);
      stage.close();
      await eventually('the gained files no share took were not removed', () => stores().length === 0);
    } finally {
      done();
    }
  });

  /** A raw link past the handshake, its frames, and its close. */
  async function rawLink(): Promise<{ socket: ReturnType<typeof connect>; messages: Handshake[]; closed: Promise<void> }> {
    const socket = connect(parseAddress(rig.server.address));
    const messages: Handshake[] = [];
    readFrames(socket, (message) => void messages.push(message as Handshake), () => socket.destroy());
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(frame({ t: 'hello', nonce: newNonce(), version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
    await eventually('no challenge', () => messages.length > 0);
    const challenge = messages[0] as Extract<Handshake, { t: 'challenge' }>;
    socket.write(frame({ t: 'proof', proof: proofOf(KEY, 'client', challenge.nonce) } satisfies Handshake));
    return { socket, messages, closed };
  }

  it('leaves nothing of a store of files whose link ends mid-way or that sends more bytes than it named', async () => {
    const { own, done } = await exported();
    try {
      const cut = await rawLink();
      cut.socket.write(frame({ t: 'stage-files', epoch: '5', tables: [21], own, files: [{ family: 'default', bytes: 10_000, entries: 10 }] } satisfies Handshake));
      cut.socket.write(frame({ t: 'file', bytes: new Uint8Array(4_000) } satisfies Handshake));
      await eventually('the node never took the first piece', () => cut.messages.some((message) => message.t === 'seeding'));
      expect(stores().length).toBe(2);
      cut.socket.destroy();
      await eventually('the store and the files of a link that ended were not removed', () => stores().length === 0);

      log.length = 0;
      const over = await rawLink();
      over.socket.write(frame({ t: 'stage-files', epoch: '5', tables: [21], own, files: [{ family: 'default', bytes: 100, entries: 1 }] } satisfies Handshake));
      over.socket.write(frame({ t: 'file', bytes: new Uint8Array(101) } satisfies Handshake));
      await over.closed;
      expect(log.some((line) => line.includes('more bytes than the 100 of the SST files named')), log.join('\n')).toBe(true);
      await eventually('the store of a link that sent too much was not removed', () => stores().length === 0);

      // Files of an unknown family, or a table not keyed by vnode, are no stage-files: the link ends.
      for (const request of [
        { t: 'stage-files', epoch: '5', tables: [21], own, files: [{ family: 'other', bytes: 10, entries: 1 }] },
        { t: 'stage-files', epoch: '5', tables: [21], own: { ...own, stateVnodes: new Map() }, files: [{ family: 'default', bytes: 10, entries: 1 }] },
      ]) {
        const bad = await rawLink();
        bad.socket.write(frame(request));
        await bad.closed;
        expect(stores()).toEqual([]);
      }
    } finally {
      done();
    }
  });

  it("counts a store of files at its export's epoch, and leaves a share whose export failed to be read", async () => {
    const { directory, files, own, done } = await exported();
    try {
      const address = rig.server.address;
      const peers = [
        { node: 'b', address },
        { node: 'c', address },
        { node: 'k', address, keep: true },
      ];
      const staging = new StoreStaging(peers, ['b@1', 'c@2', 'k@3'], KEY, undefined, 2_000, 0);
      await staging.settled;
      expect(staging.checkpoints()).toEqual([undefined, undefined, undefined]);
      await staging.useFiles([
        { index: 0, stage: Promise.resolve(new SeedStage('b', address, KEY, { files, directory, epoch: 9n, tables: [21], own }, 2_000)) },
        { index: 1, stage: Promise.reject(new Error('no space left on device')) },
      ]);
      expect(staging.checkpoints()).toEqual([9n, undefined, undefined]);
      expect([staging.filesBytes(0), staging.filesBytes(1), staging.filesBytes(2), staging.lost()]).toEqual([files[0]!.bytes, 0, 0, false]);
      expect(staging.describe()).toBe("0 of 2 stores made from checkpoints, 1 of SST files the leader copied (node c's store of SST files: no space left on device)");
      expect(stores().length).toBe(1);
      staging.close();
      await eventually('the store of files no share took was not removed', () => stores().length === 0);
    } finally {
      done();
    }
  });
});
