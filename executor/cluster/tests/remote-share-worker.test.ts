// The leader's relay thread of a remote share (remote-share-worker.ts, built in dist/) against
// real sockets: a node server made here that proves the key and then answers, falls silent or
// drops the connection, and a stand-in worker (support/recording-source-worker.mjs) for the share
// the leader runs itself, whose batches name the ranges it generated. Checked: an unreachable
// node's epochs are generated on the leader; a node that dropped the connection after answering
// epoch 1 leaves epoch 2 (and only epoch 2) to the leader; an epoch the node's worker failed is
// generated on the leader; a silent node is given up at the
// deadline and its unanswered epoch generated on the leader; the units counter counts the node's
// batches only. Needs dist/ (npm run build).

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { MainToSourceWorker, SourceWorkerToMain } from '../../stream/parallel/source-protocol.js';
import { WorkerHandle } from '../../stream/parallel/worker-handle.js';
import { frame, newNonce, proofMatches, proofOf, readFrames, SHARE_PROTOCOL_VERSION, type Handshake } from '../remote-share-link.js';

const KEY = randomBytes(32).toString('hex');
const RELAY = new URL('../../../dist/executor/cluster/remote-share-worker.js', import.meta.url);
const RECORDER = new URL('./support/recording-source-worker.mjs', import.meta.url);

type Behaviour = 'answer' | 'silent' | 'drop-at-second-commit' | 'error';

