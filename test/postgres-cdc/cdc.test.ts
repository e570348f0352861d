// postgres-cdc end to end: a real PostgreSQL 15 (wal_level = logical) and an oxbow server process.
// The upstream table is the oracle: after every burst of upstream changes the oxbow table equals
// it row for row (both read as PostgreSQL text), and a materialized view over it equals its query
// recomputed. Also: the slot's confirmed_flush_lsn moves only to LSNs oxbow committed, the lag in
// source_partitions, and bad input answered at CREATE with a clear error within a deadline.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { startOxbow, type OxbowServer } from '../support/server.js';
import type { PostgresServer } from '../support/postgres.js';
import { CDC_PASSWORD, shopClient, startUpstream, textRows, withOptions } from './harness.js';
import { waitFor } from '../support/wait-for.js';

let upstream: PostgresServer;
let shop: pg.Client;
let oxbow: OxbowServer;
let client: pg.Client;

const COLUMNS = 'id, qty, price, at, doc, tags, ref, raw, note';
const DECLARED = `id int PRIMARY KEY, qty bigint, price numeric, at timestamptz, doc jsonb, tags text[], ref uuid, raw bytea, note text`;

beforeAll(async () => {
  upstream = await startUpstream();
  shop = await shopClient(upstream);
  await shop.query(`CREATE TABLE orders (${DECLARED.replace('id int PRIMARY KEY', 'id int PRIMARY KEY')})`);
  await shop.query(`INSERT INTO orders SELECT g, g * 10, g / 7.0, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 minute',
    jsonb_build_object('g', g, 'even', g % 2 = 0), ARRAY['a' || g, 'b,"' || g], md5(g::text)::uuid, decode(md5(g::text), 'hex'), 'note ' || g
    FROM generate_series(1, 500) g`);
  oxbow = await startOxbow({ args: ['--barrier-interval-ms', '50'] });
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
}, 120_000);

afterAll(async () => {
  await client?.end().catch(() => undefined);
  await oxbow?.stop();
  await shop?.end().catch(() => undefined);
  await upstream?.stop();
});

const VIEW_QUERY = 'SELECT qty % 5 AS bucket, count(*) AS n, sum(price) AS total, max(note) AS last FROM orders GROUP BY qty % 5';

async function expectEqual(): Promise<void> {
  const want = await textRows(shop, `SELECT ${COLUMNS} FROM orders`);
  await waitFor('the oxbow table to equal upstream', async () => ((await textRows(client, `SELECT ${COLUMNS} FROM orders`)).join('\n') === want.join('\n') ? true : undefined), 30_000).catch(
    async (error: unknown) => {
      const got = await textRows(client, `SELECT ${COLUMNS} FROM orders`);
      const at = got.findIndex((line, index) => line !== want[index]);
      process.stderr.write(`oxbow stderr:\n${oxbow.stderr()}\nfirst difference: ${JSON.stringify(got[at])}\n              vs: ${JSON.stringify(want[at])}\n`);
      expect(await textRows(client, `SELECT ${COLUMNS} FROM orders`)).toEqual(want);
      throw error;
    },
  );
  expect(await textRows(client, 'SELECT * FROM order_buckets')).toEqual(await textRows(client, VIEW_QUERY));
}

async function slotFlush(): Promise<bigint> {
  const result = await upstream.query("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'oxbow_public_orders'");
  return BigInt(result.rows[0]?.[0] ?? '0');
}

