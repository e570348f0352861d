// Local disk faults against a real oxbow server process, on real tmpfs mounts (the tests run as
// root; a mount that fails fails the test with mount's reason):
//
// - the data directory on a 64 MiB tmpfs fills up (a ballast file takes most of it) while a client
//   inserts and a datagen source writes: the INSERT that would eat into the disk reserve fails
//   with 53100, the source's failed commit is a row of oxbow_catalog.source_errors, the process
//   keeps running, and once the ballast is gone writes succeed again by themselves; every
//   acknowledged row is there, after a restart too, and the views equal their queries;
// - the checkpoint folder (--checkpoint-url file://) on a 4 MiB tmpfs that is full: the upload's
//   write fails (ENOSPC), a row of oxbow_catalog.checkpoints says so, and the next checkpoint
//   completes once there is room.

import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, expectAlive, expectViewEqualsQuery, report, ServerSet, sleep } from './support.js';

const work = mkdtempSync(join(tmpdir(), 'oxbow-disk-faults-'));
const mounts: string[] = [];
const servers = new ServerSet();

afterAll(async () => {
  await servers.killAll();
  for (const mountPoint of mounts) spawnSync('umount', ['-l', mountPoint]);
  rmSync(work, { recursive: true, force: true });
});

/** A fresh tmpfs of `size` (mount's syntax: 64m) at a new folder under `work`. */
function smallDisk(name: string, size: string): string {
  const mountPoint = join(work, name);
  mkdirSync(mountPoint);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mountPoint], { encoding: 'utf8' });
  if (mounted.status !== 0) throw new Error(`mount -t tmpfs -o size=${size} failed (the fault tests need root): ${mounted.stderr || mounted.error?.message}`);
  mounts.push(mountPoint);
  return mountPoint;
}

function freeBytes(path: string): number {
  const stats = statfsSync(path);
  return stats.bavail * stats.bsize;
}

