// The undo log of a multi-statement Query's implicit transaction (executor/engine/implicit-transaction.ts),
// driven as pgwire's simple-query loop drives the session (beginMessage, execute each statement,
// endMessage): a failed message's rows are written back, a message of more rows than the log's
// bound leaves them with a WARNING instead of holding them all in memory, and the rollback of a
// table with a UNIQUE index restores rows that swapped values. The expected tables are the
// tables as they were before the message (read back with the same query before it ran).

import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { undoLimits } from '../implicit-transaction.js';
import type { Notice, Session } from '../engine.js';

const saved = { ...undoLimits };

describe('implicit transaction undo log', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    Object.assign(undoLimits, saved);
    await h?.close();
    h = undefined;
  });

  /** One Query message through a fresh session; returns the SQLSTATE it failed with (or 'ok') and its notices. */
  async function message(harness: Harness, sql: string): Promise<{ outcome: string; notices: Notice[] }> {
    const notices: Notice[] = [];
    const session: Session = harness.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: (notice) => notices.push(notice), parameterStatus: () => undefined });
    const statements = session.prepareMany(sql);
    session.beginMessage!(statements.length);
    let outcome = 'ok';
    for (const statement of statements) {
      try {
        await session.execute(statement, { parameters: [] });
      } catch (error) {
        outcome = (error as { code?: string }).code ?? 'no code';
        break;
      }
    }
    await session.endMessage!(outcome !== 'ok');
    session.close();
    return { outcome, notices };
  }

  it('writes a failed message\'s rows back, a UNIQUE index and a view included', async () => {
    h = await openHarness();
    await h.run('create table u (id int primary key, code int); create unique index u_code on u (code); insert into u values (1, 10), (2, 20)');
    await h.run('create materialized view u_sum as select count(*) as n, sum(code) as total from u');
    const before = await h.lines('select * from u');
    // Row 1 and row 2 swap codes through a third value, a row is added, then the message fails.
    const { outcome, notices } = await message(h, 'update u set code = 30 where id = 1; update u set code = 10 where id = 2; update u set code = 20 where id = 1; insert into u values (3, 40); select 1/0');
    expect(outcome).toBe('22012');
    expect(notices).toEqual([]);
    expect(await h.lines('select * from u')).toEqual(before);
    expect(await h.lines('select * from u_sum')).toEqual(await h.lines('select count(*), sum(code) from u'));
    // The unique index answers as the table does.
    expect(await h.lines('select id from u where code = 10')).toEqual(['1']);
    expect(await h.lines('select id from u where code = 20')).toEqual(['2']);
  });

  it('a message that writes more rows than the bound keeps them and says so', async () => {
    h = await openHarness();
    await h.run('create table big (id int primary key)');
    undoLimits.rows = 50;
    const { outcome, notices } = await message(h, 'insert into big select i from generate_series(1, 40) as s(i); insert into big select i from generate_series(41, 80) as s(i); select 1/0');
    expect(outcome).toBe('22012');
    expect(notices.map((notice) => notice.message)).toEqual(['rollback cannot undo the rows this query wrote: more than 50 rows']);
    expect(notices[0]!.detail).toBe('2 statements of the query committed their rows at their own epochs.');
    expect(await h.lines('select count(*) from big')).toEqual(['80']);
    // Within the bound, the same message leaves nothing.
    await h.run('delete from big');
    undoLimits.rows = 100;
    expect((await message(h, 'insert into big select i from generate_series(1, 40) as s(i); insert into big select i from generate_series(41, 80) as s(i); select 1/0')).outcome).toBe('22012');
    expect(await h.lines('select count(*) from big')).toEqual(['0']);
  });
});
