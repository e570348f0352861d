// Source fragments (executor/stream/PARALLEL.md, "Source fragments") across SIGKILL and rescaling,
// over the wire against a real server: views of Nexmark q0 and q1 over a paced Bid source run in
// the workers of a server at --parallelism 2, which is killed mid-stream; a server at 3 goes on,
// is killed too, and one at 1 finishes. The oracle is the generator module run here (pure,
// independent of the server): each view holds every bid of the events, each exactly once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { NexmarkGenerator } from '../../executor/connectors/generators/nexmark-generator.js';
import { startOxbow } from '../support/server.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';

async function rowsOf(sql: pg.Client, query: string): Promise<string[][]> {
  const result = await sql.query({ text: query, rowMode: 'array', types: { getTypeParser: () => (value: string) => value } });
  return (result.rows as string[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value)));
}

async function committed(sql: pg.Client): Promise<number> {
  const result = await sql.query("SELECT coalesce(sum(committed_offset), 0)::int8 AS n FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'");
  return Number(result.rows[0].n);
}

async function waitForCommitted(sql: pg.Client, events: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while ((await committed(sql)) < events) {
    if (Date.now() > deadline) throw new Error(`the source committed ${await committed(sql)} of ${events} events`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('source fragments across SIGKILL at another parallelism', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-fragment-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keep every bid exactly once', async () => {
    const events = 30_000;
    const args = (parallelism: number) => ['--barrier-interval-ms', '100', '--parallelism', String(parallelism)];
    let server = await startOxbow({ dataDir, args: args(2) });
    let sql = new pg.Client({ connectionString: server.url });
    await sql.connect();
    sql.on('error', () => undefined);
    // 2 splits x 500 events a second: about 30 s of stream, longer than the views take to start under load.
    await sql.query(`CREATE SOURCE bid (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '100', nexmark.min.event.gap.in.ns = '2000000')`);
    await sql.query('CREATE MATERIALIZED VIEW q0 AS SELECT auction, bidder, price, date_time, extra FROM bid');
    await sql.query('CREATE MATERIALIZED VIEW q1 AS SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid');
    const plan = (await rowsOf(sql, 'EXPLAIN q1')).map((row) => row[0]).join('\n');
    expect(plan).toContain('StreamSourceFragment bid split across 2 workers');
    for (const [threshold, next] of [
      [4000, 3],
      [12_000, 1],
    ] as const) {
      await waitForCommitted(sql, threshold);
      expect(await committed(sql)).toBeLessThan(events);
      await server.kill('SIGKILL');
      await sql.end().catch(() => undefined);
      server = await startOxbow({ dataDir, args: args(next) });
      sql = new pg.Client({ connectionString: server.url });
      await sql.connect();
      sql.on('error', () => undefined);
    }
    await waitForCommitted(sql, events);
    const generator = new NexmarkGenerator();
    const expected: string[] = [];
    for (let n = 0; n < events; n++) {
      const made = generator.event(n);
      if (made.table === 'Bid') expected.push([made.row[0], made.row[1], made.row[2], made.row[5], made.row[6]].map(String).join('|'));
    }
    const view = await rowsOf(sql, 'SELECT auction, bidder, price, (extract(epoch FROM date_time) * 1000000)::int8, extra FROM q0');
    expect(view.map((row) => row.join('|')).sort()).toEqual([...expected].sort());
    // q1 is q0's bids converted: the same rows, each once.
    expect(await rowsOf(sql, 'SELECT count(*) FROM q1')).toEqual([[String(expected.length)]]);
    expect(await rowsOf(sql, 'SELECT count(*) FROM (SELECT auction, bidder, 0.908 * price AS price, date_time FROM q0 EXCEPT ALL SELECT * FROM q1) AS d')).toEqual([['0']]);
    await sql.end();
    await server.stop();
  }, 300_000);
});
