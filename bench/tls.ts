// What TLS costs for small requests, against a real server process started with --tls-cert and
// --tls-key (a self-signed RSA 2048 certificate made by openssl): `SELECT 1` round trips per second
// over one node-postgres connection, plaintext against TLS, and connections per second (connect,
// startup, one SELECT 1, close), alternately A B A B in one run so that both modes see the same
// machine load. The 1-minute load average is printed before and after.
//
//   npm run build && npm run bench -- tls [--queries 5000] [--connections 100] [--rounds 4]

import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { makeTestCertificate } from '../test/support/tls-certificate.js';
import { BENCH_SCALE, flag, median, reporter } from './support/harness.js';
import { startServerProcess } from './support/server-process.js';

const report = reporter('tls');
const queries = Number(flag('--queries') ?? Math.max(200, Math.round(5000 * BENCH_SCALE)));
const connections = Number(flag('--connections') ?? Math.max(20, Math.round(100 * BENCH_SCALE)));
const rounds = Number(flag('--rounds') ?? 4);
const entry = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'oxbow.js');

type Mode = 'plain' | 'tls';
const MODES: readonly Mode[] = ['plain', 'tls'];

function clientConfig(port: number, mode: Mode): pg.ClientConfig {
  return { host: '127.0.0.1', port, user: 'oxbow', database: 'oxbow', ssl: mode === 'tls' ? { rejectUnauthorized: false } : false };
}

/** SELECT 1 round trips per second over one connection (simple protocol: one Query, one answer). */
async function roundTrips(client: pg.Client): Promise<number> {
  for (let i = 0; i < Math.min(200, queries); i++) await client.query('SELECT 1');
  const start = process.hrtime.bigint();
  for (let i = 0; i < queries; i++) await client.query('SELECT 1');
  return queries / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Connections per second: connect (with the TLS handshake), startup, one SELECT 1, close; one at a time. */
async function connectionsPerSecond(port: number, mode: Mode): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < connections; i++) {
    const client = new pg.Client(clientConfig(port, mode));
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
  }
  return connections / (Number(process.hrtime.bigint() - start) / 1e9);
}

const certificate = makeTestCertificate();
const server = await startServerProcess(entry, 'tls', ['--memory-limit', '256MB', '--tls-cert', certificate.certFile, '--tls-key', certificate.keyFile]);
try {
  report('load_average_1m_before', loadavg()[0]!, 'load');
  const clients = new Map<Mode, pg.Client>();
  for (const mode of MODES) {
    const client = new pg.Client(clientConfig(server.port, mode));
    await client.connect();
    const used = (await client.query('SELECT ssl_is_used() AS used')).rows[0].used as boolean;
    if (used !== (mode === 'tls')) throw new Error(`the ${mode} connection reports ssl_is_used() = ${used}`);
    clients.set(mode, client);
  }
  const perSecond = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]));
  const connectsPerSecond = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]));
  for (let round = 0; round < rounds; round++) {
    for (const mode of MODES) perSecond.get(mode)!.push(await roundTrips(clients.get(mode)!));
    for (const mode of MODES) connectsPerSecond.get(mode)!.push(await connectionsPerSecond(server.port, mode));
  }
  for (const client of clients.values()) await client.end();
  for (const mode of MODES) {
    const values = perSecond.get(mode)!;
    report(`select1_${mode}_per_s`, median(values), 'queries/s');
    report(`select1_${mode}_per_s_min`, Math.min(...values), 'queries/s');
    report(`select1_${mode}_per_s_max`, Math.max(...values), 'queries/s');
  }
  report('select1_tls_over_plain', median(perSecond.get('tls')!) / median(perSecond.get('plain')!), 'ratio');
  for (const mode of MODES) report(`connections_${mode}_per_s`, median(connectsPerSecond.get(mode)!), 'connections/s');
  report('connections_tls_over_plain', median(connectsPerSecond.get('tls')!) / median(connectsPerSecond.get('plain')!), 'ratio');
  report('rounds', rounds, 'rounds');
  report('load_average_1m_after', loadavg()[0]!, 'load');
} finally {
  await server.stop();
  certificate.remove();
}
