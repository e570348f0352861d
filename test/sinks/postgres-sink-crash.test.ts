// Exactly once into PostgreSQL across SIGKILL of oxbow at random moments (deliveries run every
// 50 ms, so kills land before, during and after them), across PostgreSQL going away (a crash and
// a fast shutdown), and across a target that stays away for longer than the time-travel
// retention (2 s) while rows change and oxbow itself is killed and restarted: the sink holds the
// history it has yet to deliver.
//
// Every statement writes a value never written before, so each row version is unique: the
// append-only sink's table must hold every committed version exactly once (a lost or doubled
// delivery shows as a missing or repeated line), and the upsert sink's table must equal the
// table read through oxbow and the test's own model of it. The versions that committed are
// known to the test (a statement cut off by a kill is looked up after the restart).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startRestartablePostgres, type RestartablePostgres } from '../support/postgres-restartable.js';
import { seededRandom } from '../support/seeded-random.js';

const seed = Number(process.env['OXBOW_SINK_CRASH_SEED'] ?? Date.now() % 100_000);
const random = seededRandom(seed);
const ARGS = ['--barrier-interval-ms', '50', '--time-travel-retention', '2s'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let postgres: RestartablePostgres;
let dataDir: string;

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sink-crash-'));
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

/** The test's model: every committed version, and each id's current value. */
const versions = new Set<string>();
const model = new Map<number, number>();
let nextId = 1;
let nextValue = 1;
let uncertain: { id: number; v: number } | undefined;

async function connect(server: OxbowServer): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: server.url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** One statement after another until `stop` says so or the server dies. */
async function load(client: pg.Client, stop: { done: boolean }): Promise<void> {
  while (!stop.done) {
    const ids = [...model.keys()];
    const update = ids.length > 0 && random() < 0.5;
    const id = update ? ids[Math.floor(random() * ids.length)]! : nextId++;
    const v = nextValue++;
    uncertain = { id, v };
    try {
      await client.query(update ? `UPDATE items SET v = ${v} WHERE id = ${id}` : `INSERT INTO items VALUES (${id}, ${v})`);
    } catch {
      return; // killed mid-statement: looked up after the restart
    }
    uncertain = undefined;
    versions.add(`${id}|${v}`);
    model.set(id, v);
    if (random() < 0.3) await sleep(Math.floor(random() * 20));
  }
}

/** After a restart: did the statement cut off by the kill commit? */
async function settleUncertain(client: pg.Client): Promise<void> {
  if (uncertain === undefined) return;
  const found = await client.query('SELECT v FROM items WHERE id = $1', [uncertain.id]);
  if (found.rows[0]?.v === uncertain.v) {
    versions.add(`${uncertain.id}|${uncertain.v}`);
    model.set(uncertain.id, uncertain.v);
  }
  uncertain = undefined;
}

async function loadThenKill(server: OxbowServer, client: pg.Client, ms: number): Promise<void> {
  const stop = { done: false };
  const loading = load(client, stop);
  await sleep(ms);
  await server.kill('SIGKILL');
  stop.done = true;
  await loading;
  await client.end().catch(() => undefined);
}

describe('postgres sink, exactly once', () => {
  it(`loses and repeats nothing across SIGKILLs, PostgreSQL restarts and an outage longer than the retention (seed ${seed})`, { timeout: 240_000 }, async () => {
    const target = await postgres.connect();
    await target.query('CREATE TABLE items_log (id int, v int)');
    await target.query('CREATE TABLE items_copy (id int PRIMARY KEY, v int)');
    await target.end();
    const options = `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres'`;

    let server = await startOxbow({ dataDir, args: ARGS });
    let client = await connect(server);
    await client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await client.query(`CREATE SINK items_log FROM items WITH (${options}, table = 'items_log', type = 'append-only')`);
    await client.query(`CREATE SINK items_copy FROM items WITH (${options}, table = 'items_copy')`);
    // The first delivery sends the contents as they are then: the changes start after it.
    await client.query('INSERT INTO items VALUES (0, 0)');
    versions.add('0|0');
    model.set(0, 0);
    {
      const reader = await postgres.connect();
      while (Number((await reader.query('SELECT count(*) AS n FROM items_log')).rows[0].n) < 1) await sleep(20);
      await reader.end();
    }

    // SIGKILL at random moments while statements run and deliveries go out.
    for (let round = 0; round < 4; round++) {
      await loadThenKill(server, client, 150 + Math.floor(random() * 700));
      server = await startOxbow({ dataDir, args: ARGS });
      client = await connect(server);
      await settleUncertain(client);
    }

    // PostgreSQL crashes (immediate shutdown) mid-load and comes back; then a fast shutdown.
    for (const mode of ['immediate', 'fast'] as const) {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(200 + Math.floor(random() * 300));
      await postgres.halt(mode);
      await sleep(500);
      await postgres.resume();
      await sleep(300);
      stop.done = true;
      await loading;
    }

    // Away for longer than the retention while rows change, with oxbow killed and restarted in
    // the middle: the history since the last delivery must still be there when it comes back.
    await postgres.halt('immediate');
    {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(2500);
      stop.done = true;
      await loading;
    }
    const errors = await client.query("SELECT count(*)::int AS n FROM oxbow_catalog.sink_errors WHERE sink_name = 'items_copy'");
    expect(errors.rows[0].n).toBeGreaterThan(0);
    await loadThenKill(server, client, 300);
    server = await startOxbow({ dataDir, args: ARGS });
    client = await connect(server);
    await settleUncertain(client);
    {
      const stop = { done: false };
      const loading = load(client, stop);
      await sleep(2500);
      stop.done = true;
      await loading;
    }
    await postgres.resume();

    // The target catches up: every version once, the copy equal to the table.
    const reader = await postgres.connect();
    try {
      const expectedCopy = [...model].map(([id, v]) => `${id}|${v}`).sort();
      const oxbowRows = (await client.query('SELECT id, v FROM items')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
      expect(oxbowRows).toEqual(expectedCopy);
      const deadline = Date.now() + 60_000;
      let log: string[] = [];
      let copy: string[] = [];
      while (Date.now() < deadline) {
        log = (await reader.query('SELECT id, v FROM items_log')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
        copy = (await reader.query('SELECT id, v FROM items_copy')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
        if (log.length >= versions.size && JSON.stringify(copy) === JSON.stringify(expectedCopy)) break;
        await sleep(100);
      }
      expect(versions.size).toBeGreaterThan(100);
      expect(log).toEqual([...versions].sort());
      expect(copy).toEqual(expectedCopy);
      const duplicates = await reader.query('SELECT id, v, count(*)::int AS n FROM items_log GROUP BY id, v HAVING count(*) > 1');
      expect(duplicates.rows).toEqual([]);
      const status = await client.query("SELECT sink_name, trouble FROM oxbow_catalog.sink_status WHERE sink_name LIKE 'items_%' ORDER BY sink_name");
      expect(status.rows).toEqual([
        { sink_name: 'items_copy', trouble: null },
        { sink_name: 'items_log', trouble: null },
      ]);
    } finally {
      await reader.end();
      await client.end();
      await server.stop();
    }
  });
});
