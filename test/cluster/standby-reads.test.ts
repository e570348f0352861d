// Standbys answer reads over the wire: three real oxbow nodes on a real etcd (test/support/etcd.ts)
// and one checkpoint folder. The leader takes writes at a steady pace (one epoch per statement,
// never two in one millisecond, so "AS OF" a millisecond names exactly one epoch); each standby:
//
// - accepts connections and reads the checkpoint it followed last: `SHOW oxbow_standby_epoch`
//   names its epoch, `SHOW in_hot_standby` is on and pg_is_in_recovery() true (false on the leader);
// - returns for the table, the materialized view and an AS OF query over an older epoch exactly
//   what the leader returns AS OF the same epochs (computed by the leader, not by the standby), and
//   lags the leader's current state (the comparison is not one of equal states);
// - answers catalog queries (pg_class, oxbow_catalog.nodes listing itself as a standby);
// - under `--standby-writes refuse`, refuses INSERT, UPDATE, DELETE, DDL, COPY FROM, TRUNCATE and
//   nextval() with SQLSTATE 25006, PostgreSQL's "cannot execute X in a read-only transaction", with
//   a hint naming the leader (forwarding them, the default, is standby-writes.test.ts');
// - is skipped by libpq's target_session_attrs=read-write (real psql 15 given every node, standbys
//   first), and chosen by target_session_attrs=standby;
// - keeps a connection reading its checkpoint while newer ones are followed, and serves a newer
//   checkpoint to a new connection; a replaced checkpoint's replica goes with its last connection.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EPOCH_SEQUENCE_BITS } from '../../sql/epoch.js';
import { clusterNodes } from './nodes.js';
import { connect, connectWhenServing, rowsOf, show } from './sessions.js';

const cluster = clusterNodes('oxbow-standby-reads-', { OXBOW_CLUSTER_LEASE_TTL_S: '3', OXBOW_STANDBY_WRITES: 'refuse' });
const startNode = cluster.startNode;

/** AS OF the millisecond of an epoch: with one epoch per millisecond at most, exactly that epoch. */
function asOf(epoch: bigint): string {
  return `for system_time as of timestamptz '1970-01-01 00:00:00+00' + ${epoch >> EPOCH_SEQUENCE_BITS} * interval '1 millisecond'`;
}

const tableQuery = (suffix: string) => `select id, v from t ${suffix} order by id`;
const viewQuery = (suffix: string) => `select g, n::int8, total::int8 from mv ${suffix} order by g`;

/** Errors of a statement the node refuses: SQLSTATE, message, hint. */
async function refusal(client: pg.Client, sql: string): Promise<{ code?: string; message: string; hint?: string }> {
  try {
    await client.query(sql);
  } catch (error) {
    const failure = error as { code?: string; message: string; hint?: string };
    return { code: failure.code, message: failure.message, ...(failure.hint === undefined ? {} : { hint: failure.hint }) };
  }
  throw new Error(`"${sql}" succeeded on a standby`);
}

