// Soak: Nexmark views over rate-limited generator sources for N minutes in one in-process engine
// (the server's defaults otherwise: barrier 1 s, checkpoints every 10 s to a folder), sampling
// memory every --sample-seconds. Answers "is memory flat over a 10-minute run" (issue 8): the
// process's resident set, V8's heap (used, total) and external memory, the row cache's bytes and
// the state tables' bytes on disk (RocksDB estimates, oxbow_catalog.state_size), plus the events
// committed against the events the rate asked for (a view that cannot keep up shows as lag).
//
// Each sample prints JSON lines {"bench":"soak","metric","value","unit","at_seconds"}: rss,
// heap_used, heap_after_major_gc (heap used just after V8's last mark-sweep: the live heap, which
// heap_used overstates by the garbage not yet collected), heap_outside_caches (that live heap less
// the row and group caches' charges: what is not cache), heap_total, external, row_cache,
// state_bytes (MiB), events_committed, lag_events,
// epochs committed and their mean barrier latency since the last sample, and sample_delay (how
// late the sample ran: the event loop was held that long, by an epoch's flush through the views).
// Where the rest of the process's memory is, per sample (oxbow_catalog.memory's components):
// group_caches (join sides and aggregates), cache_budget (the memory manager's budget for both),
// rocksdb_memtables, rocksdb_block_cache,
// rocksdb_table_readers, write_batches, malloc_in_use and malloc_free (the C heap; free = kept by
// glibc's arenas) in MiB.
// At the end: the growth of each memory figure from the first sample after warm-up
// (`--warmup-minutes`, default a quarter of the run, at least one sample) to the last, and its
// least-squares slope over those samples (MiB per minute), with the slope's standard error and the
// band the figure swung through after warm-up. A view error fails the run.
//
// The verdicts (issue 8's "memory flat over a 10-minute run", while the views keep up):
//   rss_slope_mib_per_min, live_heap_slope_mib_per_min: the slopes after warm-up of RSS and of the
//     live heap (heap_after_major_gc), each with `stderr` (the slope's standard error) and `band`
//     (max - min after warm-up, the run's own sawtooth) fields;
//   kept_up: events committed per second after warm-up as a % of the rate asked for over the same
//     samples (all sources), `verdict` "yes" at 95% or more with the lag grown by less than 10
//     seconds of the asked rate over those samples;
//   flat: value 1 when both slopes are within --flat-mib-per-min (default 3) of zero, else 0,
//     `verdict` "yes"/"no" ("not kept up" when the views lagged: a lagging run's memory measures
//     the backlog, not the steady state).
//
// Whether the engine keeps up, and at what cost: each sample also prints the events committed per
// second since the last sample (events_per_second), the process's CPU time over that wall time
// (cpu_share, % of one core: all threads, RocksDB's and the libuv pool's included), events per
// CPU-second, the machine's 1-minute load average, and the epochs' barrier latency (changes through
// every view plus the durable write) as p50 / p99 / max since the last sample. At the end: the
// sustained rate (events committed over the run's wall time) against the rate asked for, barrier
// latency percentiles over the run, each view operator's busy time (oxbow_catalog.dataflow,
// metric operator_busy_ms with the view and operator), and how long closing the engine took
// (close_seconds).
//
// A bounded run (`--events N`: each source ends after N events; the CI smoke, test/nexmark/soak.test.ts)
// also checks what the views hold: after the last sample it waits for every event to be committed,
// then each view must equal its SELECT recomputed in batch over the sources (views_checked), else
// the run fails. Lag then counts against min(asked so far, N) per source.
//
// Heap snapshots: `--heap-snapshots-at 1,10` writes `soak-<minute>min.heapsnapshot` in
// `--heap-snapshot-dir` (default: the system's temporary directory) after the first sample at or
// past each minute (the process stalls for the snapshot's seconds; the sample after it shows it
// as sample_delay); `--heap-snapshot FILE` writes one at the end.
// Run: npm run build && npm run bench -- soak --minutes 10 --queries q5,q8 --rate 2000 --memory-limit-mib 64
//   (defaults: 1 minute times BENCH_SCALE, q5,q7, 5000 events/s per source, samples every 30 s
//   (every 5 s for runs under 5 minutes), --memory-limit-mib 256, --retention-seconds 60)

