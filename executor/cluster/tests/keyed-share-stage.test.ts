// A keyed share's seed sent ahead of its cut (keyed-share-stage.ts, remote-share-server.ts) over
// real loopback sockets to a real server writing a real RocksDB: the seed crosses in pieces of
// whole entries; the server writes it to a store of its own and names it; closing the link before
// a share takes it removes the store, as does the hold deadline; a client without the key stages
// nothing; an `open` naming no staged seed is refused.

import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { forEachBatchEntry } from '../../../storage/write-batch.js';
import { entryPieces, SeedStage } from '../keyed-share-stage.js';
import { frame, newNonce, parseAddress, proofOf, readFrames, SHARE_PROTOCOL_VERSION, type Handshake } from '../remote-share-link.js';
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
});
