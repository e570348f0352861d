// What an operator sees, over a real server: oxbow_catalog.checkpoints and oxbow_catalog.recovery
// through SQL, the same figures on /metrics in Prometheus text, and `oxbow restore` by hand
// (--list, a chosen --epoch, refusal to overwrite a database without --force).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'oxbow-operator-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function query(server: OxbowServer, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ host: server.host, port: server.port, user: 'oxbow', database: 'oxbow' });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/**
 * A complete checkpoint at an epoch at or after the wall-clock time `afterMs` (an epoch is
 * milliseconds << 16): it holds every statement that started committing at or before `afterMs`.
 */
async function waitForCheckpoint(server: OxbowServer, afterMs: number): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const rows = await query(server, "select * from oxbow_catalog.checkpoints where status = 'complete' order by epoch desc limit 1");
    if (rows.length > 0 && BigInt(rows[0]!['epoch'] as string) >= BigInt(afterMs) << 16n) return rows[0]!;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no complete checkpoint after ${afterMs}\n${server.stderr()}`);
}

function oxbowRestore(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist', 'bin', 'oxbow.js'), 'restore', ...args], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('operator view of checkpoints and recovery', () => {
  it('system tables and /metrics show checkpoints and how the last start recovered; oxbow restore restores by hand', { timeout: 120_000 }, async () => {
    const dataDir = join(work, 'data');
    const checkpointUrl = `file://${join(work, 'remote')}`;
    const args = ['--checkpoint-url', checkpointUrl, '--checkpoint-interval-ms', '200', '--metrics-port', '0'];
    let server = await startOxbow({ dataDir, args });
    expect(await query(server, 'select source, epoch from oxbow_catalog.recovery')).toEqual([{ source: 'fresh', epoch: null }]);
    await query(server, 'create table t (id int primary key, v text)');
    const insertedAtMs = Date.now();
    await query(server, "insert into t select g, 'v' || g from generate_series(1, 1000) g");
    const first = await waitForCheckpoint(server, insertedAtMs);
    expect(Number(first['files'])).toBeGreaterThan(0);
    expect(Number(first['bytes_referenced'])).toBeGreaterThan(0);
    expect(Number(first['bytes_uploaded'])).toBeGreaterThan(0);
    expect(first['location']).toBe(checkpointUrl);
    expect(first['error']).toBeNull();

    // The same last epoch on /metrics.
    const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(server.stderr())![1]!;
    const text = await (await fetch(metricsUrl)).text();
    const lastEpoch = /^oxbow_checkpoint_last_epoch (\S+)$/m.exec(text)![1]!;
    expect(Number(lastEpoch)).toBeGreaterThanOrEqual(Number(first['epoch']));
    expect(text).toMatch(/^oxbow_checkpoint_referenced_bytes \d+$/m);
    expect(text).toMatch(/^oxbow_recovery_duration_seconds /m);

    // Stop after a checkpoint holds everything (nothing is written after the insert).
    const committed = first['epoch'] as string;
    await server.stop();
    server = await startOxbow({ dataDir, args });
    expect((await query(server, 'select source from oxbow_catalog.recovery'))[0]!['source']).toBe('local');
    await server.stop();

    // By hand: list, refuse to overwrite, restore a chosen epoch into a new directory, serve it.
    const listed = oxbowRestore(['--checkpoint-url', checkpointUrl, '--data-dir', dataDir, '--list']);
    expect(listed.status).toBe(0);
    const epochs = listed.stdout.trim().split('\n').map((line) => line.split('\t')[0]!);
    expect(epochs).toContain(committed);
    const refused = oxbowRestore(['--checkpoint-url', checkpointUrl, '--data-dir', dataDir]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/already holds a database.*--force/);
    const otherDir = join(work, 'restored');
    const restored = oxbowRestore(['--checkpoint-url', checkpointUrl, '--data-dir', otherDir, '--epoch', committed]);
    expect(restored.stderr).toBe('');
    expect(restored.status).toBe(0);
    expect(restored.stdout).toMatch(new RegExp(`^restored checkpoint ${committed} `));
    const missing = oxbowRestore(['--checkpoint-url', checkpointUrl, '--data-dir', join(work, 'x'), '--epoch', '123']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no checkpoint at epoch 123/);

    server = await startOxbow({ dataDir: otherDir, args: ['--checkpoint-url', checkpointUrl] });
    expect(await query(server, 'select count(*)::int as n, sum(id)::int as s from t')).toEqual([{ n: 1000, s: 500500 }]);
    await server.stop();

    // The data directory lost: the next start restores from the object store and says so.
    rmSync(join(dataDir, 'state'), { recursive: true, force: true });
    server = await startOxbow({ dataDir, args });
    const recovery = (await query(server, 'select source, epoch, bytes_downloaded from oxbow_catalog.recovery'))[0]!;
    expect(recovery['source']).toBe('remote');
    expect(BigInt(recovery['epoch'] as string)).toBeGreaterThanOrEqual(BigInt(committed));
    expect(Number(recovery['bytes_downloaded'])).toBeGreaterThan(0);
    expect(await query(server, 'select count(*)::int as n from t')).toEqual([{ n: 1000 }]);
    await server.stop();
  });
});
