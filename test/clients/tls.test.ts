// TLS over the real oxbow process (--tls-cert, --tls-key, --tls-required) with real clients (the
// psql 15 binary and libpq, node-postgres), and a real PostgreSQL 15 with ssl=on serving the same
// certificate (made by the openssl command line) as the oracle: pg_stat_ssl's columns and types,
// the row a client's TLS connection gets (version, cipher, bits), the sslinfo functions, SHOW ssl,
// and the SQLSTATE of a plaintext connection where only TLS is allowed (PostgreSQL's `hostssl`).
// Also: a plaintext and a TLS connection side by side in pg_stat_ssl, CancelRequest for a TLS
// session under --tls-required (in the clear, as libpq 15 sends it, and inside TLS), garbage instead of a TLS
// ClientHello on the real process (it keeps serving), and certificate files that stop the start.
import { spawnSync } from 'node:child_process';
import { connect as connectTcp } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { makeTestCertificate, startTlsPostgres, type TestCertificate } from '../support/tls-certificate.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let certificate: TestCertificate;
let oxbow: OxbowServer;
let oxbowRequired: OxbowServer;
let postgres: PostgresServer;

beforeAll(async () => {
  certificate = makeTestCertificate({ forPostgres: true });
  const tlsArgs = ['--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile];
  [oxbow, oxbowRequired, postgres] = await Promise.all([
    startOxbow({ args: tlsArgs }),
    startOxbow({ args: [...tlsArgs, '--tls-required'] }),
    startTlsPostgres(certificate),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([oxbow?.stop(), oxbowRequired?.stop(), postgres?.stop()]);
  certificate?.remove();
});

/** psql 15 with a libpq connection string; stdout (unaligned, tuples only) or the failure's stderr. */
function psql(conninfo: string, sql: string): { ok: boolean; out: string } {
  const run = spawnSync('psql', ['-X', '-A', '-t', '-F', '|', conninfo, '-c', sql], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, PGCONNECT_TIMEOUT: '10' } });
  return run.status === 0 ? { ok: true, out: run.stdout.trim() } : { ok: false, out: `${run.stderr}${run.error?.message ?? ''}`.trim() };
}

function onOxbow(server: OxbowServer, sslmode: string): string {
  return `host=127.0.0.1 port=${server.port} user=oxbow dbname=oxbow sslmode=${sslmode}`;
}

function onPostgres(sslmode: string, user = 'postgres'): string {
  return `host=127.0.0.1 port=${postgres.port} user=${user} dbname=postgres sslmode=${sslmode}`;
}

const OWN_ROW = 'SELECT ssl, version, cipher, bits, client_dn, client_serial, issuer_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()';

describe('psql (libpq) over TLS, PostgreSQL 15 as the oracle', () => {
  it('sslmode=require: pg_stat_ssl shows the connection as PostgreSQL shows the same client over the same certificate', () => {
    const expected = psql(onPostgres('require'), OWN_ROW);
    expect(expected.ok, expected.out).toBe(true);
    expect(expected.out).toMatch(/^t\|TLSv1\.[23]\|\S+\|\d+\|\|\|$/);
    expect(psql(onOxbow(oxbow, 'require'), OWN_ROW)).toEqual(expected);
  });

  it('sslmode=disable: ssl is f and the rest NULL, as PostgreSQL', () => {
    const expected = psql(onPostgres('disable'), OWN_ROW);
    expect(expected).toEqual({ ok: true, out: 'f||||||' });
    expect(psql(onOxbow(oxbow, 'disable'), OWN_ROW)).toEqual(expected);
  });

  it('the sslinfo functions answer as PostgreSQL with sslinfo installed, over TLS and in the clear', () => {
    const sql = 'SELECT ssl_is_used(), ssl_version(), ssl_cipher()';
    for (const sslmode of ['require', 'disable']) {
      const expected = psql(onPostgres(sslmode), sql);
      expect(expected.ok, expected.out).toBe(true);
      expect(psql(onOxbow(oxbow, sslmode), sql), sslmode).toEqual(expected);
    }
  });

  it('SHOW ssl is on with a certificate, as PostgreSQL with ssl=on', () => {
    expect(psql(onPostgres('disable'), 'SHOW ssl')).toEqual({ ok: true, out: 'on' });
    expect(psql(onOxbow(oxbow, 'disable'), 'SHOW ssl')).toEqual({ ok: true, out: 'on' });
    expect(psql(onOxbow(oxbow, 'disable'), "SELECT setting FROM pg_settings WHERE name = 'ssl'")).toEqual({ ok: true, out: 'on' });
  });

  it('--tls-required: sslmode=disable is refused, sslmode=require and prefer are served', () => {
    const refused = psql(onOxbow(oxbowRequired, 'disable'), 'SELECT 1');
    expect(refused.ok).toBe(false);
    expect(refused.out).toContain('FATAL:  connection refused for host "127.0.0.1", user "oxbow", database "oxbow", no encryption: this server requires TLS');
    // PostgreSQL's hostssl-only entry refuses the same way (its text names pg_hba.conf).
    const pgRefused = psql(onPostgres('disable', 'app'), 'SELECT 1');
    expect(pgRefused.ok).toBe(false);
    expect(pgRefused.out).toContain('FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "app", database "postgres", no encryption');
    expect(psql(onOxbow(oxbowRequired, 'require'), 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).toEqual({ ok: true, out: 't' });
    expect(psql(onOxbow(oxbowRequired, 'prefer'), 'SELECT ssl_is_used()')).toEqual({ ok: true, out: 't' });
  });
});

describe('node-postgres over TLS', () => {
  async function client(server: { port: number }, database: string, user: string, ssl: boolean): Promise<pg.Client> {
    const connection = new pg.Client({ host: '127.0.0.1', port: server.port, user, database, ssl: ssl ? { rejectUnauthorized: false } : false });
    await connection.connect();
    return connection;
  }

  it('pg_stat_ssl lists a TLS and a plaintext connection side by side, each with its own state', async () => {
    const secure = await client(oxbow, 'oxbow', 'oxbow', true);
    const plain = await client(oxbow, 'oxbow', 'oxbow', false);
    try {
      const securePid = (await secure.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const plainPid = (await plain.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const rows = (await plain.query('SELECT pid, ssl, version, cipher FROM pg_stat_ssl WHERE pid = ANY($1) ORDER BY ssl', [[securePid, plainPid]])).rows;
      const socket = (secure as unknown as { connection: { stream: import('node:tls').TLSSocket } }).connection.stream;
      expect(rows).toEqual([
        { pid: plainPid, ssl: false, version: null, cipher: null },
        // The client's own view of its connection.
        { pid: securePid, ssl: true, version: socket.getProtocol(), cipher: socket.getCipher().name },
      ]);
      // pg_stat_activity and pg_stat_ssl name the same sessions.
      const joined = (await secure.query('SELECT a.pid, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.pid = ANY($1) ORDER BY s.ssl', [[securePid, plainPid]])).rows;
      expect(joined).toEqual([{ pid: plainPid, ssl: false }, { pid: securePid, ssl: true }]);
    } finally {
      await Promise.all([secure.end(), plain.end()]);
    }
  });

  it("pg_stat_ssl has PostgreSQL 15's columns, in its order and with its types", async () => {
    const mine = await client(oxbow, 'oxbow', 'oxbow', true);
    const theirs = await client(postgres, 'postgres', 'postgres', true);
    try {
      const shape = async (connection: pg.Client) => (await connection.query('SELECT * FROM pg_stat_ssl LIMIT 0')).fields.map((field) => [field.name, field.dataTypeID]);
      const expected = await shape(theirs);
      expect(expected.map(([name]) => name)).toEqual(['pid', 'ssl', 'version', 'cipher', 'bits', 'client_dn', 'client_serial', 'issuer_dn']);
      expect(await shape(mine)).toEqual(expected);
    } finally {
      await Promise.all([mine.end(), theirs.end()]);
    }
  });

  it('--tls-required refuses a plaintext client with the SQLSTATE PostgreSQL gives (28000)', async () => {
    const attempt = async (server: { port: number }, database: string, user: string): Promise<string | undefined> => {
      const connection = new pg.Client({ host: '127.0.0.1', port: server.port, user, database, ssl: false });
      connection.on('error', () => undefined);
      try {
        await connection.connect();
        await connection.end();
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(await attempt(postgres, 'postgres', 'app')).toBe('28000');
    expect(await attempt(oxbowRequired, 'oxbow', 'oxbow')).toBe('28000');
    const secure = await client(oxbowRequired, 'oxbow', 'oxbow', true);
    expect((await secure.query('SELECT ssl_is_used() AS used')).rows).toEqual([{ used: true }]);
    await secure.end();
  });
});

describe('CancelRequest with --tls-required', () => {
  /** Sends a CancelRequest for `target` on a new connection, in the clear (libpq 15) or inside TLS. */
  async function cancel(target: pg.Client, overTls: boolean): Promise<void> {
    const { processID, secretKey } = target as unknown as { processID: number; secretKey: number };
    const message = Buffer.alloc(16);
    message.writeInt32BE(16, 0);
    message.writeInt32BE(80877102, 4);
    message.writeInt32BE(processID, 8);
    message.writeInt32BE(secretKey, 12);
    const raw = await new Promise<import('node:net').Socket>((resolve, reject) => {
      const socket = connectTcp(oxbowRequired.port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });
    if (!overTls) {
      await new Promise<void>((resolve) => raw.end(message, () => raw.once('close', () => resolve())));
      return;
    }
    raw.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
    await new Promise<void>((resolve) => raw.once('data', () => resolve()));
    const secure = connectTls({ socket: raw, rejectUnauthorized: false }, () => secure.end(message));
    secure.on('error', () => undefined);
    await new Promise<void>((resolve) => secure.once('close', () => resolve()));
  }

  it('cancels a TLS session\'s statement, sent in the clear (as libpq 15 sends it) or inside TLS', async () => {
    for (const overTls of [false, true]) {
      const target = new pg.Client({ host: '127.0.0.1', port: oxbowRequired.port, user: 'oxbow', database: 'oxbow', ssl: { rejectUnauthorized: false } });
      await target.connect();
      try {
        const running = target.query('SELECT pg_sleep(30)').then(
          () => 'finished',
          (error: { code?: string }) => error.code,
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        await cancel(target, overTls);
        expect(await running, overTls ? 'inside TLS' : 'in the clear').toBe('57014');
        expect((await target.query('SELECT ssl_is_used() AS used')).rows).toEqual([{ used: true }]);
      } finally {
        await target.end();
      }
    }
  });
});

describe('the real process under bad TLS input', () => {
  it('garbage instead of a ClientHello closes that connection; the server keeps serving', async () => {
    for (const garbage of ['GET / HTTP/1.1\r\nHost: oxbow\r\n\r\n', '\x16\x03\x01\x00\x05hello', '\0'.repeat(4096)]) {
      const closed = await new Promise<string>((resolve, reject) => {
        const socket = connectTcp(oxbow.port, '127.0.0.1', () => socket.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])));
        let answer = '';
        socket.on('data', (chunk: Buffer) => {
          if (answer === '') {
            answer = chunk.toString('latin1');
            socket.write(garbage, 'latin1');
          }
        });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(answer));
        setTimeout(() => reject(new Error('the server kept a garbage connection open')), 10_000).unref();
      });
      expect(closed.startsWith('S')).toBe(true);
    }
    expect(psql(onOxbow(oxbow, 'require'), 'SELECT ssl_is_used()')).toEqual({ ok: true, out: 't' });
    expect(oxbow.process.exitCode).toBeNull();
    expect(oxbow.stderr()).not.toMatch(/uncaught|unhandled/);
  });
});

describe('certificate files at start', () => {
  function start(args: readonly string[]): { status: number | null; stderr: string } {
    const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-tls-start-'));
    try {
      const run = spawnSync(process.execPath, [join(ROOT, 'dist', 'bin', 'oxbow.js'), '--port', '0', '--data-dir', dataDir, ...args], { encoding: 'utf8', timeout: 30_000 });
      return { status: run.status, stderr: run.stderr };
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  it('a key that does not match, or a file that cannot be read, stops the start (exit 1) naming the file', () => {
    const mismatch = start(['--tls-cert', certificate.certFile, '--tls-key', certificate.otherKeyFile]);
    expect(mismatch.status).toBe(1);
    expect(mismatch.stderr).toBe(`oxbow: could not start: TLS private key file "${certificate.otherKeyFile}" does not match the certificate in "${certificate.certFile}"\n`);
    const missing = join(certificate.dir, 'absent.crt');
    const unreadable = start(['--tls-cert', missing, '--tls-key', certificate.keyFile]);
    expect(unreadable.status).toBe(1);
    expect(unreadable.stderr).toContain(`oxbow: could not start: could not read TLS certificate file "${missing}": ENOENT`);
    const swapped = start(['--tls-cert', certificate.keyFile, '--tls-key', certificate.certFile]);
    expect(swapped.status).toBe(1);
    expect(swapped.stderr).toContain(`TLS certificate file "${certificate.keyFile}" holds no PEM certificate`);
  });
});
