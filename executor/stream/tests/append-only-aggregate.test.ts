// min / max over an append-only input (hash-aggregate.ts `appendOnly`): no value table, the state
// row's value and the inserted ones decide. Views over datagen sources (no primary key: append-only)
// with min / max of several types, FILTER, a DISTINCT count sharing min's argument (its value table
// is still fed), a keyless aggregate and an inner join of two sources, created before the sources
// read anything (streamed) and after (backfilled), must equal the same query run in batch over the
// sources' rows. The pass's property: which plans count as append-only.

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { CatalogReader } from '../../../planner/catalog-reader.js';
import { planStream } from '../../../planner/stream/index.js';
import type { StreamPlan } from '../../../planner/stream/stream-plan.js';
import { streamInputs } from '../../../planner/stream/stream-plan.js';
import { insertsOnly } from '../../../planner/stream/unique-key.js';
import { harnessForEachTest, waitForRows as waitForRowsOf } from './stream-harness.js';

const ROWS = 3000;
const SMALL = 300;
const h = harnessForEachTest();

const waitForRows = (relation: string, count: number) => waitForRowsOf(h, relation, count, 1500);

const QUERIES: Record<string, string> = {
  grouped:
    'SELECT x % 7 AS b, min(g) AS ming, max(g) AS maxg, max(x) AS maxx, min(t) AS mint, max(t) AS maxt, min(x) FILTER (WHERE g % 3 = 0) AS minx3, count(DISTINCT x) AS dx, count(*) AS n FROM s GROUP BY x % 7',
  keyless: 'SELECT min(x) AS minx, max(g) AS maxg, max(t) AS maxt FROM s',
  joined: 'SELECT a.x, max(b.g) AS maxg, min(a.g + b.g) AS minsum, count(*) AS n FROM s a JOIN s2 b ON a.x = b.x GROUP BY a.x',
};

describe('min / max over an append-only input', () => {
  it('equal the batch query over the sources, streamed and backfilled', async () => {
    // g: 1..N in order; x: random 1..40 (many equal values per group); t: random text.
    await h.run(
      `CREATE SOURCE s (g int, x int, t varchar) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.x.min = '1', fields.x.max = '40', fields.t.length = '3', datagen.rows.per.second = '1000000', datagen.split.num = '2')`,
    );
    await h.run(
      `CREATE SOURCE s2 (g int, x int) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${SMALL}', fields.x.min = '1', fields.x.max = '40', datagen.rows.per.second = '1000000', datagen.split.num = '1')`,
    );
    for (const [name, query] of Object.entries(QUERIES)) await h.run(`CREATE MATERIALIZED VIEW streamed_${name} AS ${query}`);
    await waitForRows('s', ROWS);
    await waitForRows('s2', SMALL);
    for (const [name, query] of Object.entries(QUERIES)) await h.run(`CREATE MATERIALIZED VIEW backfilled_${name} AS ${query}`);
    // Every source row is in (a barrier committed the last ones with the views' changes).
    await waitForRows('streamed_keyless', 1);
    for (let attempt = 0; attempt < 500; attempt++) {
      const n = await h.lines('SELECT sum(n) FROM streamed_grouped');
      if (Number(n[0]) === ROWS) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const [name, query] of Object.entries(QUERIES)) {
      const expected = await h.lines(query);
      expect(expected.length, name).toBeGreaterThan(0);
      expect(await h.lines(`SELECT * FROM streamed_${name}`), `streamed ${name}`).toEqual(expected);
      expect(await h.lines(`SELECT * FROM backfilled_${name}`), `backfilled ${name}`).toEqual(expected);
    }
    // By hand: g runs 1..ROWS, so the keyless max(g) is ROWS.
    expect((await h.lines('SELECT maxg FROM streamed_keyless'))[0]).toBe(String(ROWS));
  }, 120_000);
});

