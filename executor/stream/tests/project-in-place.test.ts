// Rows rewritten in place on the way into a view. StreamProject over a table scan that nothing
// else reads, as wide as the scan, rewrites the scan's new rows (project.ts `takeInputRows`); a
// scan reading a generator source's rows that only its view reads narrows them in place
// (scan.ts, ChangeBatch.rowsOwned). Each row's outputs are computed before any of its columns is
// overwritten, so projections that swap columns or compute from columns they replace must give
// their query's rows, as must filters in the scan, projections narrower or wider than the scan,
// two scans of one source in one view, views on such views, backfills and tables that update and
// delete. Every view is compared with its query run by the batch executor over the same rows.
import { describe, expect, it } from 'vitest';
import { harnessForEachTest, waitForRows as waitForRowsOf } from './stream-harness.js';

const ROWS = 3000;
const h = harnessForEachTest();

/** A datagen source of ROWS rows: g a sequence 1..ROWS, x and y in 1..5, t two letters. */
async function source(name: string): Promise<void> {
  await h.run(
    `CREATE SOURCE ${name} (g int, x int, y int, t varchar) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.x.min = '1', fields.x.max = '5', fields.y.min = '1', fields.y.max = '5', fields.t.length = '1', datagen.rows.per.second = '1000000', datagen.split.num = '2')`,
  );
}

/** Each view against its query, as multisets (counts per distinct row). */
async function expectViews(views: readonly (readonly [string, string])[]): Promise<void> {
  for (const [name, query] of views) {
    const expected = await h.lines(query);
    expect(expected.length, name).toBeGreaterThan(0);
    expect(await h.lines(`SELECT * FROM ${name}`), name).toEqual(expected);
  }
}

describe('StreamProject in place over a scan', () => {
  it('swapped, computed, narrower and wider projections over a source equal their queries', async () => {
    await source('s');
    const views = [
      // As wide as the scan (x, y): the first output replaces x, which the second still reads.
      ['swap', 'SELECT y AS x, x * 10 + y AS xy FROM s'],
      // As wide as the scan (g, x, y, t), every column moved.
      ['moved', 'SELECT y - x AS d, x + y AS total, g * 2 AS g2, t FROM s'],
      ['narrow', 'SELECT x + y AS total FROM s'],
      ['wide', 'SELECT g, x, y, x AS x2, y AS y2, t, t AS t2, g + x AS gx FROM s'],
      ['pair', 'SELECT a.y AS ay, a.x * 10 + a.y AS axy, b.g AS bg FROM s AS a JOIN s AS b ON a.g = b.g + 1'],
    ] as const;
    for (const [name, query] of views) await h.run(`CREATE MATERIALIZED VIEW ${name} AS ${query}`);
    await h.run('CREATE MATERIALIZED VIEW on_swap AS SELECT x, count(*) AS n, sum(xy) AS total FROM swap GROUP BY x');
    const plan = (await h.run(`EXPLAIN CREATE MATERIALIZED VIEW probe AS ${views[0][1]}`)).rows.map((row) => row[0]).join('\n');
    expect(plan).toMatch(/Project[\s\S]*Scan/);
    await waitForRowsOf(h, 's', ROWS, 1000);
    await expectViews([...views, ['on_swap', 'SELECT y, count(*), sum(x * 10 + y) FROM s GROUP BY y']]);
    expect(await h.lines('SELECT count(*) FROM swap')).toEqual([String(ROWS)]);
    // Created after the source has read: the backfill pushes the rows through the same nodes.
    await h.run(`CREATE MATERIALIZED VIEW swap_later AS ${views[1][1]}`);
    await expectViews([['swap_later', views[1][1]]]);
  });

  it('a source one view reads: its rows narrowed in place by the scan, filtered or not', async () => {
    // Each source read by one view alone (the scan may take the generator's rows), one of them
    // also read by a view on its view.
    await source('f');
    await source('u');
    const filtered = "SELECT y AS x, x * 10 + y AS xy, g, t FROM f WHERE x <> 3 AND t <> 'a'";
    const plain = 'SELECT t, y, g FROM u';
    await h.run(`CREATE MATERIALIZED VIEW only_f AS ${filtered}`);
    await h.run(`CREATE MATERIALIZED VIEW only_u AS ${plain}`);
    await h.run('CREATE MATERIALIZED VIEW on_u AS SELECT y, count(*) AS n, max(g) AS last FROM only_u GROUP BY y');
    await waitForRowsOf(h, 'f', ROWS, 1000);
    await waitForRowsOf(h, 'u', ROWS, 1000);
    await expectViews([
      ['only_f', filtered],
      ['only_u', plain],
      ['on_u', 'SELECT y, count(*), max(g) FROM u GROUP BY y'],
    ]);
    expect(await h.lines('SELECT count(*) FROM only_u')).toEqual([String(ROWS)]);
    // Stored under their source rows' ids (the blind path): the id came from the row before it was narrowed.
    expect(await h.lines('SELECT count(*) FROM only_u v JOIN u ON v._oxbow_duplicate = u._row_id AND v.g = u.g')).toEqual([String(ROWS)]);
  });

  it("a projection wider or narrower than its scan, written into the source's rows (ChangeBatch.rowCapacity)", async () => {
    // A source row has 5 slots (g, x, y, t and its row id). Each source is read by one view alone.
    await source('w1');
    await source('w2');
    await source('w3');
    await source('w4');
    const views = [
      // Two columns read, four written (and the id): the row's five slots, grown in place.
      ['grow', 'SELECT y AS a, x AS b, x * 10 + y AS xy, split_part(t, t, 2) AS empty FROM w1'],
      // Three columns read, two written: the row cut to two, with the filter in the scan.
      ['cut', 'SELECT g + y AS gy, x FROM w2 WHERE y <> 2'],
      // Two read, five written: more than the row has slots, a new row each.
      ['wider', 'SELECT x, y, x + y AS s, x * y AS p, x - y AS d FROM w3'],
      // One read, four written, the read column last.
      ['spread', "SELECT t || '1' AS a, t || '2' AS b, length(t) AS n, t FROM w4"],
    ] as const;
    for (const [name, query] of views) await h.run(`CREATE MATERIALIZED VIEW ${name} AS ${query}`);
    for (const name of ['w1', 'w2', 'w3', 'w4']) await waitForRowsOf(h, name, ROWS, 1000);
    await expectViews(views);
    expect(await h.lines('SELECT count(*) FROM grow')).toEqual([String(ROWS)]);
    expect(await h.lines('SELECT count(*) FROM spread')).toEqual([String(ROWS)]);
  });

  it('over a table that updates and deletes', async () => {
    await h.run('CREATE TABLE t (k int PRIMARY KEY, a int, b text)');
    const query = "SELECT b || '!' AS b, a AS k, k AS a FROM t";
    await h.run(`CREATE MATERIALIZED VIEW tv AS ${query}`);
    await h.run("INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z')");
    await h.run("UPDATE t SET a = a + 1, b = 'w' WHERE k <> 2");
    await h.run('DELETE FROM t WHERE k = 3');
    await h.run("INSERT INTO t VALUES (3, 33, 'v')");
    // By hand: (1, 11, 'w'), (2, 20, 'y'), (3, 33, 'v').
    expect(await h.lines('SELECT * FROM tv')).toEqual(['v! | 33 | 3', 'w! | 11 | 1', 'y! | 20 | 2']);
    await expectViews([['tv', query]]);
  });
});
