// Remote shares (--remote-shares on, docs/design.md section 7), as JSON lines
// {"bench","metric","value","unit"}: Nexmark q1 (bench/nexmark/q1.sql over sources.sql's bid source:
// a source fragment) or q4 (BENCH_QUERY=q4: auction and bid, keyed fragments: the join with the max
// per auction, and the average per category) or q5 (BENCH_QUERY=q5: bid, the count per auction and
// HOP window a keyed fragment, the rest on the main thread) run to the end of a bounded event sequence on one
// cluster node (--parallelism 2: two worker threads) and on two (the same leader, plus a standby
// that runs a third share of each fragment over loopback TCP; for q4 the leader's exchange sends it
// the rows of its vnodes).
// The figure is events per CPU-second, the CPU time (user + system, /proc/<pid>/stat) of every
// oxbow process of the run added up, from the CREATE MATERIALIZED VIEW to the view holding every
// bid (the standby is a cold one, OXBOW_CLUSTER_COLD_STANDBY=1, so following checkpoints costs
// it nothing): the transport's cost (framing, copying the batches, the relay threads) shows as fewer
// events per CPU-second on two nodes. Wall time is reported too, but on a shared 2-core machine two
// nodes cannot run faster than one: the figure to read is the CPU one.
// A real etcd (test/support/etcd.ts) and a local checkpoint folder; each run in fresh folders.
// Run: npm run build && node dist/bench/remote-shares.js   (BENCH_EVENTS, default 2,000,000;
// BENCH_ROUNDS, default 2, alternating one and two nodes; BENCH_QUERY q1, q4 or q5, default q1;
// BENCH_NODES, the cluster sizes of each round, default 1,2, at most 3)
// BENCH_NODE_CHECKPOINTS (q4, q5; comma-separated on, off, state): every node's OXBOW_KEYED_NODE_CHECKPOINTS
// (state: OXBOW_KEYED_NODE_STATE=on, the leader's CPU seconds printed too) of each run in turn, with what the checkpoints cost printed besides (the leader's complete and
// failed ones, their mean time, the bytes it sent; the nodes' requests answered, the bytes they sent
// and their longest answer); BENCH_CHECKPOINT_INTERVAL_MS, the --checkpoint-interval-ms of every node.
//
// BENCH_QUERY=seed: what a keyed share on a node costs to start when the fragment has state (the
// seed, executor/cluster/README.md "Keyed shares"). Three nodes (a leader and two standbys that
// follow its checkpoints) at --parallelism 2; `select k, count(*), sum(v) from t group by k` over
// BENCH_GROUPS groups (default 300,000) built through the fragment; the leader stopped cleanly; the
// standby that takes over rebuilds the fragment with one share on the other standby, seeded with
// that node's vnodes' rows. Printed: the seed's rows and bytes and the time from the seed's read
// to the node's first batch (oxbow_catalog.nodes: share_seed_rows, share_seed_bytes,
// share_ready_ms; absent on builds without them) and, measured the same way on any build, the
// bytes of the node's keyed share stores once it answered (the seed as the node wrote it), the
// time from the old leader's exit to the node's first rows handed over (share_rows > 0) while
// small inserts keep coming, and the CPU seconds of the new leader and of the node from the old
// leader's stop to then.
// BENCH_QUERY=join: what a node that joins a running view costs (executor/cluster/README.md "Keyed
// shares": the fragment cuts its owners again at a safe point). The same view over BENCH_GROUPS
// groups built on a leader alone (--parallelism 2 --cores 8: its owners are the 2 threads), then,
// while small inserts keep coming (rows of every vnode, one statement after another), a second node
// joins. Printed: the time from the node's start to its first rows handed over (share_rows > 0)
// and to its first batch (share_ready_ms set), the seed (share_seed_rows, share_seed_bytes,
// share_ready_ms: the seed's read to the first batch), the longest insert while the owners were cut
// (the seed is read on the leader's main thread, and the first epoch after the cut waits for the
// node to write its seed and start its worker), how long the leader read the seeds (its log line
// of the cut), or whether the node made its share's store from the checkpoint it follows instead
// (and how long from the safe point to its answer), the CPU seconds of the leader and of the node
// from the node's start to then, and the resident set of each (now and at its peak, VmHWM; the
// leader's also before the node starts); then the node drained (SIGTERM) while the inserts go on: the
// time until EXPLAIN ANALYZE shows the fragment on the threads alone and the longest insert
// meanwhile. The groups are built in statements of BENCH_CHUNK_ROWS rows (default 100,000; the
// time and the leader's CPU seconds printed). BENCH_OTHER_ROWS (default 0): another view, with no
// share (`select id, v, pad from o`, 100-byte pads), built first over that many rows, so the
// checkpoint the node makes its share's store from holds a big table the share does not own. Also
// printed: the bytes of SST and blob files in the node's newest keyed share store (the share that
// runs) at its first batch and once settled (its log says the dropped tables' ranges were
// compacted, or 30 s after). BENCH_SEED_FROM (comma-separated checkpoint, files, read): the
// leader's OXBOW_KEYED_SEED_FROM of each run in turn (labels `join_<build>_<value>`): with `files`
// the leader exports the node's vnodes into SST files and sends them (the store's time, the bytes,
// the node's receipt and ingest printed), with `read` it reads them entry by entry.
// BENCH_QUERY=leave: what a node that leaves (drained, SIGTERM) costs a running view when another
// node's share survives it (executor/cluster/README.md "Keyed shares", "Membership", and "Each node
// owning its vnodes' state" step 1). A leader at --parallelism 2 --cores 8 and two more nodes
// (owners: 2 threads and 2 nodes' shares, oxbow_catalog.vnodes checked), the same view over
// BENCH_GROUPS groups (default 1,000,000 for this mode) built through them in statements of
// BENCH_CHUNK_ROWS rows, then, while small inserts keep coming as for join, one node drained. The
// cut's log line on the leader (`... cut its vnodes again ...; kept K owners running (...), started
// S; node X handed its vnodes back (... seeds: node Y from the read, B bytes sent)`) is parsed, not
// assumed: a survivor that gains vnodes may restart whole (its seed all its vnodes) or be kept
// (the gained vnodes' seed only). Printed: the time from the SIGTERM to that line and to the
// node's exit, the vnodes moved, the owners kept (threads, nodes' shares) and started, the seeds and
// the bytes sent at the cut (summed over the line's seeds, and how many came from a checkpoint the
// node follows), the seed read's time (or the stores made from checkpoints), the longest insert
// before the drain (2 s), until the cut and until 5 s after it, the statements a second in those
// 2 s and in the 5 s after the cut, the shares failed over (0 expected), the CPU seconds of the
// leader and of the surviving node from the SIGTERM to 5 s after the cut (and the leader's a second
// in the 2 s before), the load average, and the vnodes of each node. At
// the end the view is checked against its recomputation from the base table (its groups, the
// sums of count(*) and sum(v) and two key-weighted sums, and the table's rows); a difference
// throws (non-zero exit). BENCH_COLD_STANDBYS=1: the two nodes follow no checkpoints, so the
// survivor's seed is read from the leader's database, not made from its checkpoint (default 0).
// BENCH_NODES_JOIN=1: the view is built on the leader's threads alone and the two nodes join it
// then, one after the other (each a cut; with checkpoints followed, their shares' stores made from
// them, which hold every vnode, so the survivor's node first drops the vnodes it does not own at the
// drain's cut); printed besides: what that drop took by the survivor's log (vnodes, rows, ms),
// and the joins' time (default 0: the nodes' shares run before the view is built). Every leave
// run prints the surviving node's peak resident set (VmHWM) too, and, when the survivor took its
// gained vnodes out of its checkpoint, their bytes (of the SST files, or read into memory) and time.
// Run with OXBOW_KEYED_NODE_STATE=on in the environment (every node inherits it), the drained
// node's share comes back to the leader before the cut (its part downloaded, its kept batches
// written; the cut line then says `node X (failed over before) handed its vnodes back`), and the
// survivor's share, which only gains vnodes, runs on with its state on its node: printed besides,
// the shares restored, their parts' and kept batches' bytes and the longest restore.
// BENCH_QUERY=kafka: a GROUP BY over a Kafka topic on one node and on two (a keyed fragment whose
// third owner of vnodes is the standby: executor/cluster/README.md "Keyed shares"). A real broker
// (scripts/kafka.mjs on a free port, stopped at the end) holds BENCH_MESSAGES JSON messages
// (default 1,000,000; {"id","k","v"}, k = id mod 10,000, over 4 partitions), produced once before
// the rounds; each round's view `select k, count(*), sum(v) from events group by k` reads the topic
// from its start (a backlog: the source reads as fast as it can, its barriers pipelined) until the
// source committed every message. Printed as for q4: messages per CPU-second of every oxbow process
// (the broker's CPU is not counted), wall time, the rows the standby processed, and the view's
// digest (equal across sizes; its counts add up to BENCH_MESSAGES, checked).
// BENCH_QUERY=kafka-filter and kafka-pass: the same topic into a Kafka source fragment, a selective
// filter (`select id, k, v * 2 as w from events where k % 100 = 7`, 1 % of the messages) or every
// message (`select id, k, v from events`): on two nodes the standby's share fetches its offset
// ranges itself (executor/cluster/README.md, "Kafka partitions fetched by the nodes"), alone
// (`nodes`) or in turn with the leader's threads (`all`), or not (`off`, the leader-only path): each
// value of BENCH_KAFKA_NODE_FETCH (default `nodes`) run in turn on each size above one, as every
// node's OXBOW_KAFKA_NODE_FETCH. Printed besides
// the above: the leader's own CPU seconds, the share of the offsets the standby fetched
// (share_units) and the view checked against the ids (count and sum of ids).
// BENCH_QUERY=create: what a keyed share costs a view created empty (its seeds, empty, read at its
// build: executor/cluster/README.md "What is not there yet"). A cluster of each size of BENCH_NODES
// (cold standbys, --parallelism 2 --cores 8), empty tables t and u, then BENCH_VIEWS (default 8)
// times a GROUP BY view and a join view created: the median wall time of a CREATE MATERIALIZED
// VIEW and the leader's CPU milliseconds per CREATE; and, in this process, the seed read each such
// build makes (keyedSeeds over three empty state tables for two shares) timed over 2,000 reads.
// BENCH_ENTRY: the bin/oxbow.js of each build to compare, comma-separated, run A B A B per round
// (default this build's), BENCH_LABELS their names in the metrics.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import kafkajs from 'kafkajs';
import pg from 'pg';
import { freePort } from '../test/support/free-port.js';
import { startEtcd } from '../test/support/etcd.js';
import { startOxbowNode, type OxbowNode } from './support/server-process.js';
import { parseTaskStat, ticksPerSecond } from './support/thread-cpu.js';
import { keyedSeeds } from '../executor/stream/parallel/keyed-seed.js';
import { type as scalarType } from '../sql/types.js';
import { RocksDatabase } from '../storage/rocksdb.js';

