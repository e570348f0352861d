// The system tables and metrics operator-view.test.ts does not count, over the wire against a
// real server process: state_size of tables too small for RocksDB's estimate (counted, never 0),
// view_errors kept across a restart (committed with the epoch), backfill_progress, time_travel,
// checkpoints and recovery against their /metrics families, the generator source's partition
// figures, and every family /metrics serves checked against a figure from the workload (the test
// fails when a family appears that nothing here or in operator-view.test.ts checks).
// Known workload: t = {(1,1), (2,0), (3,2)}, a view r = 100 / v over it (the backfill divides by
// zero once, for id 2), then (4,0) (once more), a Nexmark Bid source of 50 events (46 bids), a
// table with its own retention. Expected counts are worked out by hand from these statements.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const ARGS = ['--metrics-port', '0', '--checkpoint-interval-ms', '1000', '--memory-limit', '512MB'];
/** --memory-limit 512MB's parts by hand (executor/engine/memory-manager.ts): RocksDB 64 MiB (an eighth), the heap 448, the caches half of it (224: rows 4/5, groups 1/5). */
const MIB = 1024 * 1024;
const ROW_CACHE_BYTES = Math.floor(224 * MIB * 0.8);
const GROUP_CACHE_BYTES = 224 * MIB - ROW_CACHE_BYTES;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-system-tables-'));
let oxbow: OxbowServer;
let client: pg.Client;
let startedAt: number;

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

