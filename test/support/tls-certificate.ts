// A self-signed certificate for TLS tests, made by the openssl command line (an independent
// implementation from node:tls, which the server uses): `openssl req -x509 -newkey rsa:2048 -nodes
// -subj /CN=localhost` into a fresh temporary directory. The directory and files are readable by
// PostgreSQL's OS user too (key mode 0600, owned by it when `forPostgres` is set), so the same
// certificate can serve a PostgreSQL 15 oracle with ssl=on.

import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresUser } from './postgres.js';
import { startPostgres, type PostgresServer } from './postgres.js';

export interface TestCertificate {
  readonly dir: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** A second key, which does not match the certificate. */
  readonly otherKeyFile: string;
  /** Removes the directory. */
  remove(): void;
}

function openssl(args: readonly string[]): void {
  const run = spawnSync('openssl', args, { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (${run.status}): ${run.stderr}${run.error?.message ?? ''}`);
}

export function makeTestCertificate(options: { forPostgres?: boolean } = {}): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-tls-'));
  chmodSync(dir, 0o755);
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  const otherKeyFile = join(dir, 'other.key');
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '2', '-keyout', keyFile, '-out', certFile]);
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', otherKeyFile]);
  chmodSync(certFile, 0o644);
  chmodSync(keyFile, 0o600);
  if (options.forPostgres === true) {
    const { uid, gid } = postgresUser();
    chownSync(certFile, uid, gid);
    chownSync(keyFile, uid, gid);
  }
  return { dir, certFile, keyFile, otherKeyFile, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A PostgreSQL 15 serving `certificate` (made `forPostgres`) with ssl = on, the TLS suites' oracle:
 * role `app` may connect only with TLS (`hostssl`, as oxbow's --tls-required), `postgres` (the
 * helper's own client) either way; sslinfo installed.
 */
export async function startTlsPostgres(certificate: TestCertificate): Promise<PostgresServer> {
  const postgres = await startPostgres({
    settings: { ssl: 'on', ssl_cert_file: certificate.certFile, ssl_key_file: certificate.keyFile },
    hba: 'hostssl all app 127.0.0.1/32 trust\nhost all postgres 127.0.0.1/32 trust\nlocal all all trust\n',
  });
  await postgres.query('CREATE ROLE app LOGIN');
  await postgres.query('CREATE EXTENSION sslinfo');
  return postgres;
}