describe('postgres-cdc', () => {
  it('reads the snapshot, then inserts, updates, deletes and truncates', async () => {
    await client.query(`CREATE TABLE orders (${DECLARED}) ${withOptions(upstream, 'orders')}`);
    await client.query(`CREATE MATERIALIZED VIEW order_buckets AS ${VIEW_QUERY}`);
    await expectEqual();

    await shop.query(`INSERT INTO orders SELECT g, g, g * 1.5, now(), '{"nested": {"x": [1, 2, null]}}', '{}', gen_random_uuid(), '\\x00ff', E'tab\\there ''quoted'' \\\\ back'
      FROM generate_series(501, 800) g`);
    await expectEqual();
    await shop.query("UPDATE orders SET price = price * 2, note = NULL WHERE id % 3 = 0");
    await shop.query('UPDATE orders SET id = id + 10000 WHERE id BETWEEN 10 AND 20'); // key changes
    await shop.query('DELETE FROM orders WHERE id % 7 = 0');
    await expectEqual();
    // One transaction with several changes of the same key.
    await shop.query("BEGIN; INSERT INTO orders (id, qty) VALUES (-1, 1); UPDATE orders SET qty = 2 WHERE id = -1; DELETE FROM orders WHERE id = -1; INSERT INTO orders (id, qty, note) VALUES (-1, 3, 'again'); COMMIT");
    await expectEqual();
    // Text with any characters PostgreSQL stores: multi-byte, control characters, backslashes, quotes.
    await shop.query(String.raw`INSERT INTO orders (id, qty, note, tags) VALUES (5000, 1, E'\u00fcn\u00efc\u00f6d\u00e9 \U0001F680 \\N \x01\x7f\r\n"', ARRAY[E'\\', '', 'NULL', NULL, 'a b'])`);
    await expectEqual();
    await shop.query('TRUNCATE orders');
    await shop.query("INSERT INTO orders (id, qty, note) VALUES (1, 1, 'after truncate'), (2, 2, repeat('long ', 5000))");
    await expectEqual();
    // A TOASTed value an update leaves alone arrives as 'unchanged': oxbow keeps the stored one.
    await shop.query('UPDATE orders SET qty = 20 WHERE id = 2');
    await expectEqual();
    // A transaction larger than one part (16,384 changes) goes over in parts.
    await shop.query("BEGIN; INSERT INTO orders (id, qty, note) SELECT g, g, 'bulk' FROM generate_series(1000, 41000) g; UPDATE orders SET qty = qty + 1 WHERE id >= 1000; COMMIT");
    await expectEqual();
  }, 120_000);

  it('moves the slot only to LSNs oxbow committed, and shows the lag', async () => {
    const partitions = await client.query("SELECT topic, partition_id, committed_offset, high_watermark, lag FROM oxbow_catalog.source_partitions WHERE source_name = 'orders'");
    expect(partitions.rows).toHaveLength(1);
    expect(partitions.rows[0].topic).toBe('public.orders');
    const committed = BigInt(partitions.rows[0].committed_offset);
    const flushed = await slotFlush();
    expect(flushed).toBeGreaterThan(0n);
    // The slot's flush position never passes what oxbow committed (idle: it may follow the server's end).
    const serverEnd = BigInt((await upstream.query("SELECT pg_current_wal_lsn() - '0/0'")).rows[0]![0]!);
    expect(flushed <= serverEnd).toBe(true);
    expect(flushed >= committed || flushed === committed).toBe(true);

    // Stop oxbow: upstream changes after that are not confirmed until oxbow commits them.
    const dataDir = oxbow.dataDir;
    await client.end();
    await oxbow.kill('SIGKILL');
    const before = await slotFlush();
    await shop.query("INSERT INTO orders (id, qty, note) VALUES (100, 1, 'while down')");
    const commitLsn = BigInt((await upstream.query("SELECT pg_current_wal_insert_lsn() - '0/0'")).rows[0]![0]!);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await slotFlush()).toBe(before);
    expect(before).toBeLessThan(commitLsn);
    oxbow = await startOxbow({ dataDir, args: ['--barrier-interval-ms', '50'] });
    client = new pg.Client({ connectionString: oxbow.url });
    await client.connect();
    await expectEqual();
    const after = await waitFor('the slot to move', async () => {
      const flush = await slotFlush();
      return flush >= commitLsn ? flush : undefined;
    });
    const offset = BigInt((await client.query("SELECT committed_offset FROM oxbow_catalog.source_partitions WHERE source_name = 'orders'")).rows[0].committed_offset);
    expect(offset).toBeGreaterThanOrEqual(commitLsn);
    expect(after).toBeGreaterThanOrEqual(offset);
    // The lag is the server's WAL end less the committed LSN: caught up, it reaches 0 (or the size of
    // WAL written meanwhile by others); the high watermark follows pg_current_wal_lsn().
    await waitFor('the lag to settle', async () => {
      const row = (await client.query("SELECT high_watermark, committed_offset, lag FROM oxbow_catalog.source_partitions WHERE source_name = 'orders'")).rows[0];
      const serverEnd = BigInt((await upstream.query("SELECT pg_current_wal_lsn() - '0/0'")).rows[0]![0]!);
      const high = BigInt(row.high_watermark);
      return high >= commitLsn && high <= serverEnd && BigInt(row.lag) === (high > BigInt(row.committed_offset) ? high - BigInt(row.committed_offset) : 0n) ? true : undefined;
    });
  }, 120_000);

  it('answers bad input at CREATE with a clear error', async () => {
    const create = async (name: string, options: string, declared = 'id int PRIMARY KEY, qty bigint'): Promise<{ code: string; message: string; ms: number }> => {
      const started = Date.now();
      try {
        await client.query(`CREATE TABLE ${name} (${declared}) ${options}`);
      } catch (error) {
        const failure = error as { code: string; message: string };
        if (failure.code === undefined) process.stderr.write(`${String(error)}\n${oxbow.stderr()}\n`);
        return { code: failure.code, message: failure.message, ms: Date.now() - started };
      }
      throw new Error(`CREATE TABLE ${name} succeeded`);
    };
    await shop.query('CREATE TABLE other (id int PRIMARY KEY, qty bigint)');
    await shop.query('CREATE TABLE nokey (id int, qty bigint)');
    await shop.query('CREATE PUBLICATION narrow FOR TABLE orders');

    const wrongPassword = await create('bad1', withOptions(upstream, 'other').replace(`password = '${CDC_PASSWORD}'`, "password = 'wrong'"));
    expect(wrongPassword.code).toBe('28P01');
    expect(wrongPassword.message).toMatch(/password authentication failed for user "cdc"/);

    const unreachable = await create('bad2', withOptions(upstream, 'other').replace("hostname = '127.0.0.1'", "hostname = '10.255.255.1'").replace(')', ", connect.timeout.ms = '2000')"));
    expect(unreachable.code).toBe('08001');
    expect(unreachable.ms).toBeLessThan(10_000);
    // A host that accepts the connection and never answers: the deadline ends the wait.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const silentPort = (silent.address() as AddressInfo).port;
    const hanging = await create('bad2b', withOptions({ ...upstream, port: silentPort } as PostgresServer, 'other').replace(')', ", connect.timeout.ms = '1500')"));
    silent.close();
    expect(hanging.code).toBe('08001');
    expect(hanging.message).toMatch(/no answer within 1500 ms/);
    expect(hanging.ms).toBeGreaterThanOrEqual(1400);
    expect(hanging.ms).toBeLessThan(5000);

    const refused = await create('bad3', withOptions({ ...upstream, port: 1 } as PostgresServer, 'other'));
    expect(refused.code).toBe('08001');

    expect((await create('bad4', withOptions(upstream, 'missing'))).code).toBe('42P01');
    expect((await create('bad5', withOptions(upstream, 'other'), 'id int PRIMARY KEY, nope text')).code).toBe('42703');
    expect((await create('bad6', withOptions(upstream, 'other'), 'id int PRIMARY KEY, qty text')).code).toBe('42804');
    expect((await create('bad7', withOptions(upstream, 'other'), 'id int, qty bigint PRIMARY KEY')).code).toBe('42P16');
    expect((await create('bad8', withOptions(upstream, 'other'), 'id int, qty bigint')).code).toBe('42P16');
    expect((await create('bad9', withOptions(upstream, 'nokey'), 'id int PRIMARY KEY, qty bigint')).code).toBe('42P16');
    const notPublished = await create('bad10', withOptions(upstream, 'other', ", publication.name = 'narrow'"));
    expect(notPublished.code).toBe('55000');
    expect(notPublished.message).toMatch(/publication "narrow" does not include table "public.other"/);
    const noPublication = await create('bad11', withOptions(upstream, 'other', ", publication.name = 'absent', publication.create.enable = 'false'"));
    expect(noPublication.code).toBe('55000');
    expect((await create('bad12', withOptions(upstream, 'other', ", slot.name = 'oxbow_public_orders', publication.name = 'p2'"))).code).toBe('42710');
    expect((await create('bad13', withOptions(upstream, 'other', ", bogus = '1'"))).code).toBe('22023');
    // Nothing of the failed statements is left in oxbow.
    expect((await client.query("SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'bad%'")).rows[0].n).toBe(0);
  }, 120_000);

  it('reports a dropped slot and an upstream schema change in source_errors', async () => {
    await shop.query('CREATE PUBLICATION p3 FOR TABLE other');
    await client.query(`CREATE TABLE other (id int PRIMARY KEY, qty bigint) ${withOptions(upstream, 'other', ", publication.name = 'p3'")}`);
    await shop.query('INSERT INTO other VALUES (1, 1), (2, 2)');
    await waitFor('rows of other', async () => ((await textRows(client, 'SELECT * FROM other')).length === 2 ? true : undefined));
    // A column added upstream is not read; a retyped declared column stops the stream.
    await shop.query('ALTER TABLE other ADD COLUMN extra text');
    await shop.query("INSERT INTO other VALUES (3, 3, 'x')");
    await waitFor('row 3', async () => ((await textRows(client, 'SELECT * FROM other')).includes('3 | 3') ? true : undefined));
    await shop.query('ALTER TABLE other ALTER COLUMN qty TYPE text');
    await shop.query("INSERT INTO other VALUES (4, '4', 'y')");
    const error = await waitFor('the schema change error', async () => {
      const rows = await client.query("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'other' AND error LIKE '%schema change%'");
      return rows.rows[0]?.error as string | undefined;
    });
    expect(error).toMatch(/column "qty" changed type upstream to text/);
    expect(await textRows(client, 'SELECT * FROM other')).toEqual(['1 | 1', '2 | 2', '3 | 3']);

    // The orders slot dropped upstream: reported, retried, never recreated silently.
    await client.query('DROP TABLE other');
    await waitFor('the other slot to go', async () => ((await upstream.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'oxbow_public_other'")).rows.length === 0 ? true : undefined));
    await waitFor('the orders slot dropped', async () => {
      await upstream.query("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'oxbow_public_orders' AND active");
      const gone = await upstream.tryQuery("SELECT pg_drop_replication_slot('oxbow_public_orders')");
      return gone.ok ? true : undefined;
    });
    const dropped = await waitFor('the dropped slot error', async () => {
      const rows = await client.query("SELECT error FROM oxbow_catalog.source_errors WHERE source_name = 'orders' AND error LIKE '%does not exist%'");
      return rows.rows[0]?.error as string | undefined;
    });
    expect(dropped).toMatch(/replication slot "oxbow_public_orders" does not exist/);
  }, 120_000);

  it("reads tables of a shared source (CREATE SOURCE, then CREATE TABLE ... FROM source TABLE '...')", async () => {
    await shop.query('CREATE SCHEMA sales');
    await shop.query("CREATE TABLE sales.items (sku text PRIMARY KEY, price numeric, tags int[])");
    await shop.query("INSERT INTO sales.items VALUES ('a', 1.5, '{1,2}'), ('b', NULL, NULL)");
    const source = withOptions(upstream, 'unused').replace(", schema.name = 'public', table.name = 'unused'", ", publication.name = 'shared_pub'");
    await client.query(`CREATE SOURCE pg ${source}`);
    await client.query("CREATE TABLE items (sku text PRIMARY KEY, price numeric, tags int[]) FROM pg TABLE 'sales.items'");
    await client.query("CREATE TABLE items_again (sku text PRIMARY KEY, price numeric) FROM pg TABLE 'sales.items'").catch((error: { code: string }) => {
      // The shared publication already exists without a second table: nothing to add, same table is fine.
      throw error;
    });
    await shop.query("UPDATE sales.items SET price = 2.5 WHERE sku = 'b'");
    await shop.query("INSERT INTO sales.items VALUES ('c', 3, '{}')");
    const want = await textRows(shop, 'SELECT sku, price, tags FROM sales.items');
    await waitFor('items to equal upstream', async () => ((await textRows(client, 'SELECT sku, price, tags FROM items')).join('\n') === want.join('\n') ? true : undefined));
    await waitFor('items_again to equal upstream', async () =>
      ((await textRows(client, 'SELECT sku, price FROM items_again')).join('\n') === (await textRows(shop, 'SELECT sku, price FROM sales.items')).join('\n') ? true : undefined),
    );
    // Without a column list the table takes the upstream's columns, types and primary key.
    await client.query("CREATE TABLE items_auto FROM pg TABLE 'sales.items'");
    const described = await client.query({
      text: "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'items_auto' ORDER BY ordinal_position",
      rowMode: 'array',
    });
    expect(described.rows).toEqual([['sku', 'text'], ['price', 'numeric'], ['tags', 'ARRAY']]);
    await waitFor('items_auto to equal upstream', async () => ((await textRows(client, 'SELECT sku, price, tags FROM items_auto')).join('\n') === want.join('\n') ? true : undefined));
    await shop.query("DELETE FROM sales.items WHERE sku = 'a'");
    await waitFor('the delete by the upstream key', async () => ((await textRows(client, 'SELECT sku FROM items_auto')).join(',') === 'b,c' ? true : undefined));
    const slots = await upstream.query("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'oxbow_public_pg_%' ORDER BY 1");
    expect(slots.rows.map((row) => row[0])).toEqual(['oxbow_public_pg_items', 'oxbow_public_pg_items_again', 'oxbow_public_pg_items_auto']);
    // The source holds its tables: DROP needs CASCADE.
    const refused = await client.query('DROP SOURCE pg').then(() => undefined, (error: { code: string }) => error.code);
    expect(refused).toBe('2BP01');
    const missing = await client.query("CREATE TABLE nope (id int PRIMARY KEY) FROM absent TABLE 'public.x'").then(() => undefined, (error: { code: string }) => error.code);
    expect(missing).toBe('42704');
    await client.query('DROP SOURCE pg CASCADE');
    await waitFor('the slots to go', async () => ((await upstream.query("SELECT 1 FROM pg_replication_slots WHERE slot_name LIKE 'oxbow_public_pg_%'")).rows.length === 0 ? true : undefined)).catch(async (error: unknown) => {
      process.stderr.write(`oxbow stderr:\n${oxbow.stderr()}\n${JSON.stringify((await upstream.query('SELECT slot_name, active, active_pid FROM pg_replication_slots')).rows)}\n`);
      throw error;
    });
  }, 120_000);
});
