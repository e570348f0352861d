// Dynamic filters (`v > (SELECT max(x) FROM b)`) and temporal filters (`ts > now() - interval ...`):
// random workloads, and after every epoch each view equals its query recomputed by the batch
// executor (for temporal filters: with now() replaced by the epoch time the views saw, which the
// test controls through the stream manager's clock). Also: the plans use StreamDynamicFilter, and
// a barrier without any write expires rows.

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openHarness, type Harness } from './stream-harness.js';

const DYNAMIC_VIEWS: readonly (readonly [string, string])[] = [
  ['d_gt_max', 'select k, v from a where v > (select max(x) from b)'],
  ['d_le_min', 'select k, v, g from a where v <= (select min(x) from b) and g = 1'],
  ['d_eq_flipped', 'select k from a where (select max(x) from b) = v'],
  ['d_lt_count', 'select k, v from a where v < (select count(*) from b)'],
  ['d_ge_avg_grouped', 'select g, count(*) as n from a where v >= (select avg(x) from b) group by g'],
  ['d_one_row', 'select k, v from a where v > (select x from b where k = 0)'],
  ['d_two', 'select k from a where v > (select min(x) from b) and v < (select max(x) from b)'],
];

type DynamicOp =
  | { kind: 'a'; k: number; v: number | null; g: number }
  | { kind: 'b'; k: number; x: number | null }
  | { kind: 'delA'; k: number }
  | { kind: 'delB'; k: number }
  | { kind: 'shiftB'; delta: number };

const small = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: -6, max: 6 }) }, { weight: 1, arbitrary: fc.constant(null) });
const dynamicOp: fc.Arbitrary<DynamicOp> = fc.oneof(
  fc.record({ kind: fc.constant('a' as const), k: fc.integer({ min: 0, max: 12 }), v: small, g: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('b' as const), k: fc.integer({ min: 0, max: 4 }), x: small }),
  fc.record({ kind: fc.constant('delA' as const), k: fc.integer({ min: 0, max: 12 }) }),
  fc.record({ kind: fc.constant('delB' as const), k: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ kind: fc.constant('shiftB' as const), delta: fc.integer({ min: -3, max: 3 }) }),
);

const lit = (value: number | null): string => (value === null ? 'NULL' : String(value));

function dynamicSql(op: DynamicOp): string {
  switch (op.kind) {
    case 'a':
      return `insert into a values (${op.k}, ${lit(op.v)}, ${op.g}) on conflict (k) do update set v = excluded.v, g = excluded.g`;
    case 'b':
      return `insert into b values (${op.k}, ${lit(op.x)}) on conflict (k) do update set x = excluded.x`;
    case 'delA':
      return `delete from a where k = ${op.k}`;
    case 'delB':
      return `delete from b where k = ${op.k}`;
    case 'shiftB':
      return `update b set x = x + ${op.delta}`;
  }
}

async function compareViews(h: Harness, views: readonly (readonly [string, string])[], step: string, recompute: (query: string) => string = (q) => q): Promise<void> {
  for (const [name, query] of views) {
    expect(await h.lines(`select * from ${name}`), `${name} after ${step}`).toEqual(await h.lines(recompute(query)));
  }
}

async function checkDynamic(input: { before: DynamicOp[]; after: DynamicOp[] }): Promise<void> {
  const h = await openHarness();
  try {
    await h.run('create table a (k int primary key, v int, g int); create table b (k int primary key, x int)');
    for (const op of input.before) await h.run(dynamicSql(op));
    for (const [name, query] of DYNAMIC_VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    await compareViews(h, DYNAMIC_VIEWS, 'backfill');
    for (const op of input.after) {
      await h.run(dynamicSql(op));
      await compareViews(h, DYNAMIC_VIEWS, dynamicSql(op));
    }
  } finally {
    await h.close();
  }
}

const TEMPORAL_VIEWS: readonly (readonly [string, string])[] = [
  ['t_last_hour', "select k, ts from e where ts > now() - interval '1 hour'"],
  ['t_between', "select k from e where ts between now() - interval '10 minutes' and now()"],
  ['t_due', "select k, ts from e where ts + interval '5 minutes' <= now()"],
  ['t_count', "select count(*) as n from e where now() - interval '30 minutes' <= ts"],
  ['t_local', "select k from e where ts::timestamp >= now()::timestamp - interval '20 minutes' and k > 2"],
];

type TemporalOp = { kind: 'insert'; k: number; minutes: number } | { kind: 'delete'; k: number } | { kind: 'advance'; minutes: number };

const temporalOp: fc.Arbitrary<TemporalOp> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), k: fc.integer({ min: 0, max: 15 }), minutes: fc.integer({ min: -80, max: 20 }) }),
  fc.record({ kind: fc.constant('delete' as const), k: fc.integer({ min: 0, max: 15 }) }),
  fc.record({ kind: fc.constant('advance' as const), minutes: fc.integer({ min: 0, max: 25 }) }),
);

