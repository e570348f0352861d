// Exactly once into a PostgreSQL that runs with synchronous_commit = off (the test server's
// setting, common where throughput matters) and crashes: an asynchronous commit is acknowledged
// before its WAL is written, so an immediate shutdown can lose the last deliveries the target
// acknowledged. oxbow records a floor of the target's progress (the epoch from which a restart
// resumes, and from which the sink holds its relation's history) right after a delivery: were that
// delivery lost, the target would come back below the floor and the sink would start over from
// the relation's contents (current rows twice, intermediate versions never). The server's WAL
// writer is slowed (wal_writer_delay 10 s) so the last partial WAL page, where the newest commits
// are, is not written before the crash.
//
// Each statement writes a value never written before: the append-only targets must end with
// every committed version exactly once, for a sink FROM the table and a sink AS a query over it.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let postgres: PostgresServer;
let server: OxbowServer;
let client: pg.Client;

beforeAll(async () => {
  postgres = await startPostgres({ settings: { wal_writer_delay: '10000ms' } });
  server = await startOxbow({ args: ['--barrier-interval-ms', '50', '--time-travel-retention', '2s'] });
  client = await connectToKillable(server);
}, 120_000);

afterAll(async () => {
  await client?.end().catch(() => undefined);
  await server?.stop();
  await postgres?.stop();
});

describe('postgres sink, a target that loses acknowledged commits', () => {
  it('delivers every version once after PostgreSQL with synchronous_commit off crashes', { timeout: 180_000 }, async () => {
    const target = await postgres.connect();
    // The test's own setup is durable: only what comes after it can be lost.
    await target.query('SET synchronous_commit = on');
    await target.query('CREATE TABLE control (n int)');
    await target.query('CREATE TABLE items_log (id int, v int)');
    await target.query('CREATE TABLE items_log_as (id int, v int)');
    const options = `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', database = 'postgres'`;
    await client.query('CREATE TABLE items (id int PRIMARY KEY, v int)');
    await client.query(`CREATE SINK items_log FROM items WITH (${options}, table = 'items_log', type = 'append-only')`);
    await client.query(`CREATE SINK items_log_as AS SELECT id, v FROM items WITH (${options}, table = 'items_log_as', type = 'append-only')`);
    const versions: string[] = [];
    let next = 0;
    const write = async () => {
      const id = next % 7;
      const v = next++;
      await client.query('INSERT INTO items VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v', [id, v]);
      versions.push(`${id}|${v}`);
    };
    await write();
    const count = async (client: pg.Client, table: string) => Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
    const delivered = async (client: pg.Client) => {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && ((await count(client, 'items_log')) < versions.length || (await count(client, 'items_log_as')) < versions.length)) await sleep(20);
    };
    await delivered(target);
    await target.end();

    // Each round: idle for longer than the floor interval (10 s), then a few statements whose
    // delivery moves the floor up to it, then PostgreSQL crashes at once: that delivery is in the
    // last WAL page, not written yet (unless the page filled), and without a synchronous commit is
    // lost with the crash.
    const progress: unknown[] = [];
    let reader = await postgres.connect();
    try {
      for (let round = 0; round < 3; round++) {
        await sleep(10_500);
        for (let statement = 0; statement < 3; statement++) await write();
        await delivered(reader);
        await sleep(200);
        const before = (await reader.query('SELECT sink_name, epoch::text AS epoch FROM oxbow_sink_progress ORDER BY sink_name')).rows;
        // The control: a commit of the server's default kind just before the crash is lost with
        // it (else the crash shows nothing about acknowledged commits).
        await reader.query('INSERT INTO control VALUES ($1)', [round]);
        await reader.end();
        await postgres.halt('immediate');
        await postgres.resume();
        reader = await postgres.connect();
        expect(Number((await reader.query('SELECT count(*) AS n FROM control WHERE n = $1', [round])).rows[0].n)).toBe(0);
        const after = (await reader.query('SELECT sink_name, epoch::text AS epoch FROM oxbow_sink_progress ORDER BY sink_name')).rows;
        progress.push({ round, before, after });
        await write();
      }
      const expected = [...versions].sort();
      const read = async (table: string) => (await reader.query(`SELECT id, v FROM ${table}`)).rows.map((row: { id: number; v: number }) => `${row.id}|${row.v}`).sort();
      let logs: string[][] = [];
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        logs = [await read('items_log'), await read('items_log_as')];
        if (logs.every((log) => log.length >= expected.length)) break;
        await sleep(100);
      }
      // What PostgreSQL held before and after the crash: a lower epoch after it is a lost commit.
      const sinkErrors = (await client.query('SELECT sink_name, error FROM oxbow_catalog.sink_errors ORDER BY error_at')).rows;
      const crash = { progress, sinkErrors };
      if (logs.some((log) => JSON.stringify(log) !== JSON.stringify(expected))) console.log(JSON.stringify(crash, null, 1));
      expect({ crash, table: 'items_log', log: logs[0] }).toEqual({ crash, table: 'items_log', log: expected });
      expect({ crash, table: 'items_log_as', log: logs[1] }).toEqual({ crash, table: 'items_log_as', log: expected });
      const errors = await client.query("SELECT sink_name, error FROM oxbow_catalog.sink_errors WHERE error LIKE '%no longer kept%' OR error LIKE '%recorded as delivered%'");
      expect(errors.rows).toEqual([]);
    } finally {
      await reader.end();
    }
  });
});
