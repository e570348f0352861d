// DDL handlers against the real PostgreSQL 15 as the oracle: the same script runs on both, and
// every statement must succeed on both or fail on both with the same SQLSTATE and message. The
// planner is replaced by a stub only for CREATE VIEW's column list (this tests DDL, not binding).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { SqlError } from '../../../sql/errors.js';
import { type } from '../../../sql/types.js';
import { BUILTIN_SCHEMAS, CatalogSnapshot, FIRST_USER_ID } from '../../catalog/catalog.js';
import { runDdl } from '../run-ddl.js';
import { systemRelationDefs } from '../../system/system-relations.js';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';

let postgres: PostgresServer;
beforeAll(async () => {
  await initParser();
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
});

type Outcome = { ok: true } | { ok: false; code: string; message: string };

class DdlHarness {
  catalog = new CatalogSnapshot(FIRST_USER_ID, BUILTIN_SCHEMAS, systemRelationDefs());
  notices: string[] = [];
  run(sql: string): Outcome {
    try {
      const [statement] = parse(sql);
      const outcome = runDdl(statement!, {
        catalog: this.catalog,
        searchPath: ['public'],
        statementText: statement!.text,
        statementLocation: statement!.location,
        describeQuery: () => [{ name: 'id', type: type('int4'), tableOid: 0, columnNumber: 0 }],
      });
      if (outcome.catalog !== undefined) this.catalog = outcome.catalog;
      this.notices.push(...outcome.notices.map((notice) => notice.message));
      return { ok: true };
    } catch (error) {
      if (!(error instanceof SqlError)) throw error;
      return { ok: false, code: error.code, message: error.message };
    }
  }
}

async function onPostgres(sql: string): Promise<Outcome> {
  const outcome = await postgres.tryQuery(sql);
  return outcome.ok ? { ok: true } : { ok: false, code: outcome.code, message: outcome.message };
}

const script = [
  'create table t (id int primary key, v varchar(10) not null default \'x\')',
  'create table t (a int)',
  'create table if not exists t (a int)',
  'create view v as select id from t',
  'drop table t',
  'drop view t',
  'drop table nope',
  'drop table if exists nope',
  'drop index t_pkey',
  'create schema s',
  'create schema s',
  'create schema if not exists s',
  'create table s.x (a int)',
  'drop schema s',
  'create table nos.x (a int)',
  'create table d (a int, a int)',
  'create table e (a int, primary key (b))',
  'create table f (a nosuchtype)',
  'create table g (a int primary key, b int primary key)',
  'alter table t add column v int',
  'alter table t add column w text',
  'alter table nope add column w text',
  'comment on table t is \'the table\'',
  'comment on column t.zz is \'x\'',
  'comment on column t.v is \'a column\'',
  'create index i on t (v)',
  'create index i on t (id)',
  'create index j on t (nocolumn)',
  'create index k on v (id)',
  'drop index i',
  'drop index i',
  'drop view v, t',
  'drop table t cascade',
  'drop schema s cascade',
  'drop schema pg_catalog',
  'create table pg_catalog.p (a int)',
  'create table h (a varchar(0))',
  'create table h (a numeric(2000))',
  'create table h (a numeric(10, 2), b timestamp(3) with time zone, c int[], d double precision, e char(3))',
  'create table j (a json primary key)',
  'create table k (a text collate "no_such_collation")',
  'create table k (a text collate "C")',
  'alter table k add column a int',
  'alter table k add column if not exists a int',
  'drop table pg_catalog.pg_class',
];

describe('DDL matches PostgreSQL 15', () => {
  it('succeeds and fails statement by statement as PostgreSQL does', async () => {
    const harness = new DdlHarness();
    const differences: string[] = [];
    for (const sql of script) {
      const expected = await onPostgres(sql);
      const actual = harness.run(sql);
      if (JSON.stringify(expected) !== JSON.stringify(actual)) {
        differences.push(`${sql}\n  postgres: ${JSON.stringify(expected)}\n  oxbow:    ${JSON.stringify(actual)}`);
      }
    }
    expect(differences).toEqual([]);
  });

  it('keeps typmods and hides the row id of a table without a primary key', () => {
    const harness = new DdlHarness();
    expect(harness.run('create table h (a numeric(10, 2), b varchar(5), c int)')).toEqual({ ok: true });
    const relation = harness.catalog.relation('public', 'h')!;
    expect(relation.columns.map((column) => [column.name, column.type.name, column.type.typmod, column.hidden])).toEqual([
      ['a', 'numeric', ((10 << 16) | 2) + 4, false],
      ['b', 'varchar', 9, false],
      ['c', 'int4', -1, false],
      ['_row_id', 'int8', -1, true],
    ]);
    expect(relation.primaryKey).toEqual([3]);
  });

  it('drop cascade reports the dependents in one notice', () => {
    const harness = new DdlHarness();
    harness.run('create table t (id int)');
    harness.run('create view v1 as select id from t');
    harness.run('create view v2 as select id from v1');
    expect(harness.run('drop table t cascade')).toEqual({ ok: true });
    expect(harness.notices).toEqual(['drop cascades to 2 other objects']);
    expect(harness.catalog.relation('public', 'v2')).toBeUndefined();
  });
});

// What dbt and a restore of pg_dump's output send: RENAME TO, ADD CONSTRAINT ... PRIMARY KEY /
// UNIQUE on an existing table, OWNER TO.
const renameAndRestoreScript = [
  'create table rt (a int, b int)',
  'create view rv as select a from rt',
  'alter table rt rename to rt2',
  'alter table rt2 rename to rv',
  'alter table nope rename to x',
  'alter table if exists nope rename to x',
  'alter view rv rename to rv2',
  'alter view rt2 rename to rt3',
  'alter table rt2 add constraint rt2_pkey primary key (a)',
  'alter table rt2 add primary key (b)',
  'alter table rt2 add constraint u unique (nosuch)',
  'alter table rt2 add unique (b)',
  'alter table rt2 owner to current_user',
  'alter table rt2 owner to nosuchrole',
  'alter view rv2 owner to current_user',
  'alter schema public owner to current_user',
  'alter schema nosuch owner to current_user',
  'create table ck (a int, b int)',
  'alter table ck drop constraint nope',
  'alter table ck drop constraint if exists nope',
  'alter table ck add constraint ck_pkey primary key (b)',
  'alter table ck drop constraint ck_pkey',
  'alter table ck add primary key (a)',
];

describe('RENAME, ADD CONSTRAINT and OWNER TO match PostgreSQL 15', () => {
  it('succeeds and fails statement by statement as PostgreSQL does', async () => {
    const harness = new DdlHarness();
    const differences: string[] = [];
    for (const sql of renameAndRestoreScript) {
      const expected = await onPostgres(sql);
      const actual = harness.run(sql);
      if (JSON.stringify(expected) !== JSON.stringify(actual)) {
        differences.push(`${sql}\n  postgres: ${JSON.stringify(expected)}\n  oxbow:    ${JSON.stringify(actual)}`);
      }
    }
    expect(differences).toEqual([]);
    expect(harness.catalog.relation('public', 'rv2')?.definition).toBe('select a from rt2');
  });

  it('renaming a column is 0A000', () => {
    const harness = new DdlHarness();
    harness.run('create table c (a int)');
    expect(harness.run('alter table c rename column a to b')).toMatchObject({ ok: false, code: '0A000' });
  });
});
