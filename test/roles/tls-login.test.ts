// A role's SCRAM-SHA-256 login inside TLS: oxbow with --tls-cert, --tls-key and --tls-required,
// psql (sslmode=require, PGPASSWORD) and node `pg` (ssl) log in as a role created by SQL with its
// password, and a wrong password is refused with 28P01 as over a plaintext connection.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { makeTestCertificate, type TestCertificate } from '../support/tls-certificate.js';

let certificate: TestCertificate;
let oxbow: OxbowServer;

function psql(password: string, sslmode: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync('psql', ['-X', '-A', '-t', '-d', `host=127.0.0.1 port=${oxbow.port} user=alice dbname=oxbow sslmode=${sslmode}`, '-c', 'select current_user, ssl_is_used()'], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: password },
  });
}

beforeAll(async () => {
  certificate = makeTestCertificate();
  oxbow = await startOxbow({ args: ['--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile, '--tls-required'] });
  const admin = new pg.Client({ host: '127.0.0.1', port: oxbow.port, user: 'oxbow', database: 'oxbow', ssl: { rejectUnauthorized: false } });
  await admin.connect();
  await admin.query("CREATE ROLE alice LOGIN PASSWORD 'tls and scram'");
  await admin.end();
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  certificate?.remove();
});

describe('SCRAM-SHA-256 inside TLS', () => {
  it('logs psql in with the role password and refuses a wrong one', () => {
    const right = psql('tls and scram', 'require');
    expect(right.stderr).toBe('');
    expect(right.stdout.trim()).toBe('alice|t');
    const wrong = psql('nope', 'require');
    expect(wrong.status).not.toBe(0);
    expect(wrong.stderr).toContain('password authentication failed for user "alice"');
    const plain = psql('tls and scram', 'disable');
    expect(plain.status).not.toBe(0);
  });

  it('logs node pg in over TLS', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: oxbow.port, user: 'alice', password: 'tls and scram', database: 'oxbow', ssl: { rejectUnauthorized: false } });
    await client.connect();
    expect((await client.query('SELECT current_user AS u')).rows).toEqual([{ u: 'alice' }]);
    await client.end();
    const wrong = new pg.Client({ host: '127.0.0.1', port: oxbow.port, user: 'alice', password: 'wrong', database: 'oxbow', ssl: { rejectUnauthorized: false } });
    await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });
  });
});
