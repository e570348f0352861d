// Catalog functions as PostgreSQL 15 shows them, byte-compared with a real PostgreSQL 15 (the
// oracle): pg_typeof returns regtype (so it compares with a regtype and casts to its OID), and
// pg_proc has rows for the catalog and session functions (version(), current_schemas,
// has_table_privilege ...), so psql's \df prints them as PostgreSQL does.

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