const START = Date.parse('2026-01-01T12:00:00Z');

async function checkTemporal(input: { before: TemporalOp[]; after: TemporalOp[] }): Promise<void> {
  const h = await openHarness();
  const ticker = h.engine.temporalTicker!;
  let now = START;
  ticker.core.streams.clock = () => now;
  const at = (millis: number) => `timestamptz '${new Date(millis).toISOString()}'`;
  const apply = async (op: TemporalOp) => {
    if (op.kind === 'insert') await h.run(`insert into e values (${op.k}, ${at(now + op.minutes * 60_000)}) on conflict (k) do update set ts = excluded.ts`);
    else if (op.kind === 'delete') await h.run(`delete from e where k = ${op.k}`);
    else {
      now += op.minutes * 60_000;
      // A barrier without any write: the epoch time moves on.
      await ticker.tick();
    }
  };
  try {
    await h.run('create table e (k int primary key, ts timestamptz)');
    for (const op of input.before) await apply(op);
    for (const [name, query] of TEMPORAL_VIEWS) await h.run(`create materialized view ${name} as ${query}`);
    const recompute = (query: string) => query.replaceAll('now()', at(now));
    await compareViews(h, TEMPORAL_VIEWS, 'backfill', recompute);
    for (const op of input.after) {
      await apply(op);
      await compareViews(h, TEMPORAL_VIEWS, JSON.stringify(op), recompute);
    }
  } finally {
    await h.close();
  }
}

const runs = Number(process.env.STREAM_PROPERTY_RUNS ?? 8);

describe('dynamic filters', () => {
  it('plan as StreamDynamicFilter over the rows and the subquery', async () => {
    const h = await openHarness();
    try {
      await h.run('create table a (k int primary key, v int, g int); create table b (k int primary key, x int)');
      const plan = (await h.run('explain create materialized view m as select k from a where v > (select max(x) from b) and g = 1')).rows.map((r) => r[0]).join('\n');
      expect(plan).toMatch(/StreamDynamicFilter \(v > scalar subquery\) \(stateful; state: #\d+ input rows by compared value, #\d+ subquery rows\)/);
      expect(plan).toMatch(/StreamFilter \(g = 1\)/);
      expect(plan).not.toMatch(/NestedLoopJoin/);
    } finally {
      await h.close();
    }
  });

  it(`equal their batch recomputation after every epoch (${runs} random workloads)`, async () => {
    const workload = fc.record({ before: fc.array(dynamicOp, { maxLength: 10 }), after: fc.array(dynamicOp, { minLength: 1, maxLength: 25 }) });
    await fc.assert(fc.asyncProperty(workload, checkDynamic), { numRuns: runs, endOnFailure: true });
  }, 120_000);
});

describe('temporal filters', () => {
  it('plan as StreamDynamicFilter with a temporal bound', async () => {
    const h = await openHarness();
    try {
      await h.run('create table e (k int primary key, ts timestamptz)');
      const plan = (await h.run("explain create materialized view m as select k from e where ts between now() - interval '1 hour' and now()")).rows.map((r) => r[0]).join('\n');
      expect(plan.match(/StreamDynamicFilter/g)).toHaveLength(2);
      expect(plan).toMatch(/temporal bound/);
    } finally {
      await h.close();
    }
  });

  it(`equal their batch recomputation at the epoch time after every epoch (${runs} random workloads)`, async () => {
    const workload = fc.record({ before: fc.array(temporalOp, { maxLength: 10 }), after: fc.array(temporalOp, { minLength: 1, maxLength: 25 }) });
    await fc.assert(fc.asyncProperty(workload, checkTemporal), { numRuns: runs, endOnFailure: true });
  }, 120_000);

  it('the barrier loop expires rows without any write', async () => {
    const h = await openHarness();
    const streams = h.engine.temporalTicker!.core.streams;
    let now = START;
    streams.clock = () => now;
    try {
      await h.run("create table e (k int primary key, ts timestamptz); insert into e values (1, timestamptz '2026-01-01 11:30:00+00'), (2, timestamptz '2026-01-01 11:50:00+00')");
      await h.run("create materialized view recent as select k from e where ts > now() - interval '1 hour'");
      expect(await h.lines('select * from recent')).toEqual(['1', '2']);
      now = Date.parse('2026-01-01T12:40:00Z');
      // No statement from here on: the ticker's own barrier (every --barrier-interval-ms) must expire row 1.
      let rows: string[] = [];
      for (let attempt = 0; attempt < 100; attempt++) {
        rows = await h.lines('select * from recent');
        if (rows.length < 2) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(rows).toEqual(['2']);
    } finally {
      await h.close();
    }
  }, 30_000);
});
