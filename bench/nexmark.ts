// Nexmark: each query of bench/nexmark/ (qN.sql) as a materialized view over the built-in
// generator sources of bench/nexmark/sources.sql (connector = 'nexmark'), in an in-process
// engine on RocksDB. Timed from the first CREATE SOURCE (the first event) to the epoch that commits
// the last event of every source the query reads (views are maintained in the same commit).
// `events` counts Nexmark events (all kinds; a Bid source reads the 92% that are bids), as the
// peers count them. Each query runs in its own child process, so peak RSS is the query's.
//
// Prints JSON lines {"bench":"nexmark-qN","metric","value","unit"}: events_per_second,
// events_per_cpu_second (per core: events / (user + system CPU seconds)), peak_rss (MiB), and
// whether memory stays flat: the RSS is sampled every second of the run, and rss_first_quarter /
// rss_last_quarter (MiB) are the mean of the samples in the first and in the last quarter of it;
// whether throughput stays flat as the view grows: events_per_second_first_quarter / _last_quarter,
// the rate of committed events over the first and the last quarter of the run; data_dir (MiB), the
// data directory's size at the end; on Linux, where the CPU went (support/thread-cpu.ts, from
// /proc): cpu_seconds_<group> for the main thread, the worker threads, RocksDB's background
// threads, libuv's pool (the epoch writes), V8's platform threads (GC helpers, compilation), other
// threads and threads that ended, cpu_seconds_total, and cores_used (CPU-seconds over wall seconds),
// all over the timed part. `--rocksdb-log FILE` copies RocksDB's LOG (flushes,
// compactions, write stalls) to FILE at the end of the run.
// `--memory-trace FILE` writes each second's memory breakdown (the status API's memory(), what
// oxbow_catalog.memory shows, plus V8's heap spaces) to FILE as JSON lines; `--heap-snapshot FILE`
// writes a V8 heap snapshot at the end of the run, before the engine closes.
// Run: npm run build && npm run bench -- nexmark --queries q0,q1 --events 1000000
//   (any of q0-q22, bench/nexmark/README.md says which oxbow runs; defaults: q0,q1,q2,q3,q4,q5,q7,q8 and 1,000,000 events times BENCH_SCALE; --split-num K,
//   --chunk-size R, --form view|sink|window (sink: each query as CREATE SINK ... AS <its SELECT> WITH (connector = 'blackhole'), bench/support/nexmark-sink.ts;
//   window: q5, q7 and q8 in Flink's event-time form, qN-window.sql over sources WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND), --barrier-interval-ms M, --memory-limit-mib L (default 1024), --heap-growing-percent P (default the engine's; 0: V8's own), --parallelism N (the engine's, default 1; reported as nexmark-qN-pN), --cores N (the engine's, default the machine's: a view's source fragment takes min(N, cores - 1) workers); the query `source` is the Bid source alone, no view:
//   the ceiling the generator and the source's own table set; `generator` is the generator alone)
// The smoke test (test/nexmark/bench.test.ts) calls runNexmarkQuery with a small event count and
// checks the view's contents.

import { spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { EngineMetrics } from '../executor/metrics/engine-metrics.js';
import { createEngine } from '../executor/engine/create-engine.js';
import type { Engine } from '../executor/engine/engine.js';
import { NexmarkGenerator } from '../executor/connectors/generators/nexmark-generator.js';
import { asBlackholeSink } from './support/nexmark-sink.js';
import { cpuSecondsByGroup, readCpuSnapshot, THREAD_GROUPS, ticksPerSecond, type ThreadGroup } from './support/thread-cpu.js';
import { BENCH_SCALE, flag, openSession, runSql } from './support/harness.js';
import type { Row } from '../sql/value.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The repository's root (this file runs from bench/ under vitest and from dist/bench/ built). */
const ROOT = HERE.endsWith(join('dist', 'bench')) ? join(HERE, '..', '..') : join(HERE, '..');
/** oxbow's Nexmark queries, one file per query (qN.sql), and the sources they read (sources.sql). */
export const QUERY_DIR = join(ROOT, 'bench', 'nexmark');
/** The queries the benchmark runs by default. */
export const ALL_QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8'];
/** The queries with a windowed form (qN-window.sql, --form window). */
export const WINDOW_QUERIES = ['q5', 'q7', 'q8'];
/** The sources' watermark in the windowed form, as the Nexmark suite declares it for Flink. */
export const WINDOW_WATERMARK = "WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND";
/** Every query of bench/nexmark/, q0 to q22. */
export const NEXMARK_QUERIES = Array.from({ length: 23 }, (_, n) => `q${n}`);

type SourceName = 'bid' | 'auction' | 'person';

/** SQL text without its `--` line comments (the query files use no `--` inside strings). */
function withoutComments(text: string): string {
  return text.replace(/--[^\n]*/g, '');
}

/** sources.sql's CREATE SOURCE statements by source name, with their {events}, {splits} and {chunk_size} blanks. */
const SOURCE_TEMPLATES = new Map<string, string>();
/** Each source's column list, as written in sources.sql. */
export const SOURCE_COLUMNS = {} as Record<SourceName, string>;
for (const statement of withoutComments(readFileSync(join(QUERY_DIR, 'sources.sql'), 'utf8')).split(';')) {
  const match = /CREATE\s+SOURCE\s+(\w+)\s*\(([^)]*)\)/i.exec(statement);
  if (match === null) continue;
  const name = match[1]!.toLowerCase() as SourceName;
  SOURCE_TEMPLATES.set(name, statement.trim().replace(/\s+/g, ' '));
  SOURCE_COLUMNS[name] = match[2]!.trim().replace(/\s+/g, ' ');
}

export interface NexmarkRunOptions {
  readonly query: string;
  readonly events: number;
  readonly splits?: number;
  readonly chunkSize?: number;
  readonly barrierIntervalMs?: number;
  /** The engine's --memory-limit (default 1 GiB). */
  readonly memoryLimitBytes?: number;
  /** V8's heap growth past the live heap (executor/heap-growth.ts; default the engine's, 0: V8's own). */
  readonly heapGrowingPercent?: number;
  /** The engine's --parallelism (default 1). */
  readonly parallelism?: number;
  /** The engine's --cores (default the machine's): a view's source fragment takes min(parallelism, cores - 1) workers. */
  readonly cores?: number;
  /** Keep the engine open and hand it to `inspect` before closing (the smoke test reads the view). */
  readonly inspect?: (run: (sql: string) => Promise<unknown[][]>) => Promise<void>;
  /** Each second's memory breakdown (status API memory() and V8's heap spaces) as JSON lines into this file. */
  readonly memoryTrace?: string;
  /** A V8 heap snapshot written here at the end of the run, before the engine closes. */
  readonly heapSnapshot?: string;
  /** RocksDB's own LOG (flushes, compactions, stalls, its statistics dumps) copied here at the end of the run. */
  readonly rocksdbLog?: string;
  /**
   * `sink`: the query as CREATE SINK ... WITH (connector = 'blackhole') instead of a view
   * (support/nexmark-sink.ts); `window`: its windowed form (qN-window.sql) over sources with WINDOW_WATERMARK.
   */
  readonly form?: NexmarkForm;
}

export type NexmarkForm = 'view' | 'sink' | 'window';

export interface NexmarkRunResult {
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly sources: readonly string[];
  /** The process's RSS (bytes) sampled every second of the run, with the second it was taken at. */
  readonly rssSamples: readonly { readonly atSeconds: number; readonly bytes: number }[];
  /** The events committed (summed over the sources, each source's count divided by their number), polled every 10 ms. */
  readonly progress: readonly { readonly atSeconds: number; readonly events: number }[];
  /** The data directory's bytes (RocksDB's files, checkpoints) at the end of the run, before the engine closes. */
  readonly dataDirBytes: number;
  /** CPU-seconds of the timed part per thread group and in all (support/thread-cpu.ts); undefined without /proc. */
  readonly threadCpu: { readonly groups: Record<ThreadGroup, number>; readonly total: number } | undefined;
}

