// state_size counts the bytes of large rows, which RocksDB keeps in blob files (values of 256 bytes
// or more) where its size estimate (approximateSize, SST files and memtables only) does not see
// them. Known workload: a table of 10,000 rows whose values are 1 KiB of random bytes (random, so
// ZSTD cannot shrink them), and a view that keeps every row (its view-rows state holds the same
// values). Hand-computed bounds, once a checkpoint's flush has moved the rows to SST and blob files:
// each of the two state tables holds 10,000 x 1,024 = 10,240,000 bytes of values, so at least that;
// the table's rows are keyed by id, so at most a quarter more (keys, blob references, version
// suffixes, ZSTD's frame per value); the view has no key of its own, so its rows are keyed by the
// whole row and the payload is stored three times (in the SST key, in the blob record's copy of
// the key, and as the value): at most 3 x 1.25 x 10,240,000.

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const ROWS = 10_000;
const VALUE_BYTES = 1024;
const ROWS_PER_INSERT = 500;
const VALUE_TOTAL = ROWS * VALUE_BYTES;

let oxbow: OxbowServer;
let client: pg.Client;

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await client.query(sql)).rows as Record<string, unknown>[];
}

async function committedEpoch(): Promise<string> {
  const [{ epoch }] = (await rows('SELECT committed_epoch::text AS epoch FROM oxbow_catalog.epochs')) as [{ epoch: string }];
  return epoch;
}

async function untilCheckpointHolds(epoch: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [{ n }] = (await rows(`SELECT count(*)::int AS n FROM oxbow_catalog.checkpoints WHERE status = 'complete' AND epoch >= ${epoch}`)) as [{ n: number }];
    if (n > 0) return;
    if (Date.now() > deadline) throw new Error(`no checkpoint holding epoch ${epoch} within 60 s: ${JSON.stringify(await rows('SELECT epoch::text, started_at::text, status FROM oxbow_catalog.checkpoints'))}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  oxbow = await startOxbow({ args: ['--metrics-port', '0', '--checkpoint-interval-ms', '500'] });
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
  await client.query('CREATE TABLE big (id int PRIMARY KEY, payload bytea)');
  await client.query('CREATE MATERIALIZED VIEW big_copy AS SELECT id, payload FROM big');
  for (let first = 1; first <= ROWS; first += ROWS_PER_INSERT) {
    const values: string[] = [];
    const parameters: unknown[] = [];
    for (let id = first; id < first + ROWS_PER_INSERT; id++) {
      values.push(`($${parameters.length + 1}::int, $${parameters.length + 2}::bytea)`);
      parameters.push(id, randomBytes(VALUE_BYTES));
    }
    await client.query(`INSERT INTO big VALUES ${values.join(', ')}`, parameters);
  }
  // A checkpoint's cut flushes the memtable, but a cut that began flushing before the last INSERT
  // holds it through its copy of the WAL while those rows stay in the memtable. Checkpoints run
  // one after another, so the one after a checkpoint holding the inserts began after them (a
  // checkpoint is cut only after new epochs: a small commit gives it one).
  await untilCheckpointHolds(await committedEpoch());
  await client.query('CREATE TABLE tick (id int PRIMARY KEY)');
  await client.query('INSERT INTO tick VALUES (1)');
  await untilCheckpointHolds(await committedEpoch());
}, 150_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
});

it('state_size and /metrics count the values kept in blob files and the keys, for a table and for a view', async () => {
  const [{ n, bytes }] = (await rows('SELECT count(*)::int AS n, sum(length(payload))::int8 AS bytes FROM big')) as [{ n: number; bytes: string }];
  expect([n, Number(bytes)]).toEqual([ROWS, VALUE_TOTAL]);
  const sizes = await rows("SELECT table_id, object_name, purpose, bytes, keys FROM oxbow_catalog.state_size WHERE object_name IN ('big', 'big_copy') AND purpose IN ('table rows', 'view rows') ORDER BY table_id");
  expect(sizes.map((row) => `${String(row.object_name)} ${String(row.purpose)}`)).toEqual(['big table rows', 'big_copy view rows']);
  const metrics = (await httpGet(metricsPortOf(oxbow), '/metrics')).body;
  for (const size of sizes) {
    const what = `${String(size.object_name)} ${String(size.purpose)}`;
    expect(Number(size.bytes), what).toBeGreaterThanOrEqual(VALUE_TOTAL);
    // Keys are entries counted per SST file: every row once, plus the few records (older versions,
    // deletions) in the table's range that no compaction has dropped yet.
    expect(Number(size.keys), what).toBeGreaterThanOrEqual(ROWS);
    expect(Number(size.keys), what).toBeLessThanOrEqual(ROWS * 1.01);
    const copies = size.purpose === 'table rows' ? 1 : 3;
    expect(Number(size.bytes), what).toBeLessThanOrEqual(VALUE_TOTAL * copies * 1.25);
    const sample = new RegExp(`^oxbow_state_table_bytes\\{table_id="${String(size.table_id)}",[^}]*\\} (\\d+)$`, 'm').exec(metrics);
    expect(sample, what).not.toBeNull();
    expect(Number(sample![1]), what).toBeGreaterThanOrEqual(VALUE_TOTAL);
  }
});
