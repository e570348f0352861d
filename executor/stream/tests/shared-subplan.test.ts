// Common-subplan sharing (planner/stream/share.ts, executor/stream/dataflow.ts): a view whose plan
// repeats a subtree runs it once and feeds both parents. Views with repeated subtrees (Nexmark q5's
// shape over a table: HOP + count grouped by the same keys in two orders under a join; an aggregate
// UNION ALL itself; a keyless aggregate cross-joined with itself, whose one row comes at creation)
// equal their batch recomputation after the backfill and after every statement of random
// workloads; EXPLAIN, EXPLAIN ANALYZE and state_size show the shared leaf; a view on RocksDB keeps
// sharing and stays equal to its recomputation across a restart.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import { planStream } from '../../../planner/stream/index.js';
import { StreamManager } from '../stream-manager.js';
import { formatChanges, type ChangeBatch } from '../change-batch.js';
import { changes } from './fixture-lines.js';
import { assertViewsEqualRecomputation, expectViewsEqualQueries, openHarness, type Harness } from './stream-harness.js';

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const HOP = "hop(t, ts, interval '2 minutes', interval '10 minutes')";

/** Nexmark q5 over a table: the auctions with the most bids per window. */
const Q5 = `select a.k, a.n, a.ws from (
    select k, count(*) as n, window_start as ws from ${HOP} group by window_start, k
  ) as a join (
    select max(c.n) as m, c.ws from (select count(*) as n, window_start as ws from ${HOP} group by k, window_start) as c group by c.ws
  ) as b on a.ws = b.ws and a.n >= b.m`;

const VIEWS: [string, string][] = [
  ['q5', Q5],
  ['twice', 'select g, sum(v) as s, count(*) as n from t group by g union all select g, sum(v) as s, count(*) as n from t group by g'],
  ['swapped', 'select x.g, x.k, x.c, y.c as d from (select g, k, count(*) as c from t group by g, k) as x join (select k, g, count(*) as c from t group by k, g) as y on x.g = y.g and x.k = y.k'],
  ['keyless', 'select x.n, x.s, y.n as n2, y.s as s2 from (select count(*) as n, sum(v) as s from t) as x cross join (select count(*) as n, sum(v) as s from t) as y'],
];

const SCHEMA = 'create table t (id int primary key, k int, g int, v int, ts timestamp)';

type Op = { kind: 'insert'; id: number; k: number; g: number; v: number; minute: number } | { kind: 'delete'; id: number } | { kind: 'update'; id: number; k: number; minute: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), id: fc.integer({ min: 1, max: 30 }), k: fc.integer({ min: 1, max: 4 }), g: fc.integer({ min: 1, max: 3 }), v: fc.integer({ min: -5, max: 9 }), minute: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ kind: fc.constant('update' as const), id: fc.integer({ min: 1, max: 30 }), k: fc.integer({ min: 1, max: 4 }), minute: fc.integer({ min: 0, max: 20 }) }),
);

function sql(o: Op): string {
  const ts = (minute: number) => `timestamp '2024-01-01 00:00:00' + interval '${minute} minutes'`;
  switch (o.kind) {
    case 'insert':
      return `insert into t values (${o.id}, ${o.k}, ${o.g}, ${o.v}, ${ts(o.minute)}) on conflict (id) do nothing`;
    case 'delete':
      return `delete from t where id = ${o.id}`;
    case 'update':
      return `update t set k = ${o.k}, ts = ${ts(o.minute)} where id = ${o.id}`;
  }
}

async function explain(harness: Harness, statement: string): Promise<string[]> {
  return (await harness.run(statement)).rows.map((row) => String(row[0]));
}

/** A batch's net changes as sorted `+ a | b` lines (a row inserted and deleted in one batch cancels). */
function net(batch: ChangeBatch): string[] {
  const counts = new Map<string, number>();
  for (const line of formatChanges({ rows: batch.rows, signs: batch.signs })) {
    const row = line.slice(2);
    counts.set(row, (counts.get(row) ?? 0) + (line.startsWith('+') ? 1 : -1));
  }
  const out: string[] = [];
  for (const [row, count] of counts) for (let i = 0; i < Math.abs(count); i++) out.push(`${count > 0 ? '+' : '-'} ${row}`);
  return out.sort();
}