describe('standbys serve reads from the checkpoint they followed', () => {
  it('three nodes: reads on a standby equal the leader AS OF its epoch; writes and DDL get 25006 naming the leader', async () => {
    const a = await startNode('a');
    const leader = await connectWhenServing(a);
    expect(await show(leader, 'in_hot_standby')).toBe('off');
    expect((await leader.query('select pg_is_in_recovery() as r')).rows[0].r).toBe(false);
    await leader.query('create table t (id int primary key, v int)');
    await leader.query('create materialized view mv as select id % 7 as g, count(*) as n, sum(v) as total from t group by id % 7');
    await leader.query('create sequence s');
    const b = await startNode('b');
    const c = await startNode('c');

    // One writer at a steady pace: every statement its own epoch, milliseconds apart.
    let nextId = 1;
    let writing = true;
    const writer = (async () => {
      while (writing) {
        const id = nextId++;
        await leader.query(`insert into t values (${id}, ${(id * 37) % 1000})`);
        if (id % 5 === 0) await leader.query(`update t set v = v + 1 where id = ${id - 3}`);
        if (id % 11 === 0) await leader.query(`delete from t where id = ${id - 7}`);
        await new Promise((resolveWait) => setTimeout(resolveWait, 15));
      }
    })();
    const leaderAddress = `${a.host}:${a.port}`;
    try {
      await new Promise((resolveWait) => setTimeout(resolveWait, 1500));
      const standbys = [b, c];
      const firstEpochs: bigint[] = [];
      const held: pg.Client[] = [];
      for (const standby of standbys) {
        const session = await connectWhenServing(standby);
        held.push(session);
        expect(await show(session, 'in_hot_standby')).toBe('on');
        expect(await show(session, 'transaction_read_only')).toBe('on');
        expect((await session.query('select pg_is_in_recovery() as r')).rows[0].r).toBe(true);
        const epoch = BigInt(await show(session, 'oxbow_standby_epoch'));
        firstEpochs.push(epoch);
        // The same rows as the leader's AS OF the standby's epoch, for the table and the view.
        const standbyTable = await rowsOf(session, tableQuery(''));
        expect(standbyTable).toBe(await rowsOf(leader, tableQuery(asOf(epoch))));
        expect(await rowsOf(session, viewQuery(''))).toBe(await rowsOf(leader, viewQuery(asOf(epoch))));
        // The view equals its query recomputed on the standby.
        expect(await rowsOf(session, viewQuery(''))).toBe(await rowsOf(session, 'select id % 7, count(*)::int8, sum(v)::int8 from t group by id % 7 order by 1'));
        expect(JSON.parse(standbyTable).length).toBeGreaterThan(0);
        // Catalog queries.
        expect((await session.query("select count(*)::int as n from pg_class where relname in ('t', 'mv', 's')")).rows[0].n).toBe(3);
        const self = (await session.query('select role, address from oxbow_catalog.nodes where is_self')).rows;
        expect(self).toEqual([{ role: 'standby', address: `${standby.host}:${standby.port}` }]);
        const roles = (await session.query('select role, count(*)::int as n from oxbow_catalog.nodes group by role order by role')).rows;
        expect(roles).toEqual([{ role: 'leader', n: 1 }, { role: 'standby', n: 2 }]);

        // Writes and DDL: 25006 with the leader's address.
        const refusals: [string, string][] = [
          ['insert into t values (-1, 0)', 'INSERT'],
          ['update t set v = 0', 'UPDATE'],
          ['delete from t', 'DELETE'],
          ['create table u (x int)', 'CREATE TABLE'],
          ['drop materialized view mv', 'DROP MATERIALIZED VIEW'],
          ['create table u2 as select * from t', 'CREATE TABLE AS'],
          ['create materialized view mv2 as select count(*) from t', 'CREATE MATERIALIZED VIEW'],
          ["create source g (n int) with (connector = 'datagen')", 'CREATE SOURCE'],
          ['copy t from stdin', 'COPY FROM'],
          ['truncate t', 'TRUNCATE TABLE'],
          ["select nextval('s')", 'nextval()'],
          ['with w as (insert into t values (-2, 0) returning id) select * from w', 'INSERT'],
        ];
        for (const [sql, command] of refusals) {
          const refused = await refusal(session, sql);
          expect(refused, sql).toMatchObject({ code: '25006', message: `cannot execute ${command} in a read-only transaction` });
          expect(refused.hint, sql).toContain(`the leader at ${leaderAddress}`);
        }
        // The session is usable after the refusals, inside a block too.
        await session.query('begin');
        expect((await refusal(session, 'insert into t values (-3, 0)')).code).toBe('25006');
        await session.query('rollback');
        expect(await rowsOf(session, tableQuery(''))).toBe(standbyTable);
      }

      // libpq finds the leader among every node by the standbys' in_hot_standby.
      const hosts = (attrs: string) => `host=${[b, c, a].map((node) => node.host).join(',')} port=${[b, c, a].map((node) => node.port).join(',')} user=oxbow dbname=oxbow target_session_attrs=${attrs}`;
      for (const [attrs, expected] of [['read-write', 'f'], ['standby', 't']] as const) {
        const psql = spawnSync('psql', [hosts(attrs), '-Atc', 'select pg_is_in_recovery()'], { encoding: 'utf8' });
        expect(psql.stderr).toBe('');
        expect(psql.stdout.trim(), attrs).toBe(expected);
      }

      // Later: the held sessions still read their checkpoint; new ones read a newer one, and AS OF
      // an older epoch on a standby equals the leader's.
      await new Promise((resolveWait) => setTimeout(resolveWait, 1500));
      for (const [index, standby] of standbys.entries()) {
        const session = held[index]!;
        const first = firstEpochs[index]!;
        expect(BigInt(await show(session, 'oxbow_standby_epoch'))).toBe(first);
        expect(await rowsOf(session, tableQuery(''))).toBe(await rowsOf(leader, tableQuery(asOf(first))));
        const fresh = await connect(standby);
        const later = BigInt(await show(fresh, 'oxbow_standby_epoch'));
        expect(later).toBeGreaterThan(first);
        const freshTable = await rowsOf(fresh, tableQuery(''));
        expect(freshTable).toBe(await rowsOf(leader, tableQuery(asOf(later))));
        // The leader has moved on since: the comparison is not one of equal states.
        expect(freshTable).not.toBe(await rowsOf(leader, tableQuery('')));
        expect(await rowsOf(fresh, viewQuery(''))).toBe(await rowsOf(leader, viewQuery(asOf(later))));
        expect(await rowsOf(fresh, tableQuery(asOf(first)))).toBe(await rowsOf(leader, tableQuery(asOf(first))));
        expect(await rowsOf(fresh, viewQuery(asOf(first)))).toBe(await rowsOf(leader, viewQuery(asOf(first))));
        await fresh.end();
        // A replaced checkpoint's replica closes with its last session, and its directory goes.
        const replica = join(cluster.work, index === 0 ? 'b' : 'c', 'replicas', first.toString());
        expect(existsSync(replica)).toBe(true);
        await session.end();
        const deadline = Date.now() + 10_000;
        while (existsSync(replica) && Date.now() < deadline) await new Promise((resolveWait) => setTimeout(resolveWait, 50));
        expect(existsSync(replica), 'the replaced replica is removed').toBe(false);
      }
      writing = false;
      await writer;
      expect(nextId).toBeGreaterThan(50);
    } finally {
      writing = false;
      await writer.catch(() => undefined);
      await leader.end().catch(() => undefined);
    }
  }, 120_000);
});
