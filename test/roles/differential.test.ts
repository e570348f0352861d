// The same role and privilege statements, run by the same users, on a real PostgreSQL 15 and on
// oxbow: each must succeed on both (with the same rows) or fail on both with the same SQLSTATE,
// message and detail. Roles here have no password, so both servers let them in by trust (PostgreSQL's test
// cluster is initdb --auth=trust; oxbow without --password).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawTypes } from '../support/pg-pair.js';
import { startPostgresAsOxbow, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;
const clients = new Map<string, { ours: pg.Client; theirs: pg.Client }>();

const steps: readonly (readonly [user: string, sql: string])[] = [
  ['oxbow', 'create role alice login'],
  ['oxbow', 'create role bob login'],
  ['oxbow', 'create table t (id int primary key, v text)'],
  ['oxbow', "insert into t values (1, 'a'), (2, 'b')"],
  ['oxbow', 'create view v as select id, v from t'],
  ['alice', 'select * from t'],
  ['alice', "insert into t values (3, 'c')"],
  ['alice', "update t set v = 'x'"],
  ['alice', 'delete from t'],
  ['alice', 'truncate t'],
  ['alice', 'create table a1 (x int)'],
  ['alice', 'drop table t'],
  ['alice', 'alter table t add column z int'],
  ['alice', 'create index on t (v)'],
  ['alice', 'create role x'],
  ['alice', 'grant select on t to bob'],
  ['alice', 'select * from v'],
  ['alice', 'select * from pg_authid'],
  ['alice', 'set role bob'],
  ['alice', 'copy t to stdout'],
  ['alice', 'select current_user, session_user'],
  ['alice', "comment on table t is 'mine'"],
  ['alice', "comment on column t.v is 'mine'"],
  ['oxbow', 'create materialized view mv as select count(*) as n from t'],
  ['alice', 'refresh materialized view mv'],
  ['alice', 'select * from mv'],
  ['alice', 'alter view v rename to v2'],
  ['alice', 'drop view v'],
  ['alice', 'drop materialized view mv'],
  ['alice', 'drop schema public'],
  ['alice', 'create schema s'],
  ['alice', 'create sequence q'],
  ['alice', 'create function f() returns int language sql return 1'],
  ['alice', 'create table t2 as select 1 as x'],
  ['alice', 'create view v3 as select 1 as x'],
  ['alice', 'grant create on schema public to bob'],
  ['alice', 'explain select * from t'],
  ['alice', 'insert into t select * from t'],
  ['oxbow', 'grant select on t to alice'],
  ['alice', 'select id, v from t order by id'],
  ['alice', 'prepare p as select id from t order by id'],
  ['alice', 'execute p'],
  ['alice', 'set role nosuch'],
  ['alice', "update t set v = 'x' where id = 1"],
  ['oxbow', 'grant update on t to alice'],
  ['alice', "update t set v = 'y' where id = 1"],
  ['alice', "update t set v = 'z'"],
  ['alice', 'delete from t where id = 9'],
  ['alice', "insert into t values (3, 'c') returning id"],
  ['oxbow', 'grant create on schema public to alice'],
  ['alice', 'create table a1 (x int)'],
  ['alice', 'create view av as select id from t'],
  ['oxbow', 'revoke select on t from alice'],
  ['alice', 'execute p'],
  ['bob', 'select * from av'],
  ['alice', 'grant select on av to bob'],
  ['bob', 'select * from av'],
  ['oxbow', 'grant select on t to alice'],
  ['bob', 'select id from av order by id'],
  ['bob', 'select * from (select * from av) s where exists (select 1 from t)'],
  ['alice', 'select has_table_privilege(\'t\', \'select\') as a, has_table_privilege(\'bob\', \'t\', \'update\') as b, has_schema_privilege(\'public\', \'create\') as c, pg_has_role(\'bob\', \'alice\', \'member\') as d'],
  ['oxbow', 'drop role alice'],
  ['oxbow', 'drop role nosuch'],
  ['oxbow', 'drop role if exists nosuch'],
  ['oxbow', 'create role alice'],
  ['oxbow', 'create role public'],
  ['oxbow', 'create role pg_x'],
  ['oxbow', 'grant nosuch to bob'],
  ['oxbow', 'grant bob to bob'],
  ['oxbow', 'grant alice to bob'],
  ['oxbow', 'grant bob to alice'],
  ['oxbow', 'alter role nosuch login'],
  ['bob', 'create role y'],
  ['bob', 'alter role alice nologin'],
  ['bob', 'drop role alice'],
  ['bob', 'select * from a1'],
  ['oxbow', 'alter table a1 owner to nosuch'],
  ['alice', 'alter table a1 owner to bob'],
  ['alice', 'alter table t owner to alice'],
  ['oxbow', 'create table st (id serial primary key, v text)'],
  ['oxbow', 'create sequence q'],
  ['oxbow', 'grant insert, select on st to bob'],
  ['bob', "insert into st (v) values ('a')"],
  ['bob', "select nextval('q')"],
  ['bob', "select has_sequence_privilege('q', 'usage') as u, has_sequence_privilege('st_id_seq', 'select') as s"],
  ['oxbow', 'grant usage on sequence st_id_seq to bob'],
  ['bob', "insert into st (v) values ('b') returning id"],
  ['oxbow', 'grant select on sequence q to bob'],
  ['bob', "select nextval('q')"],
  ['bob', "select currval('st_id_seq')"],
  ['oxbow', 'grant update on q to bob'],
  ['bob', "select nextval('q')"],
  ['bob', "select setval('q', 10)"],
  ['oxbow', 'grant delete on sequence q to bob'],
  ['oxbow', 'grant usage on table st to bob'],
  ['oxbow', 'grant usage on sequence st to bob'],
  ['oxbow', 'grant all on all sequences in schema public to alice'],
  ['oxbow', "select relname, relacl::text from pg_class where relkind = 'S' order by 1"],
  ['oxbow', 'create table it (id int generated always as identity, v text)'],
  ['oxbow', 'grant insert on it to bob'],
  ['bob', "insert into it (v) values ('x')"],
  ['bob', 'create table fk (id int references st (id))'],
  ['oxbow', 'grant create on schema public to bob'],
  ['bob', 'create table fk (id int references st (id))'],
  ['oxbow', 'grant references on st to bob'],
  ['bob', 'create table fk (id int references st (id))'],
  ['bob', 'drop table fk'],
  ['oxbow', 'revoke create on schema public from bob'],
  ['oxbow', 'drop table st'],
  ['oxbow', 'drop table it'],
  ['oxbow', 'drop sequence q'],
  ['oxbow', 'revoke all on all sequences in schema public from alice'],
  ['alice', "alter role alice password 'new one'"],
  ['alice', 'alter role alice createdb'],
  ['oxbow', 'create role readers'],
  ['oxbow', 'create role r2 in role readers'],
  ['oxbow', 'create role r3 role alice, bob'],
  ['oxbow', 'alter role bob rename to robert'],
  ['oxbow', 'alter role robert rename to bob'],
  ['oxbow', 'alter role oxbow rename to x'],
  ['oxbow', 'alter role bob rename to readers'],
  ['oxbow', 'create role carol createrole login'],
  ['carol', 'create role dave'],
  ['carol', 'create role eve superuser'],
  ['carol', 'grant readers to dave'],
  ['carol', 'alter role dave login createdb'],
  ['carol', 'alter role oxbow nologin'],
  ['carol', 'drop role oxbow'],
  ['carol', 'drop role dave'],
  ['carol', "select current_setting('is_superuser'), current_setting('role')"],
  ['oxbow', "select rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit, rolpassword, rolvaliduntil from pg_roles where rolname in ('alice', 'bob', 'carol', 'readers', 'r2', 'r3') order by 1"],
  ['oxbow', "select r.rolname, m.rolname, a.admin_option from pg_auth_members a join pg_roles r on r.oid = a.roleid join pg_roles m on m.oid = a.member where r.rolname !~ '^pg_' order by 1, 2"],
  ['oxbow', "select usename, usecreatedb, usesuper, passwd from pg_user where usename in ('alice', 'bob', 'carol') order by 1"],
  ['oxbow', "select nspname, nspacl::text from pg_namespace where nspname = 'public'"],
  ['oxbow', 'show role'],
  ['oxbow', 'set role carol'],
  ['oxbow', 'show role'],
  ['oxbow', 'select current_user, session_user, current_role'],
  ['oxbow', 'reset role'],
  ['oxbow', 'drop role if exists carol, nosuch, r2, r3'],
  ['oxbow', 'drop role readers'],
  ['oxbow', 'create role olga login'],
  ['oxbow', 'grant create on schema public to olga'],
  ['olga', 'create table ot (a int)'],
  ['oxbow', 'grant select on t to olga'],
  ['olga', 'grant select on ot to alice'],
  ['oxbow', 'drop role olga'],
  ['bob', 'reassign owned by olga to bob'],
  ['bob', 'drop owned by olga'],
  ['oxbow', 'reassign owned by olga to bob'],
  ['oxbow', "select tableowner from pg_tables where tablename = 'ot'"],
  ['oxbow', "select relacl::text from pg_class where relname = 'ot'"],
  ['oxbow', 'drop owned by olga'],
  ['oxbow', "select nspacl::text from pg_namespace where nspname = 'public'"],
  ['oxbow', 'drop role olga'],
  ['oxbow', 'drop table ot'],
  ['oxbow', 'revoke alice from bob'],
  ['oxbow', 'set role alice'],
  ['oxbow', 'select current_user, session_user'],
  ['oxbow', 'select * from t order by id'],
  ['oxbow', 'reset role'],
  ['oxbow', 'select current_user'],
  ['oxbow', "select * from information_schema.table_privileges where table_schema = 'public' order by table_name, grantee, privilege_type"],
  ['alice', "select * from information_schema.table_privileges where table_schema = 'public' order by table_name, grantee, privilege_type"],
  ['bob', "select * from information_schema.role_table_grants where table_schema = 'public' order by table_name, grantee, privilege_type"],
  ['oxbow', 'drop view av'],
  ['oxbow', 'drop table a1'],
  ['oxbow', 'drop role alice'],
  ['oxbow', 'revoke all on t from alice'],
  ['oxbow', 'revoke create on schema public from alice'],
  ['oxbow', 'drop role alice'],
  ['oxbow', 'drop role oxbow'],
];

async function client(port: number, user: string): Promise<pg.Client> {
  const connection = new pg.Client({ host: '127.0.0.1', port, user, database: 'oxbow', types: rawTypes });
  await connection.connect();
  return connection;
}

async function outcome(connection: pg.Client, sql: string): Promise<unknown> {
  try {
    const result = await connection.query({ text: sql, rowMode: 'array' });
    return { ok: result.command, rows: result.rows };
  } catch (error) {
    const { code, message, detail } = error as { code: string; message: string; detail?: string };
    return detail === undefined ? { code, message } : { code, message, detail };
  }
}

beforeAll(async () => {
  [postgres, oxbow] = await Promise.all([startPostgresAsOxbow(), startOxbow()]);
}, 120_000);

afterAll(async () => {
  for (const { ours, theirs } of clients.values()) await Promise.allSettled([ours.end(), theirs.end()]);
  await Promise.all([oxbow?.stop(), postgres?.stop()]);
});

describe('roles and privileges against PostgreSQL 15', () => {
  it('gives the same outcome, statement by statement', async () => {
    const differences: string[] = [];
    for (const [user, sql] of steps) {
      let pair = clients.get(user);
      if (pair === undefined) {
        pair = { ours: await client(oxbow.port, user), theirs: await client(postgres.port, user) };
        clients.set(user, pair);
      }
      const [ours, theirs] = [await outcome(pair.ours, sql), await outcome(pair.theirs, sql)];
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) differences.push(`${user}: ${sql}\n  oxbow:      ${JSON.stringify(ours)}\n  PostgreSQL: ${JSON.stringify(theirs)}`);
    }
    expect(differences.join('\n')).toBe('');
  }, 120_000);
});
