// Checkpoints of a real RocksDB state store to a real object store (a folder and s3rver), and
// restores from them: incremental uploads, retention and reference counting, the start-up sweep,
// and every damage a restore must refuse (corrupted, truncated or missing file, damaged manifest),
// falling back to the previous complete checkpoint. Expected rows come from a Map the test keeps
// beside the store, never from the store under test.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epochFromMillis, type Epoch } from '../../sql/epoch.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import { CheckpointMetrics } from '../../storage/checkpoint/checkpoint-metrics.js';
import { CheckpointLoop } from '../../storage/checkpoint/checkpoint-loop.js';
import { Checkpointer } from '../../storage/checkpoint/checkpointer.js';
import { recoverStateDir } from '../../storage/checkpoint/recover.js';
import { restoreFromObjectStore } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import type { ObjectStore } from '../../storage/object-store/object-store.js';
import { S3ObjectStore } from '../../storage/object-store/s3-object-store.js';
import { openRocksStateStore, type RocksStateStore } from '../../storage/rocks-state-store.js';
import { RocksDatabase } from '../../storage/rocksdb.js';
import type { StateTableSchema } from '../../storage/state-table.js';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverProcess } from './support/s3rver.js';
import { committedRows } from './support/committed-rows.js';
import { openTestCheckpointer } from './support/test-checkpointer.js';

const schema: StateTableSchema = { tableId: 20000, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const work = mkdtempSync(join(tmpdir(), 'oxbow-checkpoint-'));
let s3rver: S3rverProcess;
const fastRetry = { attempts: 3, baseDelayMs: 10, maxDelayMs: 50 };

beforeAll(async () => {
  s3rver = await startS3rver();
});
afterAll(async () => {
  await s3rver.dispose();
  rmSync(work, { recursive: true, force: true });
});

function s3Store(prefix: string, credentials = S3RVER_CREDENTIALS): S3ObjectStore {
  return new S3ObjectStore({ bucket: 'oxbow', prefix, endpoint: s3rver.endpoint, credentials, retry: fastRetry });
}

/** A store with a model of its rows, committing at strictly increasing epochs. */
class Fixture {
  readonly dir = mkdtempSync(join(work, 'data-'));
  readonly stateDir = join(this.dir, 'state');
  readonly store: RocksStateStore = openRocksStateStore({ dir: this.stateDir, memoryLimitBytes: 0, rocksdb: { writeBufferBytes: 1 << 20 } });
  readonly model = new Map<number, string>();
  readonly metrics = new CheckpointMetrics();
  private clockMs = Date.now();

  write(keys: Iterable<number>, tag: string): Epoch {
    const table = this.store.table(schema);
    for (const key of keys) {
      const value = `${tag}-${key}-${'x'.repeat(100)}`;
      table.insert([key, value]);
      this.model.set(key, value);
    }
    this.clockMs += 1000;
    const epoch = epochFromMillis(this.clockMs);
    this.store.commit(epoch);
    return epoch;
  }

  checkpointer(objectStore: ObjectStore, keepLast = 3): Checkpointer {
    return openTestCheckpointer({
      store: this.store,
      stateDir: this.stateDir,
      stagingDir: join(this.dir, 'staging'),
      objectStore,
      metrics: this.metrics,
      describe: () => ({ catalogVersion: 'v1', sourceOffsets: { generator: '42' } }),
      keepLast,
    });
  }
}

function rowsOf(stateDir: string): Promise<{ epoch: Epoch; rows: Row[] }> {
  return committedRows(stateDir, schema);
}

function modelRows(model: Map<number, string>): Row[] {
  return [...model.entries()].sort((left, right) => left[0] - right[0]).map(([key, value]) => [key, value]);
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, index) => from + index);

