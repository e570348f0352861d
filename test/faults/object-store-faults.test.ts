// The S3-compatible store (s3rver) behind the fault proxy while oxbow checkpoints every 300 ms
// and a client keeps inserting: connections cut with an RST mid-upload, a store that hangs (the
// proxy holds every byte), and every byte 1.5 s late (past the 1 s request deadline,
// --object-store-timeout-ms). Each time: oxbow keeps running, the failed checkpoint is a row of
// oxbow_catalog.checkpoints with its error, and once the fault clears a later checkpoint completes
// by itself. At the end a start without the data directory restores every acknowledged row from
// the store alone.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3rver, type S3rverProcess } from '../checkpoint/support/s3rver.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { eventually, expectAlive, report, ServerSet } from './support.js';

const work = mkdtempSync(join(tmpdir(), 'oxbow-object-store-proxy-'));
let s3rver: S3rverProcess;
let proxy: FaultProxy;
const servers = new ServerSet();

beforeAll(async () => {
  s3rver = await startS3rver();
  proxy = await FaultProxy.start(s3rver.port);
});

afterAll(async () => {
  await servers.killAll();
  await proxy?.close();
  await s3rver?.dispose();
  rmSync(work, { recursive: true, force: true });
});

interface CheckpointRow {
  epoch: string;
  status: string;
  error: string | null;
}

describe('object store faults through the proxy', () => {
  it('survives resets, a hang and latency; checkpoints complete again; the store alone restores every acknowledged row', { timeout: 150_000 }, async () => {
    const url = `s3://oxbow/proxy-${randomBytes(4).toString('hex')}`;
    const dataDir = join(work, 'data');
    const env = { ...s3rver.env, AWS_ENDPOINT_URL: `http://127.0.0.1:${proxy.port}` };
    const args = ['--barrier-interval-ms', '100', '--checkpoint-url', url, '--checkpoint-interval-ms', '300', '--object-store-timeout-ms', '1000'];
    let { server, client } = await servers.start({ dataDir, args, env });
    const checkpoints = async (): Promise<CheckpointRow[]> => (await client.query<CheckpointRow>('select epoch::text as epoch, status, error from oxbow_catalog.checkpoints')).rows;
    await client.query('create table t (id int primary key, pad text)');
    let acked = 0;
    const insert = async (rows: number): Promise<void> => {
      await client.query(`insert into t select g, repeat('p', 500) from generate_series(${acked + 1}, ${acked + rows}) as g`);
      acked += rows;
    };
    await insert(500);
    await eventually('a first complete checkpoint', 30_000, async () => ((await checkpoints()).some((row) => row.status === 'complete') ? true : undefined));

    const faults: { name: string; inject(): void; error: RegExp }[] = [
      { name: 'reset', inject: () => proxy.reset(4000), error: /ECONNRESET|socket hang up|reset|aborted|closed|Unavailable|network|no answer within/i },
      { name: 'hang', inject: () => proxy.hang(), error: /no answer within 1000 ms/ },
      { name: 'latency', inject: () => proxy.latency(1500), error: /no answer within 1000 ms/ },
    ];
    for (const fault of faults) {
      const completeBefore = (await checkpoints()).filter((row) => row.status === 'complete').reduce((top, row) => (BigInt(row.epoch) > top ? BigInt(row.epoch) : top), 0n);
      fault.inject();
      await insert(2000);
      // A checkpoint of the new rows that failed: above every complete one before the fault.
      const failed = await eventually(`a checkpoint failing during the ${fault.name}`, 30_000, async () =>
        (await checkpoints()).find((row) => row.status !== 'complete' && row.error !== null && fault.error.test(row.error) && BigInt(row.epoch) > completeBefore),
      );
      expectAlive(server);
      // Not complete while the fault lasts (the hang and the latency fail every request).
      if (fault.name !== 'reset') expect((await checkpoints()).some((row) => row.status === 'complete' && BigInt(row.epoch) >= BigInt(failed.epoch))).toBe(false);
      const cleared = Date.now();
      proxy.resume();
      await eventually(`a complete checkpoint after the ${fault.name}`, 60_000, async () =>
        (await checkpoints()).some((row) => row.status === 'complete' && BigInt(row.epoch) >= BigInt(failed.epoch)) ? true : undefined,
      );
      report(`object_store_${fault.name}_recovery`, Date.now() - cleared, 'ms');
    }
    // One more complete checkpoint holding everything acknowledged.
    await insert(100);
    const last = BigInt((await client.query<{ e: string }>('select committed_epoch::text as e from oxbow_catalog.epochs')).rows[0]!.e);
    await eventually('a checkpoint holding the last rows', 60_000, async () => ((await checkpoints()).some((row) => row.status === 'complete' && BigInt(row.epoch) >= last) ? true : undefined));
    await client.end();
    await server.kill('SIGKILL');

    // The data directory is gone: the store alone holds every acknowledged row.
    rmSync(dataDir, { recursive: true, force: true });
    ({ server, client } = await servers.start({ dataDir, args, env }));
    expect((await client.query<{ source: string }>('select source from oxbow_catalog.recovery')).rows[0]!.source).toBe('remote');
    const restored = (await client.query<{ n: string; top: number }>('select count(*) as n, max(id) as top from t')).rows[0]!;
    expect(Number(restored.n)).toBe(acked);
    expect(restored.top).toBe(acked);
    report('object_store_acknowledged_rows', acked, 'rows');
    report('object_store_lost', acked - Number(restored.n), 'rows');
    await client.end();
  });
});
