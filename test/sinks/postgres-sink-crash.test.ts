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
// known to the test (a statement cut off by a kill is looked up after the restart). Each kind of
// sink runs twice: FROM the table (its versions read) and AS a query over it (its change log read).
//
// A sink AS a query over an append-only source (a generator) keeps no rows, only its log: killed
// while events stream in, its append-only target must end with exactly the query's rows.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrashLoad } from '../support/crash-load.js';
import { connectToKillable, startOxbow } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { seededRandom } from '../support/seeded-random.js';

const seed = Number(process.env['OXBOW_SINK_CRASH_SEED'] ?? Date.now() % 100_000);
const random = seededRandom(seed);
const ARGS = ['--barrier-interval-ms', '50', '--time-travel-retention', '2s'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let postgres: PostgresServer;
let dataDir: string;

beforeAll(async () => {
  postgres = await startPostgres({ settings: { max_connections: '30' } });
  dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sink-crash-'));
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('postgres sink, exactly once', () => {
  it(`loses and repeats nothing across SIGKILLs, PostgreSQL restarts and an outage longer than the retention (seed ${seed})`, { timeout: 240_000 }, async () => {
    const target = await postgres.connect();
    await target.query('CREATE TABLE items_log (id int, v int)');
    await target.query('CREATE TABLE items_copy (id int PRIMARY KEY, v int)');
    await target.query('CREATE TABLE items_log_as (id int, v int)');
    await target.query('CREATE TABLE items_copy_as (id int PRIMARY KEY, v int)');
    await target.end();
    const options = `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres'`;

    const load = await CrashLoad.start({ oxbow: { dataDir, args: ARGS }, random, key: (id, v) => `${id}|${v}` });
    await load.client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await load.client.query(`CREATE SINK items_log FROM items WITH (${options}, table = 'items_log', type = 'append-only')`);
    await load.client.query(`CREATE SINK items_copy FROM items WITH (${options}, table = 'items_copy')`);
    await load.client.query(`CREATE SINK items_log_as AS SELECT id, v FROM items WITH (${options}, table = 'items_log_as', type = 'append-only')`);
    await load.client.query(`CREATE SINK items_copy_as AS SELECT id, v FROM items WITH (${options}, table = 'items_copy_as', primary_key = 'id')`);
    // The first delivery sends the contents as they are then: the changes start after it.
    await load.client.query('INSERT INTO items VALUES (0, 0)');
    load.committed(0, 0);
    {
      const reader = await postgres.connect();
      while (Number((await reader.query('SELECT (SELECT count(*) FROM items_log) + (SELECT count(*) FROM items_log_as) AS n')).rows[0].n) < 2) await sleep(20);
      await reader.end();
    }

    // SIGKILL at random moments while statements run and deliveries go out.
    for (let round = 0; round < 4; round++) await load.killAndRestart(150 + Math.floor(random() * 700));

    // PostgreSQL crashes (immediate shutdown) mid-load and comes back; then a fast shutdown.
    for (const mode of ['immediate', 'fast'] as const) {
      await load.loadWhile(async () => {
        await sleep(200 + Math.floor(random() * 300));
        await postgres.halt(mode);
        await sleep(500);
        await postgres.resume();
        await sleep(300);
      });
    }

    // Away for longer than the retention while rows change, with oxbow killed and restarted in
    // the middle: the history since the last delivery must still be there when it comes back.
    await postgres.halt('immediate');
    await load.loadWhile(2500);
    const errors = await load.client.query("SELECT count(*)::int AS n FROM oxbow_catalog.sink_errors WHERE sink_name = 'items_copy'");
    expect(errors.rows[0].n).toBeGreaterThan(0);
    await load.killAndRestart(300);
    await load.loadWhile(2500);
    await postgres.resume();

    // The target catches up: every version once, the copy equal to the table.
    const reader = await postgres.connect();
    try {
      const expectedCopy = [...load.model].map(([id, v]) => `${id}|${v}`).sort();
      const oxbowRows = (await load.client.query('SELECT id, v FROM items')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
      expect(oxbowRows).toEqual(expectedCopy);
      const deadline = Date.now() + 60_000;
      const read = async (table: string) => (await reader.query(`SELECT id, v FROM ${table}`)).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
      let logs: string[][] = [];
      let copies: string[][] = [];
      while (Date.now() < deadline) {
        logs = [await read('items_log'), await read('items_log_as')];
        copies = [await read('items_copy'), await read('items_copy_as')];
        if (logs.every((log) => log.length >= load.versions.size) && copies.every((copy) => JSON.stringify(copy) === JSON.stringify(expectedCopy))) break;
        await sleep(100);
      }
      expect(load.versions.size).toBeGreaterThan(100);
      for (const [index, log] of logs.entries()) expect({ table: index === 0 ? "items_log" : "items_log_as", log }).toEqual({ table: index === 0 ? "items_log" : "items_log_as", log: [...load.versions].sort() });
      for (const copy of copies) expect(copy).toEqual(expectedCopy);
      for (const table of ['items_log', 'items_log_as']) {
        const duplicates = await reader.query(`SELECT id, v, count(*)::int AS n FROM ${table} GROUP BY id, v HAVING count(*) > 1`);
        expect(duplicates.rows).toEqual([]);
      }
      // No sink started over from its relation's contents (its history gone, or the target below
      // its floor) since the last restart (sink_errors is kept in memory).
      const restarts = await load.client.query("SELECT sink_name, error FROM oxbow_catalog.sink_errors WHERE error LIKE '%no longer kept%' OR error LIKE '%recorded as delivered%'");
      expect(restarts.rows).toEqual([]);
      const status = await load.client.query("SELECT sink_name, trouble FROM oxbow_catalog.sink_status WHERE sink_name LIKE 'items_%' ORDER BY sink_name");
      expect(status.rows).toEqual([
        { sink_name: 'items_copy', trouble: null },
        { sink_name: 'items_copy_as', trouble: null },
        { sink_name: 'items_log', trouble: null },
        { sink_name: 'items_log_as', trouble: null },
      ]);
    } finally {
      await reader.end();
      await load.stop();
    }
  });
  it(`a sink AS a query over an append-only source keeps only its log and delivers every row once across SIGKILLs (seed ${seed})`, { timeout: 240_000 }, async () => {
    const target = await postgres.connect();
    await target.query('CREATE TABLE bids_out (auction bigint, bidder bigint, price bigint, date_time timestamp)');
    const options = `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres'`;
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-sink-log-crash-'));
    let server = await startOxbow({ dataDir: dir, args: ARGS });
    try {
      let client = await connectToKillable(server);
      // 20,000 events at one per 100 us: about 2 s of arrivals, 18,400 of them bids.
      await client.query(`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR)
        WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '20000', nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '100000')`);
      await client.query(`CREATE SINK bids_out AS SELECT auction, bidder, price, date_time FROM bid WHERE price % 3 <> 0 WITH (${options}, table = 'bids_out', type = 'append-only')`);
      for (let round = 0; round < 3; round++) {
        await sleep(200 + Math.floor(random() * 500));
        await server.kill('SIGKILL');
        await client.end().catch(() => undefined);
        server = await startOxbow({ dataDir: dir, args: ARGS });
        client = await connectToKillable(server);
      }
      const rows = async (): Promise<number> => Number((await client.query('SELECT count(*) AS n FROM bid')).rows[0].n);
      const deadline = Date.now() + 60_000;
      while ((await rows()) < 18_400 && Date.now() < deadline) await sleep(100);
      const key = (row: Record<string, unknown>) => `${String(row['auction'])}|${String(row['bidder'])}|${String(row['price'])}|${String(row['date_time'])}`;
      const expected = (await client.query("SELECT auction::text, bidder::text, price::text, to_char(date_time, 'YYYY-MM-DD HH24:MI:SS.US') AS date_time FROM bid WHERE price % 3 <> 0")).rows.map(key).sort();
      expect(expected.length).toBeGreaterThan(10_000);
      let found: string[] = [];
      while (Date.now() < deadline) {
        found = (await target.query("SELECT auction::text, bidder::text, price::text, to_char(date_time, 'YYYY-MM-DD HH24:MI:SS.US') AS date_time FROM bids_out")).rows.map(key).sort();
        if (found.length >= expected.length) break;
        await sleep(100);
      }
      expect(found).toEqual(expected);
      await client.end();
    } finally {
      await target.end();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
