// The direct sink path (sink-target.ts, `deliversDirectly`; executor/stream/change-log.ts,
// DirectChanges). DirectChanges over the in-memory state store: counted per epoch as they are
// written, given to a delivery only once their epoch is committed (sealed by commit or by
// commitAsync), each once, and dropped when their epoch is aborted. Through the engine: a
// blackhole sink AS an append-only query (a datagen source without a key) counts every change its
// dataflow commits and writes nothing to its change log. Two sinks, one created before most of
// the source's rows come (its changes stream in) and one after half (its backfill), each must
// count exactly the rows of its query recomputed by the batch executor, and the state store must
// hold no entry of either log and no row of either sink. On RocksDB across a restart: entries an
// older build left in such a sink's log are deleted at its first round, and the new process counts
// only what it commits. A blackhole sink AS a grouped query keeps its rows: it counts its contents
// at its first round, then each committed change (an update is a delete and an insert), as
// counted by hand from the statements. A direct sink whose CREATE is stopped during its backfill
// leaves nothing behind: the sink made next (a FROM sink, which reads versions) counts its rows.

import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { changeLogSchema, DirectChanges } from '../../stream/change-log.js';
import type { ChangeBatch } from '../../stream/change-batch.js';
import type { EngineCore } from '../../engine/engine-core.js';
import { backfillDefaults } from '../../ddl/create-materialized-view.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { ChangeLogWriter } from '../../stream/change-log.js';
import { nextEpoch } from '../../../sql/epoch.js';

function batch(inserts: number, deletes: number): ChangeBatch {
  const rows = [];
  const signs = [];
  for (let i = 0; i < inserts; i++) {
    rows.push([BigInt(i)]);
    signs.push(1);
  }
  for (let i = 0; i < deletes; i++) {
    rows.push([BigInt(-i)]);
    signs.push(-1);
  }
  return { rows, signs };
}

describe('DirectChanges', () => {
  it('gives the changes of committed epochs once, and none of the open one', () => {
    const store = createMemoryStateStore();
    const direct = new DirectChanges(store);
    direct.write(batch(3, 0));
    direct.write(batch(2, 1));
    // Nothing committed yet: the open epoch's changes wait.
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 0, deletes: 0 });
    store.commit(10n);
    direct.write(batch(4, 0));
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 5, deletes: 1 });
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 0, deletes: 0 });
    store.commit(20n);
    store.commit(30n);
    direct.write(batch(1, 0));
    // Up to epoch 20 only: the 4 rows of epoch 20, not the row of the epoch after 30.
    expect(direct.take(20n)).toEqual({ inserts: 4, deletes: 0 });
    store.commit(40n);
    expect(direct.take(40n)).toEqual({ inserts: 1, deletes: 0 });
  });

  it('drops the changes of an aborted epoch and keeps those of the epochs sealed before it', async () => {
    const store = createMemoryStateStore();
    const direct = new DirectChanges(store);
    direct.write(batch(2, 0));
    const durable = store.commitAsync(10n);
    // Sealed but not yet durable: not given yet, and an abort of the next epoch keeps them.
    direct.write(batch(7, 0));
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 0, deletes: 0 });
    direct.discard();
    store.abort();
    await durable;
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 2, deletes: 0 });
    direct.write(batch(1, 1));
    store.commit(20n);
    expect(direct.take(store.committedEpoch)).toEqual({ inserts: 1, deletes: 1 });
  });

  it('drops an aborted epoch whose changes came in several batches', () => {
    const store = createMemoryStateStore();
    const direct = new DirectChanges(store);
    direct.write(batch(5, 0));
    direct.write(batch(5, 0));
    direct.discard();
    store.abort();
    direct.write(batch(1, 0));
    store.commit(10n);
    expect(direct.take(10n)).toEqual({ inserts: 1, deletes: 0 });
  });
});

const ROWS = 20_000;
const QUERY = 'SELECT g, x, t FROM s WHERE x % 3 = 0';

