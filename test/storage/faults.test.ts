// Faults at the storage layer, each a clear SqlError and no silent loss: a corrupted SST file, a
// full disk (a real 3 MiB tmpfs mount), a data directory locked by another process, and a missing
// RocksDB shared library (hidden by a bind mount in a private mount namespace). Mounting needs root,
// which the project's test machines are (DESIGN.md: the install runs as root on Debian).
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqlError } from '../../sql/errors.js';
import { epochFromMillis } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
import type { StateTableSchema } from '../../storage/state-table.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const T0 = Date.UTC(2026, 0, 1);
const epochAt = (second: number) => epochFromMillis(T0 + second * 1000);
const schema: StateTableSchema = { tableId: 5, columnTypes: [type('int4'), type('text')], primaryKey: [0] };

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});
function freshDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'oxbow-faults-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/**
 * A store on a 3 MiB tmpfs (mounting needs root; unmounted after the test), with small memtables
 * and no compression so a few hundred KiB of rows fill the disk. `mount -o remount,size=64m
 * mountPoint` gives room again.
 */
function storeOnSmallDisk(): { mountPoint: string; dir: string; store: ReturnType<typeof openRocksStateStore> } {
  const mountPoint = freshDirectory();
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mountPoint], { encoding: 'utf8' });
  expect(mount.status, `mounting a tmpfs needs root: ${mount.stderr}`).toBe(0);
  cleanups.push(() => spawnSync('umount', ['-l', mountPoint]));
  const dir = join(mountPoint, 'state');
  const store = openRocksStateStore({ dir, rocksdb: { writeBufferBytes: 256 * 1024, compression: 'none', bottommostCompression: 'none' } });
  return { mountPoint, dir, store };
}

function caught(run: () => unknown): SqlError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SqlError);
    return error as SqlError;
  }
  throw new Error('expected an error');
}

async function writeAndClose(dir: string, rows: number): Promise<void> {
  const store = openRocksStateStore({ dir });
  const table = store.table(schema);
  for (let id = 0; id < rows; id++) table.insert([id, `row ${id} ${'p'.repeat(200)}`]);
  store.commit(epochAt(1));
  await store.database.flush();
  await store.close();
}

function overwrite(path: string, offset: number, length: number): void {
  const descriptor = openSync(path, 'r+');
  writeSync(descriptor, Buffer.alloc(length, 0xa5), 0, length, offset);
  closeSync(descriptor);
}