describe.each([
  ['local folder', () => new FileObjectStore(mkdtempSync(join(work, 'remote-')))],
  ['s3rver', () => s3Store(`checkpoint-${randomBytes(4).toString('hex')}`)],
] as [string, () => ObjectStore][])('checkpoints to %s', (_name, createStore) => {
  it('uploads only new SST files, and a restore gives back exactly the checkpointed state', async () => {
    const fixture = new Fixture();
    const remote = createStore();
    const checkpointer = fixture.checkpointer(remote);
    fixture.write(range(0, 20_000), 'a');
    const first = (await checkpointer.checkpoint())!;
    expect(first.status).toBe('complete');
    expect(first.bytesUploaded).toBeGreaterThanOrEqual(first.bytesReferenced);
    const atFirst = modelRows(fixture.model);

    // 1% of the keys change: the second checkpoint re-uses the first one's SST files.
    const epoch = fixture.write(range(0, 200), 'b');
    const second = (await checkpointer.checkpoint())!;
    expect(second.epoch).toBe(epoch);
    expect(second.bytesUploaded).toBeLessThan(second.bytesReferenced * 0.5);
    expect(await checkpointer.checkpoint()).toBeUndefined(); // nothing committed since

    fixture.write(range(200, 400), 'c'); // after the checkpoint: not in it
    const restoredDir = join(fixture.dir, 'restored');
    const restored = await restoreFromObjectStore({ objectStore: remote, stateDir: restoredDir });
    expect(restored.manifest!.epoch).toBe(epoch.toString());
    expect(restored.manifest!.sourceOffsets).toEqual({ generator: '42' });
    const expected = new Map(fixture.model);
    for (const key of range(200, 400)) expected.set(key, `a-${key}-${'x'.repeat(100)}`); // as written before the checkpoint
    const { epoch: restoredEpoch, rows } = await rowsOf(restoredDir);
    expect(restoredEpoch).toBe(epoch);
    expect(rows).toEqual(modelRows(expected));

    // A chosen older epoch restores that state.
    const olderDir = join(fixture.dir, 'older');
    await restoreFromObjectStore({ objectStore: remote, stateDir: olderDir, epoch: first.epoch });
    expect((await rowsOf(olderDir)).rows).toEqual(atFirst);
    await fixture.store.close();
    remote.close();
  });

  it('keeps the last N checkpoints and deletes files no kept manifest names; the sweep removes orphans', async () => {
    const fixture = new Fixture();
    const remote = createStore();
    const checkpointer = fixture.checkpointer(remote, 2);
    for (let round = 0; round < 4; round++) {
      fixture.write(range(round * 3000, round * 3000 + 3000), `r${round}`);
      await fixture.store.compact(); // rewrites every SST: old ones become garbage remotely
      await checkpointer.checkpoint();
    }
    const objects = await remote.list('');
    const manifests = objects.filter((object) => object.key.startsWith('manifests/'));
    expect(manifests).toHaveLength(2);
    const named = new Set<string>();
    for (const manifest of manifests) {
      const body = JSON.parse(Buffer.from(await remote.getBytes(manifest.key)).toString('utf8')) as { manifest: { files: { key: string }[] } };
      for (const file of body.manifest.files) named.add(file.key);
    }
    const dataKeys = objects.filter((object) => !object.key.startsWith('manifests/')).map((object) => object.key);
    expect(new Set(dataKeys)).toEqual(named);

    // An upload that died before its manifest left orphans; the next start's sweep removes them.
    await remote.putBytes('sst/dead-incarnation/000099.sst', Buffer.from('orphan'));
    await remote.putBytes('files/00000000000000000001/MANIFEST-000001', Buffer.from('orphan'));
    // So did a start killed between its probe's write and delete.
    await remote.putBytes('probe/12345-0123456789ab', Buffer.from('oxbow start-up probe'));
    const restarted = fixture.checkpointer(remote, 2);
    const swept = await restarted.sweep();
    expect(swept.deletedFiles).toBe(2);
    expect((await remote.list('')).map((object) => object.key).sort()).toEqual([...named, ...manifests.map((manifest) => manifest.key)].sort());
    await fixture.store.close();
    remote.close();
  });
});