/** Writes `path` until at most `leaveBytes` are free on its disk (or the disk is full). */
function ballast(path: string, leaveBytes: number): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(256 * 1024, 1);
  try {
    while (freeBytes(path) > leaveBytes) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

async function count(client: pg.Client, sql: string): Promise<number> {
  return Number((await client.query<{ n: string }>(sql)).rows[0]!.n);
}

describe('local disk faults', () => {
  it('a data directory that fills up: 53100 to the client, a source_errors row, writes again once there is room, nothing acknowledged lost', { timeout: 120_000 }, async () => {
    const disk = smallDisk('data-disk', '64m');
    const dataDir = join(disk, 'data');
    const args = ['--barrier-interval-ms', '100'];
    let { server, client } = await servers.start({ dataDir, args });
    await client.query('create table t (id int primary key, pad text)');
    await client.query('create materialized view t_totals as select count(*) as n, sum(length(pad)) as bytes, max(id) as top from t');
    await client.query("create source gen (id int) with (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000', datagen.rows.per.second = '200')");
    await client.query('create materialized view gen_counts as select count(*) as n, count(distinct id) as d from gen');

    // Leave 30 MiB: the server keeps about a third of the disk (21 MiB) in reserve.
    ballast(join(disk, 'ballast'), 30 << 20);
    const acked: number[] = [];
    let refused: { code: string; message: string } | undefined;
    for (let statement = 0; statement < 200 && refused === undefined; statement++) {
      const first = statement * 1000;
      try {
        await client.query(`insert into t select g, repeat('x', 1000) from generate_series(${first}, ${first + 999}) as g`);
        for (let id = first; id <= first + 999; id++) acked.push(id);
      } catch (error) {
        refused = error as { code: string; message: string };
      }
    }
    expect(refused, 'the disk never filled up').toBeDefined();
    expect(refused!.code, refused!.message).toBe('53100');
    expect(refused!.message).toMatch(/disk .* is nearly full/);
    // Fuller still (18 MiB free, inside the reserve): every commit fails, a one-row INSERT and the
    // source's small ones too.
    ballast(join(disk, 'ballast-2'), 18 << 20);
    await expect(client.query("insert into t values (-1, 'small')")).rejects.toMatchObject({ code: '53100' });
    const troubled = await eventually('a source_errors row for the datagen source', 20_000, async () => {
      const rows = await client.query<{ error: string }>("select error from oxbow_catalog.source_errors where source_name = 'gen' and partition_id is null");
      return rows.rows.find((row) => /53100|nearly full|committing source data failed/.test(row.error));
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${server.stderr().slice(-3000)}`);
    });
    expect(troubled.error).toMatch(/nearly full/);
    await sleep(500);
    expectAlive(server);
    expect(await count(client, 'select count(*) as n from t')).toBe(acked.length);

    // Room again: the next write succeeds without any operator action.
    const cleared = Date.now();
    rmSync(join(disk, 'ballast'));
    rmSync(join(disk, 'ballast-2'));
    const next = acked.length === 0 ? 0 : acked[acked.length - 1]! + 1;
    await eventually('an INSERT accepted again', 20_000, async () => {
      await client.query(`insert into t values (${next}, 'after')`);
      return true;
    });
    acked.push(next);
    report('disk_full_recovery', Date.now() - cleared, 'ms');
    const genBefore = await count(client, 'select n from gen_counts');
    await eventually('the datagen source writing again', 20_000, async () => ((await count(client, 'select n from gen_counts')) > genBefore ? true : undefined));

    expect(await count(client, 'select count(*) as n from t')).toBe(acked.length);
    await expectViewEqualsQuery(client, 't_totals', 'select count(*) as n, sum(length(pad)) as bytes, max(id) as top from t');
    const gen = (await client.query<{ n: string; d: string }>('select n, d from gen_counts')).rows[0]!;
    expect(gen.n).toBe(gen.d); // no generated row twice after the source restarted from its committed offsets

    // Every acknowledged row survives a restart.
    await client.end();
    await server.kill('SIGTERM');
    ({ server, client } = await servers.start({ dataDir, args }));
    const restored = await count(client, 'select count(*) as n from t');
    expect(restored).toBe(acked.length);
    expect(await count(client, `select count(*) as n from t where id in (${[acked[0], acked[Math.floor(acked.length / 2)], next].join(', ')})`)).toBe(3);
    report('disk_full_acknowledged_rows', acked.length, 'rows');
    report('disk_full_lost', acked.length - restored, 'rows');
    await expectViewEqualsQuery(client, 't_totals', 'select count(*) as n, sum(length(pad)) as bytes, max(id) as top from t');
    await client.end();
  });

  it('a checkpoint folder whose writes fail (ENOSPC): an error row in checkpoints, a complete checkpoint once there is room', { timeout: 90_000 }, async () => {
    const disk = smallDisk('checkpoint-disk', '4m');
    const { server, client } = await servers.start({ args: ['--barrier-interval-ms', '100', '--checkpoint-url', `file://${join(disk, 'cp')}`, '--checkpoint-interval-ms', '300'] });
    await client.query('create table t (id int primary key, pad text)');
    await client.query("insert into t select g, repeat('c', 100) from generate_series(1, 100) as g");
    const checkpoints = async (): Promise<{ epoch: string; status: string; error: string | null }[]> =>
      (await client.query<{ epoch: string; status: string; error: string | null }>('select epoch::text as epoch, status, error from oxbow_catalog.checkpoints')).rows;
    await eventually('a first complete checkpoint', 30_000, async () => ((await checkpoints()).some((row) => row.status === 'complete') ? true : undefined));

    ballast(join(disk, 'ballast'), 0);
    await client.query("insert into t select g, repeat('d', 2000) from generate_series(101, 2000) as g");
    const failed = await eventually('a checkpoint failing on the full folder', 30_000, async () => (await checkpoints()).find((row) => row.status !== 'complete' && /ENOSPC|no space/i.test(row.error ?? '')));
    expect(failed.error).toMatch(/ENOSPC|no space/i);
    expectAlive(server);
    expect(await count(client, 'select count(*) as n from t')).toBe(2000);

    const cleared = Date.now();
    rmSync(join(disk, 'ballast'));
    await eventually('a complete checkpoint after the folder has room', 30_000, async () =>
      (await checkpoints()).some((row) => row.status === 'complete' && BigInt(row.epoch) >= BigInt(failed.epoch)) ? true : undefined,
    );
    report('checkpoint_write_error_recovery', Date.now() - cleared, 'ms');
    expect(await count(client, 'select count(*) as n from t')).toBe(2000);
    expectAlive(server);
    await client.end();
  });
});
