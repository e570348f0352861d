// The streaming join side by side in one process: the same join views over the same data, created
// once with the keyed recompute (plan version 1, how views were made before StreamHashJoin) and
// once with StreamHashJoin (plan version 2), and measured alike: the backfill, then one-row changes
// to visible (the DML returns once its epoch, view included, has committed), in the order
// recompute, hash join, hash join, recompute. Each figure is given
// as wall time and as this process's CPU time (user + system, RocksDB's threads included), the
// latter being what a loaded machine distorts least.
//
// Run: npm run build && npm run bench -- stream-join   (ROWS=200000 default; DIMS=1000 dims, so
// ROWS / DIMS facts per join key; not GROUPS, which bash reserves)

import { streamPlanDefaults } from '../executor/ddl/create-materialized-view.js';
import { median, openBenchEngine, reporter } from './support/harness.js';

const ROWS = Number(process.env.ROWS ?? 200_000);
const GROUPS = Number(process.env.DIMS ?? 1000);
const SAMPLES = 31;

const VIEWS = [
  // Many-to-one: a fact change probes one dim row; the recompute reads the key's ROWS / GROUPS facts.
  { name: 'inner', sql: 'select f.id, d.name, f.v from facts f join dims d on f.g = d.g' },
  // Outer with the preserved side the "one" side: degrees on dims.
  { name: 'left', sql: 'select d.g, d.name, f.id from dims d left join facts f on f.g = d.g' },
] as const;
const RECOMPUTE = { name: 'recompute', version: 1 } as const;
const HASH_JOIN = { name: 'hash join', version: 2 } as const;
/** A B B A: whatever drifts during the run (RocksDB compactions after the load count as CPU) hits both alike. */
const MODES = [RECOMPUTE, HASH_JOIN, HASH_JOIN, RECOMPUTE] as const;

const emit = reporter('stream-join', 3);

const { run, close } = await openBenchEngine('stream-join', { memoryLimitBytes: 4096 * 1024 * 1024 });

/** Wall and CPU milliseconds of one awaited action. */
async function timed(action: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  await action();
  const wall = Number(process.hrtime.bigint() - start) / 1e6;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
}

await run('create table facts (id int primary key, g int, v bigint)');
await run('create table dims (g int primary key, name text)');
await run(`insert into facts select i, i % ${GROUPS}, i * 7 from generate_series(0, ${ROWS - 1}) i`);
await run(`insert into dims select g, 'name ' || g from generate_series(0, ${GROUPS - 1}) g`);

let nextId = ROWS;
try {
  for (const view of VIEWS) {
    for (let round = 0; round < MODES.length; round++) {
      const mode = MODES[round]!;
      streamPlanDefaults.version = mode.version;
      const label = `${view.name} join view (${mode.name}, run ${round < 2 ? 1 : 2})`;
      const backfill = await timed(() => run(`create materialized view v as ${view.sql}`));
      emit(`${label}: backfill over ${ROWS} facts`, backfill.wall, 'ms');
      emit(`${label}: backfill over ${ROWS} facts, CPU`, backfill.cpu, 'ms');
      const kinds = (await run("select kind from oxbow_catalog.dataflow where view_name = 'v'")).map((row) => String(row[0]));
      const expected = mode.version === 1 ? 'StreamRecomputeJoin' : 'StreamHashJoin';
      if (!kinds.includes(expected)) throw new Error(`${label}: expected ${expected} in the dataflow, got ${kinds.join(', ')}`);
      const facts: { wall: number; cpu: number }[] = [];
      const dims: { wall: number; cpu: number }[] = [];
      for (let sample = 0; sample < SAMPLES; sample++) {
        const id = nextId++;
        const g = (sample * 37) % GROUPS;
        facts.push(await timed(() => run(`insert into facts values (${id}, ${g}, 1)`)));
        const probe = await run(`select count(*) from v where id = ${id}`);
        if (Number(probe[0]![0]) !== 1) throw new Error(`${label}: the inserted fact is not visible`);
        dims.push(await timed(() => run(`update dims set name = 'renamed ${sample}' where g = ${g}`)));
      }
      emit(`${label}: one-row INSERT into facts to visible (median of ${SAMPLES})`, median(facts.map((t) => t.wall)), 'ms');
      emit(`${label}: one-row INSERT into facts, CPU (median of ${SAMPLES})`, median(facts.map((t) => t.cpu)), 'ms');
      emit(`${label}: one-row UPDATE of a dim (${Math.round(ROWS / GROUPS)} joined rows change) to visible (median of ${SAMPLES})`, median(dims.map((t) => t.wall)), 'ms');
      emit(`${label}: one-row UPDATE of a dim, CPU (median of ${SAMPLES})`, median(dims.map((t) => t.cpu)), 'ms');
      await run('drop materialized view v');
    }
  }
} finally {
  streamPlanDefaults.version = 2;
  await close();
}
