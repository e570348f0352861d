// One open RocksDB shared with worker threads (RocksDatabase.share / attach): what the parallel
// dataflows rely on (executor/stream/PARALLEL.md). Each worker is plain JavaScript loading the addon
// itself, as a worker thread of the server does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { RocksDatabase } from './rocksdb.js';
import { WriteBatchBuilder } from './write-batch.js';

const ADDON = join(process.cwd(), 'storage', 'native', 'build', 'Release', 'oxbow_rocksdb.node');

const directories: string[] = [];
afterEach(() => {
  while (directories.length > 0) rmSync(directories.pop()!, { recursive: true, force: true });
});

function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-shared-'));
  directories.push(directory);
  return directory;
}

/**
 * Runs `body` (JavaScript with `addon`, `token`, `post`, and `next()` awaiting the next message)
 * in a worker thread; returns the worker and the messages it posts.
 */
function startWorker(token: number, body: string): { worker: Worker; messages: unknown[]; exited: Promise<number> } {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const addon = require(workerData.addon);
    const token = workerData.token;
    const post = (value) => parentPort.postMessage(value);
    const inbox = [];
    let waiting;
    parentPort.on('message', (value) => { if (waiting) { const w = waiting; waiting = undefined; w(value); } else inbox.push(value); });
    const next = () => inbox.length > 0 ? Promise.resolve(inbox.shift()) : new Promise((resolve) => { waiting = resolve; });
    (async () => { ${body} })().then(() => parentPort.close(), (error) => { post({ error: String(error && error.code) + ': ' + String(error && error.message) }); parentPort.close(); });
  `;
  const worker = new Worker(code, { eval: true, workerData: { addon: ADDON, token } });
  const messages: unknown[] = [];
  worker.on('message', (message) => messages.push(message));
  const exited = new Promise<number>((resolve) => worker.on('exit', resolve));
  return { worker, messages, exited };
}

function put(database: RocksDatabase, key: string, value: string): void {
  const batch = new WriteBatchBuilder();
  batch.put(Buffer.from(key), Buffer.from(value));
  database.write(batch.view(), true);
}

describe('a RocksDB shared with worker threads', () => {
  it('reads and writes the same database from a worker thread', async () => {
    const database = RocksDatabase.open(freshDirectory());
    put(database, 'a', 'from main');
    const token = database.share();
    const { messages, exited } = startWorker(
      token,
      `
      const db = new addon.Database(token);
      post({ read: db.get(Buffer.from('a')).toString() });
      // A packed put: [op 1][u32le key length][key][u32le value length][value].
      const key = Buffer.from('b'), value = Buffer.from('from worker');
      const packed = Buffer.alloc(1 + 4 + key.length + 4 + value.length);
      packed[0] = 1; packed.writeUInt32LE(key.length, 1); key.copy(packed, 5);
      packed.writeUInt32LE(value.length, 5 + key.length); value.copy(packed, 9 + key.length);
      await db.writeAsync(packed, true);
      // An iterator of this thread's own environment (the addon keeps its classes per thread).
      const iterator = db.iterator({});
      post({ entries: iterator.next(10) === null ? 0 : 1 });
      iterator.close();
      db.close();
      post({ done: true });
      `,
    );
    expect(await exited).toBe(0);
    expect(messages).toEqual([{ read: 'from main' }, { entries: 1 }, { done: true }]);
    expect(database.get(Buffer.from('b'))?.toString()).toBe('from worker');
    // The main thread's iterators still work after a worker thread loaded the addon.
    const keys: string[] = [];
    const iterator = database.iterator();
    for (let packed = iterator.nextPacked(10); packed !== null; packed = iterator.nextPacked(10)) {
      let offset = 0;
      while (offset < packed.length) {
        const keyLength = packed.readUInt32LE(offset);
        keys.push(packed.toString('utf8', offset + 4, offset + 4 + keyLength));
        offset += 4 + keyLength + 4 + packed.readUInt32LE(offset + 4 + keyLength);
      }
    }
    iterator.close();
    expect(keys).toEqual(['a', 'b']);
    await database.close();
  });

  it('stays open for an attached worker after the sharing thread closes it, and then releases its lock', async () => {
    const directory = freshDirectory();
    const database = RocksDatabase.open(directory);
    put(database, 'k', 'v1');
    const token = database.share();
    const { worker, messages, exited } = startWorker(
      token,
      `
      const db = new addon.Database(token);
      post({ attached: true });
      await next();
      post({ read: db.get(Buffer.from('k')).toString() });
      await next();
      db.close();
      post({ closed: true });
      `,
    );
    await waitFor(() => messages.length === 1);
    await database.close();
    // The token went with the sharing database: nothing new attaches under it.
    expect(() => RocksDatabase.attach(token, 'x')).toThrow(/no database is shared/);
    // The worker's wrapper still holds the DB open: its lock is held.
    expect(() => RocksDatabase.open(directory)).toThrow(/lock/i);
    worker.postMessage('read');
    await waitFor(() => messages.length === 2);
    expect(messages[1]).toEqual({ read: 'v1' });
    worker.postMessage('close');
    expect(await exited).toBe(0);
    expect(messages[2]).toEqual({ closed: true });
    // The last owner let go: the database is closed and can be opened again.
    const reopened = RocksDatabase.open(directory);
    expect(reopened.get(Buffer.from('k'))?.toString()).toBe('v1');
    await reopened.close();
  });

  it('refuses an unknown or unshared token', async () => {
    const database = RocksDatabase.open(freshDirectory());
    expect(() => RocksDatabase.attach(12345678, 'x')).toThrow(/no database is shared/);
    const token = database.share();
    const attached = RocksDatabase.attach(token, 'x');
    // An attached wrapper's close releases only itself: the token stays.
    await RocksDatabase.attach(token, 'x').close();
    database.unshare(token);
    expect(() => RocksDatabase.attach(token, 'x')).toThrow(/no database is shared/);
    put(database, 'x', 'y');
    expect(attached.get(Buffer.from('x'))?.toString()).toBe('y');
    await attached.close();
    // The sharing database is still open after an attached wrapper closed.
    expect(database.get(Buffer.from('x'))?.toString()).toBe('y');
    await database.close();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error('timed out');
}
