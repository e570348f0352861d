// A source's rows go through the views in chunks as they arrive, into the open epoch, which the
// next barrier seals (executor/connectors/source-manager.ts, executor/stream/DESIGN.md "Chunks within
// an epoch"). Every other writer first seals those chunks (WriteLock.drain), so while a Nexmark
// source runs:
// - a statement that fails (a CHECK violation) aborts only its own changes, never the source's
//   chunks that older views already saw;
// - a view created mid-stream backfills from a snapshot holding every row the older views saw,
//   and the rows after it stream in;
// - successful statements on a table joined with the source commit with it.
// Oracle: once the source's last event is committed, every view equals its query recomputed by
// the batch executor (a replay of the committed events and the table).

import { describe, expect, it } from 'vitest';
import { openHarness, type Harness } from './stream-harness.js';
import { sourceChunks } from '../../connectors/source-manager.js';

const BID = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';
const EVENTS = 30_000;

const VIEWS: readonly (readonly [string, string])[] = [
  ['m_count', 'select auction % 7 as a, count(*) as n, sum(price) as s, max(price) as hi from bid group by auction % 7'],
  ['m_join', 'select t.k, count(*) as n, sum(t.v) as sv from bid join t on bid.auction % 5 = t.k group by t.k'],
  ['m_rows', 'select auction, bidder, price from bid where price % 13 = 0'],
];
const LATE: readonly [string, string] = ['m_late', 'select bidder % 11 as b, count(*) as n, min(price) as lo from bid group by bidder % 11'];

async function committed(h: Harness): Promise<number> {
  const rows = (await h.run("select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = 'bid'")).rows;
  return Number(rows[0]![0]);
}

describe('source chunks inside the open epoch', () => {
  it('a failing statement, a new view and table writes while a source runs: every view equals its query', async () => {
    // Chunks of 256 rows (one generator chunk), barriers every second (the harness's default): nearly always some chunks in the open epoch.
    const chunkRows = sourceChunks.rows;
    sourceChunks.rows = 256;
    const h = await openHarness();
    try {
      await h.run('create table t (k int primary key, v int check (v < 100))');
      await h.run('insert into t values (0, 0), (1, 1), (2, 2)');
      // 20,000 events a second: the stream lasts about 1.5 s, many chunks per barrier.
      await h.run(
        `create source bid (${BID}) with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${EVENTS}', nexmark.split.num = '1', nexmark.max.chunk.size = '256', nexmark.min.event.gap.in.ns = '50000')`,
      );
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      let late = false;
      for (let i = 0; (await committed(h)) < EVENTS; i++) {
        await h.run(`insert into t values (${i % 5}, ${i % 100}) on conflict (k) do update set v = excluded.v`);
        // Its first row is written (and recorded) before the CHECK fails on the second.
        await expect(h.run(`insert into t values (${10 + (i % 40)}, 1), (${60 + (i % 40)}, 500)`)).rejects.toThrow(/check constraint/);
        if (!late && (await committed(h)) > 0) {
          await h.run(`create materialized view ${LATE[0]} as ${LATE[1]}`);
          late = true;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!late) await h.run(`create materialized view ${LATE[0]} as ${LATE[1]}`);
      for (const [name, query] of [...VIEWS, LATE]) expect(await h.lines(`select * from ${name}`), name).toEqual(await h.lines(query));
      // The failing statements left nothing behind.
      expect(await h.lines('select count(*) from t where k >= 10')).toEqual(['0']);
    } finally {
      await h.close();
      sourceChunks.rows = chunkRows;
    }
  }, 120_000);
});
