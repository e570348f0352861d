// The preamble the in-process engine benchmarks share: an engine on RocksDB in a temporary data
// directory (createEngine, checkpoints to a folder inside it), one session, `run` for SQL text
// (bench/engine.ts, lookup.ts, stream.ts, stream-join.ts, dynamic-filter.ts and soak.ts); a session
// and `runSql` for the suites that make their engine themselves (avro.ts, kafka.ts, nexmark.ts,
// pg-sink.ts); the command line's flags and BENCH_SCALE, the JSON-line reporter and the small
// statistics helpers.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type EngineOptions } from '../../executor/engine/create-engine.js';
import type { Engine, Session } from '../../executor/engine/engine.js';

export interface BenchEngine {
  readonly engine: Engine;
  readonly session: Session;
  readonly dataDir: string;
  /** Runs every statement of `sql` in order; the rows of the last statement that returns rows. */
  run(sql: string): Promise<unknown[][]>;
  /** Closes the engine and removes the data directory. */
  close(): Promise<void>;
}

export type BenchEngineOptions = Partial<Omit<EngineOptions, 'dataDir' | 'checkpointUrl'>>;

/** An engine in a new temporary directory `oxbow-bench-<name>-*`; defaults: barrier 1 s, checkpoint 10 s, retention 10 min, 256 MiB. */
export async function openBenchEngine(name: string, options: BenchEngineOptions = {}): Promise<BenchEngine> {
  const dataDir = mkdtempSync(join(tmpdir(), `oxbow-bench-${name}-`));
  let engine: Engine;
  try {
    engine = await createEngine({
      barrierIntervalMs: 1000,
      checkpointIntervalMs: 10_000,
      timeTravelRetentionMs: 600_000,
      memoryLimitBytes: 256 << 20,
      ...options,
      dataDir,
      checkpointUrl: `file://${dataDir}/checkpoints`,
    });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const session = openSession(engine);
  return {
    engine,
    session,
    dataDir,
    run: (sql: string) => runSql(session, sql),
    async close(): Promise<void> {
      try {
        await engine.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** A session of `engine` as user oxbow on database oxbow, its notices dropped. */
export function openSession(engine: Engine): Session {
  return engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
}

/** Runs every statement of `sql` in order on `session`; the rows of the last statement that returns rows. */
export async function runSql(session: Session, sql: string): Promise<unknown[][]> {
  let rows: unknown[][] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') rows = await result.cursor.next(0);
  }
  return rows;
}

/** A reporter printing `{"bench","metric","value","unit"}` lines, the value rounded to `digits` decimals. */
export function reporter(bench: string, digits = 3): (metric: string, value: number, unit: string) => void {
  return (metric, value, unit) => console.log(JSON.stringify({ bench, metric, value: Number(value.toFixed(digits)), unit }));
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Milliseconds since a `process.hrtime.bigint()` reading. */
export function milliseconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Seconds since a `process.hrtime.bigint()` reading. */
export function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** BENCH_SCALE (`npm run bench -- --scale X`), 1 when unset. */
export const BENCH_SCALE = Number(process.env['BENCH_SCALE'] ?? '1');

/** The value after `--name` in the command line, if any. */
export function flag(name: string): string | undefined {
  const args = process.argv.slice(2);
  const at = args.indexOf(name);
  return at < 0 ? undefined : args[at + 1];
}