describe('the records column family', () => {
  it('a checkpoint uploads its files and a restore opens them: the records table and the epoch read back', async () => {
    const fixture = new Fixture();
    const remote = new FileObjectStore(mkdtempSync(join(work, 'remote-')));
    const checkpointer = fixture.checkpointer(remote);
    // A replayed source's positions: a records table (storage/DESIGN.md §6).
    const positionsSchema: StateTableSchema = { tableId: 19999, columnTypes: [type('int8'), type('int8')], primaryKey: [0], records: true };
    const positions = new Map<bigint, bigint>();
    let epoch: Epoch = 0n;
    for (let round = 0; round < 3; round++) {
      const table = fixture.store.table(positionsSchema);
      for (let split = 0n; split < 4n; split++) {
        const position = BigInt(round * 100) + split;
        table.insert([split, position]);
        positions.set(split, position);
      }
      epoch = fixture.write(range(round * 1000, (round + 1) * 1000), `r${round}`);
    }
    expect((await checkpointer.checkpoint())!.status).toBe('complete');
    const restoredDir = join(fixture.dir, 'restored');
    const restored = await restoreFromObjectStore({ objectStore: remote, stateDir: restoredDir });
    const names = new Set(restored.manifest!.files.map((file) => file.name));
    const database = RocksDatabase.open(restoredDir, { readOnly: true, createIfMissing: false });
    try {
      const files = database.liveFiles();
      expect(files.some((file) => file.family === 'records')).toBe(true);
      expect(files.some((file) => file.family === 'default')).toBe(true);
      for (const file of files) expect(names.has(file.name)).toBe(true);
      expect(database.recordsTables()).toEqual([19999]);
    } finally {
      await database.close();
    }
    const { epoch: restoredEpoch, rows } = await rowsOf(restoredDir);
    expect(restoredEpoch).toBe(epoch);
    expect(rows).toEqual(modelRows(fixture.model));
    expect((await committedRows(restoredDir, positionsSchema)).rows).toEqual([...positions].map(([split, position]) => [split, position]));
    await fixture.store.close();
    remote.close();
  });
});

