// The operator's view of epochs written off the main thread: while a DML statement's epoch is
// sealed but its write has not finished, oxbow_catalog.epochs shows it as sealed and in flight,
// apart from the committed (durable) epoch, and /metrics says oxbow_epochs_in_flight 1; once the
// write finishes, the sealed epoch is the committed one and nothing is in flight. The store's
// backend is the in-memory one with its asynchronous write held at a gate (the only stand-in: the
// engine, sessions, status API and Prometheus text are the real ones).
import { afterEach, beforeEach, expect, it } from 'vitest';
import { MemoryBackend } from '../../../storage/memory-backend.js';
import { MemoryStateStore } from '../../../storage/memory-state-store.js';
import type { Session } from '../engine.js';
import { EngineMetrics } from '../../metrics/engine-metrics.js';
import { prometheusText } from '../../metrics/prometheus.js';
import { openEngine, type OxbowEngine } from '../open-engine.js';
import type { Row } from '../../../sql/value.js';

/** The in-memory backend whose asynchronous writes wait, after `hold()`, until `release()`. */
class GatedBackend extends MemoryBackend {
  private gate: Promise<void> = Promise.resolve();
  private opener: () => void = () => undefined;

  hold(): void {
    this.gate = new Promise((resolve) => (this.opener = resolve));
  }

  release(): void {
    this.opener();
  }

  override async writeAsync(packed: Buffer): Promise<void> {
    await this.gate;
    return super.writeAsync(packed);
  }
}

let engine: OxbowEngine;
let backend: GatedBackend;
let metrics: EngineMetrics;

beforeEach(async () => {
  backend = new GatedBackend();
  metrics = new EngineMetrics();
  const store = new MemoryStateStore(backend, { retentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  engine = await openEngine(store, { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26, metrics });
});
afterEach(async () => {
  backend.release();
  await engine.close();
});

function openSession(): Session {
  return engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
}

async function query(session: Session, sql: string): Promise<Row[]> {
  let rows: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') rows = await result.cursor.next(0);
  }
  return rows;
}

const EPOCHS = 'SELECT committed_epoch, sealed_epoch, epochs_in_flight, epochs_committed, epochs_sealed, open_epoch FROM oxbow_catalog.epochs';

function metric(name: string): number {
  const line = prometheusText(metrics.status!).split('\n').find((text) => text.startsWith(`${name} `));
  expect(line, name).toBeDefined();
  return Number(line!.split(' ')[1]);
}

it('shows a sealed epoch whose write is in flight apart from the committed one', async () => {
  const writer = openSession();
  const watcher = openSession();
  await query(writer, 'CREATE TABLE t (id int PRIMARY KEY)');
  await query(writer, 'INSERT INTO t VALUES (1)');
  const [idle] = await query(watcher, EPOCHS);
  const [committedBefore, sealedBefore, inFlightBefore, committedCount, sealedCount] = idle as [bigint, bigint, number, bigint, bigint];
  expect([sealedBefore, inFlightBefore, sealedCount]).toEqual([committedBefore, 0, committedCount]);

  backend.hold();
  const insert = query(writer, 'INSERT INTO t VALUES (2)');
  // The INSERT seals its epoch and waits for the write; the watcher's statements still run.
  let row: Row | undefined;
  for (let attempt = 0; attempt < 1000; attempt++) {
    [row] = await query(watcher, EPOCHS);
    if (row![2] === 1) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const [committed, sealed, inFlight, committedNow, sealedNow, open] = row as [bigint, bigint, number, bigint, bigint, bigint];
  expect(inFlight).toBe(1);
  expect(committed).toBe(committedBefore);
  expect(sealed).toBeGreaterThan(committed);
  expect(open).toBeGreaterThan(sealed);
  expect([committedNow, sealedNow]).toEqual([committedCount, sealedCount + 1n]);
  expect(metric('oxbow_epochs_in_flight')).toBe(1);
  expect(metric('oxbow_epochs_sealed_total')).toBe(Number(sealedCount) + 1);
  expect(metric('oxbow_epochs_committed_total')).toBe(Number(committedCount));
  // The committed epoch is what statements read: row 2 is not there yet.
  expect(await query(watcher, 'SELECT count(*)::int FROM t')).toEqual([[1]]);

  backend.release();
  await insert;
  const [done] = await query(watcher, EPOCHS);
  expect(done).toEqual([sealed, sealed, 0, committedCount + 1n, sealedCount + 1n, expect.any(BigInt)]);
  expect(metric('oxbow_epochs_in_flight')).toBe(0);
  expect(await query(watcher, 'SELECT count(*)::int FROM t')).toEqual([[2]]);
});
