// The windowed forms of bench/nexmark/ (qN-window.sql, `bench/nexmark.ts --form window`): q5, q7
// and q8 over sources with WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND, run as the
// benchmark runs them over 200,000 events (20 seconds of event time), must be non-empty and equal
// their query recomputed as a batch SELECT over the same events, restricted to the windows closed
// at the end (window start + 10 s at or below the least of the sources' watermarks: their latest
// date_time - 4 s). q7's bid at t joins the windows ending in [t, t + 10 s]: its row is final once
// t's own 10-second window has closed.
import { describe, expect, it } from 'vitest';
import { querySql } from '../../bench/nexmark.js';
import { streamPlanDefaults } from '../../executor/ddl/create-materialized-view.js';
import { STREAM_PLAN_VERSION } from '../../planner/stream/index.js';
import { canonical, runAndInspect } from './inspect-run.js';

const EVENTS = 200_000;

describe('nexmark windowed forms (qN-window.sql)', () => {
  const closed: Record<string, string> = {
    q5: "q.starttime + interval '10 seconds'",
    q7: "date_bin(interval '10 seconds', q.date_time, timestamp '1970-01-01') + interval '10 seconds'",
    q8: "q.starttime + interval '10 seconds'",
  };
  for (const query of ['q5', 'q7', 'q8']) {
    it(`${query}: the closed windows equal the query recomputed in batch, non-empty`, async () => {
      const { select, sources } = querySql(query, 'window');
      const watermark = `least(${sources.map((source) => `(SELECT max(date_time) FROM ${source})`).join(', ')}) - interval '4 seconds'`;
      await runAndInspect({ query, form: 'window', events: EVENTS, barrierIntervalMs: 50 }, async (run) => {
        const view = await run(`SELECT * FROM nexmark_${query}`);
        const batch = await run(`SELECT * FROM (${select}) AS q WHERE ${closed[query]} <= ${watermark}`);
        expect(view.length).toBeGreaterThan(0);
        expect(canonical(view)).toEqual(canonical(batch));
      });
    }, 180_000);
  }

  // q5's two counts per (window, auction), grouped in two key orders and both cleaned by watermark
  // on window_start (key 0 of one, key 1 of the other), are one aggregate feeding the join and the
  // max per window (planner/stream/share.ts), at parallelism 1 and 2.
  it.each([1, 2])('q5 at parallelism %i: one count per (window, auction), the closed windows equal the batch query', async (parallelism) => {
    const { select, sources } = querySql('q5', 'window');
    const watermark = `(SELECT max(date_time) FROM ${sources[0]}) - interval '4 seconds'`;
    await runAndInspect({ query: 'q5', form: 'window', events: EVENTS, barrierIntervalMs: 50, parallelism, cores: 2 }, async (run) => {
      const plan = (await run('EXPLAIN ANALYZE MATERIALIZED VIEW nexmark_q5')).map((row) => row.join(' ')).join('\n');
      expect(plan.match(/StreamHashAggregate Aggregate count\(\*\)/g)?.length).toBe(1);
      expect(plan).toMatch(/StreamShared output of operator \d+ \(group2, group1, count\)/);
      const view = await run('SELECT * FROM nexmark_q5');
      const batch = await run(`SELECT * FROM (${select}) AS q WHERE ${closed['q5']} <= ${watermark}`);
      expect(view.length).toBeGreaterThan(0);
      expect(canonical(view)).toEqual(canonical(batch));
    });
  }, 180_000);

  // q7's join keeps its bids (behind their watermark filter) by source row id from plan version 9,
  // by `key ++ row` before: both layouts give the recomputed rows.
  it.each([STREAM_PLAN_VERSION, 8])('q7 at plan version %i: the bids side of the join by its layout, the closed windows equal the batch query', async (version) => {
    const { select, sources } = querySql('q7', 'window');
    const watermark = `(SELECT max(date_time) FROM ${sources[0]}) - interval '4 seconds'`;
    streamPlanDefaults.version = version;
    try {
      await runAndInspect({ query: 'q7', form: 'window', events: EVENTS, barrierIntervalMs: 50 }, async (run) => {
        const plan = (await run('EXPLAIN ANALYZE MATERIALIZED VIEW nexmark_q7')).map((row) => row.join(' ')).join('\n');
        expect(plan).toMatch(/StreamHashJoin .*left rows by key(?<byId> and source row id)?,/);
        expect(plan.includes('left rows by key and source row id')).toBe(version >= 9);
        const view = await run('SELECT * FROM nexmark_q7');
        const batch = await run(`SELECT * FROM (${select}) AS q WHERE ${closed['q7']} <= ${watermark}`);
        expect(view.length).toBeGreaterThan(0);
        expect(canonical(view)).toEqual(canonical(batch));
      });
    } finally {
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
    }
  }, 180_000);
});
