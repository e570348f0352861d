// proctime() in a view over an append-only source: the projection reads the stream manager's clock
// once per batch of changes, so every row carries one of the clock's readings and the rows of one
// batch share theirs. The test's clock counts its readings (one distinct time per reading).

import { afterEach, describe, expect, it } from 'vitest';
import { sourceChunks } from '../../connectors/source-manager.js';
import { openHarness, type Harness } from './stream-harness.js';

const START = Date.parse('2030-01-01T00:00:00Z');
const EVENTS = 5_000;
const CHUNK = 64;
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('proctime() in a view', () => {
  it('is one clock reading per batch, the rows of a batch sharing it', async () => {
    const chunkRows = sourceChunks.rows;
    sourceChunks.rows = CHUNK;
    try {
      h = await openHarness();
      const readings: number[] = [];
      h.engine.temporalTicker!.core.streams.clock = () => {
        const now = START + readings.length * 1000;
        readings.push(now);
        return now;
      };
      await h.run(
        `create source bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR) with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${EVENTS}', nexmark.split.num = '1', nexmark.max.chunk.size = '${CHUNK}', nexmark.min.event.gap.in.ns = '50000')`,
      );
      await h.run('create materialized view processed as select p_time, count(*) as n from (select proctime() as p_time from bid) as b group by p_time');
      for (;;) {
        const rows = (await h.run("select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = 'bid'")).rows;
        if (Number(rows[0]![0]) >= EVENTS) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const times = await h.rows('select p_time, n from processed');
      const [[bids]] = (await h.rows('select count(*) from bid')) as [[bigint]];
      expect(times.reduce((sum, [, n]) => sum + (n as bigint), 0n)).toBe(bids);
      const read = new Set(readings.map((millis) => millis * 1000));
      // Every processing time is one of the clock's readings, not the statement's time.
      for (const [time] of times) expect(read.has(time as number), `p_time ${String(time)}`).toBe(true);
      // Several batches, each one reading: more than one time, and far fewer times than rows (a
      // clock read per row would give each row its own).
      expect(times.length).toBeGreaterThan(1);
      expect(times.length).toBeLessThan(Number(bids) / 4);
    } finally {
      sourceChunks.rows = chunkRows;
    }
  }, 120_000);
});
