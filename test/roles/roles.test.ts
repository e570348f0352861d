// Users and privileges over the wire, on a real oxbow process: roles created by SQL log in with
// SCRAM-SHA-256 (node `pg` and the psql binary), a wrong password or an unknown role is refused
// with PostgreSQL's FATAL errors, privileges decide who reads and writes (42501 otherwise), views
// are checked with their owner's rights, and roles, owners and ACLs survive a restart.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';

let oxbow: OxbowServer;
let admin: pg.Client;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-roles-'));

async function connect(user: string, password?: string): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: oxbow.port, user, database: 'oxbow', ...(password === undefined ? {} : { password }) });
  await client.connect();
  return client;
}

async function failure(client: pg.Client, sql: string): Promise<{ code: string; message: string }> {
  try {
    await client.query(sql);
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
  throw new Error(`expected "${sql}" to fail`);
}

beforeAll(async () => {
  oxbow = await startOxbow({ dataDir });
  admin = await connect('oxbow');
  await admin.query("CREATE ROLE alice LOGIN PASSWORD 'alice secret'");
  await admin.query("CREATE USER bob WITH PASSWORD 'bob pw'");
  await admin.query('CREATE ROLE nologin_role');
  await admin.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
  await admin.query("INSERT INTO t VALUES (1, 'one'), (2, 'two')");
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await oxbow?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('authentication', () => {
  it('logs a role in with its password over SCRAM-SHA-256 (pg)', async () => {
    const alice = await connect('alice', 'alice secret');
    const { rows } = await alice.query('SELECT current_user, session_user');
    expect(rows).toEqual([{ current_user: 'alice', session_user: 'alice' }]);
    await alice.end();
  });

  it('refuses a wrong password with 28P01', async () => {
    await expect(connect('alice', 'wrong')).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "alice"' });
  });

  it('refuses an unknown role and a role without LOGIN with 28000', async () => {
    await expect(connect('nobody')).rejects.toMatchObject({ code: '28000', message: 'role "nobody" does not exist' });
    await expect(connect('nologin_role')).rejects.toMatchObject({ code: '28000', message: 'role "nologin_role" is not permitted to log in' });
  });

  it('logs psql in with PGPASSWORD and refuses a wrong one', () => {
    const run = (password: string) =>
      spawnSync('psql', ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(oxbow.port), '-U', 'bob', '-d', 'oxbow', '-c', 'select current_user'], {
        encoding: 'utf8',
        env: { ...process.env, PGPASSWORD: password },
      });
    const right = run('bob pw');
    expect(right.stderr).toBe('');
    expect(right.stdout.trim()).toBe('bob');
    const wrong = run('nope');
    expect(wrong.status).not.toBe(0);
    expect(wrong.stderr).toContain('password authentication failed for user "bob"');
  });

  it('keeps a given SCRAM verifier as is', async () => {
    const { rows } = await admin.query("SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'");
    const verifier = rows[0].rolpassword as string;
    expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    await admin.query(`CREATE ROLE carol LOGIN PASSWORD '${verifier}'`);
    expect(await failure(admin, "CREATE ROLE dan PASSWORD 'md5d41d8cd98f00b204e9800998ecf8427e'")).toEqual({ code: '0A000', message: 'MD5 password hashes are not supported' });
    const carol = await connect('carol', 'alice secret');
    expect((await carol.query('SELECT current_user AS u')).rows).toEqual([{ u: 'carol' }]);
    await carol.end();
  });
});

describe('privileges', () => {
  it('refuses SELECT without the privilege and allows it after GRANT', async () => {
    const alice = await connect('alice', 'alice secret');
    expect(await failure(alice, 'SELECT * FROM t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    await admin.query('GRANT SELECT ON t TO alice');
    expect((await alice.query('SELECT v FROM t ORDER BY id')).rows).toEqual([{ v: 'one' }, { v: 'two' }]);
    expect(await failure(alice, "INSERT INTO t VALUES (3, 'three')")).toEqual({ code: '42501', message: 'permission denied for table t' });
    await admin.query('GRANT INSERT ON TABLE t TO alice');
    await alice.query("INSERT INTO t VALUES (3, 'three')");
    expect(await failure(alice, "UPDATE t SET v = 'x' WHERE id = 3")).toMatchObject({ code: '42501' });
    expect(await failure(alice, 'DELETE FROM t')).toMatchObject({ code: '42501' });
    expect(await failure(alice, 'DROP TABLE t')).toEqual({ code: '42501', message: 'must be owner of table t' });
    expect(await failure(alice, 'CREATE TABLE mine (a int)')).toEqual({ code: '42501', message: 'permission denied for schema public' });
    await admin.query('REVOKE SELECT ON t FROM alice');
    expect(await failure(alice, 'SELECT * FROM t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'COPY t TO STDOUT')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'SELECT * FROM (SELECT id FROM t) s')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'SELECT 1 WHERE EXISTS (SELECT 1 FROM t)')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'WITH c AS (SELECT * FROM t) SELECT * FROM c')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'SUBSCRIBE t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    // oxbow's own statements that name a relation are reads too.
    expect(await failure(alice, 'DESCRIBE t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'SHOW CREATE TABLE t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    expect(await failure(alice, 'BEGIN; DECLARE c CURSOR FOR SUBSCRIBE t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    await alice.query('ROLLBACK');
    await admin.query('CREATE SUBSCRIPTION t_changes FROM t');
    expect(await failure(alice, 'BEGIN; DECLARE c SUBSCRIPTION CURSOR FOR t_changes')).toEqual({ code: '42501', message: 'permission denied for subscription t_changes' });
    await alice.query('ROLLBACK');
    await admin.query('DROP SUBSCRIPTION t_changes');
    await alice.end();
  });

  it('checks a view with its owner rights', async () => {
    await admin.query('GRANT CREATE ON SCHEMA public TO bob');
    await admin.query('GRANT SELECT ON t TO bob');
    const bob = await connect('bob', 'bob pw');
    await bob.query('CREATE TABLE bobs (a int)');
    await bob.query('CREATE VIEW bv AS SELECT id FROM t');
    const alice = await connect('alice', 'alice secret');
    expect(await failure(alice, 'SELECT * FROM bv')).toEqual({ code: '42501', message: 'permission denied for view bv' });
    await bob.query('GRANT SELECT ON bv TO alice');
    expect((await alice.query('SELECT count(*)::int AS n FROM bv')).rows).toEqual([{ n: 3 }]);
    // The owner loses the right to the table: the view stops working for its readers too.
    await admin.query('REVOKE SELECT ON t FROM bob');
    expect(await failure(alice, 'SELECT * FROM bv')).toEqual({ code: '42501', message: 'permission denied for table t' });
    await alice.end();
    await bob.end();
  });

  it('reports privileges in pg_class.relacl and the inquiry functions', async () => {
    const { rows } = await admin.query("SELECT relacl::text AS acl FROM pg_class WHERE relname = 't'");
    expect(rows).toEqual([{ acl: '{oxbow=arwdDxt/oxbow,alice=a/oxbow}' }]);
    const checks = await admin.query("SELECT has_table_privilege('alice', 't', 'INSERT') AS i, has_table_privilege('alice', 't', 'SELECT') AS s, has_schema_privilege('bob', 'public', 'CREATE') AS c, pg_has_role('alice', 'bob', 'MEMBER') AS m");
    expect(checks.rows).toEqual([{ i: true, s: false, c: true, m: false }]);
  });

  it('refuses pg_authid to a non-superuser', async () => {
    const alice = await connect('alice', 'alice secret');
    expect(await failure(alice, 'SELECT * FROM pg_authid')).toEqual({ code: '42501', message: 'permission denied for table pg_authid' });
    expect((await alice.query("SELECT rolname FROM pg_roles WHERE rolname = 'alice'")).rows).toEqual([{ rolname: 'alice' }]);
    await alice.end();
  });

  it('hides other roles\' queries in pg_stat_activity from a non-superuser', async () => {
    const alice = await connect('alice', 'alice secret');
    await admin.query("SELECT 'admin was here'");
    const seen = await alice.query("SELECT usename, query, state FROM pg_stat_activity WHERE usename IN ('oxbow', 'alice') ORDER BY usename");
    expect(seen.rows).toEqual([
      { usename: 'alice', query: "SELECT usename, query, state FROM pg_stat_activity WHERE usename IN ('oxbow', 'alice') ORDER BY usename", state: 'active' },
      { usename: 'oxbow', query: '<insufficient privilege>', state: null },
    ]);
    const { rows } = await admin.query("SELECT query FROM pg_stat_activity WHERE usename = 'alice'");
    expect(rows).toEqual([{ query: "SELECT usename, query, state FROM pg_stat_activity WHERE usename IN ('oxbow', 'alice') ORDER BY usename" }]);
    await alice.end();
  });

  it('SET ROLE to a role the user is a member of', async () => {
    await admin.query('GRANT bob TO alice');
    const alice = await connect('alice', 'alice secret');
    await alice.query('SET ROLE bob');
    expect((await alice.query('SELECT current_user, session_user')).rows).toEqual([{ current_user: 'bob', session_user: 'alice' }]);
    await alice.query('INSERT INTO bobs VALUES (1)');
    await alice.query('RESET ROLE');
    expect((await alice.query('SELECT current_user')).rows).toEqual([{ current_user: 'alice' }]);
    expect(await failure(alice, 'SET ROLE oxbow')).toEqual({ code: '42501', message: 'permission denied to set role "oxbow"' });
    await alice.end();
  });

  it('keeps SET ROLE through a rename and falls back to the session user when the role is dropped', async () => {
    await admin.query('CREATE ROLE temp_role');
    await admin.query('GRANT temp_role TO alice');
    const alice = await connect('alice', 'alice secret');
    await alice.query('SET ROLE temp_role');
    await admin.query('ALTER ROLE temp_role RENAME TO temp_renamed');
    expect((await alice.query('SELECT current_user')).rows).toEqual([{ current_user: 'temp_renamed' }]);
    await admin.query('DROP ROLE temp_renamed');
    expect((await alice.query('SELECT current_user')).rows).toEqual([{ current_user: 'alice' }]);
    await alice.query('RESET ROLE');
    expect(await failure(alice, 'SET ROLE nosuch')).toEqual({ code: '22023', message: 'role "nosuch" does not exist' });
    expect((await alice.query('SELECT current_user')).rows).toEqual([{ current_user: 'alice' }]);
    await alice.end();
  });

  it('refuses to drop a role that owns objects or holds privileges', async () => {
    expect(await failure(admin, 'DROP ROLE bob')).toMatchObject({ code: '2BP01', message: 'role "bob" cannot be dropped because some objects depend on it' });
    expect(await failure(admin, 'DROP ROLE oxbow')).toMatchObject({ code: '55006', message: 'current user cannot be dropped' });
  });
});

describe('durability', () => {
  it('keeps roles, passwords, owners and privileges across a restart', async () => {
    await admin.end();
    await oxbow.stop();
    oxbow = await startOxbow({ dataDir });
    admin = await connect('oxbow');
    const alice = await connect('alice', 'alice secret');
    expect((await alice.query('INSERT INTO t VALUES (4, $1)', ['four'])).rowCount).toBe(1);
    expect(await failure(alice, 'SELECT * FROM t')).toEqual({ code: '42501', message: 'permission denied for table t' });
    // alice inherits bob's rights (GRANT bob TO alice): bob's own table reads.
    expect((await alice.query('SELECT count(*)::int AS n FROM bobs')).rows).toEqual([{ n: 1 }]);
    await alice.end();
    const owners = await admin.query("SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
    expect(owners.rows).toEqual([{ tablename: 'bobs', tableowner: 'bob' }, { tablename: 't', tableowner: 'oxbow' }]);
    const members = await admin.query('SELECT r.rolname AS role, m.rolname AS member FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member');
    expect(members.rows).toEqual([{ role: 'bob', member: 'alice' }]);
  }, 120_000);
});
