// Real psql 15 against oxbow and against a real PostgreSQL 15 with the same schema: the output of
// psql's describe commands (\d, \d NAME, \dt, \dv, \dm, \dn, \df, \l) and of \x, \timing and
// \conninfo must be the same text. Both servers are reached as user `oxbow`, database `oxbow`.
import { describe, expect, it } from 'vitest';
import { psql, runPsql, usePsqlPair } from './psql.js';

const schema = [
  "create table t (id int primary key, v varchar(10) not null default 'x')",
  "create table n (a bigint, b text default 'q', c numeric(10,2), d timestamp with time zone default now(), e double precision default -1)",
  'create view v as select id, v from t',
  'create materialized view m as select id, v from t',
  'create index i on t (v)',
  'create schema s',
  'create table s.u (k int primary key, w boolean)',
  "comment on table t is 'hello'",
  "create function count_char(s varchar, c varchar) returns int language sql as $$SELECT LENGTH(s) - LENGTH(REPLACE(s, c, ''))$$",
  'create function s.plus(int, bigint) returns bigint language sql immutable strict return $1 + $2',
];

// oxbow's own system schema, so that \\dn lists the same schemas on both.
const pair = usePsqlPair(schema, ['create schema oxbow_catalog']);

describe('psql describe commands', () => {
  for (const command of ['\\d', '\\dt', '\\dv', '\\dm', '\\dn', '\\df', '\\df abs', '\\df s.*', '\\df count*', '\\d t', '\\d n', '\\d v', '\\d m', '\\dt s.*', '\\d s.u', '\\d nosuch']) {
    it(`${command} prints what PostgreSQL prints`, () => {
      expect(psql(pair.oxbow.port, command)).toBe(psql(pair.postgres.port, command));
    });
  }

  it('\\l lists the oxbow database as PostgreSQL lists one', () => {
    const oxbowLines = psql(pair.oxbow.port, '\\l').split('\n');
    const postgresLines = psql(pair.postgres.port, '\\l').split('\n');
    // PostgreSQL also has postgres, template0 and template1: compare the header and the oxbow row.
    // Column widths depend on the other rows, so compare cells, not padding.
    const cells = (line: string | undefined) => (line ?? '').split('|').map((cell) => cell.trim());
    const pick = (lines: string[]) => [cells(lines[1]), cells(lines.find((line) => line.startsWith(' oxbow ')))];
    expect(pick(oxbowLines)).toEqual(pick(postgresLines));
    expect(oxbowLines).toContain('(1 row)');
  });

  it('\\x, \\timing and \\conninfo behave as with PostgreSQL', () => {
    const withX = (port: number) => runPsql(port, ['-c', '\\x', '-c', "select 1 as a, 'b' as b"]);
    expect(withX(pair.oxbow.port)).toBe(withX(pair.postgres.port));
    const timing = (port: number) => runPsql(port, ['-c', '\\timing on', '-c', 'select 1']).replace(/Time: [0-9.]+ ms/, 'Time: N ms');
    expect(timing(pair.oxbow.port)).toBe(timing(pair.postgres.port));
    expect(psql(pair.oxbow.port, '\\conninfo')).toBe(psql(pair.postgres.port, '\\conninfo').replace(String(pair.postgres.port), String(pair.oxbow.port)));
  });
});

describe('catalog queries tools send', () => {
  const queries = [
    // oxbow's views are not updatable (PostgreSQL's simple views are): is_insertable_into compared for tables only.
    "select table_schema, table_name, table_type, case when table_type = 'VIEW' then '' else is_insertable_into end as insertable from information_schema.tables where table_schema in ('public', 's') order by 1, 2",
    "select table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision, udt_name from information_schema.columns where table_schema = 'public' order by 1, 3",
    "select schema_name from information_schema.schemata where schema_name in ('public', 's') order by 1",
    "select table_name from information_schema.views where table_schema = 'public'",
    "select schemaname, tablename, hasindexes from pg_catalog.pg_tables where schemaname in ('public', 's') order by 2",
    "select schemaname, viewname from pg_catalog.pg_views where schemaname = 'public'",
    "select obj_description('t'::regclass, 'pg_class'), col_description('t'::regclass, 1)",
    "select pg_catalog.format_type(atttypid, atttypmod), attnum, attnotnull, atthasdef from pg_catalog.pg_attribute where attrelid = 'n'::regclass and attnum > 0 order by attnum",
    "select c.relname, i.indisprimary, i.indisunique, i.indnatts from pg_catalog.pg_index i join pg_catalog.pg_class c on c.oid = i.indexrelid where i.indrelid = 't'::regclass order by 1",
    "select conname, contype, pg_catalog.pg_get_constraintdef(oid, true) from pg_catalog.pg_constraint where conrelid = 't'::regclass",
    "select current_schema(), current_database(), current_user, pg_catalog.current_schemas(false)",
    "select nspname from pg_catalog.pg_namespace where nspname !~ '^pg_' order by 1",
    "select typname, typlen, typcategory from pg_catalog.pg_type where oid in (16, 20, 23, 25, 1043, 1184, 1700) order by oid",
  ];
  for (const query of queries) {
    it(query, () => {
      expect(psql(pair.oxbow.port, query, ['-A'])).toBe(psql(pair.postgres.port, query, ['-A']));
    });
  }
});
