// The random workload of the streaming property tests (incremental-equals-recompute.test.ts,
// chunked-epoch.test.ts): three tables, views over them of every operator kind (aggregates, joins
// of every type, top-N, group top-N, DISTINCT, set operations, TUMBLE / HOP windows, a self-join,
// dynamic filters, views on views), random INSERT / UPDATE / DELETE statements on the tables, and
// `chunkEpochs`, which splits each epoch's changes into chunks as a source's rows are split.

import fc from 'fast-check';
import type { Harness } from './stream-harness.js';

/**
 * Splits every epoch's changes into chunks inside the epoch, as a source's rows go
 * (executor/connectors/source-manager.ts): the stream manager pushes what it has recorded through the
 * views after every `size()` changes, mid-statement, and the commit's flush pushes the rest.
 */
export function chunkEpochs(h: Harness, size: () => number): void {
  const streams = h.engine.temporalTicker!.core.streams;
  const record = streams.record.bind(streams);
  let left = size();
  streams.record = (relationId, row, sign) => {
    record(relationId, row, sign);
    if (--left > 0) return;
    streams.push();
    left = size();
  };
}

export const TABLES = [
  'create table t1 (k int primary key, g int, v int, ts timestamp)',
  'create table t2 (k int primary key, g int, w int)',
  'create table t3 (a int, b text)',
];

/** Views: name and defining query. Later views may read earlier ones. */
export const VIEWS: readonly (readonly [string, string])[] = [
  ['v_agg', 'select g, count(*) as n, sum(v) as s, min(v) as lo, max(v) as hi, avg(v) as mean, count(distinct v) as dv, count(v) filter (where v > 0) as pos from t1 group by g'],
  // The incremental aggregate (executor/stream/hash-aggregate.ts): every retractable kind, FILTER,
  // DISTINCT, numeric sums mixing scales, min/max whose current value gets deleted, text and
  // timestamp extremes, groups emptied and refilled (g changes, deletes), NULL arguments.
  // Group keys that are expressions (a projection below the aggregate computes them), one of them beside a column.
  ['v_agg_expr_keys', "select g % 3 as g3, date_trunc('hour', ts) as hour, count(*) as n, count(distinct v) filter (where v < 5) as dv, sum(v) filter (where v > 0) as sp, max(v) as hi from t1 group by g % 3, date_trunc('hour', ts)"],
  ['v_agg_expr_key_column', 'select g, v % 4 as v4, count(*) as n, count(distinct k) as dk from t1 group by g, v % 4'],
  ['v_agg_kinds', "select g, bool_and(v > 0) as all_pos, bool_or(v < 0) as any_neg, every(v <> 0) as nonzero, sum(distinct v) as sd, avg(distinct v) as ad, count(*) filter (where v is null) as nulls, min(v) filter (where v > 0) as min_pos, max(v) filter (where v < 3) as max_low, sum(v::int8) as s8, avg(v::int8) as a8 from t1 group by g"],
  ['v_agg_numeric', "select g, sum(case when v > 0 then v * 1.5 when v < -2 then v * 0.25 else v::numeric end) as sn, avg(case when v > 0 then v * 1.5 else v::numeric end) as an, min(v * 0.5) as mn, max(cast(v as text)) as mt, min(ts) as first_ts, count(distinct v % 3) as dm from t1 group by g"],
  ['v_agg_keyless', "select count(*) as n, count(distinct g) as groups, sum(v) as s, avg(v) as a, min(v) as lo, max(v) as hi, bool_and(v >= 0) as all_nonneg, count(v) filter (where g is null) as nullg from t1"],
  ['v_keyless', 'select count(*) as n, sum(v) as s, max(w) as m from t1, t2 where t1.k = t2.k'],
  ['v_strings', "select g, string_agg(b, ',' order by b) as bs, array_agg(a order by a) as as_ from t3 join t1 on t1.k = t3.a group by g"],
  ['v_inner', 'select t1.k as k1, t2.k as k2, v, w from t1 join t2 on t1.g = t2.g'],
  ['v_left', 'select t1.k as k1, t2.k as k2 from t1 left join t2 on t1.g = t2.g and t1.v < t2.w'],
  ['v_right', 'select t1.k as k1, t2.k as k2 from t1 right join t2 on t1.g = t2.g'],
  ['v_full', 'select t1.k as k1, t2.k as k2, t1.v + t2.w as vw from t1 full join t2 on t1.g = t2.g'],
  ['v_nonequi', 'select t1.k as k1, t2.k as k2 from t1 join t2 on t1.v > t2.w'],
  ['v_nullsafe', 'select t1.k as k1, t2.k as k2 from t1 join t2 on t1.g is not distinct from t2.g'],
  ['v_semi', 'select k, v from t1 where exists (select 1 from t2 where t2.g = t1.g)'],
  ['v_anti', 'select k, v from t1 where not exists (select 1 from t2 where t2.g = t1.g and t2.w > t1.v)'],
  ['v_in', 'select k from t1 where g in (select g from t2 where w > 0)'],
  // StreamHashJoin (executor/stream/hash-join.ts) beyond the above: residuals and NULL-safe keys on
  // outer / semi / anti joins, two keys, duplicate rows on both sides (t3 has no key), a join under
  // an aggregate whose join key is updated.
  ['v_full_residual', 'select t1.k as k1, t2.k as k2 from t1 full join t2 on t1.g = t2.g and t1.v <= t2.w'],
  ['v_right_nullsafe', 'select t1.k as k1, t2.k as k2, t2.w from t1 right join t2 on t1.g is not distinct from t2.g and t1.v is distinct from t2.w'],
  ['v_left_two_keys', 'select t1.k as k1, t2.k as k2 from t1 left join t2 on t1.g = t2.g and t1.v = t2.w'],
  ['v_semi_nullsafe', 'select k from t1 where exists (select 1 from t2 where t2.g is not distinct from t1.g and t2.w < t1.v)'],
  ['v_anti_dup', 'select k from t1 where not exists (select 1 from t3 where t3.a = t1.g)'],
  ['v_dup_both', 'select x.b as b1, y.b as b2 from t3 x join t3 y on x.a = y.a'],
  ['v_dup_full', 'select x.b, t1.k from t3 x full join t1 on x.a = t1.g'],
  ['v_join_agg', 'select t2.g, count(*) as n, sum(t1.v) as s from t1 join t2 on t1.k = t2.k group by t2.g'],
  ['v_topn', 'select k, v from t1 order by v desc nulls last, k limit 3'],
  ['v_topn_offset', 'select k, w from t2 order by w, k limit 2 offset 1'],
  ['v_group_topn', 'select k, g, v from (select k, g, v, row_number() over (partition by g order by v nulls first, k) as rn from t1) x where rn <= 2'],
  ['v_rank', 'select k, g, r from (select k, g, rank() over (partition by g order by v) as r from t1) x where r <= 1'],
  ['v_window', 'select k, sum(v) over (partition by g order by k) as running, lag(v) over (partition by g order by k) as prev from t1'],
  ['v_distinct', 'select distinct g, v > 0 as positive from t1'],
  ['v_distinct_on', 'select distinct on (g) g, k, v from t1 order by g, v desc nulls last, k'],
  ['v_union', 'select g from t1 union select g from t2'],
  ['v_union_all', 'select g, v from t1 union all select g, w from t2'],
  ['v_intersect', 'select g from t1 intersect select g from t2'],
  ['v_except', 'select g from t1 except all select g from t2'],
  ['v_tumble', "select window_start, count(*) as n, sum(v) as s from tumble(t1, ts, interval '10 minutes') group by window_start"],
  ['v_hop', "select window_start, window_end, max(v) as m from hop(t1, ts, interval '5 minutes', interval '10 minutes') group by window_start, window_end"],
  ['v_self', 'select a.k as ka, b.k as kb from t1 a join t1 b on a.g = b.g and a.k < b.k'],
  ['v_dynamic', 'select k, v from t1 where v > (select avg(w) from t2)'],
  ['v_scalar', 'select k, v - (select min(w) from t2) as d from t1'],
  ['v_on_agg', 'select g, n * 2 as twice from v_agg where n > 1'],
  ['v_on_join', 'select k1, count(*) as c from v_inner group by k1'],
  ['v_on_on', 'select sum(twice) as total from v_on_agg'],
  ['v_having', 'select g, sum(v) as s from t1 group by g having count(*) >= 2'],
  ['v_case', "select k, case when v is null then 'none' when v > 0 then 'pos' else 'nonpos' end as sign, coalesce(g, -1) as g from t1"],
];

