// Dynamic filters: a view `v > (SELECT max(x) FROM bound)` over a table of ROWS rows, and the time
// of a one-row UPDATE of `bound` that moves the bound by a few values (a few rows cross it), side by
// side with the same view planned the general way (the bound written `(SELECT max(x) FROM bound) + 0`
// is not a bare subquery, so the view keeps a keyless join against the whole table and recomputes
// it on every change). Also a one-row INSERT into the table under each view, and the backfills.
// The UPDATE returns once the view's changes committed with it. Each sample checks the view's row
// count against the bound (not timed). In-process engine on the RocksDB store.
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && npm run bench -- dynamic-filter   (ROWS=100000 by default; --scale 0.1)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../executor/create-engine.js';
import type { Session } from '../executor/engine.js';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const ROWS = Math.max(1000, Math.round(Number(process.env.ROWS ?? 100_000) * SCALE));
const SAMPLES = 21;

function emit(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'dynamic-filter', metric, value: Number(value.toFixed(3)), unit }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function milliseconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-dynamic-'));
const engine = await createEngine({
  dataDir,
  checkpointUrl: `file://${dataDir}/checkpoints`,
  barrierIntervalMs: 1000,
  checkpointIntervalMs: 10_000,
  timeTravelRetentionMs: 600_000,
  memoryLimitBytes: 1024 * 1024 * 1024,
});
const session: Session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });

async function run(sql: string): Promise<unknown[][]> {
  let rows: unknown[][] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') rows = await result.cursor.next(0);
  }
  return rows;
}

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
await engine.close();
rmSync(dataDir, { recursive: true, force: true });
