// Generator sources over the wire (a real oxbow server): views over `connector = 'nexmark'` equal
// the same queries run by a real PostgreSQL over the same events (made here by the generator
// module and inserted into plain tables); exactly once across SIGKILLs (the event numbers commit
// with the epoch); datagen's rows and both connectors' option errors with their SQLSTATEs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NexmarkGenerator, type NexmarkTableType } from '../../executor/connectors/generators/nexmark-generator.js';
import type { Row } from '../../sql/value.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { waitForCommittedOffsets } from '../support/source-offsets.js';
import { killMidStream } from './killed-source.js';

const COLUMNS = {
  bid: 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR',
  auction: 'id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR',
} as const;

let oxbow: OxbowServer;
let postgres: PostgresServer;
let client: pg.Client;

beforeAll(async () => {
  [oxbow, postgres] = await Promise.all([startOxbow({ args: ['--barrier-interval-ms', '100'] }), startPostgres()]);
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
  await postgres?.stop();
});

function generated(table: NexmarkTableType, events: number, seed = 0): Row[] {
  const rows: Row[] = [];
  const generator = new NexmarkGenerator({ seed });
  let next = 0;
  while (next < events) next = generator.fill(rows, table, next, 1, events, 4096).next;
  return rows;
}

/** A value as PostgreSQL input text: timestamps (microseconds) as ISO text. */
function text(value: Row[number], isTime: boolean): string | null {
  if (value === null) return null;
  if (isTime) return new Date((value as number) / 1000).toISOString().replace('T', ' ').replace('Z', '');
  return String(value);
}

async function insertIntoPostgres(name: 'bid' | 'auction', rows: Row[]): Promise<void> {
  await postgres.query(`DROP TABLE IF EXISTS ${name}`);
  await postgres.query(`CREATE TABLE ${name} (${COLUMNS[name]})`);
  const types = COLUMNS[name].split(', ').map((column) => column.split(' ')[1]);
  for (let start = 0; start < rows.length; start += 1000) {
    const chunk = rows.slice(start, start + 1000);
    const params: (string | null)[] = [];
    const tuples = chunk.map((row) => `(${row.map((value, i) => (params.push(text(value, types[i] === 'TIMESTAMP')), `$${params.length}`)).join(', ')})`);
    await postgres.query(`INSERT INTO ${name} VALUES ${tuples.join(', ')}`, params);
  }
}

async function rowsOf(sql: pg.Client, query: string): Promise<string[][]> {
  const result = await sql.query({ text: query, rowMode: 'array', types: { getTypeParser: () => (value: string) => value } });
  return (result.rows as string[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value)));
}

describe('nexmark source', () => {
  it('views over Bid and Auction sources equal PostgreSQL over the same generated events', async () => {
    const events = 20_000;
    await client.query(`CREATE SOURCE bid (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '3', nexmark.max.chunk.size = '500', nexmark.min.event.gap.in.ns = '0')`);
    await client.query(`CREATE SOURCE auction (${COLUMNS.auction}) WITH (connector = 'nexmark', nexmark.table.type = 'Auction', nexmark.event.num = '${events}', nexmark.min.event.gap.in.ns = '0')`);
    const queries = [
      'SELECT auction, count(*) AS n, sum(price) AS total, max(price) AS top, min(date_time) AS first FROM bid GROUP BY auction',
      "SELECT channel, count(*) AS n, sum(length(url)) AS urls FROM bid WHERE channel IN ('Google', 'Apple') OR auction = 1007 GROUP BY channel",
      'SELECT a.category, count(*) AS n, sum(b.price) AS total FROM auction a JOIN bid b ON a.id = b.auction AND b.date_time BETWEEN a.date_time AND a.expires GROUP BY a.category',
      'SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid WHERE auction = 1007 OR auction = 1020 OR auction = 2001',
    ];
    for (const [i, query] of queries.entries()) await client.query(`CREATE MATERIALIZED VIEW v${i} AS ${query}`);
    await Promise.all([insertIntoPostgres('bid', generated('Bid', events)), insertIntoPostgres('auction', generated('Auction', events))]);
    await waitForCommittedOffsets(client, ['bid', 'auction'], 2 * events);
    const [bidCount] = (await rowsOf(client, 'SELECT count(*) FROM bid'))[0]!;
    expect(Number(bidCount)).toBe((events / 50) * 46);
    // The source's rows themselves.
    const summary = 'SELECT count(*), sum(price), sum(auction), sum(bidder), sum(length(extra)), count(DISTINCT url), min(date_time), max(date_time) FROM bid';
    expect(await rowsOf(client, summary)).toEqual((await postgres.query(summary)).rows);
    for (const [i, query] of queries.entries()) {
      const expected = (await postgres.query(`${query} ORDER BY 1, 2, 3`)).rows;
      expect(expected.length).toBeGreaterThan(0);
      expect(await rowsOf(client, `SELECT * FROM v${i} ORDER BY 1, 2, 3`), query).toEqual(expected);
    }
  });

  it('rejects bad options with their SQLSTATEs', async () => {
    const bad: [string, string][] = [
      [`CREATE SOURCE e1 (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.colour = 'red')`, '22023'],
      [`CREATE SOURCE e2 (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bids')`, '22023'],
      [`CREATE SOURCE e3 (${COLUMNS.bid}) WITH (connector = 'nexmark')`, '0A000'],
      [`CREATE SOURCE e4 (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = 'many')`, '22023'],
      [`CREATE SOURCE e5 (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.split.num = '0')`, '22023'],
      [`CREATE SOURCE e6 (auction BIGINT, colour VARCHAR) WITH (connector = 'nexmark', nexmark.table.type = 'Bid')`, '42703'],
      [`CREATE SOURCE e7 (auction INT) WITH (connector = 'nexmark', nexmark.table.type = 'Bid')`, '42804'],
      [`CREATE SOURCE e8 (auction BIGINT) WITH (connector = 'nexmark', nexmark.table.type = 'Bid') FORMAT UPSERT ENCODE JSON`, '0A000'],
      ["CREATE SOURCE d1 (v INT) WITH (connector = 'datagen', fields.v.kind = 'sequential')", '22023'],
      ["CREATE SOURCE d2 (v INT) WITH (connector = 'datagen', fields.w.kind = 'random')", '42703'],
      ["CREATE SOURCE d3 (v INT) WITH (connector = 'datagen', fields.v.start = '1')", '22023'],
      ["CREATE SOURCE d4 (v INT) WITH (connector = 'datagen', fields.v.kind = 'sequence', fields.v.start = '10', fields.v.end = '1')", '22023'],
      ["CREATE SOURCE d5 (v INT) WITH (connector = 'datagen', fields.v.min = '5', fields.v.max = '1')", '22023'],
      ["CREATE SOURCE d6 (v INT) WITH (connector = 'datagen', datagen.rows.per.second = 'fast')", '22023'],
      ["CREATE SOURCE d7 (v SMALLINT) WITH (connector = 'datagen', fields.v.max = '100000')", '22023'],
      ["CREATE SOURCE d8 (v JSONB) WITH (connector = 'datagen')", '0A000'],
      ["CREATE SOURCE d9 (v INT) WITH (connector = 'datagen', datagen.speed = '1')", '22023'],
      ["CREATE SOURCE d10 (t TIMESTAMP) WITH (connector = 'datagen', fields.t.max_past = 'a while')", '22023'],
      ["CREATE SOURCE d11 (v VARCHAR) WITH (connector = 'datagen', fields.v.min = '1')", '22023'],
    ];
    for (const [statement, code] of bad) {
      const error = await client.query(statement).then(
        () => undefined,
        (failure: { code?: string; message: string }) => failure,
      );
      expect(error?.code, statement).toBe(code);
      expect(error!.message.length).toBeGreaterThan(10);
    }
    const created = await rowsOf(client, "SELECT count(*) FROM pg_class WHERE relname ~ '^(e|d)[0-9]+$'");
    expect(created).toEqual([['0']]);
  });
});

