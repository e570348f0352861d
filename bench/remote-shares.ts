// Remote shares of a source fragment (--remote-shares on, docs/design.md section 7), as JSON lines
// {"bench","metric","value","unit"}: Nexmark q1 (bench/nexmark/q1.sql over sources.sql's bid source)
// run to the end of a bounded event sequence on one cluster node (--parallelism 2: two worker
// threads) and on two (the same leader, plus a standby that runs a third share over loopback TCP).
// The figure is events per CPU-second, the CPU time (user + system, /proc/<pid>/stat) of every
// oxbow process of the run added up, from the CREATE MATERIALIZED VIEW to the view holding every
// bid (the standby is a cold one, OXBOW_CLUSTER_COLD_STANDBY=1, so following checkpoints costs
// it nothing): the transport's cost (framing, copying the batches, the relay threads) shows as fewer
// events per CPU-second on two nodes. Wall time is reported too, but on a shared 2-core machine two
// nodes cannot run faster than one: the figure to read is the CPU one.
// A real etcd (test/support/etcd.ts) and a local checkpoint folder; each run in fresh folders.
// Run: npm run build && node dist/bench/remote-shares.js   (BENCH_EVENTS, default 2,000,000;
// BENCH_ROUNDS, default 2, alternating one and two nodes)

import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { startEtcd } from '../test/support/etcd.js';
import { startOxbowNode, type OxbowNode } from './support/server-process.js';
import { parseTaskStat, ticksPerSecond } from './support/thread-cpu.js';

const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'oxbow.js');

const EVENTS = Number(process.env['BENCH_EVENTS'] ?? '2000000');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? '2');
/** Of every 50 Nexmark events, 46 are bids. */
const BIDS = Math.floor(EVENTS / 50) * 46 + Math.min(46, Math.max(0, (EVENTS % 50) - 4));

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'remote-shares', metric, value: Number(value.toPrecision(4)), unit }));
}

/** CPU seconds (user + system) of a process so far. */
function cpuSeconds(pid: number): number {
  return parseTaskStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).ticks / ticksPerSecond();
}

async function connect(node: OxbowNode): Promise<pg.Client> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const client = new pg.Client({ connectionString: node.url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function run(nodes: 1 | 2): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-remote-shares-'));
  const started: OxbowNode[] = [];
  try {
    const args = (_name: string) => ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--remote-shares', 'on'];
    const leaderNode = await startOxbowNode(ENTRY, join(work, 'a'), args('a'));
    started.push(leaderNode);
    const leader = await connect(leaderNode);
    if (nodes === 2) {
      // A cold standby (it follows no checkpoints): its CPU time is the share's and the transport's.
      started.push(await startOxbowNode(ENTRY, join(work, 'b'), args('b'), { OXBOW_CLUSTER_COLD_STANDBY: '1' }));
      const deadline = Date.now() + 30_000;
      while ((await leader.query("select 1 from oxbow_catalog.nodes where role = 'standby' and share_address is not null")).rowCount === 0) {
        if (Date.now() > deadline) throw new Error(`the standby never listed a share address\n${started[1]!.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await leader.query(
      `CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${EVENTS}', nexmark.split.num = '2', nexmark.max.chunk.size = '1024', nexmark.min.event.gap.in.ns = '0')`,
    );
    const q1 = readFileSync(new URL('../../bench/nexmark/q1.sql', import.meta.url), 'utf8').replace(/--[^\n]*/g, '');
    const cpuBefore = started.map((node) => cpuSeconds(node.child.pid!));
    const wallStart = performance.now();
    await leader.query(q1);
    let count = 0;
    const deadline = Date.now() + 30 * 60_000;
    while (count < BIDS) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      count = Number((await leader.query<{ n: string }>('select count(*) as n from nexmark_q1')).rows[0]!.n);
      if (Date.now() > deadline) throw new Error(`q1 holds ${count} of ${BIDS} bids after 30 minutes`);
    }
    const wallS = (performance.now() - wallStart) / 1000;
    const cpu = started.map((node, index) => cpuSeconds(node.child.pid!) - cpuBefore[index]!);
    const total = cpu.reduce((sum, value) => sum + value, 0);
    if (count !== BIDS) throw new Error(`q1 holds ${count} bids, not ${BIDS}`);
    const units = (await leader.query<{ node_id: string; is_self: boolean; share_units: string | null }>('select node_id, is_self, share_units from oxbow_catalog.nodes')).rows;
    const remoteUnits = units.filter((row) => !row.is_self).reduce((sum, row) => sum + Number(row.share_units ?? 0), 0);
    const tag = `${nodes}_node${nodes === 1 ? '' : 's'}`;
    emit(`q1_${tag}_events_per_cpu_s`, EVENTS / total, 'events/cpu-s');
    emit(`q1_${tag}_cpu_s`, total, 's');
    if (nodes === 2) emit(`q1_${tag}_standby_cpu_s`, cpu[1]!, 's');
    emit(`q1_${tag}_wall_s`, wallS, 's');
    emit(`q1_${tag}_events_per_s`, EVENTS / wallS, 'events/s');
    if (nodes === 2) emit(`q1_${tag}_remote_unit_fraction`, remoteUnits / EVENTS, 'fraction');
    await leader.end();
  } finally {
    for (const node of started.reverse()) await node.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

for (let round = 0; round < ROUNDS; round++) {
  await run(1);
  await run(2);
}