const ENTRIES = (process.env['BENCH_ENTRY'] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'oxbow.js')).split(',');
const LABELS = (process.env['BENCH_LABELS'] ?? ENTRIES.map((_, index) => (index === 0 ? 'this' : `build${index}`)).join(',')).split(',');
let ENTRY = ENTRIES[0]!;
const KAFKA_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'scripts', 'kafka.mjs');
/** BENCH_QUERY=join: the rows of another view the share does not own, built first. */
const OTHER_ROWS = Number(process.env['BENCH_OTHER_ROWS'] ?? '0');
/** BENCH_QUERY=join: the leader's OXBOW_KEYED_SEED_FROM values to run in turn (checkpoint, files, read; comma-separated), each build's default when unset. */
const SEED_FROM: (string | undefined)[] = process.env['BENCH_SEED_FROM'] === undefined ? [undefined] : process.env['BENCH_SEED_FROM'].split(',');
if (SEED_FROM.some((from) => from !== undefined && !['checkpoint', 'files', 'read'].includes(from))) throw new Error(`BENCH_SEED_FROM must list checkpoint, files and read, not ${process.env['BENCH_SEED_FROM']}`);
/** BENCH_QUERY=join: the rows of each statement that builds the groups. */
const CHUNK_ROWS = Number(process.env['BENCH_CHUNK_ROWS'] ?? '100000');
if (!Number.isInteger(CHUNK_ROWS) || CHUNK_ROWS < 1) throw new Error(`BENCH_CHUNK_ROWS must be a positive whole number, not ${process.env['BENCH_CHUNK_ROWS']}`);

const EVENTS = Number(process.env['BENCH_EVENTS'] ?? '2000000');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? '2');
const QUERY = process.env['BENCH_QUERY'] ?? 'q1';
if (QUERY !== 'q1' && QUERY !== 'q4' && QUERY !== 'q5' && QUERY !== 'seed' && QUERY !== 'join' && QUERY !== 'leave' && QUERY !== 'kafka' && QUERY !== 'kafka-filter' && QUERY !== 'kafka-pass' && QUERY !== 'create') {
  throw new Error(`BENCH_QUERY must be q1, q4, q5, seed, join, leave, kafka, kafka-filter, kafka-pass or create, not ${QUERY}`);
}
/** BENCH_QUERY=seed, join and leave: the groups of the view (default 300,000; 1,000,000 for leave). */
const GROUPS = Number(process.env['BENCH_GROUPS'] ?? (QUERY === 'leave' ? '1000000' : '300000'));
if (!Number.isInteger(GROUPS) || GROUPS < 1) throw new Error(`BENCH_GROUPS must be a positive whole number, not ${process.env['BENCH_GROUPS']}`);
/** BENCH_QUERY=leave: the two nodes cold standbys (no checkpoints followed, so a seed is read), 1, or not, 0 (default). */
const COLD = process.env['BENCH_COLD_STANDBYS'] ?? '0';
if (COLD !== '0' && COLD !== '1') throw new Error(`BENCH_COLD_STANDBYS must be 0 or 1, not ${COLD}`);
/** BENCH_QUERY=leave: the nodes join the view once it is built, 1, or run its shares from the start, 0 (default). */
const NODES_JOIN = process.env['BENCH_NODES_JOIN'] ?? '0';
if (NODES_JOIN !== '0' && NODES_JOIN !== '1') throw new Error(`BENCH_NODES_JOIN must be 0 or 1, not ${NODES_JOIN}`);
/** BENCH_QUERY=kafka-filter or kafka-pass: a Kafka source fragment over the topic. */
const KAFKA_FRAGMENT = QUERY === 'kafka-filter' || QUERY === 'kafka-pass';
/** BENCH_QUERY=kafka, kafka-filter or kafka-pass: a Kafka topic is the source. */
const KAFKA = QUERY === 'kafka' || KAFKA_FRAGMENT;
/** The node fetch modes run on each cluster size above one (OXBOW_KAFKA_NODE_FETCH). */
const NODE_FETCH = (process.env['BENCH_KAFKA_NODE_FETCH'] ?? 'nodes').split(',');
if (NODE_FETCH.some((mode) => mode !== 'nodes' && mode !== 'all' && mode !== 'off')) throw new Error(`BENCH_KAFKA_NODE_FETCH must list nodes, all and off, not ${process.env['BENCH_KAFKA_NODE_FETCH']}`);
/**
 * BENCH_QUERY=q4 or q5: the OXBOW_KEYED_NODE_CHECKPOINTS values run in turn on each cluster size
 * (comma-separated on, off, or state: OXBOW_KEYED_NODE_STATE=on, the nodes keeping their shares'
 * state; labels `nodeckpt_<value>_`), every node's default when unset; and
 * BENCH_CHECKPOINT_INTERVAL_MS, the leader's --checkpoint-interval-ms (its default when unset).
 */
const NODE_CHECKPOINTS: readonly (string | undefined)[] = process.env['BENCH_NODE_CHECKPOINTS'] === undefined ? [undefined] : process.env['BENCH_NODE_CHECKPOINTS'].split(',');
if (NODE_CHECKPOINTS.some((value) => value !== undefined && value !== 'on' && value !== 'off' && value !== 'state')) throw new Error(`BENCH_NODE_CHECKPOINTS must list on, off and state, not ${process.env['BENCH_NODE_CHECKPOINTS']}`);
const CHECKPOINT_INTERVAL_MS = process.env['BENCH_CHECKPOINT_INTERVAL_MS'];
if (CHECKPOINT_INTERVAL_MS !== undefined && !/^[1-9][0-9]*$/.test(CHECKPOINT_INTERVAL_MS)) throw new Error(`BENCH_CHECKPOINT_INTERVAL_MS must be a positive whole number, not ${CHECKPOINT_INTERVAL_MS}`);
/** BENCH_QUERY=create: the views of each kind created per run. */
const VIEWS = Number(process.env['BENCH_VIEWS'] ?? '8');
if (!Number.isInteger(VIEWS) || VIEWS < 1) throw new Error(`BENCH_VIEWS must be a positive whole number, not ${process.env['BENCH_VIEWS']}`);
/** BENCH_QUERY=kafka: the messages in the topic. */
const MESSAGES = Number(process.env['BENCH_MESSAGES'] ?? '1000000');
if (!Number.isInteger(MESSAGES) || MESSAGES < 1) throw new Error(`BENCH_MESSAGES must be a positive whole number, not ${process.env['BENCH_MESSAGES']}`);
const KAFKA_PARTITIONS = 4;
/** BENCH_QUERY=kafka: the broker's host:port once started. */
let bootstrap = '';
/** Of every 50 Nexmark events, 46 are bids. */
const BIDS = Math.floor(EVENTS / 50) * 46 + Math.min(46, Math.max(0, (EVENTS % 50) - 4));

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'remote-shares', metric, value: unit === 'digest' ? value : Number(value.toPrecision(4)), unit }));
}