async function scrape(): Promise<Sample[]> {
  const { body } = await httpGet(metricsPortOf(oxbow), '/metrics');
  const samples: Sample[] = [];
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(oxbow_[a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`bad sample line ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]!] = label[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function one(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, text]) => sample.labels[key] === text));
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await client.query(sql)).rows as Record<string, unknown>[];
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function connect(): Promise<void> {
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
}

beforeAll(async () => {
  startedAt = Date.now();
  oxbow = await startOxbow({ dataDir, args: ARGS });
  await connect();
  await client.query('CREATE TABLE t (id int PRIMARY KEY, v int)');
  await client.query('INSERT INTO t VALUES (1, 1), (2, 0), (3, 2)');
  await client.query('CREATE MATERIALIZED VIEW r AS SELECT id, 100 / v AS q FROM t');
  await client.query('INSERT INTO t VALUES (4, 0)');
  await client.query("CREATE TABLE kept (id int PRIMARY KEY) WITH (retention = '1 hour')");
  await client.query('INSERT INTO kept VALUES (7)');
  await client.query(`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR)
    WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '50', nexmark.min.event.gap.in.ns = '0')`);
  await waitFor('the 50 events committed', async () => {
    const [row] = await rows("SELECT committed_offset FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'");
    return Number(row?.committed_offset) === 50 ? true : undefined;
  });
  // A checkpoint is cut each second while epochs are committed.
  await waitFor('a complete checkpoint', async () => {
    const [row] = await rows("SELECT count(*)::int AS n FROM oxbow_catalog.checkpoints WHERE status = 'complete'");
    return Number(row!.n) >= 1 ? true : undefined;
  });
}, 90_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('oxbow_catalog tables', () => {
  it('state_size: every state table that holds rows reports bytes and keys, even when RocksDB estimates 0', async () => {
    const sizes = await rows("SELECT object_name, purpose, bytes, keys FROM oxbow_catalog.state_size WHERE schema_name = 'public' ORDER BY table_id");
    // r is stored by t's key (id): one table, no row counts (planner/stream/unique-key.ts).
    expect(sizes.map((row) => `${String(row.object_name)} ${String(row.purpose)}`)).toEqual(['t table rows', 'r view rows', 'kept table rows', 'bid source positions']);
    for (const row of sizes) {
      expect(Number(row.bytes), `${String(row.object_name)} ${String(row.purpose)}`).toBeGreaterThan(0);
      expect(Number(row.keys), `${String(row.object_name)} ${String(row.purpose)}`).toBeGreaterThan(0);
    }
  });

  it("state_size: a GROUP BY's and a join's state carry their vnode in their keys, a table's rows and a view's rows do not", async () => {
    await client!.query('CREATE TABLE vk (id int PRIMARY KEY, g int, v int)');
    await client!.query('INSERT INTO vk VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30)');
    await client!.query('CREATE MATERIALIZED VIEW vg AS SELECT g, count(*) AS n, max(v) AS top FROM vk GROUP BY g');
    await client!.query('CREATE MATERIALIZED VIEW vj AS SELECT a.id, b.v FROM vk a JOIN vk b ON a.g = b.id');
    const tables = await rows("SELECT object_name, operator_kind, purpose, keyed_by_vnode FROM oxbow_catalog.state_size WHERE object_name IN ('vk', 'vg', 'vj') ORDER BY table_id");
    const keyed = (row: Record<string, unknown>) => `${String(row.object_name)} ${String(row.operator_kind)} ${String(row.purpose)}: ${String(row.keyed_by_vnode)}`;
    expect(tables.filter((row) => row.operator_kind === null).map(keyed)).toEqual(['vk null table rows: false']);
    // Every state table of the aggregate and of the join is keyed by vnode; the views' rows are not.
    for (const row of tables.filter((row) => row.operator_kind !== null)) {
      expect(row.keyed_by_vnode, keyed(row)).toBe(row.purpose !== 'view rows');
    }
    expect(tables.filter((row) => row.keyed_by_vnode === true).length).toBeGreaterThanOrEqual(3);
    expect(await rows('SELECT g, n, top FROM vg ORDER BY g')).toEqual([
      { g: 1, n: '2', top: 20 },
      { g: 2, n: '1', top: 30 },
    ]);
    // The other tests here see the objects made before this one only.
    await client!.query('DROP MATERIALIZED VIEW vj');
    await client!.query('DROP MATERIALIZED VIEW vg');
    await client!.query('DROP TABLE vk');
  });

  it('view_errors: the two divisions by zero (ids 2 and 4)', async () => {
    expect(await rows('SELECT view_name, message, error_count FROM oxbow_catalog.view_errors')).toEqual([{ view_name: 'r', message: 'division by zero', error_count: '2' }]);
    expect(await rows('SELECT id, q FROM r ORDER BY id')).toEqual([
      { id: 1, q: 100 },
      { id: 2, q: null },
      { id: 3, q: 50 },
      { id: 4, q: null },
    ]);
  });

  it("backfill_progress: r's backfill read the 3 rows t had", async () => {
    expect(await rows("SELECT view_name, relation_name, rows_done, rows_total_estimate, state FROM oxbow_catalog.backfill_progress WHERE view_name = 'r'")).toEqual([
      { view_name: 'r', relation_name: 't', rows_done: '3', rows_total_estimate: '3', state: 'done' },
    ]);
  });

  it('time_travel: the default retention and a table of its own, windows ending at the committed epoch', async () => {
    const windows = await rows("SELECT name, kind, retention::text AS retention, retention_is_default, oldest_readable <= latest_committed AS ordered FROM oxbow_catalog.time_travel WHERE schema_name = 'public' ORDER BY name");
    expect(windows).toEqual([
      { name: 'bid', kind: 'source', retention: '00:10:00', retention_is_default: true, ordered: true },
      { name: 'kept', kind: 'table', retention: '01:00:00', retention_is_default: false, ordered: true },
      { name: 'r', kind: 'materialized view', retention: '00:10:00', retention_is_default: true, ordered: true },
      { name: 't', kind: 'table', retention: '00:10:00', retention_is_default: true, ordered: true },
    ]);
  });

  it('source_partitions: 50 events generated, 46 of them bids', async () => {
    const [{ n }] = (await rows('SELECT count(*)::int AS n FROM bid')) as [{ n: number }];
    expect(n).toBe(46);
    expect(await rows("SELECT partition_id, committed_offset, high_watermark, lag, messages, errors FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'")).toEqual([
      { partition_id: 0, committed_offset: '50', high_watermark: '50', lag: '0', messages: String(n), errors: '0' },
    ]);
  });
});

/** Families operator-view.test.ts counts against its own workload (not repeated here). */
const CHECKED_ELSEWHERE = new Set([
  'oxbow_barrier_latency_seconds_bucket', 'oxbow_barrier_latency_seconds_sum', 'oxbow_barrier_latency_seconds_count',
  'oxbow_epoch_commit_latency_seconds_bucket', 'oxbow_epoch_commit_latency_seconds_sum', 'oxbow_epoch_commit_latency_seconds_count',
  'oxbow_epoch_committed_timestamp_seconds', 'oxbow_epochs_committed_total', 'oxbow_statements_total', 'oxbow_statement_errors_total',
  'oxbow_epoch_sealed_timestamp_seconds', 'oxbow_epochs_sealed_total', 'oxbow_epochs_in_flight',
  'oxbow_input_rows_total', 'oxbow_view_input_rows_total', 'oxbow_view_rows_total', 'oxbow_view_busy_seconds_total',
  'oxbow_cache_hits_total', 'oxbow_cache_misses_total', 'oxbow_cache_hit_ratio', 'oxbow_process_resident_memory_bytes',
  'oxbow_process_heap_used_bytes', 'oxbow_event_loop_delay_seconds', 'oxbow_sessions', 'oxbow_sessions_active', 'oxbow_connections',
]);

describe('/metrics against the system tables', () => {
  it('checks every family it serves', async () => {
    // A checkpoint may complete between the reads: retry until the table reads the same around the scrape.
    const { samples, checkpoints } = await waitFor('a scrape between two checkpoints', async () => {
      const before = await rows("SELECT epoch::text AS epoch, duration_ms, commit_pause_ms, files, bytes_uploaded, bytes_referenced, status, extract(epoch from started_at)::float8 AS started FROM oxbow_catalog.checkpoints ORDER BY epoch");
      const scraped = await scrape();
      const after = await rows("SELECT epoch::text AS epoch, duration_ms, commit_pause_ms, files, bytes_uploaded, bytes_referenced, status, extract(epoch from started_at)::float8 AS started FROM oxbow_catalog.checkpoints ORDER BY epoch");
      return JSON.stringify(before) === JSON.stringify(after) && after.every((row) => row.status === 'complete') ? { samples: scraped, checkpoints: after } : undefined;
    });
    const checked = new Set<string>();
    const expectOne = (name: string, labels: Record<string, string>, expected: (value: number) => void): void => {
      expected(one(samples, name, labels));
      checked.add(name);
    };

    // State tables: one bytes and one keys sample per row of state_size, with its figures.
    const sizes = await rows('SELECT table_id, bytes, keys FROM oxbow_catalog.state_size');
    for (const size of sizes) {
      expectOne('oxbow_state_table_bytes', { table_id: String(size.table_id) }, (value) => expect(value).toBeGreaterThan(0));
      expectOne('oxbow_state_table_keys', { table_id: String(size.table_id) }, (value) => expect(value).toBeGreaterThan(0));
    }
    expect(samples.filter((sample) => sample.name === 'oxbow_state_table_bytes')).toHaveLength(sizes.length);

    // Row cache: its share of --memory-limit; this workload's few rows fit without eviction.
    expectOne('oxbow_cache_limit_bytes', {}, (value) => expect(value).toBe(ROW_CACHE_BYTES));
    expectOne('oxbow_cache_evictions_total', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_cache_rows', {}, (value) => expect(value).toBeGreaterThan(0));
    expectOne('oxbow_cache_used_bytes', {}, (value) => expect(value).toBeGreaterThan(0));
    expect(one(samples, 'oxbow_cache_used_bytes')).toBeLessThanOrEqual(ROW_CACHE_BYTES);

    // Process: uptime no longer than since this test started the server.
    expectOne('oxbow_process_uptime_seconds', {}, (value) => expect(value * 1000).toBeLessThanOrEqual(Date.now() - startedAt));
    expectOne('oxbow_process_heap_total_bytes', {}, (value) => expect(value).toBeGreaterThanOrEqual(one(samples, 'oxbow_process_heap_used_bytes')));
    expectOne('oxbow_process_external_memory_bytes', {}, (value) => expect(value).toBeGreaterThan(0));

    // Memory: one sample per row of oxbow_catalog.memory (the manager's evicted bytes are a counter
    // of their own); the limits as configured (--memory-limit 512MB's parts: the live heap of this
    // small workload is far under its part, so the memory manager lowered nothing); the rows
    // written are in RocksDB's memtable.
    const memory = (await rows('SELECT component, bytes, limit_bytes FROM oxbow_catalog.memory')).filter((row) => row.component !== 'cache_evicted_by_manager');
    expect(samples.filter((sample) => sample.name === 'oxbow_memory_bytes').map((sample) => sample.labels.component).sort()).toEqual(memory.map((row) => String(row.component)).sort());
    for (const row of memory) {
      expectOne('oxbow_memory_bytes', { component: String(row.component) }, (value) => expect(value).toBeGreaterThanOrEqual(0));
      if (row.limit_bytes !== null) expectOne('oxbow_memory_limit_bytes', { component: String(row.component) }, (value) => expect(value).toBe(Number(row.limit_bytes)));
    }
    expect(samples.filter((sample) => sample.name === 'oxbow_memory_limit_bytes')).toHaveLength(memory.filter((row) => row.limit_bytes !== null).length);
    expect(one(samples, 'oxbow_memory_limit_bytes', { component: 'row_cache' })).toBe(ROW_CACHE_BYTES);
    expect(one(samples, 'oxbow_memory_limit_bytes', { component: 'group_caches' })).toBe(GROUP_CACHE_BYTES);
    expect(one(samples, 'oxbow_memory_bytes', { component: 'cache_budget' })).toBe(224 * MIB);
    expect(one(samples, 'oxbow_memory_limit_bytes', { component: 'rocksdb_block_cache' })).toBe(64 * MIB);
    expectOne('oxbow_memory_manager_evicted_bytes_total', {}, (value) => expect(value).toBe(0));
    for (const action of ['budget_lowered', 'budget_raised', 'growth_lowered', 'growth_raised']) {
      expectOne('oxbow_memory_manager_actions_total', { action }, (value) => expect(value).toBe(0));
    }
    expectOne('oxbow_memory_manager_heap_growing_percent', {}, (value) => expect(value).toBe(100));
    expectOne('oxbow_memory_manager_trims_total', {}, (value) => expect(value).toBeGreaterThanOrEqual(0));
    expectOne('oxbow_memory_manager_full_collections_total', {}, (value) => expect(value).toBeGreaterThanOrEqual(0));
    expect(one(samples, 'oxbow_memory_bytes', { component: 'rocksdb_memtables' })).toBeGreaterThan(0);

    // Checkpoints: the families against oxbow_catalog.checkpoints (all complete, all within the
    // 10-minute retention so every one is kept and no file deleted).
    const last = checkpoints.at(-1)!;
    expectOne('oxbow_checkpoints_total', {}, (value) => expect(value).toBe(checkpoints.length));
    expectOne('oxbow_checkpoint_kept', {}, (value) => expect(value).toBe(checkpoints.length));
    expectOne('oxbow_checkpoint_last_epoch', {}, (value) => expect(value).toBe(Number(last.epoch)));
    expectOne('oxbow_checkpoint_last_duration_seconds', {}, (value) => expect(value * 1000).toBeCloseTo(Number(last.duration_ms), 3));
    expectOne('oxbow_checkpoint_last_pause_seconds', {}, (value) => expect(value * 1000).toBeCloseTo(Number(last.commit_pause_ms), 3));
    expectOne('oxbow_checkpoint_last_cut_seconds', {}, (value) => expect(value * 1000).toBeLessThanOrEqual(Number(last.duration_ms)));
    expectOne('oxbow_checkpoint_last_timestamp_seconds', {}, (value) => expect(value).toBeGreaterThanOrEqual(Number(last.started) - 0.001));
    expectOne('oxbow_checkpoint_last_uploaded_bytes', {}, (value) => expect(value).toBe(Number(last.bytes_uploaded)));
    expectOne('oxbow_checkpoint_referenced_bytes', {}, (value) => expect(value).toBe(Number(last.bytes_referenced)));
    expectOne('oxbow_checkpoint_files', {}, (value) => expect(value).toBe(Number(last.files)));
    expectOne('oxbow_checkpoint_uploaded_bytes_total', {}, (value) => expect(value).toBe(checkpoints.reduce((sum, row) => sum + Number(row.bytes_uploaded), 0)));
    expectOne('oxbow_checkpoint_failures_total', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_checkpoint_consecutive_failures', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_checkpoint_retries_total', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_checkpoint_deleted_files_total', {}, (value) => expect(value).toBe(0));

    // Recovery: a fresh start, from nothing.
    const [recovery] = await rows('SELECT source, duration_ms FROM oxbow_catalog.recovery');
    expect(recovery!.source).toBe('fresh');
    expectOne('oxbow_recovery_duration_seconds', {}, (value) => expect(value * 1000).toBeCloseTo(Number(recovery!.duration_ms), 3));
    expectOne('oxbow_recovery_skipped_checkpoints', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_recovery_from_object_store', {}, (value) => expect(value).toBe(0));

    // The generator source: 50 events, 46 bids, none rejected.
    const partition = { source: 'public.bid', partition: '0' };
    expectOne('oxbow_source_rows_total', { source: 'public.bid' }, (value) => expect(value).toBe(46));
    expectOne('oxbow_source_committed_offset', partition, (value) => expect(value).toBe(50));
    expectOne('oxbow_source_high_watermark', partition, (value) => expect(value).toBe(50));
    expectOne('oxbow_source_lag_messages', partition, (value) => expect(value).toBe(0));
    expectOne('oxbow_source_messages_total', partition, (value) => expect(value).toBe(46));
    expectOne('oxbow_source_rejected_messages_total', partition, (value) => expect(value).toBe(0));
    expectOne('oxbow_source_trouble', { source: 'public.bid' }, (value) => expect(value).toBe(0));
    // No row of oxbow_catalog.source_errors names the generator source.
    const sourceErrors = await rows("SELECT count(*)::int AS n FROM oxbow_catalog.source_errors WHERE source_name = 'bid'");
    expectOne('oxbow_source_errors_total', { source: 'public.bid' }, (value) => expect(value).toBe(Number(sourceErrors[0]!.n)));

    // Object-store deadlines: the local checkpoint folder answers every request in time; a checkpoint
    // running at the scrape has run for at most a few of its 1 s intervals.
    expectOne('oxbow_object_store_timeouts_total', {}, (value) => expect(value).toBe(0));
    expectOne('oxbow_checkpoint_running_seconds', {}, (value) => {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(30);
    });

    const unchecked = [...new Set(samples.map((sample) => sample.name))].filter((name) => !checked.has(name) && !CHECKED_ELSEWHERE.has(name));
    expect(unchecked, 'families /metrics serves that no test checks').toEqual([]);
  });
});

describe('after a restart on the same data directory', () => {
  it('keeps view_errors (committed with the epoch), recovers locally, and counts on from there', async () => {
    const before = await rows('SELECT error_count, last_error_at FROM oxbow_catalog.view_errors');
    await client.end();
    await oxbow.kill('SIGTERM');
    oxbow = await startOxbow({ dataDir, args: ARGS });
    await connect();
    expect(await rows('SELECT error_count, last_error_at FROM oxbow_catalog.view_errors')).toEqual(before);
    expect((await rows('SELECT source FROM oxbow_catalog.recovery'))[0]!.source).toBe('local');
    await client.query('INSERT INTO t VALUES (5, 0)');
    const [after] = await rows("SELECT view_name, error_count, last_error_at >= now() - interval '1 minute' AS recent FROM oxbow_catalog.view_errors");
    expect(after).toEqual({ view_name: 'r', error_count: '3', recent: true });
    // DROP forgets the view's errors, durably too.
    await client.query('DROP MATERIALIZED VIEW r');
    expect(await rows('SELECT * FROM oxbow_catalog.view_errors')).toEqual([]);
    await client.end();
    await oxbow.kill('SIGTERM');
    oxbow = await startOxbow({ dataDir, args: ARGS });
    await connect();
    expect(await rows('SELECT * FROM oxbow_catalog.view_errors')).toEqual([]);
  }, 60_000);
});
