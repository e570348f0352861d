// Cursors over a subscription with real clients against a real server process (dist/): node-postgres
// reading Materialize's `DECLARE c CURSOR FOR SUBSCRIBE` and RisingWave's `DECLARE c SUBSCRIPTION
// CURSOR` in FETCH loops, psycopg 3 reading `COPY (SUBSCRIBE ...) TO STDOUT` with cursor.copy() and
// both cursor forms with FETCH (test/tools/psycopg_subscribe.py), and psql running a script of
// FETCHes. What each receives is checked against the changes computed here from the statements the
// test ran (a small model of the table), including an update and a delete; then the ends: CLOSE, the
// block's end, a drop (42P01), a cursor behind the kept history (72000), bad input, a cancelled wait.

import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { runPython } from '../tools/python.js';

/** One statement of a test, and the change it makes to the model. */
type Step = { readonly op: 'insert'; readonly k: number; readonly v: string } | { readonly op: 'update'; readonly k: number; readonly v: string } | { readonly op: 'delete'; readonly k: number };

/** A change as `diff k v` (Materialize's form) or `k v op` (RisingWave's). */
type Change = { readonly diff: 1 | -1; readonly k: number; readonly v: string; readonly op: 'Insert' | 'Delete' | 'UpdateDelete' | 'UpdateInsert' };

function sqlOf(table: string, step: Step): string {
  switch (step.op) {
    case 'insert':
      return `INSERT INTO ${table} VALUES (${step.k}, '${step.v}')`;
    case 'update':
      return `UPDATE ${table} SET v = '${step.v}' WHERE k = ${step.k}`;
    case 'delete':
      return `DELETE FROM ${table} WHERE k = ${step.k}`;
  }
}

/** The model: applies each step to a key -> value map and returns the changes each made, one group per statement. */
function changesOf(initial: ReadonlyMap<number, string>, steps: readonly Step[]): Change[][] {
  const state = new Map(initial);
  return steps.map((step) => {
    const old = state.get(step.k);
    if (step.op === 'insert') {
      state.set(step.k, step.v);
      return [{ diff: 1, k: step.k, v: step.v, op: 'Insert' }];
    }
    if (step.op === 'update') {
      state.set(step.k, step.v);
      return [
        { diff: -1, k: step.k, v: old!, op: 'UpdateDelete' },
        { diff: 1, k: step.k, v: step.v, op: 'UpdateInsert' },
      ];
    }
    state.delete(step.k);
    return [{ diff: -1, k: step.k, v: old!, op: 'Delete' }];
  });
}

const INITIAL = new Map([
  [1, 'a'],
  [2, 'b'],
]);
const STEPS: readonly Step[] = [
  { op: 'insert', k: 3, v: 'c' },
  { op: 'update', k: 2, v: 'B' },
  { op: 'delete', k: 1 },
  { op: 'insert', k: 4, v: 'd' },
];
const SNAPSHOT: Change[] = [...INITIAL].map(([k, v]) => ({ diff: 1, k, v, op: 'Insert' }));

/** Materialize-form changes as sorted `diff k v` strings per epoch group. */
function diffGroups(groups: readonly (readonly Change[])[]): string[][] {
  return groups.map((group) => group.map((change) => `${change.diff} ${change.k} ${change.v}`).sort());
}

/** Rows `[epoch, diff, (progressed,) k, v]` grouped by epoch in arrival order, progress rows left out. */
function groupByEpoch(rows: readonly (readonly unknown[])[], progress: boolean): string[][] {
  const groups: string[][] = [];
  let last: string | undefined;
  for (const row of rows) {
    if (progress && (row[2] === true || row[2] === 't')) continue;
    const epoch = String(row[0]);
    const values = row.slice(progress ? 3 : 2).map(String);
    if (epoch !== last) groups.push([]);
    groups[groups.length - 1]!.push(`${String(row[1])} ${values.join(' ')}`);
    last = epoch;
  }
  return groups.map((group) => group.sort());
}

let server: OxbowServer;

