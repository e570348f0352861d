// A leader whose main thread is blocked by a statement for longer than the lease TTL keeps its
// leadership: the etcd lease is kept alive by a worker thread (executor/cluster/lease-keeper.ts),
// so a long synchronous statement (here a regular expression that backtracks for seconds, which
// blocks the event loop in one call) is not a failover. Two real nodes on a real etcd, TTL 2 s:
// after the statement, the same process still leads under the same lease, takes writes, and the
// standby never took over. The nodes run under the key prefix /blocked-test (--cluster
// etcd://HOST:PORT/blocked-test): their keys are there and none under the default /oxbow.
//
// A main thread blocked on its dataflow's worker threads is busy too: a leader whose view's
// keyed fragment takes longer than the stall bound to answer (each worker held 3 s per batch,
// OXBOW_TEST_WORKER_ROWS_DELAY_MS, under a 1 s bound) keeps its lease, and the view is right.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Etcd3 } from 'etcd3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type EtcdServer } from '../support/etcd.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const LEASE_TTL_S = 2;

let etcd: EtcdServer;
let work: string;

beforeAll(async () => {
  etcd = await startEtcd();
  work = mkdtempSync(join(tmpdir(), 'oxbow-blocked-'));
});

afterAll(async () => {
  await etcd?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

async function startNode(name: string, env: Record<string, string> = {}, prefix = 'blocked-test', args: string[] = []): Promise<OxbowServer> {
  return startOxbow({
    dataDir: join(work, name),
    args: ['--cluster', `${etcd.url}/${prefix}`, '--checkpoint-url', pathToFileURL(join(work, `checkpoints-${prefix}`)).href, '--checkpoint-interval-ms', '500', ...args],
    env: { OXBOW_CLUSTER_LEASE_TTL_S: String(LEASE_TTL_S), ...env },
  });
}

async function connect(node: OxbowServer): Promise<pg.Client> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: node.url, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw error;
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }
}

describe('a leader blocked by a statement', () => {
  it(`keeps its lease through a statement that blocks its event loop for over ${3 * LEASE_TTL_S} s`, async () => {
    const a = await startNode('a');
    const leader = await connect(a);
    expect((await leader.query('show in_hot_standby')).rows[0].in_hot_standby).toBe('off');
    const b = await startNode('b');
    try {
      await leader.query('create table t (id int primary key)');
      await leader.query('insert into t values (1)');
      const before = (await leader.query('select node_id, lease_id from oxbow_catalog.nodes where is_self')).rows[0];
      // Longer inputs backtrack twice as long: grow until one statement blocked for 3 TTLs.
      let blockedMs = 0;
      for (let length = 26; length <= 34 && blockedMs < 3 * LEASE_TTL_S * 1000; length++) {
        const started = Date.now();
        const result = await leader.query(`select repeat('a', ${length}) || '!' ~ '^(a+)+$' as matched`);
        blockedMs = Date.now() - started;
        expect(result.rows[0].matched).toBe(false);
      }
      expect(blockedMs).toBeGreaterThan(3 * LEASE_TTL_S * 1000);
      // Still the leader, under the same lease, and the process did not exit (fencing exits 3).
      expect(a.process.exitCode).toBeNull();
      await leader.query('insert into t values (2)');
      const after = (await leader.query('select node_id, lease_id, role from oxbow_catalog.nodes where is_self')).rows[0];
      expect(after).toEqual({ ...before, role: 'leader' });
      // The leader's list of nodes is read from etcd on its periodic tick, which the block held
      // back (the standby may have registered just before it): the next ticks show the standby.
      const expectedRoles = [{ role: 'leader', n: 1 }, { role: 'standby', n: 1 }];
      let roles: unknown[] = [];
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((resolveWait) => setTimeout(resolveWait, 200))) {
        roles = (await leader.query('select role, count(*)::int as n from oxbow_catalog.nodes group by role order by role')).rows;
        if (JSON.stringify(roles) === JSON.stringify(expectedRoles)) break;
      }
      expect(roles).toEqual(expectedRoles);
      expect(b.stderr()).not.toContain('won the election');
      expect(a.stderr()).not.toContain('no longer the leader');
      const etcdClient = new Etcd3({ hosts: [etcd.endpoint] });
      try {
        expect(JSON.parse((await etcdClient.get('/blocked-test/leader').string())!)).toMatchObject({ address: `${a.host}:${a.port}` });
        expect(Object.keys(await etcdClient.getAll().prefix('/blocked-test/nodes/').strings()).length).toBe(2);
        expect(await etcdClient.getAll().prefix('/oxbow/').keys()).toEqual([]);
      } finally {
        etcdClient.close();
      }
    } finally {
      await leader.end().catch(() => undefined);
      await b.stop().catch(() => undefined);
      await a.stop().catch(() => undefined);
    }
  }, 180_000);

  it('keeps its lease while its main thread waits on a keyed fragment longer than the stall bound', async () => {
    const a = await startNode('slow-workers', { OXBOW_CLUSTER_STALL_S: '1', OXBOW_TEST_WORKER_ROWS_DELAY_MS: '3000' }, 'slow-workers', ['--parallelism', '2']);
    const leader = await connect(a);
    try {
      await leader.query('create table t (id int primary key, k int)');
      await leader.query('create materialized view per_k as select k, count(*) as n from t group by k');
      expect((await leader.query('explain create materialized view x as select k, count(*) as n from t group by k')).rows.map((row) => Object.values(row)[0]).join('\n')).toMatch(/StreamExchange/);
      const before = (await leader.query('select node_id, lease_id from oxbow_catalog.nodes where is_self')).rows[0];
      const started = Date.now();
      await leader.query('insert into t select g, g % 5 from generate_series(1, 100) g');
      // The statement waited on the workers past the stall bound (1 s) more than once over.
      expect(Date.now() - started).toBeGreaterThan(3000);
      expect(a.process.exitCode).toBeNull();
      expect(a.stderr()).not.toMatch(/has not run for|given up|no longer the leader/);
      const after = (await leader.query('select node_id, lease_id, role from oxbow_catalog.nodes where is_self')).rows[0];
      expect(after).toEqual({ ...before, role: 'leader' });
      const rows = (await leader.query('select k, n::int as n from per_k order by k')).rows;
      expect(rows).toEqual([0, 1, 2, 3, 4].map((k) => ({ k, n: 20 })));
    } finally {
      await leader.end().catch(() => undefined);
      await a.stop().catch(() => undefined);
    }
  }, 180_000);
});
