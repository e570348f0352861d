// SQL functions are catalog entries: after a restart on the same data directory, and after a
// restore from a checkpoint into an empty one, the function is callable, listed in pg_proc, still
// blocks DROP while a materialized view calls it, and the view (replanned from its definition with
// the function inlined) keeps being maintained. Expected values computed by hand from the bodies.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Session } from '../../engine/engine.js';
import { SqlError } from '../../../sql/errors.js';
import { openOnDataDir, runRows as run, temporaryDataDir } from '../../engine/tests/data-dir-engine.js';

const dataDir = temporaryDataDir('oxbow-sql-function-');

const open = (checkpointIntervalMs: number) => openOnDataDir(dataDir, checkpointIntervalMs);

async function errorCode(session: Session, sql: string): Promise<string | undefined> {
  try {
    await run(session, sql);
    return undefined;
  } catch (error) {
    return (error as SqlError).code;
  }
}

/** What every reopened engine must show. `extra` rows were inserted after the view was built. */
async function expectFunctionsWork(session: Session, extra: string[]): Promise<void> {
  expect(await run(session, `select rf_count('xaxa', 'a'), rf_plus(40)`)).toEqual([[2, 42]]);
  expect(await run(session, `select proname, prosrc from pg_proc where proname in ('rf_count', 'rf_plus') order by 1`)).toEqual([
    ['rf_count', 'SELECT LENGTH(s) - LENGTH(REPLACE(s, c, \'\'))'],
    ['rf_plus', ''],
  ]);
  expect(await errorCode(session, 'drop function rf_count')).toBe('2BP01');
  const rows = [['a', 1], ['aaa', 3], ...extra.map((word) => [word, word.split('a').length - 1])];
  expect(await run(session, 'select word, n from rf_view order by word')).toEqual(rows.sort((x, y) => String(x[0]).localeCompare(String(y[0]))));
}

describe('SQL functions across a restart and a restore', () => {
  it('keeps the functions, their dependencies and the views over them', async () => {
    const first = await open(600_000);
    await run(
      first.session,
      `create function rf_count(s varchar, c varchar) returns int language sql as $$SELECT LENGTH(s) - LENGTH(REPLACE(s, c, ''))$$;
       create function rf_plus(int) returns int language sql immutable return $1 + 2;
       create table rf_words (word varchar primary key);
       insert into rf_words values ('a'), ('aaa');
       create materialized view rf_view as select word, rf_count(word, 'a') as n from rf_words`,
    );
    await first.engine.close();

    const second = await open(200);
    await expectFunctionsWork(second.session, []);
    await run(second.session, `insert into rf_words values ('banana')`);
    await expectFunctionsWork(second.session, ['banana']);
    // Wait for a checkpoint that holds the insert, then lose the local state.
    const committed = (await run(second.session, 'select committed_epoch from oxbow_catalog.epochs'))[0]![0] as bigint;
    let checkpointed = false;
    for (let attempt = 0; attempt < 300 && !checkpointed; attempt++) {
      const done = await run(second.session, `select count(*) from oxbow_catalog.checkpoints where status = 'complete' and epoch >= ${committed}`);
      checkpointed = Number(done[0]![0]) > 0;
      if (!checkpointed) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(checkpointed).toBe(true);
    await second.engine.close();
    rmSync(join(dataDir, 'state'), { recursive: true, force: true });

    const third = await open(600_000);
    expect(await run(third.session, 'select source from oxbow_catalog.recovery')).toEqual([['remote']]);
    await expectFunctionsWork(third.session, ['banana']);
    await run(third.session, `insert into rf_words values ('papaya')`);
    await expectFunctionsWork(third.session, ['banana', 'papaya']);
    await third.engine.close();
  }, 60_000);
});
