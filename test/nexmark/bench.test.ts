// The Nexmark benchmark at CI size (a smoke test of bench/nexmark.ts, not a timing): each query of
// bench/nexmark/ (q0-q5, q7, q8) runs as a view over the generator sources in an in-process
// engine until every event is committed; then the view must equal the same SELECT recomputed in
// batch over the sources' rows, be non-empty, and the sources must hold the spec's share of events.
import { describe, expect, it } from 'vitest';
import { ALL_QUERIES, querySql, runNexmarkQuery } from '../../bench/nexmark.js';

const EVENTS = 10_000;
const SHARE = { bid: 46 / 50, auction: 3 / 50, person: 1 / 50 };

function canonical(rows: unknown[][]): string[] {
  return rows.map((row) => JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))).sort();
}

describe('nexmark bench (smoke)', () => {
  for (const query of ALL_QUERIES) {
    it(`${query}: the view equals its query recomputed in batch`, async () => {
      const { sql, sources } = querySql(query);
      const select = sql.replace(/^[\s\S]*?\bAS\b\s*/i, '').replace(/;\s*$/, '');
      let checked = false;
      const result = await runNexmarkQuery({
        query,
        events: EVENTS,
        splits: 2,
        chunkSize: 512,
        barrierIntervalMs: 50,
        inspect: async (run) => {
          for (const source of sources) expect(await run(`SELECT count(*) FROM ${source}`)).toEqual([[BigInt(EVENTS * SHARE[source])]]);
          const view = await run(`SELECT * FROM nexmark_${query}`);
          const batch = await run(select);
          expect(batch.length).toBeGreaterThan(0);
          expect(canonical(view)).toEqual(canonical(batch));
          checked = true;
        },
      });
      expect(checked).toBe(true);
      expect(result.seconds).toBeGreaterThan(0);
    }, 120_000);
  }
});