beforeAll(async () => {
  server = await startOxbow({ args: ['--barrier-interval-ms', '200'] });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  return client;
}

async function setUp(writer: pg.Client, table: string): Promise<void> {
  await writer.query(`CREATE TABLE ${table} (k int PRIMARY KEY, v text)`);
  await writer.query(`INSERT INTO ${table} VALUES ${[...INITIAL].map(([k, v]) => `(${k}, '${v}')`).join(', ')}`);
}

/** Runs the steps one statement at a time (a little apart, so each commits in its own millisecond). */
async function runSteps(writer: pg.Client, table: string): Promise<void> {
  for (const step of STEPS) {
    await writer.query(sqlOf(table, step));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('node-postgres', () => {
  it("reads Materialize's DECLARE ... CURSOR FOR SUBSCRIBE in a FETCH loop", async () => {
    const writer = await connect();
    const reader = await connect();
    try {
      await setUp(writer, 'mz_t');
      await reader.query('BEGIN');
      await reader.query('DECLARE c CURSOR FOR SUBSCRIBE mz_t WITH (PROGRESS)');
      const received: unknown[][] = [];
      const first = await reader.query({ text: 'FETCH ALL c', rowMode: 'array' });
      expect(first.fields.map((field) => field.name)).toEqual(['oxbow_epoch', 'oxbow_diff', 'oxbow_progressed', 'k', 'v']);
      received.push(...(first.rows as unknown[][]));
      // Nothing new: timeout = '0s' answers at once with no row.
      const started = Date.now();
      expect((await reader.query("FETCH 10 c WITH (timeout = '0s')")).rows).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1000);
      // Without a timeout FETCH waits for a row: the writer's next statement.
      const waiting = reader.query({ text: 'FETCH 100 c', rowMode: 'array' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const writes = runSteps(writer, 'mz_t');
      received.push(...((await waiting).rows as unknown[][]));
      await writes;
      const expectedRows = SNAPSHOT.length + STEPS.length + 1;
      const deadline = Date.now() + 20_000;
      while (received.filter((row) => row[2] === false).length < expectedRows && Date.now() < deadline) {
        received.push(...((await reader.query({ text: "FETCH 100 c WITH (timeout = '2s')", rowMode: 'array' })).rows as unknown[][]));
      }
      expect(groupByEpoch(received, true)).toEqual(diffGroups([SNAPSHOT, ...changesOf(INITIAL, STEPS)]));
      // Progress rows: epochs never go back, and a row comes after every progress row below its epoch.
      let lastProgress = 0n;
      for (const row of received) {
        const epoch = BigInt(row[0] as string);
        if (row[2] === true) {
          expect(epoch >= lastProgress).toBe(true);
          lastProgress = epoch;
        } else expect(epoch > lastProgress).toBe(true);
      }
      await reader.query('COMMIT');
      // The cursor ended with its block.
      await expect(reader.query('FETCH 1 c')).rejects.toMatchObject({ code: '34000' });
      expect((await reader.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all([writer.end(), reader.end()]);
    }
  }, 60_000);

  it("reads RisingWave's subscription cursor: op, rw_timestamp, SINCE and FULL, a relation without a key", async () => {
    const writer = await connect();
    const reader = await connect();
    try {
      await setUp(writer, 'rw_t');
      await writer.query("CREATE SUBSCRIPTION rw_s FROM rw_t WITH (retention = '1 hour')");
      await reader.query('DECLARE cur SUBSCRIPTION CURSOR FOR rw_s');
      // SINCE now() (the default): nothing before the DECLARE, and FETCH does not wait.
      expect((await reader.query('FETCH NEXT FROM cur')).rows).toEqual([]);
      await runSteps(writer, 'rw_t');
      const received: unknown[][] = [];
      const expected = changesOf(INITIAL, STEPS).flat();
      const deadline = Date.now() + 20_000;
      while (received.length < expected.length && Date.now() < deadline) {
        const result = await reader.query({ text: "FETCH NEXT FROM cur WITH (timeout = '2s')", rowMode: 'array' });
        if (received.length === 0) expect(result.fields.map((field) => field.name)).toEqual(['k', 'v', 'op', 'rw_timestamp']);
        received.push(...(result.rows as unknown[][]));
      }
      expect(received.map((row) => row.slice(0, 3))).toEqual(expected.map((change) => [change.k, change.v, change.op]));
      const stamps = received.map((row) => BigInt(row[3] as string));
      for (let index = 1; index < stamps.length; index++) expect(stamps[index]! >= stamps[index - 1]!).toBe(true);
      expect(stamps[1]).toBe(stamps[2]); // the update's pair shares its epoch
      expect(Math.abs(Number(stamps[0]!) - Date.now())).toBeLessThan(60_000);

      // SINCE unix_ms: the changes at or after that millisecond (here: from the update on).
      await reader.query(`DECLARE since_update SUBSCRIPTION CURSOR FOR rw_s SINCE ${stamps[1]}`);
      const resumed = (await reader.query({ text: 'FETCH 100 FROM since_update', rowMode: 'array' })).rows as unknown[][];
      expect(resumed).toEqual(received.slice(1));
      // SINCE begin(): every change the subscription kept (it was created before the steps).
      await reader.query('DECLARE from_begin SUBSCRIPTION CURSOR FOR rw_s SINCE begin()');
      const fromBegin = (await reader.query({ text: 'FETCH ALL FROM from_begin', rowMode: 'array' })).rows as unknown[][];
      expect(fromBegin.slice(-received.length)).toEqual(received);
      // FULL: the rows now, as Inserts without a timestamp, then the changes that follow.
      await reader.query('DECLARE full_cur SUBSCRIPTION CURSOR FOR rw_s FULL');
      const full = (await reader.query({ text: 'FETCH 100 FROM full_cur', rowMode: 'array' })).rows as unknown[][];
      const now = (await writer.query({ text: 'SELECT k, v FROM rw_t', rowMode: 'array' })).rows as unknown[][];
      expect(full.map((row) => JSON.stringify(row)).sort()).toEqual(now.map((row) => JSON.stringify([...row, 'Insert', null])).sort());
      await writer.query("INSERT INTO rw_t VALUES (5, 'e')");
      expect((await reader.query({ text: "FETCH 100 FROM full_cur WITH (timeout = '5s')", rowMode: 'array' })).rows.map((row: unknown[]) => row.slice(0, 3))).toEqual([[5, 'e', 'Insert']]);

      // Without a primary key among the columns an update is a Delete and an Insert.
      await writer.query('CREATE TABLE nokey_t (k int, v text)');
      await writer.query("INSERT INTO nokey_t VALUES (1, 'a')");
      await writer.query('CREATE SUBSCRIPTION nokey_s FROM nokey_t');
      await reader.query('DECLARE nokey SUBSCRIPTION CURSOR FOR nokey_s');
      await writer.query("UPDATE nokey_t SET v = 'A' WHERE k = 1");
      const unpaired = (await reader.query({ text: "FETCH 10 FROM nokey WITH (timeout = '5s')", rowMode: 'array' })).rows as unknown[][];
      expect(unpaired.map((row) => row.slice(0, 3))).toEqual([
        [1, 'a', 'Delete'],
        [1, 'A', 'Insert'],
      ]);

      await reader.query('CLOSE cur');
      await expect(reader.query('FETCH NEXT FROM cur')).rejects.toMatchObject({ code: '34000' });
      expect((await reader.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all([writer.end(), reader.end()]);
    }
  }, 60_000);

  it('ends cursors clearly: a drop, history not kept, bad input, a cancelled wait', async () => {
    const writer = await connect();
    const reader = await connect();
    try {
      // A dropped relation: 42P01 at the next FETCH; the block rolls back and the session goes on.
      await writer.query('CREATE TABLE gone_t (k int PRIMARY KEY)');
      await reader.query('BEGIN');
      await reader.query('DECLARE c CURSOR FOR SUBSCRIBE gone_t');
      await writer.query('DROP TABLE gone_t');
      await expect(reader.query("FETCH 1 c WITH (timeout = '5s')")).rejects.toMatchObject({ code: '42P01', message: 'relation "gone_t" was dropped; the subscription ended' });
      await reader.query('ROLLBACK');
      expect((await reader.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);

      // A dropped subscription ends its cursors; each later FETCH says so again until CLOSE.
      await writer.query('CREATE TABLE sub_t (k int PRIMARY KEY)');
      await writer.query('CREATE SUBSCRIPTION sub_s FROM sub_t');
      await reader.query('DECLARE r SUBSCRIPTION CURSOR FOR sub_s');
      await writer.query('DROP SUBSCRIPTION sub_s');
      await expect(reader.query("FETCH 1 FROM r WITH (timeout = '5s')")).rejects.toMatchObject({ code: '42P01', message: 'subscription "sub_s" was dropped; the subscription ended' });
      await expect(reader.query('FETCH 1 FROM r')).rejects.toMatchObject({ code: '42P01' });
      await reader.query('CLOSE r');

      // A cursor further behind than the history kept: 72000.
      await writer.query("CREATE TABLE short_t (k int PRIMARY KEY) WITH (retention = '1 second')");
      await reader.query('BEGIN');
      await reader.query('DECLARE behind CURSOR FOR SUBSCRIBE short_t WITH (SNAPSHOT = false)');
      await writer.query('INSERT INTO short_t VALUES (1)');
      await new Promise((resolve) => setTimeout(resolve, 2500));
      await writer.query('INSERT INTO short_t VALUES (2)');
      await expect(reader.query("FETCH ALL behind WITH (timeout = '1s')")).rejects.toMatchObject({ code: '72000', message: expect.stringMatching(/^the subscription to "short_t" fell behind its history: /) });
      await reader.query('ROLLBACK');
      await expect(reader.query('DECLARE old SUBSCRIPTION CURSOR FOR gone SINCE 1000')).rejects.toMatchObject({ code: '42704' });
      await writer.query('CREATE SUBSCRIPTION short_s FROM short_t');
      await expect(reader.query('DECLARE old SUBSCRIPTION CURSOR FOR short_s SINCE 1000')).rejects.toMatchObject({ code: '72000', message: expect.stringMatching(/outside the readable window of "short_t"/) });

      // Bad input: each a clear error, the session usable after each.
      await expect(reader.query('DECLARE c CURSOR FOR SUBSCRIBE short_t')).rejects.toMatchObject({ code: '25P01' });
      await expect(reader.query('DECLARE r SUBSCRIPTION CURSOR FOR short_t')).rejects.toMatchObject({ code: '42809', message: '"short_t" is not a subscription' });
      await expect(reader.query('DECLARE r SUBSCRIPTION CURSOR FOR short_s SINCE yesterday')).rejects.toMatchObject({ code: '42601' });
      await reader.query('DECLARE r SUBSCRIPTION CURSOR FOR short_s');
      await expect(reader.query('DECLARE r SUBSCRIPTION CURSOR FOR short_s')).rejects.toMatchObject({ code: '42P03' });
      await expect(reader.query("FETCH 1 FROM r WITH (timeout = 'soon')")).rejects.toMatchObject({ code: '22023' });
      await expect(reader.query("FETCH 1 FROM r WITH (wait = '1s')")).rejects.toMatchObject({ code: '22023' });
      await expect(reader.query('MOVE 1 r')).rejects.toMatchObject({ code: '0A000' });
      await expect(reader.query('FETCH BACKWARD 1 FROM r')).rejects.toMatchObject({ code: '0A000' });

      // A FETCH cancelled while it waits (statement_timeout) loses nothing: the next one gets the row.
      await reader.query("SET statement_timeout = '300ms'");
      await expect(reader.query("FETCH 1 FROM r WITH (timeout = '10s')")).rejects.toMatchObject({ code: '57014' });
      await reader.query('SET statement_timeout = 0');
      await writer.query('INSERT INTO short_t VALUES (3)');
      expect((await reader.query({ text: "FETCH 10 FROM r WITH (timeout = '5s')", rowMode: 'array' })).rows.map((row: unknown[]) => row.slice(0, 2))).toEqual([[3, 'Insert']]);
      // The extended protocol (a prepared FETCH with its Describe) reads the same cursor.
      await writer.query('INSERT INTO short_t VALUES (4)');
      const prepared = await reader.query({ name: 'fetch_r', text: "FETCH 10 FROM r WITH (timeout = '5s')", rowMode: 'array' });
      expect(prepared.fields.map((field) => field.name)).toEqual(['k', 'op', 'rw_timestamp']);
      expect(prepared.rows.map((row: unknown[]) => row.slice(0, 2))).toEqual([[4, 'Insert']]);
      expect((await reader.query('SELECT 3 AS three')).rows).toEqual([{ three: 3 }]);
    } finally {
      await Promise.all([writer.end(), reader.end()]);
    }
  }, 60_000);
});

describe('psql', () => {
  it('runs a script of FETCHes over both cursor forms', async () => {
    const writes = STEPS.map((step) => `${sqlOf('q_t', step)};\nFETCH ALL c;`).join('\n');
    const script = [
      'CREATE TABLE q_t (k int PRIMARY KEY, v text);',
      `INSERT INTO q_t VALUES ${[...INITIAL].map(([k, v]) => `(${k}, '${v}')`).join(', ')};`,
      'CREATE SUBSCRIPTION q_s FROM q_t;',
      'DECLARE r SUBSCRIPTION CURSOR FOR q_s;',
      'BEGIN;',
      'DECLARE c CURSOR FOR SUBSCRIBE q_t;',
      'FETCH ALL c;',
      writes,
      'COMMIT;',
      "FETCH ALL FROM r WITH (timeout = '5s');",
      'CLOSE r;',
      '',
    ].join('\n');
    const psql = spawn('psql', ['-X', '-q', '-A', '-t', '-F', ' ', '-v', 'ON_ERROR_STOP=1', '-h', server.host, '-p', String(server.port), '-U', 'oxbow', '-d', 'oxbow'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    psql.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    psql.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => psql.on('exit', (code) => resolve(code)));
    psql.stdin.end(script);
    expect(await exited, stderr).toBe(0);
    const lines = stdout.trim().split('\n');
    const changes = changesOf(INITIAL, STEPS);
    // Each FETCH ALL c returned one statement's changes (it waits for a row, then takes what is ready).
    const cursorLines = lines.slice(0, SNAPSHOT.length + changes.flat().length);
    const groups = groupByEpoch(
      cursorLines.map((line) => line.split(' ')),
      false,
    );
    expect(groups).toEqual(diffGroups([SNAPSHOT, ...changes]));
    // The subscription cursor, declared before the block, saw the same statements as RisingWave's rows.
    const subscriptionLines = lines.slice(cursorLines.length).map((line) => line.split(' ').slice(0, 3).join(' '));
    expect(subscriptionLines).toEqual(changes.flat().map((change) => `${change.k} ${change.v} ${change.op}`));
  }, 60_000);
});

describe('psycopg 3', () => {
  it('reads COPY (SUBSCRIBE ...) with cursor.copy() and both cursor forms with FETCH', async () => {
    const writer = await connect();
    try {
      for (const table of ['py_copy', 'py_cursor', 'py_rw']) await setUp(writer, table);
      await writer.query('CREATE SUBSCRIPTION py_rw_s FROM py_rw');
    } finally {
      await writer.end();
    }
    const statements = (table: string): string[] => STEPS.map((step) => sqlOf(table, step));
    // Each read stops at the last statement's row: an insert of a key no other statement uses.
    const last = STEPS[STEPS.length - 1]!;
    expect(last.op === 'insert' && STEPS.filter((step) => step.k === last.k).length === 1).toBe(true);
    const plan = { copy: statements('py_copy'), cursor: statements('py_cursor'), rw: statements('py_rw'), until: String(last.k) };
    const result = await runPython('psycopg_subscribe.py', [server.url, JSON.stringify(plan)]);
    const changes = changesOf(INITIAL, STEPS);
    const expected = diffGroups([SNAPSHOT, ...changes]);
    expect(groupByEpoch(result.copy as string[][], true)).toEqual(expected);
    expect(groupByEpoch(result.cursor as unknown[][], true)).toEqual(expected);
    expect((result.rw as unknown[][]).map((row) => row.slice(0, 3))).toEqual(changes.flat().map((change) => [change.k, change.v, change.op]));
    expect(result.copy_cancel_code).toBe('57014');
    expect(result.after_cancel).toBe(1);
  }, 120_000);
});
