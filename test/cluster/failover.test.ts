// High availability over real processes: a real etcd (test/support/etcd.ts), two oxbow nodes with
// --cluster and --durability remote on one checkpoint folder (the file object store). Writers
// insert into a table with a materialized view; the leader is killed with SIGKILL (once at a
// random moment, once inside a checkpoint's manifest phase, once between checkpoints); each time:
//
// - the standby takes over within the lease TTL plus a bound, and answers writes;
// - every row whose INSERT was acknowledged is there (acknowledged = in a recorded checkpoint),
//   and every row there is one the writers sent, with its values;
// - the view equals its query recomputed over the table;
// - the killed node restarts on its own data directory and joins as a standby (57P03 naming the
//   leader: 57P03 before it followed a checkpoint, 25006 naming the leader for a write in a READ
//   ONLY block once it serves reads: a write outside one would be forwarded to the leader), and
//   the leader's oxbow_catalog.nodes lists both with their roles;
// - a manifest the dead leader wrote but never recorded in etcd (made by the test) is removed by
//   the new leader.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epochFromMillis, epochToMillis } from '../../sql/epoch.js';
import { decodeManifest, encodeManifest, manifestKey } from '../../storage/checkpoint/manifest.js';
import { listCheckpointEpochs } from '../../storage/checkpoint/restore.js';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { startEtcd, type EtcdServer } from '../support/etcd.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const LEASE_TTL_S = 3;
/** Kill to the first successful write on the new leader, beyond the lease TTL. */
const TAKEOVER_BOUND_MS = 20_000;

let etcd: EtcdServer;
let work: string;

beforeAll(async () => {
  etcd = await startEtcd();
  work = mkdtempSync(join(tmpdir(), 'oxbow-ha-'));
});