/** A node's end speaking the handshake and the protocol; its batches say `by: 'remote'`. */
async function fakeNode(behaviour: Behaviour): Promise<{ server: Server; address: string; opened: unknown[] }> {
  const opened: unknown[] = [];
  const server = createServer((socket: Socket) => {
    let nonce: Uint8Array | undefined;
    let stage = 'hello';
    let ranges: number[] = [];
    let commits = 0;
    socket.on('error', () => undefined);
    readFrames(
      socket,
      (message) => {
        const received = message as Handshake | MainToSourceWorker;
        if (stage === 'hello' && received.t === 'hello') {
          nonce = newNonce();
          socket.write(frame({ t: 'challenge', nonce, proof: proofOf(KEY, 'server', received.nonce), version: SHARE_PROTOCOL_VERSION }));
          stage = 'proof';
        } else if (stage === 'proof' && received.t === 'proof') {
          if (!proofMatches(KEY, 'client', nonce!, received.proof)) socket.destroy();
          stage = 'open';
        } else if (stage === 'open' && received.t === 'open') {
          opened.push(received.data);
          stage = 'running';
        } else if (received.t === 'ranges') {
          ranges.push(...received.ranges);
        } else if (received.t === 'abort') {
          ranges = [];
        } else if (received.t === 'commit') {
          commits++;
          if (behaviour === 'silent') return;
          if (behaviour === 'error') return void socket.write(frame({ t: 'error', code: 'XX000', message: 'the worker could not start' }));
          // end(), not destroy(): the answer to epoch 1 still leaves first.
          if (behaviour === 'drop-at-second-commit' && commits === 2) return void socket.end();
          const bytes = new TextEncoder().encode(JSON.stringify({ by: 'remote', epoch: received.epoch, ranges }));
          ranges = [];
          socket.write(frame({ t: 'batch', bytes: bytes.buffer, length: bytes.length, rows: 0, errors: [] }));
        }
      },
      () => socket.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `127.0.0.1:${(server.address() as { port: number }).port}`, opened };
}

const open: { handle?: WorkerHandle<MainToSourceWorker, SourceWorkerToMain>; server?: Server }[] = [];

afterEach(async () => {
  for (const item of open.splice(0)) {
    await item.handle?.close();
    item.server?.close();
  }
});

function relay(address: string, timeoutMs: number): { handle: WorkerHandle<MainToSourceWorker, SourceWorkerToMain>; stats: BigInt64Array } {
  if (!existsSync(fileURLToPath(RELAY))) throw new Error(`${fileURLToPath(RELAY)} is missing: run npm run build first`);
  const stats = new SharedArrayBuffer(16);
  const handle = new WorkerHandle<MainToSourceWorker, SourceWorkerToMain>(
    RELAY,
    {
      token: 0,
      path: '/nonexistent',
      plan: { kind: 'a plan as data' },
      viewId: 7,
      worker: 2,
      retentionMs: 1000,
      viewRetentionMs: undefined,
      rowCacheBytes: 1 << 20,
      tuning: {},
      address,
      node: 'node-test',
      key: KEY,
      stats,
      fallbackScript: pathToFileURL(fileURLToPath(RECORDER)).href,
      timeoutMs,
    },
    'a remote share',
  );
  return { handle, stats: new BigInt64Array(stats) };
}

/** An epoch's batch: what the recorder wrote, and what the relay says its failover worker made it of. */
async function commit(handle: WorkerHandle<MainToSourceWorker, SourceWorkerToMain>, epoch: string): Promise<{ by: string; epoch: string; ranges: number[]; failedOver?: { units: number; again: number } }> {
  const answer = await handle.answered(handle.request({ t: 'commit', epoch }, `epoch ${epoch}`));
  if (answer.t !== 'batch') throw new Error(`answered ${answer.t}`);
  const written = JSON.parse(new TextDecoder().decode(new Uint8Array(answer.bytes, 0, answer.length))) as { by: string; epoch: string; ranges: number[] };
  return answer.failedOver === undefined ? written : { ...written, failedOver: answer.failedOver };
}

describe("the leader's relay of a remote share", () => {
  it('answers from the node while it answers, counting its units; the plan crosses without the database', async () => {
    const node = await fakeNode('answer');
    const { handle, stats } = relay(node.address, 5000);
    open.push({ handle, server: node.server });
    handle.post({ t: 'ranges', ranges: [0, 0, 10, 1, 5, 8] });
    expect(await commit(handle, '1')).toEqual({ by: 'remote', epoch: '1', ranges: [0, 0, 10, 1, 5, 8] });
    handle.post({ t: 'ranges', ranges: [0, 10, 20] });
    handle.post({ t: 'abort' });
    handle.post({ t: 'ranges', ranges: [0, 10, 15] });
    expect(await commit(handle, '2')).toEqual({ by: 'remote', epoch: '2', ranges: [0, 10, 15] });
    expect(stats[0]).toBe(18n);
    expect(stats[1]).toBe(0n);
    expect(node.opened).toEqual([{ plan: { kind: 'a plan as data' }, viewId: 7, worker: 2, retentionMs: 1000, viewRetentionMs: undefined, rowCacheBytes: 1 << 20, tuning: {} }]);
  });

  it('generates on the leader what an unreachable node was given', async () => {
    const closed = await fakeNode('answer');
    const address = closed.address;
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    const { handle, stats } = relay(address, 5000);
    open.push({ handle });
    handle.post({ t: 'ranges', ranges: [3, 100, 200] });
    // Given to the node's share before it was given up: given again here.
    expect(await commit(handle, '1')).toEqual({ by: 'leader', epoch: '1', ranges: [3, 100, 200], failedOver: { units: 100, again: 100 } });
    handle.post({ t: 'ranges', ranges: [3, 200, 250] });
    expect(await commit(handle, '2')).toEqual({ by: 'leader', epoch: '2', ranges: [3, 200, 250], failedOver: { units: 50, again: 0 } });
    expect(stats[0]).toBe(0n);
    expect(stats[1]).toBe(1n);
  });

  it('after a dropped connection generates only the epochs the node had not answered, in order', async () => {
    const node = await fakeNode('drop-at-second-commit');
    const { handle, stats } = relay(node.address, 5000);
    open.push({ handle, server: node.server });
    handle.post({ t: 'ranges', ranges: [0, 0, 10] });
    const first = commit(handle, '1');
    handle.post({ t: 'ranges', ranges: [0, 10, 30] });
    const second = commit(handle, '2');
    handle.post({ t: 'ranges', ranges: [0, 30, 35] });
    const third = commit(handle, '3');
    expect(await first).toEqual({ by: 'remote', epoch: '1', ranges: [0, 0, 10] });
    expect(await second).toEqual({ by: 'leader', epoch: '2', ranges: [0, 10, 30], failedOver: { units: 20, again: 20 } });
    // Epoch 3's range went to the node or not, as the drop was seen before it or after.
    expect(await third).toEqual({ by: 'leader', epoch: '3', ranges: [0, 30, 35], failedOver: { units: 5, again: expect.toBeOneOf([0, 5]) } });
    expect(stats[0]).toBe(10n);
    expect(stats[1]).toBe(1n);
  });

  it("takes an epoch the node's worker failed back, and generates it on the leader", async () => {
    const node = await fakeNode('error');
    const { handle, stats } = relay(node.address, 5000);
    open.push({ handle, server: node.server });
    handle.post({ t: 'ranges', ranges: [2, 7, 9] });
    expect(await commit(handle, '4')).toEqual({ by: 'leader', epoch: '4', ranges: [2, 7, 9], failedOver: { units: 2, again: 2 } });
    expect(stats[1]).toBe(1n);
  });

  it('gives a silent node up at the deadline and generates its epoch on the leader', async () => {
    const node = await fakeNode('silent');
    const { handle } = relay(node.address, 400);
    open.push({ handle, server: node.server });
    handle.post({ t: 'ranges', ranges: [1, 0, 64] });
    const started = Date.now();
    expect(await commit(handle, '9')).toEqual({ by: 'leader', epoch: '9', ranges: [1, 0, 64], failedOver: { units: 64, again: 64 } });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(350);
    expect(waited).toBeLessThan(5000);
  });
});
