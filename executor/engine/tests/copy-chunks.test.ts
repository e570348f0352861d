// COPY FROM pushes its rows through the views in chunks inside its one epoch (executor/engine/copy.ts),
// as sources do: with chunks of 100 rows, a COPY of 1,000 rows reaches each view in 10 batches,
// and every view then equals its query recomputed over the table (aggregate, filter, join, a view
// over a view). A COPY that fails after several chunks were pushed (a key twice in the COPY, a key
// already in the table, a CHECK) leaves the table and every view as they were; so does the
// ROLLBACK of a block that ran a COPY.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectViewsEqualQueries, openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { sourceChunks } from '../../connectors/source-manager.js';
import type { SqlError } from '../../../sql/errors.js';

const VIEWS = [
  ['per_k', 'select k, count(*) as n, sum(id) as total from t group by k'],
  ['odd', 'select id, v from t where id % 2 = 1'],
  ['joined', 'select t.id, t.k, names.name from t join names on t.k = names.k'],
  ['per_k_big', 'select k, n from per_k where n > 10'],
] as const;

/** Text lines `id\tk\tv` for ids first..last. */
function lines(first: number, last: number): string {
  let text = '';
  for (let id = first; id <= last; id++) text += `${id}\t${id % 7}\tv${id}\n`;
  return text;
}

describe('COPY FROM in chunks', () => {
  let h: Harness;
  const saved = sourceChunks.rows;

  beforeEach(async () => {
    sourceChunks.rows = 100;
    h = await openHarness();
    await h.run('create table t (id int primary key, k int, v text check (v <> \'bad\')); create table names (k int primary key, name text)');
    await h.run("insert into names select i, 'name' || i from generate_series(0, 6) as s(i)");
    for (const [name, query] of VIEWS) await h.run(`create materialized view ${name} as ${query}`);
  });

  afterEach(async () => {
    sourceChunks.rows = saved;
    await h.close();
  });

  async function copyIn(sql: string, chunks: readonly string[]): Promise<string> {
    const [statement] = h.session.prepareMany(sql);
    const result = await h.session.execute(statement!, { parameters: [] });
    if (result.kind !== 'copyIn') throw new Error(`expected COPY IN, got ${result.kind}`);
    for (const chunk of chunks) result.write(Buffer.from(chunk));
    return result.end();
  }

  /** Batches the view's scan of t has taken (oxbow_catalog.dataflow). */
  async function batchesOf(view: string): Promise<number> {
    const rows = await h.lines(`select batches from oxbow_catalog.dataflow where view_name = '${view}' and kind = 'StreamTableScan'`);
    return Number(rows[0]);
  }

  it('reaches every view in chunks, and every view equals its query after it', async () => {
    const before = await batchesOf('per_k');
    expect(await copyIn('copy t from stdin', [lines(1, 400), lines(401, 1000)])).toBe('COPY 1000');
    // 1,000 rows in chunks of 100: 10 pushes, one batch each for the scan.
    expect((await batchesOf('per_k')) - before).toBe(10);
    await expectViewsEqualQueries(h, VIEWS, 'COPY');
    expect(await h.lines('select count(*), sum(id) from t')).toEqual(['1000 | 500500']);
  });

  it('a COPY that fails after chunks were pushed leaves the table and the views as they were', async () => {
    await copyIn('copy t from stdin', [lines(1, 50)]);
    const tableBefore = await h.lines('select * from t');
    const viewsBefore = await Promise.all(VIEWS.map(([name]) => h.lines(`select * from ${name}`)));
    const failures: string[] = [];
    for (const chunks of [
      [lines(51, 900), lines(700, 700)], // a key twice in this COPY, at line 851
      [lines(51, 900), lines(10, 10)], // a key committed before
      [lines(51, 900), '901\t1\tbad\n'], // a CHECK, verified after every row was written
    ]) {
      const error = (await copyIn('copy t from stdin', chunks).catch((caught: SqlError) => caught)) as SqlError;
      failures.push(`${error.code} ${error.context ?? ''}`);
      expect(await h.lines('select * from t')).toEqual(tableBefore);
      expect(await Promise.all(VIEWS.map(([name]) => h.lines(`select * from ${name}`)))).toEqual(viewsBefore);
    }
    expect(failures).toEqual(['23505 COPY t, line 851', '23505 COPY t, line 851', '23514 COPY t, line 851: "901\t1\tbad"']);
    await expectViewsEqualQueries(h, VIEWS, 'failed COPY');
  });

  it('the ROLLBACK of a block that ran a COPY writes its rows back, views included', async () => {
    await copyIn('copy t from stdin', [lines(1, 50)]);
    const tableBefore = await h.lines('select * from t');
    await h.run('begin');
    await copyIn('copy t from stdin', [lines(51, 600)]);
    await h.run('update t set k = 0 where id < 10');
    await h.run('rollback');
    expect(await h.lines('select * from t')).toEqual(tableBefore);
    await expectViewsEqualQueries(h, VIEWS, 'ROLLBACK');
  });
});