/** A process's resident set now and at its peak (VmRSS, VmHWM of /proc/<pid>/status), in bytes. */
function residentBytes(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { now: kib('VmRSS'), peak: kib('VmHWM') };
}

/** CPU seconds (user + system) of a process so far. */
function cpuSeconds(pid: number): number {
  return parseTaskStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).ticks / ticksPerSecond();
}

/** The largest resident set process `pid` had so far (VmHWM), MiB. */
function peakRssMiB(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) / 1024;
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

async function run(nodes: number, label = '', nodeFetch = 'nodes', nodeCheckpoints?: string): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-remote-shares-'));
  const started: OxbowNode[] = [];
  try {
    const interval = CHECKPOINT_INTERVAL_MS === undefined ? [] : ['--checkpoint-interval-ms', CHECKPOINT_INTERVAL_MS];
    const args = (_name: string) => ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--cores', '8', '--remote-shares', 'on', ...interval];
    const fetchEnv = { OXBOW_KAFKA_NODE_FETCH: nodeFetch, ...(nodeCheckpoints === undefined ? {} : nodeCheckpoints === 'state' ? { OXBOW_KEYED_NODE_STATE: 'on' } : { OXBOW_KEYED_NODE_CHECKPOINTS: nodeCheckpoints }) };
    const leaderNode = await startOxbowNode(ENTRY, join(work, 'a'), args('a'), fetchEnv);
    started.push(leaderNode);
    const leader = await connect(leaderNode);
    for (let standby = 1; standby < nodes; standby++) {
      // Cold standbys (they follow no checkpoints): their CPU time is the shares' and the transport's.
      const name = String.fromCharCode(0x61 + standby);
      started.push(await startOxbowNode(ENTRY, join(work, name), args(name), { OXBOW_CLUSTER_COLD_STANDBY: '1', ...fetchEnv }));
      const deadline = Date.now() + 30_000;
      while (Number((await leader.query<{ n: string }>("select count(*) as n from oxbow_catalog.nodes where role = 'standby' and share_address is not null")).rows[0]!.n) < standby) {
        if (Date.now() > deadline) throw new Error(`the standby never listed a share address\n${started[standby]!.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    const sources = QUERY === 'q4' ? ['auction', 'bid'] : KAFKA ? ['events'] : ['bid'];
    const ddl = KAFKA ? [`CREATE SOURCE events (id bigint, k int, v int) WITH (connector = 'kafka', topic = 'events', properties.bootstrap.server = '${bootstrap}', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`] : readFileSync(new URL('../../bench/nexmark/sources.sql', import.meta.url), 'utf8')
      .replace(/--[^\n]*/g, '')
      .replaceAll('{events}', String(EVENTS))
      .replaceAll('{splits}', '2')
      .replaceAll('{chunk_size}', '1024')
      .split(';')
      .map((statement) => statement.trim())
      .filter((statement) => sources.some((source) => statement.startsWith(`CREATE SOURCE ${source} `)));
    for (const statement of ddl) await leader.query(statement);
    const query = QUERY === 'kafka'
      ? 'CREATE MATERIALIZED VIEW events_by_k AS SELECT k, count(*) AS n, sum(v) AS s FROM events GROUP BY k'
      : QUERY === 'kafka-filter'
        ? 'CREATE MATERIALIZED VIEW events_f AS SELECT id, k, v * 2 AS w FROM events WHERE k % 100 = 7'
        : QUERY === 'kafka-pass'
          ? 'CREATE MATERIALIZED VIEW events_f AS SELECT id, k, v FROM events'
          : readFileSync(new URL(`../../bench/nexmark/${QUERY}.sql`, import.meta.url), 'utf8').replace(/--[^\n]*/g, '');
    const cpuBefore = started.map((node) => cpuSeconds(node.child.pid!));
    const wallStart = performance.now();
    await leader.query(query);
    const names = sources.map((source) => `'${source}'`).join(', ');
    const deadline = Date.now() + 30 * 60_000;
    if (QUERY === 'q1') {
      let count = 0;
      while (count < BIDS) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        count = Number((await leader.query<{ n: string }>('select count(*) as n from nexmark_q1')).rows[0]!.n);
        if (Date.now() > deadline) throw new Error(`q1 holds ${count} of ${BIDS} bids after 30 minutes`);
      }
      if (count !== BIDS) throw new Error(`q1 holds ${count} bids, not ${BIDS}`);
    } else {
      // Every event of both sources committed: the view is up to date with them.
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const committed = Number((await leader.query<{ n: string }>(`select coalesce(sum(committed_offset), 0)::int8 as n from oxbow_catalog.source_partitions where source_name in (${names})`)).rows[0]!.n);
        const target = KAFKA ? MESSAGES : EVENTS * sources.length;
        if (committed >= target) break;
        if (Date.now() > deadline) throw new Error(`${QUERY} committed ${committed} of ${target} events after 30 minutes`);
      }
    }
    const wallS = (performance.now() - wallStart) / 1000;
    const cpu = started.map((node, index) => cpuSeconds(node.child.pid!) - cpuBefore[index]!);
    const total = cpu.reduce((sum, value) => sum + value, 0);
    const units = (await leader.query<{ node_id: string; is_self: boolean; share_units: string | null; share_rows: string | null }>('select node_id, is_self, share_units, share_rows from oxbow_catalog.nodes')).rows;
    const remoteUnits = units.filter((row) => !row.is_self).reduce((sum, row) => sum + Number(row.share_units ?? 0), 0);
    const remoteRows = units.filter((row) => !row.is_self).reduce((sum, row) => sum + Number(row.share_rows ?? 0), 0);
    const tag = `${label}${nodeCheckpoints === undefined ? '' : `nodeckpt_${nodeCheckpoints}_`}${QUERY}_${nodes}_node${nodes === 1 ? '' : 's'}${nodes > 1 && KAFKA_FRAGMENT ? `_fetch_${nodeFetch}` : ''}`;
    if (KAFKA_FRAGMENT) {
      // Each id the view keeps once (k = id mod 10,000).
      let expected = 0;
      let idSum = 0;
      for (let id = 0; id < MESSAGES; id++) {
        if (QUERY === 'kafka-filter' && (id % 10_000) % 100 !== 7) continue;
        expected++;
        idSum += id;
      }
      const got = (await leader.query<{ n: string; s: string | null }>('select count(*)::int8 as n, coalesce(sum(id), 0)::int8 as s from events_f')).rows[0]!;
      if (Number(got.n) !== expected || Number(got.s) !== idSum) throw new Error(`the view holds ${got.n} rows summing ${got.s}, not ${expected} summing ${idSum}`);
      emit(`${tag}_messages_per_cpu_s`, MESSAGES / total, 'messages/cpu-s');
      emit(`${tag}_leader_cpu_s`, cpu[0]!, 's');
      if (nodes > 1) emit(`${tag}_remote_offset_fraction`, remoteUnits / MESSAGES, 'fraction');
    } else if (QUERY === 'kafka') {
      const counted = Number((await leader.query<{ n: string }>('select coalesce(sum(n), 0)::int8 as n from events_by_k')).rows[0]!.n);
      if (counted !== MESSAGES) throw new Error(`the view counts ${counted} messages, not ${MESSAGES}`);
      emit(`${tag}_messages_per_cpu_s`, MESSAGES / total, 'messages/cpu-s');
    } else {
      emit(`${tag}_events_per_cpu_s`, EVENTS / total, 'events/cpu-s');
      if (nodeCheckpoints !== undefined) emit(`${tag}_leader_cpu_s`, cpu[0]!, 's');
    }
    emit(`${tag}_cpu_s`, total, 's');
    if (nodes > 1) emit(`${tag}_standby_cpu_s`, cpu.slice(1).reduce((sum, value) => sum + value, 0), 's');
    emit(`${tag}_wall_s`, wallS, 's');
    if (KAFKA) emit(`${tag}_messages_per_s`, MESSAGES / wallS, 'messages/s');
    else emit(`${tag}_events_per_s`, EVENTS / wallS, 'events/s');
    if (nodes > 1 && QUERY === 'q1') emit(`${tag}_remote_unit_fraction`, remoteUnits / EVENTS, 'fraction');
    if (nodes > 1 && QUERY !== 'q1' && !KAFKA_FRAGMENT) emit(`${tag}_remote_rows`, remoteRows, 'rows');
    emit(`${tag}_load_1m`, loadavg()[0]!, 'load');
    if (nodeCheckpoints !== undefined) {
      // The leader's checkpoints (their time includes asking the nodes for their parts) and what the
      // nodes sent for them (their log lines: `... checkpointed at epoch E (N bytes named, F files of B bytes sent, in T ms)`).
      const checkpoints = (await leader.query<{ complete: string; failed: string; ms: number | null; uploaded: string | null }>("select count(*) filter (where status = 'complete') as complete, count(*) filter (where status = 'failed') as failed, avg(duration_ms) filter (where status = 'complete') as ms, sum(bytes_uploaded) filter (where status = 'complete') as uploaded from oxbow_catalog.checkpoints")).rows[0]!;
      emit(`${tag}_checkpoints`, Number(checkpoints.complete), 'checkpoints');
      emit(`${tag}_checkpoints_failed`, Number(checkpoints.failed), 'checkpoints');
      for (const row of (await leader.query<{ error: string | null }>("select error from oxbow_catalog.checkpoints where status = 'failed'")).rows) process.stderr.write(`${tag}: a checkpoint failed: ${row.error}\n`);
      emit(`${tag}_checkpoint_ms_mean`, checkpoints.ms ?? 0, 'ms');
      emit(`${tag}_leader_checkpoint_uploaded_bytes`, Number(checkpoints.uploaded ?? 0), 'bytes');
      const lines = started.slice(1).flatMap((node) => [...node.stderr().matchAll(/checkpointed at epoch \d+ \((\d+) bytes named, (\d+) files? of (\d+) bytes sent, in (\d+) ms\)/g)]);
      emit(`${tag}_node_checkpoint_requests`, lines.length, 'requests');
      emit(`${tag}_node_checkpoint_uploaded_bytes`, lines.reduce((sum, line) => sum + Number(line[3]), 0), 'bytes');
      emit(`${tag}_node_checkpoint_ms_max`, lines.reduce((max, line) => Math.max(max, Number(line[4])), 0), 'ms');
    }
    if (QUERY !== 'q1' && !KAFKA_FRAGMENT) {
      // The view's rows as one number: equal across cluster sizes, or a share lost or doubled rows.
      const view = QUERY === 'q4' ? 'nexmark_q4' : QUERY === 'kafka' ? 'events_by_k' : 'nexmark_q5';
      const rows = (await leader.query({ text: `select * from ${view}`, rowMode: 'array' })).rows.map((row) => JSON.stringify(row)).sort();
      emit(`${tag}_view_digest`, parseInt(createHash('sha256').update(rows.join('\n')).digest('hex').slice(0, 8), 16), 'digest');
      emit(`${tag}_view_rows`, rows.length, 'rows');
    }
    await leader.end();
  } catch (error) {
    // A node that died says why on its stderr.
    for (const node of started) process.stderr.write(`--- ${node.url} ---\n${node.stderr().slice(-4000)}\n`);
    throw error;
  } finally {
    for (const node of started.reverse()) await node.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The bytes of the files under `path`. */
function directoryBytes(path: string): number {
  let bytes = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    bytes += entry.isDirectory() ? directoryBytes(full) : statSync(full).size;
  }
  return bytes;
}

/** The bytes of the SST and blob files under `path` (0 when it is not there). */
function sstBytes(path: string): number {
  let bytes = 0;
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) bytes += sstBytes(full);
    else if (entry.name.endsWith('.sst') || entry.name.endsWith('.blob')) bytes += statSync(full).size;
  }
  return bytes;
}

/** The node of `candidates` serving as leader, with a session on it. */
async function newLeader(candidates: readonly OxbowNode[]): Promise<{ node: OxbowNode; client: pg.Client }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    for (const node of candidates) {
      const client = new pg.Client({ connectionString: node.url });
      client.on('error', () => undefined);
      try {
        await client.connect();
        const self = (await client.query<{ role: string }>('select role from oxbow_catalog.nodes where is_self')).rows[0];
        if (self?.role === 'leader') return { node, client };
      } catch {
        // Not serving yet.
      }
      await client.end().catch(() => undefined);
    }
    if (Date.now() > deadline) throw new Error('no standby took over within 120 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** BENCH_QUERY=seed: a keyed share started on a node with the fragment's state (above). */
async function seedRun(label: string): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-keyed-seed-'));
  const started: OxbowNode[] = [];
  try {
    const args = ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--remote-shares', 'on'];
    const env = { OXBOW_CLUSTER_LEASE_TTL_S: '3' };
    const a = await startOxbowNode(ENTRY, join(work, 'a'), args, env);
    started.push(a);
    const first = await connect(a);
    started.push(await startOxbowNode(ENTRY, join(work, 'b'), args, env), await startOxbowNode(ENTRY, join(work, 'c'), args, env));
    const deadline = Date.now() + 60_000;
    while (Number((await first.query<{ n: string }>("select count(*) as n from oxbow_catalog.nodes where role = 'standby' and share_address is not null")).rows[0]!.n) < 2) {
      if (Date.now() > deadline) throw new Error('the standbys never listed their share addresses');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await first.query('create table t (id int8 primary key, k int8, v int8)');
    await first.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    for (let from = 0; from < GROUPS; from += 100_000) {
      await first.query(`insert into t select g, g, g % 1000 from generate_series(${from + 1}, ${Math.min(GROUPS, from + 100_000)}) g`);
    }
    await first.end();
    // The standbys' CPU from before the promotion: the seed's read, send and write are in it.
    const standbys = started.slice(1);
    const cpuBefore = standbys.map((candidate) => cpuSeconds(candidate.child.pid!));
    // A clean stop: the last checkpoint holds every group, the lease goes at once.
    await a.stop();
    const stoppedAt = performance.now();
    const { node, client } = await newLeader(started.slice(1));
    const other = started.slice(1).find((candidate) => candidate !== node)!;
    const otherPort = new URL(other.url).port;
    let next = GROUPS;
    let firstRowsMs: number | undefined;
    let row: Record<string, string | null> | undefined;
    const until = Date.now() + 300_000;
    for (;;) {
      row = (await client.query<Record<string, string | null>>(`select * from oxbow_catalog.nodes where address like '%:${otherPort}'`)).rows[0];
      if (row !== undefined && Number(row['share_rows'] ?? 0) > 0) {
        firstRowsMs ??= performance.now() - stoppedAt;
        if (!('share_ready_ms' in row) || row['share_ready_ms'] !== null) break;
      }
      if (Date.now() > until) throw new Error(`the node handed over no rows within 300 s\n${node.stderr()}`);
      // Rows of every vnode (keys spread over the groups).
      await client.query(`insert into t select g, g % ${GROUPS}, 1 from generate_series(${next + 1}, ${next + 256}) g`);
      next += 256;
    }
    const cpu = [node, other].map((candidate) => cpuSeconds(candidate.child.pid!) - cpuBefore[standbys.indexOf(candidate)]!);
    // The node's keyed share stores as written (the seed in their WAL and tables): the same measure on any build.
    const storeBytes = directoryBytes(join(work, other === started[1] ? 'b' : 'c', 'remote-keyed-shares'));
    const tag = `seed_${label}`;
    emit(`${tag}_groups`, GROUPS, 'groups');
    emit(`${tag}_node_store_bytes`, storeBytes, 'bytes');
    if ('share_seed_rows' in row!) {
      emit(`${tag}_seed_rows`, Number(row!['share_seed_rows']), 'rows');
      emit(`${tag}_seed_bytes`, Number(row!['share_seed_bytes']), 'bytes');
      emit(`${tag}_ready_ms`, Number(row!['share_ready_ms']), 'ms');
    }
    emit(`${tag}_exit_to_first_rows_ms`, firstRowsMs!, 'ms');
    emit(`${tag}_leader_cpu_s`, cpu[0]!, 's');
    emit(`${tag}_node_cpu_s`, cpu[1]!, 's');
    emit(`${tag}_load_1m`, loadavg()[0]!, 'load');
    await client.end();
  } finally {
    for (const started_ of started.reverse()) await started_.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** BENCH_QUERY=join: a node joins a running view with state, then is drained (above). */
async function joinRun(label: string, seedFrom: string | undefined): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-keyed-join-'));
  const started: OxbowNode[] = [];
  try {
    const args = ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--cores', '8', '--remote-shares', 'on'];
    const env = { OXBOW_CLUSTER_LEASE_TTL_S: '3' };
    const a = await startOxbowNode(ENTRY, join(work, 'a'), args, seedFrom === undefined ? env : { ...env, OXBOW_KEYED_SEED_FROM: seedFrom });
    started.push(a);
    const client = await connect(a);
    if (OTHER_ROWS > 0) {
      await client.query('create table o (id int8 primary key, v int8, pad text)');
      await client.query('create materialized view ov as select id, v, pad from o');
      for (let from = 0; from < OTHER_ROWS; from += CHUNK_ROWS) {
        await client.query(`insert into o select g, g % 1000, repeat(md5(g::text), 3) || 'abcd' from generate_series(${from + 1}, ${Math.min(OTHER_ROWS, from + CHUNK_ROWS)}) g`);
      }
    }
    await client.query('create table t (id int8 primary key, k int8, v int8)');
    await client.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    // Built in statements of BENCH_CHUNK_ROWS rows (one epoch each through the fragment).
    const buildStart = performance.now();
    const buildCpu = cpuSeconds(a.child.pid!);
    for (let from = 0; from < GROUPS; from += CHUNK_ROWS) {
      await client.query(`insert into t select g, g, g % 1000 from generate_series(${from + 1}, ${Math.min(GROUPS, from + CHUNK_ROWS)}) g`);
    }
    const buildS = (performance.now() - buildStart) / 1000;
    const buildCpuS = cpuSeconds(a.child.pid!) - buildCpu;
    // The load: small inserts, one after another, each timed.
    const load = new TimedInserts(client, GROUPS);
    const explain = async (): Promise<string> => (await client.query({ text: 'explain analyze kv', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const before = load.longest;
      load.longest = 0;
      const leaderBefore = residentBytes(a.child.pid!);
      const joinedAt = performance.now();
      const b = await startOxbowNode(ENTRY, join(work, 'b'), args, env);
      started.push(b);
      const cpuBefore = [a, b].map((node) => cpuSeconds(node.child.pid!));
      const port = new URL(b.url).port;
      let firstRowsMs: number | undefined;
      let row: Record<string, string | null> | undefined;
      const until = Date.now() + 1_200_000;
      for (;;) {
        row = (await client.query<Record<string, string | null>>(`select * from oxbow_catalog.nodes where address like '%:${port}'`)).rows[0];
        if (row !== undefined && Number(row['share_rows'] ?? 0) > 0) {
          firstRowsMs ??= performance.now() - joinedAt;
          if (row['share_ready_ms'] !== null) break;
        }
        if (Date.now() > until) throw new Error(`the node handed over no rows within 1200 s\n${a.stderr()}\n--- node ---\n${b.stderr()}`);
        // A share that failed over (its rows then run on the leader) or a leader that gave its lease up never gets there.
        if (/the keyed share on node .* failed|lost its etcd lease/.test(a.stderr())) throw new Error(`the join did not complete\n${a.stderr()}\n--- node ---\n${b.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const readyMs = performance.now() - joinedAt;
      const cpu = [a, b].map((node, index) => cpuSeconds(node.child.pid!) - cpuBefore[index]!);
      const rss = [a, b].map((node) => residentBytes(node.child.pid!));
      const tag = `join_${label}`;
      const shareStores = join(work, 'b', 'remote-keyed-shares');
      const newest = join(shareStores, String(Math.max(0, ...readdirSync(shareStores).map(Number).filter(Number.isInteger))));
      emit(`${tag}_share_store_sst_bytes_at_ready`, sstBytes(newest), 'bytes');
      const settleUntil = Date.now() + 30_000;
      while (Date.now() < settleUntil && !/compacted its dropped tables' ranges/.test(b.stderr())) await new Promise((resolve) => setTimeout(resolve, 50));
      emit(`${tag}_share_store_sst_bytes_settled`, sstBytes(newest), 'bytes');
      const compacted = /compacted its dropped tables' ranges in (\d+) ms: (\d+) -> (\d+) bytes/.exec(b.stderr());
      if (compacted !== null) {
        emit(`${tag}_share_store_compact_ms`, Number(compacted[1]), 'ms');
        emit(`${tag}_share_store_live_sst_before_compact_bytes`, Number(compacted[2]), 'bytes');
        emit(`${tag}_share_store_live_sst_after_compact_bytes`, Number(compacted[3]), 'bytes');
      }
      emit(`${tag}_groups`, GROUPS, 'groups');
      emit(`${tag}_build_s`, buildS, 's');
      emit(`${tag}_build_leader_cpu_s`, buildCpuS, 's');
      emit(`${tag}_seed_rows`, Number(row!['share_seed_rows']), 'rows');
      emit(`${tag}_seed_bytes`, Number(row!['share_seed_bytes']), 'bytes');
      emit(`${tag}_seed_read_to_first_batch_ms`, Number(row!['share_ready_ms']), 'ms');
      emit(`${tag}_start_to_first_rows_ms`, firstRowsMs!, 'ms');
      emit(`${tag}_start_to_first_batch_ms`, readyMs, 'ms');
      emit(`${tag}_longest_insert_before_ms`, before, 'ms');
      emit(`${tag}_longest_insert_joining_ms`, load.longest, 'ms');
      emit(`${tag}_leader_cpu_s`, cpu[0]!, 's');
      emit(`${tag}_node_cpu_s`, cpu[1]!, 's');
      emit(`${tag}_leader_rss_before_bytes`, leaderBefore.now, 'bytes');
      emit(`${tag}_leader_peak_rss_before_bytes`, leaderBefore.peak, 'bytes');
      emit(`${tag}_leader_rss_bytes`, rss[0]!.now, 'bytes');
      emit(`${tag}_leader_peak_rss_bytes`, rss[0]!.peak, 'bytes');
      emit(`${tag}_node_rss_bytes`, rss[1]!.now, 'bytes');
      emit(`${tag}_node_peak_rss_bytes`, rss[1]!.peak, 'bytes');
      // The leader's main thread reading the seeds (its log line of the cut).
      const reads = [...a.stderr().matchAll(/seeds read in (\d+) ms/g)];
      if (reads.length > 0) emit(`${tag}_seed_read_ms`, Number(reads[reads.length - 1]![1]), 'ms');
      // Or no read: the node made its share's store from the checkpoint it follows (the time from the safe point to its answer).
      const made = [...a.stderr().matchAll(/no seed read, stores made from checkpoints in (\d+) ms/g)];
      emit(`${tag}_seed_from_checkpoint`, made.length > 0 ? 1 : 0, 'bool');
      if (made.length > 0) emit(`${tag}_store_from_checkpoint_ms`, Number(made[made.length - 1]![1]), 'ms');
      // Or SST files the leader copied out of its database (the time from the safe point to the node's answer, and the node's receipt and ingest).
      const filed = [...a.stderr().matchAll(/no seed read, stores made from checkpoints or SST files in (\d+) ms/g)];
      if (filed.length > 0) emit(`${tag}_store_of_files_ms`, Number(filed[filed.length - 1]![1]), 'ms');
      const received = [...b.stderr().matchAll(/made of \d+ SST files? the leader copied out of its database at epoch \d+ \([^;]*; (\d+) bytes received in (\d+) ms, ingested in (\d+) ms\)/g)];
      if (received.length > 0) {
        const last = received[received.length - 1]!;
        emit(`${tag}_files_bytes`, Number(last[1]), 'bytes');
        emit(`${tag}_files_received_ms`, Number(last[2]), 'ms');
        emit(`${tag}_files_ingested_ms`, Number(last[3]), 'ms');
      }
      if (!/and 1 other node/.test(await explain())) throw new Error(`the fragment has no share on the node\n${await explain()}`);
      // Drained while the inserts go on.
      load.longest = 0;
      const drainedAt = performance.now();
      const stopping = b.stop();
      while (!/to 2 workers, /.test(await explain())) {
        if (performance.now() - drainedAt > 120_000) throw new Error(`the fragment kept the drained node's share\n${a.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      emit(`${tag}_drain_to_threads_ms`, performance.now() - drainedAt, 'ms');
      await stopping;
      emit(`${tag}_drain_exit_ms`, performance.now() - drainedAt, 'ms');
      emit(`${tag}_longest_insert_draining_ms`, load.longest, 'ms');
      emit(`${tag}_failed_over`, /the keyed share on node .* failed/.test(a.stderr()) ? 1 : 0, 'shares');
      emit(`${tag}_load_1m`, loadavg()[0]!, 'load');
    } catch (error) {
      // The leader's log says why (a share failed over, the lease given up, the process gone).
      await load.abandon();
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- leader ---\n${a.stderr()}`);
    } finally {
      await load.stop();
    }
    await client.end();
  } finally {
    for (const node of started.reverse()) await node.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The parts of the leader's log line of a cut (executor/stream/parallel/parallel-fragment.ts), each when the line has it. */
interface CutLine {
  readonly text: string;
  readonly moved?: number;
  readonly kept?: number;
  readonly keptThreads?: number;
  readonly keptNodes?: number;
  /** Of the kept owners, those that took vnodes (never held before). */
  readonly gaining?: number;
  readonly started?: number;
  /** "seeds read in N ms": the read's wall time. */
  readonly readMs?: number;
  /** "no seed read, stores made from checkpoints in N ms". */
  readonly checkpointMs?: number;
  /** "cut N ms after the read began". */
  readonly readMsToCut?: number;
  /** Each seed's "B bytes sent", with where it came from ("the read" or "its checkpoint E"). */
  readonly seeds: readonly { node: string; from: string; bytes: number }[];
}

function parseCut(text: string): CutLine {
  const number = (pattern: RegExp): number | undefined => {
    const match = pattern.exec(text);
    return match === null ? undefined : Number(match[1]);
  };
  const owners = /kept (\d+) owners? running \((\d+) threads?, (?:(1) node's share|(\d+) nodes' shares)(?:; (\d+) of them took vnodes)?\), started (\d+)/.exec(text);
  const seedList = /; seeds: (.*)\)$/.exec(text)?.[1] ?? '';
  const seeds = [...seedList.matchAll(/node (\S+) from (the read|its checkpoint \d+), (\d+) bytes sent/g)].map((match) => ({ node: match[1]!, from: match[2]!, bytes: Number(match[3]) }));
  return {
    text,
    moved: number(/, (\d+) vnodes? changing owner/),
    kept: owners === null ? undefined : Number(owners[1]),
    keptThreads: owners === null ? undefined : Number(owners[2]),
    keptNodes: owners === null ? undefined : Number(owners[3] ?? owners[4]),
    gaining: owners === null ? undefined : Number(owners[5] ?? 0),
    started: owners === null ? undefined : Number(owners[6]),
    readMs: number(/seeds read in (\d+) ms/),
    checkpointMs: number(/stores made from checkpoints in (\d+) ms/),
    readMsToCut: number(/cut (\d+) ms after the read began/),
    seeds,
  };
}

/** The lines of `log` that say a keyed fragment cut its vnodes again. */
function cutLines(log: string): string[] {
  return log.split('\n').filter((line) => line.includes('cut its vnodes again'));
}

/**
 * The view's groups and totals against the same over the base table, until they agree (the last
 * statements' epochs flushed) or 120 s: throws when they never do.
 */
async function checkRecomputed(client: pg.Client, tag: string, log: () => string): Promise<void> {
  const view = 'select count(*) as groups, sum(n) as n, sum(s) as s, sum(k * n) as kn, sum(k * s) as ks from kv';
  const batch = 'select count(*) as groups, sum(n) as n, sum(s) as s, sum(k * n) as kn, sum(k * s) as ks from (select k, count(*) as n, sum(v) as s from t group by k) as g';
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [got, want, rows] = [
      (await client.query(view)).rows[0] as Record<string, string>,
      (await client.query(batch)).rows[0] as Record<string, string>,
      (await client.query<{ n: string }>('select count(*) as n from t')).rows[0]!.n,
    ];
    if (JSON.stringify(got) === JSON.stringify(want) && got['n'] === rows) {
      emit(`${tag}_view_groups`, Number(got['groups']), 'groups');
      emit(`${tag}_view_rows`, Number(rows), 'rows');
      emit(`${tag}_view_equals_recomputation`, 1, 'bool');
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`the view differs from its recomputation: view ${JSON.stringify(got)}, recomputed ${JSON.stringify(want)}, base rows ${rows}\n--- leader ---\n${log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The join and leave modes' load: inserts of 256 rows (every vnode's groups) one after another on `client`, each timed. */
class TimedInserts {
  /** The longest insert since this was last set to 0, ms. */
  longest = 0;
  /** Inserts done. */
  inserts = 0;
  private writing = true;
  private readonly done: Promise<void>;
  /** Once ended: what ending waits for (the load's end, or after `abandon` its end with any failure dropped). */
  private ended: Promise<void> | undefined;

  constructor(client: pg.Client, groups: number) {
    let next = groups;
    this.done = (async () => {
      while (this.writing) {
        const at = performance.now();
        await client.query(`insert into t select g, g % ${groups}, 1 from generate_series(${next + 1}, ${next + 256}) g`);
        this.longest = Math.max(this.longest, performance.now() - at);
        next += 256;
        this.inserts++;
      }
    })();
  }

  /** Ends the load once the insert under way is done (it counts); again, nothing more. */
  stop(): Promise<void> {
    this.writing = false;
    return (this.ended ??= this.done);
  }

  /** Ends the load after a failure: an insert that fails too is not reported over it. */
  abandon(): Promise<void> {
    this.writing = false;
    return (this.ended ??= this.done.catch(() => undefined));
  }
}

/** BENCH_QUERY=leave: one of two nodes with shares of a running view drained, the other surviving it (above). */
async function leaveRun(label: string): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-keyed-leave-'));
  const started: OxbowNode[] = [];
  try {
    const args = ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--cores', '8', '--remote-shares', 'on'];
    const env = { OXBOW_CLUSTER_LEASE_TTL_S: '3' };
    const a = await startOxbowNode(ENTRY, join(work, 'a'), args, env);
    started.push(a);
    const client = await connect(a);
    const nodeEnv = COLD === '1' ? { ...env, OXBOW_CLUSTER_COLD_STANDBY: '1' } : env;
    const shares = async (): Promise<string[]> =>
      (await client.query<{ node_id: string }>("select distinct node_id from oxbow_catalog.vnodes where view_name = 'kv' and thread is null order by node_id")).rows.map((row) => row.node_id);
    /** Starts a node and waits until the leader lists it with its share address (and, the view there, until the view's fragment runs a share on it). */
    const startNode = async (name: string, listedNodes: number): Promise<OxbowNode> => {
      const node = await startOxbowNode(ENTRY, join(work, name), args, nodeEnv);
      started.push(node);
      const listed = Date.now() + 60_000;
      while (Number((await client.query<{ n: string }>("select count(*) as n from oxbow_catalog.nodes where role = 'standby' and share_address is not null")).rows[0]!.n) < listedNodes) {
        if (Date.now() > listed) throw new Error(`the nodes never listed their share addresses\n${a.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return node;
    };
    const sharesRunning = async (count: number): Promise<void> => {
      const sharesBy = Date.now() + 120_000;
      while ((await shares()).length < count) {
        if (Date.now() > sharesBy) throw new Error(`the view's keyed fragment never ran with shares on ${count} nodes (${(await shares()).join(', ') || 'none'})\n${a.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const build = async (): Promise<{ buildS: number; buildCpuS: number }> => {
      await client.query('create table t (id int8 primary key, k int8, v int8)');
      await client.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
      if (NODES_JOIN === '0') await sharesRunning(2);
      const buildStart = performance.now();
      const buildCpu = cpuSeconds(a.child.pid!);
      for (let from = 0; from < GROUPS; from += CHUNK_ROWS) {
        await client.query(`insert into t select g, g, g % 1000 from generate_series(${from + 1}, ${Math.min(GROUPS, from + CHUNK_ROWS)}) g`);
      }
      return { buildS: (performance.now() - buildStart) / 1000, buildCpuS: cpuSeconds(a.child.pid!) - buildCpu };
    };
    let built: { buildS: number; buildCpuS: number } | undefined;
    let b: OxbowNode;
    let c: OxbowNode;
    /** BENCH_NODES_JOIN=1: the time from each node's start to the view running a share on it. */
    const joinMs: number[] = [];
    if (NODES_JOIN === '1') {
      built = await build();
      let at = performance.now();
      b = await startNode('b', 1);
      await sharesRunning(1);
      joinMs.push(performance.now() - at);
      at = performance.now();
      c = await startNode('c', 2);
      await sharesRunning(2);
      joinMs.push(performance.now() - at);
    } else {
      b = await startNode('b', 1);
      c = await startNode('c', 2);
    }
    const nodeId = async (node: OxbowNode): Promise<string> =>
      (await client.query<{ node_id: string }>(`select node_id from oxbow_catalog.nodes where address like '%:${new URL(node.url).port}'`)).rows[0]!.node_id;
    const [bId, cId] = [await nodeId(b), await nodeId(c)];
    // Both nodes' shares running: the fragment's map gives vnodes to each.
    const { buildS, buildCpuS } = built ?? (await build());
    const owners = (await client.query<{ node_id: string; thread: number | null; n: string }>("select node_id, thread, count(*) as n from oxbow_catalog.vnodes where view_name = 'kv' group by node_id, thread")).rows;
    if (owners.length !== 4 || (await shares()).join(' ') !== [bId, cId].sort().join(' ')) throw new Error(`the fragment's owners are not 2 threads and nodes ${bId} and ${cId}: ${JSON.stringify(owners)}\n${a.stderr()}`);
    const nodeVnodes = async (id: string): Promise<number> => Number((await client.query<{ vnodes: number | null }>('select vnodes from oxbow_catalog.nodes where node_id = $1', [id])).rows[0]?.vnodes ?? 0);
    const bVnodes = await nodeVnodes(bId);
    const cVnodesBefore = await nodeVnodes(cId);
    // The load: small inserts, one after another, each timed.
    const load = new TimedInserts(client, GROUPS);
    const tag = `leave_${label}`;
    try {
      const settledCpu = cpuSeconds(a.child.pid!);
      const settledInserts = load.inserts;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const before = load.longest;
      const insertsBefore = load.inserts - settledInserts;
      const leaderCpuBefore = cpuSeconds(a.child.pid!) - settledCpu;
      load.longest = 0;
      const cutsBefore = cutLines(a.stderr()).length;
      const logBefore = a.stderr().length;
      const cpuBefore = [a, c].map((node) => cpuSeconds(node.child.pid!));
      const drainedAt = performance.now();
      const stopping = b.stop('SIGTERM', 600_000);
      let exitMs: number | undefined;
      void stopping.then(() => (exitMs = performance.now() - drainedAt));
      let cut: CutLine | undefined;
      let cutMs = 0;
      const until = Date.now() + 1_200_000;
      while (cut === undefined) {
        // With OXBOW_KEYED_NODE_STATE=on b's share came back to the leader before the cut: "(failed over before)".
        const line = cutLines(a.stderr()).slice(cutsBefore).find((text) => text.includes(`node ${bId} handed its vnodes back`) || text.includes(`node ${bId} (failed over before) handed its vnodes back`));
        if (line !== undefined) {
          cutMs = performance.now() - drainedAt;
          cut = parseCut(line);
          break;
        }
        if (Date.now() > until) throw new Error('the fragment never cut its vnodes again for the drained node within 1200 s');
        if (/lost its etcd lease/.test(a.stderr().slice(logBefore))) throw new Error('the leader gave its lease up');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const during = load.longest;
      const insertsAtCut = load.inserts;
      // The first epochs after the cut (the started owners' first batches) count as the drain's.
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const cpu = [a, c].map((node, index) => cpuSeconds(node.child.pid!) - cpuBefore[index]!);
      // The insert under way then counts too: the writer ends after it.
      await load.stop();
      const whileDrained = load.longest;
      await stopping;
      const after = a.stderr().slice(logBefore);
      const failed = [...after.matchAll(/the keyed share on node .* failed/g)].length;
      emit(`${tag}_groups`, GROUPS, 'groups');
      emit(`${tag}_build_s`, buildS, 's');
      emit(`${tag}_build_leader_cpu_s`, buildCpuS, 's');
      emit(`${tag}_drained_node_vnodes`, bVnodes, 'vnodes');
      emit(`${tag}_surviving_node_vnodes_before`, cVnodesBefore, 'vnodes');
      emit(`${tag}_surviving_node_vnodes_after`, await nodeVnodes(cId), 'vnodes');
      emit(`${tag}_sigterm_to_cut_ms`, cutMs, 'ms');
      if (exitMs !== undefined) emit(`${tag}_sigterm_to_exit_ms`, exitMs, 'ms');
      if (cut.moved !== undefined) emit(`${tag}_cut_vnodes_moved`, cut.moved, 'vnodes');
      if (cut.kept !== undefined) {
        emit(`${tag}_cut_owners_kept`, cut.kept, 'owners');
        emit(`${tag}_cut_threads_kept`, cut.keptThreads!, 'owners');
        emit(`${tag}_cut_node_shares_kept`, cut.keptNodes!, 'owners');
        emit(`${tag}_cut_owners_kept_taking_vnodes`, cut.gaining!, 'owners');
        emit(`${tag}_cut_owners_started`, cut.started!, 'owners');
      }
      emit(`${tag}_cut_seeds`, cut.seeds.length, 'seeds');
      emit(`${tag}_cut_seed_bytes_sent`, cut.seeds.reduce((sum, seed) => sum + seed.bytes, 0), 'bytes');
      emit(`${tag}_cut_seeds_from_checkpoint`, cut.seeds.filter((seed) => seed.from !== 'the read').length, 'seeds');
      if (cut.readMs !== undefined) emit(`${tag}_seed_read_ms`, cut.readMs, 'ms');
      if (cut.checkpointMs !== undefined) emit(`${tag}_store_from_checkpoint_ms`, cut.checkpointMs, 'ms');
      if (cut.readMsToCut !== undefined) emit(`${tag}_read_start_to_cut_ms`, cut.readMsToCut, 'ms');
      emit(`${tag}_longest_insert_before_ms`, before, 'ms');
      emit(`${tag}_longest_insert_to_cut_ms`, during, 'ms');
      emit(`${tag}_longest_insert_draining_ms`, Math.max(during, whileDrained), 'ms');
      emit(`${tag}_inserts_per_s_before`, insertsBefore / 2, 'statements/s');
      emit(`${tag}_inserts_per_s_after_cut`, (load.inserts - insertsAtCut) / 5, 'statements/s');
      emit(`${tag}_leader_cpu_s_per_s_before`, leaderCpuBefore / 2, 's/s');
      emit(`${tag}_failed_over`, failed, 'shares');
      // OXBOW_KEYED_NODE_STATE=on: the shares that came back to the leader before the cut, each part downloaded and kept batches written.
      const restores = [...after.matchAll(/the keyed share on node \S+ is restored on this node from (?:its part of checkpoint \d+ \(\d+ vnode ranges?, \d+ entries, (\d+) bytes\)|its vnodes as the leader seeded them) and \d+ batches kept since \((\d+) bytes\) in (\d+) ms/g)];
      emit(`${tag}_node_state`, process.env['OXBOW_KEYED_NODE_STATE'] === 'on' ? 1 : 0, 'bool');
      emit(`${tag}_shares_restored`, restores.length, 'shares');
      if (restores.length > 0) {
        emit(`${tag}_restored_part_bytes`, restores.reduce((sum, match) => sum + Number(match[1] ?? 0), 0), 'bytes');
        emit(`${tag}_restored_kept_bytes`, restores.reduce((sum, match) => sum + Number(match[2]), 0), 'bytes');
        emit(`${tag}_restore_ms_max`, Math.max(...restores.map((match) => Number(match[3]))), 'ms');
      }
      joinMs.forEach((ms, index) => emit(`${tag}_join_${index + 1}_ms`, ms, 'ms'));
      emit(`${tag}_surviving_node_peak_rss_mib`, peakRssMiB(c.child.pid!), 'MiB');
      // Each node that joined made its share's store from its checkpoint: the vnodes the share owns
      // copied out of it as SST files (views keyed by vnode), or the others deleted from it (older views).
      for (const [name, node] of [['drained', b], ['surviving', c]] as const) {
        const copied = /the (\d+) vnodes? it owns copied into \d+ SST files? \((\d+) entries, (\d+) bytes\) in (\d+) ms/.exec(node.stderr());
        if (copied !== null) {
          emit(`${tag}_${name}_node_join_copied_vnodes`, Number(copied[1]), 'vnodes');
          emit(`${tag}_${name}_node_join_copied_bytes`, Number(copied[3]), 'bytes');
          emit(`${tag}_${name}_node_join_copy_ms`, Number(copied[4]), 'ms');
        }
        const own = /(\d+) vnodes it does not own deleted (?:\([^)]*\) )?in (\d+) ms/.exec(node.stderr());
        if (own === null) continue;
        emit(`${tag}_${name}_node_join_deleted_vnodes`, Number(own[1]), 'vnodes');
        emit(`${tag}_${name}_node_join_delete_ms`, Number(own[2]), 'ms');
      }
      // A survivor whose store was made from a checkpoint drops the vnodes it does not own first.
      const drop = /a keyed share's store dropped the entries of (\d+) vnodes? it did not own \((?:(\d+) rows, )?[^)]*in (\d+) ms\)/.exec(c.stderr());
      emit(`${tag}_surviving_node_dropped_vnodes`, drop === null ? 0 : Number(drop[1]), 'vnodes');
      if (drop !== null) {
        // Rows are counted when deleted key by key (an older view's keys); range deletes read nothing.
        if (drop[2] !== undefined) emit(`${tag}_surviving_node_dropped_rows`, Number(drop[2]), 'rows');
        emit(`${tag}_surviving_node_drop_ms`, Number(drop[3]), 'ms');
      }
      // A survivor kept running takes its gained vnodes out of its checkpoint ahead of the cut: as
      // SST files of their key ranges (views keyed by vnode) or read into memory (older views).
      const gained = /a keyed share's gained vnodes are (?:copied|read) out of checkpoint \d+ (?:into \d+ SST files? )?\((\d+) (?:entries|rows), (\d+) bytes, in (\d+) ms\)/.exec(c.stderr());
      if (gained !== null) {
        emit(`${tag}_surviving_node_gained_bytes`, Number(gained[2]), 'bytes');
        emit(`${tag}_surviving_node_gained_ms`, Number(gained[3]), 'ms');
      }
      emit(`${tag}_leader_cpu_s`, cpu[0]!, 's');
      emit(`${tag}_surviving_node_cpu_s`, cpu[1]!, 's');
      emit(`${tag}_load_1m`, loadavg()[0]!, 'load');
      console.error(`${tag}: ${cut.text}`);
      await checkRecomputed(client, tag, () => a.stderr());
    } catch (error) {
      // The leader's log says why (a share failed over, the lease given up, the process gone).
      await load.abandon();
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- leader ---\n${a.stderr()}`);
    } finally {
      await load.stop();
    }
    await client.end();
  } finally {
    for (const node of started.reverse()) await node.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** BENCH_QUERY=create: CREATE MATERIALIZED VIEW over empty tables on a cluster of `nodes` (above). */
async function createRun(nodes: number, label: string): Promise<void> {
  const etcd = await startEtcd();
  const work = mkdtempSync(join(tmpdir(), 'oxbow-bench-remote-shares-'));
  const started: OxbowNode[] = [];
  try {
    const args = ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--parallelism', '2', '--cores', '8', '--remote-shares', 'on'];
    const leaderNode = await startOxbowNode(ENTRY, join(work, 'a'), args);
    started.push(leaderNode);
    const leader = await connect(leaderNode);
    for (let standby = 1; standby < nodes; standby++) {
      started.push(await startOxbowNode(ENTRY, join(work, String.fromCharCode(0x61 + standby)), args, { OXBOW_CLUSTER_COLD_STANDBY: '1' }));
      const deadline = Date.now() + 30_000;
      while (Number((await leader.query<{ n: string }>("select count(*) as n from oxbow_catalog.nodes where role = 'standby' and share_address is not null")).rows[0]!.n) < standby) {
        if (Date.now() > deadline) throw new Error(`the standby never listed a share address\n${started[standby]!.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await leader.query('create table t (id int8 primary key, k int, v int8)');
    await leader.query('create table u (id int8 primary key, k int, w int8)');
    const walls: number[] = [];
    const cpuBefore = cpuSeconds(leaderNode.child.pid!);
    for (let view = 0; view < VIEWS; view++) {
      for (const statement of [`create materialized view kv${view} as select k, count(*) as n, sum(v) as s from t group by k`, `create materialized view ju${view} as select t.k, count(*) as n, sum(t.v + u.w) as s from t join u on t.k = u.k group by t.k`]) {
        const start = performance.now();
        await leader.query(statement);
        walls.push(performance.now() - start);
      }
    }
    const leaderCpuMs = ((cpuSeconds(leaderNode.child.pid!) - cpuBefore) * 1000) / walls.length;
    const shared = (await leader.query({ text: 'explain analyze kv0', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    if (nodes > 1 && !shared.includes(`and ${nodes - 1} other node`)) throw new Error(`kv0 has no share on the other nodes:\n${shared}`);
    walls.sort((left, right) => left - right);
    const tag = `${label}create_${nodes}_node${nodes === 1 ? '' : 's'}`;
    emit(`${tag}_median_ms`, walls[Math.floor(walls.length / 2)]!, 'ms');
    emit(`${tag}_leader_cpu_ms_per_create`, leaderCpuMs, 'ms');
    emit(`${tag}_load_1m`, loadavg()[0]!, 'load');
    await leader.end();
  } finally {
    for (const node of started.reverse()) await node.stop().catch(() => undefined);
    await etcd.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** BENCH_QUERY=create: the seed read a build of a view created empty makes for two shares (three empty state tables), in this process. */
function emptySeedRead(): void {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-bench-empty-seed-'));
  const database = RocksDatabase.open(dir);
  try {
    const types = [scalarType('int4'), scalarType('int8'), scalarType('int8')];
    const tables = [1001, 1002, 1003].map((tableId) => ({ tableId, purpose: 'bench', columnTypes: types, primaryKey: [0] }));
    const vnodes = new Map(tables.map((table) => [table.tableId, [0]]));
    for (let read = 0; read < 200; read++) keyedSeeds(database, tables, vnodes, 2, 4);
    const reads = 2000;
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let read = 0; read < reads; read++) keyedSeeds(database, tables, vnodes, 2, 4);
    const used = process.cpuUsage(cpu);
    emit('create_empty_seed_read_ms', (performance.now() - start) / reads, 'ms');
    emit('create_empty_seed_read_cpu_ms', (used.user + used.system) / 1000 / reads, 'ms');
  } finally {
    void database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The cluster sizes run in each round, in order (BENCH_NODES, default 1,2). */
const SIZES = (process.env['BENCH_NODES'] ?? '1,2').split(',').map(Number);
if (SIZES.some((size) => !Number.isInteger(size) || size < 1 || size > 3)) throw new Error(`BENCH_NODES must list sizes from 1 to 3, not ${process.env['BENCH_NODES']}`);

/** BENCH_QUERY=kafka: a broker on a free port holding MESSAGES messages in topic `events`; returns its port. */
async function startKafka(): Promise<number> {
  const port = await freePort();
  const started = spawnSync(process.execPath, [KAFKA_SCRIPT, '--port', String(port), '--timeout-ms', '120000'], { encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`the broker did not start: ${started.stdout}${started.stderr}`);
  bootstrap = `127.0.0.1:${port}`;
  const kafka = new kafkajs.Kafka({ brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'events', numPartitions: KAFKA_PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const CHUNK = 10_000;
  for (let next = 0; next < MESSAGES; next += CHUNK) {
    const byPartition: { value: string }[][] = Array.from({ length: KAFKA_PARTITIONS }, () => []);
    for (let id = next; id < Math.min(MESSAGES, next + CHUNK); id++) byPartition[id % KAFKA_PARTITIONS]!.push({ value: `{"id":${id},"k":${id % 10_000},"v":${(id * 37) % 1000}}` });
    await producer.sendBatch({ acks: 1, topicMessages: byPartition.map((messages, partition) => ({ topic: 'events', messages: messages.map((message) => ({ ...message, partition })) })) });
  }
  await producer.disconnect();
  return port;
}

const kafkaPort = KAFKA ? await startKafka() : undefined;
try {
  for (let round = 0; round < ROUNDS; round++) {
    if (QUERY === 'create') {
      if (round === 0) emptySeedRead();
      for (const size of SIZES) {
        for (let build = 0; build < ENTRIES.length; build++) {
          ENTRY = ENTRIES[build]!;
          await createRun(size, ENTRIES.length > 1 ? `${LABELS[build] ?? `build${build}`}_` : '');
        }
      }
      continue;
    }
    if (QUERY === 'seed' || QUERY === 'join' || QUERY === 'leave') {
      for (let build = 0; build < ENTRIES.length; build++) {
        ENTRY = ENTRIES[build]!;
        if (QUERY === 'seed') await seedRun(LABELS[build] ?? `build${build}`);
        else if (QUERY === 'join') for (const from of SEED_FROM) await joinRun(`${LABELS[build] ?? `build${build}`}${from === undefined ? '' : `_${from}`}`, from);
        else await leaveRun(LABELS[build] ?? `build${build}`);
      }
      continue;
    }
    for (const size of SIZES) {
      for (const nodeFetch of size > 1 && KAFKA_FRAGMENT ? NODE_FETCH : ['nodes']) {
        for (const nodeCheckpoints of NODE_CHECKPOINTS) {
          for (let build = 0; build < ENTRIES.length; build++) {
            ENTRY = ENTRIES[build]!;
            await run(size, ENTRIES.length > 1 ? `${LABELS[build] ?? `build${build}`}_` : '', nodeFetch, nodeCheckpoints);
          }
        }
      }
    }
  }
} finally {
  if (kafkaPort !== undefined) spawnSync(process.execPath, [KAFKA_SCRIPT, '--stop', '--port', String(kafkaPort)], { encoding: 'utf8' });
}