/** The events/s between the samples taken at `from` and `to` seconds (the first at or after each). */
export function rateBetween(progress: NexmarkRunResult['progress'], from: number, to: number): number {
  const first = progress.find((sample) => sample.atSeconds >= from) ?? progress.at(-1);
  const last = progress.find((sample) => sample.atSeconds >= to) ?? progress.at(-1);
  if (first === undefined || last === undefined || last.atSeconds <= first.atSeconds) return 0;
  return (last.events - first.events) / (last.atSeconds - first.atSeconds);
}

/**
 * The bytes of every file under `dir`. The server keeps running meanwhile: a checkpoint renames its
 * staging folder and RocksDB deletes obsolete files, so a file or folder listed may be gone by the
 * time it is read (ENOENT: counted as empty).
 */
function directoryBytes(dir: string): number {
  let bytes = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) bytes += directoryBytes(path);
    else if (entry.isFile()) bytes += statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  }
  return bytes;
}

/** The mean of the samples taken in [from, to) of the run's seconds (the last sample when none is). */
export function meanRssBetween(samples: NexmarkRunResult['rssSamples'], from: number, to: number): number {
  let sum = 0;
  let count = 0;
  for (const sample of samples) {
    if (sample.atSeconds < from || sample.atSeconds >= to) continue;
    sum += sample.bytes;
    count++;
  }
  return count === 0 ? (samples.at(-1)?.bytes ?? 0) : sum / count;
}

/**
 * A query of bench/nexmark/ (qN.sql, or qN-window.sql in the windowed form; comments removed):
 * `sql` is the whole file (any setup statements, then the view `nexmark_qN`, always last), `select`
 * the view's query alone (without EMIT ON WINDOW CLOSE), and `sources` the sources it reads.
 * `source` is the Bid source alone (no view).
 */
export function querySql(query: string, form: NexmarkForm = 'view'): { sql: string; select: string; sources: SourceName[] } {
  if (query === 'source') return { sql: '', select: '', sources: ['bid'] };
  const name = form === 'window' ? `${query}-window` : query;
  const file = join(QUERY_DIR, `${name}.sql`);
  if (form === 'window' && !WINDOW_QUERIES.includes(query)) throw new Error(`the windowed form (--form window) is for ${WINDOW_QUERIES.join(', ')}, not ${JSON.stringify(query)}`);
  if (!/^q\d+$/.test(query) || !existsSync(file)) throw new Error(`unknown Nexmark query ${JSON.stringify(query)}: the queries are ${NEXMARK_QUERIES.join(', ')}, source and generator (files in ${QUERY_DIR})`);
  const sql = withoutComments(readFileSync(file, 'utf8')).trim();
  const view = new RegExp(`CREATE\\s+MATERIALIZED\\s+VIEW\\s+nexmark_${query}\\s+AS\\s+`, 'i').exec(sql);
  if (view === null) throw new Error(`${name}.sql does not create the view nexmark_${query}`);
  const select = sql.slice(view.index + view[0].length).replace(/;\s*$/, '').replace(/\s+EMIT\s+ON\s+WINDOW\s+CLOSE\s*$/i, '');
  const sources = (['bid', 'auction', 'person'] as const).filter((name) => new RegExp(`(?:from|join|tumble\\(|hop\\(|,)\\s*${name}\\b`, 'i').test(sql));
  return { sql, select, sources };
}

/** sources.sql's CREATE SOURCE for one source, its blanks filled in; with `watermark`, that clause after its columns. */
export function sourceDdl(name: SourceName, events: number, splits: number, chunkSize: number, watermark?: string): string {
  const template = SOURCE_TEMPLATES.get(name);
  if (template === undefined) throw new Error(`${join(QUERY_DIR, 'sources.sql')} has no CREATE SOURCE ${name}`);
  const columns = SOURCE_COLUMNS[name];
  return (watermark === undefined ? template : template.replace(columns, `${columns}, ${watermark}`)).replaceAll('{events}', String(events)).replaceAll('{splits}', String(splits)).replaceAll('{chunk_size}', String(chunkSize));
}