describe('datagen source', () => {
  it('makes a sequence and random values within their bounds, then ends', async () => {
    await client.query(`CREATE SOURCE gen (id INT, big BIGINT, v VARCHAR, f DOUBLE PRECISION, t TIMESTAMP, b BOOLEAN) WITH (connector = 'datagen',
      fields.id.kind = 'sequence', fields.id.start = '11', fields.id.end = '1010',
      fields.big.min = '-5', fields.big.max = '5', fields.v.length = '7', fields.f.min = '0.5', fields.f.max = '1.5',
      fields.t.basetime = '2026-01-01 00:00:00+00', fields.t.max_past = '1 hour',
      datagen.rows.per.second = '20000', datagen.split.num = '2')`);
    await client.query('CREATE MATERIALIZED VIEW gen_stats AS SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS total FROM gen');
    await waitForCommittedOffsets(client, 'gen', 1000);
    // 11 + ... + 1010, each once.
    expect(await rowsOf(client, 'SELECT * FROM gen_stats')).toEqual([['1000', '1000', String(((11 + 1010) * 1000) / 2)]]);
    const bounds = await rowsOf(
      client,
      "SELECT min(big), max(big), min(length(v)), max(length(v)), min(f) >= 0.5, max(f) <= 1.5, min(t) >= '2025-12-31 23:00:00', max(t) <= '2026-01-01 00:00:00', count(DISTINCT b) FROM gen",
    );
    expect(bounds).toEqual([['-5', '5', '7', '7', 't', 't', 't', 't', '2']]);
  });
});

describe('exactly once', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-nexmark-eos-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a Nexmark source killed twice mid-stream reflects every event once', async () => {
    const events = 40_000;
    // 2 splits at 10,000 events/s each: about 2 seconds of events.
    const { server, sql } = await killMidStream(dataDir, events, [5000, 15_000], async (sql) => {
      await sql.query(`CREATE SOURCE bid (${COLUMNS.bid}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '100', nexmark.min.event.gap.in.ns = '100000')`);
      await sql.query('CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n, sum(price) AS total FROM bid GROUP BY channel');
    });
    const expected = new Map<string, { n: number; total: bigint }>();
    for (const row of generated('Bid', events)) {
      const entry = expected.get(row[3] as string) ?? { n: 0, total: 0n };
      entry.n++;
      entry.total += row[2] as bigint;
      expected.set(row[3] as string, entry);
    }
    const actual = await rowsOf(sql, 'SELECT channel, n, total FROM per_channel ORDER BY channel');
    const want = [...expected.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([channel, { n, total }]) => [channel, String(n), String(total)]);
    expect(actual).toEqual(want);
    expect(await rowsOf(sql, 'SELECT count(*) FROM bid')).toEqual([[String((events / 50) * 46)]]);
    await sql.end();
    await server.stop();
  });
});
