// Which statements a standby that forwards writes sends to the leader (read-only.ts'
// mustRunOnLeader): every statement refused with 25006 under `--standby-writes refuse`, nextval()
// and setval() (refused only when they run), and a BEGIN / START TRANSACTION that is not READ
// ONLY; reads, SHOW, SET, COMMIT and READ ONLY blocks stay on the standby.
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { mustRunOnLeader, writingCommand } from '../read-only.js';
import { classify, type OxbowPrepared } from '../statement-kinds.js';

beforeAll(async () => {
  await initParser();
});

function prepared(sql: string): OxbowPrepared {
  const [parsed] = parse(sql);
  return { sql, parsed: parsed!, utility: classify(parsed!), declaredParameterTypes: [], parameterTypes: [], columns: null };
}

describe('statements a forwarding standby sends to the leader', () => {
  it.each([
    'insert into t values (1)',
    'update t set v = 1',
    'delete from t',
    'create table u (x int)',
    'create materialized view mv as select 1',
    'drop table t',
    'copy t from stdin',
    'truncate t',
    'with w as (insert into t values (1) returning *) select * from w',
    "select nextval('s')",
    "select pg_catalog.setval('s', 3)",
    "select 1, nextval('s') from t",
    'begin',
    'begin isolation level serializable',
    'start transaction read write',
    'begin read write',
  ])('%s', (sql) => {
    expect(mustRunOnLeader(prepared(sql))).toBe(true);
  });

  it.each([
    'select * from t',
    "select currval('s')",
    "select 'nextval' from t",
    'show in_hot_standby',
    "set application_name = 'x'",
    'begin read only',
    'start transaction isolation level repeatable read, read only',
    'commit',
    'rollback',
    'copy t to stdout',
    'explain select 1',
  ])('%s stays', (sql) => {
    expect(mustRunOnLeader(prepared(sql))).toBe(false);
  });

  it('names the command of a refused write as PostgreSQL does', () => {
    expect(writingCommand(prepared('insert into t values (1)'))).toBe('INSERT');
    expect(writingCommand(prepared('create materialized view mv as select 1'))).toBe('CREATE MATERIALIZED VIEW');
    expect(writingCommand(prepared('select 1'))).toBeUndefined();
  });
});
