// Failover time of a cluster (--cluster, docs/operations.md "High availability"), as JSON lines
// {"bench","metric","value","unit"}: a real etcd (test/support/etcd.ts), a leader with a table of
// 1 KiB rows and a view over it (--durability remote, checkpoints to s3rver, an S3-compatible server
// on loopback; BENCH_STORE=file: a local folder), and a second
// node, either a warm standby (follows the checkpoints as they land) or a cold one
// (OXBOW_CLUSTER_COLD_STANDBY=1: downloads the whole checkpoint when promoted). The leader is
// killed with SIGKILL; the failover time is from the kill to the first successful INSERT on the
// other node (an INSERT under --durability remote returns once the new leader's first checkpoint
// holds it; `kill_to_connect_ms` is the first connection the new leader accepts as the leader: a
// standby's own connections read its replica), and includes the lease TTL (OXBOW_CLUSTER_LEASE_TTL_S, 2 s here), so
// `failover_ms - lease` is what the promotion itself took; `kill_to_view_updated_ms` runs until the
// view shows that INSERT (views update again). Also reported: what the promoted node
// downloaded at promotion and its own election-to-serving time (from its stderr line).
// Rounds alternate warm and cold (A B A B), each with a fresh etcd and object store.
// Run: npm run build && node dist/bench/failover.js   (BENCH_SCALE=1: 200,000 rows, a 124 MiB
// checkpoint; BENCH_SCALE=9: 1.8 million rows, about 1.1 GiB; default 0.2; BENCH_ROUNDS=2 rounds of
// each; BENCH_MODES=warm or cold runs one kind)

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { startEtcd } from '../test/support/etcd.js';
import { startOxbowNode, type OxbowNode } from './support/server-process.js';

const scale = Number(process.env['BENCH_SCALE'] ?? '0.2');
const ROWS = Math.max(1000, Math.round(200_000 * scale));
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? '2');
const MODES = (process.env['BENCH_MODES'] ?? 'warm,cold').split(',').filter((mode): mode is 'warm' | 'cold' => mode === 'warm' || mode === 'cold');
const LEASE_TTL_S = 2;
/** BENCH_STORE=file: checkpoints in a local folder instead of s3rver (an S3-compatible server over HTTP). */
const STORE = process.env['BENCH_STORE'] === 'file' ? 'file' : 's3';
const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'oxbow.js');

/** s3rver (test/checkpoint/support/s3rver-child.mjs, bucket `oxbow`) on a free loopback port. */
async function startS3rver(directory: string): Promise<{ endpoint: string; stop: () => void }> {
  mkdirSync(directory, { recursive: true });
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../test/checkpoint/support/s3rver-child.mjs', import.meta.url)), directory, '0'], {
    env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolvePort, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolvePort((JSON.parse(text.split('\n')[0]!) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') };
}

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'failover', metric, value: Number(value.toPrecision(4)), unit }));
}


async function connect(url: string): Promise<pg.Client | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return client;
  } catch {
    await client.end().catch(() => undefined);
    return undefined;
  }
}

async function until<T>(what: string, timeoutMs: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
}

