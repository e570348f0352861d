// Correlated scalar aggregate subqueries in a view's filter (TPC-H q17's shape) become a LEFT join
// with the aggregate grouped by the correlated columns: random workloads, and after every epoch each
// view equals its query recomputed by the batch executor (which runs the subquery per row).

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { assertViewsEqualRecomputation, openHarness } from './stream-harness.js';

const VIEWS: readonly (readonly [string, string])[] = [
  ['q17_like', 'select sum(l.price) as total, count(*) as n from line l, part p where p.pk = l.pk and p.brand = 1 and l.qty < (select 0.5 * avg(l2.qty) from line l2 where l2.pk = p.pk)'],
  ['above_max', 'select l.id from line l where l.qty >= (select max(l2.qty) from line l2 where l2.pk = l.pk and l2.id <> 0)'],
  ['two_keys', 'select l.id from line l where l.price > (select min(l2.price) from line l2 where l2.pk = l.pk and l2.qty = l.qty)'],
];

type Op = { kind: 'line'; id: number; pk: number | null; qty: number | null; price: number } | { kind: 'part'; pk: number; brand: number } | { kind: 'delLine'; id: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  // Dense keys, so rows share (pk, qty) groups often.
  fc.record({ kind: fc.constant('line' as const), id: fc.integer({ min: 0, max: 15 }), pk: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 2 }) }, { weight: 1, arbitrary: fc.constant(null) }), qty: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 2 }) }, { weight: 1, arbitrary: fc.constant(null) }), price: fc.integer({ min: 1, max: 9 }) }),
  fc.record({ kind: fc.constant('part' as const), pk: fc.integer({ min: 0, max: 2 }), brand: fc.integer({ min: 0, max: 1 }) }),
  fc.record({ kind: fc.constant('delLine' as const), id: fc.integer({ min: 0, max: 15 }) }),
);

const lit = (v: number | null) => (v === null ? 'NULL' : String(v));

function sql(o: Op): string {
  if (o.kind === 'line') return `insert into line values (${o.id}, ${lit(o.pk)}, ${lit(o.qty)}, ${o.price}) on conflict (id) do update set pk = excluded.pk, qty = excluded.qty, price = excluded.price`;
  if (o.kind === 'part') return `insert into part values (${o.pk}, ${o.brand}) on conflict (pk) do update set brand = excluded.brand`;
  return `delete from line where id = ${o.id}`;
}

describe('correlated scalar aggregate subqueries in views', () => {
  it('plan as a keyed LEFT join, not a per-row subquery', async () => {
    const h = await openHarness();
    try {
      await h.run('create table line (id int primary key, pk int, qty int, price int); create table part (pk int primary key, brand int)');
      const plan = (await h.run(`explain create materialized view m as ${VIEWS[0]![1]}`)).rows.map((r) => r[0]).join('\n');
      expect(plan).toMatch(/StreamHashJoin HashJoin left/);
      expect(plan).toMatch(/group by pk/);
    } finally {
      await h.close();
    }
  });

  it('equal their batch recomputation after every epoch', async () => {
    await assertViewsEqualRecomputation({ schema: 'create table line (id int primary key, pk int, qty int, price int); create table part (pk int primary key, brand int)', op, sql, views: VIEWS });
  }, 120_000);
});
