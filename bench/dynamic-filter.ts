// Dynamic filters: a view `v > (SELECT max(x) FROM bound)` over a table of ROWS rows, and the time
// of a one-row UPDATE of `bound` that moves the bound by a few values (a few rows cross it), side by
// side with the same view planned the general way (the bound written `(SELECT max(x) FROM bound) + 0`
// is not a bare subquery, so the view keeps a keyless join against the whole table and recomputes
// it on every change). Also a one-row INSERT into the table under each view, and the backfills.
// The UPDATE returns once the view's changes committed with it. Each sample checks the view's row
// count against the bound (not timed). In-process engine on the RocksDB store.
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && npm run bench -- dynamic-filter   (ROWS=100000 by default; --scale 0.1)

import { BENCH_SCALE, median, milliseconds, openBenchEngine, reporter } from './support/harness.js';

const ROWS = Math.max(1000, Math.round(Number(process.env.ROWS ?? 100_000) * BENCH_SCALE));
const SAMPLES = 21;

const emit = reporter('dynamic-filter');
const bench = await openBenchEngine('dynamic', { memoryLimitBytes: 1024 * 1024 * 1024 });
const run = bench.run;

await run('create table facts (id int primary key, v int)');
await run('create table bound (k int primary key, x int)');
await run(`insert into facts select i, i from generate_series(0, ${ROWS - 1}) i`);
await run(`insert into bound values (1, ${ROWS / 2})`);

const VIEWS = [
  { name: 'dynamic filter', sql: 'select id, v from facts where v > (select max(x) from bound)' },
  { name: 'keyless join (general path)', sql: 'select id, v from facts where v > (select max(x) from bound) + 0' },
] as const;

for (const view of VIEWS) {
  let start = process.hrtime.bigint();
  await run(`create materialized view m as ${view.sql}`);
  emit(`${view.name}: backfill over ${ROWS} rows`, milliseconds(start), 'ms');
  const updates: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    // The bound walks back and forth around the middle: 0..5 rows cross it each time.
    const x = ROWS / 2 + ((sample * 7) % 11) - 5;
    start = process.hrtime.bigint();
    await run(`update bound set x = ${x} where k = 1`);
    updates.push(milliseconds(start));
    const count = Number((await run('select count(*) from m'))[0]![0]);
    if (count !== ROWS - 1 - x) throw new Error(`${view.name}: ${count} rows, expected ${ROWS - 1 - x}`);
  }
  emit(`${view.name}: one-row UPDATE of the bound to visible (median of ${SAMPLES})`, median(updates), 'ms');
  const inserts: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    start = process.hrtime.bigint();
    await run(`insert into facts values (${ROWS + sample}, ${ROWS + sample})`);
    inserts.push(milliseconds(start));
  }
  await run(`delete from facts where id >= ${ROWS}`);
  emit(`${view.name}: one-row INSERT into the table to visible (median of ${SAMPLES})`, median(inserts), 'ms');
  await run('drop materialized view m');
}
await bench.close();