async function round(mode: 'warm' | 'cold'): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-failover-'));
  const s3rver = STORE === 's3' ? await startS3rver(join(work, 's3rver')).catch(async (error: unknown) => {
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
    throw error;
  }) : undefined;
  const checkpointUrl = s3rver === undefined ? pathToFileURL(join(work, 'checkpoints')).href : `s3://oxbow/${mode}-${Date.now()}`;
  const args = ['--cluster', etcd.url, '--checkpoint-url', checkpointUrl, '--durability', 'remote', '--checkpoint-interval-ms', '1000'];
  const storeEnv: Record<string, string> =
    s3rver === undefined ? {} : { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL: s3rver.endpoint };
  const nodes: OxbowNode[] = [];
  try {
    const leaderNode = await startOxbowNode(ENTRY, join(work, 'a'), args, { ...storeEnv, OXBOW_CLUSTER_LEASE_TTL_S: String(LEASE_TTL_S) });
    nodes.push(leaderNode);
    const leader = await until('the first node leads', 60_000, () => connect(leaderNode.url));
    await leader.query('create table t (id int primary key, g int, payload text)');
    await leader.query('create materialized view mv as select g, count(*) as n from t group by g');
    // 1 KiB rows, 32 md5 digests each (hex of different inputs: RocksDB's compression gains little).
    // Each INSERT waits for a checkpoint (--durability remote): large statements keep the load short.
    const batch = Math.min(20_000, Math.max(1000, Math.round(ROWS / 50)));
    for (let start = 1; start <= ROWS; start += batch) {
      const end = Math.min(ROWS, start + batch - 1);
      await leader.query(
        `insert into t select i, i % 100, ${Array.from({ length: 32 }, (_, k) => `md5((i * ${k + 7})::text)`).join(' || ')} from generate_series(${start}, ${end}) as s(i)`,
      );
    }
    const standbyNode = await startOxbowNode(ENTRY, join(work, 'b'), args, {
      ...storeEnv,
      OXBOW_CLUSTER_LEASE_TTL_S: String(LEASE_TTL_S),
      ...(mode === 'cold' ? { OXBOW_CLUSTER_COLD_STANDBY: '1' } : {}),
    });
    nodes.push(standbyNode);
    const standbyAddress = new URL(standbyNode.url).host;
    // A warm standby has followed the last checkpoint; a cold one has only registered.
    await until('the standby is ready', 120_000, async () => {
      const rows = (await leader.query<{ address: string; checkpoint_epoch: string | null }>("select address, checkpoint_epoch from oxbow_catalog.nodes where role = 'standby'")).rows;
      const row = rows.find((candidate) => candidate.address === standbyAddress);
      return row !== undefined && (mode === 'cold' || row.checkpoint_epoch !== null) ? true : undefined;
    });
    const bytes = (await leader.query<{ b: string }>("select sum(bytes_referenced)::int8 as b from (select bytes_referenced from oxbow_catalog.checkpoints where status = 'complete' order by epoch desc limit 1) x")).rows[0]!.b;
    await leader.end();
    const killedAt = performance.now();
    await leaderNode.stop('SIGKILL');
    let connectedMs: number | undefined;
    const client = await until('a write on the new leader', 300_000, async () => {
      const candidate = await connect(standbyNode.url);
      if (candidate === undefined) return undefined;
      const leads = await candidate.query('show in_hot_standby').then(
        (result) => result.rows[0].in_hot_standby === 'off',
        () => false,
      );
      if (!leads) {
        await candidate.end().catch(() => undefined);
        return undefined;
      }
      connectedMs ??= performance.now() - killedAt;
      try {
        await candidate.query(`insert into t values (${ROWS + 1}, 1, 'after the failover')`);
        return candidate;
      } catch {
        await candidate.end().catch(() => undefined);
        return undefined;
      }
    });
    const failoverMs = performance.now() - killedAt;
    const groupBefore = ROWS - Math.floor(ROWS / 100) * 100 >= 1 ? Math.floor(ROWS / 100) + 1 : Math.floor(ROWS / 100);
    await until('the view shows the write', 60_000, async () => ((await client.query<{ n: string }>('select n::int8 as n from mv where g = 1')).rows[0]?.n === String(groupBefore + 1) ? true : undefined));
    const viewMs = performance.now() - killedAt;
    const count = (await client.query<{ n: string }>('select count(*)::int8 as n from t')).rows[0]!.n;
    if (Number(count) !== ROWS + 1) throw new Error(`expected ${ROWS + 1} rows after the failover, found ${count}`);
    await client.end();
    const promoted = /(\d+) files and (\d+) bytes downloaded at promotion; (\d+) ms from election to serving/.exec(standbyNode.stderr());
    emit(`failover_ms_${mode}`, failoverMs, 'ms');
    emit(`failover_minus_lease_ms_${mode}`, failoverMs - LEASE_TTL_S * 1000, 'ms');
    // The first connection the new leader accepted; the INSERT after it waits for the new leader's
    // first checkpoint (--durability remote), which starts with the sweep of the store.
    emit(`kill_to_connect_ms_${mode}`, connectedMs!, 'ms');
    emit(`kill_to_view_updated_ms_${mode}`, viewMs, 'ms');
    if (promoted !== null) {
      emit(`promotion_download_mib_${mode}`, Number(promoted[2]) / 2 ** 20, 'MiB');
      emit(`election_to_serving_ms_${mode}`, Number(promoted[3]), 'ms');
    }
    emit(`checkpoint_size_mib_${mode}`, Number(bytes) / 2 ** 20, 'MiB');
  } catch (error) {
    for (const node of nodes) process.stderr.write(`--- node stderr\n${node.stderr()}\n`);
    throw error;
  } finally {
    for (const node of nodes) await node.stop('SIGTERM').catch(() => undefined);
    s3rver?.stop();
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

for (let index = 0; index < ROUNDS; index++) {
  for (const mode of MODES) await round(mode);
}
