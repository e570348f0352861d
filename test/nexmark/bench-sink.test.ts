// The sink form of the Nexmark benchmark (bench/nexmark.ts --form sink) at CI size: q0, q1 and q4
// run as CREATE SINK nexmark_qN AS <the query> WITH (connector = 'blackhole') until every event is
// committed; then the blackhole sink must have received the query's rows: for the append-only q0
// and q1 exactly one insert per row of the query recomputed in batch, for the aggregate q4 at
// least one change per group (a group's changed average is a delete and an insert). q0 again at
// parallelism 2, where the blackhole sink runs as a source fragment (its workers count its changes).
import { describe, expect, it } from 'vitest';
import { querySql } from '../../bench/nexmark.js';
import { runAndInspect, SMOKE } from './inspect-run.js';

const EVENTS = 10_000;

describe('nexmark bench, sink form (smoke)', () => {
  for (const [query, parallelism] of [['q0', 1], ['q1', 1], ['q4', 1], ['q0', 2]] as const) {
    it(`${query}${parallelism > 1 ? ` at parallelism ${parallelism}` : ''}: the blackhole sink receives the query's rows`, async () => {
      const { select } = querySql(query);
      await runAndInspect({ query, events: EVENTS, ...SMOKE, form: 'sink', parallelism }, async (run) => {
        const batch = await run(select);
        expect(batch.length).toBeGreaterThan(0);
        expect(await run(`SELECT count(*) FROM pg_class WHERE relname = 'nexmark_${query}' AND relkind = 'm'`)).toEqual([[0n]]);
        const delivered = async () => Number((await run(`SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = 'nexmark_${query}'`))[0]?.[0] ?? -1);
        const deadline = Date.now() + 30_000;
        while ((await delivered()) < batch.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (query === 'q4') expect(await delivered()).toBeGreaterThanOrEqual(batch.length);
        else expect(await delivered()).toBe(batch.length);
      });
    }, 120_000);
  }
});
