// Roles and grants through pg_dumpall and pg_dump: `pg_dumpall --roles-only` and `pg_dump` of one
// oxbow, restored with psql into a fresh oxbow, give the same dumps back (roles with their SCRAM
// verifiers, memberships, owners, GRANTs), psql's \dp prints the same, and a restored role logs in
// with its password.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';

let source: OxbowServer;
let target: OxbowServer;

const setup = [
  "create role alice login password 'alice pw'",
  'create role readers',
  'create role writer login createdb',
  'grant readers to alice',
  'create table t (id int primary key, v text)',
  'create view v as select id from t',
  'create schema s',
  'create table s.w (k int)',
  'grant select on t, v to readers',
  'grant insert on t to writer',
  'grant usage on schema s to readers',
  'alter table s.w owner to writer',
];

function run(program: string, port: number, args: readonly string[], input?: string): string {
  const result = spawnSync(program, ['-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, PGTZ: 'UTC', PAGER: '' },
  });
  if (result.status !== 0) throw new Error(`${program} ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** The dump without what differs between any two runs (pg_dump's per-run \restrict key). */
function stable(dump: string): string {
  return dump.replace(/^\\(un)?restrict .*$/gm, '');
}

beforeAll(async () => {
  [source, target] = await Promise.all([startOxbow(), startOxbow()]);
  for (const statement of setup) run('psql', source.port, ['-X', '-d', 'oxbow', '-v', 'ON_ERROR_STOP=1', '-c', statement]);
}, 120_000);

afterAll(async () => {
  await Promise.all([source?.stop(), target?.stop()]);
});

describe('pg_dumpall and pg_dump of roles and grants', () => {
  it('restores into a fresh oxbow and dumps the same again', async () => {
    const roles = run('pg_dumpall', source.port, ['-l', 'oxbow', '--roles-only']);
    expect(roles).toContain('CREATE ROLE alice;');
    expect(roles).toMatch(/ALTER ROLE alice WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB LOGIN NOREPLICATION NOBYPASSRLS PASSWORD 'SCRAM-SHA-256\$4096:/);
    expect(roles).toMatch(/GRANT readers TO alice/);
    const schema = run('pg_dump', source.port, ['-d', 'oxbow']);
    expect(schema).toContain('GRANT SELECT ON TABLE public.t TO readers;');
    expect(schema).toContain('ALTER TABLE s.w OWNER TO writer;');
    // The dump's CREATE ROLE oxbow fails (it exists), as it does on PostgreSQL; the rest applies.
    run('psql', target.port, ['-X', '-q', '-d', 'oxbow', '-f', '-'], roles);
    run('psql', target.port, ['-X', '-q', '-d', 'oxbow', '-v', 'ON_ERROR_STOP=1', '-f', '-'], schema);
    expect(stable(run('pg_dumpall', target.port, ['-l', 'oxbow', '--roles-only']))).toBe(stable(roles));
    expect(stable(run('pg_dump', target.port, ['-d', 'oxbow']))).toBe(stable(schema));
    expect(run('psql', target.port, ['-X', '-d', 'oxbow', '-c', '\\dp'])).toBe(run('psql', source.port, ['-X', '-d', 'oxbow', '-c', '\\dp']));
    const alice = new pg.Client({ host: '127.0.0.1', port: target.port, user: 'alice', password: 'alice pw', database: 'oxbow' });
    await alice.connect();
    expect((await alice.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }]);
    await alice.end();
  }, 120_000);
});
