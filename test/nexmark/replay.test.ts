// Generator sources that store no rows (executor/connectors/source-replay.ts), over the wire against a
// real server: every read of the source replays the events below its committed position. The
// oracle is the generator module run here, independently of the server (nexmark-generator.ts is
// pure), and the batch recomputation of a view's query.
//
// - SELECT from the source equals the generator's events (2 splits, in row-id order = event order),
//   and a point read by row id finds the event of that number.
// - A view created after 10,000 events were committed (its backfill is a replay) equals one created
//   before them, and both equal their query recomputed in batch and from the generator.
// - AS OF an epoch mid-stream returns a shorter prefix of the events, between the counts seen just
//   before and just after that moment.
// - The source's state is its positions (state_size says so); a datagen source whose random
//   timestamp follows the start time is not deterministic and stores its rows.
// - SIGKILL mid-stream, twice: the source resumes at its committed position, no gap, no duplicate.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NexmarkGenerator } from '../../executor/connectors/generators/nexmark-generator.js';
import type { Row } from '../../sql/value.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets, waitForCommittedOffsets } from '../support/source-offsets.js';
import { killMidStream } from './killed-source.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';

let oxbow: OxbowServer;
let client: pg.Client;

beforeAll(async () => {
  oxbow = await startOxbow({ args: ['--barrier-interval-ms', '100'] });
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
});

/** The Bid rows of events [0, events), with each row's event number, made here by the generator. */
function bids(events: number): { event: number; row: Row }[] {
  const generator = new NexmarkGenerator();
  const out: { event: number; row: Row }[] = [];
  for (let n = 0; n < events; n++) {
    const made = generator.event(n);
    if (made.table === 'Bid') out.push({ event: n, row: made.row });
  }
  return out;
}

/** A timestamp (microseconds, millisecond precision) as PostgreSQL prints it: no trailing zeros. */
function timestampText(micros: number): string {
  return new Date(micros / 1000).toISOString().replace('T', ' ').replace('Z', '').replace(/0+$/, '').replace(/\.$/, '');
}

/** A generated bid as the text the server sends for `SELECT auction, ..., extra`. */
function bidText(row: Row): string[] {
  return row.map((value, i) => (i === 5 ? timestampText(value as number) : String(value)));
}

async function rowsOf(sql: pg.Client, query: string): Promise<string[][]> {
  const result = await sql.query({ text: query, rowMode: 'array', types: { getTypeParser: () => (value: string) => value } });
  return (result.rows as string[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value)));
}

