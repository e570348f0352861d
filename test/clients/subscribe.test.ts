// SUBSCRIBE over the wire with real clients: psql's \copy, postgres.js's COPY stream and a raw
// protocol client (for socket kills and 100 connections at once), against an engine on RocksDB
// served by pgwire in this process (so the connection limit can exceed 100). What the clients
// receive is checked against the view recomputed by the server (SELECT ... FOR SYSTEM_TIME AS OF
// each epoch, and SELECT at the end): incremental equals recompute, no gap, no duplicate.
// (psycopg's `cursor.copy("COPY (SUBSCRIBE ...) TO STDOUT")` and the cursor forms are read in
// subscribe-cursors.test.ts.)

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../executor/engine/create-engine.js';
import type { Engine } from '../../executor/engine/engine.js';
import { PgServer } from '../../pgwire/server.js';
import { fields, RawClient } from '../pgwire/raw-client.js';
import { connectReady } from '../pgwire/harness.js';
import { seededRandom } from '../support/seeded-random.js';
import { startOxbow } from '../support/server.js';

const EPOCH_SEQUENCE_BITS = 16n;

interface Change {
  readonly epoch: bigint;
  readonly diff: number;
  readonly progressed: boolean;
  readonly values: readonly string[];
}

function parseLine(line: string, progress: boolean): Change {
  const parts = line.split('\t');
  return {
    epoch: BigInt(parts[0]!),
    diff: Number(parts[1]),
    progressed: progress && parts[2] === 't',
    values: parts.slice(progress ? 3 : 2),
  };
}

/** Multiset of rows as `a\tb` keys with their counts (zero counts removed). */
function fold(changes: Iterable<Change>, upTo?: bigint): Map<string, number> {
  const state = new Map<string, number>();
  for (const change of changes) {
    if (change.progressed || (upTo !== undefined && change.epoch > upTo)) continue;
    const key = change.values.join('\t');
    const count = (state.get(key) ?? 0) + change.diff;
    if (count === 0) state.delete(key);
    else state.set(key, count);
  }
  return state;
}

function multiset(rows: readonly (readonly unknown[])[]): Map<string, number> {
  const state = new Map<string, number>();
  for (const row of rows) {
    const key = row.map((value) => (value === null ? '\\N' : String(value))).join('\t');
    state.set(key, (state.get(key) ?? 0) + 1);
  }
  return state;
}

