// A projection of plain columns over a LATERAL (dataflow.ts): the LATERAL emits the projected rows
// and the projection passes them through, on HOP's series path and on the batch template's path
// (generate_series over integers, unnest). The views equal the same SELECT run by the batch
// executor after inserts, updates and deletes, and EXPLAIN ANALYZE still lists both operators with
// the rows that crossed them.

import { describe, expect, it } from 'vitest';
import { harnessForEachTest, runAndCompareViews } from './stream-harness.js';

const h = harnessForEachTest();

const VIEWS: [string, string][] = [
  ['series', 'select id, g from t, generate_series(1, t.n) as g'],
  ['arrays', 'select g, id from t, unnest(t.tags) as g'],
  ['hops', "select window_start, id from hop(t, ts, interval '5 minutes', interval '15 minutes')"],
  ['hop_counts', "select k, window_start, count(*) as c from hop(t, ts, interval '5 minutes', interval '15 minutes') group by window_start, k"],
  // The window start twice and between the row's columns (the series path writes every slot of it).
  ['hops_twice', "select window_start as a, id, window_start as b, k from hop(t, ts, interval '5 minutes', interval '15 minutes')"],
];

describe('a projection of plain columns over a LATERAL', () => {
  it('equals the batch recomputation after every statement', async () => {
    await h.run('create table t (id int primary key, k int, n int, tags text[], ts timestamp)');
    await runAndCompareViews(h, VIEWS, [
      "insert into t values (1, 1, 3, '{a,b}', '2024-01-01 00:03:00'), (2, 2, 0, '{}', '2024-01-01 00:07:00'), (3, 1, 2, null, null)",
      "insert into t values (4, 2, 1, '{c,c,d}', '2024-01-01 00:10:00')",
      "update t set n = n + 1, tags = array_append(tags, 'z'), ts = ts + interval '4 minutes' where id in (1, 2)",
      'delete from t where id = 4',
      'update t set k = 3 where id = 3',
      'delete from t where id in (1, 3)',
    ]);
    // The projection still shows in EXPLAIN ANALYZE, with as many rows out as the LATERAL's.
    const lines = (await h.run('explain analyze series')).rows.map((row) => String(row[0]));
    const project = lines.find((line) => line.trim().startsWith('StreamProject id, g'))!;
    const lateral = lines.find((line) => line.trim().startsWith('StreamLateral'))!;
    const out = (line: string) => /out=(\d+)/.exec(line)![1];
    expect(out(project)).toBe(out(lateral));
    expect(Number(out(project))).toBeGreaterThan(0);
  });
});
