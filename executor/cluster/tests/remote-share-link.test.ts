// The remote shares' connection over real loopback sockets (remote-share-link.ts,
// remote-share-server.ts): frames cut anywhere by TCP arrive whole and in order, with the
// structured clone's types; the server answers a client that proves the peer key and cuts off one
// that does not, one that sends an oversized frame, one that sends garbage, and one that says
// nothing within the handshake deadline; the client can tell a server that does not hold the key.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SEED_CHUNK_BYTES, frame, MAX_FRAME_BYTES, MAX_SEED_CHUNK_BYTES, newNonce, openFrames, parseAddress, proofMatches, proofOf, readFrames, seedChunkBytes, type Handshake } from '../remote-share-link.js';
import { RemoteShareServer } from '../remote-share-server.js';

const KEY = randomBytes(32).toString('hex');
const OTHER_KEY = randomBytes(32).toString('hex');
let dir: string;
let server: RemoteShareServer;
const log: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oxbow-remote-share-'));
  server = new RemoteShareServer({
    host: '127.0.0.1',
    dataDir: dir,
    peerKey: () => KEY,
    workerScript: () => new URL('file:///nonexistent.js'),
    keyedWorkerScript: () => new URL('file:///nonexistent.js'),
    log: (line) => void log.push(line),
    handshakeTimeoutMs: 500,
  });
  await server.listen();
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A client socket on the server and the messages it receives; `closed` settles when the server ends it. */
async function client(): Promise<{ socket: Socket; messages: unknown[]; next: () => Promise<unknown>; closed: Promise<number> }> {
  const socket = connect(parseAddress(server.address));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const started = Date.now();
  const messages: unknown[] = [];
  const waiters: ((message: unknown) => void)[] = [];
  readFrames(
    socket,
    (message) => {
      const waiter = waiters.shift();
      if (waiter !== undefined) waiter(message);
      else messages.push(message);
    },
    () => socket.destroy(),
  );
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
  return {
    socket,
    messages,
    next: () => (messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise((resolve) => waiters.push(resolve))),
    closed,
  };
}