describe('storage faults', () => {
  it('a corrupted data block: reads fail with XX001, never wrong rows', async () => {
    const dir = freshDirectory();
    await writeAndClose(dir, 2000);
    const sst = readdirSync(dir).find((name) => name.endsWith('.sst'))!;
    overwrite(join(dir, sst), 64, 256);
    const store = openRocksStateStore({ dir });
    const table = store.table(schema);
    const error = caught(() => [...table.scan()]);
    expect(error.code).toBe('XX001');
    expect(error.message).toMatch(/state storage is corrupted while scanning state/);
    expect(error.detail).toMatch(/Corruption/);
    expect(error.hint).toMatch(/checkpoint/);
    expect(caught(() => table.get([0])).code).toBe('XX001');
    await store.close();
  });

  it('a corrupted file footer: opening fails with XX001', async () => {
    const dir = freshDirectory();
    await writeAndClose(dir, 100);
    const sst = readdirSync(dir).find((name) => name.endsWith('.sst'))!;
    const size = statSync(join(dir, sst)).size;
    overwrite(join(dir, sst), size - 48, 48);
    const error = caught(() => openRocksStateStore({ dir }));
    expect(error.code).toBe('XX001');
    expect(error.message).toMatch(/corrupted while opening the data directory/);
  });

  it('a full disk: the commit fails with 53100, committed epochs stay intact', async () => {
    const { mountPoint, dir, store } = storeOnSmallDisk();
    const table = store.table(schema);
    let second = 0;
    let failure: unknown;
    const payload = 'f'.repeat(1000);
    while (second < 200) {
      for (let id = 0; id < 50; id++) table.insert([second * 50 + id, payload]);
      try {
        store.commit(epochAt(second + 1));
      } catch (error) {
        failure = error;
        break;
      }
      second++;
    }
    expect(failure).toBeInstanceOf(SqlError);
    expect((failure as SqlError).code).toBe('53100');
    // oxbow's disk reserve refuses the commit before RocksDB runs out of space itself.
    expect((failure as SqlError).message).toMatch(/nearly full|no space left/i);
    const committed = second;
    expect(committed).toBeGreaterThan(0);
    expect(store.committedEpoch).toBe(epochAt(committed));
    // The process carries on: what was committed is still readable.
    expect(table.get([0], epochAt(1))).toEqual([0, payload]);
    store.abort();
    await store.close().catch(() => undefined);
    // Give the volume room, reopen: every acknowledged epoch, nothing of the failed one.
    expect(spawnSync('mount', ['-o', 'remount,size=64m', mountPoint]).status).toBe(0);
    const reopened = openRocksStateStore({ dir });
    expect(reopened.committedEpoch).toBe(epochAt(committed));
    const again = reopened.table(schema);
    const rows = [...again.scan()];
    expect(rows.length).toBe(committed * 50);
    expect(rows.every((row, index) => row[0] === index && row[1] === payload)).toBe(true);
    reopened.table(schema).insert([0, 'after']);
    reopened.commit(epochAt(committed + 1));
    expect(again.get([0])).toEqual([0, 'after']);
    await reopened.close();
  });

  it('a full disk under commitAsync: the seal fails with 53100 before anything is in flight, and the store takes commits again once there is room', async () => {
    const { mountPoint, dir, store } = storeOnSmallDisk();
    const table = store.table(schema);
    const payload = 'a'.repeat(1000);
    let second = 0;
    let failure: unknown;
    const inFlight: Promise<void>[] = [];
    while (second < 200) {
      for (let id = 0; id < 50; id++) table.insert([second * 50 + id, payload]);
      try {
        inFlight.push(store.commitAsync(epochAt(second + 1)));
      } catch (error) {
        failure = error;
        break;
      }
      second++;
      if (second % 2 === 0) await Promise.all(inFlight.splice(0));
    }
    expect(failure).toBeInstanceOf(SqlError);
    expect((failure as SqlError).code).toBe('53100');
    // Every sealed epoch before the refused one is acknowledged and intact.
    await Promise.all(inFlight);
    const committed = second;
    expect(committed).toBeGreaterThan(0);
    expect(store.committedEpoch).toBe(epochAt(committed));
    expect(table.get([0], epochAt(1))).toEqual([0, payload]);
    // Not poisoned: with room again, the same open epoch commits.
    expect(spawnSync('mount', ['-o', 'remount,size=64m', mountPoint]).status).toBe(0);
    await store.commitAsync(epochAt(committed + 1));
    const rows = [...table.scan()];
    expect(rows.length).toBe((committed + 1) * 50);
    await store.close();
    const reopened = openRocksStateStore({ dir });
    expect(reopened.committedEpoch).toBe(epochAt(committed + 1));
    expect([...reopened.table(schema).scan()].length).toBe((committed + 1) * 50);
    await reopened.close();
  });

  it('a data directory locked by another process: 55006, and the holder keeps its data', async () => {
    const dir = freshDirectory();
    await writeAndClose(dir, 10);
    const holder = spawn(
      process.execPath,
      ['-e', `const d = new (require(${JSON.stringify(join(ROOT, 'storage/native/build/Release/oxbow_rocksdb.node'))}).Database)(${JSON.stringify(dir)}, {}); console.log('holding'); setInterval(() => {}, 1000);`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanups.push(() => holder.kill('SIGKILL'));
    await new Promise<void>((resolveReady) => holder.stdout!.once('data', () => resolveReady()));
    const error = caught(() => openRocksStateStore({ dir }));
    expect(error.code).toBe('55006');
    expect(error.message).toBe(`the data directory is locked by another process while opening the data directory ${dir}`);
    expect(error.hint).toMatch(/another oxbow process/);
    holder.kill('SIGKILL');
    await new Promise((resolveExit) => holder.once('exit', resolveExit));
    const store = openRocksStateStore({ dir });
    expect(store.table(schema).get([3])?.[0]).toBe(3);
    await store.close();
  });

  it('a missing RocksDB library: a clear error naming the package to install', () => {
    expect(existsSync(join(ROOT, 'dist', 'storage', 'rocksdb.js')), 'run `npm run build` first').toBe(true);
    const library = readdirSync('/usr/lib/x86_64-linux-gnu').find((name) => /^librocksdb\.so\.\d+\.\d+$/.test(name));
    expect(library).toBeDefined();
    const dir = freshDirectory();
    mkdirSync(join(dir, 'state'));
    const script = `const m = await import(${JSON.stringify(join(ROOT, 'dist/storage/rocks-state-store.js'))});
      try { m.openRocksStateStore({ dir: ${JSON.stringify(join(dir, 'state'))} }); console.log('opened'); }
      catch (error) { console.log(JSON.stringify({ code: error.code, message: error.message, hint: error.hint })); }`;
    // A private mount namespace where the shared library is an empty file.
    const result = spawnSync(
      'unshare',
      ['-m', 'sh', '-c', `mount --bind /dev/null /usr/lib/x86_64-linux-gnu/${library} && exec "$0" --input-type=module -e "$1"`, process.execPath, script],
      { encoding: 'utf8' },
    );
    expect(result.status, result.stderr).toBe(0);
    const reported = JSON.parse(result.stdout.trim()) as { code: string; message: string; hint: string };
    expect(reported.code).toBe('58P01');
    expect(reported.message).toMatch(/cannot load the native RocksDB addon: .*librocksdb/);
    expect(reported.hint).toMatch(/apt-get install -y librocksdb-dev/);
  });

  it('a missing RocksDB library at install: the install step prints the exact command (non-root)', () => {
    const empty = freshDirectory();
    // Headers hidden in a private mount namespace; run as nobody, so it must not try apt-get itself.
    const result = spawnSync(
      'unshare',
      ['-m', 'sh', '-c', `mount --bind "$1" /usr/include/rocksdb && cd "$2" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$3" scripts/install-native.mjs`, 'sh', empty, ROOT, process.execPath],
      { encoding: 'utf8' },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('sudo apt-get update && sudo apt-get install -y librocksdb-dev build-essential');
  });
});
