// A standby forwards writes and DDL to the leader (`--standby-writes forward`, the default): three
// real oxbow nodes on a real etcd (test/support/etcd.ts) and one checkpoint folder. Through `pg`
// and the psql binary connected to a standby:
//
// - CREATE TABLE, INSERT ... RETURNING, UPDATE, DELETE, CREATE MATERIALIZED VIEW, nextval() and a
//   BEGIN ... COMMIT block run on the leader (checked on a session of the leader), answer with the
//   leader's command tags and rows, and the standby's session reads them at once (read-your-writes:
//   from its first forwarded statement on, the session runs on the leader); a new session of the
//   standby sees them once the standby followed a checkpoint at or past them;
// - a parameterized INSERT (the extended protocol) moves the session to the leader at its Parse,
//   with the settings the session SET and the statements it prepared by name on the standby;
// - COPY FROM STDIN through psql on a standby; a CancelRequest to the standby stops the
//   session's statement on the leader;
// - a statement the leader refuses (unique violation, a missing table, a syntax error with its
//   position) reaches the client with the SQLSTATE, message, detail and position a session of the
//   leader gets for the same text;
// - with the leader SIGKILLed, a write on a standby fails with 57P03 within the forwarding deadline
//   (OXBOW_CLUSTER_FORWARD_TIMEOUT_MS), and a forwarded session whose leader died ends with 08006;
//   once a new leader is elected, a write on the remaining standby is forwarded to it.

import { spawnSync } from 'node:child_process';
import { createConnection } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { OxbowServer } from '../support/server.js';
import { clusterNodes } from './nodes.js';
import { connect, connectWhenServing, rowsOf, show } from './sessions.js';

const FORWARD_TIMEOUT_MS = 1500;

// A lease outliving the forwarding deadline: a write right after the leader's death fails before any election.
const cluster = clusterNodes('oxbow-standby-writes-', { OXBOW_CLUSTER_LEASE_TTL_S: '4', OXBOW_CLUSTER_FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS) });
const startNode = cluster.startNode;

interface Failure {
  code?: string;
  message: string;
  detail?: string;
  position?: string;
  hint?: string;
}

async function failure(client: pg.Client, sql: string): Promise<Failure> {
  try {
    await client.query(sql);
  } catch (error) {
    const { code, message, detail, position, hint } = error as Failure;
    return { code, message, detail, position, hint };
  }
  throw new Error(`"${sql}" succeeded`);
}

