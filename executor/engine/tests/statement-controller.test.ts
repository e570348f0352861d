// The session reuses the AbortController of a DML statement for the next statement when nothing
// aborted it, armed statement_timeout on it or still listens to it (session.ts,
// statementController). What must not change: cancel() and statement_timeout stop exactly the
// statement running, never an earlier or a later one. Over the in-memory store; expected outcomes
// by hand (PostgreSQL's: 57014 for the stopped statement, the session carries on).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';

let h: Harness;
const OriginalAbortController = globalThis.AbortController;
let controllersMade = 0;

beforeEach(async () => {
  h = await openHarness();
  controllersMade = 0;
  globalThis.AbortController = class extends OriginalAbortController {
    constructor() {
      super();
      controllersMade++;
    }
  };
});
afterEach(async () => {
  globalThis.AbortController = OriginalAbortController;
  await h.close();
});

const LONG = 'select count(*) from generate_series(1, 100000000)';
/** Far longer than a 2 s statement_timeout on any machine. */
const LONGER = 'select count(*) from generate_series(1, 100000000000)';

describe('the statement controller', () => {
  it('serves consecutive DML statements with one controller', async () => {
    await h.rows('create table t (id int primary key, v int)');
    const before = controllersMade;
    for (let id = 0; id < 10; id++) await h.rows(`insert into t values (${id}, ${id})`);
    await h.rows('update t set v = v + 1 where id < 5');
    await h.rows('delete from t where id = 9');
    expect(controllersMade - before).toBe(1);
    expect(await h.rows('select count(*), sum(v) from t')).toEqual([[9n, 41n]]);
  });

  it('cancel() stops only the statement running, after and before reused controllers', async () => {
    await h.rows('create table t (id int primary key)');
    for (let id = 0; id < 3; id++) await h.rows(`insert into t values (${id})`);
    // A cancel between statements reaches nobody.
    h.session.cancel();
    await h.rows('insert into t values (3)');
    const running = h.failure(LONG);
    setTimeout(() => h.session.cancel(), 20);
    expect((await running).code).toBe('57014');
    await h.rows('insert into t values (4)');
    await h.rows('insert into t values (5)');
    const again = h.failure(LONG);
    setTimeout(() => h.session.cancel(), 20);
    const error = await again;
    expect(error.code).toBe('57014');
    expect(error.message).toBe('canceling statement due to user request');
    await h.rows('insert into t values (6)');
    expect(await h.rows('select count(*) from t')).toEqual([[7n]]);
  });

  it('never carries a statement_timeout over to a later statement', async () => {
    await h.rows('create table t (id int primary key)');
    await h.rows('insert into t values (0)');
    // 2 s: the inserts under it must finish in time however loaded the machine is (at 30 ms an
    // insert timed out with another test file running beside this one at load 15-28).
    await h.rows("set statement_timeout = '2s'");
    await h.rows('insert into t values (1)');
    const timedOut = await h.failure(LONGER);
    expect(timedOut.code).toBe('57014');
    expect(timedOut.message).toBe('canceling statement due to statement timeout');
    await h.rows('insert into t values (2)');
    await h.rows('reset statement_timeout');
    await h.rows('insert into t values (3)');
    await h.rows('insert into t values (4)');
    // Long enough to outlive the 2 s deadline of any earlier statement's controller.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect(await h.rows('select count(*) from generate_series(1, 200000)')).toEqual([[200000n]]);
    expect(await h.rows('select count(*) from t')).toEqual([[5n]]);
  });
});
