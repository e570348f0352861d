// Where a one-row INSERT's time goes, over the wire: a real `pg` client against the oxbow server
// (PgServer in this process, the engine on RocksDB in a temporary directory), thousands of
// `insert into lone values (N, G, 1)` one after another, each phase timed by wrapping the method
// that runs it (the wrappers' own cost, ~1 us each, is included):
//   prepareMany   the simple query's parse + classify (or the INSERT shape cache's lookup)
//   plan          view expansion + the planner (zero when the cached plan is used)
//   lock wait     the write lock, including the wait for earlier epochs to be durable
//   execute       the plan: bind, the INSERT's primary-key check read, the write into the open epoch
//   seal          the dataflows' flush (the views' operators) + the store's batch build and seal
//   durable wait  from the seal until the epoch's RocksDB write and WAL fsync are done
//   native write  the writeAsync call itself (libuv pool: memtable insert + fsync)
//   the rest      the wire (decode, reply, the client's own work) and the hops between phases
// With VIEW=group_by or VIEW=join, the INSERTs go into a ROWS-row table under that view (as
// bench/stream.ts). PROTOCOL picks how the client sends each INSERT: `simple` (default: a Query
// message with the literals), `named` (a named prepared statement executed with parameters: Bind,
// Execute, Sync; PREPARED=1 is the same) or `unnamed` (node-postgres' `client.query(text, values)`:
// Parse, Bind, Describe, Execute, Sync of the unnamed statement every time).
// KEYS=random scatters the ids over [2^30, 2^31) (default ascending: above every id written, so the primary-key
// check reads nothing since the state table's key bound; random ids make it seek RocksDB).
// Prints JSON lines {"bench","metric","value","unit"}, medians and means in ms.
// Run: npm run build && npm run bench -- insert-path   (ROWS=100000 N=3000 VIEW=group_by PROTOCOL=unnamed)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createEngine } from '../executor/engine/create-engine.js';
import { EngineSession } from '../executor/engine/session.js';
import { StatementPreparer } from '../executor/engine/statement-preparer.js';
import { EngineCore, WriteLock } from '../executor/engine/engine-core.js';
import { StreamManager } from '../executor/stream/stream-manager.js';
import { MvccStateStore } from '../storage/mvcc-state-store.js';
import { RocksDatabase } from '../storage/rocksdb.js';
import { PgServer } from '../pgwire/server.js';
import { reporter } from './support/harness.js';

const ROWS = Number(process.env.ROWS ?? 100_000);
const N = Number(process.env.N ?? 3000);
const WARM_UP = 300;
const VIEW = process.env.VIEW ?? 'none';
const PROTOCOL = process.env.PROTOCOL ?? (process.env.PREPARED === '1' ? 'named' : 'simple');
if (!['simple', 'named', 'unnamed'].includes(PROTOCOL)) throw new Error(`PROTOCOL=${PROTOCOL}: simple, named or unnamed`);
const KEYS = process.env.KEYS ?? 'ascending';
if (KEYS !== 'ascending' && KEYS !== 'random') throw new Error(`KEYS=${KEYS}: ascending or random`);
/**
 * The id of the n-th INSERT: n itself, or (KEYS=random) n scattered over [2^30, 2^31), above the
 * ROWS loaded ids, by a multiplication modulo 2^30 (odd factor: a bijection, so no id repeats);
 * most fall below an id already written, so the primary-key check cannot skip its read.
 */
const keyOf = (sequence: number): number => (KEYS === 'random' ? 0x40000000 + (Math.imul(sequence, 0x9e3779b1) & 0x3fffffff) : sequence);

const emit = reporter('insert-path');
const phases = new Map<string, number[]>();
let timing = false;
function record(phase: string, ms: number): void {
  if (!timing) return;
  let samples = phases.get(phase);
  if (samples === undefined) phases.set(phase, (samples = []));
  samples.push(ms);
}

type Method = (...args: unknown[]) => unknown;
function wrapSync(prototype: object, name: string, phase: string): void {
  const target = prototype as Record<string, Method>;
  const original = target[name];
  // Absent in an older build (a baseline worktree): nothing to time.
  if (original === undefined) return;
  target[name] = function (this: unknown, ...args: unknown[]) {
    const start = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      record(phase, performance.now() - start);
    }
  };
}