function sorted(state: Map<string, number>): [string, number][] {
  return [...state].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** A raw protocol subscriber: CopyData lines parsed as they arrive, the ending (error or not) kept. */
class Subscriber {
  readonly changes: Change[] = [];
  /** The last progress row's epoch: everything up to it has arrived. */
  progress: bigint | undefined;
  error: Map<string, string> | undefined;
  copying = false;
  ended = false;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly client: RawClient,
    private readonly withProgress: boolean,
  ) {}

  static async open(port: number, sql: string, withProgress = sql.toUpperCase().includes('PROGRESS')): Promise<Subscriber> {
    const { client } = await connectReady(port);
    const subscriber = new Subscriber(client, withProgress);
    client.send(serialize.query(sql));
    void subscriber.read();
    await subscriber.until(() => subscriber.copying || subscriber.ended, 20_000);
    return subscriber;
  }

  private async read(): Promise<void> {
    try {
      for (;;) {
        const message = await this.client.readMessage();
        if (message.type === 'H') this.copying = true;
        else if (message.type === 'd') {
          const change = parseLine(message.payload.toString('utf8').replace(/\n$/, ''), this.withProgress);
          this.changes.push(change);
          if (change.progressed) this.progress = change.epoch;
        } else if (message.type === 'E') this.error = fields(message);
        else if (message.type === 'Z') {
          this.ended = true;
          this.wake();
          return;
        }
        this.wake();
      }
    } catch {
      this.ended = true;
      this.wake();
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  async until(ready: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; ${this.changes.length} lines, progress ${this.progress}, error ${this.error?.get('M')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Gone without a word: the socket destroyed, as a crashed client's. */
  kill(): void {
    this.client.socket.destroy();
  }
}

let engine: Engine;
let server: PgServer;
let port: number;
let dataDir: string;
let client: pg.Client;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'oxbow-subscribe-'));
  engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${join(dataDir, 'checkpoints')}`,
    barrierIntervalMs: 1000,
    checkpointIntervalMs: 600_000,
    timeTravelRetentionMs: 10 * 60_000,
    memoryLimitBytes: 512 << 20,
  });
  server = new PgServer({ engine, host: '127.0.0.1', port: 0, maxConnections: 200 });
  ({ port } = await server.listen());
  client = new pg.Client({ host: '127.0.0.1', port, user: 'oxbow', database: 'oxbow' });
  await client.connect();
}, 60_000);

afterAll(async () => {
  await client?.end().catch(() => undefined);
  await server?.close();
  await engine?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

async function rows(sql: string): Promise<unknown[][]> {
  return (await client.query({ text: sql, rowMode: 'array' })).rows as unknown[][];
}

/** The view's rows as of an epoch (the last epoch of its millisecond), recomputed by the server. */
async function rowsAsOf(relation: string, epoch: bigint): Promise<Map<string, number>> {
  const millis = epoch >> EPOCH_SEQUENCE_BITS;
  return multiset(await rows(`SELECT * FROM ${relation} FOR SYSTEM_TIME AS OF timestamptz '1970-01-01 00:00:00+00' + ${millis} * interval '1 millisecond'`));
}

/** An epoch committed after every statement run so far: one more write, its epoch read back. */
async function fence(): Promise<bigint> {
  const before = BigInt(Date.now()) << EPOCH_SEQUENCE_BITS;
  await client.query('INSERT INTO fence_marks VALUES (1)');
  return before;
}

describe('SUBSCRIBE', () => {
  beforeAll(async () => {
    await client.query('CREATE TABLE fence_marks (at int)');
  });

  it('psql: \\copy (SUBSCRIBE t) to stdout streams the snapshot, then the changes, until cancelled', async () => {
    await client.query('CREATE TABLE psql_t (k int PRIMARY KEY, v text)');
    await client.query("INSERT INTO psql_t VALUES (1, 'one'), (2, 'two')");
    const psql = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', '-c', '\\copy (SUBSCRIBE psql_t) to stdout'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    psql.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    psql.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => psql.on('exit', (code) => resolve(code)));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await client.query("INSERT INTO psql_t VALUES (3, 'three')");
    await client.query("UPDATE psql_t SET v = 'TWO' WHERE k = 2");
    await client.query('DELETE FROM psql_t WHERE k = 1');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    psql.kill('SIGINT'); // psql sends a CancelRequest
    expect(await exited).toBe(1);
    expect(stderr).toContain('canceling statement due to user request');
    const changes = stdout.trim().split('\n').map((line) => parseLine(line, false));
    expect(sorted(fold(changes))).toEqual(sorted(multiset(await rows('SELECT * FROM psql_t'))));
    // Lines are epoch, diff, then the columns; epochs never go backwards.
    for (let index = 1; index < changes.length; index++) expect(changes[index]!.epoch >= changes[index - 1]!.epoch).toBe(true);
    expect(changes.every((change) => change.diff === 1 || change.diff === -1)).toBe(true);
    expect(changes.some((change) => change.diff === -1 && change.values.join(',') === '2,two')).toBe(true);
  }, 30_000);

  it('postgres.js: a readable COPY stream gets each change as it commits; cancel ends it and the connection stays usable', async () => {
    await client.query('CREATE TABLE js_t (k int PRIMARY KEY, v int)');
    await client.query('INSERT INTO js_t VALUES (1, 10)');
    const sql = postgres({ host: '127.0.0.1', port, user: 'oxbow', database: 'oxbow', max: 1, onnotice: () => undefined });
    try {
      const query = sql.unsafe('COPY (SUBSCRIBE (SELECT k, v * 2 AS doubled FROM js_t WHERE v > 5) WITH (PROGRESS)) TO STDOUT');
      const stream = await query.readable();
      const lines: string[] = [];
      let pending = '';
      let failure: unknown;
      stream.on('data', (chunk: Buffer) => {
        pending += chunk.toString();
        const parts = pending.split('\n');
        pending = parts.pop()!;
        lines.push(...parts);
      });
      stream.on('error', (error) => (failure = error));
      const waitFor = async (ready: () => boolean): Promise<void> => {
        const deadline = Date.now() + 15_000;
        while (!ready()) {
          if (Date.now() > deadline) throw new Error(`timed out with ${JSON.stringify(lines)}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const parsed = (): Change[] => lines.map((line) => parseLine(line, true));
      await waitFor(() => parsed().some((change) => change.progressed));
      expect(parsed().filter((change) => !change.progressed).map((change) => change.values)).toEqual([['1', '20']]);
      await client.query('INSERT INTO js_t VALUES (2, 1), (3, 30)');
      await waitFor(() => parsed().some((change) => change.values[0] === '3'));
      await client.query('UPDATE js_t SET v = 40 WHERE k = 1');
      await waitFor(() => parsed().some((change) => change.values.join() === '1,80'));
      const changes = parsed();
      expect(changes.filter((change) => !change.progressed).map((change) => `${change.diff} ${change.values.join(',')}`)).toEqual(['1 1,20', '1 3,60', '-1 1,20', '1 1,80']);
      expect(sorted(fold(changes))).toEqual(sorted(multiset(await rows('SELECT k, v * 2 FROM js_t WHERE v > 5'))));
      // A CancelRequest with the connection's backend key (postgres.js's own cancel() leaves a
      // COPY stream alone): the COPY ends with 57014 and the connection takes the next query.
      const { pid, secret } = (query as unknown as { state: { pid: number; secret: number } }).state;
      const canceller = await RawClient.connect(port);
      const request = Buffer.alloc(16);
      request.writeInt32BE(16, 0);
      request.writeInt32BE(80877102, 4);
      request.writeUInt32BE(pid, 8);
      request.writeUInt32BE(secret, 12);
      canceller.send(request);
      await canceller.closedPromise;
      query.catch((error: unknown) => (failure = error));
      expect(await sql`SELECT 1 AS one`).toEqual([{ one: 1 }]);
      await waitFor(() => failure !== undefined);
      expect((failure as { code?: string }).code).toBe('57014');
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 30_000);

  it('the sum of the diffs received up to each epoch equals the view recomputed as of that epoch', async () => {
    await client.query('CREATE TABLE inc_t (k int PRIMARY KEY, v int)');
    await client.query('CREATE MATERIALIZED VIEW inc_v AS SELECT k % 4 AS g, count(*) AS n, sum(v) AS total FROM inc_t GROUP BY k % 4');
    await client.query('INSERT INTO inc_t SELECT i, i FROM generate_series(1, 20) AS i');
    const subscriber = await Subscriber.open(port, 'COPY (SUBSCRIBE inc_v WITH (PROGRESS)) TO STDOUT');
    const random = seededRandom(7);
    for (let step = 0; step < 40; step++) {
      const k = 1 + Math.floor(random() * 40);
      const choice = random();
      if (choice < 0.4) await client.query('INSERT INTO inc_t VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v', [k, Math.floor(random() * 100)]);
      else if (choice < 0.7) await client.query('UPDATE inc_t SET v = v + 1 WHERE k = $1', [k]);
      else await client.query('DELETE FROM inc_t WHERE k = $1', [k]);
    }
    const last = await fence();
    await subscriber.until(() => (subscriber.progress ?? 0n) >= last, 20_000);
    subscriber.kill();
    const epochs = [...new Set(subscriber.changes.filter((change) => !change.progressed).map((change) => change.epoch))].sort((a, b) => (a < b ? -1 : 1));
    expect(epochs.length).toBeGreaterThan(10);
    let compared = 0;
    for (let index = 0; index < epochs.length; index++) {
      const epoch = epochs[index]!;
      // AS OF a moment reads the last epoch of its millisecond: compare where that is this one.
      const next = epochs[index + 1];
      if (next !== undefined && next >> EPOCH_SEQUENCE_BITS === epoch >> EPOCH_SEQUENCE_BITS) continue;
      expect(sorted(fold(subscriber.changes, epoch)), `as of epoch ${epoch}`).toEqual(sorted(await rowsAsOf('inc_v', epoch)));
      compared++;
    }
    expect(compared).toBeGreaterThan(10);
    expect(sorted(fold(subscriber.changes))).toEqual(sorted(multiset(await rows('SELECT * FROM inc_v'))));
  }, 60_000);

  it('clients killed at random points resume with AS OF the last progress and SNAPSHOT = false: no gap, no duplicate', async () => {
    await client.query('CREATE TABLE kill_t (k int PRIMARY KEY, v int)');
    await client.query('CREATE MATERIALIZED VIEW kill_v AS SELECT k, v, v % 3 AS m FROM kill_t WHERE v % 5 <> 0');
    await client.query('INSERT INTO kill_t SELECT i, i FROM generate_series(1, 50) AS i');
    const random = seededRandom(11);
    let writing = true;
    const writer = (async () => {
      let step = 0;
      while (writing) {
        const k = 1 + Math.floor(random() * 80);
        const choice = random();
        if (choice < 0.45) await client.query('INSERT INTO kill_t VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v', [k, step]);
        else if (choice < 0.75) await client.query('UPDATE kill_t SET v = v + 1 WHERE k = $1', [k]);
        else await client.query('DELETE FROM kill_t WHERE k = $1', [k]);
        step++;
      }
      return step;
    })();
    // Everything received up to the last progress row; what came after it (an epoch cut short) is dropped.
    const kept: Change[] = [];
    let resumeFrom: bigint | undefined;
    let kills = 0;
    const deadline = Date.now() + 8000;
    while (Date.now() < deadline) {
      const sql = resumeFrom === undefined ? 'COPY (SUBSCRIBE kill_v WITH (PROGRESS)) TO STDOUT' : `COPY (SUBSCRIBE kill_v AS OF ${resumeFrom} WITH (PROGRESS, SNAPSHOT = false)) TO STDOUT`;
      const subscriber = await Subscriber.open(port, sql);
      expect(subscriber.error?.get('M')).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.floor(random() * 400)));
      subscriber.kill();
      kills++;
      const received = subscriber.changes;
      let lastProgress = -1;
      received.forEach((change, index) => {
        if (change.progressed) lastProgress = index;
      });
      if (lastProgress < 0) continue;
      for (const change of received.slice(0, lastProgress + 1)) if (!change.progressed) kept.push(change);
      resumeFrom = received[lastProgress]!.epoch;
    }
    writing = false;
    const statements = await writer;
    expect(statements).toBeGreaterThan(20);
    expect(kills).toBeGreaterThan(5);
    const last = await fence();
    const final = await Subscriber.open(port, `COPY (SUBSCRIBE kill_v AS OF ${resumeFrom} WITH (PROGRESS, SNAPSHOT = false)) TO STDOUT`);
    await final.until(() => (final.progress ?? 0n) >= last, 20_000);
    final.kill();
    kept.push(...final.changes.filter((change) => !change.progressed));
    const state = fold(kept);
    // A duplicate or a gap shows as a count other than 1 (the view's rows are distinct) or a missing row.
    expect([...state.values()].every((count) => count === 1)).toBe(true);
    expect(sorted(state)).toEqual(sorted(multiset(await rows('SELECT * FROM kill_v'))));
  }, 90_000);

  it('a subscriber that stops reading holds nobody back and, once it reads again, gets every change', async () => {
    await client.query('CREATE TABLE slow_t (k int PRIMARY KEY, payload text)');
    const subscriber = await Subscriber.open(port, 'COPY (SUBSCRIBE slow_t WITH (PROGRESS)) TO STDOUT');
    subscriber.client.socket.pause();
    const started = Date.now();
    // About 8 MB of changes, far more than the socket buffers hold.
    for (let statement = 0; statement < 40; statement++) {
      await client.query(`INSERT INTO slow_t SELECT i, repeat('x', 200) || i FROM generate_series(${statement * 1000}, ${statement * 1000 + 999}) AS i ON CONFLICT (k) DO NOTHING`);
    }
    await client.query('DELETE FROM slow_t WHERE k % 7 = 0');
    const writing = Date.now() - started;
    const last = await fence();
    // The server holds about one round for it (what its socket buffers), not the 8 MB written.
    const connections = (server as unknown as { connections: Set<{ socket: import('node:net').Socket }> }).connections;
    const serverSide = [...connections].find((connection) => connection.socket.remotePort === subscriber.client.socket.localPort);
    expect(serverSide).toBeDefined();
    expect(serverSide!.socket.writableLength).toBeLessThan(4 << 20);
    subscriber.client.socket.resume();
    await subscriber.until(() => (subscriber.progress ?? 0n) >= last, 60_000);
    subscriber.kill();
    expect(sorted(fold(subscriber.changes))).toEqual(sorted(multiset(await rows('SELECT * FROM slow_t'))));
    expect(writing).toBeLessThan(60_000);
  }, 120_000);

  it('100 subscribers on one view each get every change', async () => {
    await client.query('CREATE TABLE many_t (k int PRIMARY KEY, v int)');
    await client.query('CREATE MATERIALIZED VIEW many_v AS SELECT k, v FROM many_t');
    await client.query('INSERT INTO many_t SELECT i, i FROM generate_series(1, 10) AS i');
    const subscribers = await Promise.all(Array.from({ length: 100 }, () => Subscriber.open(port, 'COPY (SUBSCRIBE many_v WITH (PROGRESS)) TO STDOUT')));
    const started = Date.now();
    for (let step = 0; step < 20; step++) {
      await client.query('INSERT INTO many_t VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v', [1 + (step % 15), step * 7]);
    }
    await client.query('DELETE FROM many_t WHERE k = 3');
    const last = await fence();
    await Promise.all(subscribers.map((subscriber) => subscriber.until(() => (subscriber.progress ?? 0n) >= last, 30_000)));
    const elapsed = Date.now() - started;
    for (const subscriber of subscribers) subscriber.kill();
    const expected = sorted(multiset(await rows('SELECT * FROM many_v')));
    for (const subscriber of subscribers) {
      expect(subscriber.error).toBeUndefined();
      expect(sorted(fold(subscriber.changes))).toEqual(expected);
    }
    expect(elapsed).toBeLessThan(30_000);
  }, 90_000);

  it('CREATE SUBSCRIPTION keeps history the relation itself would drop', async () => {
    await client.query("CREATE TABLE pinned_t (k int PRIMARY KEY) WITH (retention = '1 second')");
    await client.query("CREATE TABLE unpinned_t (k int PRIMARY KEY) WITH (retention = '1 second')");
    await client.query("CREATE SUBSCRIPTION pinned_s FROM pinned_t WITH (retention = '1 hour')");
    await client.query('INSERT INTO pinned_t VALUES (1)');
    await client.query('INSERT INTO unpinned_t VALUES (1)');
    const [[startedAt]] = (await rows("SELECT to_char(now(), 'YYYY-MM-DD HH24:MI:SS.US+00')")) as [[string]];
    await client.query('INSERT INTO pinned_t VALUES (2)');
    await client.query('INSERT INTO unpinned_t VALUES (2)');
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await client.query('INSERT INTO pinned_t VALUES (3)');
    await client.query('INSERT INTO unpinned_t VALUES (3)');
    const listed = await rows("SELECT name, relation_name, retention::text FROM oxbow_catalog.subscriptions WHERE name = 'pinned_s'");
    expect(listed).toEqual([['pinned_s', 'pinned_t', '01:00:00']]);
    expect(await rows('SHOW SUBSCRIPTIONS')).toEqual([['pinned_s']]);

    const pinned = await Subscriber.open(port, `COPY (SUBSCRIBE pinned_t AS OF '${startedAt}' WITH (SNAPSHOT = false, PROGRESS)) TO STDOUT`);
    const last = await fence();
    await pinned.until(() => (pinned.progress ?? 0n) >= last || pinned.ended, 10_000);
    pinned.kill();
    expect(pinned.error?.get('M')).toBeUndefined();
    expect(pinned.changes.filter((change) => !change.progressed).map((change) => `${change.diff} ${change.values.join()}`)).toEqual(['1 2', '1 3']);

    const unpinned = await Subscriber.open(port, `COPY (SUBSCRIBE unpinned_t AS OF '${startedAt}' WITH (SNAPSHOT = false)) TO STDOUT`);
    await unpinned.until(() => unpinned.ended, 10_000);
    expect(unpinned.error?.get('C')).toBe('72000');
    expect(unpinned.error?.get('M')).toMatch(/is outside the readable window of table \d+: from .* to /);

    await expect(client.query('DROP TABLE pinned_t')).rejects.toMatchObject({ code: '2BP01' });
    // SUBSCRIBE of the subscription reads its relation, and ends when the subscription is dropped.
    const bySubscription = await Subscriber.open(port, 'SUBSCRIBE pinned_s WITH (PROGRESS)');
    await bySubscription.until(() => bySubscription.progress !== undefined, 10_000);
    expect(sorted(fold(bySubscription.changes))).toEqual(sorted(multiset(await rows('SELECT * FROM pinned_t'))));
    await client.query('DROP SUBSCRIPTION pinned_s');
    await bySubscription.until(() => bySubscription.ended, 10_000);
    expect(bySubscription.error?.get('M')).toBe('subscription "pinned_s" was dropped; the subscription ended');
    bySubscription.kill();
    await client.query('DROP TABLE pinned_t');
  }, 30_000);

  it('answers bad input with clear errors and keeps the session usable', async () => {
    await client.query('CREATE TABLE bad_t (k int PRIMARY KEY)');
    const expectError = async (sql: string, code: string, message?: RegExp): Promise<void> => {
      const subscriber = await Subscriber.open(port, sql);
      await subscriber.until(() => subscriber.ended, 10_000);
      expect(subscriber.error?.get('C'), sql).toBe(code);
      if (message !== undefined) expect(subscriber.error?.get('M')).toMatch(message);
      subscriber.kill();
    };
    await expectError('COPY (SUBSCRIBE no_such_relation) TO STDOUT', '42P01', /relation "no_such_relation" does not exist/);
    await expectError('COPY (SUBSCRIBE bad_t AS OF 1) TO STDOUT', '72000', /outside the readable window/);
    await expectError('COPY (SUBSCRIBE (SELECT count(*) FROM bad_t)) TO STDOUT', '0A000', /SUBSCRIBE to this query is not supported/);
    await expectError('COPY (SUBSCRIBE (SELECT k FROM bad_t ORDER BY k)) TO STDOUT', '0A000');
    await expectError('COPY (SUBSCRIBE bad_t WITH (FOO)) TO STDOUT', '22023', /unrecognized SUBSCRIBE option "foo"/);
    await expectError('COPY (SUBSCRIBE bad_t) TO STDOUT WITH (FORMAT csv)', '0A000');
    await expectError('COPY (SUBSCRIBE bad_t', '42601');
    await expectError('BEGIN; COPY (SUBSCRIBE bad_t) TO STDOUT', '25001', /cannot run inside a transaction block/);

    // Dropped while read: the COPY ends with 42P01, and the connection answers the next query.
    await client.query('INSERT INTO bad_t VALUES (1)');
    const reader = await Subscriber.open(port, 'SUBSCRIBE bad_t WITH (PROGRESS)');
    await reader.until(() => reader.progress !== undefined, 10_000);
    await client.query('DROP TABLE bad_t');
    await reader.until(() => reader.ended, 10_000);
    expect(reader.error?.get('C')).toBe('42P01');
    expect(reader.error?.get('M')).toMatch(/relation "bad_t" was dropped/);
    reader.client.send(serialize.query('SELECT 41 + 1'));
    const answer = await reader.client.readUntil('Z');
    expect(answer.find((message) => message.type === 'D')?.payload.toString('utf8', 6)).toBe('42');
    reader.kill();
  }, 60_000);
});

