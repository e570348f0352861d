// The asynchronous commit (MvccStateStore.commitAsync) on RocksDB: a sealed epoch is readable as
// the latest state at once but reaches AS OF reads, versions() and the committed epoch only when
// its write (on the libuv pool) has resolved; epochs sealed while one is written go in order and
// share the next write; a failed write fails its waiters and every later commit, and loses nothing
// acknowledged; close and checkpoints wait for writes in flight.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../sql/epoch.js';
import { SqlError } from '../sql/errors.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { MvccStateStore } from './mvcc-state-store.js';
import { RocksBackend } from './rocks-backend.js';
import { openRocksStateStore } from './rocks-state-store.js';
import { RocksDatabase } from './rocksdb.js';
import type { StateTableSchema } from './state-table.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number): Epoch => epochFromMillis(T0 + second * 1000);
const schema: StateTableSchema = { tableId: 5, columnTypes: [type('int4'), type('int8')], primaryKey: [0] };
const KEYS = 200;

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-async-commit-'));
  directories.push(directory);
  return directory;
}

/** Every key's row when epoch `second` wrote value `second * 1000 + key` into it. */
function rowsOf(second: number): Row[] {
  return Array.from({ length: KEYS }, (_unused, key) => [key, BigInt(second * 1000 + key)]);
}

