// CREATE SINK ... AS SELECT backfills its dataflow in chunks as CREATE MATERIALIZED VIEW does: a
// progress NOTICE per chunk (the test lowers the chunk size and the interval), the backfill in
// oxbow_catalog.backfill_progress, and the statement's cancel obeyed between chunks: a
// CancelRequest, statement_timeout and the engine's close stop it with 57014 and nothing of the
// sink commits (no catalog entry, so no delivery to the broker either: the bootstrap address is
// never contacted). The row counts are the table's count(*).

import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { backfillDefaults } from '../create-materialized-view.js';
import type { Notice, Session } from '../../engine/engine.js';

const saved = { ...backfillDefaults };
const CHUNK = 500;
const SINK = "create sink totals as select g, count(*) as n from big group by g with (connector = 'kafka', topic = 'totals', properties.bootstrap.server = '127.0.0.1:9') format plain encode json";

describe('CREATE SINK ... AS SELECT backfill', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    Object.assign(backfillDefaults, saved);
    await h?.close();
    h = undefined;
  });

  async function setup(): Promise<Harness> {
    h = await openHarness();
    await h.run('create table big (k int primary key, g int); insert into big select i, i % 7 from generate_series(1, 6000) as s(i)');
    Object.assign(backfillDefaults, { intervalMs: 0, chunkRows: CHUNK });
    return h;
  }

  /** A second session whose NOTICE callback runs `onNotice` (between two chunks of the backfill). */
  function sessionWith(harness: Harness, onNotice: (notice: Notice, session: Session) => void): { session: Session; run(sql: string): Promise<unknown> } {
    const session: Session = harness.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: (notice) => onNotice(notice, session), parameterStatus: () => undefined });
    return {
      session,
      async run(sql: string): Promise<unknown> {
        let last: unknown;
        for (const statement of session.prepareMany(sql)) last = await session.execute(statement, { parameters: [] });
        return last;
      },
    };
  }

  async function nothingCommitted(harness: Harness, rowsDone: number): Promise<void> {
    expect(await harness.lines("select count(*) from oxbow_catalog.objects where name = 'totals'")).toEqual(['0']);
    expect(await harness.lines("select rows_done, state from oxbow_catalog.backfill_progress where view_name = 'totals'")).toEqual([`${rowsDone} | failed`]);
  }

  it('reports each chunk and stops at a CancelRequest between chunks', async () => {
    const harness = await setup();
    const notices: string[] = [];
    const creating = sessionWith(harness, (notice, session) => {
      notices.push(notice.message);
      if (notices.length === 3) session.cancel();
    });
    await expect(creating.run(SINK)).rejects.toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
    expect(notices[0]).toMatch(/^backfilling sink "totals": 500 of about \d+ rows/);
    expect(notices).toHaveLength(3);
    await nothingCommitted(harness, 3 * CHUNK);
  });

  it('stops at statement_timeout between chunks', async () => {
    const harness = await setup();
    const creating = sessionWith(harness, () => {
      // The first chunk outlasts the 1 ms timeout; the backfill checks it before the next chunk.
      const until = Date.now() + 5;
      while (Date.now() < until);
    });
    await creating.run("set statement_timeout = '1ms'");
    await expect(creating.run(SINK)).rejects.toMatchObject({ code: '57014', message: 'canceling statement due to statement timeout' });
    expect(await harness.lines("select count(*) from oxbow_catalog.objects where name = 'totals'")).toEqual(['0']);
  });

  it('stops when the engine closes during the backfill', async () => {
    const harness = await setup();
    let closing: Promise<void> | undefined;
    const creating = sessionWith(harness, () => {
      closing ??= harness.engine.close();
    });
    await expect(creating.run(SINK)).rejects.toMatchObject({ code: '57014' });
    await closing;
    expect(closing).toBeDefined();
    h = undefined;
  });
});