import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { EngineMetrics } from '../executor/metrics/engine-metrics.js';
import { querySql, SOURCE_COLUMNS } from './nexmark.js';
import { BENCH_SCALE, flag, openBenchEngine } from './support/harness.js';

const minutes = Number(flag('--minutes') ?? String(BENCH_SCALE));
const queries = (flag('--queries') ?? 'q5,q7').split(',').map((query) => query.trim());
const rate = Number(flag('--rate') ?? '5000');
const sampleSeconds = Number(flag('--sample-seconds') ?? (minutes >= 5 ? '30' : '5'));
const memoryLimitMiB = Number(flag('--memory-limit-mib') ?? '256');
const retentionSeconds = Number(flag('--retention-seconds') ?? '60');
const heapSnapshot = flag('--heap-snapshot');
const heapSnapshotsAt = (flag('--heap-snapshots-at') ?? '').split(',').filter((text) => text.trim() !== '').map(Number);
const heapSnapshotDir = flag('--heap-snapshot-dir') ?? tmpdir();
const warmupMinutes = flag('--warmup-minutes') === undefined ? minutes / 4 : Number(flag('--warmup-minutes'));
const flatMiBPerMinute = Number(flag('--flat-mib-per-min') ?? '3');
const events = flag('--events') === undefined ? undefined : Number(flag('--events'));
if (events !== undefined && !(Number.isSafeInteger(events) && events > 0)) throw new Error('--events must be a positive integer (events per source)');
if (!(warmupMinutes >= 0) || !(warmupMinutes < minutes)) throw new Error('--warmup-minutes must be at least 0 and less than --minutes');
for (const minute of heapSnapshotsAt) if (!(minute > 0) || !Number.isFinite(minute)) throw new Error('--heap-snapshots-at takes minutes > 0, separated by commas');
for (const [name, value] of [['--minutes', minutes], ['--rate', rate], ['--sample-seconds', sampleSeconds], ['--memory-limit-mib', memoryLimitMiB], ['--retention-seconds', retentionSeconds], ['--flat-mib-per-min', flatMiBPerMinute]] as const) {
  if (!(value > 0) || !Number.isFinite(value)) throw new Error(`${name} must be a positive number`);
}

const MIB = 1024 * 1024;

// The live heap without forcing a collection: V8's heap used just after its last major (mark-sweep)
// GC. heap_used between majors includes garbage not yet collected, and V8 lets old space grow lazily.
let heapAfterMajorGc = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) heapAfterMajorGc = process.memoryUsage().heapUsed;
  }
}).observe({ entryTypes: ['gc'] });
// The process's figures, then oxbow_catalog.memory's components (status.memory()) by their names.
const processMetrics = ['rss', 'heap_used', 'heap_after_major_gc', 'heap_outside_caches', 'heap_total', 'external', 'row_cache'] as const;
const breakdownMetrics = ['group_caches', 'cache_budget', 'rocksdb_memtables', 'rocksdb_block_cache', 'rocksdb_table_readers', 'write_batches', 'malloc_in_use', 'malloc_free'] as const;
const memoryMetrics = [...processMetrics, ...breakdownMetrics] as const;
type MemoryMetric = (typeof memoryMetrics)[number];

function emit(metric: string, value: number, unit: string, atSeconds?: number, extra: Record<string, unknown> = {}): void {
  const line: Record<string, unknown> = { bench: 'soak', metric, value: Number(value.toFixed(2)), unit };
  if (atSeconds !== undefined) line['at_seconds'] = Math.round(atSeconds);
  console.log(JSON.stringify({ ...line, ...extra }));
}

