// The Nexmark benchmark at CI size (a smoke test of bench/nexmark.ts, not a timing): each query of
// bench/nexmark/ (q0-q5, q7, q8) runs as a view over the generator sources in an in-process
// engine until every event is committed; then the view must equal the same SELECT recomputed in
// batch over the sources' rows, be non-empty, and the sources must hold the spec's share of events.
import { describe, expect, it } from 'vitest';
import { ALL_QUERIES, querySql } from '../../bench/nexmark.js';
import { canonical, runAndInspect, SMOKE } from './inspect-run.js';

const EVENTS = 10_000;
const SHARE = { bid: 46 / 50, auction: 3 / 50, person: 1 / 50 };

describe('nexmark bench (smoke)', () => {
  for (const query of ALL_QUERIES) {
    it(`${query}: the view equals its query recomputed in batch`, async () => {
      const { select, sources } = querySql(query);
      const result = await runAndInspect({ query, events: EVENTS, ...SMOKE }, async (run) => {
        for (const source of sources) expect(await run(`SELECT count(*) FROM ${source}`)).toEqual([[BigInt(EVENTS * SHARE[source])]]);
        const view = await run(`SELECT * FROM nexmark_${query}`);
        const batch = await run(select);
        expect(batch.length).toBeGreaterThan(0);
        expect(canonical(view)).toEqual(canonical(batch));
      });
      expect(result.seconds).toBeGreaterThan(0);
    }, 120_000);
  }
});