describe('the cut runs while commits go on', () => {
  it('names the epoch the cut holds, with the metadata committed in that same epoch', async () => {
    const fixture = new Fixture();
    const remote = new FileObjectStore(mkdtempSync(join(work, 'remote-')));
    // Each commit stores its own ordinal as metadata; describe reads it back from the cut.
    const store = fixture.store;
    const checkpointer = openTestCheckpointer({
      store,
      stateDir: fixture.stateDir,
      stagingDir: join(fixture.dir, 'staging'),
      objectStore: remote,
      metrics: fixture.metrics,
      describe: (getMeta) => ({ catalogVersion: 'v1', sourceOffsets: { ordinal: Buffer.from(getMeta('ordinal') ?? new Uint8Array()).toString('utf8') } }),
      keepLast: 10,
    });
    const epochs: Epoch[] = [];
    const snapshots: Row[][] = [];
    const commit = (ordinal: number): void => {
      store.putMeta('ordinal', Buffer.from(String(ordinal)));
      epochs.push(fixture.write(range(ordinal * 50, ordinal * 50 + 50).map((key) => key % 4000), `o${ordinal}`));
      snapshots.push(modelRows(fixture.model));
    };
    for (let ordinal = 0; ordinal < 80; ordinal++) commit(ordinal);
    // Commits keep landing (between event-loop turns) while the cut runs on the libuv pool.
    let ordinal = 80;
    let checkpointing = true;
    const writer = (async () => {
      while (checkpointing) {
        commit(ordinal++);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const records = [];
    for (let round = 0; round < 3; round++) records.push((await checkpointer.checkpoint())!);
    checkpointing = false;
    await writer;
    expect(ordinal).toBeGreaterThan(80); // commits did interleave with the checkpoints
    for (const record of records) {
      expect(record.pauseMs).toBe(0);
      const index = epochs.indexOf(record.epoch);
      expect(index).toBeGreaterThanOrEqual(79); // a committed epoch, at least the one before the first cut
      const target = join(fixture.dir, `restored-${index}`);
      const restored = await restoreFromObjectStore({ objectStore: remote, stateDir: target, epoch: record.epoch });
      expect(restored.manifest!.sourceOffsets).toEqual({ ordinal: String(index) });
      const { epoch, rows } = await rowsOf(target);
      expect(epoch).toBe(record.epoch);
      expect(rows).toEqual(snapshots[index]);
    }
    await store.close();
    remote.close();
  });
});

describe('damaged checkpoints and failing object stores', () => {
  async function twoCheckpoints(remote: ObjectStore): Promise<{ fixture: Fixture; first: Epoch; second: Epoch; firstRows: Row[] }> {
    const fixture = new Fixture();
    const checkpointer = fixture.checkpointer(remote);
    fixture.write(range(0, 5000), 'a');
    const first = (await checkpointer.checkpoint())!.epoch;
    const firstRows = modelRows(fixture.model);
    fixture.write(range(0, 100), 'b');
    const second = (await checkpointer.checkpoint())!.epoch;
    return { fixture, first, second, firstRows };
  }

  /** A file only the newest checkpoint names (its RocksDB MANIFEST copy). */
  async function fileOnlyInNewest(remote: ObjectStore, second: Epoch): Promise<string> {
    const key = (await remote.list(`files/${second.toString().padStart(20, '0')}/`)).find((object) => object.key.includes('MANIFEST-'))!.key;
    return key;
  }

  /** Damage done through the object store's own API, so the same faults hit the folder and s3rver. */
  const damages: [string, (remote: ObjectStore, key: string, second: Epoch) => Promise<void>, RegExp][] = [
    ['a corrupted file', async (remote, key) => {
      const bytes = Buffer.from(await remote.getBytes(key));
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      await remote.putBytes(key, bytes);
    }, /SHA-256/],
    ['a truncated file', async (remote, key) => {
      await remote.putBytes(key, (await remote.getBytes(key)).subarray(0, 10));
    }, /truncated/],
    ['a missing file', async (remote, key) => {
      await remote.delete([key]);
    }, /cannot download/],
    ['a damaged manifest', async (remote, _key, second) => {
      const key = `manifests/${second.toString().padStart(20, '0')}.json`;
      await remote.putBytes(key, Buffer.from(Buffer.from(await remote.getBytes(key)).toString('utf8').replace('"epoch"', '"epoch" ').slice(0, -20)));
    }, /not valid JSON/],
  ];

  describe.each([
    ['local folder', () => new FileObjectStore(mkdtempSync(join(work, 'damaged-')))],
    ['s3rver', () => s3Store(`damaged-${randomBytes(4).toString('hex')}`)],
  ] as [string, () => ObjectStore][])('on %s', (_store, createStore) => {
    it.each(damages)('%s: restore and recovery at start refuse the newest checkpoint and use the previous one; the metrics say so', async (_name, damage, reason) => {
      const remote = createStore();
      const { fixture, first, second, firstRows } = await twoCheckpoints(remote);
      await damage(remote, await fileOnlyInNewest(remote, second), second);
      const restoredDir = join(fixture.dir, 'restored');
      const result = await restoreFromObjectStore({ objectStore: remote, stateDir: restoredDir });
      expect(result.manifest!.epoch).toBe(first.toString());
      expect(result.skipped).toHaveLength(1);
      expect(result.skipped[0]).toMatch(reason);
      const restored = await rowsOf(restoredDir);
      expect(restored.epoch).toBe(first);
      expect(restored.rows).toEqual(firstRows);
      // Recovery at start (the data directory lost) takes the same way and records it.
      const metrics = new CheckpointMetrics();
      const lostDir = join(fixture.dir, 'lost');
      await recoverStateDir({ stateDir: lostDir, objectStore: remote, metrics });
      expect(metrics.recovery).toMatchObject({ source: 'remote', epoch: first });
      expect(metrics.recovery!.skipped).toHaveLength(1);
      expect(metrics.prometheusText()).toMatch(/^oxbow_recovery_skipped_checkpoints 1$/m);
      expect((await rowsOf(lostDir)).rows).toEqual(firstRows);
      // Asking for the damaged one by hand is a clear error (XX001), not a silent fallback.
      await expect(restoreFromObjectStore({ objectStore: remote, stateDir: join(fixture.dir, 'by-hand'), epoch: second })).rejects.toMatchObject({ code: 'XX001' });
      await fixture.store.close();
      remote.close();
    });

    it('an SST file lost remotely while the server runs is uploaded again, never named missing by a manifest', async () => {
      const remote = createStore();
      const fixture = new Fixture();
      const checkpointer = fixture.checkpointer(remote);
      fixture.write(range(0, 5000), 'a');
      await fixture.store.compact(); // one bottom-level file that the next checkpoint still needs
      const first = (await checkpointer.checkpoint())!;
      const lost = (await remote.list('sst/'))[0]!.key;
      await remote.delete([lost]);
      fixture.write(range(0, 50), 'b');
      const second = (await checkpointer.checkpoint())!;
      expect(second.filesUploaded).toBeGreaterThan(1); // the new flush and the lost file
      expect((await remote.list('sst/')).map((object) => object.key)).toContain(lost);
      const result = await restoreFromObjectStore({ objectStore: remote, stateDir: join(fixture.dir, 'restored') });
      expect(result.skipped).toHaveLength(0);
      expect(result.manifest!.epoch).toBe(second.epoch.toString());
      expect((await rowsOf(join(fixture.dir, 'restored'))).rows).toEqual(modelRows(fixture.model));
      expect(first.epoch).toBeLessThan(second.epoch);
      await fixture.store.close();
      remote.close();
    });
  });

  it('a bucket without permission: the checkpoint fails with a clear error and the metrics say so', async () => {
    const fixture = new Fixture();
    const checkpointer = fixture.checkpointer(s3Store('denied', { accessKeyId: 'NOBODY', secretAccessKey: 'nope' }));
    fixture.write(range(0, 100), 'a');
    await expect(checkpointer.checkpoint()).rejects.toMatchObject({ code: 'AccessDenied' });
    expect(fixture.metrics.failuresTotal).toBe(1);
    expect(fixture.metrics.lastError).toMatch(/InvalidAccessKeyId|AccessDenied|Forbidden/);
    expect(fixture.metrics.prometheusText()).toMatch(/^oxbow_checkpoint_consecutive_failures 1$/m);
    await fixture.store.close();
  });

  it('the S3 server stopped mid-upload: the attempt fails, the next one after the restart completes and restores', async () => {
    const fixture = new Fixture();
    const remote = new S3ObjectStore({
      bucket: 'oxbow',
      prefix: `outage-${randomBytes(4).toString('hex')}`,
      endpoint: s3rver.endpoint,
      credentials: S3RVER_CREDENTIALS,
      retry: { ...fastRetry, onRetry: () => fixture.metrics.retriesTotal++ },
      multipartThresholdBytes: 5 << 20,
      partSizeBytes: 5 << 20,
    });
    const checkpointer = fixture.checkpointer(remote);
    fixture.write(range(0, 2000), 'a');
    await checkpointer.checkpoint();
    // Incompressible values make the next upload large enough to be cut by the outage.
    const table = fixture.store.table(schema);
    for (const key of range(2000, 5000)) {
      const value = randomBytes(3000).toString('base64');
      table.insert([key, value]);
      fixture.model.set(key, value);
    }
    fixture.store.commit(fixture.store.committedEpoch + 1n);
    const attempt = checkpointer.checkpoint();
    setTimeout(() => void s3rver.stop(), 30);
    await expect(attempt).rejects.toMatchObject({ code: 'Unavailable' });
    expect(fixture.metrics.failuresTotal).toBe(1);
    expect(fixture.metrics.retriesTotal).toBeGreaterThan(0); // retried with backoff before giving up
    expect(fixture.metrics.lastError).toMatch(/ECONNREFUSED|socket|connect|timed? ?out/i);
    await s3rver.start();
    const record = (await checkpointer.checkpoint())!;
    expect(record.epoch).toBe(fixture.store.committedEpoch);
    expect(fixture.metrics.consecutiveFailures).toBe(0);
    const restoredDir = join(fixture.dir, 'restored');
    await restoreFromObjectStore({ objectStore: remote, stateDir: restoredDir });
    expect((await rowsOf(restoredDir)).rows).toEqual(modelRows(fixture.model));
    await fixture.store.close();
    remote.close();
  });

  it('the checkpoint loop: waiters share one checkpoint; when it fails they get 58030 (committed locally, not remote)', async () => {
    const good = new Fixture();
    const loop = new CheckpointLoop(good.checkpointer(new FileObjectStore(mkdtempSync(join(work, 'loop-')))), { intervalMs: 60_000 });
    loop.start();
    const first = good.write(range(0, 10), 'a');
    const second = good.write(range(10, 20), 'b');
    await Promise.all([loop.waitForEpoch(first), loop.waitForEpoch(second)]);
    expect(good.metrics.checkpointsTotal).toBe(1); // one checkpoint released both
    expect(good.metrics.lastComplete!.epoch).toBe(second);
    await loop.stop();
    await good.store.close();

    const denied = new Fixture();
    const failing = new CheckpointLoop(denied.checkpointer(s3Store('loop-denied', { accessKeyId: 'NOBODY', secretAccessKey: 'nope' })), { intervalMs: 60_000, retryDelayMs: 10 });
    failing.start();
    const epoch = denied.write(range(0, 10), 'a');
    await expect(failing.waitForEpoch(epoch)).rejects.toMatchObject({
      code: '58030',
      message: expect.stringMatching(/committed locally/) as unknown as string,
    });
    await failing.stop();
    await denied.store.close();
  });
});

