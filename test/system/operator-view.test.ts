// The operator's view over the wire, against a real oxbow server process: the oxbow_catalog system
// tables (objects, dataflow, state_size, epochs, sessions, queries), pg_stat_activity, EXPLAIN
// ANALYZE of a view and of a query, and the metrics port (/metrics parsed line by line,
// /api/status as JSON). A known workload (a table, N rows, a view, K single-row inserts, a known
// number of statements) gives the expected counts, computed by hand below or recomputed with a
// plain SELECT.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, metricsPortOf, type HttpAnswer } from '../support/metrics-http.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const N = 30; // rows of the first INSERT (ids 1..N, g = id % 3)
const K = 4; // single-row INSERTs after the view exists, each into an existing group

let oxbow: OxbowServer;
let metricsPort: number;
let client: pg.Client;
let workloadStartedAt: number;

function get(path: string): Promise<HttpAnswer> {
  return httpGet(metricsPort, path);
}

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Parses the text exposition format strictly: every line is a HELP/TYPE comment or a sample. */
function parseMetrics(text: string): { samples: Sample[]; help: Map<string, number>; types: Map<string, string> } {
  const samples: Sample[] = [];
  const help = new Map<string, number>();
  const types = new Map<string, string>();
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    const comment = /^# (HELP|TYPE) (oxbow_[a-z_]+) (.+)$/.exec(line);
    if (comment !== null) {
      if (comment[1] === 'HELP') help.set(comment[2]!, (help.get(comment[2]!) ?? 0) + 1);
      else {
        expect(['gauge', 'counter', 'histogram']).toContain(comment[3]);
        expect(types.has(comment[2]!)).toBe(false);
        types.set(comment[2]!, comment[3]!);
      }
      continue;
    }
    const sample = /^(oxbow_[a-z_]+)(?:\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\})? (-?[0-9.e+-]+|\+Inf|-Inf|NaN)$/.exec(line);
    if (sample === null) throw new Error(`not a comment or a sample: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const match of (sample[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]!] = match[2]!;
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { samples, help, types };
}

function value(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, text]) => sample.labels[key] === text));
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

async function scrape(): Promise<Sample[]> {
  const response = await get('/metrics');
  expect(response.status).toBe(200);
  expect(response.type).toContain('text/plain');
  return parseMetrics(response.body).samples;
}

async function rows(sql: string, on: pg.Client = client): Promise<Record<string, unknown>[]> {
  return (await on.query(sql)).rows as Record<string, unknown>[];
}

async function sqlError(sql: string): Promise<{ code: string; message: string }> {
  try {
    await client.query(sql);
  } catch (error) {
    return { code: (error as { code: string }).code, message: (error as Error).message };
  }
  throw new Error(`no error from ${sql}`);
}

beforeAll(async () => {
  oxbow = await startOxbow({ args: ['--metrics-port', '0'] });
  metricsPort = metricsPortOf(oxbow);
  client = new pg.Client({ connectionString: oxbow.url, application_name: 'operator-view-test' });
  await client.connect();
  workloadStartedAt = Date.now();
  await client.query('CREATE TABLE t (id int PRIMARY KEY, g int, v int)');
  await client.query(`INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, ${N}) AS i`);
  await client.query('CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS c, sum(v) AS s FROM t GROUP BY g');
  await client.query('CREATE VIEW plain AS SELECT id FROM t WHERE v > 10');
  for (let i = 1; i <= K; i++) await client.query(`INSERT INTO t VALUES (${1000 + i}, ${i % 3}, ${i})`);
}, 90_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
});

describe('oxbow_catalog system tables', () => {
  it('lists every oxbow_catalog table in information_schema.tables', async () => {
    const names = (await rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'oxbow_catalog' ORDER BY 1")).map((row) => row.table_name);
    for (const name of ['checkpoints', 'dataflow', 'epochs', 'memory', 'nodes', 'objects', 'queries', 'recovery', 'sessions', 'source_errors', 'source_partitions', 'state_size', 'time_travel', 'view_errors', 'vnodes']) {
      expect(names).toContain(name);
    }
  });

  it('nodes: no rows on a server started without --cluster, the columns of a cluster node', async () => {
    expect(await rows('SELECT * FROM oxbow_catalog.nodes')).toEqual([]);
    const columns = await rows("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'oxbow_catalog' AND table_name = 'nodes' ORDER BY ordinal_position");
    expect(columns.map((row) => [row.column_name, row.data_type])).toEqual([
      ['node_id', 'text'],
      ['address', 'text'],
      ['role', 'text'],
      ['state', 'text'],
      ['checkpoint_epoch', 'bigint'],
      ['lease_id', 'text'],
      ['is_self', 'boolean'],
      ['share_address', 'text'],
      ['share_protocol', 'integer'],
      ['share_units', 'bigint'],
      ['share_rows', 'bigint'],
      ['share_seed_rows', 'bigint'],
      ['share_seed_bytes', 'bigint'],
      ['share_ready_ms', 'bigint'],
      ['vnodes', 'integer'],
    ]);
  });

  it('objects: every user object with its kind, definition and dependencies', async () => {
    const objects = await rows('SELECT id, schema_name, name, kind, definition, depends_on, created_at FROM oxbow_catalog.objects ORDER BY id');
    const t = objects.find((row) => row.name === 't')!;
    expect(objects.map((row) => [row.name, row.kind])).toEqual([
      ['t', 'table'],
      ['t_pkey', 'index'],
      ['mv', 'materialized view'],
      ['plain', 'view'],
    ]);
    expect(objects.every((row) => row.schema_name === 'public')).toBe(true);
    expect(objects.find((row) => row.name === 't_pkey')!.definition).toBe('ON public.t (id)');
    const mv = objects.find((row) => row.name === 'mv')!;
    expect(mv.definition).toBe('SELECT g, count(*) AS c, sum(v) AS s FROM t GROUP BY g');
    expect(mv.depends_on).toEqual([t.id]);
    expect(t.definition).toBeNull();
    // Created in this order during the workload (the server runs on this machine's clock).
    const created = objects.map((row) => (row.created_at as Date).getTime());
    expect(created[0]!).toBeGreaterThanOrEqual(workloadStartedAt);
    expect(created.at(-1)!).toBeLessThanOrEqual(Date.now());
    expect([...created].sort((a, b) => a - b)).toEqual(created);
  });

  it('dataflow: the view operators with rows counted from the workload', async () => {
    const operators = await rows("SELECT operator_id, parent_id, kind, stateful, state_table_ids, rows_in, rows_out, batches, busy_ms FROM oxbow_catalog.dataflow WHERE view_name = 'mv' ORDER BY operator_id");
    expect(operators.map((row) => [row.operator_id, row.parent_id, row.kind, row.stateful])).toEqual([
      [1, null, 'StreamMaterialize', true],
      [2, 1, 'StreamProject', false],
      [3, 2, 'StreamHashAggregate', true],
      [4, 3, 'StreamTableScan', false],
    ]);
    // The scan saw the N backfilled rows in one batch, then one batch per INSERT.
    const scan = operators[3]!;
    expect(Number(scan.rows_in)).toBe(N + K);
    expect(Number(scan.batches)).toBe(1 + K);
    expect(Number(operators[2]!.rows_in)).toBe(N + K);
    // Three groups at the backfill; each later INSERT updates one group: delete old + insert new.
    expect(Number(operators[0]!.rows_in)).toBe(3 + 2 * K);
    expect(Number(operators[0]!.rows_out)).toBe(3 + 2 * K);
    for (const operator of operators) expect(Number(operator.busy_ms)).toBeGreaterThanOrEqual(0);
    expect((operators[2]!.state_table_ids as number[]).length).toBeGreaterThan(0);
    expect(operators[1]!.state_table_ids).toEqual([]);
  });

  it('state_size: one row per state table, the same ids the dataflow names, plus the table', async () => {
    const sizes = await rows('SELECT table_id, object_name, object_kind, operator_id, purpose, bytes, keys FROM oxbow_catalog.state_size ORDER BY table_id');
    const declared = (await rows("SELECT unnest(state_table_ids) AS id FROM oxbow_catalog.dataflow WHERE view_name = 'mv'")).map((row) => Number(row.id));
    const [t] = await rows("SELECT id FROM oxbow_catalog.objects WHERE name = 't'");
    expect(sizes.map((row) => Number(row.table_id)).sort()).toEqual([Number(t!.id), ...declared].sort());
    expect(sizes.find((row) => row.table_id === t!.id)!.purpose).toBe('table rows');
    for (const row of sizes) {
      expect(Number(row.bytes)).toBeGreaterThanOrEqual(0);
      expect(Number(row.keys)).toBeGreaterThanOrEqual(0);
    }
  });

  it('epochs: one more sealed and committed epoch per writing statement, none in flight once it returned', async () => {
    const [before] = await rows('SELECT open_epoch, committed_epoch, committed_at, epochs_committed, epochs_sealed FROM oxbow_catalog.epochs');
    await client.query('INSERT INTO t VALUES (2001, 0, 1)');
    await client.query('UPDATE t SET v = v + 1 WHERE id = 2001');
    await client.query('DELETE FROM t WHERE id = 2001');
    const [after] = await rows('SELECT open_epoch, committed_epoch, committed_at, epochs_committed, barrier_mean_ms, commit_mean_ms, sealed_epoch, sealed_at, epochs_in_flight, epochs_sealed FROM oxbow_catalog.epochs');
    expect(BigInt(after!.epochs_committed as string) - BigInt(before!.epochs_committed as string)).toBe(3n);
    // DML returns once its epoch is durable and nothing else writes on this server: every sealed
    // epoch is committed, the last sealed one is the committed one, none is in flight.
    expect(BigInt(after!.epochs_sealed as string) - BigInt(before!.epochs_sealed as string)).toBe(3n);
    expect(after!.epochs_sealed).toBe(after!.epochs_committed);
    expect(after!.epochs_in_flight).toBe(0);
    expect(after!.sealed_epoch).toBe(after!.committed_epoch);
    expect((after!.sealed_at as Date).getTime()).toBe((after!.committed_at as Date).getTime());
    expect(BigInt(after!.committed_epoch as string)).toBeGreaterThan(BigInt(before!.committed_epoch as string));
    expect(BigInt(after!.open_epoch as string)).toBeGreaterThan(BigInt(after!.committed_epoch as string));
    // The committed epoch's time is its upper 48 bits (milliseconds).
    expect((after!.committed_at as Date).getTime()).toBe(Number(BigInt(after!.committed_epoch as string) >> 16n));
    expect(Number(after!.commit_mean_ms)).toBeGreaterThan(0);
    expect(Number(after!.barrier_mean_ms)).toBeGreaterThanOrEqual(Number(after!.commit_mean_ms));
  });

  it('sessions, queries and pg_stat_activity: the open sessions, the running one active', async () => {
    const others = [0, 1].map((i) => new pg.Client({ connectionString: oxbow.url, application_name: `operator-view-idle-${i}` }));
    for (const other of others) await other.connect();
    await others[0]!.query('SELECT 42');
    try {
      const [{ pid }] = (await rows('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
      const sessions = await rows("SELECT pid, user_name, database_name, application_name, client_addr, state, query FROM oxbow_catalog.sessions WHERE application_name LIKE 'operator-view%' ORDER BY application_name");
      expect(sessions.map((row) => [row.application_name, row.state])).toEqual([
        ['operator-view-idle-0', 'idle'],
        ['operator-view-idle-1', 'idle'],
        ['operator-view-test', 'active'],
      ]);
      expect(sessions[0]!.query).toBe('SELECT 42');
      expect(sessions[2]!.pid).toBe(pid);
      for (const row of sessions) {
        expect(row.user_name).toBe('oxbow');
        expect(row.database_name).toBe('oxbow');
        expect(row.client_addr).toBe('127.0.0.1');
      }
      const queries = await rows('SELECT pid, query FROM oxbow_catalog.queries');
      expect(queries).toEqual([{ pid, query: 'SELECT pid, query FROM oxbow_catalog.queries' }]);
      const activity = await rows("SELECT datname, pid, usename, application_name, state, backend_type FROM pg_stat_activity WHERE application_name LIKE 'operator-view%' ORDER BY application_name");
      expect(activity.map((row) => [row.datname, row.usename, row.application_name, row.state, row.backend_type])).toEqual([
        ['oxbow', 'oxbow', 'operator-view-idle-0', 'idle', 'client backend'],
        ['oxbow', 'oxbow', 'operator-view-idle-1', 'idle', 'client backend'],
        ['oxbow', 'oxbow', 'operator-view-test', 'active', 'client backend'],
      ]);
    } finally {
      for (const other of others) await other.end();
    }
  });
});

describe('EXPLAIN ANALYZE', () => {
  it('of a view: the streaming plan with each operator counted', async () => {
    const [{ c: total }] = (await rows('SELECT count(*) AS c FROM t')) as [{ c: string }];
    const lines = (await rows('EXPLAIN ANALYZE mv')).map((row) => row['QUERY PLAN'] as string);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^StreamMaterialize mv .*\(actual id=1 rows in=\d+ out=\d+ batches=\d+ time=[0-9.]+ ms\)$/);
    // Every change the scan saw: N + K inserts, plus the epochs test's insert, update (-1 +1) and delete.
    expect(Number(total)).toBe(N + K);
    expect(lines[3]).toContain(`StreamTableScan public.t [g, v] (linear)  (actual id=4 rows in=${N + K + 4} out=${N + K + 4} `);
    expect(lines[4]).toMatch(/^Operators: 4, busy [0-9.]+ ms since the dataflow was built/);
    expect((await rows('EXPLAIN ANALYZE MATERIALIZED VIEW public.mv')).map((row) => (row['QUERY PLAN'] as string).replace(/time=[0-9.]+|busy [0-9.]+/g, ''))).toEqual(
      lines.map((line) => line.replace(/time=[0-9.]+|busy [0-9.]+/g, '')),
    );
  });

  it('of a query: the plan with rows per node, checked against the query run plainly', async () => {
    const query = 'SELECT g, count(*) FROM t WHERE v > 3 GROUP BY g ORDER BY g';
    const [{ c: filtered }] = (await rows('SELECT count(*) AS c FROM t WHERE v > 3')) as [{ c: string }];
    const groups = (await rows(query)).length;
    const lines = (await rows(`EXPLAIN ANALYZE ${query}`)).map((row) => row['QUERY PLAN'] as string);
    const rowsOf = (prefix: string): number => Number(/actual rows=(\d+)/.exec(lines.find((line) => line.trimStart().startsWith(prefix))!)![1]);
    expect(rowsOf('Scan public.t')).toBe(Number(filtered));
    expect(rowsOf('Aggregate')).toBe(groups);
    expect(rowsOf('Sort')).toBe(groups);
    expect(lines).toContain(`Result rows: ${groups}`);
    expect(lines.at(-1)).toMatch(/^Execution Time: [0-9.]+ ms$/);
    expect(lines.find((line) => line.trimStart().startsWith('Aggregate'))).toContain(` in=${filtered} `);
  });

  it('through the extended protocol, with a parameter', async () => {
    const query = await client.query({ text: 'EXPLAIN ANALYZE SELECT v FROM t WHERE id = $1', values: [5] });
    expect(query.fields.map((field) => field.name)).toEqual(['QUERY PLAN']);
    const lines = query.rows.map((row) => (row as Record<string, string>)['QUERY PLAN']!);
    expect(lines).toContain('Result rows: 1');
    const view = await client.query({ name: 'explain-analyze-mv', text: 'EXPLAIN ANALYZE mv' });
    expect(view.rows).toHaveLength(5);
  });

  it('answers bad input with SQLSTATEs', async () => {
    expect(await sqlError('EXPLAIN ANALYZE t')).toMatchObject({ code: '42809', message: '"t" is not a materialized view' });
    expect(await sqlError('EXPLAIN ANALYZE no_such_view')).toMatchObject({ code: '42P01', message: 'relation "no_such_view" does not exist' });
    expect(await sqlError('EXPLAIN ANALYZE INSERT INTO t VALUES (9999, 1, 1)')).toMatchObject({ code: '0A000' });
    expect((await rows('SELECT count(*) AS c FROM t WHERE id = 9999'))[0]!.c).toBe('0');
    expect((await sqlError('EXPLAIN ANALYZE MATERIALIZED VIEW')).code).toBe('42601');
  });
});

describe('metrics port', () => {
  it('/metrics: every line parses, every family named oxbow_ with one HELP and one TYPE', async () => {
    const response = await get('/metrics');
    const { samples, help, types } = parseMetrics(response.body);
    for (const [name, count] of help) {
      expect(count, name).toBe(1);
      expect(types.has(name), name).toBe(true);
    }
    for (const sample of samples) {
      const family = types.has(sample.name) ? sample.name : sample.name.replace(/_(bucket|sum|count)$/, '');
      expect(types.has(family), sample.name).toBe(true);
    }
    for (const name of [
      'oxbow_barrier_latency_seconds',
      'oxbow_epoch_commit_latency_seconds',
      'oxbow_checkpoint_last_duration_seconds',
      'oxbow_checkpoint_last_uploaded_bytes',
      'oxbow_state_table_bytes',
      'oxbow_state_table_keys',
      'oxbow_cache_hit_ratio',
      'oxbow_process_resident_memory_bytes',
      'oxbow_process_heap_used_bytes',
      'oxbow_event_loop_delay_seconds',
      'oxbow_sessions',
      'oxbow_view_rows_total',
      'oxbow_input_rows_total',
    ]) {
      expect(types.has(name), name).toBe(true);
    }
    expect(types.get('oxbow_barrier_latency_seconds')).toBe('histogram');
  });

  it('counts a known run of statements, epochs, view rows and sessions', async () => {
    const before = await scrape();
    // 6 statements: 2 writes (each one epoch, each one group update in mv: 2 changes), 3 reads, 1 error.
    await client.query('INSERT INTO t VALUES (3001, 1, 1)');
    await client.query('SELECT 1');
    await client.query('INSERT INTO t VALUES (3002, 2, 1)');
    await client.query('SELECT count(*) FROM mv');
    await client.query('SELECT 2');
    expect((await sqlError('SELECT 1 / 0')).code).toBe('22012');
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}): number => value(after, name, labels) - value(before, name, labels);
    expect(delta('oxbow_statements_total')).toBe(6);
    expect(delta('oxbow_statement_errors_total')).toBe(1);
    expect(delta('oxbow_view_input_rows_total', { view: 'public.mv' })).toBe(4);
    expect(delta('oxbow_view_busy_seconds_total', { view: 'public.mv' })).toBeGreaterThan(0);
    expect(value(after, 'oxbow_sessions_active')).toBe(0);
    expect(value(after, 'oxbow_connections')).toBe(1);
    const [epochs] = await rows('SELECT committed_at FROM oxbow_catalog.epochs');
    expect(value(after, 'oxbow_epoch_committed_timestamp_seconds')).toBeCloseTo((epochs!.committed_at as Date).getTime() / 1000, 3);
    expect(['mean', 'p99', 'max'].map((statistic) => value(after, 'oxbow_event_loop_delay_seconds', { statistic }) >= 0)).toEqual([true, true, true]);
    expect(delta('oxbow_epochs_committed_total')).toBe(2);
    expect(delta('oxbow_epochs_sealed_total')).toBe(2);
    expect(value(after, 'oxbow_epochs_in_flight')).toBe(0);
    expect(value(after, 'oxbow_epoch_sealed_timestamp_seconds')).toBe(value(after, 'oxbow_epoch_committed_timestamp_seconds'));
    expect(delta('oxbow_barrier_latency_seconds_count')).toBe(2);
    expect(delta('oxbow_epoch_commit_latency_seconds_count')).toBe(2);
    expect(value(after, 'oxbow_barrier_latency_seconds_bucket', { le: '+Inf' })).toBe(value(after, 'oxbow_barrier_latency_seconds_count'));
    expect(delta('oxbow_input_rows_total', { relation: 'public.t', kind: 'table' })).toBe(2);
    expect(delta('oxbow_view_rows_total', { view: 'public.mv' })).toBe(4);
    expect(value(after, 'oxbow_sessions')).toBe(1);
    const [root] = await rows("SELECT rows_out FROM oxbow_catalog.dataflow WHERE view_name = 'mv' AND operator_id = 1");
    expect(value(after, 'oxbow_view_rows_total', { view: 'public.mv' })).toBe(Number(root!.rows_out));
    const stateIds = (await rows('SELECT table_id FROM oxbow_catalog.state_size')).map((row) => String(row.table_id)).sort();
    expect(after.filter((sample) => sample.name === 'oxbow_state_table_bytes').map((sample) => sample.labels.table_id).sort()).toEqual(stateIds);
    expect(after.filter((sample) => sample.name === 'oxbow_state_table_keys').map((sample) => sample.labels.table_id).sort()).toEqual(stateIds);
    const hits = value(after, 'oxbow_cache_hits_total');
    const misses = value(after, 'oxbow_cache_misses_total');
    expect(value(after, 'oxbow_cache_hit_ratio')).toBeCloseTo(hits + misses === 0 ? 0 : hits / (hits + misses), 9);
    expect(value(after, 'oxbow_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('/api/status: the same figures as JSON', async () => {
    const response = await get('/api/status');
    expect(response.status).toBe(200);
    expect(response.type).toContain('application/json');
    const status = JSON.parse(response.body) as {
      epochs: { committedEpoch: string; epochsCommitted: number };
      objects: { name: string }[];
      dataflows: { name: string; operators: { kind: string; rowsIn: number }[] }[];
      sessions: { applicationName: string; state: string }[];
      stateTables: unknown[];
    };
    const [epochs] = await rows('SELECT committed_epoch, epochs_committed FROM oxbow_catalog.epochs');
    expect(status.epochs.committedEpoch).toBe(epochs!.committed_epoch);
    expect(status.epochs.epochsCommitted).toBe(Number(epochs!.epochs_committed));
    expect(status.objects.map((object) => object.name)).toEqual(['t', 't_pkey', 'mv', 'plain']);
    expect(status.dataflows.map((dataflow) => [dataflow.name, dataflow.operators.length])).toEqual([['mv', 4]]);
    expect(status.sessions.map((session) => [session.applicationName, session.state])).toEqual([['operator-view-test', 'idle']]);
    expect((await get('/nothing')).status).toBe(404);
  });
});
