// StreamHashJoin (executor/stream/hash-join.ts) as readable fixtures: a view's dataflow over the
// in-memory state store, fed hand-written changes (`+ id k v` lines), its net output per step
// compared with changes worked out by hand from the join's definition. Every join type, NULL and
// NULL-safe keys, duplicates on both sides, updates that move a row between keys, a residual,
// both sides changing in one epoch, a self-join. Then the plan-version rule: a view made with the
// keyed recompute (plan version 1, as views were before StreamHashJoin) keeps it across a restart
// on RocksDB and stays correct, while a new view gets StreamHashJoin.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { planStream, explainStreamPlan, STREAM_PLAN_VERSION } from '../../../planner/stream/index.js';
import { StreamManager } from '../stream-manager.js';
import { changes, output } from './fixture-lines.js';
import type { Dataflow } from '../dataflow.js';
import { streamPlanDefaults } from '../../ddl/create-materialized-view.js';
import { fixedCatalog, openHarness, type Harness } from './stream-harness.js';

const int4 = scalar('int4');
const column = (name: string) => ({ name, type: int4, nullable: true, hidden: false });
const L = 100;
const R = 101;
const relations: RelationDef[] = [
  { id: L, kind: 'table', schema: 'public', name: 'l', columns: [column('id'), column('k'), column('v')], primaryKey: [], dependsOn: [] },
  { id: R, kind: 'table', schema: 'public', name: 'r', columns: [column('id'), column('k'), column('w')], primaryKey: [], dependsOn: [] },
];
const catalog = fixedCatalog(relations);

function plan(sql: string, planVersion?: number) {
  let next = 1000;
  return planStream(parse(sql)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, {
    relationId: 900,
    name: 'v',
    allocateStateTableId: () => next++,
    ...(planVersion === undefined ? {} : { planVersion }),
  });
}

function dataflow(sql: string, planVersion?: number): Dataflow {
  const planned = plan(sql, planVersion);
  const flow = new StreamManager(createMemoryStateStore()).build(900, planned.stream);
  flow.initialize();
  return flow;
}

beforeAll(async () => {
  await initParser();
});

