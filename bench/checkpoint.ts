// Checkpoint benchmarks, as JSON lines {"bench","metric","value","unit"}:
//   - bytes uploaded per checkpoint as a share of the state size, with 1% of the keys changed
//     between checkpoints (the first, full checkpoint reported separately);
//   - checkpoint duration, the cut's duration, and the longest stalls while one runs: of the event
//     loop (a 1 ms timer's lateness) and of processing (a writer committing an epoch every 5 ms under
//     the engine's WriteLock; the checkpoint does not take it: the cut runs while commits go on),
//     and of the synchronous commit itself (WAL fsync, slowed when the checkpoint's I/O shares the
//     disk);
//   - restore time of the whole state from a local folder and from s3rver.
// The state is 1 KiB rows with random (incompressible) values; BENCH_SCALE=1 is 1 GiB of rows
// (the size), the default 0.1 is a quick run of about 100 MiB.
// Run: npm run build && node dist/bench/checkpoint.js   (BENCH_SCALE=1 for the full size,
// BENCH_ROUNDS=8 by default, BENCH_COMMIT=sync for the writer's synchronous commit, BENCH_VERBOSE=1 prints RocksDB's level stats after each round,
// BENCH_ROCKSDB='{"blobMinBytes":0}' opens RocksDB with those options (JSON; 0 keeps rows in SST
// files, the layout before blob files), BENCH_RETENTION_MS=1000 lets versions expire so version GC
// and blob garbage happen; after the rounds: state growth, random point reads and a full scan)

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { epochFromMillis, type Epoch } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { CheckpointMetrics } from '../storage/checkpoint/checkpoint-metrics.js';
import { Checkpointer } from '../storage/checkpoint/checkpointer.js';
import { restoreFromObjectStore } from '../storage/checkpoint/restore.js';
import { FileObjectStore } from '../storage/object-store/file-object-store.js';
import type { ObjectStore } from '../storage/object-store/object-store.js';
import { S3ObjectStore } from '../storage/object-store/s3-object-store.js';
import { openRocksStateStore } from '../storage/rocks-state-store.js';
import type { StateTableSchema } from '../storage/state-table.js';
import type { OpenOptions } from '../storage/rocksdb.js';
import { WriteLock } from '../executor/engine/engine-core.js';

const scale = Number(process.env.BENCH_SCALE ?? '0.1');
const ROW_BYTES = 1024;
const ROWS = Math.round(((1 << 30) / ROW_BYTES) * scale);
const COMMIT_ROWS = 10_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '8');
/** BENCH_COMMIT=sync measures the writer with the synchronous commit (WAL fsync on the event loop),
 * to compare with the engine's asynchronous commit (commitAsync), the default. */
const ASYNC_COMMIT = (process.env.BENCH_COMMIT ?? 'async') !== 'sync';
const root = mkdtempSync(join(tmpdir(), 'oxbow-bench-checkpoint-'));
const schema: StateTableSchema = { tableId: 30000, columnTypes: [type('int8'), type('text')], primaryKey: [0] };

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'checkpoint', metric, value: Number(value.toPrecision(4)), unit }));
}