describe('a replayed generator source', () => {
  it('SELECT from the source is the generator events, in event order; a point read by row id finds its event', async () => {
    const events = 6000;
    await client.query(`CREATE SOURCE bid_all (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '300', nexmark.min.event.gap.in.ns = '0')`);
    await waitForCommittedOffsets(client, 'bid_all', events);
    const expected = bids(events);
    expect(expected.length).toBe((events / 50) * 46);
    const actual = await rowsOf(client, 'SELECT auction, bidder, price, channel, url, date_time, extra FROM bid_all');
    expect(actual).toEqual(expected.map(({ row }) => bidText(row)));
    // The hidden row id is the event number, so a point read finds that event (and a person's
    // event number no row).
    const some = expected[1234]!;
    expect(await rowsOf(client, `SELECT _row_id, price, extra FROM bid_all WHERE _row_id = ${some.event}`)).toEqual([[String(some.event), String(some.row[2]), String(some.row[6])]]);
    expect(await rowsOf(client, 'SELECT count(*) FROM bid_all WHERE _row_id = 50')).toEqual([['0']]);
    // The source stores its positions only: a key per split (RocksDB's estimate counts each
    // epoch's version of it), nowhere near a key per bid.
    const [size] = await rowsOf(client, "SELECT purpose, keys FROM oxbow_catalog.state_size WHERE object_name = 'bid_all'");
    expect(size![0]).toBe('source positions');
    expect(Number(size![1])).toBeGreaterThanOrEqual(2);
    expect(Number(size![1])).toBeLessThan(100);
    // A sink FROM a relation reads its stored changes, which a replayed source does not have.
    await expect(client.query("CREATE SINK bid_sink FROM bid_all WITH (connector = 'kafka', topic = 't', properties.bootstrap.server = '127.0.0.1:9')")).rejects.toMatchObject({ code: '0A000' });
  });

  it('a view created after 10,000 events equals one created before them, its batch query and the generator', async () => {
    const events = 30_000;
    // Paced (2 splits at 5,000 events/s each: 3 seconds) so the second view is created mid-stream.
    await client.query(`CREATE SOURCE bid_live (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '200', nexmark.min.event.gap.in.ns = '200000')`);
    const query = 'SELECT auction, count(*) AS n, sum(price) AS total, max(date_time) AS last FROM bid_live GROUP BY auction';
    await client.query(`CREATE MATERIALIZED VIEW before_v AS ${query}`);
    await waitForCommittedOffsets(client, 'bid_live', 10_000);
    await client.query(`CREATE MATERIALIZED VIEW after_v AS ${query}`);
    const atCreation = await committedOffsets(client, 'bid_live');
    expect(atCreation).toBeLessThan(events);
    await waitForCommittedOffsets(client, 'bid_live', events);
    // A FLUSH-free read: every event is committed, and the views change in the same epochs.
    const before = await rowsOf(client, 'SELECT * FROM before_v ORDER BY auction');
    const after = await rowsOf(client, 'SELECT * FROM after_v ORDER BY auction');
    const batch = await rowsOf(client, `${query} ORDER BY auction`);
    expect(after).toEqual(before);
    expect(before).toEqual(batch);
    const groups = new Map<bigint, { n: number; total: bigint; last: number }>();
    for (const { row } of bids(events)) {
      const group = groups.get(row[0] as bigint) ?? { n: 0, total: 0n, last: 0 };
      group.n++;
      group.total += row[2] as bigint;
      group.last = Math.max(group.last, row[5] as number);
      groups.set(row[0] as bigint, group);
    }
    const fromGenerator = [...groups.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([auction, group]) => [String(auction), String(group.n), String(group.total), timestampText(group.last)]);
    expect(before).toEqual(fromGenerator);
  });

  it('AS OF an epoch mid-stream reads a shorter prefix of the events', async () => {
    const events = 40_000;
    await client.query(`CREATE SOURCE bid_tt (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.max.chunk.size = '200', nexmark.min.event.gap.in.ns = '50000')`);
    await waitForCommittedOffsets(client, 'bid_tt', 5000);
    const [lowText] = (await rowsOf(client, 'SELECT count(*) FROM bid_tt'))[0]!;
    const moment = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [highText] = (await rowsOf(client, 'SELECT count(*) FROM bid_tt'))[0]!;
    await waitForCommittedOffsets(client, 'bid_tt', events);
    const asOf = await rowsOf(client, `SELECT auction, bidder, price, channel, url, date_time, extra FROM bid_tt FOR SYSTEM_TIME AS OF TIMESTAMPTZ '${moment}'`);
    const low = Number(lowText);
    const high = Number(highText);
    expect(asOf.length).toBeGreaterThanOrEqual(low);
    expect(asOf.length).toBeLessThanOrEqual(high);
    const all = bids(events);
    expect(high).toBeLessThan(all.length);
    expect(asOf).toEqual(all.slice(0, asOf.length).map(({ row }) => bidText(row)));
    expect(await rowsOf(client, 'SELECT count(*) FROM bid_tt')).toEqual([[String(all.length)]]);
    // FOR SYSTEM_TIME BETWEEN: every bid, valid from the epoch that committed it; those valid
    // from before the moment are the AS OF prefix.
    const between = await rowsOf(client, `SELECT count(*), count(*) FILTER (WHERE oxbow_valid_from <= TIMESTAMPTZ '${moment}'), count(oxbow_valid_to) FROM bid_tt FOR SYSTEM_TIME BETWEEN TIMESTAMPTZ '${moment}' AND now()`);
    expect(between).toEqual([[String(all.length), String(asOf.length), '0']]);
  });

  it('datagen: deterministic rows are replayed; a timestamp relative to the start time keeps its rows stored', async () => {
    await client.query(
      "CREATE SOURCE gen_replayed (id INT, v INT, at TIMESTAMP) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '500', fields.v.min = '0', fields.v.max = '9', fields.at.basetime = '2026-01-01 00:00:00+00', datagen.rows.per.second = '100000', datagen.split.num = '3')",
    );
    await client.query("CREATE SOURCE gen_stored (id INT, at TIMESTAMP) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '500', datagen.rows.per.second = '100000')");
    await waitForCommittedOffsets(client, 'gen_replayed', 500);
    await waitForCommittedOffsets(client, 'gen_stored', 500);
    // Row g of the sequence is start + g; the row id is g.
    expect(await rowsOf(client, 'SELECT count(*), count(DISTINCT id), min(id), max(id), sum(id), bool_and(_row_id = id - 1) FROM gen_replayed')).toEqual([['500', '500', '1', '500', '125250', 't']]);
    expect(await rowsOf(client, 'SELECT count(*), sum(id) FROM gen_stored')).toEqual([['500', '125250']]);
    const purposes = await rowsOf(client, "SELECT object_name, purpose FROM oxbow_catalog.state_size WHERE object_name LIKE 'gen_%' ORDER BY object_name");
    expect(purposes).toEqual([
      ['gen_replayed', 'source positions'],
      ['gen_stored', 'source rows'],
    ]);
  });
});

describe('a replayed source across SIGKILL', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-replay-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('resumes at its committed position: a view of every bid holds each event once', async () => {
    const events = 30_000;
    const { server, sql } = await killMidStream(dataDir, events, [4000, 12_000], async (sql) => {
      await sql.query(`CREATE SOURCE bid (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '100', nexmark.min.event.gap.in.ns = '100000')`);
      await sql.query('CREATE MATERIALIZED VIEW every_bid AS SELECT auction, bidder, price, date_time, extra FROM bid');
    });
    const expected = bids(events).map(({ row }) => [row[0], row[1], row[2], row[5], row[6]].map(String).join('|'));
    const text = (rows: string[][]): string[] => rows.map((row) => row.join('|'));
    // The view stored each bid as it streamed by, across both restarts: exactly the generator's.
    const view = await rowsOf(sql, 'SELECT auction, bidder, price, (extract(epoch FROM date_time) * 1000000)::int8, extra FROM every_bid');
    expect(text(view).sort()).toEqual([...expected].sort());
    // And the source's replay is the same multiset again.
    const source = await rowsOf(sql, 'SELECT auction, bidder, price, (extract(epoch FROM date_time) * 1000000)::int8, extra FROM bid');
    expect(text(source)).toEqual(expected);
    await sql.end();
    await server.stop();
  });
});
