// StreamLateral's generate_series path (lateral.ts: HOP without the batch template): views over
// HOP windows on timestamp and timestamptz columns equal the same SELECT run by the batch executor
// (which runs the generic NestedLoopJoin over generate_series) after inserts, deletes and updates,
// NULL times, infinite times (dropped, recorded); a bad slide refused alike.
import { describe, expect, it } from 'vitest';
import { harnessForEachTest, runAndCompareViews } from './stream-harness.js';

const h = harnessForEachTest();

const VIEWS: [string, string][] = [
  ['h_ts', "select id, v, window_start, window_end from hop(t, ts, interval '5 minutes', interval '15 minutes')"],
  ['h_tz', "select id, window_start, window_end from hop(t, tz, interval '30 seconds', interval '2 minutes')"],
  ['h_agg', "select window_start, count(*) as n, sum(v) as s from hop(t, ts, interval '1 hour', interval '1 day') group by window_start"],
  ['h_where', "select window_end, max(v) as m from hop(t, ts, interval '10 minutes', interval '20 minutes') where v > 2 group by window_end"],
];

describe('StreamLateral over generate_series (HOP)', () => {
  it('equals the batch recomputation after every statement', async () => {
    await h.run('create table t (id int primary key, ts timestamp, tz timestamptz, v int)');
    await runAndCompareViews(h, VIEWS, [
      "insert into t values (1, '2024-03-10 01:59:30', '2024-03-10 01:59:30+00', 1), (2, '2024-03-10 02:07:00', '2024-03-10 02:07:00+00', 5)",
      "insert into t values (3, null, null, 2), (4, '2024-12-31 23:55:00', '2024-12-31 23:59:59.5+00', 7)",
      "insert into t values (5, '2024-03-10 02:00:00', '2024-03-10 02:00:00+00', 3), (6, '2024-03-10 02:07:00', '2024-03-10 02:07:00+05', 5)",
      "update t set ts = ts + interval '3 minutes', v = v + 1 where id in (1, 2, 5)",
      'delete from t where id = 6',
      "update t set tz = '2024-06-01 12:00:00-07' where id = 3",
      'delete from t where id in (1, 4)',
    ]);
    // By hand: row 2 (02:10:00 after its update) lies in three 15-minute windows sliding by 5.
    expect(await h.lines('select window_start from h_ts where id = 2')).toEqual(['2024-03-10 02:00:00', '2024-03-10 02:05:00', '2024-03-10 02:10:00']);
  });

  it('an infinite time has no window: the row is dropped and the error recorded', async () => {
    await h.run('create table t (id int primary key, ts timestamp)');
    await h.run("create materialized view inf as select id, window_start from hop(t, ts, interval '5 minutes', interval '10 minutes')");
    await h.run("insert into t values (1, 'infinity'), (2, '-infinity'), (3, '2024-01-01 00:01:00')");
    expect(await h.lines('select * from inf')).toEqual(['3 | 2023-12-31 23:55:00', '3 | 2024-01-01 00:00:00']);
    expect(await h.lines("select error_count, message from oxbow_catalog.view_errors where view_name = 'inf'")).toEqual(['2 | timestamp out of range']);
  });

  it('a window whose size is not a multiple of its slide is refused by the view and by the query alike', async () => {
    await h.run('create table t (id int primary key, ts timestamp)');
    await h.run("insert into t values (1, '2024-01-01 00:00:00'), (2, null)");
    await expect(h.run("create materialized view bad as select id, window_start from hop(t, ts, interval '4 minutes', interval '10 minutes')")).rejects.toMatchObject({ code: '22023' });
    await expect(h.run("select id, window_start from hop(t, ts, interval '4 minutes', interval '10 minutes')")).rejects.toMatchObject({ code: '22023' });
  });
});
