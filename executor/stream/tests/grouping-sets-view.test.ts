// GROUPING SETS / ROLLUP / CUBE and GROUPING() in materialized views
// (planner/rules/grouping-sets-expand.ts: an expand below one aggregate keyed by the set id, each
// empty set a global aggregate under a UNION ALL): random workloads
// of inserts, updates and deletes with NULL keys, and after every epoch each view equals its query
// recomputed by the batch executor's one-pass grouping-sets aggregate (itself checked against
// PostgreSQL 15 in executor/batch/tests/grouping-sets.test.ts).

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { assertViewsEqualRecomputation, openHarness } from './stream-harness.js';

const VIEWS: readonly (readonly [string, string])[] = [
  ['rolled', 'select a, b, sum(v) as s, count(*) as n, grouping(a, b) as g from t group by rollup (a, b)'],
  ['cubed', 'select a, b, min(v) as lo, max(v) as hi, count(distinct v) as d from t group by cube (a, b)'],
  ['sets', 'select a, b, avg(v) as m, grouping(b) as gb from t group by grouping sets ((a), (b), (), (a, b))'],
  ['filtered', 'select a, count(*) as n from t group by rollup (a) having count(*) > 1'],
  ['joined', 'select t.a, u.c, sum(t.v) as s from t join u on t.a = u.a group by grouping sets ((t.a), (u.c), ())'],
  ['grouping_only', 'select a, grouping(a) as g, count(*) as n from t group by a'],
];

type Op = { kind: 't'; id: number; a: number | null; b: number | null; v: number | null } | { kind: 'u'; a: number; c: number | null } | { kind: 'delT'; id: number };

const small = (max: number) => fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max }) }, { weight: 1, arbitrary: fc.constant(null) });

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('t' as const), id: fc.integer({ min: 0, max: 11 }), a: small(2), b: small(2), v: small(9) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('u' as const), a: fc.integer({ min: 0, max: 2 }), c: small(1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delT' as const), id: fc.integer({ min: 0, max: 11 }) }) },
);

const lit = (v: number | null) => (v === null ? 'NULL' : String(v));

function sql(o: Op): string {
  if (o.kind === 't') return `insert into t values (${o.id}, ${lit(o.a)}, ${lit(o.b)}, ${lit(o.v)}) on conflict (id) do update set a = excluded.a, b = excluded.b, v = excluded.v`;
  if (o.kind === 'u') return `insert into u values (${o.a}, ${lit(o.c)}) on conflict (a) do update set c = excluded.c`;
  return `delete from t where id = ${o.id}`;
}

const SCHEMA = 'create table t (id int primary key, a int, b int, v int); create table u (a int primary key, c int)';

describe('GROUPING SETS in materialized views', () => {
  it('plans an expand below one aggregate, and the empty set as a global aggregate', async () => {
    const h = await openHarness();
    try {
      await h.run(SCHEMA);
      const plan = (await h.run(`explain create materialized view m as ${VIEWS[0]![1]}`)).rows.map((r) => r[0]).join('\n');
      expect(plan.match(/StreamHashAggregate/g)?.length).toBe(2);
      expect(plan).toMatch(/StreamLateral NestedLoopJoin inner lateral \/ TableFunction generate_series\(0, 1\)/);
      expect(plan).toMatch(/group by group1, group2, grouping_set/);
    } finally {
      await h.close();
    }
  });

  it('equal their batch recomputation after every epoch, deletes included', async () => {
    await assertViewsEqualRecomputation({ schema: SCHEMA, op, sql, views: VIEWS });
  }, 120_000);
});
