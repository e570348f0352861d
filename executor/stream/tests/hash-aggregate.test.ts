// The incremental hash aggregate (hash-aggregate.ts): which aggregates the pass makes incremental,
// exact numeric semantics against PostgreSQL 15 (the oracle: the same statements run there, the
// view's rows compared as text), deletions of the current min / max in a large group, groups
// emptied and refilled, the keyless aggregate on RocksDB across a restart, and errors inside the
// view (value NULL, recorded in view_errors). The random workloads are in
// incremental-equals-recompute.test.ts.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';
import { openHarness, type Harness } from './stream-harness.js';

let h: Harness | undefined;
let pg: PostgresServer;

beforeAll(async () => {
  pg = await startPostgres();
}, 60_000);
afterAll(async () => {
  await pg?.stop();
});
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function explain(harness: Harness, query: string): Promise<string> {
  return (await harness.run(`explain create materialized view x as ${query}`)).rows.map((row) => row[0]).join('\n');
}

/** Runs `sql` on both; PostgreSQL's text rows sorted, NULL as `NULL`, joined like Harness.lines. */
async function both(harness: Harness, sql: string): Promise<void> {
  await harness.run(sql);
  await pg.query(sql);
}

async function oracle(query: string): Promise<string[]> {
  return (await pg.query(query)).rows.map((row) => row.map((value) => (value === null ? 'NULL' : value)).join(' | ')).sort();
}

