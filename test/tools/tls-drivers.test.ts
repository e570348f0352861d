// psycopg 3 (libpq) and pgjdbc (Java's own TLS) over TLS against oxbow with --tls-required and
// against PostgreSQL 15 with ssl=on and a hostssl-only pg_hba.conf entry, both serving the same
// certificate made by the openssl command line: each driver's sslmode=require connection must
// read the same pg_stat_ssl row and sslinfo answers on both servers, and its sslmode=disable
// connection must be refused on both (SQLSTATE 28000 where the driver reports it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { makeTestCertificate, startTlsPostgres, type TestCertificate } from '../support/tls-certificate.js';
import { driverJar, runJavaLines } from './jdbc/metadata-run.js';
import { runPython } from './python.js';

let certificate: TestCertificate;
let oxbow: OxbowServer;
let postgres: PostgresServer;

beforeAll(async () => {
  certificate = makeTestCertificate({ forPostgres: true });
  [oxbow, postgres] = await Promise.all([
    startOxbow({ args: ['--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile, '--tls-required'] }),
    startTlsPostgres(certificate),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([oxbow?.stop(), postgres?.stop()]);
  certificate?.remove();
});

describe('psycopg 3', () => {
  it('sslmode=require reads what PostgreSQL shows; sslmode=disable is refused on both', async () => {
    const ours = await runPython('psycopg_tls.py', [`postgresql://oxbow@127.0.0.1:${oxbow.port}/oxbow`]);
    const theirs = await runPython('psycopg_tls.py', [`postgresql://app@127.0.0.1:${postgres.port}/postgres`]);
    expect(theirs.client_ssl_in_use).toBe(true);
    expect(theirs.plaintext).toBe('refused: FATAL');
    expect((theirs.pg_stat_ssl as string[])[0]).toBe('True');
    expect(ours).toEqual(theirs);
  }, 120_000);
});

interface JdbcLine {
  readonly call: string;
  readonly row?: unknown[];
  readonly sqlstate?: string | null;
}

function runJdbc(jar: string, url: string, user: string): Promise<JdbcLine[]> {
  return runJavaLines<JdbcLine>(jar, 'test/tools/jdbc/Tls.java', [url, user]);
}

describe('pgjdbc', () => {
  it('sslmode=require reads what PostgreSQL shows; sslmode=disable is refused with 28000 on both', async () => {
    const jar = driverJar();
    const [ours, theirs] = await Promise.all([
      runJdbc(jar, `jdbc:postgresql://127.0.0.1:${oxbow.port}/oxbow`, 'oxbow'),
      runJdbc(jar, `jdbc:postgresql://127.0.0.1:${postgres.port}/postgres`, 'app'),
    ]);
    expect(theirs.find((line) => line.call === 'pg_stat_ssl')?.row?.[0]).toBe('t');
    expect(theirs.find((line) => line.call === 'plaintext')).toEqual({ call: 'plaintext', sqlstate: '28000' });
    expect(ours).toEqual(theirs);
  }, 180_000);
});
