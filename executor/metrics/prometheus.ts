// The Prometheus text exposition format (version 0.0.4) of the engine's figures: every metric is
// named oxbow_..., with one HELP and one TYPE line per family. Built from the status API
// (status.ts) plus the checkpoint and source figures that keep their own text.

import { sourcePrometheusText } from '../connectors/source-metrics.js';
import type { HistogramSnapshot } from './histogram.js';
import type { EngineStatus } from './status.js';

function label(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/** Lines of the text format: a family's HELP and TYPE, then its samples (labels escaped). Also cluster-node.ts' figures. */
export class PrometheusWriter {
  readonly lines: string[] = [];

  family(name: string, type: 'gauge' | 'counter' | 'histogram', help: string): this {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Readonly<Record<string, string>>, value: number): this {
    const entries = Object.entries(labels);
    const text = entries.length === 0 ? '' : `{${entries.map(([key, val]) => `${key}="${label(val)}"`).join(',')}}`;
    this.lines.push(`${name}${text} ${number(value)}`);
    return this;
  }

  one(name: string, help: string, value: number, type: 'gauge' | 'counter' = 'gauge'): this {
    return this.family(name, type, help).sample(name, {}, value);
  }

  histogram(name: string, help: string, histogram: HistogramSnapshot): this {
    this.family(name, 'histogram', help);
    histogram.buckets.forEach((bound, index) => this.sample(`${name}_bucket`, { le: String(bound) }, histogram.cumulative[index]!));
    this.sample(`${name}_bucket`, { le: '+Inf' }, histogram.count);
    this.sample(`${name}_sum`, {}, histogram.sumSeconds);
    this.sample(`${name}_count`, {}, histogram.count);
    return this;
  }
}

/** Everything /metrics serves, as one text. */
export function prometheusText(status: EngineStatus, extra: { readonly connections?: number } = {}): string {
  const w = new PrometheusWriter();
  const metrics = status.metrics;
  const epochs = status.epochs();
  w.one('oxbow_epoch_committed_timestamp_seconds', 'Unix time of the last committed epoch.', epochs.committedAtMillis / 1000);
  w.family('oxbow_epochs_committed_total', 'counter', 'Epochs committed (durable) since the process started.').sample('oxbow_epochs_committed_total', {}, epochs.epochsCommitted);
  w.one('oxbow_epoch_sealed_timestamp_seconds', 'Unix time of the last sealed epoch (committed, or still being written).', epochs.sealedAtMillis / 1000);
  w.family('oxbow_epochs_sealed_total', 'counter', 'Epochs sealed since the process started: their changes ran through every dataflow and their write began.').sample('oxbow_epochs_sealed_total', {}, epochs.epochsSealed);
  w.one('oxbow_epochs_in_flight', 'Sealed epochs whose write (off the main thread) is not durable yet.', epochs.epochsInFlight);
  w.histogram('oxbow_barrier_latency_seconds', "An epoch's barrier: its changes through every dataflow plus the atomic commit.", metrics.barrierLatency.snapshot());
  w.histogram('oxbow_epoch_commit_latency_seconds', "The atomic write of an epoch's state into the store.", metrics.commitLatency.snapshot());
  w.one('oxbow_statements_total', 'Statements executed since the process started.', metrics.statementsTotal, 'counter');
  w.one('oxbow_statement_errors_total', 'Statements that ended in an error since the process started.', metrics.statementErrorsTotal, 'counter');

  const throughput = status.throughput();
  w.family('oxbow_source_rows_total', 'counter', "Rows a source's connector (Kafka, a generator) wrote into epochs since start.");
  for (const source of throughput.sources) w.sample('oxbow_source_rows_total', { source: `${source.schema}.${source.name}` }, source.rows);
  w.family('oxbow_input_rows_total', 'counter', 'Changes of a table, source or view pushed into the dataflows that read it.');
  for (const input of throughput.inputs) w.sample('oxbow_input_rows_total', { relation: `${input.schema}.${input.name}`, kind: input.kind }, input.rows);
  w.family('oxbow_view_input_rows_total', 'counter', "Changes reaching a materialized view's Materialize operator.");
  for (const view of throughput.views) w.sample('oxbow_view_input_rows_total', { view: `${view.schema}.${view.name}` }, view.rowsIn);
  w.family('oxbow_view_rows_total', 'counter', 'Changes written to a materialized view (rows out of its dataflow).');
  for (const view of throughput.views) w.sample('oxbow_view_rows_total', { view: `${view.schema}.${view.name}` }, view.rowsOut);
  w.family('oxbow_view_busy_seconds_total', 'counter', "Time spent in a materialized view's operators.");
  for (const view of throughput.views) w.sample('oxbow_view_busy_seconds_total', { view: `${view.schema}.${view.name}` }, view.seconds);

  const tables = status.stateTables();
  w.family('oxbow_state_table_bytes', 'gauge', "A state table's approximate size on disk: RocksDB's estimate for its SST files and memtables plus the bytes its values take in blob files.");
  for (const table of tables) w.sample('oxbow_state_table_bytes', stateLabels(table), table.bytes);
  w.family('oxbow_state_table_keys', 'gauge', "A state table's number of keys, versions included: counted per SST file, plus RocksDB's estimate for the memtables.");
  for (const table of tables) w.sample('oxbow_state_table_keys', stateLabels(table), table.keys);

  const cache = status.cache();
  if (cache !== null) {
    w.one('oxbow_cache_hits_total', 'Row cache lookups answered from memory.', cache.hits, 'counter');
    w.one('oxbow_cache_misses_total', 'Row cache lookups that went to RocksDB.', cache.misses, 'counter');
    w.one('oxbow_cache_hit_ratio', 'Hits over lookups of the row cache since start (0 before any lookup).', cache.hitRate);
    w.one('oxbow_cache_rows', 'Rows held in the row cache.', cache.cachedRows);
    w.one('oxbow_cache_used_bytes', 'Bytes of the memory budget in use by state caches.', cache.usedBytes);
    w.one('oxbow_cache_limit_bytes', 'The memory budget of state caches (--memory-limit).', cache.limitBytes);
    w.one('oxbow_cache_evictions_total', 'Rows evicted from the row cache.', cache.evictions, 'counter');
  }

  const memory = status.memory();
  w.family('oxbow_memory_bytes', 'gauge', "Where the process's memory is, by component (oxbow_catalog.memory; components overlap: rss holds the others).");
  for (const part of memory) if (part.component !== 'cache_evicted_by_manager') w.sample('oxbow_memory_bytes', { component: part.component }, part.bytes);
  w.family('oxbow_memory_limit_bytes', 'gauge', 'The bound a memory component is kept under, for those that have one.');
  for (const part of memory) if (part.limitBytes !== null) w.sample('oxbow_memory_limit_bytes', { component: part.component }, part.limitBytes);
  const workers = status.workers();
  if (workers.length > 0) {
    w.family('oxbow_worker_memory_bytes', 'gauge', "Each worker thread of a parallel dataflow at its last epoch batch (oxbow_catalog.dataflow_workers): its V8 heap in use, reserved and live after its last full collection, its row and group caches.");
    for (const worker of workers) {
      const labels = { view: `${worker.schema}.${worker.name}`, operator: String(worker.operatorId), worker: String(worker.worker) };
      w.sample('oxbow_worker_memory_bytes', { ...labels, part: 'heap_used' }, worker.heapUsedBytes);
      w.sample('oxbow_worker_memory_bytes', { ...labels, part: 'heap_total' }, worker.heapTotalBytes);
      w.sample('oxbow_worker_memory_bytes', { ...labels, part: 'live_heap' }, worker.liveHeapBytes);
      w.sample('oxbow_worker_memory_bytes', { ...labels, part: 'row_cache' }, worker.rowCacheBytes);
      w.sample('oxbow_worker_memory_bytes', { ...labels, part: 'group_caches' }, worker.groupCacheBytes);
    }
  }
  const pool = status.workerPool();
  if (pool !== null) {
    w.family('oxbow_worker_threads', 'gauge', "The process's pooled worker threads: running a job (a fragment's worker, a batch aggregate's range), or idle (kept for the next).");
    w.sample('oxbow_worker_threads', { state: 'busy' }, pool.busy);
    w.sample('oxbow_worker_threads', { state: 'idle' }, pool.idle);
    w.one('oxbow_worker_threads_started_total', 'Worker threads started (a pooled thread runs one job after another: fragment workers, batch aggregate ranges).', pool.started, 'counter');
    w.one('oxbow_worker_jobs_total', 'Jobs run on pooled threads (fragment workers, batch aggregate ranges), on a new thread or a reused one.', pool.jobs, 'counter');
    w.one('oxbow_worker_threads_lost_total', 'Pooled worker threads that ended while running a worker (failed or killed at a deadline) and were replaced.', pool.lost, 'counter');
  }
  const manager = status.memoryManager();
  if (manager !== null) {
    w.one('oxbow_memory_manager_evicted_bytes_total', "Bytes the caches evicted because the memory manager lowered their budget (the live heap was over its part of --memory-limit).", manager.evictedBytes, 'counter');
    w.family('oxbow_memory_manager_actions_total', 'counter', "The memory manager's steps after V8's full collections: the caches' budget lowered or raised, V8's heap growth lowered or raised.");
    w.sample('oxbow_memory_manager_actions_total', { action: 'budget_lowered' }, manager.budgetLowered);
    w.sample('oxbow_memory_manager_actions_total', { action: 'budget_raised' }, manager.budgetRaised);
    w.sample('oxbow_memory_manager_actions_total', { action: 'growth_lowered' }, manager.growthLowered);
    w.sample('oxbow_memory_manager_actions_total', { action: 'growth_raised' }, manager.growthRaised);
    w.one('oxbow_memory_manager_heap_growing_percent', "V8's heap growth past the live heap before a full collection, as the memory manager set it.", manager.heapGrowingPercent);
    w.one('oxbow_memory_manager_trims_total', "Times the memory manager gave the C heap's free chunks back to the system (malloc_trim after a full collection, when over 32 MiB was free).", manager.trims, 'counter');
    w.one('oxbow_memory_manager_full_collections_total', "V8's full collections the memory manager read the live heap after.", manager.readings, 'counter');
  }

  const proc = status.process();
  w.one('oxbow_process_resident_memory_bytes', 'Resident memory of the process.', proc.residentBytes);
  w.one('oxbow_process_heap_used_bytes', 'V8 heap in use.', proc.heapUsedBytes);
  w.one('oxbow_process_heap_total_bytes', 'V8 heap reserved.', proc.heapTotalBytes);
  w.one('oxbow_process_external_memory_bytes', 'Memory of C++ objects bound to JavaScript (buffers, the RocksDB binding).', proc.externalBytes);
  w.one('oxbow_process_uptime_seconds', 'Seconds since the process started.', proc.uptimeSeconds);
  w.family('oxbow_event_loop_delay_seconds', 'gauge', 'Event loop delay since start (perf_hooks.monitorEventLoopDelay): mean, 99th percentile and max.');
  w.sample('oxbow_event_loop_delay_seconds', { statistic: 'mean' }, proc.eventLoopDelay.meanSeconds);
  w.sample('oxbow_event_loop_delay_seconds', { statistic: 'p99' }, proc.eventLoopDelay.p99Seconds);
  w.sample('oxbow_event_loop_delay_seconds', { statistic: 'max' }, proc.eventLoopDelay.maxSeconds);

  const sessions = status.sessions();
  w.one('oxbow_sessions', 'Open client sessions.', sessions.length);
  w.one('oxbow_sessions_active', 'Sessions running a statement.', sessions.filter((session) => session.state === 'active').length);
  if (extra.connections !== undefined) w.one('oxbow_connections', 'Client connections open on the PostgreSQL port (sessions and those still authenticating).', extra.connections);

  let text = w.lines.join('\n') + '\n';
  if (status.checkpoints !== undefined) text += status.checkpoints.prometheusText();
  if (status.sourceStatus !== undefined) text += sourcePrometheusText(status.sourceStatus);
  return text;
}

function stateLabels(table: { tableId: number; schema: string; name: string; operatorId: number | null; purpose: string }): Record<string, string> {
  return { table_id: String(table.tableId), object: `${table.schema}.${table.name}`, operator: table.operatorId === null ? '' : String(table.operatorId), purpose: table.purpose };
}
