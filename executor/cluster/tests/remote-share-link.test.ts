// The remote shares' connection over real loopback sockets (remote-share-link.ts,
// remote-share-server.ts): frames cut anywhere by TCP arrive whole and in order, with the
// structured clone's types; the server answers a client that proves the peer key and cuts off one
// that does not, one that sends an oversized frame, one that sends garbage, and one that says
// nothing within the handshake deadline; the client can tell a server that does not hold the key.
// A keyed share's seed sent at `open`: frames of whole entries; the server says `seeding` for each
// piece received and written and `seeded` once its worker started; the leader's link keeps a node
// that makes progress on its seed past the answer deadline, and gives up one that stops.

import { randomBytes } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { deserialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { forEachBatchEntry } from '../../../storage/write-batch.js';
import {
  DEFAULT_SEED_CHUNK_BYTES,
  formatAddress,
  frame,
  isGainedVnodes,
  isStagedFiles,
  linkLate,
  MAX_FRAME_BYTES,
  MAX_SEED_CHUNK_BYTES,
  newNonce,
  openFrames,
  openShareLink,
  parseAddress,
  proofMatches,
  proofOf,
  readFrames,
  restartDeadlines,
  seedChunkBytes,
  SHARE_PROTOCOL_VERSION,
  shareProtocolVersion,
  wholeEntryPieces,
  type Handshake,
} from '../remote-share-link.js';
import { seedWriteDelayMs } from '../remote-share-server.js';
import { seedOf, useShareServer } from './support/share-server.js';

const KEY = randomBytes(32).toString('hex');
const OTHER_KEY = randomBytes(32).toString('hex');
const rig = useShareServer('oxbow-remote-share-', KEY, 500);
const log = rig.log;

/** A client socket on the server and the messages it receives; `closed` settles when the server ends it. */
async function client(): Promise<{ socket: Socket; messages: unknown[]; next: () => Promise<unknown>; closed: Promise<number> }> {
  const socket = connect(parseAddress(rig.server.address));
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

  it("cuts a keyed share's seed into frames of whole entries of the bound at most, which join back to it", () => {
    const seed = seedOf(300);
    const frames = openFrames({ kind: 'keyed', seed, plan: { x: 1 } }, 1_000);
    expect(frames.length).toBeGreaterThan(5);
    const messages = frames.map((bytes) => {
      expect(bytes.readUInt32BE(0)).toBe(bytes.length - 4);
      return deserialize(bytes.subarray(4) as unknown as Uint8Array) as Handshake;
    });
    const pieces = messages.slice(0, -1).map((message) => (message.t === 'seed' ? message.bytes : new Uint8Array(0)));
    const open = messages[messages.length - 1]!;
    expect(open.t).toBe('open');
    const data = (open as { data: { seed: Uint8Array; plan: unknown } }).data;
    expect(data.plan).toEqual({ x: 1 });
    let entries = 0;
    for (const piece of [...pieces, data.seed]) {
      expect(piece.length).toBeLessThanOrEqual(1_000);
      forEachBatchEntry(Buffer.from(piece), () => void entries++);
    }
    expect(entries).toBe(300);
    expect(Buffer.concat([...pieces, data.seed]).equals(seed)).toBe(true);
    // A seed within the bound, and a share without one, open in one frame.
    expect(openFrames({ kind: 'keyed', seed: seedOf(5) }, 1_000).length).toBe(1);
    expect(openFrames({ plan: 1 }, 1_000).length).toBe(1);
    // An entry over the bound goes alone; a truncated entry is no seed.
    expect(wholeEntryPieces(seedOf(20), 1).length).toBe(20);
    expect(() => wholeEntryPieces(seed.subarray(0, seed.length - 1), 1_000)).toThrow(/cut short/);
  });

  it("accepts a drop's or gain's vnodes and tables only as a node's stores can follow them", () => {
    const table = { tableId: 21, purpose: 'groups', columnTypes: [{ name: 'int8' }, { name: 'text' }], primaryKey: [0], vnodeColumns: [0] };
    const gain = (tables: unknown[], vnodes = new Uint8Array(256)) => ({ vnodes, tables, stateVnodes: new Map([[21, [0]]]) });
    expect(isGainedVnodes(gain([table]))).toBe(true);
    expect(isGainedVnodes(gain([{ ...table, vnodeColumns: undefined }]))).toBe(true);
    expect(isGainedVnodes(gain([table, { ...table, tableId: 22 }]))).toBe(true);
    // Vnode columns that are not key columns, or none at all; key columns past the row; bad ids.
    expect(isGainedVnodes(gain([{ ...table, vnodeColumns: [1] }]))).toBe(false);
    expect(isGainedVnodes(gain([{ ...table, vnodeColumns: [] }]))).toBe(false);
    expect(isGainedVnodes(gain([{ ...table, vnodeColumns: '0' }]))).toBe(false);
    expect(isGainedVnodes(gain([{ ...table, primaryKey: [2], vnodeColumns: undefined }]))).toBe(false);
    expect(isGainedVnodes(gain([{ ...table, tableId: 0xffffffff }]))).toBe(false);
    expect(isGainedVnodes(gain([{ ...table, tableId: -1 }]))).toBe(false);
    expect(isGainedVnodes(gain([table, table]))).toBe(false);
    expect(isGainedVnodes(gain([table], new Uint8Array(255)))).toBe(false);
    expect(isGainedVnodes({ ...gain([table]), stateVnodes: {} })).toBe(false);
  });

  it("accepts a stage-files' list only of one or two files, one per known family, of a whole positive size and a whole count of entries", () => {
    expect(isStagedFiles([])).toBe(false);
    expect(isStagedFiles([{ family: 'default', bytes: 10, entries: 0 }, { family: 'records', bytes: 2 ** 40, entries: 7 }])).toBe(true);
    expect(isStagedFiles([{ family: 'default', bytes: 10, entries: 1 }, { family: 'default', bytes: 10, entries: 1 }])).toBe(false);
    expect(isStagedFiles([{ family: 'other', bytes: 10, entries: 1 }])).toBe(false);
    for (const bytes of [0, -1, 1.5, 2 ** 40 + 1, '10', undefined]) expect(isStagedFiles([{ family: 'default', bytes, entries: 1 }]), String(bytes)).toBe(false);
    for (const entries of [-1, 0.5, '1', undefined]) expect(isStagedFiles([{ family: 'default', bytes: 1, entries }]), String(entries)).toBe(false);
    expect(isStagedFiles([{ family: 'default', bytes: 1, entries: 1 }, { family: 'records', bytes: 1, entries: 1 }, { family: 'records', bytes: 1, entries: 1 }])).toBe(false);
    expect(isStagedFiles({ family: 'default', bytes: 1, entries: 1 })).toBe(false);
    expect(isStagedFiles([null])).toBe(false);
  });

  it('reads the seed write delay from OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS and refuses a value that is not one', () => {
    expect(seedWriteDelayMs(undefined)).toBe(0);
    expect(seedWriteDelayMs('')).toBe(0);
    expect(seedWriteDelayMs(' 250 ')).toBe(250);
    for (const bad of ['abc', '1s', '-5', '1.5', ' ', '60001']) {
      expect(() => seedWriteDelayMs(bad), bad).toThrow(`OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: "${bad}" is not a whole number of milliseconds from 0 to 60000`);
    }
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
    socket.write(frame({ t: 'hello', nonce, version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
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
    socket.write(frame({ t: 'hello', nonce: newNonce(), version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
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

describe('share protocol versions', () => {
  /** Opens a link of `version` to `address` under a deadline no test waits for: a failure before it is one the handshake reported. */
  function linkOf(address: string, version: number): Promise<string> {
    return new Promise((resolve) => {
      openShareLink(address, KEY, { plan: 'x' }, { timeoutMs: 600_000, onMessage: () => undefined, onFail: resolve, version });
    });
  }

  it('reads OXBOW_REMOTE_SHARE_PROTOCOL_VERSION as a whole number from 1, this build\'s when unset', () => {
    expect(shareProtocolVersion(undefined)).toBe(SHARE_PROTOCOL_VERSION);
    expect(shareProtocolVersion('')).toBe(SHARE_PROTOCOL_VERSION);
    expect(shareProtocolVersion(' 7 ')).toBe(7);
    for (const bad of ['0', '-1', 'v2', '1.5', '2147483648']) expect(() => shareProtocolVersion(bad), bad).toThrow(`OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: "${bad}"`);
  });

  it("a server refuses a leader of another version at once, naming its own, and one that names none (an older leader)", async () => {
    for (const hello of [{ t: 'hello', nonce: newNonce(), version: SHARE_PROTOCOL_VERSION + 1 }, { t: 'hello', nonce: newNonce() }]) {
      log.length = 0;
      const { socket, next, closed } = await client();
      socket.write(frame(hello));
      // Refused, not challenged: the leader learns the node's version before any proof.
      expect(await next()).toEqual({ t: 'refused', reason: `this node speaks share protocol version ${SHARE_PROTOCOL_VERSION}`, version: SHARE_PROTOCOL_VERSION });
      await closed;
      const version = 'version' in hello ? hello.version : 1;
      expect(log.join('\n')).toContain(`is refused: it speaks share protocol version ${version} and this node version ${SHARE_PROTOCOL_VERSION}`);
      expect(log.join('\n')).not.toMatch(/handshake deadline/);
    }
  });

  it('a leader of another version fails its link at once, as the server says, under a deadline it never reaches', async () => {
    log.length = 0;
    const other = SHARE_PROTOCOL_VERSION + 1;
    expect(await linkOf(rig.server.address, other)).toBe(`it speaks share protocol version ${SHARE_PROTOCOL_VERSION} and this node version ${other}`);
    // The same version gets past the handshake (its open then fails: this server's worker script does not load).
    expect(await linkOf(rig.server.address, SHARE_PROTOCOL_VERSION)).not.toMatch(/share protocol version/);
  });

  it('a leader fails its link at once when the node challenges it under another version, or under none (an older node)', async () => {
    for (const challenged of [SHARE_PROTOCOL_VERSION + 1, undefined]) {
      const sockets: Socket[] = [];
      // An older node: it takes any hello and challenges with the right proof, naming its version or none.
      const node = createServer((socket) => {
        sockets.push(socket);
        socket.on('error', () => undefined);
        readFrames(
          socket,
          (message) => {
            const hello = message as Extract<Handshake, { t: 'hello' }>;
            const challenge = { t: 'challenge', nonce: newNonce(), proof: proofOf(KEY, 'server', hello.nonce) };
            socket.write(frame(challenged === undefined ? challenge : { ...challenge, version: challenged }));
          },
          () => socket.destroy(),
        );
      });
      await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
      const bound = node.address() as { address: string; port: number };
      const reason = await linkOf(formatAddress(bound.address, bound.port), SHARE_PROTOCOL_VERSION);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => node.close(() => resolve()));
      expect(reason).toBe(`it speaks share protocol version ${challenged ?? 1} and this node version ${SHARE_PROTOCOL_VERSION}`);
    }
  });
});

describe("a keyed share's link while the node writes its seed", () => {
  it('gives the handshake, then the seed from its last progress, then the answers their deadline', () => {
    expect(linkLate('handshake', 1_100, 1_000, 100)).toBeUndefined();
    expect(linkLate('handshake', 1_101, 1_000, 100)).toBe('no handshake within 100 ms');
    // The seed's deadline runs from its last progress; the answers' are not asked meanwhile.
    const asked: number[] = [];
    const overdue = (now: number) => (asked.push(now), 'late');
    expect(linkLate('seeding', 5_000, 4_950, 100, overdue)).toBeUndefined();
    expect(linkLate('seeding', 5_051, 4_950, 100, overdue)).toBe('no progress of its seed within 100 ms');
    expect(asked).toEqual([]);
    expect(linkLate('running', 9_000, 0, 100, overdue)).toBe('late');
    expect(asked).toEqual([9_000]);
    expect(linkLate('running', 9_000, 0, 100)).toBeUndefined();
    // Requests sent before `seeded` are due a whole deadline after it; later ones keep theirs.
    const entries = [{ deadline: 1_100 }, { deadline: 5_500 }, { deadline: 9_000 }];
    restartDeadlines(entries, 5_000, 1_000);
    expect(entries.map((entry) => entry.deadline)).toEqual([6_000, 6_000, 9_000]);
  });

  /** A node made here: proves the key, then runs `after` with the socket once the share's `open` came. */
  async function fakeNode(after: (socket: Socket, received: unknown[]) => void): Promise<{ address: string; close: () => Promise<void> }> {
    const sockets = new Set<Socket>();
    const node = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      const received: unknown[] = [];
      let nonce: Uint8Array | undefined;
      readFrames(
        socket,
        (message) => {
          const frameIn = message as Handshake;
          if (frameIn.t === 'hello') {
            nonce = newNonce();
            socket.write(frame({ t: 'challenge', nonce, proof: proofOf(KEY, 'server', frameIn.nonce), version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
          } else if (frameIn.t === 'proof') {
            expect(proofMatches(KEY, 'client', nonce!, frameIn.proof)).toBe(true);
          } else if (frameIn.t === 'open') {
            after(socket, received);
          } else {
            received.push(message);
          }
        },
        () => socket.destroy(),
      );
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    const bound = node.address() as { address: string; port: number };
    return {
      address: formatAddress(bound.address, bound.port),
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => node.close(() => resolve()));
      },
    };
  }

  it('keeps a node whose seed takes several deadlines while it reports progress, and times its answers from `seeded`', async () => {
    // The node reports a piece every 50 ms for 40 pieces (2 s, four deadlines of 500 ms), then
    // `seeded`, then answers the request the relay sent at once.
    const node = await fakeNode((socket) => {
      let pieces = 0;
      const timer = setInterval(() => {
        if (socket.destroyed) return clearInterval(timer);
        if (++pieces <= 40) return void socket.write(frame({ t: 'seeding' } satisfies Handshake));
        clearInterval(timer);
        socket.write(frame({ t: 'seeded' } satisfies Handshake));
        socket.write(frame({ t: 'answer', n: 1 }));
      }, 50);
    });
    try {
      const events: string[] = [];
      let seededAt: number | undefined;
      const answered = new Promise<unknown>((resolve, reject) => {
        const link = openShareLink(node.address, KEY, { kind: 'keyed', seed: seedOf(3) }, {
          timeoutMs: 500,
          onMessage: resolve,
          onFail: (reason) => reject(new Error(reason)),
          overdue: () => (events.push(seededAt === undefined ? 'asked before seeded' : 'asked'), undefined),
          seeded: (now) => {
            seededAt = now;
            events.push('seeded');
          },
        });
        link.send({ t: 'seal' });
      });
      expect(await answered).toEqual({ t: 'answer', n: 1 });
      expect(events[0]).toBe('seeded');
      expect(events.filter((event) => event === 'asked before seeded')).toEqual([]);
    } finally {
      await node.close();
    }
  });

  it('gives up a node that stops making progress on its seed, and one that answers before it is seeded', async () => {
    const silent = await fakeNode((socket) => {
      socket.write(frame({ t: 'seeding' } satisfies Handshake));
      socket.write(frame({ t: 'seeding' } satisfies Handshake));
    });
    const early = await fakeNode((socket) => socket.write(frame({ t: 'answer', n: 1 })));
    try {
      const failure = (address: string) =>
        new Promise<string>((resolve) => {
          openShareLink(address, KEY, { kind: 'keyed', seed: seedOf(3) }, { timeoutMs: 300, onMessage: () => undefined, onFail: resolve, seeded: () => resolve('seeded') });
        });
      expect(await failure(silent.address)).toBe('no progress of its seed within 300 ms');
      expect(await failure(early.address)).toBe('it sent "answer" before its seed was written');
    } finally {
      await silent.close();
      await early.close();
    }
  });

  it("is answered by the server's `seeding` for each piece received and written, then `seeded`", async () => {
    log.length = 0;
    const { socket, next, closed } = await client();
    const nonce = newNonce();
    socket.write(frame({ t: 'hello', nonce, version: SHARE_PROTOCOL_VERSION } satisfies Handshake));
    const challenge = (await next()) as Extract<Handshake, { t: 'challenge' }>;
    socket.write(frame({ t: 'proof', proof: proofOf(KEY, 'client', challenge.nonce) } satisfies Handshake));
    const frames = openFrames({ kind: 'keyed', seed: seedOf(400) }, 2_048);
    for (const bytes of frames) socket.write(bytes);
    // Each `seed` frame received, then each piece written (the frames' and the open's), then `seeded`.
    const expected = [...frames.slice(1).map(() => 'seeding'), ...frames.map(() => 'seeding'), 'seeded'];
    const got: string[] = [];
    for (const _ of expected) got.push(String(((await next()) as { t: string }).t));
    expect(got).toEqual(expected);
    // This server's worker script does not exist: the worker ends and so does the connection.
    await closed;
    expect(log.join('\n')).toMatch(new RegExp(`a keyed share's seed is written \\(${frames.length} pieces, \\d+ bytes\\); its worker starts`));
  });
});