export async function runNexmarkQuery(options: NexmarkRunOptions): Promise<NexmarkRunResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-bench-nexmark-'));
  let engine: Engine | undefined;
  const metrics = new EngineMetrics();
  const rssSamples: { atSeconds: number; bytes: number }[] = [];
  const progress: { atSeconds: number; events: number }[] = [];
  let sampler: NodeJS.Timeout | undefined;
  let gcObserver: PerformanceObserver | undefined;
  // The threads before the engine opens: Node's own (support/thread-cpu.ts tells them apart from the engine's).
  const startupThreads = new Set(readCpuSnapshot()?.threads.map((thread) => thread.id));
  try {
    engine = await createEngine({
      metrics,
      dataDir,
      checkpointUrl: `file://${dataDir}/checkpoints`,
      barrierIntervalMs: options.barrierIntervalMs ?? 250,
      checkpointIntervalMs: 600_000,
      timeTravelRetentionMs: 60_000,
      memoryLimitBytes: options.memoryLimitBytes ?? 1 << 30,
      ...(options.heapGrowingPercent === undefined ? {} : { heapGrowingPercent: options.heapGrowingPercent }),
      ...(options.parallelism === undefined && options.cores === undefined ? {} : { tuning: { ...(options.parallelism === undefined ? {} : { parallelism: options.parallelism }), ...(options.cores === undefined ? {} : { cores: options.cores }) } }),
    });
    const session = openSession(engine);
    const run = (sql: string): Promise<unknown[][]> => runSql(session, sql);
    const { sql, sources } = querySql(options.query, options.form);
    const splits = options.splits ?? 1;
    const chunkSize = options.chunkSize ?? 1024;
    const threadsStart = readCpuSnapshot();
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    if (options.memoryTrace !== undefined) writeFileSync(options.memoryTrace, '');
    const sample = (): void => {
      const atSeconds = (performance.now() - start) / 1000;
      rssSamples.push({ atSeconds, bytes: process.memoryUsage.rss() });
      if (options.memoryTrace === undefined) return;
      const line: Record<string, number> = { at_seconds: Number(atSeconds.toFixed(1)), heap_after_major_gc: heapAfterMajorGc };
      for (const part of metrics.status?.memory() ?? []) line[part.component] = part.bytes;
      for (const space of getHeapSpaceStatistics()) line[`v8_${space.space_name}`] = space.space_used_size;
      appendFileSync(options.memoryTrace, JSON.stringify(line) + '\n');
    };
    // The live heap: V8's heap used just after its last full (mark-compact) collection.
    let heapAfterMajorGc = 0;
    gcObserver = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) heapAfterMajorGc = process.memoryUsage().heapUsed;
      }
    });
    if (options.memoryTrace !== undefined) gcObserver.observe({ entryTypes: ['gc'] });
    sampler = setInterval(sample, 1000);
    for (const source of sources) await run(sourceDdl(source, options.events, splits, chunkSize, options.form === 'window' ? WINDOW_WATERMARK : undefined));
    if (sql !== '') await run(options.form === 'sink' ? asBlackholeSink(options.query, sql) : sql);
    const names = sources.map((source) => `'${source}'`).join(', ');
    // Prepared once: planning the poll every 10 ms would take 7-11% of q0's profile from the engine.
    const poll = session.prepareMany(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name IN (${names})`)[0]!;
    for (;;) {
      const result = await session.execute(poll, { parameters: [] });
      const rows = result.kind === 'rows' ? await result.cursor.next(0) : [];
      const committed = Number(rows[0]![0]);
      progress.push({ atSeconds: (performance.now() - start) / 1000, events: committed / sources.length });
      if (committed >= options.events * sources.length) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuStart);
    const threadsEnd = readCpuSnapshot();
    const threadCpu = threadsStart === undefined || threadsEnd === undefined ? undefined : cpuSecondsByGroup(threadsStart, threadsEnd, startupThreads, ticksPerSecond());
    clearInterval(sampler);
    sample();
    if (options.heapSnapshot !== undefined) writeHeapSnapshot(options.heapSnapshot);
    const dataDirBytes = directoryBytes(dataDir);
    if (options.rocksdbLog !== undefined) copyFileSync(join(dataDir, 'state', 'LOG'), options.rocksdbLog);
    if (options.inspect !== undefined) await options.inspect(run);
    return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, sources, rssSamples, progress, dataDirBytes, threadCpu };
  } finally {
    clearInterval(sampler);
    gcObserver?.disconnect();
    await engine?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function report(query: string, metric: string, value: number, unit: string, digits = 1): void {
  console.log(JSON.stringify({ bench: `nexmark-${query}`, metric, value: Number(value.toFixed(digits)), unit }));
}

async function main(): Promise<void> {
  const events = Number(flag('--events') ?? Math.round(1_000_000 * BENCH_SCALE));
  const queries = (flag('--queries') ?? ALL_QUERIES.join(',')).split(',').map((query) => query.trim());
  const splits = Number(flag('--split-num') ?? '1');
  const chunkSize = Number(flag('--chunk-size') ?? '1024');
  const barrierIntervalMs = Number(flag('--barrier-interval-ms') ?? '250');
  const memoryLimitMiB = Number(flag('--memory-limit-mib') ?? '1024');
  const heapGrowingPercent = flag('--heap-growing-percent');
  const parallelism = Number(flag('--parallelism') ?? '1');
  if (!(parallelism >= 1) || !Number.isSafeInteger(parallelism)) throw new Error(`--parallelism must be a positive integer, not ${String(parallelism)}`);
  const coresFlag = flag('--cores');
  const cores = coresFlag === undefined ? undefined : Number(coresFlag);
  if (cores !== undefined && (!(cores >= 1) || !Number.isSafeInteger(cores))) throw new Error(`--cores must be a positive integer, not ${String(coresFlag)}`);
  const form = flag('--form') ?? 'view';
  if (form !== 'view' && form !== 'sink' && form !== 'window') throw new Error(`--form must be view, sink or window, not ${form}`);
  if (!(memoryLimitMiB >= 0) || !Number.isFinite(memoryLimitMiB)) throw new Error(`--memory-limit-mib must be a number of MiB, not ${String(memoryLimitMiB)}`);
  if (!(events > 0) || !Number.isSafeInteger(events)) throw new Error(`--events must be a positive integer, not ${String(events)}`);
  const child = flag('--child');
  for (const query of child === undefined ? queries : [child]) if (query !== 'generator') querySql(query, form);
  if (child === 'generator') {
    // The generator alone (no engine): all three table types' rows of `events` events, in chunks.
    const generator = new NexmarkGenerator();
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    for (const table of ['Bid', 'Auction', 'Person'] as const) {
      let next = 0;
      while (next < events) {
        const rows: Row[] = [];
        next = generator.fill(rows, table, next, 1, events, chunkSize).next;
      }
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuStart);
    report(child, 'events_per_second', events / seconds, 'events/s');
    report(child, 'events_per_cpu_second', events / ((cpu.user + cpu.system) / 1e6), 'events/s per core');
    return;
  }
  if (child !== undefined) {
    const memoryTrace = flag('--memory-trace');
    const heapSnapshot = flag('--heap-snapshot');
    const rocksdbLog = flag('--rocksdb-log');
    const result = await runNexmarkQuery({
      query: child,
      events,
      splits,
      chunkSize,
      barrierIntervalMs,
      memoryLimitBytes: memoryLimitMiB * 1024 * 1024,
      ...(heapGrowingPercent === undefined ? {} : { heapGrowingPercent: Number(heapGrowingPercent) }),
      ...(memoryTrace === undefined ? {} : { memoryTrace }),
      ...(heapSnapshot === undefined ? {} : { heapSnapshot }),
      ...(rocksdbLog === undefined ? {} : { rocksdbLog }),
      ...(parallelism === 1 ? {} : { parallelism }),
      ...(cores === undefined ? {} : { cores }),
      form,
    });
    // The sink and windowed forms report as nexmark-qN-sink and nexmark-qN-window, a parallelism N > 1 as nexmark-qN-pN.
    const label = `${form === 'view' ? child : `${child}-${form}`}${parallelism === 1 ? '' : `-p${parallelism}`}`;
    report(label, 'events_per_second', events / result.seconds, 'events/s');
    report(label, 'events_per_cpu_second', events / result.cpuSeconds, 'events/s per core');
    report(label, 'peak_rss', process.resourceUsage().maxRSS / 1024, 'MiB');
    const quarter = result.seconds / 4;
    report(label, 'rss_first_quarter', meanRssBetween(result.rssSamples, 0, quarter) / 1024 / 1024, 'MiB');
    report(label, 'rss_last_quarter', meanRssBetween(result.rssSamples, result.seconds - quarter, Number.POSITIVE_INFINITY) / 1024 / 1024, 'MiB');
    report(label, 'events_per_second_first_quarter', rateBetween(result.progress, 0, quarter), 'events/s');
    report(label, 'events_per_second_last_quarter', rateBetween(result.progress, result.seconds - quarter, Number.POSITIVE_INFINITY), 'events/s');
    report(label, 'data_dir', result.dataDirBytes / 1024 / 1024, 'MiB');
    report(label, 'seconds', result.seconds, 's');
    if (result.threadCpu !== undefined) {
      for (const group of THREAD_GROUPS) report(label, `cpu_seconds_${group}`, result.threadCpu.groups[group], 's', 2);
      report(label, 'cpu_seconds_total', result.threadCpu.total, 's', 2);
      report(label, 'cores_used', result.threadCpu.total / result.seconds, 'cores', 2);
    }
    return;
  }
  for (const query of queries) {
    const traceFlags: string[] = [];
    const growth = flag('--heap-growing-percent');
    if (growth !== undefined) traceFlags.push('--heap-growing-percent', growth);
    if (parallelism !== 1) traceFlags.push('--parallelism', String(parallelism));
    if (coresFlag !== undefined) traceFlags.push('--cores', coresFlag);
    for (const name of ['--memory-trace', '--heap-snapshot', '--rocksdb-log']) {
      const value = flag(name);
      // One file per query: qN inserted before the extension.
      if (value !== undefined) traceFlags.push(name, queries.length === 1 ? value : value.replace(/(\.[^./]*)?$/, `-${query}$1`));
    }
    const code = await new Promise<number>((resolve) => {
      // The child gets this process's node flags (and NODE_OPTIONS, through the environment), as a
      // server started with them would: `node --max-semi-space-size=64 dist/bench/nexmark.js ...`.
      const childProcess = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', query, '--events', String(events), '--split-num', String(splits), '--chunk-size', String(chunkSize), '--barrier-interval-ms', String(barrierIntervalMs), '--memory-limit-mib', String(memoryLimitMiB), '--form', form, ...traceFlags], {
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      childProcess.on('close', (exit) => resolve(exit ?? 1));
    });
    if (code !== 0) {
      console.error(`nexmark ${query}: exited with ${code}`);
      process.exitCode = 1;
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    await main();
  } catch (error) {
    // A query oxbow refuses (or a bad flag) is one line with its SQLSTATE, not a stack.
    const { code, message } = error as { code?: string; message?: string };
    console.error(`nexmark ${process.argv.includes('--child') ? `${flagValue('--child')}: ` : ''}${code === undefined ? '' : `${code} `}${message ?? String(error)}`);
    process.exitCode = 1;
  }
}

function flagValue(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}