afterAll(async () => {
  await etcd?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

function nodeArgs(): string[] {
  return [
    '--cluster', etcd.url,
    '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href,
    '--durability', 'remote',
    '--checkpoint-interval-ms', '500',
    '--barrier-interval-ms', '100',
  ];
}

const started: [string, OxbowServer][] = [];

async function startNode(name: string): Promise<OxbowServer> {
  const node = await startOxbow({ dataDir: join(work, name), args: nodeArgs(), env: { OXBOW_CLUSTER_LEASE_TTL_S: String(LEASE_TTL_S), OXBOW_CHECKPOINT_TRACE: '1' } });
  started.push([name, node]);
  return node;
}

/** A connected client, or the SQLSTATE and message the node refused the connection with. */
async function tryConnect(node: OxbowServer): Promise<{ client: pg.Client } | { code: string; message: string }> {
  const client = new pg.Client({ connectionString: node.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return { client };
  } catch (error) {
    await client.end().catch(() => undefined);
    return { code: (error as { code?: string }).code ?? 'none', message: (error as Error).message };
  }
}

/** A session on the node once it leads (a standby's sessions read with `in_hot_standby` on). */
async function waitForLeader(node: OxbowServer, timeoutMs: number): Promise<pg.Client> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const attempt = await tryConnect(node);
    if ('client' in attempt) {
      try {
        if ((await attempt.client.query('show in_hot_standby')).rows[0].in_hot_standby === 'off') return attempt.client;
        last = 'a standby session';
      } catch (error) {
        // A standby's session reads its replica, which closes when the standby is promoted (08006).
        last = `a standby session that ended: ${(error as { code?: string }).code ?? 'none'}: ${(error as Error).message}`;
      }
      await attempt.client.end().catch(() => undefined);
    } else {
      last = `${attempt.code}: ${attempt.message}`;
    }
    if (Date.now() > deadline) throw new Error(`node at ${node.url} did not become the leader within ${timeoutMs} ms (last: ${last})\n${node.stderr()}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

/**
 * The node is a standby of `leader`: it refuses connections with 57P03 naming the leader until it
 * followed a checkpoint, then serves reads and refuses a write in a READ ONLY block with 25006
 * naming the leader (outside one, the write would be forwarded to the leader: standby-writes.test.ts).
 */
async function expectStandbyOf(node: OxbowServer, leader: OxbowServer): Promise<void> {
  const attempt = await tryConnect(node);
  const address = `${leader.host}:${leader.port}`;
  if (!('client' in attempt)) {
    expect(attempt.code).toBe('57P03');
    expect(attempt.message).toContain(`the leader is at ${address}`);
    return;
  }
  try {
    await attempt.client.query('begin read only');
    const refused = await attempt.client.query('insert into t values (-1, 0)').then(
      () => undefined,
      (error: unknown) => error as { code?: string; hint?: string },
    );
    expect(refused?.code).toBe('25006');
    expect(refused?.hint).toContain(`the leader at ${address}`);
  } finally {
    await attempt.client.end().catch(() => undefined);
  }
}

interface NodeRow {
  node_id: string;
  address: string;
  role: string;
  state: string;
  checkpoint_epoch: string | null;
  lease_id: string;
  is_self: boolean;
}

async function waitForStandbyFollowing(leader: pg.Client, standby: OxbowServer): Promise<NodeRow[]> {
  const address = `${standby.host}:${standby.port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rows = (await leader.query<NodeRow>('select * from oxbow_catalog.nodes order by node_id')).rows;
    const row = rows.find((candidate) => candidate.address === address);
    if (row !== undefined && row.role === 'standby' && row.checkpoint_epoch !== null) return rows;
    if (Date.now() > deadline) throw new Error(`the standby at ${address} never showed as following: ${JSON.stringify(rows)}\n${standby.stderr()}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

/** Copies the newest manifest under an epoch `aheadMs` later, as a dying leader's unrecorded one; returns its path. */
async function writeUnrecordedManifest(checkpointDir: string, aheadMs: number): Promise<string> {
  const store = new FileObjectStore(checkpointDir);
  const [newest] = await listCheckpointEpochs(store);
  const manifest = decodeManifest(manifestKey(newest!), await store.getBytes(manifestKey(newest!)));
  const epoch = epochFromMillis(epochToMillis(newest!) + aheadMs);
  await store.putBytes(manifestKey(epoch), encodeManifest({ ...manifest, epoch: epoch.toString() }));
  store.close();
  return join(checkpointDir, ...manifestKey(epoch).split('/'));
}

/** The row every writer sends for id: v is a function of id, so a row that is there can be checked. */
const valueOf = (id: number): number => (id * 37) % 1000;

async function expectConsistent(client: pg.Client, acknowledged: ReadonlySet<number>, sent: ReadonlySet<number>): Promise<void> {
  const rows = (await client.query<{ id: number; v: number }>('select id, v from t')).rows;
  const present = new Set(rows.map((row) => row.id));
  const lost = [...acknowledged].filter((id) => !present.has(id));
  expect(lost, 'acknowledged rows lost in the failover').toEqual([]);
  for (const row of rows) {
    expect(sent.has(row.id), `row ${row.id} was never sent`).toBe(true);
    expect(row.v).toBe(valueOf(row.id));
  }
  const view = await client.query('select g, n::int8 as n, total::int8 as total from mv order by g');
  const recomputed = await client.query('select id % 7 as g, count(*)::int8 as n, sum(v)::int8 as total from t group by id % 7 order by g');
  expect(view.rows).toEqual(recomputed.rows);
}

describe('leader election on etcd and a warm standby', () => {
  it('a node that cannot reach etcd does not start, and says why', async () => {
    const server = createServer();
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', () => resolveListen()));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    const started = Date.now();
    const error = await startOxbow({
      dataDir: join(work, 'unreachable'),
      args: ['--cluster', `etcd://127.0.0.1:${port}`, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints-unreachable')).href],
    }).then(
      () => undefined,
      (failure: unknown) => failure as Error,
    );
    expect(error?.message).toMatch(/exited before it was ready \(code 1/);
    expect(error?.message).toContain(`oxbow: could not join the cluster at http://127.0.0.1:${port}`);
    // Every etcd call has a deadline: the refusal comes in seconds, not at the test's timeout.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('fails over on SIGKILL with every acknowledged row, and the killed node rejoins as a standby', async () => {
    const nodes: Record<string, OxbowServer> = {};
    nodes['a'] = await startNode('a');
    let leaderName = 'a';
    let leader = await waitForLeader(nodes['a'], 30_000);
    await leader.query('create table t (id int primary key, v int)');
    await leader.query('create materialized view mv as select id % 7 as g, count(*) as n, sum(v) as total from t group by id % 7');
    // A generator source through a view: after each failover it goes on from the checkpoint's
    // offsets, every number once (no gap, no duplicate).
    await leader.query(
      "create source numbers (n int) with (connector = 'datagen', fields.n.kind = 'sequence', fields.n.start = '1', fields.n.end = '100000000', datagen.rows.per.second = '200')",
    );
    await leader.query('create materialized view sv as select count(*)::int8 as n, count(distinct n)::int8 as d, min(n)::int8 as lo, max(n)::int8 as hi from numbers');
    nodes['b'] = await startNode('b');
    await expectStandbyOf(nodes['b'], nodes['a']);

    const acknowledged = new Set<number>();
    const sent = new Set<number>();
    let nextId = 1;
    const kills: ('random' | 'manifest' | 'between')[] = ['random', 'manifest', 'between'];
    const failoverMs: number[] = [];
    try {
      for (const kind of kills) {
        const standbyName = leaderName === 'a' ? 'b' : 'a';
        const before = await waitForStandbyFollowing(leader, nodes[standbyName]!);
        expect(before.filter((row) => row.role === 'leader').map((row) => row.address)).toEqual([`${nodes[leaderName]!.host}:${nodes[leaderName]!.port}`]);
        expect(before.find((row) => row.is_self)?.role).toBe('leader');

        // Writers insert until the kill; each acknowledged id is recorded.
        const acknowledgedAtStart = acknowledged.size;
        const writers: pg.Client[] = [];
        for (let index = 0; index < 3; index++) {
          const attempt = await tryConnect(nodes[leaderName]!);
          if (!('client' in attempt)) throw new Error(`writer could not connect: ${attempt.message}`);
          writers.push(attempt.client);
        }
        let writing = true;
        const writerLoops = writers.map(async (client) => {
          while (writing) {
            const ids = [nextId++, nextId++, nextId++];
            for (const id of ids) sent.add(id);
            try {
              await client.query(`insert into t values ${ids.map((id) => `(${id}, ${valueOf(id)})`).join(', ')}`);
              for (const id of ids) acknowledged.add(id);
            } catch {
              return;
            }
          }
        });
        const killed = nodes[leaderName]!;
        // A write is acknowledged once a checkpoint holds it: the kill comes after some were, or a
        // loaded machine's slow checkpoints leave nothing acknowledged to check.
        const ackDeadline = Date.now() + 30_000;
        while (acknowledged.size < acknowledgedAtStart + 3 && Date.now() < ackDeadline) await new Promise((resolveWait) => setTimeout(resolveWait, 10));
        expect(acknowledged.size, `no write was acknowledged within 30 s\n${killed.stderr()}`).toBeGreaterThanOrEqual(acknowledgedAtStart + 3);
        const stderrAtStart = killed.stderr().length;
        if (kind === 'manifest') {
          const deadline = Date.now() + 20_000;
          while (!killed.stderr().slice(stderrAtStart).includes('checkpoint manifest') && Date.now() < deadline) await new Promise((resolveWait) => setTimeout(resolveWait, 2));
        } else if (kind === 'between') {
          const deadline = Date.now() + 20_000;
          while (!killed.stderr().slice(stderrAtStart).includes('checkpoint complete') && Date.now() < deadline) await new Promise((resolveWait) => setTimeout(resolveWait, 2));
        } else {
          await new Promise((resolveWait) => setTimeout(resolveWait, 800 + Math.floor(Math.random() * 1200)));
        }
        const killedAt = Date.now();
        await killed.kill('SIGKILL');
        let zombie: string | undefined;
        if (kind === 'between') {
          // What a leader leaves when it dies between writing a manifest and recording it in etcd:
          // a complete manifest newer than the record (ten minutes newer: a new leader that kept
          // it would take it for its last checkpoint, skip its own, and acknowledge
          // --durability remote writes that no checkpoint holds).
          zombie = await writeUnrecordedManifest(join(work, 'checkpoints'), 10 * 60_000);
        }
        writing = false;
        await Promise.all(writerLoops);
        for (const client of writers) await client.end().catch(() => undefined);
        await leader.end().catch(() => undefined);

        // The standby takes over: the first successful write on it ends the failover.
        const next = nodes[standbyName]!;
        const deadline = killedAt + LEASE_TTL_S * 1000 + TAKEOVER_BOUND_MS;
        let client: pg.Client | undefined;
        for (;;) {
          const attempt = await tryConnect(next);
          if ('client' in attempt) {
            try {
              const id = nextId++;
              sent.add(id);
              await attempt.client.query(`insert into t values (${id}, ${valueOf(id)})`);
              acknowledged.add(id);
              client = attempt.client;
              break;
            } catch {
              await attempt.client.end().catch(() => undefined);
            }
          }
          if (Date.now() > deadline) throw new Error(`no write succeeded on the standby within ${deadline - killedAt} ms of the kill\n${next.stderr()}`);
          await new Promise((resolveWait) => setTimeout(resolveWait, 50));
        }
        failoverMs.push(Date.now() - killedAt);
        if (zombie !== undefined) expect(existsSync(zombie), 'the unrecorded manifest is removed by the new leader').toBe(false);
        leader = client;
        leaderName = standbyName;
        await expectConsistent(leader, acknowledged, sent);
        const sourced = async () => (await leader.query<{ n: string; d: string; lo: string; hi: string }>('select n, d, lo, hi from sv')).rows[0]!;
        const afterFailover = await sourced();
        expect(afterFailover.d).toBe(afterFailover.n);
        expect(afterFailover.lo).toBe('1');
        expect(afterFailover.hi).toBe(afterFailover.n);
        // The source runs on the new leader.
        const sourceDeadline = Date.now() + 20_000;
        let later = await sourced();
        while (BigInt(later.hi) <= BigInt(afterFailover.hi) && Date.now() < sourceDeadline) {
          await new Promise((resolveWait) => setTimeout(resolveWait, 100));
          later = await sourced();
        }
        expect(BigInt(later.hi)).toBeGreaterThan(BigInt(afterFailover.hi));
        expect(later.d).toBe(later.n);
        expect(later.hi).toBe(later.n);
        // New writes work after the failover, and the view follows them.
        const extra = [nextId++, nextId++];
        for (const id of extra) sent.add(id);
        await leader.query(`insert into t values ${extra.map((id) => `(${id}, ${valueOf(id)})`).join(', ')}`);
        for (const id of extra) acknowledged.add(id);
        await expectConsistent(leader, acknowledged, sent);

        // The killed node comes back on its own data directory, as a standby.
        const killedName = standbyName === 'a' ? 'b' : 'a';
        nodes[killedName] = await startNode(killedName);
        await expectStandbyOf(nodes[killedName]!, next);
      }
      expect(acknowledged.size).toBeGreaterThan(10);
      for (const ms of failoverMs) expect(ms).toBeLessThan(LEASE_TTL_S * 1000 + TAKEOVER_BOUND_MS);
      process.stdout.write(`failover times (ms, kill to first write on the new leader): ${failoverMs.join(', ')}; ${acknowledged.size} rows acknowledged\n`);
      if (process.env['OXBOW_HA_TRACE'] === '1') for (const [name, node] of started) process.stdout.write(`--- ${name}\n${node.stderr()}\n`);
    } finally {
      await leader.end().catch(() => undefined);
      for (const node of Object.values(nodes)) await node.stop().catch(() => undefined);
    }
  }, 240_000);

  it('a leader stopped with SIGTERM hands over everything committed, even with --durability local', async () => {
    const ownEtcd = await startEtcd();
    const args = [
      '--cluster', ownEtcd.url,
      '--checkpoint-url', pathToFileURL(join(work, 'checkpoints-handover')).href,
      '--checkpoint-interval-ms', '600000',
      '--barrier-interval-ms', '100',
    ];
    const env = { OXBOW_CLUSTER_LEASE_TTL_S: String(LEASE_TTL_S) };
    const first = await startOxbow({ dataDir: join(work, 'handover-a'), args, env });
    let second: OxbowServer | undefined;
    try {
      const leader = await waitForLeader(first, 30_000);
      second = await startOxbow({ dataDir: join(work, 'handover-b'), args, env });
      await leader.query('create table t (id int primary key, v int)');
      await leader.query('create materialized view mv as select id % 7 as g, count(*) as n, sum(v) as total from t group by id % 7');
      const ids = Array.from({ length: 500 }, (_, index) => index + 1);
      // Acknowledged once on the leader's disk; the next checkpoint is ten minutes away.
      await leader.query(`insert into t values ${ids.map((id) => `(${id}, ${valueOf(id)})`).join(', ')}`);
      await leader.end();
      const stoppedAt = Date.now();
      await first.stop();
      // The lease was given back: the standby takes over without waiting for the TTL to run out.
      const next = await waitForLeader(second, 30_000);
      const takeoverMs = Date.now() - stoppedAt;
      try {
        await expectConsistent(next, new Set(ids), new Set(ids));
        expect((await next.query('select count(*)::int as n from t')).rows[0].n).toBe(500);
      } finally {
        await next.end();
      }
      expect(first.process.exitCode).toBe(0);
      process.stdout.write(`clean handover: ${takeoverMs} ms from SIGTERM to a session on the new leader\n`);
    } finally {
      await first.stop().catch(() => undefined);
      await second?.stop().catch(() => undefined);
      await ownEtcd.stop();
    }
  }, 120_000);
});