describe('StreamHashJoin over change batches', () => {
  it('is what the planner picks for equi-joins of every type, with degrees where output depends on matching', () => {
    const lines = (sql: string) => explainStreamPlan(plan(sql).stream).join('\n');
    expect(lines('select l.id, r.id from l join r on l.k = r.k')).toMatch(/StreamHashJoin HashJoin inner on k = k .*state: #\d+ left rows by key, #\d+ right rows by key\)/);
    expect(lines('select l.id, r.id from l left join r on l.k = r.k')).toMatch(/#\d+ left rows by key with degree, #\d+ right rows by key\)/);
    expect(lines('select l.id, r.id from l right join r on l.k = r.k')).toMatch(/#\d+ left rows by key, #\d+ right rows by key with degree\)/);
    expect(lines('select l.id, r.id from l full join r on l.k = r.k')).toMatch(/#\d+ left rows by key with degree, #\d+ right rows by key with degree\)/);
    expect(lines('select id from l where exists (select 1 from r where r.k = l.k)')).toMatch(/StreamHashJoin HashJoin semi .*left rows by key with degree, #\d+ right rows by key\)/);
    expect(lines('select id from l where not exists (select 1 from r where r.k = l.k)')).toMatch(/StreamHashJoin HashJoin anti /);
    expect(lines('select l.id from l join r on l.k is not distinct from r.k')).toMatch(/StreamHashJoin /);
    // No equi-key: the keyed recompute remains (uncorrelated EXISTS), and so does a plan of version 1.
    expect(lines('select id from l where exists (select 1 from r)')).toMatch(/StreamRecomputeJoin /);
    expect(explainStreamPlan(plan('select l.id, r.id from l left join r on l.k = r.k', 1).stream).join('\n')).toMatch(/StreamRecomputeJoin HashJoin left .*input 0 rows by key, #\d+ input 1 rows by key\)/);
  });

  it('inner: duplicates on both sides multiply, a NULL key never matches', () => {
    const flow = dataflow('select l.id, r.id from l join r on l.k = r.k');
    expect(output(flow.push(L, changes('+ 1 7 0', '+ 1 7 0')))).toEqual([]);
    expect(output(flow.push(R, changes('+ 50 7 0')))).toEqual(['+ 1 | 50', '+ 1 | 50']);
    expect(output(flow.push(R, changes('+ 50 7 0')))).toEqual(['+ 1 | 50', '+ 1 | 50']);
    expect(output(flow.push(L, changes('- 1 7 0')))).toEqual(['- 1 | 50', '- 1 | 50']);
    expect(output(flow.push(L, changes('+ 2 NULL 0')))).toEqual([]);
    expect(output(flow.push(R, changes('+ 51 NULL 0')))).toEqual([]);
    expect(output(flow.push(R, changes('- 50 7 0', '- 50 7 0')))).toEqual(['- 1 | 50', '- 1 | 50']);
  });

  it('left with a residual: the NULL-padded row leaves on the first match and comes back with the last', () => {
    const flow = dataflow('select l.id, r.id from l left join r on l.k = r.k and l.v < r.w');
    expect(output(flow.push(L, changes('+ 1 7 5')))).toEqual(['+ 1 | NULL']);
    expect(output(flow.push(R, changes('+ 50 7 3')))).toEqual([]); // 5 < 3 fails
    expect(output(flow.push(R, changes('+ 51 7 9')))).toEqual(['+ 1 | 51', '- 1 | NULL']);
    expect(output(flow.push(R, changes('+ 52 7 8')))).toEqual(['+ 1 | 52']);
    // v 5 -> 8: only 9 is still larger.
    expect(output(flow.push(L, changes('- 1 7 5', '+ 1 7 8')))).toEqual(['- 1 | 52']);
    expect(output(flow.push(R, changes('- 51 7 9')))).toEqual(['+ 1 | NULL', '- 1 | 51']);
    expect(output(flow.push(L, changes('+ 2 NULL 1')))).toEqual(['+ 2 | NULL']);
    expect(output(flow.push(L, changes('- 2 NULL 1')))).toEqual(['- 2 | NULL']);
  });

  it('right: the right rows are the preserved side', () => {
    const flow = dataflow('select l.id, r.id from l right join r on l.k = r.k');
    expect(output(flow.push(R, changes('+ 50 7 0')))).toEqual(['+ NULL | 50']);
    expect(output(flow.push(L, changes('+ 1 7 0')))).toEqual(['+ 1 | 50', '- NULL | 50']);
    expect(output(flow.push(L, changes('+ 2 7 0')))).toEqual(['+ 2 | 50']);
    expect(output(flow.push(L, changes('- 1 7 0', '- 2 7 0')))).toEqual(['+ NULL | 50', '- 1 | 50', '- 2 | 50']);
    expect(output(flow.push(R, changes('+ 51 NULL 0')))).toEqual(['+ NULL | 51']);
  });

  it('full: updates that move a row from one key to another, on either side', () => {
    const flow = dataflow('select l.id, r.id from l full join r on l.k = r.k');
    expect(output(flow.push(L, changes('+ 1 7 0')))).toEqual(['+ 1 | NULL']);
    expect(output(flow.push(R, changes('+ 50 8 0')))).toEqual(['+ NULL | 50']);
    expect(output(flow.push(L, changes('- 1 7 0', '+ 1 8 0')))).toEqual(['+ 1 | 50', '- 1 | NULL', '- NULL | 50']);
    expect(output(flow.push(R, changes('- 50 8 0', '+ 50 7 0')))).toEqual(['+ 1 | NULL', '+ NULL | 50', '- 1 | 50']);
    // Duplicates: two copies of the right row, each padded, replaced by two joined rows.
    expect(output(flow.push(R, changes('+ 51 8 0', '+ 51 8 0')))).toEqual(['+ 1 | 51', '+ 1 | 51', '- 1 | NULL']);
    expect(output(flow.push(L, changes('- 1 8 0')))).toEqual(['+ NULL | 51', '+ NULL | 51', '- 1 | 51', '- 1 | 51']);
  });

  it('NULL-safe keys: NULL matches NULL, in inner and outer joins', () => {
    const inner = dataflow('select l.id, r.id from l join r on l.k is not distinct from r.k');
    expect(output(inner.push(L, changes('+ 1 NULL 0', '+ 2 7 0')))).toEqual([]);
    expect(output(inner.push(R, changes('+ 50 NULL 0')))).toEqual(['+ 1 | 50']);
    expect(output(inner.push(R, changes('+ 51 7 0')))).toEqual(['+ 2 | 51']);
    expect(output(inner.push(L, changes('- 1 NULL 0')))).toEqual(['- 1 | 50']);
    const left = dataflow('select l.id, r.id from l left join r on l.k is not distinct from r.k');
    expect(output(left.push(L, changes('+ 1 NULL 0')))).toEqual(['+ 1 | NULL']);
    expect(output(left.push(R, changes('+ 50 NULL 0')))).toEqual(['+ 1 | 50', '- 1 | NULL']);
    expect(output(left.push(R, changes('- 50 NULL 0')))).toEqual(['+ 1 | NULL', '- 1 | 50']);
  });

  it('semi (EXISTS, IN): a left row is output while it has at least one match, once per copy', () => {
    const flow = dataflow('select id from l where exists (select 1 from r where r.k = l.k)');
    expect(output(flow.push(L, changes('+ 1 7 0', '+ 1 7 0', '+ 2 NULL 0')))).toEqual([]);
    expect(output(flow.push(R, changes('+ 50 7 0')))).toEqual(['+ 1', '+ 1']);
    expect(output(flow.push(R, changes('+ 51 7 0')))).toEqual([]);
    expect(output(flow.push(R, changes('- 50 7 0')))).toEqual([]);
    expect(output(flow.push(L, changes('+ 3 7 0')))).toEqual(['+ 3']);
    expect(output(flow.push(R, changes('- 51 7 0')))).toEqual(['- 1', '- 1', '- 3']);
    const inList = dataflow('select id from l where k in (select k from r where w > 0)');
    expect(output(inList.push(L, changes('+ 1 7 0')))).toEqual([]);
    expect(output(inList.push(R, changes('+ 50 7 0')))).toEqual([]); // w > 0 fails below the join
    expect(output(inList.push(R, changes('+ 51 7 1')))).toEqual(['+ 1']);
  });

  it('anti (NOT EXISTS) with a residual: a left row is output while nothing matches; a NULL key always is', () => {
    const flow = dataflow('select id from l where not exists (select 1 from r where r.k = l.k and r.w > l.v)');
    expect(output(flow.push(L, changes('+ 1 7 5', '+ 2 NULL 0')))).toEqual(['+ 1', '+ 2']);
    expect(output(flow.push(R, changes('+ 50 7 3')))).toEqual([]);
    expect(output(flow.push(R, changes('+ 51 7 6')))).toEqual(['- 1']);
    expect(output(flow.push(R, changes('+ 52 NULL 9')))).toEqual([]);
    expect(output(flow.push(L, changes('- 1 7 5', '+ 1 7 6')))).toEqual(['+ 1']); // 6 > 6 fails: unmatched again
    expect(output(flow.push(R, changes('- 50 7 3', '- 51 7 6')))).toEqual([]);
    expect(output(flow.push(L, changes('- 2 NULL 0')))).toEqual(['- 2']);
  });

  it('both sides in one epoch: each joined row once, no padded row in between', () => {
    const inner = dataflow('select l.id, r.id from l join r on l.k = r.k');
    expect(output(inner.pushAll(new Map([[L, changes('+ 1 7 0', '+ 2 8 0')], [R, changes('+ 50 7 0', '+ 51 7 0')]])))).toEqual(['+ 1 | 50', '+ 1 | 51']);
    expect(output(inner.pushAll(new Map([[L, changes('- 1 7 0')], [R, changes('- 50 7 0', '+ 52 8 0')]])))).toEqual(['+ 2 | 52', '- 1 | 50', '- 1 | 51']);
    const full = dataflow('select l.id, r.id from l full join r on l.k = r.k');
    expect(output(full.pushAll(new Map([[L, changes('+ 1 7 0', '+ 2 8 0')], [R, changes('+ 50 7 0', '+ 51 9 0')]])))).toEqual(['+ 1 | 50', '+ 2 | NULL', '+ NULL | 51']);
    expect(output(full.pushAll(new Map([[L, changes('- 1 7 0')], [R, changes('- 50 7 0')]])))).toEqual(['- 1 | 50']);
  });

  it('a self-join sees each side of one change once', () => {
    const flow = dataflow('select a.id, b.id from l a join l b on a.k = b.k');
    expect(output(flow.push(L, changes('+ 1 7 0')))).toEqual(['+ 1 | 1']);
    expect(output(flow.push(L, changes('+ 2 7 0')))).toEqual(['+ 1 | 2', '+ 2 | 1', '+ 2 | 2']);
    expect(output(flow.push(L, changes('- 1 7 0')))).toEqual(['- 1 | 1', '- 1 | 2', '- 2 | 1']);
  });

  it('a residual that fails with an error does not match, on insert and on delete alike', () => {
    const flow = dataflow('select l.id, r.id from l left join r on l.k = r.k and 10 / r.w > l.v');
    expect(output(flow.push(L, changes('+ 1 7 1')))).toEqual(['+ 1 | NULL']);
    expect(output(flow.push(R, changes('+ 50 7 0', '+ 51 7 2')))).toEqual(['+ 1 | 51', '- 1 | NULL']); // 10 / 0 fails
    expect(output(flow.push(R, changes('- 51 7 2')))).toEqual(['+ 1 | NULL', '- 1 | 51']);
    expect(output(flow.push(R, changes('- 50 7 0')))).toEqual([]);
  });
});

describe('plan versions across a restart', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    streamPlanDefaults.version = STREAM_PLAN_VERSION;
  });

  it('a view made with the keyed recompute keeps it after a restart; a new view gets StreamHashJoin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-hash-join-version-'));
    const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
    const kinds = async (view: string) => (await h!.lines(`select kind from oxbow_catalog.dataflow where view_name = '${view}'`)).join(',');
    try {
      h = await open();
      await h.run('create table c (id int primary key, name text)');
      await h.run('create table o (id int primary key, c int, amount int)');
      await h.run("insert into c values (1, 'ann'), (2, 'bob'), (3, 'cid'); insert into o values (10, 1, 5), (11, 1, 7), (12, 2, 1)");
      const query = 'select c.name, o.id from c left join o on o.c = c.id and o.amount > 2';
      streamPlanDefaults.version = 1;
      await h.run(`create materialized view old_join as ${query}`);
      streamPlanDefaults.version = STREAM_PLAN_VERSION;
      await h.run(`create materialized view new_join as ${query}`);
      await h.close();
      h = await open();
      expect(await kinds('old_join')).toMatch(/StreamRecomputeJoin/);
      expect(await kinds('old_join')).not.toMatch(/StreamHashJoin/);
      expect(await kinds('new_join')).toMatch(/StreamHashJoin/);
      await h.run('insert into o values (13, 3, 9), (14, 2, 3); delete from o where id = 10; update o set amount = 0 where id = 11');
      // By hand: ann has 10 (deleted) and 11 (amount 0): padded; bob 12 (1, fails) and 14 (3); cid 13.
      const expected = ['ann | NULL', 'bob | 14', 'cid | 13'];
      expect(await h.lines('select * from old_join')).toEqual(expected);
      expect(await h.lines('select * from new_join')).toEqual(expected);
      expect(await h.lines(query)).toEqual(expected);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
