// postgres-cdc exactly once: upstream transactions (inserts, updates, deletes, key changes, and one
// of 40,000 changes per phase, handed over in parts) run
// while the oxbow server reading them is SIGKILLed several times and restarted on the same data
// directory, and PostgreSQL itself restarts mid-stream. At the end the oxbow table equals the
// upstream table, and a view of counts and sums per group equals the same query run upstream (a
// lost transaction leaves a difference: an insert, a `v + 1000`, a delete or a key change missing).
// Changes arrive as whole row images applied by key, so a repeated transaction could not add rows;
// the view counting rows per key shows none twice, and the slot confirmation test
// (cdc.test.ts) shows that the offset committed is where the stream resumes.

import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import type { PostgresServer } from '../support/postgres.js';
import { shopClient, startUpstream, textRows, withOptions } from './harness.js';
import { waitFor } from '../support/wait-for.js';

const KILLS = 4;
const TRANSACTIONS_PER_PHASE = 150;

let upstream: PostgresServer;
let oxbow: OxbowServer | undefined;
let dataDir: string | undefined;

beforeAll(async () => {
  upstream = await startUpstream();
}, 60_000);

afterAll(async () => {
  await oxbow?.stop();
  await upstream?.stop();
});

async function start(): Promise<{ server: OxbowServer; client: pg.Client }> {
  const server = await startOxbow({ ...(dataDir === undefined ? {} : { dataDir }), args: ['--barrier-interval-ms', '50'] });
  dataDir = server.dataDir;
  return { server, client: await connectToKillable(server) };
}

let nextId = 1;
/** One phase of upstream transactions: inserts, += updates, deletes and key changes. */
let bulk = 10_000_000;
async function write(shop: pg.Client, transactions: number): Promise<void> {
  // One transaction larger than a part (16,384 changes): 20,000 inserts and their updates.
  await shop.query(`BEGIN;
    INSERT INTO events SELECT g, g % 13, 1 FROM generate_series(${bulk}, ${bulk + 19_999}) g;
    UPDATE events SET v = v + 1 WHERE id >= ${bulk};
    COMMIT`);
  bulk += 20_000;
  for (let t = 0; t < transactions; t++) {
    const first = nextId;
    nextId += 10;
    await shop.query(`BEGIN;
      INSERT INTO events SELECT g, g % 13, g FROM generate_series(${first}, ${first + 9}) g;
      UPDATE events SET v = v + 1000 WHERE id % 17 = ${t % 17} AND id < ${first};
      DELETE FROM events WHERE id = ${first - 5};
      UPDATE events SET id = -id WHERE id = ${first - 3};
      COMMIT`);
  }
}

async function committedLsn(client: pg.Client): Promise<bigint> {
  const result = await client.query("SELECT committed_offset FROM oxbow_catalog.source_partitions WHERE source_name = 'events'");
  return BigInt(result.rows[0]?.committed_offset ?? -1);
}

const GROUPS = 'SELECT k, count(*) AS n, sum(v) AS total FROM events GROUP BY k';

it(`applies upstream transactions exactly once across ${KILLS} SIGKILLs and a PostgreSQL restart`, async () => {
  let shop = await shopClient(upstream);
  await shop.query('CREATE TABLE events (id int PRIMARY KEY, k int NOT NULL, v bigint NOT NULL)');
  await write(shop, 20);
  let { server, client } = await start();
  oxbow = server;
  await client.query(`CREATE TABLE events (id int PRIMARY KEY, k int, v bigint) ${withOptions(upstream, 'events')}`);
  await client.query(`CREATE MATERIALIZED VIEW groups AS ${GROUPS}`);
  await client.query('CREATE MATERIALIZED VIEW per_key AS SELECT id, count(*) AS n FROM events GROUP BY id');

  for (let kill = 0; kill < KILLS; kill++) {
    const writing = write(shop, TRANSACTIONS_PER_PHASE);
    // Kill while the source is busy: after it committed something new since the (re)start.
    const before = await committedLsn(client).catch(() => -1n);
    await waitFor('progress before the kill', async () => ((await committedLsn(client)) > before ? true : undefined), 120_000);
    await server.kill('SIGKILL');
    await client.end().catch(() => undefined);
    await writing;
    ({ server, client } = await start());
    oxbow = server;
  }

  // PostgreSQL restarts mid-stream: oxbow reconnects (with back-off) and resumes at its offset.
  const writing = write(shop, TRANSACTIONS_PER_PHASE);
  const before = await committedLsn(client);
  await waitFor('progress before the restart', async () => ((await committedLsn(client)) > before ? true : undefined), 120_000);
  await writing;
  await shop.end();
  await upstream.restart();
  shop = await shopClient(upstream);
  await write(shop, 50);

  const want = await textRows(shop, 'SELECT id, k, v FROM events');
  await waitFor('the oxbow table to equal upstream', async () => ((await textRows(client, 'SELECT id, k, v FROM events')).join('\n') === want.join('\n') ? true : undefined), 120_000).catch(
    async (error: unknown) => {
      expect((await textRows(client, 'SELECT id, k, v FROM events')).length).toBe(want.length);
      throw error;
    },
  );
  expect(await textRows(client, 'SELECT * FROM groups')).toEqual(await textRows(shop, GROUPS));
  expect(await textRows(client, 'SELECT * FROM groups')).toEqual(await textRows(client, GROUPS));
  expect((await client.query('SELECT count(*)::int AS n FROM per_key WHERE n <> 1')).rows[0].n).toBe(0);
  expect((await client.query('SELECT count(*)::int AS n FROM per_key')).rows[0].n).toBe(want.length);
  // The trouble of the restart was reported, and is over.
  const trouble = await client.query("SELECT count(*)::int AS n FROM oxbow_catalog.source_errors WHERE source_name = 'events' AND partition_id IS NULL");
  expect(trouble.rows[0].n).toBeGreaterThan(0);
  await shop.end();
  await client.end();
}, 300_000);
