// Backfill progress: CREATE MATERIALIZED VIEW over existing rows pushes the snapshot in chunks,
// sends the creating session a NOTICE with the progress (here after every chunk: the test lowers
// the interval and the chunk size), and oxbow_catalog.backfill_progress shows the backfill running
// during it and done after it, with as many rows as the input has (count(*) is the oracle). The
// view equals its query recomputed in batch.

import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from './stream-harness.js';
import { backfillDefaults } from '../../ddl/create-materialized-view.js';
import { backfillProgressTable } from '../../system/backfill-progress-relation.js';
import type { Notice } from '../../engine/engine.js';
import type { SystemContext } from '../../system/system-context.js';
import type { Row } from '../../../sql/value.js';

const saved = { ...backfillDefaults };
afterEach(() => Object.assign(backfillDefaults, saved));

describe('backfill progress', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('reports in NOTICEs and oxbow_catalog.backfill_progress while the snapshot is pushed', async () => {
    h = await openHarness();
    await h.run('create table big (k int primary key, g int); insert into big select i, i % 7 from generate_series(1, 12000) as s(i)');
    await h.run('create table small (g int primary key, name text); insert into small select i, \'g\' || i from generate_series(0, 6) as s(i)');
    Object.assign(backfillDefaults, { intervalMs: 0, chunkRows: 500 });
    const notices: Notice[] = [];
    const during: Row[][] = [];
    const session = h.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, {
      notice: (notice) => {
        notices.push(notice);
        // The system table as another statement would read it at this moment.
        during.push(backfillProgressTable.rows((session as unknown as { systemContext(): SystemContext }).systemContext()));
      },
      parameterStatus: () => undefined,
    });
    for (const statement of session.prepareMany('create materialized view per_name as select name, count(*) as n from big join small on big.g = small.g group by name')) {
      await session.execute(statement, { parameters: [] });
    }
    const total = Number((await h.lines('select count(*) from big'))[0]) + Number((await h.lines('select count(*) from small'))[0]);
    expect(total).toBe(12007);
    // One NOTICE per full chunk of 500 rows (24 of big; small is one partial chunk).
    expect(notices).toHaveLength(24);
    const done = notices.map((notice) => Number(/: (\d+) of about/.exec(notice.message)![1]));
    expect(done).toEqual(Array.from({ length: 24 }, (_, i) => (i + 1) * 500));
    expect(notices[0]!.message).toMatch(/^backfilling materialized view "per_name": 500 of about \d+ rows \(\d+%\), reading "big"$/);
    for (let i = 0; i < during.length; i++) {
      const rows = during[i]!.filter((row) => row[2] === 'per_name');
      expect(rows).toHaveLength(1);
      expect(rows[0]![3]).toBe('big');
      expect(rows[0]![4]).toBe(BigInt((i + 1) * 500));
      expect(rows[0]![7]).toBe('running');
    }
    expect(await h.lines("select relation_name, rows_done, rows_total_estimate, state from oxbow_catalog.backfill_progress where view_name = 'per_name'")).toEqual([`small | ${total} | ${total} | done`]);
    expect(await h.lines('select * from per_name')).toEqual(await h.lines('select name, count(*) as n from big join small on big.g = small.g group by name'));
    // The view follows changes after the backfill.
    await h.run('insert into big values (12001, 0)');
    expect(await h.lines('select * from per_name')).toEqual(await h.lines('select name, count(*) as n from big join small on big.g = small.g group by name'));
  });

  it('a CREATE that fails before its backfill leaves no record', async () => {
    h = await openHarness();
    await h.run('create table t (k int primary key, v int); insert into t values (1, 0)');
    await expect(h.run('create materialized view t as select * from t')).rejects.toMatchObject({ code: '42P07' });
    expect(await h.lines('select count(*) from oxbow_catalog.backfill_progress')).toEqual(['0']);
  });
});
