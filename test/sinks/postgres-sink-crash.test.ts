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
import { CrashLoad } from '../support/crash-load.js';
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
    await target.end();
    const options = `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres'`;

    const load = await CrashLoad.start({ oxbow: { dataDir, args: ARGS }, random, key: (id, v) => `${id}|${v}` });
    await load.client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await load.client.query(`CREATE SINK items_log FROM items WITH (${options}, table = 'items_log', type = 'append-only')`);
    await load.client.query(`CREATE SINK items_copy FROM items WITH (${options}, table = 'items_copy')`);
    // The first delivery sends the contents as they are then: the changes start after it.
    await load.client.query('INSERT INTO items VALUES (0, 0)');
    load.committed(0, 0);
    {
      const reader = await postgres.connect();
      while (Number((await reader.query('SELECT count(*) AS n FROM items_log')).rows[0].n) < 1) await sleep(20);
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
      let log: string[] = [];
      let copy: string[] = [];
      while (Date.now() < deadline) {
        log = (await reader.query('SELECT id, v FROM items_log')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
        copy = (await reader.query('SELECT id, v FROM items_copy')).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
        if (log.length >= load.versions.size && JSON.stringify(copy) === JSON.stringify(expectedCopy)) break;
        await sleep(100);
      }
      expect(load.versions.size).toBeGreaterThan(100);
      expect(log).toEqual([...load.versions].sort());
      expect(copy).toEqual(expectedCopy);
      const duplicates = await reader.query('SELECT id, v, count(*)::int AS n FROM items_log GROUP BY id, v HAVING count(*) > 1');
      expect(duplicates.rows).toEqual([]);
      const status = await load.client.query("SELECT sink_name, trouble FROM oxbow_catalog.sink_status WHERE sink_name LIKE 'items_%' ORDER BY sink_name");
      expect(status.rows).toEqual([
        { sink_name: 'items_copy', trouble: null },
        { sink_name: 'items_log', trouble: null },
      ]);
    } finally {
      await reader.end();
      await load.stop();
    }
  });
});
