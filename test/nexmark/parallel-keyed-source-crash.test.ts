// Keyed fragments whose workers generate their sources (executor/stream/PARALLEL.md, "Sources in
// keyed fragments") across SIGKILL and rescaling, over the wire against a real server: Nexmark
// q4's join of paced Auction and Bid sources and its max per auction run in the workers of a
// server at --parallelism 2, which is killed mid-stream; a server at 3 goes on, is killed too, and
// one at 1 finishes. The oracle is the generator module run here (pure, independent of the
// server) and the join and max computed in the test: every auction's max over its bids, each event
// counted once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NexmarkGenerator } from '../../executor/connectors/generators/nexmark-generator.js';
import { killMidStream, textRows as rowsOf } from './killed-source.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';
const AUCTION = 'id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR';

describe('keyed fragments generating their sources across SIGKILL at another parallelism', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-source-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("keep every auction's max over its bids, each event once", async () => {
    const events = 30_000;
    // Parallelism 2 first, 3 after the kill at 4000 events of each source, 1 after the kill at 12,000.
    // --keyed-source-workers is off by default.
    const args = (start: number) => ['--barrier-interval-ms', '100', '--parallelism', String([2, 3, 1][start]), '--keyed-source-workers', 'on'];
    const { server, sql } = await killMidStream(dataDir, events, [4000, 12_000], async (sql) => {
      // 2 splits x 500 events a second each: about 30 s of stream, longer than the view takes to start under load.
      const options = `nexmark.event.num = '${events}', nexmark.split.num = '2', nexmark.max.chunk.size = '100', nexmark.min.event.gap.in.ns = '2000000'`;
      await sql.query(`CREATE SOURCE auction (${AUCTION}) WITH (connector = 'nexmark', nexmark.table.type = 'Auction', ${options})`);
      await sql.query(`CREATE SOURCE bid (${BID}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', ${options})`);
      await sql.query(
        'CREATE MATERIALIZED VIEW q4_inner AS SELECT a.id, a.category, max(b.price) AS final FROM auction AS a JOIN bid AS b ON a.id = b.auction WHERE b.date_time BETWEEN a.date_time AND a.expires GROUP BY a.id, a.category',
      );
      const plan = (await rowsOf(sql, 'EXPLAIN q4_inner')).map((row) => row[0]).join('\n');
      expect(plan).toContain('StreamExchange dist by (auction) (2 workers, worker to worker)');
      expect(plan).toContain('StreamSourceFragment bid split across 2 workers');
    }, { args, sources: ['bid', 'auction'] });
    // The join and the max over the generator's events, computed here.
    const generator = new NexmarkGenerator();
    const auctions = new Map<string, { category: string; from: bigint; to: bigint }>();
    const bids: { auction: string; price: bigint; at: bigint }[] = [];
    for (let n = 0; n < events; n++) {
      const made = generator.event(n);
      if (made.table === 'Auction') auctions.set(String(made.row[0]), { category: String(made.row[8]), from: BigInt(String(made.row[5])), to: BigInt(String(made.row[6])) });
      if (made.table === 'Bid') bids.push({ auction: String(made.row[0]), price: BigInt(String(made.row[2])), at: BigInt(String(made.row[5])) });
    }
    const max = new Map<string, bigint>();
    for (const bid of bids) {
      const auction = auctions.get(bid.auction);
      if (auction === undefined || bid.at < auction.from || bid.at > auction.to) continue;
      const best = max.get(bid.auction);
      if (best === undefined || bid.price > best) max.set(bid.auction, bid.price);
    }
    const expected = [...max].map(([id, price]) => [id, auctions.get(id)!.category, String(price)].join('|'));
    expect(expected.length).toBeGreaterThan(100);
    const view = await rowsOf(sql, 'SELECT id, category, final FROM q4_inner');
    expect(view.map((row) => row.join('|')).sort()).toEqual([...expected].sort());
    await sql.end();
    await server.stop();
  }, 300_000);
});