describe('appendOnly', () => {
  const int4 = scalar('int4');
  const int8 = scalar('int8');
  const visible = (name: string) => ({ name, type: int4, nullable: true, hidden: false });
  const relations: RelationDef[] = [
    { id: 100, kind: 'source', schema: 'public', name: 'src', columns: [visible('k'), visible('v'), { name: '_row_id', type: int8, nullable: false, hidden: true }], primaryKey: [2], dependsOn: [] },
    { id: 101, kind: 'table', schema: 'public', name: 'tab', columns: [visible('k'), visible('v')], primaryKey: [0], dependsOn: [] },
  ];
  const catalog: CatalogReader = {
    resolveRelation: (_schema, name) => relations.find((relation) => relation.name === name),
    relationById: (id) => relations.find((relation) => relation.id === id),
    schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
  };
  beforeAll(async () => {
    await initParser();
  });
  /** appendOnly of the input of the plan's first StreamHashAggregate. */
  const aggregateInput = (sql: string): boolean => {
    let next = 1000;
    const stream = planStream(parse(sql)[0]!.node as never, { catalog, searchPath: ['public'], parameterTypes: [] }, { relationId: 900, name: 'v', allocateStateTableId: () => next++ }).stream;
    const find = (plan: StreamPlan): StreamPlan | undefined => (plan.kind === 'StreamHashAggregate' ? plan : streamInputs(plan).map(find).find((found) => found !== undefined));
    const aggregate = find(stream);
    if (aggregate === undefined || aggregate.kind !== 'StreamHashAggregate') throw new Error(`no StreamHashAggregate in ${sql}`);
    return insertsOnly(aggregate.inputs[0]!);
  };

  it('holds for sources through filters, projections and inner joins of sources, not for tables, outer joins or aggregates', () => {
    expect(aggregateInput('select k, max(v) from src where v > 1 group by k')).toBe(true);
    expect(aggregateInput('select a.k, max(b.v) from src a join src b on a.k = b.k group by a.k')).toBe(true);
    expect(aggregateInput('select k, max(v) from tab group by k')).toBe(false);
    expect(aggregateInput('select a.k, max(b.v) from src a join tab b on a.k = b.k group by a.k')).toBe(false);
    expect(aggregateInput('select a.k, max(b.v) from src a left join src b on a.k = b.k group by a.k')).toBe(false);
    expect(aggregateInput('select m, max(n) from (select k as m, count(*) as n from src group by k) c group by m')).toBe(false);
  });
});

describe('min / max over a watermark filter (EMIT ON WINDOW CLOSE over an append-only source)', () => {
  it('equal the batch query over the rows the watermark let through, in the closed windows', async () => {
    // ts: random within a minute before the base time, so the watermark (ts - 5 s) drops most rows
    // after the first chunks. `passed` emits the rows the watermark let through once their window
    // closed (its own watermark filter sees the same chunks); the aggregate's closed windows must be
    // the batch query over those rows, in the windows the aggregate emitted up to.
    await h.run(
      `CREATE SOURCE s (g int, ts timestamp, x int, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.ts.max_past = '60 seconds', fields.ts.basetime = '2026-01-01 00:00:00', fields.x.min = '1', fields.x.max = '1000', datagen.rows.per.second = '1000000', datagen.split.num = '2')`,
    );
    const windowed = "SELECT window_end, max(x) AS maxx, min(x) AS minx, count(*) AS n FROM TUMBLE(s, ts, INTERVAL '10' SECOND) GROUP BY window_end";
    await h.run(`CREATE MATERIALIZED VIEW w_extremes AS ${windowed} EMIT ON WINDOW CLOSE`);
    await h.run("CREATE MATERIALIZED VIEW passed AS SELECT g, ts, x, date_bin(INTERVAL '10' SECOND, ts, TIMESTAMP '1970-01-01') + INTERVAL '10' SECOND AS window_end FROM s EMIT ON WINDOW CLOSE");
    await waitForRows('s', ROWS);
    await waitForRows('w_extremes', 1);
    const expected = await h.lines('SELECT window_end, max(x), min(x), count(*) FROM passed WHERE window_end <= (SELECT max(window_end) FROM w_extremes) GROUP BY window_end ORDER BY window_end');
    expect(expected.length).toBeGreaterThan(0);
    expect(await h.lines('SELECT * FROM w_extremes ORDER BY window_end')).toEqual(expected);
    // Late rows were dropped (and counted), so the check covered the filter's drops.
    expect(Number((await h.lines('SELECT count(*) FROM passed'))[0])).toBeLessThan(ROWS);
  }, 120_000);
});