describe('CREATE SUBSCRIPTION across a restart', () => {
  it('survives a restart of the server process and keeps pinning the history', async () => {
    const first = await startOxbow();
    const dataDir = first.dataDir;
    let second: Awaited<ReturnType<typeof startOxbow>> | undefined;
    try {
      const before = new pg.Client({ connectionString: first.url });
      await before.connect();
      await before.query("CREATE TABLE kept (k int PRIMARY KEY) WITH (retention = '1 second')");
      await before.query("CREATE SUBSCRIPTION kept_s FROM kept WITH (retention = '1 hour')");
      await before.query('INSERT INTO kept VALUES (1)');
      const [[startedAt]] = (await before.query({ text: "SELECT to_char(now(), 'YYYY-MM-DD HH24:MI:SS.US+00')", rowMode: 'array' })).rows as [[string]];
      await before.query('INSERT INTO kept VALUES (2)');
      await before.end();
      await first.kill('SIGTERM');
      second = await startOxbow({ dataDir });
      const after = new pg.Client({ connectionString: second.url });
      await after.connect();
      await new Promise((resolve) => setTimeout(resolve, 2500));
      await after.query('INSERT INTO kept VALUES (3)');
      expect((await after.query({ text: 'SHOW SUBSCRIPTIONS', rowMode: 'array' })).rows).toEqual([['kept_s']]);
      const subscriber = await Subscriber.open(second.port, `COPY (SUBSCRIBE kept AS OF '${startedAt}' WITH (SNAPSHOT = false, PROGRESS)) TO STDOUT`);
      const fenceAt = BigInt(Date.now()) << EPOCH_SEQUENCE_BITS;
      await after.query('INSERT INTO kept VALUES (4)');
      await subscriber.until(() => (subscriber.progress ?? 0n) >= fenceAt || subscriber.ended, 15_000);
      subscriber.kill();
      expect(subscriber.error?.get('M')).toBeUndefined();
      expect(subscriber.changes.filter((change) => !change.progressed).map((change) => `${change.diff} ${change.values.join()}`)).toEqual(['1 2', '1 3', '1 4']);
      await after.end();
    } finally {
      await second?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});