async function startS3rver(directory: string): Promise<{ endpoint: string; stop: () => void }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../test/checkpoint/support/s3rver-child.mjs', import.meta.url)), directory, '0'], {
    env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve((JSON.parse(text.split('\n')[0]!) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') };
}

/**
 * Runs the writer and the event-loop timer while `during` runs: a writer commits a small epoch every
 * 5 ms under the lock, and a 1 ms timer measures how late the event loop runs it. Returns what
 * `during` returned and the longest waits seen: for the lock and the commit, for the commit call
 * itself (WAL write and fsync: slow when a checkpoint's I/O shares the disk), and of the loop.
 */
async function measureLoad<T>(
  table: ReturnType<ReturnType<typeof openRocksStateStore>['table']>,
  store: ReturnType<typeof openRocksStateStore>,
  lock: WriteLock,
  nextEpoch: () => Epoch,
  value: () => string,
  during: () => Promise<T>,
): Promise<{ result: T; longestCommitMs: number; longestCommitCallMs: number; longestLoopStallMs: number }> {
  let running = true;
  let longestCommitMs = 0;
  let longestCommitCallMs = 0;
  let longestLoopStallMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    longestLoopStallMs = Math.max(longestLoopStallMs, now - last - 1);
    last = now;
  }, 1);
  const writer = (async () => {
    while (running) {
      const asked = performance.now();
      await lock.run(async () => {
        table.insert([BigInt(Math.floor(Math.random() * ROWS)), value()]);
        const committing = performance.now();
        // ASYNC_COMMIT: what the engine does, the write and its fsync on the libuv pool while the
        // writer awaits them and the event loop stays free.
        if (ASYNC_COMMIT) await store.commitAsync(nextEpoch());
        else store.commit(nextEpoch());
        longestCommitCallMs = Math.max(longestCommitCallMs, performance.now() - committing);
      });
      longestCommitMs = Math.max(longestCommitMs, performance.now() - asked);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const result = await during();
  running = false;
  await writer;
  clearInterval(timer);
  return { result, longestCommitMs, longestCommitCallMs, longestLoopStallMs };
}

async function main(): Promise<void> {
  const store = openRocksStateStore({
    dir: join(root, 'state'),
    memoryLimitBytes: 0,
    ...(process.env.BENCH_RETENTION_MS === undefined ? {} : { retentionMs: Number(process.env.BENCH_RETENTION_MS) }),
    rocksdb: JSON.parse(process.env.BENCH_ROCKSDB ?? '{}') as OpenOptions,
  });
  const table = store.table(schema);
  let clockMs = Date.now() - 3_600_000;
  // With BENCH_RETENTION_MS the clock moves 100 ms per commit, so versions older than the retention
  // become garbage that compactions drop (and, with blob files, blob GC reclaims).
  const clockStepMs = process.env.BENCH_RETENTION_MS === undefined ? 1 : 100;
  const nextEpoch = (): Epoch => epochFromMillis((clockMs += clockStepMs));
  const value = (): string => randomBytes((ROW_BYTES * 3) / 4 - 16).toString('base64');
  for (let key = 0; key < ROWS; key++) {
    table.insert([BigInt(key), value()]);
    if ((key + 1) % COMMIT_ROWS === 0 || key === ROWS - 1) store.commit(nextEpoch());
  }
  await store.compact();

  const lock = new WriteLock();
  const metrics = new CheckpointMetrics();
  const s3rverDir = join(root, 's3rver');
  const s3 = await startS3rver(s3rverDir);
  const stores: [string, ObjectStore][] = [
    ['folder', new FileObjectStore(join(root, 'remote'))],
    ['s3rver', new S3ObjectStore({ bucket: 'oxbow', prefix: 'bench', endpoint: s3.endpoint, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } })],
  ];
  const checkpointers = stores.map(([, objectStore]) =>
    Checkpointer.open({
      store,
      stateDir: join(root, 'state'),
      stagingDir: join(root, `staging-${randomBytes(3).toString('hex')}`),
      objectStore,
      metrics,
      oxbowVersion: 'bench',
      describe: () => ({ catalogVersion: 'bench', sourceOffsets: {} }),
      keepLast: 2,
      keepWithinMs: 0,
    }),
  );

  const first = (await checkpointers[0]!.checkpoint())!;
  await checkpointers[1]!.checkpoint();
  const stateBytes = first.bytesReferenced;
  emit('state_size', stateBytes / 2 ** 20, 'MiB');
  emit('first_checkpoint_uploaded_share', (100 * first.bytesUploaded) / stateBytes, '%');
  emit('first_checkpoint_duration_folder', first.durationMs, 'ms');

  const changed = Math.max(1, Math.round(ROWS / 100));
  const shares: number[] = [];
  let lastRecordBytes = stateBytes;
  for (let round = 0; round < ROUNDS; round++) {
    for (let index = 0; index < changed; index++) {
      table.insert([BigInt(Math.floor(Math.random() * ROWS)), value()]);
      if ((index + 1) % COMMIT_ROWS === 0 || index === changed - 1) store.commit(nextEpoch());
    }
    // During the checkpoint the writer's load (measureLoad); the same load without a checkpoint
    // first, as the baseline (a commit is a synchronous WAL fsync, itself a stall on a slow disk).
    const baseline = await measureLoad(table, store, lock, nextEpoch, value, () => new Promise((resolve) => setTimeout(resolve, 400)));
    emit(`round${round + 1}_baseline_longest_commit_wait`, baseline.longestCommitMs, 'ms');
    emit(`round${round + 1}_baseline_longest_event_loop_stall`, baseline.longestLoopStallMs, 'ms');
    const during = await measureLoad(table, store, lock, nextEpoch, value, () => checkpointers[0]!.checkpoint());
    const record = during.result!;
    const { longestCommitMs, longestCommitCallMs, longestLoopStallMs } = during;
    await checkpointers[1]!.checkpoint();
    emit(`round${round + 1}_uploaded_share`, (100 * record.bytesUploaded) / record.bytesReferenced, '%');
    emit(`round${round + 1}_uploaded`, record.bytesUploaded / 2 ** 20, 'MiB');
    emit(`round${round + 1}_duration_folder`, record.durationMs, 'ms');
    emit(`round${round + 1}_commit_pause`, record.pauseMs, 'ms');
    emit(`round${round + 1}_longest_commit_wait`, longestCommitMs, 'ms');
    emit(`round${round + 1}_longest_commit_fsync`, longestCommitCallMs, 'ms');
    emit(`round${round + 1}_longest_event_loop_stall`, longestLoopStallMs, 'ms');
    emit(`round${round + 1}_cut`, record.cutMs, 'ms');
    shares.push((100 * record.bytesUploaded) / record.bytesReferenced);
    lastRecordBytes = record.bytesReferenced;
    if (process.env.BENCH_VERBOSE !== undefined) console.error(`round ${round + 1}:\n${store.database.getProperty('rocksdb.levelstats') ?? ''}`);
  }
  // Steady state: the mean share over the rounds after the first three (when there are more).
  const steady = shares.length > 3 ? shares.slice(3) : shares;
  emit('mean_uploaded_share', shares.reduce((sum, share) => sum + share, 0) / shares.length, '%');
  emit(`mean_uploaded_share_rounds_${shares.length > 3 ? 4 : 1}_to_${shares.length}`, steady.reduce((sum, share) => sum + share, 0) / steady.length, '%');
  const lastReferenced = shares.length === 0 ? stateBytes : lastRecordBytes;
  emit('final_state_size', lastReferenced / 2 ** 20, 'MiB');
  emit('space_growth', lastReferenced / stateBytes, 'x');
  // Read cost: random point reads (no row cache) and a full scan, after the rounds.
  const reads = 20_000;
  let found = 0;
  const readStart = performance.now();
  for (let index = 0; index < reads; index++) if (table.get([BigInt(Math.floor(Math.random() * ROWS))]) !== undefined) found++;
  emit('point_read', ((performance.now() - readStart) * 1000) / reads, 'us');
  if (found !== reads) throw new Error(`point reads found ${found} of ${reads} rows`);
  const scanStart = performance.now();
  let scanned = 0;
  for (const row of table.scan()) if (row !== undefined) scanned++;
  emit('full_scan', scanned / ((performance.now() - scanStart) / 1000), 'rows/s');
  if (scanned !== ROWS) throw new Error(`the scan saw ${scanned} of ${ROWS} rows`);
  await store.close();

  for (const [name, objectStore] of stores) {
    const target = join(root, `restored-${name}`);
    const started = performance.now();
    const result = await restoreFromObjectStore({ objectStore, stateDir: target });
    const elapsedMs = performance.now() - started;
    emit(`restore_${name}`, elapsedMs, 'ms');
    emit(`restore_${name}_throughput`, result.bytesDownloaded / 2 ** 20 / (elapsedMs / 1000), 'MiB/s');
    objectStore.close();
  }
  s3.stop();
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => rmSync(root, { recursive: true, force: true }));
