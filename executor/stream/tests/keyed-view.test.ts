// Views stored by their key (planner/stream/unique-key.ts; materialize.ts, the keyed layout): after
// every statement the view equals its query recomputed by the batch executor, and its relation
// table holds exactly one row per key (the hidden column 0) and nothing else: a group that goes to
// zero rows is deleted and comes back as a new row. Random workloads over keyed views (aggregates,
// joins, DISTINCT, views on them, an index on one); AS OF reads the older row of a key; a filter
// on the key is a point lookup (planner/rules/index-lookup.ts), AS OF included; a restart
// on RocksDB keeps a keyed view keyed and a view created with plan version 2 counted; a change
// stream that repeats a key (a wrong key) fails with XX000 instead of overwriting a row.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { StateStore } from '../../../storage/state-table.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { planStream, STREAM_PLAN_VERSION } from '../../../planner/stream/index.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import { Catalog } from '../../catalog/catalog.js';
import { systemRelationDefs } from '../../system/system-relations.js';
import { StreamManager } from '../stream-manager.js';
import { streamPlanDefaults } from '../../ddl/create-materialized-view.js';
import { changes } from './fixture-lines.js';
import { assertViewsEqualRecomputation, openHarness, type Harness } from './stream-harness.js';

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  streamPlanDefaults.version = STREAM_PLAN_VERSION;
});

beforeAll(async () => {
  await initParser();
});

