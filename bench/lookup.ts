// Primary-key point lookups (planner rule index_lookup) against the full scan they replace, on a
// table of 1M rows in the RocksDB store, through the engine facade without the wire: `WHERE id =
// n` and `WHERE id IN (10 keys)` with the lookup, and the same predicates written `id + 0 = n`
// (which the rule does not match) as the before-figure, in the same run. Prints JSON lines
// {"bench","metric","value","unit"}. Then the same for secondary indexes (CREATE INDEX on the
// non-key columns): point SELECTs through the index against the full scan, the index builds, and
// an UPDATE that maintains two indexes. Run: npm run build && npm run bench -- lookup [--scale 0.1]

import { BENCH_SCALE, openBenchEngine } from './support/harness.js';

const rows = Math.max(1000, Math.round(1_000_000 * BENCH_SCALE));
const bench = await openBenchEngine('lookup', { checkpointIntervalMs: 60_000 });
/** Runs SQL; the number of rows the last statement returned. */
const run = async (sql: string): Promise<number> => (await bench.run(sql)).length;

function report(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'lookup', metric, value: Number(value.toPrecision(4)), unit }));
}

await run('create table big (id int primary key, v text, n int)');
for (let from = 1; from <= rows; from += 250_000) {
  await run(`insert into big select g, 'value ' || g, g % 1000 from generate_series(${from}, ${Math.min(rows, from + 249_999)}) g`);
}

let seed = 42;
const nextKey = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return 1 + (seed % rows);
};

async function time(metric: string, repeats: number, sql: (key: number) => string, expected: number): Promise<void> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < repeats; i++) {
    const got = await run(sql(nextKey()));
    if (got !== expected) throw new Error(`${metric}: ${got} rows, expected ${expected}`);
  }
  report(metric, Number(process.hrtime.bigint() - start) / 1e6 / repeats, 'ms/query');
}

const inList = (key: number) => Array.from({ length: 10 }, (_, i) => 1 + ((key + i * 7919) % rows)).join(', ');
await time(`point SELECT by primary key, lookup (${rows} rows)`, 2000, (key) => `select v from big where id = ${key}`, 1);
await time(`point SELECT by primary key, full scan (${rows} rows)`, 5, (key) => `select v from big where id + 0 = ${key}`, 1);
await time(`IN list of 10 keys, lookup (${rows} rows)`, 1000, (key) => `select v from big where id in (${inList(key)})`, 10);
await time(`IN list of 10 keys, full scan (${rows} rows)`, 5, (key) => `select v from big where id + 0 in (${inList(key)})`, 10);
await time(`UPDATE by primary key, lookup (${rows} rows)`, 200, (key) => `update big set n = n + 1 where id = ${key}`, 0);

// Secondary indexes (CREATE INDEX): a point SELECT by a non-key column with one value per row
// (v) and one shared by ~rows/1000 rows (n), through the index and as the full scan
// (`v || '' = ...`, `n + 0 = ...`); what building the index costs, and what it adds to an UPDATE.
let start = process.hrtime.bigint();
await run('create index big_v on big (v)');
report(`CREATE INDEX on a text column (${rows} rows)`, Number(process.hrtime.bigint() - start) / 1e6, 'ms');
start = process.hrtime.bigint();
await run('create index big_n on big (n)');
report(`CREATE INDEX on an int column (${rows} rows)`, Number(process.hrtime.bigint() - start) / 1e6, 'ms');
await time(`point SELECT by indexed non-key column, index lookup (${rows} rows)`, 2000, (key) => `select id from big where v = 'value ${key}'`, 1);
await time(`point SELECT by indexed non-key column, full scan (${rows} rows)`, 5, (key) => `select id from big where v || '' = 'value ${key}'`, 1);
const perValue = await run(`select id from big where n + 0 = 500`);
await time(`SELECT of ${perValue} rows by an indexed int column, index lookup (${rows} rows)`, 50, () => 'select id from big where n = 500', perValue);
await time(`SELECT of ${perValue} rows by an indexed int column, full scan (${rows} rows)`, 5, () => 'select id from big where n + 0 = 500', perValue);
await time(`UPDATE by primary key with two secondary indexes (${rows} rows)`, 200, (key) => `update big set n = n + 1, v = v || '' where id = ${key}`, 0);

await bench.close();