wrapSync(EngineSession.prototype, 'prepareMany', 'prepareMany (parse, classify; or the shape cache)');
wrapSync(EngineSession.prototype, 'prepare', 'prepare (Parse: parse and plan; or the statement cache)');
wrapSync(StatementPreparer.prototype, 'currentPlan', 'plan (ordinary path)');
wrapSync(StatementPreparer.prototype, 'shapePlan', 'plan (cached shape: lookup, re-plan on DDL)');
wrapSync(StreamManager.prototype, 'flush', 'seal: dataflow flush (the views)');
wrapSync(MvccStateStore.prototype, 'commitAsync', 'seal: store batch build + seal');
const lockRun = WriteLock.prototype.run;
WriteLock.prototype.run = function <T>(this: WriteLock, section: () => Promise<T> | T): Promise<T> {
  const called = performance.now();
  return lockRun.call(this, async () => {
    record('lock wait (earlier epochs durable)', performance.now() - called);
    const entered = performance.now();
    try {
      return await section();
    } finally {
      record('locked: execute + seal + durable wait', performance.now() - entered);
    }
  }) as Promise<T>;
};
const seal = EngineCore.prototype.seal;
EngineCore.prototype.seal = async function (this: EngineCore) {
  const start = performance.now();
  const sealed = await seal.call(this);
  record('seal total', performance.now() - start);
  const sealedAt = performance.now();
  void sealed.durable.then(() => record('durable wait (write + WAL fsync)', performance.now() - sealedAt));
  return sealed;
};
const writeAsync = RocksDatabase.prototype.writeAsync;
RocksDatabase.prototype.writeAsync = function (this: RocksDatabase, packed: Buffer, sync?: boolean) {
  const start = performance.now();
  const written = writeAsync.call(this, packed, sync);
  void written.then(() => record('native writeAsync (libuv pool)', performance.now() - start));
  return written;
};
const execute = EngineSession.prototype.execute;
EngineSession.prototype.execute = async function (this: EngineSession, ...args: Parameters<EngineSession['execute']>) {
  const start = performance.now();
  try {
    return await execute.apply(this, args);
  } finally {
    record('session.execute', performance.now() - start);
  }
};

const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-insert-path-'));
const engine = await createEngine({
  barrierIntervalMs: 1000,
  checkpointIntervalMs: 10_000,
  timeTravelRetentionMs: 600_000,
  memoryLimitBytes: 1 << 30,
  dataDir,
  checkpointUrl: `file://${dataDir}/checkpoints`,
});
const server = new PgServer({ engine, host: '127.0.0.1', port: 0 });
const { port } = await server.listen();
const client = new pg.Client({ host: '127.0.0.1', port, user: 'oxbow', database: 'oxbow' });
try {
  await client.connect();
  await client.query('create table lone (id int primary key, g int, v bigint)');
  await client.query('create table facts (id int primary key, g int, v bigint)');
  await client.query('create table dims (g int primary key, name text)');
  if (VIEW !== 'none') {
    await client.query(`insert into facts select i, i % 1000, i * 7 from generate_series(0, ${ROWS - 1}) i`);
    await client.query(`insert into dims select g, 'name ' || g from generate_series(0, 999) g`);
  }
  if (VIEW === 'group_by') await client.query('create materialized view v as select g, count(*) as n, sum(v) as total from facts group by g');
  else if (VIEW === 'join') await client.query('create materialized view v as select f.id, d.name, f.v from facts f join dims d on f.g = d.g');
  else if (VIEW !== 'none') throw new Error(`VIEW=${VIEW}: none, group_by or join`);
  const table = VIEW === 'none' ? 'lone' : 'facts';
  const parameterized = `insert into ${table} values ($1, $2, 1)`;
  const insert = (sequence: number) => {
    const id = keyOf(sequence);
    return PROTOCOL === 'named'
      ? client.query({ name: 'insert', text: parameterized, values: [id, id % 1000] })
      : PROTOCOL === 'unnamed'
        ? client.query(parameterized, [id, id % 1000])
        : client.query(`insert into ${table} values (${id}, ${id % 1000}, 1)`);
  };
  let id = ROWS;
  for (let warm = 0; warm < WARM_UP; warm++) await insert(id++);
  timing = true;
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  for (let sample = 0; sample < N; sample++) {
    const start = performance.now();
    await insert(id++);
    record('client round trip', performance.now() - start);
  }
  const wall = performance.now() - wallBefore;
  const cpu = process.cpuUsage(cpuBefore);
  timing = false;
  await new Promise((resolve) => setTimeout(resolve, 50));
  const label = `${VIEW === 'none' ? 'table no view reads' : `${ROWS} rows, ${VIEW} view`}${PROTOCOL === 'simple' ? '' : `, ${PROTOCOL} statement`}${KEYS === 'random' ? ', random keys' : ''}`;
  for (const [phase, samples] of [...phases].sort((a, b) => b[1].reduce((x, y) => x + y, 0) - a[1].reduce((x, y) => x + y, 0))) {
    const sorted = [...samples].sort((a, b) => a - b);
    emit(`${label}: ${phase}, median of ${samples.length}`, sorted[Math.floor(sorted.length / 2)]!, 'ms');
    emit(`${label}: ${phase}, mean`, samples.reduce((x, y) => x + y, 0) / samples.length, 'ms');
  }
  emit(`${label}: process CPU (user + system, every thread) per INSERT`, (cpu.user + cpu.system) / 1000 / N, 'ms');
  emit(`${label}: wall per INSERT`, wall / N, 'ms');
} finally {
  await client.end().catch(() => undefined);
  await server.close();
  await engine.close();
  rmSync(dataDir, { recursive: true, force: true });
}