function relation(store: StateStore, name: string): RelationDef {
  const found = Catalog.load(store, systemRelationDefs())
    .snapshot.relations()
    .find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no relation ${name}`);
  return found;
}

/** The rows of a view's relation table as stored (hidden column included), as sorted text. */
function storedRows(store: StateStore, view: RelationDef): string[] {
  const table = store.table({ tableId: view.id, columnTypes: view.columns.map((column) => column.type), primaryKey: view.primaryKey });
  return [...table.scan()].map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')).sort();
}

describe('a view stored by its key', () => {
  it('a GROUP BY view: one row per group, updated in place, a group emptied and refilled', async () => {
    const store = createMemoryStateStore();
    h = await openHarness(store);
    await h.run('create table t (k int primary key, g int, v int)');
    await h.run('insert into t values (1, 1, 10), (2, 1, 5), (3, 2, 7)');
    const query = 'select g, count(*) as n, sum(v) as s from t group by g';
    await h.run(`create materialized view by_g as ${query}`);
    const view = relation(store, 'by_g');
    // Stored by g (position 0); no row-count table among its state tables.
    expect(view.primaryKey).toEqual([0]);
    expect(await h.lines("select purpose from oxbow_catalog.state_size where object_name = 'by_g' and purpose in ('view rows', 'row counts')")).toEqual(['view rows']);
    // An index on the view: its entries follow the upserts (the old row's entry deleted).
    await h.run('create index by_g_n on by_g (n)');
    expect((await h.run('explain select g from by_g where n = 2')).rows.flat().join('\n')).toMatch(/by_g_n/);
    const steps = [
      'insert into t values (4, 2, 1)',
      'update t set v = 20 where k = 1',
      'update t set g = 2 where k = 2',
      // g = 1 goes to zero rows ...
      'delete from t where k = 1',
      'insert into t values (5, 3, NULL)',
      // ... and comes back.
      'insert into t values (6, 1, 4), (7, 1, 6)',
      'update t set g = NULL where k = 3',
      'delete from t where g = 2',
    ];
    for (const step of ['backfill', ...steps]) {
      if (step !== 'backfill') await h.run(step);
      const expected = await h.lines(query);
      expect(await h.lines('select * from by_g'), step).toEqual(expected);
      // The relation table: the same rows, each once, with the hidden column 0.
      expect(storedRows(store, view), step).toEqual(expected.map((line) => `${line} | 0`).sort());
      expect(await h.lines('select g from by_g where n = 2'), step).toEqual(await h.lines(`select g from (${query}) x where n = 2`));
    }
    expect(await h.lines('select g from by_g')).toEqual(['1', '3', 'NULL']);
  });

  it('equal their batch recomputation under random changes (aggregates, joins, DISTINCT, views on them, an index)', async () => {
    type Op = { table: 'a' | 'b'; kind: 'upsert' | 'delete' | 'move'; k: number; g: number | null; v: number };
    const op: fc.Arbitrary<Op> = fc.record({
      table: fc.constantFrom('a' as const, 'b' as const),
      kind: fc.constantFrom('upsert' as const, 'upsert' as const, 'delete' as const, 'move' as const),
      k: fc.integer({ min: 0, max: 6 }),
      g: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 2 }) }, { weight: 1, arbitrary: fc.constant(null) }),
      v: fc.integer({ min: -3, max: 3 }),
    });
    const g = (value: number | null) => (value === null ? 'NULL' : String(value));
    const sql = (o: Op): string => {
      switch (o.kind) {
        case 'upsert':
          return `insert into ${o.table} values (${o.k}, ${g(o.g)}, ${o.v}) on conflict (k) do update set g = excluded.g, v = excluded.v`;
        case 'delete':
          return `delete from ${o.table} where k = ${o.k}`;
        case 'move':
          return `update ${o.table} set g = ${g(o.g)} where g is not distinct from ${g(o.v % 3)}`;
      }
    };
    await assertViewsEqualRecomputation({
      schema: 'create table a (k int primary key, g int, v int); create table b (k int primary key, g int, v int)',
      op,
      sql,
      views: [
        ['k_agg', 'select g, count(*) as n, sum(v) as s, min(v) as lo from a group by g'],
        ['k_total', 'select count(*) as n, sum(v) as s from a'],
        ['k_join', 'select a.k as ka, b.k as kb, a.v + b.v as vv from a join b on a.g = b.g'],
        ['k_left', 'select a.k as ka, b.k as kb from a left join b on a.g = b.g and a.v < b.v'],
        ['k_distinct', 'select distinct g, v > 0 as pos from b'],
        ['k_on_agg', 'select g, n from k_agg where n > 1'],
        ['k_agg_of_join', 'select ka, count(*) as c from k_join group by ka'],
        ['k_semi', 'select k, v from a where exists (select 1 from b where b.g = a.g)'],
        // Joined by b's whole key: stored by a.k alone (inner and left).
        ['k_dim', 'select a.k, a.v, b.v as bv from a join b on a.g = b.k'],
        ['k_dim_left', 'select a.k, b.v as bv from a left join b on a.g = b.k and b.v > a.v'],
      ],
      afterViews: ['create index k_agg_n on k_agg (n)'],
      // Read through the index (the lookup planner picks it for n = 2), whose entries follow the upserts.
      checks: [['select g from k_agg where n = 2', 'select g from (select g, count(*) as n from a group by g) x where n = 2']],
    });
  });

  it('AS OF reads the older row of a key', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, g int, v int)');
    await h.run('create materialized view by_g as select g, sum(v) as s from t group by g');
    await h.run('insert into t values (1, 1, 10), (2, 2, 1)');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const moment = (await h.run('select now()::text')).rows[0]![0] as string;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await h.run('insert into t values (3, 1, 5); delete from t where k = 2');
    expect(await h.lines('select * from by_g')).toEqual(['1 | 15']);
    expect(await h.lines(`select * from by_g for system_time as of '${moment}'::timestamptz`)).toEqual(['1 | 10', '2 | 1']);
  });

  it('a filter on the key reads the view by key (a lookup), AS OF too; a view stored by its whole row is scanned', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, g int, v int)');
    await h.run('insert into t values (1, 1, 10), (2, 2, 1), (3, 3, 4)');
    await h.run('create materialized view by_g as select g, sum(v) as s from t group by g');
    await h.run('create materialized view vs as select v from t');
    const plan = async (sql: string) => (await h!.run(`explain ${sql}`)).rows.flat().join('\n');
    expect(await plan('select s from by_g where g = 2')).toMatch(/lookup \(g\) = \(2\)/);
    expect(await plan('select s from by_g where g in (1, 3)')).toMatch(/lookup \(g\) IN/);
    expect(await plan('select v from vs where v = 1')).not.toMatch(/lookup/);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const moment = (await h.run('select now()::text')).rows[0]![0] as string;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await h.run('update t set v = 7 where k = 2; delete from t where k = 3');
    expect(await h.lines('select s from by_g where g = 2')).toEqual(await h.lines('select sum(v) from t where g = 2'));
    expect(await h.lines('select g, s from by_g where g in (1, 3)')).toEqual(['1 | 10']);
    expect(await h.lines(`select g, s from by_g for system_time as of '${moment}'::timestamptz where g in (2, 3)`)).toEqual(['2 | 1', '3 | 4']);
    expect(await h.lines('select v from vs where v = 1')).toEqual([]);
  });

  it('on RocksDB, point reads of a keyed view after each change equal the recomputation', async () => {
    // A keyed view's upserts are written around the row cache (materialize.ts: no latest read of
    // the view's rows uses it); a statement's point read goes to RocksDB at its snapshot.
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-view-cache-'));
    try {
      h = await openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
      await h.run('create table t (k int primary key, g int, v int)');
      await h.run('create materialized view by_g as select g, count(*) as n, sum(v) as s from t group by g');
      let next = 0;
      const random = fc.sample(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -5, max: 5 }), fc.integer({ min: 0, max: 2 })), { numRuns: 60, seed: 7 });
      for (const [g, v, kind] of random) {
        // Read every group by key first ...
        for (let group = 0; group <= 3; group++) await h.lines(`select n, s from by_g where g = ${group}`);
        // ... then change one group: an insert, an update moving a row, or a delete.
        if (kind === 0 || next === 0) await h.run(`insert into t values (${next++}, ${g}, ${v})`);
        else if (kind === 1) await h.run(`update t set g = ${g}, v = ${v} where k = ${next - 1}`);
        else await h.run(`delete from t where k = (select min(k) from t where g = ${g})`);
        for (let group = 0; group <= 3; group++) {
          expect(await h.lines(`select n, s from by_g where g = ${group}`)).toEqual(await h.lines(`select count(*), sum(v) from t where g = ${group} having count(*) > 0`));
        }
      }
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a restart on RocksDB keeps a keyed view keyed and a view of plan version 2 counted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-keyed-view-'));
    let store: StateStore | undefined;
    const open = async () => {
      store = openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 });
      h = await openHarness(store);
    };
    const query = 'select g, count(*) as n, sum(v) as s from t group by g';
    try {
      await open();
      await h!.run('create table t (k int primary key, g int, v int)');
      await h!.run('insert into t values (1, 1, 10), (2, 1, 5), (3, 2, 7)');
      await h!.run(`create materialized view keyed as ${query}`);
      streamPlanDefaults.version = 2;
      await h!.run(`create materialized view counted as ${query}`);
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
      await h!.close();
      await open();
      expect(relation(store!, 'keyed').primaryKey).toEqual([0]);
      expect(relation(store!, 'counted').primaryKey).toEqual([0, 1, 2, 3]);
      expect(await h!.lines("select object_name, purpose from oxbow_catalog.state_size where object_name in ('keyed', 'counted') and purpose in ('view rows', 'row counts')")).toEqual([
        'counted | row counts',
        'counted | view rows',
        'keyed | view rows',
      ]);
      await h!.run('insert into t values (4, 2, 1); update t set v = 0 where k = 1; delete from t where k = 3; delete from t where k = 4');
      const expected = await h!.lines(query);
      expect(await h!.lines('select * from keyed')).toEqual(expected);
      expect(await h!.lines('select * from counted')).toEqual(expected);
      expect(storedRows(store!, relation(store!, 'keyed'))).toEqual(expected.map((line) => `${line} | 0`).sort());
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a change stream that repeats a key it is stored by fails with XX000 (a wrong key), never overwriting a row', () => {
    const int4 = scalar('int4');
    const t: RelationDef = {
      id: 100,
      kind: 'table',
      schema: 'public',
      name: 't',
      columns: ['k', 'g', 'v'].map((name) => ({ name, type: int4, nullable: true, hidden: false })),
      primaryKey: [0],
      dependsOn: [],
    };
    const catalog: CatalogReader = { resolveRelation: (_schema, name) => (name === 't' ? t : undefined), relationById: (id) => (id === 100 ? t : undefined), schema: (name) => (name === 'public' ? { id: 2200, name } : undefined) };
    let next = 1000;
    const planned = planStream(parse('select g, v from t')[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'v', allocateStateTableId: () => next++ });
    const stream = planned.stream;
    if (stream.kind !== 'StreamMaterialize') throw new Error('expected StreamMaterialize');
    expect(stream.key).toBeUndefined();
    // Claim g is a key (it is not) and store by it.
    const wrong = { ...stream, key: [0], stateTables: [{ ...stream.stateTables[0]!, primaryKey: [0] }] };
    const flow = new StreamManager(createMemoryStateStore()).build(900, wrong);
    flow.initialize();
    expect(() => flow.push(100, changes('+ 1 7 1', '+ 2 7 2'))).toThrow(expect.objectContaining({ code: 'XX000' }));
  });
});
