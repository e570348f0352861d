// Over-windows in views (planner/stream/incrementalize.ts, StreamOverWindow): a filter right above
// the window (row_number() <= N) runs in the window's template, and a window's input is pruned to
// the columns it and the plan above it read (rules/projection-pushdown.ts); after every statement
// each view equals its query recomputed by the batch executor. A view created with streaming plan
// version 5 keeps every input column in its over-window's state across a restart on RocksDB.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import type { StateStore } from '../../../storage/state-table.js';
import type { RelationDef } from '../../../sql/catalog.js';
import { type as scalar, type DataType } from '../../../sql/types.js';
import { Catalog } from '../../catalog/catalog.js';
import { systemRelationDefs } from '../../system/system-relations.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { STREAM_PLAN_VERSION } from '../../../planner/stream/index.js';
import { streamPlanDefaults } from '../../ddl/create-materialized-view.js';
import { assertViewsEqualRecomputation, expectViewsEqualQueries, openHarness, type Harness } from './stream-harness.js';

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  streamPlanDefaults.version = STREAM_PLAN_VERSION;
});

beforeAll(async () => {
  await initParser();
});

const int4 = scalar('int4');
const int8 = scalar('int8');
const text = scalar('text');

function relation(store: StateStore, name: string): RelationDef {
  const found = Catalog.load(store, systemRelationDefs())
    .snapshot.relations()
    .find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no relation ${name}`);
  return found;
}

const TOP_N = 'select * from (select k, g, v, note, row_number() over (partition by g order by v desc, k) as rn from t) as ranked where rn <= 2';
const LAST = 'select g, v from (select g, v, note, row_number() over (partition by g order by k desc) as rn from t) as ranked where rn = 1 and note is not null';
const RUNNING = 'select g, k, sum(v) over (partition by g order by k) as running, lag(v) over (partition by g order by k) as previous from t';

describe('over-windows in views', () => {
  it('plans the filter above a window into its template and prunes the window input', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, g int, v int, note text)');
    const plan = (await h.lines(`explain create materialized view x as ${TOP_N}`)).join('\n');
    expect(plan).toMatch(/StreamOverWindow Filter \(row_number <= 2\) \/ Window row_number\(\)/);
    expect(plan).not.toMatch(/StreamFilter/);
    const running = (await h.lines(`explain create materialized view y as ${RUNNING}`)).join('\n');
    expect(running).toMatch(/StreamTableScan public\.t \[k, g, v\]/);
  });

  it('equals its query recomputed after random inserts, updates and deletes', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('insert' as const), k: fc.integer({ min: 1, max: 30 }), g: fc.integer({ min: 1, max: 3 }), v: fc.integer({ min: 0, max: 5 }), note: fc.constantFrom('a', 'b', null) }),
      fc.record({ kind: fc.constant('update' as const), k: fc.integer({ min: 1, max: 30 }), v: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ kind: fc.constant('delete' as const), k: fc.integer({ min: 1, max: 30 }) }),
    );
    await assertViewsEqualRecomputation({
      schema: 'create table t (k int primary key, g int, v int, note text)',
      op,
      sql: (o) =>
        o.kind === 'insert'
          ? `insert into t values (${o.k}, ${o.g}, ${o.v}, ${o.note === null ? 'null' : `'${o.note}'`}) on conflict (k) do update set g = excluded.g, v = excluded.v, note = excluded.note`
          : o.kind === 'update'
            ? `update t set v = ${o.v} where k = ${o.k}`
            : `delete from t where k = ${o.k}`,
      views: [
        ['top_n', TOP_N],
        ['last', LAST],
        ['running', RUNNING],
      ],
    });
  });

  it('a view of plan version 5 keeps its window state rows whole across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-over-window-'));
    let store: StateStore | undefined;
    const open = async () => {
      store = openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 });
      h = await openHarness(store);
    };
    const views = [
      ['whole', RUNNING],
      ['pruned', RUNNING],
    ] as const;
    try {
      await open();
      // note between the columns the window reads: a state row read with the pruned layout would
      // take note's bytes for g's.
      await h!.run('create table t (k int primary key, note text, g int, v int)');
      await h!.run("insert into t values (1, 'a', 1, 10), (2, 'bb', 1, 5), (3, null, 2, 7)");
      streamPlanDefaults.version = 5;
      await h!.run(`create materialized view whole as ${RUNNING}`);
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
      await h!.run(`create materialized view pruned as ${RUNNING}`);
      await h!.close();
      await open();
      await h!.run("insert into t values (4, 'c', 1, 1), (5, 'dd', 2, 2); update t set v = 0 where k = 1; delete from t where k = 3");
      await expectViewsEqualQueries(h!, views, 'the restart');
      expect(await h!.lines('select * from whole')).toEqual(await h!.lines('select * from pruned'));
      // The version-5 window's state rows hold the whole row (k, note, g, v) and its count; the
      // version-6 window's (k, g, v). Read with any other layout, the store refuses the table.
      const stateRows = (name: string, columnTypes: readonly DataType[]): string[] => {
        const [id] = relation(store!, name).stream!.stateTableIds;
        const table = store!.table({ tableId: id!, columnTypes, primaryKey: columnTypes.slice(0, -1).map((_, i) => i) });
        return [...table.scan()].map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')).sort();
      };
      expect(stateRows('whole', [int4, text, int4, int4, int8])).toEqual(['1 | a | 1 | 0 | 1', '2 | bb | 1 | 5 | 1', '4 | c | 1 | 1 | 1', '5 | dd | 2 | 2 | 1']);
      expect(stateRows('pruned', [int4, int4, int4, int8])).toEqual(['1 | 1 | 0 | 1', '2 | 1 | 5 | 1', '4 | 1 | 1 | 1', '5 | 2 | 2 | 1']);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