describe('StreamHashAggregate', () => {
  it('the pass makes retractable aggregates incremental and keeps the recompute for the rest', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, g int, v int, n numeric, f float8, s text, ts timestamp)');
    const incremental = [
      'select g, count(*), count(v), sum(v), avg(v), min(v), max(v), bool_and(v > 0), bool_or(v > 0), every(v > 0) from t group by g',
      'select g, sum(n), avg(n), min(n), max(s), min(ts), count(distinct v), sum(distinct v), avg(distinct v::int8) from t group by g',
      'select count(*) filter (where v > 0), sum(v) filter (where g = 1), min(v) filter (where g = 1), max(v) from t',
    ];
    for (const query of incremental) {
      const text = await explain(h, query);
      expect(text, query).toContain('StreamHashAggregate');
      expect(text, query).toContain('accumulators by key');
      expect(text, query).not.toContain('StreamRecomputeAggregate');
    }
    // min(v) and max(v) share one value table.
    expect((await explain(h, 'select g, min(v), max(v) from t group by g')).match(/argument values/g)).toHaveLength(1);
    const recompute = [
      "select g, string_agg(s, ',') from t group by g",
      'select g, array_agg(v order by v) from t group by g',
      'select g, sum(f) from t group by g',
      'select g, sum(distinct n) from t group by g',
    ];
    for (const query of recompute) expect(await explain(h, query), query).toContain('StreamRecomputeAggregate');
  });

  it('numeric sums and averages equal PostgreSQL through inserts, deletes and updates (scales, NaN, infinity)', async () => {
    h = await openHarness();
    await pg.query('drop table if exists t');
    await both(h, 'create table t (k int primary key, g int, v int, n numeric, b bigint)');
    const query = 'select g, count(*) as c, sum(v) as sv, avg(v) as av, sum(n) as sn, avg(n) as an, sum(b) as sb, avg(b) as ab, min(round(n, 1)) as mn, max(round(n, 1)) as mx, count(distinct v) as dv, sum(distinct v) as sdv from t group by g';
    await h.run(`create materialized view m as ${query}`);
    const compare = async (step: string) => expect(await h!.lines('select * from m'), step).toEqual(await oracle(query));
    await both(h, `insert into t select i, i % 7, (i * 37) % 101 - 50, round((i * 13 % 1000) / 7.0, i % 5), i::bigint * 1000000007 from generate_series(1, 700) i`);
    await compare('load');
    await both(h, `insert into t values (701, 1, null, 'NaN', null), (702, 2, 3, 'Infinity', 1), (703, 2, 4, '-Infinity', 2), (704, 3, 5, 1.123456789, 3)`);
    await compare('specials');
    await both(h, 'delete from t where k in (701, 703)');
    await compare('specials deleted');
    await both(h, 'delete from t where k % 5 = 4');
    await compare('scale 4 deleted');
    await both(h, 'update t set n = n * 10, v = -v where g = 3');
    await compare('update');
    await both(h, 'delete from t where g = 5');
    await compare('group emptied');
    await both(h, "insert into t values (800, 5, 1, 0.5, 1), (801, 5, null, null, null)");
    await compare('group refilled');
  }, 60_000);

  it('deleting the current min and max of a large group finds the next ones', async () => {
    h = await openHarness();
    await pg.query('drop table if exists t');
    await both(h, 'create table t (k int primary key, g int, v int, s text)');
    const query = 'select g, min(v) as lo, max(v) as hi, min(s) as first, max(s) as last, count(*) as n from t group by g';
    await h.run(`create materialized view m as ${query}`);
    await both(h, "insert into t select i, i % 2, (i * 7919) % 1000, 'w' || ((i * 31) % 977) from generate_series(1, 2000) i");
    for (let step = 0; step < 6; step++) {
      // Delete every row holding the current minimum or maximum of v, and the maximum of s, of each group.
      const extremes = (await pg.query('select g, min(v), max(v), max(s) from t group by g')).rows;
      for (const [g, lo, hi, last] of extremes) await both(h, `delete from t where g = ${g} and (v in (${lo}, ${hi}) or s = '${last}')`);
      expect(await h.lines('select * from m'), `step ${step}`).toEqual(await oracle(query));
    }
  }, 60_000);

  it('FILTERed DISTINCT counts beside unfiltered ones on the same column equal PostgreSQL through deletes and updates', async () => {
    h = await openHarness();
    await pg.query('drop table if exists t');
    await both(h, 'create table t (k int primary key, g int, d text, v int, w int, p int)');
    // The FILTERed tables of v and w skip reads of values their unfiltered table lacks (hash-aggregate.ts supersetOf).
    const query =
      'select g, d, count(*) as n, count(distinct v) as dv, count(distinct v) filter (where p < 100) as dv1, count(distinct v) filter (where p >= 100 and p < 500) as dv2, ' +
      'count(distinct w) filter (where p >= 500) as dw3, max(v) filter (where p < 300) as mv, min(w) as lw, sum(distinct w) filter (where p < 700) as sw from t group by g, d';
    await h.run(`create materialized view m as ${query}`);
    const compare = async (step: string) => expect(await h!.lines('select * from m'), step).toEqual(await oracle(query));
    await both(h, "insert into t select i, i % 5, 'd' || (i % 3), (i * 37) % 41, (i * 13) % 23, (i * 7919) % 1000 from generate_series(1, 600) i");
    await compare('load');
    await both(h, "insert into t select i, i % 7, 'd' || (i % 2), (i * 11) % 53, null, (i * 31) % 1000 from generate_series(601, 900) i");
    await compare('more values, new groups');
    await both(h, 'delete from t where k % 4 = 1');
    await compare('deletes');
    await both(h, 'update t set p = 999 - p, v = v + 1 where g = 2');
    await compare('values move between the FILTERs');
    await both(h, 'delete from t where g = 3');
    await compare('group emptied');
    await both(h, "insert into t values (1001, 3, 'd0', 5, 6, 50), (1002, 3, 'd0', 5, 6, 600), (1003, 3, 'd1', null, 1, 200)");
    await compare('group refilled');
  }, 60_000);

  it('a keyless aggregate on RocksDB: one row over no input, state kept across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-hash-aggregate-'));
    const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
    try {
      h = await open();
      await h.run('create table t (k int primary key, v int)');
      await h.run('create materialized view m as select count(*) as n, sum(v) as s, min(v) as lo, max(v) as hi, bool_or(v > 2) as big from t');
      expect(await h.lines('select * from m')).toEqual(['0 | NULL | NULL | NULL | NULL']);
      await h.run('insert into t values (1, 1), (2, 2), (3, 3)');
      expect(await h.lines('select * from m')).toEqual(['3 | 6 | 1 | 3 | t']);
      await h.close();
      h = await open();
      await h.run('delete from t where k = 3');
      expect(await h.lines('select * from m')).toEqual(['2 | 3 | 1 | 2 | f']);
      await h.run('delete from t');
      expect(await h.lines('select * from m')).toEqual(['0 | NULL | NULL | NULL | NULL']);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an argument that fails inside the view counts as NULL and is recorded, the view keeps running', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, g int, v int)');
    await h.run('create materialized view m as select g, count(*) as n, sum(100 / v) as s from t group by g');
    await h.run('insert into t values (1, 1, 10), (2, 1, 0), (3, 1, 50)');
    // 100/10 + 100/50 = 12; the row with v = 0 fails and is left out of the sum.
    expect(await h.lines('select * from m')).toEqual(['1 | 3 | 12']);
    const errors = await h.lines("select message, error_count from oxbow_catalog.view_errors where view_name = 'm'");
    expect(errors).toEqual(['division by zero | 1']);
    await h.run('delete from t where k = 1');
    expect(await h.lines('select * from m')).toEqual(['1 | 2 | 2']);
  });
});
