// Catalog functions as PostgreSQL 15 shows them, byte-compared with a real PostgreSQL 15 (the
// oracle): pg_typeof returns regtype (so it compares with a regtype and casts to its OID), and
// pg_proc has rows for the catalog and session functions (version(), current_schemas,
// has_table_privilege ...), so psql's \df prints them as PostgreSQL does; and what JDBC drivers read
// (information_schema._pg_expandarray, int2vector / oidvector, type I/O names, pg_get_keywords).

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { oxbowAndPostgres } from '../support/server-pair.js';

const servers = oxbowAndPostgres();

function psql(port: number, user: string, command: string): string {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', user === 'oxbow' ? 'oxbow' : 'postgres', '-c', command], {
    encoding: 'utf8',
    env: { ...process.env, PGTZ: 'UTC', PAGER: '', PSQL_PAGER: '' },
  });
  return `${result.stdout}${result.stderr}`;
}

const both = (command: string): [string, string] => [psql(servers.oxbow.port, 'oxbow', command), psql(servers.postgres.port, 'postgres', command)];


describe('pg_typeof', () => {
  it('returns regtype, printed and compared as PostgreSQL does', () => {
    for (const query of [
      "select pg_typeof(1), pg_typeof(pg_typeof(1)), pg_typeof(array[1]), pg_typeof(1.5::numeric(10,2)), pg_typeof('x'), pg_typeof(null), pg_typeof('a'::varchar(3))",
      "select pg_typeof(1) = 'integer'::regtype as same, pg_typeof(1)::oid as oid, pg_typeof(now()) = 'timestamptz'::regtype as tz",
    ]) {
      const [ours, theirs] = both(query);
      expect(ours).toBe(theirs);
      expect(ours).not.toContain('ERROR');
    }
  });
});

describe('set_config', () => {
  it('answers a NULL name with 22004 and resets on a NULL value, as PostgreSQL does', () => {
    for (const command of ['select set_config(NULL, NULL, NULL)', "select set_config('search_path', NULL, false)"]) {
      const [ours, theirs] = both(command);
      expect(ours, command).toBe(theirs);
    }
    expect(both('select set_config(NULL, NULL, NULL)')[0]).toContain('ERROR:  SET requires parameter name');
  });
});

describe('pg_proc rows for catalog functions', () => {
  it("psql's \\df prints them as PostgreSQL 15 does", () => {
    for (const command of ['\\df version', '\\df current_schemas', '\\df has_table_privilege', '\\df pg_get_userbyid', '\\df pg_backend_pid', '\\df format_type']) {
      const [ours, theirs] = both(command);
      expect(ours, command).toBe(theirs);
      expect(ours, command).toMatch(/\(\d+ rows?\)/);
    }
  });

  it('lists PostgreSQL 15 OIDs for the overloads it shares, one row per OID', () => {
    const query = "select oid, proname, pg_get_function_arguments(oid) as args, prorettype::regtype as returns from pg_proc where proname in ('version', 'pg_get_viewdef', 'current_setting', 'obj_description') and (proname <> 'pg_get_viewdef' or pronargs <= 1) order by oid";
    const [ours, theirs] = both(query);
    expect(ours).toBe(theirs);
    expect(psql(servers.oxbow.port, 'oxbow', 'select count(*) = count(distinct oid) as unique_oids from pg_proc')).toContain(' t\n');
  });
});

describe('what JDBC drivers read from the catalog', () => {
  it("information_schema._pg_expandarray, int2vector and oidvector, type I/O names, as PostgreSQL prints them", () => {
    for (const query of [
      "select information_schema._pg_expandarray(array[10,20,30]::int2[]) as k, (information_schema._pg_expandarray(array[10,20,30]::int2[])).n as n",
      "select x.k, (x.k).x as x, (x.k).n as n from (select information_schema._pg_expandarray(array[7,8]::int4[]) as k) x where (x.k).x = 8",
      "select typname, typinput, typoutput, typreceive, typsend, typinput = 'pg_catalog.array_in'::regproc as is_array from pg_type where typname in ('int4', '_int4', 'numeric', 'text', 'int2vector', 'oidvector') order by typname",
      "select p.proname, p.proargtypes, p.proargtypes[0] as first from pg_proc p where p.oid in ('array_in'::regproc, 'int4in'::regproc) order by p.oid",
      "select 'trigger'::regtype::oid as trigger, 'pg_catalog.cstring'::regtype::oid as cstring, 'trigger'::regtype as named",
      "select string_agg(word, ',' order by word) from pg_get_keywords() where catcode = 'R'",
    ]) {
      const [ours, theirs] = both(query);
      expect(ours, query).toBe(theirs);
      expect(ours, query).not.toContain('ERROR');
    }
  });

  it('pg_index.indkey, indoption and pg_proc.proargtypes as int2vector / oidvector', () => {
    for (const sql of ['create table kv (a int, b text, c int, primary key (c, a))', 'create function twice(x int, y text) returns int language sql immutable return x * 2']) {
      psql(servers.oxbow.port, 'oxbow', sql);
      psql(servers.postgres.port, 'postgres', sql);
    }
    for (const query of [
      "select i.indkey, i.indkey[0] as first, i.indkey[1] as second, i.indoption, i.indnatts, pg_typeof(i.indkey) from pg_index i join pg_class c on c.oid = i.indrelid where c.relname = 'kv'",
      "select proargtypes, proargtypes[1] as second, pg_typeof(proargtypes), oidvectortypes(proargtypes) from pg_proc where proname = 'twice'",
      "select a.attname from pg_index i join pg_class c on c.oid = i.indrelid join pg_attribute a on a.attrelid = c.oid and a.attnum = any(i.indkey) where c.relname = 'kv' order by a.attnum",
    ]) {
      const [ours, theirs] = both(query);
      expect(ours, query).toBe(theirs);
      expect(ours, query).not.toContain('ERROR');
    }
  });
});