/** A new session of `standby` once it reads a checkpoint at or past `epoch` of the leader. */
async function standbySessionAtLeast(standby: OxbowServer, epoch: bigint, timeoutMs = 30_000): Promise<pg.Client> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const session = await connectWhenServing(standby);
    if (BigInt(await show(session, 'oxbow_standby_epoch')) >= epoch) return session;
    await session.end();
    if (Date.now() > deadline) throw new Error(`${standby.url} followed no checkpoint at or past ${epoch}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

/** The leader's newest committed epoch (oxbow_catalog.epochs). */
async function leaderEpoch(leader: pg.Client): Promise<bigint> {
  return BigInt((await leader.query({ text: 'select committed_epoch::text from oxbow_catalog.epochs', rowMode: 'array' })).rows[0][0] as string);
}

describe('a standby forwards writes and DDL to the leader', () => {
  it('runs writes, DDL and blocks of a standby session on the leader, relays its errors, and fails over', async () => {
    const a = await startNode('a');
    const leader = await connectWhenServing(a);
    await leader.query('create table seed (x int)');
    const b = await startNode('b');
    const c = await startNode('c');
    const onB = await connectWhenServing(b);
    const onBErrors: Failure[] = [];
    onB.on('error', (error) => onBErrors.push(error as Failure));
    expect(await show(onB, 'in_hot_standby')).toBe('on');

    // DDL and writes from the standby's session, answered as the leader answers them.
    expect((await onB.query('create table t (id int primary key, v text)')).command).toBe('CREATE');
    const inserted = await onB.query("insert into t values (1, 'one'), (2, 'two'), (3, 'three') returning id, v");
    expect(inserted.command).toBe('INSERT');
    expect(inserted.rowCount).toBe(3);
    expect(inserted.rows).toEqual([{ id: 1, v: 'one' }, { id: 2, v: 'two' }, { id: 3, v: 'three' }]);
    const updated = await onB.query("update t set v = v || '!' where id >= 2");
    expect([updated.command, updated.rowCount]).toEqual(['UPDATE', 2]);
    const deleted = await onB.query('delete from t where id = 1');
    expect([deleted.command, deleted.rowCount]).toEqual(['DELETE', 1]);
    expect((await onB.query('create materialized view mv as select count(*)::int8 as n, max(v) as top from t')).command).toBe('SELECT'); // PostgreSQL's tag: SELECT n
    expect((await onB.query('create sequence s')).command).toBe('CREATE');
    expect((await onB.query("select nextval('s') as n")).rows).toEqual([{ n: '1' }]);
    // A block with a write: on the leader as a whole.
    await onB.query('begin');
    await onB.query("insert into t values (4, 'four')");
    expect(await rowsOf(onB, 'select count(*)::int from t')).toBe('[[3]]');
    await onB.query('commit');
    await onB.query('begin');
    await onB.query("insert into t values (5, 'five')");
    await onB.query('rollback');

    // On the leader: exactly those rows.
    const expectedTable = JSON.stringify([[2, 'two!'], [3, 'three!'], [4, 'four']]);
    expect(await rowsOf(leader, 'select id, v from t order by id')).toBe(expectedTable);
    expect(await rowsOf(leader, 'select n, top from mv')).toBe(JSON.stringify([['3', 'two!']]));
    // Read-your-writes: the standby's session reads them at once (it runs on the leader now).
    expect(await rowsOf(onB, 'select id, v from t order by id')).toBe(expectedTable);
    expect(await rowsOf(onB, 'select n, top from mv')).toBe(JSON.stringify([['3', 'two!']]));
    expect(await show(onB, 'in_hot_standby')).toBe('off');
    // A new session of the standby reads them once it followed a checkpoint past them.
    const written = await leaderEpoch(leader);
    const fresh = await standbySessionAtLeast(b, written);
    expect(await show(fresh, 'in_hot_standby')).toBe('on');
    expect(await rowsOf(fresh, 'select id, v from t order by id')).toBe(expectedTable);
    expect(await rowsOf(fresh, 'select n, top from mv')).toBe(JSON.stringify([['3', 'two!']]));
    await fresh.end();

    // The leader's errors reach the client as the leader gives them.
    const relayed: Failure[] = [];
    for (const sql of ["insert into t values (2, 'again')", 'insert into missing values (1)', 'insert into t values (1,, 2)', 'update t set v = 1/0 where id = 2', "insert into t values (20, 'x') returning nosuch"]) {
      const direct = await failure(leader, sql);
      const onC = await connectWhenServing(c);
      const forwarded = await failure(onC, sql);
      expect(forwarded, sql).toEqual(direct);
      relayed.push(forwarded);
      await onC.end();
    }
    // PostgreSQL's SQLSTATEs and positions (the column's error is found by the leader, not the standby's parser).
    expect(relayed.map((error) => [error.code, error.position])).toEqual([
      ['23505', undefined],
      ['42P01', '13'],
      ['42601', '25'],
      ['22012', undefined],
      ['42703', '42'],
    ]);
    expect(relayed[0]!.detail).toBe('Key (id)=(2) already exists.');

    // The extended protocol (a parameterized INSERT), after a SET made on the standby: the
    // session moves to the leader at the Parse, with its settings.
    const extended = await connectWhenServing(c);
    await extended.query("set application_name = 'forwarded'");
    // A statement prepared by name on the standby is bound again once the session moved.
    const pick = { name: 'pick', text: 'select v from t where id = $1', rowMode: 'array' as const };
    expect((await extended.query({ ...pick, values: [2] })).rows).toEqual([['two!']]);
    expect((await extended.query('insert into t values ($1, $2) returning id, v', [9, 'nine'])).rows).toEqual([{ id: 9, v: 'nine' }]);
    expect(await show(extended, 'application_name')).toBe('forwarded');
    expect(await show(extended, 'in_hot_standby')).toBe('off');
    expect((await extended.query({ ...pick, values: [9] })).rows).toEqual([['nine']]);
    await extended.query('delete from t where id = $1', [9]);
    // CancelRequest to the standby, with the key the standby gave: the statement stops on the leader.
    const { processID, secretKey } = extended as unknown as { processID: number; secretKey: number };
    const sleeping = extended.query('select pg_sleep(30)').then(
      () => undefined,
      (error: Failure) => error,
    );
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    const cancelStarted = Date.now();
    await new Promise<void>((resolveCancel, rejectCancel) => {
      const packet = Buffer.alloc(16);
      packet.writeInt32BE(16, 0);
      packet.writeInt32BE(80877102, 4);
      packet.writeInt32BE(processID, 8);
      packet.writeInt32BE(secretKey, 12);
      const socket = createConnection({ host: c.host, port: c.port }, () => socket.end(packet));
      socket.on('close', () => resolveCancel());
      socket.on('error', rejectCancel);
    });
    expect((await sleeping)?.code).toBe('57014');
    expect(Date.now() - cancelStarted).toBeLessThan(10_000);
    await extended.end();

    // psql against the standby: a write and what it returns.
    const psql = spawnSync('psql', [`host=${c.host} port=${c.port} user=oxbow dbname=oxbow`, '-Atc', "insert into t values (6, 'six') returning v"], { encoding: 'utf8' });
    expect(psql.stderr).toBe('');
    expect(psql.stdout.trim().split('\n')).toEqual(['six', 'INSERT 0 1']);
    expect(await rowsOf(leader, 'select v from t where id = 6')).toBe('[["six"]]');
    // COPY FROM STDIN through the standby: the CopyData messages are relayed too.
    const copy = spawnSync('psql', [`host=${c.host} port=${c.port} user=oxbow dbname=oxbow`, '-Atc', 'copy t from stdin'], { encoding: 'utf8', input: '10\tten\n11\televen\n' });
    expect(copy.stderr).toBe('');
    expect(copy.stdout.trim()).toBe('COPY 2');
    expect(await rowsOf(leader, 'select id, v from t where id >= 10 order by id')).toBe('[[10,"ten"],[11,"eleven"]]');

    // The leader dies: a standby's write fails with 57P03 within the deadline, nothing applied.
    const idle = await connectWhenServing(c);
    await a.kill('SIGKILL');
    const started = Date.now();
    const refused = await failure(idle, "insert into t values (7, 'seven')");
    const tookMs = Date.now() - started;
    expect(refused.code).toBe('57P03');
    expect(refused.message).toMatch(/^cannot forward this statement to the cluster's leader: the leader at .* could not be reached/);
    expect(tookMs).toBeGreaterThanOrEqual(FORWARD_TIMEOUT_MS - 200);
    expect(tookMs).toBeLessThan(FORWARD_TIMEOUT_MS + 1500);
    // The session forwarded to the dead leader ended with 08006.
    await failure(onB, 'select 1');
    expect(onBErrors.map((error) => [error.code, error.message])).toContainEqual(['08006', expect.stringMatching(/^the connection to the leader at .*, where this session ran, was lost$/)]);

    // A new leader: one of b and c; a write on the other is forwarded to it.
    let newLeader: OxbowServer | undefined;
    const deadline = Date.now() + 40_000;
    while (newLeader === undefined) {
      for (const node of [b, c]) {
        try {
          const probe = await connect(node);
          if ((await show(probe, 'in_hot_standby')) === 'off') newLeader = node;
          await probe.end();
        } catch {
          // Promoting, or a replica closed by the promotion.
        }
      }
      if (Date.now() > deadline) throw new Error(`no new leader\n${b.stderr()}\n${c.stderr()}`);
      if (newLeader === undefined) await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    }
    const standby = newLeader === b ? c : b;
    const onLeader = await connectWhenServing(newLeader);
    const survivors = await rowsOf(onLeader, 'select id from t order by id');
    const onStandby = await connectWhenServing(standby);
    // Until the standby reads the new leader's address from etcd, it may still try the dead one.
    let retried: pg.QueryResult | undefined;
    const writeDeadline = Date.now() + 20_000;
    while (retried === undefined) {
      try {
        retried = await onStandby.query("insert into t values (8, 'eight') returning id");
      } catch (error) {
        if ((error as Failure).code !== '57P03' || Date.now() > writeDeadline) throw error;
      }
    }
    expect(retried.rows).toEqual([{ id: 8 }]);
    expect(await rowsOf(onLeader, 'select id from t where id = 8')).toBe('[[8]]');
    expect(JSON.parse(await rowsOf(onLeader, 'select id from t order by id'))).toEqual([...JSON.parse(survivors), [8]]);
    for (const client of [leader, idle, onLeader, onStandby, onB]) await client.end().catch(() => undefined);
  }, 180_000);
});
