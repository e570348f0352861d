// Closing the engine while a rate-limited Nexmark source lags behind its rate, views are busy with
// every epoch and an epoch's write is in flight (the state of a lagging soak, whose close once did
// not finish in 17 minutes): close() finishes, stops the sources before it waits for the running
// checkpoint (at most the barrier under way and the epochs already sealed commit after it began),
// and a restart on the same data directory holds every event below the committed offset exactly
// once, in the views and in the source. The expected counts and sums are recomputed from the
// generator for exactly the committed events. And closing while CREATE MATERIALIZED VIEW
// backfills: the backfill stops at its next chunk (57014) instead of running to its end, nothing
// of the view commits, and after a restart the same view backfills to the generator's counts;
// statement_timeout stops a backfill the same way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointMetrics } from '../../../storage/checkpoint/checkpoint-metrics.js';
import { openObjectStore } from '../../../storage/object-store/open-object-store.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import type { Engine, Session } from '../engine.js';
import { EngineMetrics } from '../../metrics/engine-metrics.js';
import { openEngine } from '../open-engine.js';
import { NEXMARK_COLUMNS, NexmarkGenerator } from '../../connectors/generators/nexmark-generator.js';
import { decodeOffsets, OFFSETS_META_PREFIX } from '../../connectors/source-manager.js';
import type { Row } from '../../../sql/value.js';
import { startCheckpointing } from '../start-checkpointing.js';

const BID_COLUMNS = 'auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR';
/** Only a hang takes this long: the close of a busy engine takes about one barrier. */
const CLOSE_BOUND_MS = 60_000;