describe('a direct (blackhole) sink', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('counts each committed change once and writes no change log', async () => {
    const store = createMemoryStateStore();
    h = await openHarness(store, { barrierIntervalMs: 50 });
    const harness = h;
    await harness.run(
      `CREATE SOURCE s (g int, x int, t varchar) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS}', fields.x.min = '1', fields.x.max = '40', fields.t.length = '3', datagen.rows.per.second = '20000', datagen.split.num = '2')`,
    );
    await harness.run(`CREATE SINK streamed AS ${QUERY} WITH (connector = 'blackhole')`);
    const committed = async () => Number((await harness.lines("SELECT coalesce(sum(committed_offset), 0) FROM oxbow_catalog.source_partitions WHERE source_name = 's'"))[0]);
    for (let attempt = 0; attempt < 1500 && (await committed()) < ROWS / 2; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
    await harness.run(`CREATE SINK backfilled AS ${QUERY} WITH (connector = 'blackhole')`);
    for (let attempt = 0; attempt < 3000 && (await committed()) < ROWS; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await committed()).toBe(ROWS);
    const expected = Number((await harness.lines(`SELECT count(*) FROM (${QUERY}) AS q`))[0]);
    expect(expected).toBeGreaterThan(ROWS / 5);
    const delivered = async (name: string) => Number((await harness.lines(`SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = '${name}'`))[0] ?? -1);
    for (let attempt = 0; attempt < 500 && ((await delivered('streamed')) < expected || (await delivered('backfilled')) < expected); attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
    // Rounds after the last one change nothing.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await delivered('streamed')).toBe(expected);
    expect(await delivered('backfilled')).toBe(expected);
    const core = (harness.engine as unknown as { core: EngineCore }).core;
    const sinks = core.catalog.snapshot.relations().filter((relation) => relation.kind === 'sink');
    expect(sinks.map((sink) => sink.name).sort()).toEqual(['backfilled', 'streamed']);
    for (const sink of sinks) {
      const changeLog = sink.stream!.changeLog!;
      expect(changeLog.rowsKept).toBe(false);
      const log = store.table(changeLogSchema(changeLog.tableId, sink.columns.map((column) => column.type)));
      expect([...log.scan({ limit: 1 })], sink.name).toEqual([]);
      // No rows kept either: the sink's own table is empty.
      expect([...store.table({ tableId: sink.id, columnTypes: sink.columns.map((column) => column.type), primaryKey: sink.primaryKey }).scan({ limit: 1 })], sink.name).toEqual([]);
    }
  }, 120_000);

  it('deletes the entries an older log left, and counts from the restart on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-direct-sink-'));
    const open = () => openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 });
    const core = (harness: Harness): EngineCore => (harness.engine as unknown as { core: EngineCore }).core;
    const ROWS_SLOW = 600;
    try {
      // A slow source (300 rows a second): it is still reading at the first close and goes on after the restart.
      let first: Harness | undefined = await openHarness(open(), { barrierIntervalMs: 50 });
      h = first;
      await first.run(`CREATE SOURCE s (g int, x int, t varchar) WITH (connector = 'datagen', fields.g.kind = 'sequence', fields.g.start = '1', fields.g.end = '${ROWS_SLOW}', fields.x.min = '1', fields.x.max = '40', fields.t.length = '3', datagen.rows.per.second = '300')`);
      await first.run(`CREATE SINK out AS ${QUERY} WITH (connector = 'blackhole')`);
      const sink = core(first).catalog.snapshot.relations().find((relation) => relation.name === 'out')!;
      const delivered = async (harness: Harness, name = 'out') => Number((await harness.lines(`SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = '${name}'`))[0] ?? 0);
      // A sink that keeps its rows: its contents are counted once, not again after the restart.
      await first.run('CREATE TABLE t (k int PRIMARY KEY, g int); INSERT INTO t SELECT i, i % 4 FROM generate_series(1, 40) AS s(i)');
      await first.run("CREATE SINK grouped AS SELECT g, count(*) AS n FROM t GROUP BY g WITH (connector = 'blackhole')");
      for (let attempt = 0; attempt < 500 && (await delivered(first, 'grouped')) === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await delivered(first, 'grouped')).toBe(4);
      for (let attempt = 0; attempt < 500 && (await delivered(first)) === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      const before = await delivered(first);
      expect(before).toBeGreaterThan(0);
      await first.close();
      h = first = undefined;
      // What an older build's log holds: entries its deliveries had not trimmed yet, more than the query has rows.
      const store = open();
      const types = sink.columns.map((column) => column.type);
      const writer = new ChangeLogWriter(store, sink.stream!.changeLog!.tableId, types);
      const rows = Array.from({ length: 5000 }, (_, i) => [i, 3, 'abc', BigInt(i)]);
      writer.write({ rows, signs: rows.map(() => 1) });
      store.commit(nextEpoch(store.latestEpoch, Date.now()));
      await store.close();
      const second = await openHarness(open(), { barrierIntervalMs: 50 });
      h = second;
      const changeLog = sink.stream!.changeLog!;
      const logEntries = () => [...core(second).store.table(changeLogSchema(changeLog.tableId, types)).scan({ limit: 1 })].length;
      for (let attempt = 0; attempt < 500 && logEntries() > 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(logEntries()).toBe(0);
      const committed = async () => Number((await second.lines("SELECT coalesce(sum(committed_offset), 0) FROM oxbow_catalog.source_partitions WHERE source_name = 's'"))[0]);
      for (let attempt = 0; attempt < 1000 && (await committed()) < ROWS_SLOW; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await committed()).toBe(ROWS_SLOW);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Counted after the restart: the rows the new process committed, none of the old log's, none twice.
      const expected = Number((await second.lines(`SELECT count(*) FROM (${QUERY}) AS q`))[0]);
      const after = await delivered(second);
      expect(after).toBeGreaterThan(0);
      expect(before + after).toBeLessThanOrEqual(expected);
      expect(await delivered(second, 'grouped')).toBe(0);
      await second.run('DELETE FROM t WHERE k = 1');
      for (let attempt = 0; attempt < 500 && (await delivered(second, 'grouped')) < 2; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await delivered(second, 'grouped')).toBe(2);
    } finally {
      await h?.close();
      h = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('keeping its rows (a grouped query): counts the contents first, then each committed change', async () => {
    h = await openHarness(createMemoryStateStore(), { barrierIntervalMs: 50 });
    const harness = h;
    await harness.run('CREATE TABLE t (k int PRIMARY KEY, g int, v int)');
    await harness.run('INSERT INTO t SELECT i, i % 5, i FROM generate_series(1, 100) AS s(i)');
    await harness.run("CREATE SINK grouped AS SELECT g, sum(v) AS s, count(*) AS n FROM t GROUP BY g WITH (connector = 'blackhole')");
    const delivered = async () => Number((await harness.lines("SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = 'grouped'"))[0] ?? -1);
    const until = async (rows: number) => {
      for (let attempt = 0; attempt < 500 && (await delivered()) < rows; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await delivered()).toBe(rows);
    };
    // The contents: five groups.
    await until(5);
    // One group's row changed: a delete and an insert.
    await harness.run('UPDATE t SET v = v + 1 WHERE k = 1');
    await until(7);
    // A new group (an insert), then the group gone (a delete).
    await harness.run('INSERT INTO t VALUES (1000, 7, 1)');
    await until(8);
    await harness.run('DELETE FROM t WHERE g = 7');
    await until(9);
    // Two groups changed in one statement: two deletes, two inserts.
    await harness.run('UPDATE t SET v = 0 WHERE k IN (2, 3)');
    await until(13);
    // A statement that changes nothing of the query's result: nothing.
    await harness.run('UPDATE t SET v = v WHERE k = 4');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await delivered()).toBe(13);
    // It is direct: its dataflow counts its changes (no versions read, no history held).
    const core = (harness.engine as unknown as { core: EngineCore }).core;
    expect(core.streams.directChanges(core.catalog.snapshot.relations().find((relation) => relation.name === 'grouped')!.id)).toBeDefined();
  }, 60_000);

  it('leaves nothing of a CREATE stopped during its backfill', async () => {
    const saved = { ...backfillDefaults };
    Object.assign(backfillDefaults, { intervalMs: 0, chunkRows: 100 });
    try {
      h = await openHarness(createMemoryStateStore(), { barrierIntervalMs: 50 });
      const harness = h;
      await harness.run('CREATE TABLE t (k int PRIMARY KEY, g int)');
      await harness.run('INSERT INTO t SELECT i, i % 4 FROM generate_series(1, 3000) AS s(i)');
      const creating = harness.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, {
        notice: () => {
          // Each chunk outlasts the 1 ms timeout, which the backfill checks before the next chunk.
          const until = Date.now() + 5;
          while (Date.now() < until);
        },
        parameterStatus: () => undefined,
      });
      const run = async (sql: string) => {
        for (const statement of creating.prepareMany(sql)) await creating.execute(statement, { parameters: [] });
      };
      await run("SET statement_timeout = '1ms'");
      await expect(run("CREATE SINK stopped AS SELECT g, count(*) AS n FROM t GROUP BY g WITH (connector = 'blackhole')")).rejects.toMatchObject({ code: '57014' });
      await harness.run("CREATE SINK next FROM t WITH (connector = 'blackhole')");
      const delivered = async () => Number((await harness.lines("SELECT rows_delivered FROM oxbow_catalog.sink_status WHERE sink_name = 'next'"))[0] ?? -1);
      for (let attempt = 0; attempt < 500 && (await delivered()) < 3000; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await delivered()).toBe(3000);
      // Then its changes: ten updates, a delete and an insert each.
      await harness.run('UPDATE t SET g = g + 1 WHERE k <= 10');
      for (let attempt = 0; attempt < 500 && (await delivered()) < 3020; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await delivered()).toBe(3020);
      const core = (harness.engine as unknown as { core: EngineCore }).core;
      expect(core.catalog.snapshot.relations().filter((relation) => relation.kind === 'sink').map((relation) => relation.name)).toEqual(['next']);
    } finally {
      Object.assign(backfillDefaults, saved);
    }
  }, 60_000);
});
