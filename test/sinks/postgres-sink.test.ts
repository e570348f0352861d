// Sinks into a real PostgreSQL 15 and into nowhere, end to end against an oxbow server process:
// a view's changes upserted into a PostgreSQL table (FROM a view with connector = 'postgres', AS
// a query with RisingWave's jdbc form), compared after every round of changes with the view read
// through oxbow and with the same query recomputed by PostgreSQL over the same inputs; the
// blackhole sink's counts against the changes the test made; CREATE's errors for targets it
// cannot write.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { seededRandom } from '../support/seeded-random.js';

let oxbow: OxbowServer;
let postgres: PostgresServer;
let sql: pg.Client;
let target: pg.Client;

beforeAll(async () => {
  [oxbow, postgres] = await Promise.all([startOxbow({ args: ['--barrier-interval-ms', '100'] }), startPostgres({ settings: { max_connections: '30' } })]);
  sql = new pg.Client({ connectionString: oxbow.url });
  await sql.connect();
  target = await postgres.connect();
  target.on('error', () => undefined);
}, 120_000);

afterAll(async () => {
  await sql?.end();
  await target?.end();
  await oxbow?.stop();
  await postgres?.stop();
});

/** Rows as sorted lines of their text values: the same for oxbow's and PostgreSQL's answers. */
function lines(rows: readonly Record<string, unknown>[], columns: readonly string[]): string[] {
  return rows.map((row) => columns.map((column) => (row[column] === null ? 'NULL' : String(row[column]))).join('|')).sort();
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const pgOptions = () => `connector = 'postgres', hostname = '127.0.0.1', port = '${postgres.port}', user = 'postgres', password = '', database = 'postgres'`;

describe('postgres sink', () => {
  it('keeps a PostgreSQL table equal to the view through inserts, updates and deletes', { timeout: 120_000 }, async () => {
    await sql.query('CREATE TABLE orders (id int PRIMARY KEY, owner varchar, amount int)');
    await target.query('CREATE TABLE orders_in (id int PRIMARY KEY, owner varchar, amount int)');
    await target.query('CREATE TABLE totals (owner varchar PRIMARY KEY, total bigint, n bigint)');
    await target.query('CREATE TABLE big_orders (id int PRIMARY KEY, owner text, amount int)');
    const both = async (statement: string) => {
      await sql.query(statement);
      await target.query(statement.replace(/\borders\b/, 'orders_in'));
    };
    await both("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 20)");
    const totalsQuery = 'SELECT owner, sum(amount) AS total, count(*) AS n FROM orders GROUP BY owner';
    const bigQuery = 'SELECT id, owner, amount FROM orders WHERE amount > 50';
    await sql.query(`CREATE MATERIALIZED VIEW totals AS ${totalsQuery}`);
    await sql.query(`CREATE SINK totals_pg FROM totals WITH (${pgOptions()}, table = 'totals')`);
    await sql.query(`CREATE SINK big_pg AS ${bigQuery} WITH (connector = 'jdbc', jdbc.url = 'jdbc:postgresql://127.0.0.1:${postgres.port}/postgres?user=postgres', table.name = 'big_orders', type = 'upsert', primary_key = 'id')`);

    const random = seededRandom(7);
    const owners = ['ann', 'bob', 'cat', 'dan', 'eve'];
    let nextId = 3;
    for (let round = 0; round < 12; round++) {
      // A few statements per round, so rounds cover several epochs per delivery too.
      for (let step = 0; step < 1 + Math.floor(random() * 4); step++) {
        const choice = random();
        if (choice < 0.5) {
          const rows = Array.from({ length: 1 + Math.floor(random() * 5) }, () => `(${nextId++}, '${owners[Math.floor(random() * owners.length)]}', ${Math.floor(random() * 100)})`);
          await both(`INSERT INTO orders VALUES ${rows.join(', ')}`);
        } else if (choice < 0.8) {
          await both(`UPDATE orders SET amount = amount + ${Math.floor(random() * 60) - 30} WHERE id % 3 = ${Math.floor(random() * 3)}`);
        } else {
          await both(`DELETE FROM orders WHERE id % 5 = ${Math.floor(random() * 5)}`);
        }
      }
      const expectedTotals = lines((await target.query(totalsQuery.replace('orders', 'orders_in'))).rows, ['owner', 'total', 'n']);
      const expectedBig = lines((await target.query(bigQuery.replace('orders', 'orders_in'))).rows, ['id', 'owner', 'amount']);
      // The view read through oxbow equals PostgreSQL's recomputation...
      expect(lines((await sql.query('SELECT * FROM totals')).rows, ['owner', 'total', 'n'])).toEqual(expectedTotals);
      // ...and each sink's table reaches it.
      let seen: string[] = [];
      await until(`round ${round}: totals delivered`, async () => {
        seen = lines((await target.query('SELECT * FROM totals')).rows, ['owner', 'total', 'n']);
        return JSON.stringify(seen) === JSON.stringify(expectedTotals);
      }).catch(() => expect(seen).toEqual(expectedTotals));
      await until(`round ${round}: big orders delivered`, async () => {
        seen = lines((await target.query('SELECT * FROM big_orders')).rows, ['id', 'owner', 'amount']);
        return JSON.stringify(seen) === JSON.stringify(expectedBig);
      }).catch(() => expect(seen).toEqual(expectedBig));
    }
    const progress = await target.query("SELECT sink_name FROM oxbow_sink_progress ORDER BY sink_name");
    expect(progress.rows.map((row: { sink_name: string }) => row.sink_name)).toEqual(['public.big_pg', 'public.totals_pg']);
    const status = await sql.query("SELECT sink_name, connector, errors FROM oxbow_catalog.sink_status WHERE sink_name IN ('totals_pg', 'big_pg') ORDER BY sink_name");
    expect(status.rows).toEqual([
      { sink_name: 'big_pg', connector: 'postgres', errors: '0' },
      { sink_name: 'totals_pg', connector: 'postgres', errors: '0' },
    ]);
    await sql.query('DROP SINK totals_pg');
    await sql.query('DROP SINK big_pg');
  });

  it('appends inserted rows only with type = append-only, and makes the table when asked', { timeout: 60_000 }, async () => {
    await sql.query('CREATE TABLE events (id int PRIMARY KEY, kind text, at timestamptz, payload jsonb, ratio float8)');
    await sql.query(`INSERT INTO events VALUES (1, 'a', '2026-01-01 10:00:00+00', '{"x": [1, 2]}', 0.5), (2, 'it''s', NULL, NULL, -1.25)`);
    await sql.query(`CREATE SINK events_log FROM events WITH (${pgOptions()}, table = 'events_log', type = 'append-only', create_table_if_not_exists = 'true')`);
    // The contents first (a delivery after the changes would send the contents as they are then).
    await until('the contents', async () => Number((await target.query('SELECT count(*) AS n FROM events_log')).rows[0].n) === 2);
    await sql.query("UPDATE events SET kind = 'b' WHERE id = 1");
    await sql.query('DELETE FROM events WHERE id = 2');
    const expected = ["1|a|2026-01-01 10:00:00+00|{\"x\": [1, 2]}|0.5", "1|b|2026-01-01 10:00:00+00|{\"x\": [1, 2]}|0.5", "2|it's|NULL|NULL|-1.25"];
    let seen: string[] = [];
    const read = async () => lines((await target.query('SELECT id, kind, at::text AS at, payload::text AS payload, ratio FROM events_log')).rows, ['id', 'kind', 'at', 'payload', 'ratio']);
    await until('the append-only log', async () => (seen = await read()).length >= 3).catch(() => undefined);
    expect(seen).toEqual(expected);
    const columns = await target.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'events_log' ORDER BY ordinal_position");
    expect(columns.rows.map((row: { column_name: string; data_type: string }) => `${row.column_name} ${row.data_type}`)).toEqual(['id integer', 'kind text', 'at timestamp with time zone', 'payload jsonb', 'ratio double precision']);
    await sql.query('DROP SINK events_log');
  });

  it('refuses targets it cannot write, with a clear error and within its deadline', { timeout: 60_000 }, async () => {
    await sql.query('CREATE TABLE src (id int PRIMARY KEY, name text, score int)');
    await sql.query('CREATE TABLE keyless (name text)');
    await target.query('CREATE TABLE wrong_type (id int PRIMARY KEY, name text, score text)');
    await target.query('CREATE TABLE missing_column (id int PRIMARY KEY, name text)');
    await target.query('CREATE TABLE no_key (id int, name text, score int)');
    const attempt = async (statement: string) => sql.query(statement).then(() => 'created', (error: { code: string; message: string }) => `${error.code} ${error.message}`);
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'nowhere')`)).toBe(`42P01 target table "public.nowhere" does not exist in PostgreSQL at 127.0.0.1:${postgres.port}/postgres`);
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'wrong_type')`)).toBe('42804 column "score" is of type text in target table "public.wrong_type" but the sink writes integer');
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'missing_column')`)).toBe('42703 column "score" of the sink does not exist in target table "public.missing_column"');
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'no_key')`)).toBe('42P10 target table "public.no_key" has no primary key or unique constraint on (id), the upsert sink\'s key');
    expect(await attempt(`CREATE SINK bad FROM keyless WITH (${pgOptions()}, table = 'no_key')`)).toBe('42P10 an upsert sink into PostgreSQL needs a key, and the rows of "keyless" have none');
    expect(await attempt(`CREATE SINK bad FROM src WITH (connector = 'postgres', hostname = '127.0.0.1', user = 'postgres', table = 't')`)).toBe('22023 a postgres sink needs the option "database"');
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'no_key', type = 'merge')`)).toBe('22023 invalid value for "type": "merge"');
    expect(await attempt(`CREATE SINK bad FROM src WITH (connector = 'jdbc', jdbc.url = 'jdbc:mysql://h/db', table.name = 't')`)).toMatch(/^22023 invalid value for "jdbc.url"/);
    expect(await attempt(`CREATE SINK bad FROM src WITH (${pgOptions()}, table = 'no_key') FORMAT PLAIN ENCODE JSON`)).toBe('0A000 FORMAT ... ENCODE is not supported for postgres sinks');
    // Nothing listens on this port (the restartable server is halted): refused in time, not a hang.
    await postgres.halt('fast');
    try {
      const started = Date.now();
      const outcome = await attempt(`CREATE SINK bad AS SELECT id, name, score FROM src WITH (${pgOptions()}, table = 'wrong_type', connect_timeout_ms = '2000')`);
      expect(outcome).toMatch(new RegExp(`^08001 cannot connect to PostgreSQL at 127.0.0.1:${postgres.port}/postgres: `));
      expect(Date.now() - started).toBeLessThan(5000);
      // A blackholed address: the connect deadline, not the kernel's, ends it.
      const unroutable = Date.now();
      expect(await attempt(`CREATE SINK bad FROM src WITH (connector = 'postgres', hostname = '10.255.255.1', user = 'postgres', database = 'postgres', table = 't', connect_timeout_ms = '1500')`)).toMatch(/^08001 cannot connect to PostgreSQL at 10.255.255.1:5432\/postgres/);
      expect(Date.now() - unroutable).toBeLessThan(5000);
    } finally {
      await postgres.resume();
      await target.end().catch(() => undefined);
      target = await postgres.connect();
      target.on('error', () => undefined);
    }
    expect((await sql.query("SELECT count(*)::int AS n FROM pg_class WHERE relname = 'bad'")).rows).toEqual([{ n: 0 }]);
  });
});

describe('blackhole sink', () => {
  it('consumes every change and counts it', { timeout: 60_000 }, async () => {
    await sql.query('CREATE TABLE bh (id int PRIMARY KEY, v int)');
    await sql.query('INSERT INTO bh SELECT g, g FROM generate_series(1, 100) AS g');
    await sql.query("CREATE SINK bh_out FROM bh WITH (connector = 'blackhole')");
    await sql.query("CREATE SINK bh_sum AS SELECT sum(v) AS s FROM bh WITH (connector = 'blackhole')");
    // The contents (100 rows), then 50 inserts, 10 updates (a delete and an insert each), 5 deletes.
    const rows = async (name: string) => Number((await sql.query('SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = $1', [name])).rows[0]?.rows_delivered ?? -1);
    // Both sinks' first deliveries (the contents) before the table changes: a sink that has not
    // delivered yet starts from the contents of its first delivery's epoch.
    await until('the contents', async () => (await rows('bh_out')) === 100);
    await until("the sum's contents", async () => (await rows('bh_sum')) === 1);
    await sql.query('INSERT INTO bh SELECT g, g FROM generate_series(101, 150) AS g');
    await sql.query('UPDATE bh SET v = v + 1 WHERE id <= 10');
    await sql.query('DELETE FROM bh WHERE id > 145');
    await until('the changes', async () => (await rows('bh_out')) === 100 + 50 + 20 + 5).catch(async () => expect(await rows('bh_out')).toBe(175));
    // The one-row sum: its first row, then one delete and one insert per statement that changed it.
    await until('the sum', async () => (await rows('bh_sum')) === 1 + 2 * 3).catch(async () => expect(await rows('bh_sum')).toBe(7));
    const status = await sql.query("SELECT connector, errors, delivered_epoch > 0 AS delivered FROM oxbow_catalog.sink_status WHERE sink_name = 'bh_out'");
    expect(status.rows).toEqual([{ connector: 'blackhole', errors: '0', delivered: true }]);
    await sql.query('DROP SINK bh_out');
    expect((await sql.query("SELECT count(*)::int AS n FROM oxbow_catalog.sink_status WHERE sink_name = 'bh_out'")).rows).toEqual([{ n: 0 }]);
  });
});
