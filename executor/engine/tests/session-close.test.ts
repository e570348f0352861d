// A session closed inside a block rolls it back (executor/engine/session.ts, close()): the Promise close()
// returns resolves once the block's rows are written back. Closed while a statement of the block
// runs, it waits for the cancelled statement first; a pipeline's implicit block left without its
// endPipeline (the client never sent Sync) and a COPY applied while the close waits are rolled
// back too. The expected tables are the tables read before the block began.
import { afterEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import type { Session } from '../engine.js';
import type { SqlError } from '../../../sql/errors.js';

describe('session close inside a block', () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
  });

  function open(): Session {
    return h.engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  }

  async function run(session: Session, sql: string): Promise<void> {
    for (const statement of session.prepareMany(sql)) await session.execute(statement, { parameters: [] });
  }

  async function setup(): Promise<string[]> {
    h = await openHarness();
    await h.run('create table t (id int primary key, v int); insert into t values (1, 1), (2, 2)');
    await h.run('create materialized view total as select count(*) as n, sum(v) as s from t');
    return h.lines('select * from t');
  }

  it('waits for the cancelled statement, then writes the block back', async () => {
    const before = await setup();
    const session = open();
    await run(session, 'begin');
    await run(session, 'insert into t values (3, 3); update t set v = 20 where id = 2; delete from t where id = 1');
    const sleeping = run(session, 'select pg_sleep(30)').catch((error: SqlError) => error.code);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await session.close();
    expect(await sleeping).toBe('57014');
    expect(await h.lines('select * from t')).toEqual(before);
    expect(await h.lines('select * from total')).toEqual(await h.lines('select count(*), sum(v) from t'));
    // A closed session runs nothing more.
    expect(await run(session, 'select 1').catch((error: SqlError) => error.code)).toBe('08006');
  });

  it('rolls back a pipeline left without its Sync', async () => {
    const before = await setup();
    const session = open();
    session.beginPipeline!();
    await run(session, 'insert into t values (3, 3)');
    await run(session, 'update t set v = 10 where id = 1');
    await session.close();
    expect(await h.lines('select * from t')).toEqual(before);
  });

  it('rolls back a COPY whose rows were applied while the close waited', async () => {
    const before = await setup();
    const session = open();
    await run(session, 'begin');
    const [statement] = session.prepareMany('copy t from stdin');
    const copy = await session.execute(statement!, { parameters: [] });
    if (copy.kind !== 'copyIn') throw new Error(`expected COPY IN, got ${copy.kind}`);
    copy.write(Buffer.from('3\t3\n4\t4\n'));
    const applied = copy.end();
    const closed = session.close();
    expect(await applied).toBe('COPY 2');
    await closed;
    expect(await h.lines('select * from t')).toEqual(before);
  });

  it('a session closed outside a block keeps what it committed', async () => {
    await setup();
    const session = open();
    await run(session, 'insert into t values (3, 3)');
    await session.close();
    expect(await h.lines('select id from t')).toEqual(['1', '2', '3']);
  });
});