let dataDir: string | undefined;
afterEach(() => {
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

function open(engine: Engine): { session: Session; run(sql: string): Promise<unknown[][]> } {
  const session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  return {
    session,
    async run(sql: string): Promise<unknown[][]> {
      let rows: unknown[][] = [];
      for (const statement of session.prepareMany(sql)) {
        const result = await session.execute(statement, { parameters: [] });
        if (result.kind === 'rows') rows = await result.cursor.next(0);
      }
      return rows;
    },
  };
}

/** What the process's engine is: RocksDB, the engine, checkpoints to a folder (create-engine.ts without recovery). */
async function start(dir: string, barrierIntervalMs: number, metrics: EngineMetrics) {
  const stateDir = join(dir, 'state');
  const store = openRocksStateStore({ dir: stateDir, retentionMs: 60_000, memoryLimitBytes: 64 << 20 });
  const checkpointMetrics = new CheckpointMetrics();
  const engine = await openEngine(store, { dataDir: dir, timeTravelRetentionMs: 60_000, memoryLimitBytes: 64 << 20, checkpointMetrics, barrierIntervalMs, metrics });
  const objectStore = await openObjectStore(`file://${join(dir, 'checkpoints')}`);
  const checkpointed = startCheckpointing({
    engine,
    store,
    objectStore,
    metrics: checkpointMetrics,
    dataDir: dir,
    stateDir,
    // Checkpoints back to back, so one is usually running when close() is called.
    checkpointIntervalMs: 50,
    durability: 'local',
    keepCheckpoints: 2,
    keepWithinMs: 0,
  });
  return { engine: checkpointed, store, checkpointMetrics };
}

/** Resolves with the error the promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error('expected the statement to fail');
}

/** Bids among Nexmark events 0 .. events - 1 (one split): their number and the sum of their prices. */
function expectedBids(events: number): { count: number; sum: bigint } {
  const generator = new NexmarkGenerator({});
  const price = NEXMARK_COLUMNS.Bid.findIndex((column) => column.name === 'price');
  let count = 0;
  let sum = 0n;
  let next = 0;
  while (next < events) {
    const rows: Row[] = [];
    next = generator.fill(rows, 'Bid', next, 1, events, 4096).next;
    count += rows.length;
    for (const row of rows) sum += BigInt(row[price] as bigint | number);
  }
  return { count, sum };
}

describe('closing a busy engine', () => {
  it('finishes while a lagging rate-limited source fills every epoch, and a restart sees each committed event once', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oxbow-close-'));
    const metrics = new EngineMetrics();
    const first = await start(dataDir, 20, metrics);
    const { run } = open(first.engine);
    // 200,000 events/s asked for: far more than the views keep up with, so the source always has a
    // backlog and each barrier carries as much as it can.
    await run(`CREATE SOURCE bid (${BID_COLUMNS}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.min.event.gap.in.ns = '5000', nexmark.max.chunk.size = '512')`);
    await run("CREATE MATERIALIZED VIEW windows AS SELECT auction, window_start, count(*) AS n, max(price) AS top FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start");
    await run('CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS bids, sum(price)::int8 AS total FROM bid');
    const relationId = Number((await run("SELECT id FROM oxbow_catalog.objects WHERE name = 'bid'"))[0]![0]);

    // Busy: a few thousand events committed, then close as soon as an epoch's write is in flight.
    for (;;) {
      const committed = Number((await run("SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'"))[0]![0]);
      if (committed >= 10_000) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    while (first.store.sealedEpochs === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(first.store.sealedEpochs).toBeGreaterThan(0);
    const epochsBefore = metrics.epochsCommitted;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      first.engine.close().then(() => 'closed'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung'), CLOSE_BOUND_MS))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
    // The sources stopped first: only the barrier under way and the epochs already sealed (the
    // store keeps at most 3 in flight) committed after close() began.
    expect(metrics.epochsCommitted - epochsBefore).toBeLessThanOrEqual(4);

    // Restart. The barrier interval is longer than the test, so the source does not resume and
    // the state is exactly what the first run committed.
    const second = await start(dataDir, 600_000, new EngineMetrics());
    try {
      const offsets = decodeOffsets(second.store.getMeta(OFFSETS_META_PREFIX + relationId));
      expect(offsets).toBeDefined();
      const committed = Number(offsets!.get(0)!);
      expect(committed).toBeGreaterThanOrEqual(10_000);
      const expected = expectedBids(committed);
      const again = open(second.engine);
      expect(await again.run('SELECT bids, total FROM totals')).toEqual([[BigInt(expected.count), expected.sum]]);
      // Every bid lies in 5 hop windows (10 s / 2 s), counted once in each.
      expect(await again.run('SELECT sum(n)::int8, count(*) > 0 FROM windows')).toEqual([[BigInt(5 * expected.count), true]]);
      expect(await again.run('SELECT count(*), sum(price)::int8 FROM bid')).toEqual([[BigInt(expected.count), expected.sum]]);
    } finally {
      await second.engine.close();
    }
  });

  it('stops a CREATE MATERIALIZED VIEW backfill at close and at statement_timeout; nothing of it commits', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oxbow-close-'));
    const events = 300_000;
    const first = await start(dataDir, 50, new EngineMetrics());
    const { run } = open(first.engine);
    await run(`CREATE SOURCE bid (${BID_COLUMNS}) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '${events}', nexmark.min.event.gap.in.ns = '0')`);
    for (;;) {
      const committed = Number((await run("SELECT coalesce(sum(committed_offset), 0)::int8 FROM oxbow_catalog.source_partitions WHERE source_name = 'bid'"))[0]![0]);
      if (committed >= events) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const view = 'CREATE MATERIALIZED VIEW per_auction AS SELECT auction, count(*) AS n, sum(price)::int8 AS total FROM bid GROUP BY auction';

    // statement_timeout: 57014 between two chunks of the backfill, and the view does not exist.
    await run("SET statement_timeout = '1ms'");
    const timedOut = await rejection(run(view));
    expect(timedOut.code).toBe('57014');
    await run('SET statement_timeout = 0');
    expect(await run("SELECT count(*) FROM oxbow_catalog.objects WHERE name = 'per_auction'")).toEqual([[0n]]);

    // Close while the backfill runs (it has pushed rows, it is not done).
    const creating = rejection(run(view));
    const watcher = open(first.engine);
    for (;;) {
      const rows = await watcher.run("SELECT rows_done FROM oxbow_catalog.backfill_progress WHERE view_name = 'per_auction' AND state = 'running'");
      if (rows.length > 0 && Number(rows[0]![0]) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      first.engine.close().then(() => 'closed'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung'), CLOSE_BOUND_MS))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
    const canceled = await creating;
    expect(canceled.code).toBe('57014');

    // Restart: no trace of the view; created again, it holds every bid once.
    const second = await start(dataDir, 600_000, new EngineMetrics());
    try {
      const again = open(second.engine);
      expect(await again.run("SELECT count(*) FROM oxbow_catalog.objects WHERE name = 'per_auction'")).toEqual([[0n]]);
      await again.run(view);
      const expected = expectedBids(events);
      expect(await again.run('SELECT sum(n)::int8, sum(total)::int8 FROM per_auction')).toEqual([[BigInt(expected.count), expected.sum]]);
    } finally {
      await second.engine.close();
    }
  });
});
