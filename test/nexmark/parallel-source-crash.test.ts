// Source fragments (executor/stream/PARALLEL.md, "Source fragments") across SIGKILL and rescaling,
// over the wire against a real server: views of Nexmark q0 and q1 over a paced Bid source run in
// the workers of a server at --parallelism 2, which is killed mid-stream; a server at 3 goes on,
// is killed too, and one at 1 finishes. The oracle is the generator module run here (pure,
// independent of the server): each view holds every bid of the events, each exactly once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NexmarkGenerator } from '../../executor/connectors/generators/nexmark-generator.js';
import { killMidStream, textRows as rowsOf } from './killed-source.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';

describe('source fragments across SIGKILL at another parallelism', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-fragment-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keep every bid exactly once', async () => {
    const events = 30_000;
    // Parallelism 2 first, 3 after the kill at 4000 events, 1 after the kill at 12,000.
    const args = (start: number) => ['--barrier-interval-ms', '100', '--parallelism', String([2, 3, 1][start]), '--cores', '8'];
    const { server, sql } = await killMidStream(dataDir, events, [4000, 12_000], async (sql) => {
      // 2 splits x 500 events a second: about 30 s of stream, longer than the views take to start under load.
      await sql.query(`CREATE SOURCE bid (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '100', nexmark.min.event.gap.in.ns = '2000000')`);
      await sql.query('CREATE MATERIALIZED VIEW q0 AS SELECT auction, bidder, price, date_time, extra FROM bid');
      await sql.query('CREATE MATERIALIZED VIEW q1 AS SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid');
      const plan = (await rowsOf(sql, 'EXPLAIN q1')).map((row) => row[0]).join('\n');
      expect(plan).toContain('StreamSourceFragment bid split across 2 workers');
    }, { args });
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