describe('remote share connections', () => {
  it('carry frames whole and in order however TCP cuts them', async () => {
    const received: unknown[] = [];
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    const echo = createServer((socket) =>
      readFrames(
        socket,
        (message) => {
          received.push(message);
          if (received.length === 3) done();
        },
        (error) => void received.push(error),
      ),
    );
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const port = (echo.address() as { port: number }).port;
    const socket = connect({ host: '127.0.0.1', port });
    const bytes = new Uint8Array(70_000).map((_, index) => index % 251);
    const messages = [{ t: 'commit', epoch: '123456789012345678901' }, { t: 'batch', bytes: bytes.buffer, length: 70_000, rows: 3, errors: ['x'] }, { t: 'ranges', ranges: [0, 10n, 20] }];
    const stream = Buffer.concat(messages.map((message) => frame(message)) as unknown as Uint8Array[]);
    // The first frame a byte at a time, the rest in one write.
    const first = frame(messages[0]).length;
    for (let at = 0; at < first; at++) {
      socket.write(stream.subarray(at, at + 1) as unknown as Uint8Array);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    socket.write(stream.subarray(first) as unknown as Uint8Array);
    await all;
    socket.destroy();
    echo.close();
    expect(received[0]).toEqual(messages[0]);
    const batch = received[1] as { bytes: ArrayBuffer; length: number };
    expect(batch.bytes).toBeInstanceOf(ArrayBuffer);
    expect(Buffer.from(batch.bytes).equals(Buffer.from(bytes))).toBe(true);
    expect(received[2]).toEqual({ t: 'ranges', ranges: [0, 10n, 20] });
  });

  it("cuts a keyed share's seed into frames of the bound at most, which join back to it", () => {
    const seed = new Uint8Array(5_500).map((_, index) => (index * 7) % 253);
    const frames = openFrames({ kind: 'keyed', seed, plan: { x: 1 } }, 1_000);
    expect(frames.length).toBe(6);
    const messages = frames.map((bytes) => {
      expect(bytes.readUInt32BE(0)).toBe(bytes.length - 4);
      return deserialize(bytes.subarray(4) as unknown as Uint8Array) as Handshake;
    });
    const pieces = messages.slice(0, -1).map((message) => (message.t === 'seed' ? message.bytes : new Uint8Array(0)));
    for (const piece of pieces) expect(piece.length).toBe(1_000);
    const open = messages[messages.length - 1]!;
    expect(open.t).toBe('open');
    const data = (open as { data: { seed: Uint8Array; plan: unknown } }).data;
    expect(data.plan).toEqual({ x: 1 });
    expect(Buffer.concat([...pieces, data.seed]).equals(Buffer.from(seed))).toBe(true);
    // A seed within the bound, and a share without one, open in one frame.
    expect(openFrames({ kind: 'keyed', seed: seed.subarray(0, 900) }, 1_000).length).toBe(1);
    expect(openFrames({ plan: 1 }, 1_000).length).toBe(1);
  });

  it("reads the seed's bound from OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES and refuses a value that is not one", () => {
    expect(seedChunkBytes(undefined)).toBe(64 * 1024 * 1024);
    expect(seedChunkBytes('')).toBe(DEFAULT_SEED_CHUNK_BYTES);
    expect(seedChunkBytes(' 2048 ')).toBe(2048);
    expect(seedChunkBytes(String(MAX_FRAME_BYTES - 1024))).toBe(MAX_SEED_CHUNK_BYTES);
    for (const bad of ['abc', '64MiB', '0', '-5', '1.5', '1e6', ' ', String(MAX_FRAME_BYTES - 1023), String(MAX_FRAME_BYTES)]) {
      expect(() => seedChunkBytes(bad), bad).toThrow(`OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: "${bad}" is not a whole number of bytes from 1 to ${MAX_FRAME_BYTES - 1024}`);
    }
  });

  it('answers a client holding the key, and the client can check the server holds it', async () => {
    const { socket, next, closed } = await client();
    const nonce = newNonce();
    socket.write(frame({ t: 'hello', nonce } satisfies Handshake));
    const challenge = (await next()) as Extract<Handshake, { t: 'challenge' }>;
    expect(challenge.t).toBe('challenge');
    expect(proofMatches(KEY, 'server', nonce, challenge.proof)).toBe(true);
    expect(proofMatches(OTHER_KEY, 'server', nonce, challenge.proof)).toBe(false);
    // The client's proof is not the server's: a reflected proof does not pass.
    expect(proofMatches(KEY, 'client', nonce, challenge.proof)).toBe(false);
    socket.write(frame({ t: 'proof', proof: proofOf(KEY, 'client', challenge.nonce) } satisfies Handshake));
    // Proved, then an open whose worker cannot start: the server ends the connection, saying why.
    socket.write(frame({ t: 'open', data: {} } satisfies Handshake));
    const lasted = await closed;
    expect(lasted).toBeLessThan(5000);
    expect(log.join('\n')).toMatch(/remote share connection from .* ended/);
  });

  it('cuts off a client that does not hold the key, before any share opens', async () => {
    log.length = 0;
    const { socket, next, closed } = await client();
    socket.write(frame({ t: 'hello', nonce: newNonce() } satisfies Handshake));
    const challenge = (await next()) as Extract<Handshake, { t: 'challenge' }>;
    socket.write(frame({ t: 'proof', proof: proofOf(OTHER_KEY, 'client', challenge.nonce) } satisfies Handshake));
    socket.write(frame({ t: 'open', data: {} } satisfies Handshake));
    await closed;
    expect(log.join('\n')).toMatch(/the peer did not prove it holds the cluster key/);
  });

  it('cuts off an oversized frame, garbage, and silence within the handshake deadline', async () => {
    log.length = 0;
    const oversized = await client();
    const head = Buffer.alloc(4);
    head.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    oversized.socket.write(head as unknown as Uint8Array);
    await oversized.closed;
    expect(log.join('\n')).toMatch(/over the \d+-byte bound/);

    const garbage = await client();
    garbage.socket.write(Buffer.from([0, 0, 0, 3, 0xff, 0xfe, 0xfd]) as unknown as Uint8Array);
    await garbage.closed;
    expect(log.join('\n')).toMatch(/does not deserialize|unexpected/);

    const silent = await client();
    const lasted = await silent.closed;
    expect(lasted).toBeGreaterThanOrEqual(400);
    expect(lasted).toBeLessThan(5000);
    expect(log.join('\n')).toMatch(/no share opened within the handshake deadline/);
  });
});
