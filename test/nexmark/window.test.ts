// The windowed forms of bench/nexmark/ (qN-window.sql, `bench/nexmark.ts --form window`): q5, q7
// and q8 over sources with WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND, run as the
// benchmark runs them over 200,000 events (20 seconds of event time), must be non-empty and equal
// their query recomputed as a batch SELECT over the same events, restricted to the windows closed
// at the end (window start + 10 s at or below the least of the sources' watermarks: their latest
// date_time - 4 s). q7's bid at t joins the windows ending in [t, t + 10 s]: its row is final once
// t's own 10-second window has closed.
import { describe, expect, it } from 'vitest';
import { querySql } from '../../bench/nexmark.js';
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
});