describe('commitAsync on RocksDB', () => {
  it('a reader AS OF an epoch never sees it before its write resolves; the latest state sees it at once', async () => {
    const store = openRocksStateStore({ dir: freshDirectory() });
    const table = store.table(schema);
    for (const row of rowsOf(1)) table.insert(row);
    store.commit(epochAt(1));
    let checks = 0;
    for (let second = 2; second <= 25; second++) {
      const previous = store.committedEpoch;
      const epoch = epochAt(second);
      for (const row of rowsOf(second)) table.insert(row);
      let resolved = false;
      const durable = store.commitAsync(epoch).then(() => {
        resolved = true;
      });
      expect(store.latestEpoch).toBe(epoch);
      // Poll on every turn of the event loop until the write resolves: AS OF the new epoch (and
      // the committed epoch, history, the window) stay at the previous epoch until then.
      for (;;) {
        const committed = store.committedEpoch;
        const expectedSecond = committed === epoch ? second : second - 1;
        if (!resolved) expect(committed).toBe(previous);
        expect(table.get([7], epoch)).toEqual(rowsOf(expectedSecond)[7]);
        expect([...table.scan({ epoch })]).toEqual(rowsOf(expectedSecond));
        expect([...table.versions(epochAt(0), epoch)].some((version) => version.validFrom === epoch)).toBe(committed === epoch);
        expect(store.readableWindow(schema.tableId).latest).toBe(committed);
        // The latest state includes the sealed epoch whatever its write's progress.
        expect(table.get([KEYS - 1])).toEqual(rowsOf(second)[KEYS - 1]);
        expect([...table.scan({ limit: 3 })]).toEqual(rowsOf(second).slice(0, 3));
        checks++;
        if (resolved) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await durable;
      expect(store.committedEpoch).toBe(epoch);
    }
    expect(checks).toBeGreaterThanOrEqual(24);
    await store.close();
  });

  it('epochs sealed while one is written resolve in order and share the next write; close keeps them', async () => {
    const dir = freshDirectory();
    const store = openRocksStateStore({ dir });
    const table = store.table(schema);
    const order: number[] = [];
    const writes: Promise<void>[] = [];
    for (let second = 1; second <= 8; second++) {
      for (const row of rowsOf(second)) if (Number(row[0]) % 8 === second - 1 || second === 1) table.insert(row);
      store.putMeta('progress', new TextEncoder().encode(String(second)));
      writes.push(store.commitAsync(epochAt(second)).then(() => void order.push(second)));
      // The open epoch reads through every sealed one.
      expect(new TextDecoder().decode(store.getMeta('progress'))).toBe(String(second));
    }
    expect(store.sealedEpochs).toBeGreaterThan(1);
    await Promise.all(writes);
    expect(order).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Each key holds the value of the last epoch that wrote it (recomputed here).
    const expected = Array.from({ length: KEYS }, (_unused, key) => {
      const last = key % 8 === 0 ? 1 : (key % 8) + 1;
      return [key, BigInt(last * 1000 + key)];
    });
    expect([...table.scan()]).toEqual(expected);
    // Sealed and closed at once: close waits for the write.
    for (const row of rowsOf(9)) table.insert(row);
    const last = store.commitAsync(epochAt(9));
    await store.close();
    await last;
    const reopened = openRocksStateStore({ dir });
    expect(reopened.committedEpoch).toBe(epochAt(9));
    expect([...reopened.table(schema).scan()]).toEqual(rowsOf(9));
    expect(new TextDecoder().decode(reopened.getMeta('progress'))).toBe('8');
    await reopened.close();
  });

  it('a checkpoint cut after a seal holds the sealed epoch', async () => {
    const dir = freshDirectory();
    const store = openRocksStateStore({ dir: join(dir, 'state') });
    const table = store.table(schema);
    for (const row of rowsOf(1)) table.insert(row);
    const durable = store.commitAsync(epochAt(1));
    const checkpoint = await store.checkpoint(join(dir, 'cut'));
    await durable;
    expect(checkpoint.epoch).toBe(epochAt(1));
    await store.close();
    const copy = openRocksStateStore({ dir: join(dir, 'cut') });
    expect([...copy.table(schema).scan()]).toEqual(rowsOf(1));
    await copy.close();
  });

  it('a failed write fails its waiters and every later commit with a SqlError, and loses nothing acknowledged', async () => {
    const dir = freshDirectory();
    /** The real backend; from `failFrom` on, each write sends RocksDB's worker a malformed batch (a real native failure). */
    class FailingBackend extends RocksBackend {
      failing = false;
      override writeAsync(packed: Buffer): Promise<void> {
        return super.writeAsync(this.failing ? Buffer.from([9, 0, 0, 0, 0, 0, 0, 0, 0]) : packed);
      }
    }
    const database = RocksDatabase.open(dir);
    const backend = new FailingBackend(database);
    const store = new MvccStateStore(backend, { retentionMs: 60 * 60 * 1000, memoryLimitBytes: 1 << 20 });
    const table = store.table(schema);
    for (let second = 1; second <= 3; second++) {
      for (const row of rowsOf(second)) table.insert(row);
      await store.commitAsync(epochAt(second));
    }
    backend.failing = true;
    for (const row of rowsOf(4)) table.insert(row);
    const fourth = store.commitAsync(epochAt(4));
    table.insert([0, 5n]);
    const fifth = store.commitAsync(epochAt(5));
    expect(table.get([0])).toEqual([0, 5n]);
    const failures = await Promise.allSettled([fourth, fifth]);
    for (const failure of failures) {
      expect(failure.status).toBe('rejected');
      const reason = (failure as PromiseRejectedResult).reason as SqlError;
      expect(reason).toBeInstanceOf(SqlError);
      expect(reason.message).toMatch(/while committing an epoch/);
    }
    expect(store.committedEpoch).toBe(epochAt(3));
    expect(store.latestEpoch).toBe(epochAt(3));
    // The failed epochs' writes are gone from the latest state too.
    expect(table.get([0])).toEqual(rowsOf(3)[0]);
    expect([...table.scan()]).toEqual(rowsOf(3));
    // Poisoned: no later commit, synchronous or not, with the first failure's SQLSTATE.
    table.insert([1, 6n]);
    let refused: unknown;
    try {
      void store.commitAsync(epochAt(6));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(SqlError);
    expect((refused as SqlError).code).toBe(((failures[0] as PromiseRejectedResult).reason as SqlError).code);
    expect((refused as SqlError).message).toMatch(/failed an earlier commit/);
    expect(() => store.commit(epochAt(6))).toThrow(/failed an earlier commit/);
    store.abort();
    await store.close();
    // Every acknowledged epoch survives, nothing of the failed ones.
    const reopened = openRocksStateStore({ dir });
    expect(reopened.committedEpoch).toBe(epochAt(3));
    expect([...reopened.table(schema).scan()]).toEqual(rowsOf(3));
    await reopened.close();
  });
});