describe('shared subtrees of a view', () => {
  it('a relation\'s changes pushed alone (up each parent of the shared subtree) equal the same changes pushed bottom-up', async () => {
    await initParser();
    const int4 = scalar('int4');
    const relation: RelationDef = {
      id: 100,
      kind: 'table',
      schema: 'public',
      name: 'l',
      columns: ['id', 'k', 'v'].map((name) => ({ name, type: int4, nullable: true, hidden: false })),
      primaryKey: [],
      dependsOn: [],
    };
    const catalog: CatalogReader = {
      resolveRelation: (_schema, name) => (name === 'l' ? relation : undefined),
      relationById: (id) => (id === 100 ? relation : undefined),
      schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
    };
    const query = 'select x.k, x.c, y.s from (select k, count(*) as c, sum(v) as s from l group by k) as x join (select k, count(*) as c, sum(v) as s from l group by k) as y on x.k = y.k and x.c >= y.c';
    const build = () => {
      let next = 1000;
      const planned = planStream(parse(query)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'v', allocateStateTableId: () => next++ });
      const flow = new StreamManager(createMemoryStateStore()).build(900, planned.stream);
      flow.initialize();
      return flow;
    };
    const alone = build();
    const together = build();
    expect(alone.operators().filter((operator) => operator.plan.kind === 'StreamShared')).toHaveLength(1);
    const steps = [changes('+ 1 1 10', '+ 2 1 20', '+ 3 2 5'), changes('- 1 1 10', '+ 4 2 7'), changes('- 2 1 20', '+ 1 1 10', '- 3 2 5')];
    for (const step of steps) {
      const expected = net(together.pushAll(new Map([[100, step]])));
      expect(expected.length).toBeGreaterThan(0);
      expect(net(alone.push(100, step))).toEqual(expected);
    }
  });

  it('views with repeated subtrees equal their batch recomputation after every statement', async () => {
    await assertViewsEqualRecomputation({ schema: SCHEMA, op, sql, views: VIEWS });
  }, 120_000);

  it('EXPLAIN, EXPLAIN ANALYZE and state_size show the shared leaf and its unused state', async () => {
    h = await openHarness();
    await h.run(SCHEMA);
    for (const [name, query] of VIEWS) {
      const lines = await explain(h, `explain create materialized view ${name} as ${query}`);
      expect(lines.filter((line) => line.includes('StreamShared')), name).toHaveLength(1);
    }
    // Volatile calls are never shared: each subtree computes its own values.
    const sample = '(select count(*) as n from (select random() as r from generate_series(1, 100) as g) as s where r < 0.5)';
    const random = `select a.n, b.n as n2 from ${sample} as a cross join ${sample} as b`;
    expect((await explain(h, `explain create materialized view rnd as ${random}`)).filter((line) => line.includes('StreamShared'))).toEqual([]);
    const planned = await explain(h, `explain create materialized view q5 as ${Q5}`);
    const shared = planned.filter((line) => line.includes('StreamShared'));
    expect(shared).toHaveLength(1);
    // The second count's keys are (k, window_start): the first's (window_start, k) columns 2, 1 and its count.
    expect(shared[0]!.trim()).toMatch(/^StreamShared output of operator (\d+) \(group2, group1, count\) \(linear; state: #\d+ accumulators by key \(unused: the shared subtree's state serves both\)\)$/);
    const operator = Number(/operator (\d+)/.exec(shared[0]!)![1]);
    expect(planned[operator - 1]!.trim()).toMatch(/^StreamHashAggregate Aggregate count\(\*\) group by window_start, k /);
    // One HOP left, not two.
    expect(planned.filter((line) => line.includes('StreamLateral'))).toHaveLength(1);
    await h.run(`create materialized view q5 as ${Q5}`);
    await h.run("insert into t values (1, 1, 1, 1, '2024-01-01 00:03:00'), (2, 1, 1, 1, '2024-01-01 00:04:00'), (3, 2, 1, 1, '2024-01-01 00:05:00')");
    const analyzed = await explain(h, 'explain analyze q5');
    const leaf = analyzed.find((line) => line.includes('StreamShared'))!;
    // 3 bids in 5 windows each: 10 (window, k) groups are inserted, each once.
    const groups = (await h.lines(`select count(*) from (select window_start, k from ${HOP} group by window_start, k) as g`))[0];
    expect(leaf).toContain(`rows in=${groups} out=${groups}`);
    const sizes = await h.lines("select operator_kind, bytes, purpose from oxbow_catalog.state_size where object_name = 'q5' and operator_kind = 'StreamShared'");
    expect(sizes).toEqual(["StreamShared | 0 | accumulators by key (unused: the shared subtree's state serves both)"]);
    expect(await h.lines('select * from q5')).toEqual(await h.lines(Q5));
  });

  it('a view with a shared subtree on RocksDB keeps sharing and its contents across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-shared-subplan-'));
    const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
    try {
      h = await open();
      await h.run(SCHEMA);
      for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
      await h.run("insert into t values (1, 1, 1, 5, '2024-01-01 00:03:00'), (2, 1, 2, 6, '2024-01-01 00:04:00'), (3, 2, 1, 7, '2024-01-01 00:05:00'), (4, 2, 2, 8, '2024-01-01 00:09:00')");
      await expectViewsEqualQueries(h, VIEWS);
      await h.close();
      h = await open();
      expect((await explain(h, 'explain analyze q5')).filter((line) => line.includes('StreamShared'))).toHaveLength(1);
      const steps = [
        "insert into t values (5, 2, 1, 1, '2024-01-01 00:04:30'), (6, 3, 3, 2, '2024-01-01 00:11:00')",
        'delete from t where id = 1',
        "update t set k = 2, ts = '2024-01-01 00:04:00' where id = 2",
        'delete from t',
      ];
      for (const step of steps) {
        await h.run(step);
        await expectViewsEqualQueries(h, VIEWS, step);
      }
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
