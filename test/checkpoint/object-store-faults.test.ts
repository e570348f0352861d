// An object store that fails the way real ones do, against real server processes: a checkpoint
// URL that cannot be written or never answers stops the start (the probe); an S3 server that
// hangs (s3rver stopped with SIGSTOP: connections are accepted, nothing answers) neither hangs the
// shutdown nor loses a committed row, and a request past its deadline leaves a row in
// oxbow_catalog.checkpoints, counts in /metrics, and the checkpoint completes once the store
// answers again.

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { s3rverSuite, tableRows } from './support/s3rver-suite.js';

const suite = s3rverSuite('oxbow-object-store-faults-');
const work = suite.work;

/** Waits until `check` returns a value (not undefined), polling every 100 ms. */
async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface CheckpointRow {
  epoch: string;
  status: string;
  error: string | null;
}

async function checkpointRows(client: pg.Client): Promise<CheckpointRow[]> {
  return (await client.query<CheckpointRow>('select epoch::text as epoch, status, error from oxbow_catalog.checkpoints')).rows;
}

const running: OxbowServer[] = [];
afterEach(async () => {
  suite.s3rver.resume();
  for (const server of running.splice(0)) await server.kill('SIGKILL');
});

describe('object store faults', () => {
  it('a checkpoint URL that cannot be written stops the start with a message naming it', async () => {
    const dataDir = join(work, 'sys-data');
    const started = startOxbow({ dataDir, args: ['--checkpoint-url', 'file:///sys/oxbow-x'] });
    await expect(started).rejects.toThrow(/exited before it was ready \(code 1[\s\S]*the checkpoint URL file:\/\/\/sys\/oxbow-x cannot be used: .*(EPERM|EACCES|EROFS)/);
  });

  it('a checkpoint folder that never answers stops the start at the request deadline', async () => {
    // Node's mkdir on /proc never returns: the probe stops waiting at the deadline.
    const dataDir = join(work, 'proc-data');
    const before = Date.now();
    const started = startOxbow({ dataDir, args: ['--checkpoint-url', 'file:///proc/oxbow-x', '--object-store-timeout-ms', '1000'] });
    await expect(started).rejects.toThrow(/exited before it was ready \(code 1[\s\S]*the checkpoint URL file:\/\/\/proc\/oxbow-x cannot be used: [\s\S]*(no answer within 1000 ms|has not returned)/);
    expect(Date.now() - before).toBeLessThan(30_000);
  });

  it('an S3 server that hangs mid-checkpoint: SIGTERM exits within the bound, the next start uploads every committed row', { timeout: 180_000 }, async () => {
    const url = `s3://oxbow/hang-${randomBytes(4).toString('hex')}`;
    const dataDir = join(work, 'hang-data');
    // The request deadline (60 s default) is far beyond the shutdown bound: only the bound ends it.
    const args = ['--checkpoint-url', url, '--checkpoint-interval-ms', '300', '--shutdown-timeout-ms', '3000'];
    const env = { ...suite.s3rver.env, OXBOW_CHECKPOINT_TRACE: '1' };
    let server = await startOxbow({ dataDir, args, env });
    running.push(server);
    let client = await connectToKillable(server);
    await client.query('create table t (id int primary key, v bigint)');
    await client.query('insert into t select g, g * 10 from generate_series(1, 100) as g');
    await eventually('a first complete checkpoint', 30_000, () => (/checkpoint complete [1-9]/.test(server.stderr()) ? true : undefined));

    suite.s3rver.pause();
    const traced = server.stderr().length;
    const expected = new Map<number, number>();
    for (let id = 1; id <= 100; id++) expected.set(id, id * 10);
    await client.query('insert into t select g, g * 10 from generate_series(101, 300) as g');
    await client.query('update t set v = v + 1 where id <= 50');
    for (let id = 101; id <= 300; id++) expected.set(id, id * 10);
    for (let id = 1; id <= 50; id++) expected.set(id, id * 10 + 1);
    expect(await tableRows(client)).toEqual(expected);
    // A checkpoint holding the new rows is uploading to a server that does not answer.
    await eventually('a checkpoint uploading to the hung server', 30_000, () => (/checkpoint upload [1-9]/.test(server.stderr().slice(traced)) ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 500));
    await client.end();

    const stopping = Date.now();
    await server.kill('SIGTERM');
    const stopMs = Date.now() - stopping;
    expect(server.process.signalCode, server.stderr()).toBeNull(); // exited by itself, not killed by the helper
    expect(stopMs, server.stderr()).toBeLessThan(3000 + 5000);
    expect(server.stderr()).toMatch(/checkpoint abandoned at shutdown after 1500 ms|shutdown did not finish within 3000 ms.*abandoned: /);

    // The store answers again: the next start has every committed row and completes a checkpoint.
    suite.s3rver.resume();
    server = await startOxbow({ dataDir, args, env });
    running.push(server);
    client = await connectToKillable(server);
    expect(await tableRows(client)).toEqual(expected);
    const recovered = await client.query<{ source: string }>('select source from oxbow_catalog.recovery');
    expect(recovered.rows[0]!.source).toBe('local');
    await eventually('a complete checkpoint after the restart', 30_000, async () => ((await checkpointRows(client)).some((row) => row.status === 'complete') ? true : undefined));
    await client.end();
    await server.kill('SIGTERM');
    expect(server.process.exitCode).toBe(0);

    // That checkpoint holds everything: without the data directory, the object store alone restores every row.
    rmSync(dataDir, { recursive: true, force: true });
    server = await startOxbow({ dataDir, args, env });
    running.push(server);
    client = await connectToKillable(server);
    expect((await client.query<{ source: string }>('select source from oxbow_catalog.recovery')).rows[0]!.source).toBe('remote');
    expect(await tableRows(client)).toEqual(expected);
    await client.end();
  });

  it('an upload past its deadline leaves an error row and counts in /metrics; the checkpoint completes once the store answers', { timeout: 180_000 }, async () => {
    const url = `s3://oxbow/timeout-${randomBytes(4).toString('hex')}`;
    const dataDir = join(work, 'timeout-data');
    const args = ['--checkpoint-url', url, '--checkpoint-interval-ms', '300', '--object-store-timeout-ms', '1000', '--metrics-port', '0'];
    const server = await startOxbow({ dataDir, args, env: suite.s3rver.env });
    running.push(server);
    const client = await connectToKillable(server);
    await client.query('create table t (id int primary key, v bigint)');
    await client.query('insert into t select g, g from generate_series(1, 50) as g');
    await eventually('a first complete checkpoint', 30_000, async () => ((await checkpointRows(client)).some((row) => row.status === 'complete') ? true : undefined));

    suite.s3rver.pause();
    await client.query('insert into t select g, g from generate_series(51, 200) as g');
    const timedOut = await eventually('a checkpoint request past its deadline', 30_000, async () =>
      (await checkpointRows(client)).find((row) => row.status !== 'complete' && /no answer within 1000 ms/.test(row.error ?? '')),
    );
    expect(BigInt(timedOut.epoch)).toBeGreaterThan(0n);
    const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(server.stderr())![1]!;
    const text = await (await fetch(metricsUrl)).text();
    expect(Number(/^oxbow_object_store_timeouts_total (\d+)$/m.exec(text)![1])).toBeGreaterThan(0);
    expect(Number(/^oxbow_checkpoint_retries_total (\d+)$/m.exec(text)![1])).toBeGreaterThan(0);

    suite.s3rver.resume();
    const complete = await eventually('a complete checkpoint holding the rows', 60_000, async () =>
      (await checkpointRows(client)).find((row) => row.status === 'complete' && BigInt(row.epoch) >= BigInt(timedOut.epoch)),
    );
    expect(BigInt(complete.epoch)).toBeGreaterThanOrEqual(BigInt(timedOut.epoch));
    expect((await client.query<{ n: string }>('select count(*) as n from t')).rows[0]!.n).toBe('200');
    await client.end();
  });
});