/** Least-squares slope of (x, y) per unit of x, and its standard error (0 with fewer than 3 points). */
function fitSlope(points: readonly { x: number; y: number }[]): { slope: number; stderr: number } {
  const n = points.length;
  if (n < 2) return { slope: 0, stderr: 0 };
  const meanX = points.reduce((sum, point) => sum + point.x, 0) / n;
  const meanY = points.reduce((sum, point) => sum + point.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const point of points) {
    sxy += (point.x - meanX) * (point.y - meanY);
    sxx += (point.x - meanX) ** 2;
  }
  if (sxx === 0) return { slope: 0, stderr: 0 };
  const slope = sxy / sxx;
  if (n < 3) return { slope, stderr: 0 };
  let residuals = 0;
  for (const point of points) residuals += (point.y - meanY - slope * (point.x - meanX)) ** 2;
  return { slope, stderr: Math.sqrt(residuals / (n - 2) / sxx) };
}

const metrics = new EngineMetrics();
const bench = await openBenchEngine('soak', {
  memoryLimitBytes: memoryLimitMiB * MIB,
  timeTravelRetentionMs: retentionSeconds * 1000,
  metrics,
});
const status = metrics.status!;
// Every epoch's barrier latency in seconds, in commit order (the histogram keeps only buckets).
const latencies: number[] = [];
const histogram = metrics.barrierLatency;
const observe = histogram.observe.bind(histogram);
histogram.observe = (seconds: number): void => {
  latencies.push(seconds);
  observe(seconds);
};

/** The q-quantile (0..1) of `values` (nearest rank), 0 for none. */
function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const gapNs = Math.round(1e9 / rate);
const sources = new Set<'bid' | 'auction' | 'person'>();
const views: string[] = [];
for (const query of queries) {
  const { sql, sources: read } = querySql(query);
  for (const source of read) sources.add(source);
  if (sql !== '') views.push(sql);
}
const started = performance.now();
for (const source of sources) {
  const type = source === 'bid' ? 'Bid' : source === 'auction' ? 'Auction' : 'Person';
  // No event.num: the source runs until the engine closes, paced at `rate` events per second.
  const bound = events === undefined ? '' : `, nexmark.event.num = '${events}'`;
  await bench.run(`CREATE SOURCE ${source} (${SOURCE_COLUMNS[source]}) WITH (connector = 'nexmark', nexmark.table.type = '${type}', nexmark.min.event.gap.in.ns = '${gapNs}'${bound})`);
}
for (const sql of views) await bench.run(sql);
const names = [...sources].map((source) => `'${source}'`).join(', ');

