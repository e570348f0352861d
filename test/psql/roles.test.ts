// Real psql 15 against oxbow and against a real PostgreSQL 15 after the same role and privilege
// statements: \du and \dp must print what PostgreSQL prints. PostgreSQL's bootstrap superuser is
// `postgres` and `oxbow` an ordinary superuser there, while oxbow's bootstrap superuser is
// `oxbow`: \du is compared without those two rows, cell by cell (their names set the column width).
import { describe, expect, it } from 'vitest';
import { psql, usePsqlPair } from './psql.js';

const statements = [
  "create role alice login password 'alice pw'",
  'create role bob createdb',
  'create user carol with createrole nologin',
  'create role "Dave O" login',
  'create role readers',
  'grant readers to alice',
  'grant readers to carol',
  'grant bob to "Dave O"',
  'create table t (id int primary key, v text)',
  'create table u (a int)',
  'create view v as select id from t',
  'create materialized view m as select id, v from t',
  'create schema s',
  'create table s.w (k int)',
  'grant select on t to alice',
  'grant insert, update on table t to bob',
  'grant select on v to public',
  'grant all on u to readers',
  'revoke delete on u from readers',
  'grant select on m to "Dave O"',
  'grant usage on schema s to alice',
  'grant create on schema s to bob',
  'grant select on all tables in schema s to readers',
  'alter table u owner to bob',
  'alter role bob rename to robert',
];

function cellsWithout(output: string, roles: readonly string[]): string[][] {
  return output
    .split('\n')
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .filter((cells) => !roles.includes(cells[0]!) && !/^-+(\+-+)*$/.test(cells.join('+')));
}

const pair = usePsqlPair(statements);

describe('psql role and privilege commands', () => {
  it('\\du lists the roles as PostgreSQL does', () => {
    const ours = psql(pair.oxbow.port, '\\du');
    expect(cellsWithout(ours, ['oxbow', 'postgres'])).toEqual(cellsWithout(psql(pair.postgres.port, '\\du'), ['oxbow', 'postgres']));
    expect(ours).toMatch(/ oxbow +\| Superuser, Create role, Create DB, Replication, Bypass RLS/);
  });

  it('prints the grants made (not only matching errors)', () => {
    const privileges = psql(pair.oxbow.port, '\\dp');
    for (const item of ['alice=r/oxbow', 'robert=aw/oxbow', '=r/oxbow', 'readers=arwDxt/robert', '"Dave O"=r/oxbow']) expect(privileges).toContain(item);
    expect(psql(pair.oxbow.port, '\\dn+ s')).toContain('robert=C/oxbow');
  });

  for (const command of ['\\du alice', '\\du+ r*', '\\dp', '\\dp s.*', '\\dp t', '\\dn+ s']) {
    it(`${command} prints what PostgreSQL prints`, () => {
      expect(psql(pair.oxbow.port, command)).toBe(psql(pair.postgres.port, command));
    });
  }
});
