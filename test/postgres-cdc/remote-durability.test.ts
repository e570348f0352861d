// postgres-cdc with `--durability remote`: the replication slot is confirmed only up to offsets a
// complete checkpoint in the object store holds. With checkpoints taken only on demand, a change
// read and committed locally leaves confirmed_flush_lsn where it was; a statement that waits for a
// checkpoint (remote durability) lets it move past the change.

import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { startOxbow, type OxbowServer } from '../support/server.js';
import type { PostgresServer } from '../support/postgres.js';
import { shopClient, startUpstream, textRows, withOptions } from './harness.js';
import { waitFor } from '../support/wait-for.js';

let upstream: PostgresServer;
let oxbow: OxbowServer;

beforeAll(async () => {
  upstream = await startUpstream();
  oxbow = await startOxbow({ args: ['--barrier-interval-ms', '50', '--durability', 'remote', '--checkpoint-interval-ms', '600000'] });
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  await upstream?.stop();
});

async function slotFlush(): Promise<bigint> {
  const result = await upstream.query("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'oxbow_public_kv'");
  return BigInt(result.rows[0]?.[0] ?? '0');
}

it('confirms the slot only once a remote checkpoint holds the change', async () => {
  const shop = await shopClient(upstream);
  const client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
  await shop.query('CREATE TABLE kv (k int PRIMARY KEY, v text)');
  await client.query(`CREATE TABLE kv (k int PRIMARY KEY, v text) ${withOptions(upstream, 'kv')}`);
  await client.query('CREATE TABLE marker (x int)');
  await shop.query("INSERT INTO kv VALUES (1, 'one')");
  const commitLsn = BigInt((await upstream.query("SELECT pg_current_wal_insert_lsn() - '0/0'")).rows[0]![0]!);
  await waitFor('the row committed in oxbow', async () => {
    const offset = (await client.query("SELECT committed_offset FROM oxbow_catalog.source_partitions WHERE source_name = 'kv'")).rows[0]?.committed_offset;
    return offset !== undefined && BigInt(offset) >= commitLsn ? true : undefined;
  });
  expect(await textRows(client, 'SELECT k, v FROM kv')).toEqual(['1 | one']);
  // Committed locally, not in a checkpoint: the slot stays below the change.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  expect(await slotFlush()).toBeLessThan(commitLsn);
  // A statement under remote durability waits for a checkpoint holding every epoch so far.
  await client.query('INSERT INTO marker VALUES (1)');
  await waitFor('the slot to move past the change', async () => ((await slotFlush()) >= commitLsn ? true : undefined), 30_000);
  await shop.end();
  await client.end();
}, 120_000);