const samples: { at: number; committed: number; lag: number; values: Record<MemoryMetric, number> }[] = [];
let lastBarrier = { count: 0, sumSeconds: 0 };
let last = { at: 0, cpu: process.cpuUsage(), committed: 0 };
let committedNow = 0;
async function sample(scheduledAt: number): Promise<void> {
  const at = (performance.now() - started) / 1000;
  // How late this sample ran: the event loop was busy (a long epoch flush) for about that long.
  emit('sample_delay', Math.max(0, at - scheduledAt), 's', at);
  emit('load_average', loadavg()[0]!, 'load', at);
  const barrier = metrics.barrierLatency.snapshot();
  const epochs = barrier.count - lastBarrier.count;
  emit('epochs', epochs, 'epochs', at);
  emit('barrier_latency_mean', epochs === 0 ? 0 : ((barrier.sumSeconds - lastBarrier.sumSeconds) / epochs) * 1000, 'ms', at);
  const recent = latencies.slice(lastBarrier.count);
  emit('barrier_latency_p50', quantile(recent, 0.5) * 1000, 'ms', at);
  emit('barrier_latency_p99', quantile(recent, 0.99) * 1000, 'ms', at);
  emit('barrier_latency_max', quantile(recent, 1) * 1000, 'ms', at);
  lastBarrier = { count: barrier.count, sumSeconds: barrier.sumSeconds };
  const memory = process.memoryUsage();
  const cache = status.cache();
  const stateBytes = status.stateTables().reduce((sum, table) => sum + table.bytes, 0);
  const committed = Number((await bench.run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name IN (${names})`))[0]![0]);
  const errors = Number((await bench.run('SELECT coalesce(sum(error_count), 0)::int8 FROM oxbow_catalog.view_errors'))[0]![0]);
  if (errors > 0) throw new Error(`soak: ${errors} view errors: ${JSON.stringify(await bench.run('SELECT * FROM oxbow_catalog.view_errors'))}`);
  const parts = new Map(status.memory().map((part) => [part.component, part.bytes]));
  const values = {
    rss: memory.rss / MIB,
    heap_used: memory.heapUsed / MIB,
    heap_after_major_gc: heapAfterMajorGc / MIB,
    heap_total: memory.heapTotal / MIB,
    external: memory.external / MIB,
    row_cache: (cache?.usedBytes ?? 0) / MIB,
  } as Record<MemoryMetric, number>;
  for (const metric of breakdownMetrics) values[metric] = (parts.get(metric) ?? 0) / MIB;
  // The live heap less what the caches are charged: a leak outside the caches shows here even while
  // the memory manager makes room for it by lowering the caches' budget (the live heap then flat).
  values.heap_outside_caches = Math.max(0, values.heap_after_major_gc - values.row_cache - values.group_caches);
  const lag = Math.max(0, Math.min(Math.floor(at * rate), events ?? Infinity) * sources.size - committed);
  samples.push({ at, committed, lag, values });
  for (const metric of memoryMetrics) emit(metric, values[metric], 'MiB', at);
  emit('state_bytes', stateBytes / MIB, 'MiB', at);
  emit('events_committed', committed, 'events', at);
  emit('lag_events', lag, 'events', at);
  const cpu = process.cpuUsage(last.cpu);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  emit('events_per_second', (committed - last.committed) / (at - last.at), 'events/s', at);
  emit('cpu_share', (cpuSeconds / (at - last.at)) * 100, '% of a core', at);
  emit('events_per_cpu_second', cpuSeconds === 0 ? 0 : (committed - last.committed) / cpuSeconds, 'events/cpu-s', at);
  last = { at, cpu: process.cpuUsage(), committed };
  committedNow = committed;
}

// Samples on a fixed schedule from the start (a slow sample does not shift the later ones).
const end = started + minutes * 60_000;
for (let index = 1; ; index++) {
  const next = started + index * sampleSeconds * 1000;
  if (next > end + 1) break;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  await sample((next - started) / 1000);
  const at = (performance.now() - started) / 1000;
  while (heapSnapshotsAt.length > 0 && at >= heapSnapshotsAt[0]! * 60) {
    const minute = heapSnapshotsAt.shift()!;
    const file = writeHeapSnapshot(join(heapSnapshotDir, `soak-${minute}min.heapsnapshot`));
    console.error(`soak: heap snapshot at ${Math.round(at)} s: ${file}`);
  }
}
const wall = (performance.now() - started) / 1000;
emit('sustained_events_per_second', committedNow / Math.max(1, last.at), 'events/s');
emit('asked_events_per_second', rate * sources.size, 'events/s');
for (const [name, q] of [['p50', 0.5], ['p90', 0.9], ['p99', 0.99], ['max', 1]] as const) {
  emit(`barrier_latency_${name}_run`, quantile(latencies, q) * 1000, 'ms');
}
emit('epochs_run', latencies.length, 'epochs');
const operators = await bench.run('SELECT view_name, operator_id, kind, rows_in, rows_out, busy_ms FROM oxbow_catalog.dataflow ORDER BY busy_ms DESC');
for (const [view, operator, kind, rowsIn, rowsOut, busy] of operators as [string, number, string, bigint, bigint, number][]) {
  console.log(JSON.stringify({ bench: 'soak', metric: 'operator_busy_ms', value: Number(busy.toFixed(1)), unit: 'ms', view, operator: `${operator} ${kind}`, rows_in: Number(rowsIn), rows_out: Number(rowsOut) }));
}

if (samples.length >= 2) {
  // After warm-up: the samples from the last one at or before --warmup-minutes (at least the
  // first, and at least two samples in the window).
  let from = 0;
  while (from + 1 < samples.length - 1 && samples[from + 1]!.at <= warmupMinutes * 60 + 1) from++;
  const window = samples.slice(from);
  const fits = new Map<MemoryMetric, { slope: number; stderr: number; band: number }>();
  for (const metric of memoryMetrics) {
    const first = window[0]!.values[metric];
    const last = window.at(-1)!.values[metric];
    const fit = fitSlope(window.map((point) => ({ x: point.at / 60, y: point.values[metric] })));
    const ys = window.map((point) => point.values[metric]);
    fits.set(metric, { ...fit, band: Math.max(...ys) - Math.min(...ys) });
    emit(`${metric}_growth_after_warmup`, last - first, 'MiB');
    emit(`${metric}_slope_after_warmup`, fit.slope, 'MiB/min');
  }
  const start = window[0]!;
  const end = window.at(-1)!;
  // What the rate asked for over the window (a bounded run's sources stop asking at --events).
  const askedBy = (at: number): number => Math.min(at * rate, events ?? Infinity) * sources.size;
  const asked = (askedBy(end.at) - askedBy(start.at)) / Math.max(1e-9, end.at - start.at);
  const sustained = (end.committed - start.committed) / Math.max(1e-9, end.at - start.at);
  const lagSlope = fitSlope(window.map((point) => ({ x: point.at / 60, y: point.lag })));
  emit('warmup_seconds', start.at, 's');
  emit('lag_slope_after_warmup', lagSlope.slope, 'events/min');
  // Lag that stays put is not falling behind (a stall, a heap snapshot, slips the sources' schedule
  // by its length once); lag that grows by more than 10 s of input over the window is.
  const lagGrowth = end.lag - start.lag;
  const keptUp = sustained >= 0.95 * asked && lagGrowth <= 10 * rate * sources.size;
  const share = asked === 0 ? 100 : (sustained / asked) * 100;
  emit('kept_up', share, '% of asked rate', undefined, { verdict: keptUp ? 'yes' : 'no', sustained_events_per_second: Math.round(sustained), asked_events_per_second: Math.round(asked), last_lag_events: end.lag, lag_growth_events: lagGrowth });
  const rss = fits.get('rss')!;
  const live = fits.get('heap_after_major_gc')!;
  emit('rss_slope_mib_per_min', rss.slope, 'MiB/min', undefined, { stderr: Number(rss.stderr.toFixed(2)), band: Number(rss.band.toFixed(1)) });
  emit('live_heap_slope_mib_per_min', live.slope, 'MiB/min', undefined, { stderr: Number(live.stderr.toFixed(2)), band: Number(live.band.toFixed(1)) });
  const flat = Math.abs(rss.slope) <= flatMiBPerMinute && Math.abs(live.slope) <= flatMiBPerMinute;
  emit('flat', flat ? 1 : 0, 'yes=1', undefined, { verdict: !keptUp ? 'not kept up' : flat ? 'yes' : 'no', within_mib_per_min: flatMiBPerMinute, after_seconds: Math.round(start.at) });
}
if (events !== undefined) {
  // Every event committed, then each view against its query recomputed in batch over the sources.
  while (Number((await bench.run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name IN (${names})`))[0]![0]) < events * sources.size) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  emit('events_committed', Number((await bench.run(`SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name IN (${names})`))[0]![0]), 'events');
  const canonical = (rows: unknown[][]): string[] => rows.map((row) => JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value))).sort();
  for (const sql of views) {
    const name = /materialized\s+view\s+(\w+)/i.exec(sql)?.[1];
    if (name === undefined) throw new Error(`soak: no view name in ${sql}`);
    const view = canonical(await bench.run(`SELECT * FROM ${name}`));
    const batch = canonical(await bench.run(sql.replace(/^[\s\S]*?\bAS\b\s*/i, '').replace(/;\s*$/, '')));
    if (view.length !== batch.length || view.some((row, index) => row !== batch[index])) {
      throw new Error(`soak: view ${name} (${view.length} rows) differs from its query recomputed in batch (${batch.length} rows)`);
    }
    emit('view_rows', view.length, 'rows', undefined, { view: name });
  }
  emit('views_checked', views.length, 'views');
}
if (heapSnapshot !== undefined) console.error(`soak: heap snapshot ${writeHeapSnapshot(heapSnapshot)}`);
// Closing stops the sources, waits for the barrier under way and a running checkpoint, then closes
// RocksDB (a lagging run once did not close in 17 minutes: executor/engine/open-engine.ts stopWriters).
const closing = performance.now();
await bench.close();
emit('close_seconds', (performance.now() - closing) / 1000, 's', wall);
