// Planner and batch executor benchmark, no wire and no storage: parse + plan time per statement
// for a simple query and a 10-way join, and a scan / filter / aggregate over 1M in-memory rows,
// with the same aggregate run on a real PostgreSQL 15 in the same run as the yardstick.
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/planner.js   (ROWS=200000 for a quicker run)

import { initParser, parse } from '../sql/parser/index.js';
import { type as scalar } from '../sql/types.js';
import type { RelationDef } from '../sql/catalog.js';
import type { Row } from '../sql/value.js';
import { DEFAULT_EVAL_CONTEXT } from '../sql/functions.js';
import { planStatement } from '../planner/index.js';
import type { CatalogReader } from '../planner/catalog-reader.js';
import { executePlanned, type TableAccess } from '../executor/batch/index.js';
import { startPostgres } from '../test/support/postgres.js';

const ROWS = Number(process.env.ROWS ?? 1_000_000);

function emit(bench: string, metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench, metric, value: Number(value.toPrecision(6)), unit }));
}

function table(id: number, name: string): RelationDef {
  return {
    id,
    kind: 'table',
    schema: 'public',
    name,
    columns: [
      { name: 'id', type: scalar('int4'), nullable: false, hidden: false },
      { name: 'k', type: scalar('int4'), nullable: true, hidden: false },
      { name: 'v', type: scalar('int8'), nullable: true, hidden: false },
      { name: 's', type: scalar('text'), nullable: true, hidden: false },
    ],
    primaryKey: [0],
    dependsOn: [],
  };
}

const relations = Array.from({ length: 10 }, (_, i) => table(100 + i, `t${i}`));
const catalog: CatalogReader = {
  resolveRelation: (_schema, name) => relations.find((r) => r.name === name),
  relationById: (id) => relations.find((r) => r.id === id),
  schema: (name) => (name === 'public' ? { id: 2200, name } : undefined),
};
const context = { catalog, searchPath: ['public'], parameterTypes: [] };

function timePlanning(name: string, sql: string, iterations: number): void {
  for (let i = 0; i < 200; i++) planStatement(parse(sql)[0]!, context);
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) planStatement(parse(sql)[0]!, context);
  const micros = Number(process.hrtime.bigint() - start) / 1000 / iterations;
  emit('planner', `${name}_parse_plan`, micros, 'us/statement');
}

await initParser();
timePlanning('simple', 'select id, s from t0 where k = 3 and v > 10 order by id limit 10', 5000);
const joins = relations.slice(1).map((r, i) => `join ${r.name} on ${r.name}.id = t${i}.k`).join(' ');
timePlanning('join10', `select t0.id, t9.s from t0 ${joins} where t0.v > 5`, 1000);

// 1M rows: id, k in 0..99, v, s.
const rows: Row[] = new Array(ROWS);
for (let i = 0; i < ROWS; i++) rows[i] = [i, i % 100, BigInt(i * 7), `s${i % 1000}`];
const tables: TableAccess = {
  scan: () => rows,
  versions: () => [],
  get: () => undefined,
  insert: () => undefined,
  delete: () => undefined,
  nextRowId: () => 0n,
  epochAt: () => 0n,
};
const aggregateSql = 'select k, count(*), sum(v), avg(id) from t0 where id % 3 = 0 group by k';
const planned = planStatement(parse(aggregateSql)[0]!, context);
const run = () => executePlanned(planned, { tables, parameters: [], evalContext: DEFAULT_EVAL_CONTEXT, signal: new AbortController().signal });
await run();
let best = Infinity;
for (let i = 0; i < 3; i++) {
  const start = process.hrtime.bigint();
  const result = await run();
  if (result.rows.length !== 100) throw new Error(`expected 100 groups, got ${result.rows.length}`);
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
}
emit('planner', 'scan_filter_aggregate_oxbow', best, 'ms');
emit('planner', 'scan_filter_aggregate_oxbow_rows_per_second', ROWS / (best / 1000), 'rows/s');

const postgres = await startPostgres();
try {
  await postgres.query('create table t0 (id int primary key, k int, v bigint, s text)');
  await postgres.query(`insert into t0 select i, i % 100, i * 7, 's' || (i % 1000) from generate_series(0, ${ROWS - 1}) i`);
  await postgres.query('analyze t0');
  await postgres.query(aggregateSql);
  let bestPostgres = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint();
    await postgres.query(aggregateSql);
    bestPostgres = Math.min(bestPostgres, Number(process.hrtime.bigint() - start) / 1e6);
  }
  emit('planner', 'scan_filter_aggregate_postgres', bestPostgres, 'ms');
} finally {
  await postgres.stop();
}