export type Operation =
  | { kind: 'insert1'; k: number; g: number | null; v: number | null; minute: number }
  | { kind: 'insert2'; k: number; g: number | null; w: number | null }
  | { kind: 'insert3'; a: number; b: string }
  | { kind: 'update1'; k: number; v: number | null }
  | { kind: 'update1g'; g: number | null; delta: number }
  | { kind: 'update2'; k: number; g: number | null }
  | { kind: 'delete1'; k: number }
  | { kind: 'delete2'; maxK: number }
  | { kind: 'delete3'; a: number };

const key = fc.integer({ min: 0, max: 9 });
const group = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(null));
const value = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: -5, max: 5 }) }, { weight: 1, arbitrary: fc.constant(null) });

export const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('insert1' as const), k: key, g: group, v: value, minute: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant('insert2' as const), k: key, g: group, w: value }),
  fc.record({ kind: fc.constant('insert3' as const), a: key, b: fc.constantFrom('x', 'y', 'z') }),
  fc.record({ kind: fc.constant('update1' as const), k: key, v: value }),
  fc.record({ kind: fc.constant('update1g' as const), g: group, delta: fc.integer({ min: -2, max: 2 }) }),
  fc.record({ kind: fc.constant('update2' as const), k: key, g: group }),
  fc.record({ kind: fc.constant('delete1' as const), k: key }),
  fc.record({ kind: fc.constant('delete2' as const), maxK: key }),
  fc.record({ kind: fc.constant('delete3' as const), a: key }),
);

function literal(value: number | null): string {
  return value === null ? 'NULL' : String(value);
}

export function sqlOf(op: Operation): string {
  switch (op.kind) {
    case 'insert1':
      return `insert into t1 values (${op.k}, ${literal(op.g)}, ${literal(op.v)}, timestamp '2024-01-01 00:00' + interval '${op.minute} minutes') on conflict (k) do update set g = excluded.g, v = excluded.v, ts = excluded.ts`;
    case 'insert2':
      return `insert into t2 values (${op.k}, ${literal(op.g)}, ${literal(op.w)}) on conflict (k) do update set g = excluded.g, w = excluded.w`;
    case 'insert3':
      return `insert into t3 values (${op.a}, '${op.b}')`;
    case 'update1':
      return `update t1 set v = ${literal(op.v)} where k = ${op.k}`;
    case 'update1g':
      return `update t1 set v = v + ${op.delta} where g ${op.g === null ? 'is null' : `= ${op.g}`}`;
    case 'update2':
      return `update t2 set g = ${literal(op.g)} where k = ${op.k}`;
    case 'delete1':
      return `delete from t1 where k = ${op.k}`;
    case 'delete2':
      return `delete from t2 where k >= ${op.maxK}`;
    case 'delete3':
      return `delete from t3 where a = ${op.a}`;
  }
}
