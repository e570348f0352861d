// Blind inserts in StreamMaterialize (materialize.ts): a view over an append-only source (a source
// without a primary key, then filters and projections) stores each row under its source row id
// with no lookup. Rows that look alike after the projection must all be there (the counts come
// from a batch recompute over the source's own rows), before and after the view's creation
// (streamed and backfilled rows), also read by a view on the view; views whose input keys can
// repeat (a table with a primary key, a table without one, an aggregate) keep counting duplicates.
import { describe, expect, it } from 'vitest';
import { harnessForEachTest, waitForRows as waitForRowsOf } from './stream-harness.js';

const ROWS = 3000;
const h = harnessForEachTest();

const waitForRows = (relation: string, count: number) => waitForRowsOf(h, relation, count, 1000);

/** A datagen source of ROWS rows: g a sequence 1..ROWS, x a random value in 1..3 (duplicates galore). */
async function source(name: string): Promise<void> {
  await h.run(
    `CREATE SOURCE ${name} (g int, x int, t varchar) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.x.min = '1', fields.x.max = '3', fields.t.length = '1', datagen.rows.per.second = '1000000', datagen.split.num = '2')`,
  );
}

describe('StreamMaterialize blind inserts', () => {
  it('a view over a source keeps every row of duplicate-looking rows, streamed and backfilled', async () => {
    await source('s');
    // Created before the source has read anything: its rows arrive as stream changes.
    await h.run('CREATE MATERIALIZED VIEW streamed AS SELECT x FROM s');
    await h.run("CREATE MATERIALIZED VIEW filtered AS SELECT x * 10 AS y, t FROM s WHERE x <> 2 AND t <> 'a'");
    await h.run('CREATE MATERIALIZED VIEW per_x AS SELECT x, count(*) AS n FROM streamed GROUP BY x');
    await waitForRows('s', ROWS);
    // Created after: the backfill pushes the source's rows through the same scan.
    await h.run('CREATE MATERIALIZED VIEW backfilled AS SELECT x FROM s');

    const expected = await h.lines('SELECT x, count(*) FROM s GROUP BY x');
    expect(expected.length).toBe(3);
    expect(expected.reduce((total, line) => total + Number(line.split(' | ')[1]), 0)).toBe(ROWS);
    expect(await h.lines('SELECT x, count(*) FROM streamed GROUP BY x')).toEqual(expected);
    expect(await h.lines('SELECT x, count(*) FROM backfilled GROUP BY x')).toEqual(expected);
    expect(await h.lines('SELECT x, n FROM per_x')).toEqual(expected);
    expect(await h.lines('SELECT y, t, count(*) FROM filtered GROUP BY y, t')).toEqual(await h.lines("SELECT x * 10, t, count(*) FROM s WHERE x <> 2 AND t <> 'a' GROUP BY x * 10, t"));
    expect(await h.lines('SELECT count(*) FROM streamed')).toEqual([String(ROWS)]);

    // Each view row is stored under its source row's id (the blind path), not a counted duplicate number.
    for (const view of ['streamed', 'backfilled', 'filtered']) {
      const rows = Number((await h.lines(`SELECT count(*) FROM ${view}`))[0]);
      expect(await h.lines(`SELECT count(*) FROM ${view} v JOIN s ON v._oxbow_duplicate = s._row_id`)).toEqual([String(rows)]);
    }
  });

  it('a view over a table with a primary key still upserts and deletes', async () => {
    await h.run('CREATE TABLE t (k int PRIMARY KEY, v int)');
    await h.run('CREATE MATERIALIZED VIEW tv AS SELECT v FROM t');
    await h.run('INSERT INTO t VALUES (1, 7), (2, 7), (3, 8)');
    await h.run('INSERT INTO t VALUES (1, 9), (4, 7) ON CONFLICT (k) DO UPDATE SET v = excluded.v');
    await h.run('UPDATE t SET v = 7 WHERE k = 3');
    await h.run('DELETE FROM t WHERE k = 2');
    // By hand: k1 = 9, k3 = 7, k4 = 7.
    expect(await h.lines('SELECT v FROM tv')).toEqual(['7', '7', '9']);
    expect(await h.lines('SELECT v FROM tv')).toEqual(await h.lines('SELECT v FROM t'));
    expect(await h.lines('SELECT _oxbow_duplicate FROM tv')).toEqual(['0', '0', '1']);
  });

  it('a view over a table without a primary key counts duplicates and deletes them', async () => {
    await h.run('CREATE TABLE r (v int)');
    await h.run('CREATE MATERIALIZED VIEW rv AS SELECT v FROM r');
    await h.run('INSERT INTO r VALUES (1), (1), (1), (2)');
    await h.run('DELETE FROM r WHERE v = 2');
    await h.run('UPDATE r SET v = 5 WHERE v = 1');
    await h.run('INSERT INTO r VALUES (5)');
    expect(await h.lines('SELECT v FROM rv')).toEqual(['5', '5', '5', '5']);
    expect(await h.lines('SELECT v FROM rv')).toEqual(await h.lines('SELECT v FROM r'));
    expect(await h.lines('SELECT _oxbow_duplicate FROM rv')).toEqual(['0', '1', '2', '3']);
  });
});
