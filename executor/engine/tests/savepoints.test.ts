// SAVEPOINT layers of a block's undo log (executor/engine/savepoints.ts over implicit-transaction.ts),
// through sessions of the engine: ROLLBACK TO writes back only what changed since the mark,
// views included; a row another session changed since is left as that session left it, with a
// WARNING (PostgreSQL's row lock would have made that session wait); RELEASE keeps the rows for
// the block's own ROLLBACK. Expected tables are read back with the same query before the writes.

import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import type { Notice, Session } from '../engine.js';

describe('savepoints', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  function session(harness: Harness, notices: Notice[] = []): { run: (sql: string) => Promise<string>; session: Session } {
    const opened = harness.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: (notice) => notices.push(notice), parameterStatus: () => undefined });
    return {
      session: opened,
      run: async (sql: string) => {
        const [statement] = opened.prepareMany(sql);
        const result = await opened.execute(statement!, { parameters: [] });
        return result.kind === 'command' ? result.commandTag : result.kind;
      },
    };
  }

  it('ROLLBACK TO writes back only the rows changed since the mark; the view follows', async () => {
    h = await openHarness();
    await h.run('create table t (id int primary key, v int); insert into t values (1, 10), (2, 20)');
    await h.run('create materialized view t_sum as select count(*) as n, sum(v) as total from t');
    const a = session(h);
    await a.run('begin');
    await a.run('update t set v = 11 where id = 1');
    const atMark = await h.lines('select * from t');
    await a.run('savepoint s');
    await a.run('update t set v = 12 where id = 1');
    await a.run('delete from t where id = 2');
    await a.run('insert into t values (3, 30)');
    expect(await a.run('rollback to savepoint s')).toBe('ROLLBACK');
    expect(await h.lines('select * from t')).toEqual(atMark);
    expect(await h.lines('select * from t_sum')).toEqual(await h.lines('select count(*), sum(v) from t'));
    await a.run('rollback');
    expect(await h.lines('select * from t order by id')).toEqual(['1 | 10', '2 | 20']);
    a.session.close();
  });

  it('a row another session changed since the mark is left alone, with a WARNING', async () => {
    h = await openHarness();
    await h.run('create table t (id int primary key, v int); insert into t values (1, 10), (2, 20)');
    const notices: Notice[] = [];
    const a = session(h, notices);
    const b = session(h);
    await a.run('begin');
    await a.run('savepoint s');
    await a.run('update t set v = 11 where id = 1');
    await a.run('update t set v = 21 where id = 2');
    await b.run('update t set v = 99 where id = 2');
    await a.run('rollback to s');
    expect(await h.lines('select * from t order by id')).toEqual(['1 | 10', '2 | 99']);
    expect(notices.map((notice) => notice.severity + ' ' + notice.message)).toEqual(['WARNING rollback to savepoint left 1 row as changed by another session or dropped since']);
    await a.run('commit');
    a.session.close();
    b.session.close();
  });

  it('RELEASE keeps the released rows in the block: its ROLLBACK undoes them', async () => {
    h = await openHarness();
    await h.run('create table t (id int primary key, v int); insert into t values (1, 10)');
    const before = await h.lines('select * from t');
    const a = session(h);
    await a.run('begin');
    await a.run('savepoint s1');
    await a.run('insert into t values (2, 20)');
    await a.run('savepoint s2');
    await a.run('update t set v = 11 where id = 1');
    expect(await a.run('release s1')).toBe('RELEASE');
    await expect(a.run('rollback to s2')).rejects.toMatchObject({ code: '3B001' });
    await a.run('rollback');
    expect(await h.lines('select * from t')).toEqual(before);
    a.session.close();
  });
});
