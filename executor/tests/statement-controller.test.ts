// The session reuses the AbortController of a DML statement for the next statement when nothing
// aborted it, armed statement_timeout on it or still listens to it (session.ts,
// statementController). What must not change: cancel() and statement_timeout stop exactly the
// statement running, never an earlier or a later one. Over the in-memory store; expected outcomes
// by hand (PostgreSQL's: 57014 for the stopped statement, the session carries on).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryStateStore } from '../../storage/memory-state-store.js';
import { openEngine, type OxbowEngine } from '../open-engine.js';
import { SqlError } from '../../sql/errors.js';
import type { Session } from '../engine.js';
import type { Row } from '../../sql/value.js';

let engine: OxbowEngine;
let session: Session;
const OriginalAbortController = globalThis.AbortController;
let controllersMade = 0;

beforeEach(async () => {
  engine = await openEngine(createMemoryStateStore(), { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
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
  await engine.close();
});

async function run(sql: string): Promise<Row[]> {
  let rows: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    if (result.kind === 'rows') rows = await result.cursor.next(0);
  }
  return rows;
}

async function failure(sql: string): Promise<SqlError> {
  try {
    await run(sql);
  } catch (error) {
    if (error instanceof SqlError) return error;
    throw error;
  }
  throw new Error(`expected ${sql} to fail`);
}

const LONG = 'select count(*) from generate_series(1, 100000000)';

describe('the statement controller', () => {
  it('serves consecutive DML statements with one controller', async () => {
    await run('create table t (id int primary key, v int)');
    const before = controllersMade;
    for (let id = 0; id < 10; id++) await run(`insert into t values (${id}, ${id})`);
    await run('update t set v = v + 1 where id < 5');
    await run('delete from t where id = 9');
    expect(controllersMade - before).toBe(1);
    expect(await run('select count(*), sum(v) from t')).toEqual([[9n, 41n]]);
  });

  it('cancel() stops only the statement running, after and before reused controllers', async () => {
    await run('create table t (id int primary key)');
    for (let id = 0; id < 3; id++) await run(`insert into t values (${id})`);
    // A cancel between statements reaches nobody.
    session.cancel();
    await run('insert into t values (3)');
    const running = failure(LONG);
    setTimeout(() => session.cancel(), 20);
    expect((await running).code).toBe('57014');
    await run('insert into t values (4)');
    await run('insert into t values (5)');
    const again = failure(LONG);
    setTimeout(() => session.cancel(), 20);
    const error = await again;
    expect(error.code).toBe('57014');
    expect(error.message).toBe('canceling statement due to user request');
    await run('insert into t values (6)');
    expect(await run('select count(*) from t')).toEqual([[7n]]);
  });

  it('never carries a statement_timeout over to a later statement', async () => {
    await run('create table t (id int primary key)');
    await run('insert into t values (0)');
    await run("set statement_timeout = '30ms'");
    await run('insert into t values (1)');
    const timedOut = await failure(LONG);
    expect(timedOut.code).toBe('57014');
    expect(timedOut.message).toBe('canceling statement due to statement timeout');
    await run('insert into t values (2)');
    await run('reset statement_timeout');
    await run('insert into t values (3)');
    await run('insert into t values (4)');
    // Long enough to outlive the 30 ms deadline of any earlier statement's controller.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await run('select count(*) from generate_series(1, 200000)')).toEqual([[200000n]]);
    expect(await run('select count(*) from t')).toEqual([[5n]]);
  });
});
