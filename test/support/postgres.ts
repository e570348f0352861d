// A real PostgreSQL 15 server for differential tests: the oracle that oxbow's answers are compared
// against. `startPostgres()` initdb's a fresh cluster into a temporary directory, starts `postgres`
// as the `postgres` OS user (we run as root, and PostgreSQL refuses to run as root) listening on
// 127.0.0.1 with a free port, TimeZone=UTC, trust authentication, and waits until it accepts
// connections. `halt(mode)` shuts it down keeping its data directory and port ('fast': SIGINT,
// open transactions rolled back; 'immediate': SIGQUIT, as a crash) and `resume()` starts it again
// there (a sink target that goes away and comes back); `restart()` is both, with a fast shutdown.
// `stop()` shuts it down and removes the directory.
//
// Query results come back as PostgreSQL's text output, untouched (no pg type parsing), because the
// differential tests compare text byte for byte. Errors are available either thrown (`query`) or
// as data (`tryQuery`: `{ code, message }`), so tests can compare SQLSTATEs.
//
// Usage in a test file (one server per file; initdb + start takes about 1-2 seconds):
//   let pg: PostgresServer;
//   beforeAll(async () => { pg = await startPostgres(); });
//   afterAll(async () => { await pg?.stop(); });
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';
import { listensOn } from './listens-on.js';

const BIN_DIR = '/usr/lib/postgresql/15/bin';
const START_TIMEOUT_MS = 60_000;

export interface QueryResult {
  /** Each row as PostgreSQL's text output of each column (null for SQL NULL). */
  readonly rows: (string | null)[][];
  /** Column names, in order. */
  readonly columns: string[];
  /** Column type OIDs, in order. */
  readonly columnTypeOids: number[];
  /** The command tag's row count (INSERT/UPDATE/DELETE/SELECT). */
  readonly rowCount: number | null;
}

export interface QueryFailure {
  /** SQLSTATE. */
  readonly code: string;
  readonly message: string;
  readonly position: number | undefined;
}

export type QueryOutcome = ({ ok: true } & QueryResult) | ({ ok: false } & QueryFailure);

export interface PostgresServer {
  readonly port: number;
  /** The postmaster's process id (its backends are its children). */
  readonly pid: number;
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  readonly url: string;
  /** Runs one statement (with optional $n parameters, sent as text) on a shared connection; throws pg's error on failure. */
  query(sql: string, params?: readonly unknown[]): Promise<QueryResult>;
  /** As query, but a failure is returned as data with its SQLSTATE. */
  tryQuery(sql: string, params?: readonly unknown[]): Promise<QueryOutcome>;
  /** A new connected client of its own (for tests that need session state); the caller ends it. */
  connect(): Promise<pg.Client>;
  /** Shuts the server down, keeping its data directory and port: 'fast' rolls back open transactions, 'immediate' is a crash. */
  halt(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts a halted server again on the same data directory and port (the shared connection is renewed). */
  resume(): Promise<void>;
  /** halt('fast') then resume(). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra server settings, as `-c name=value`. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Logical replication: wal_level = logical with room for replication slots and walsenders. */
  readonly logical?: boolean;
  /** pg_hba.conf lines (default: trust for everyone on 127.0.0.1 and the socket). */
  readonly hba?: string;
}

// Values come back as PostgreSQL printed them: every type parser is the identity.
const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/** The uid and gid of Debian's `postgres` OS user, which the server must run as. */
export function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('test/support/postgres: no "postgres" OS user (install Debian\'s postgresql)');
  const fields = line.split(':');
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function toResult(result: pg.QueryResult): QueryResult {
  return {
    rows: (result.rows as unknown as (string | null)[][]) ?? [],
    columns: (result.fields ?? []).map((field) => field.name),
    columnTypeOids: (result.fields ?? []).map((field) => field.dataTypeID),
    rowCount: result.rowCount,
  };
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A test process that dies without afterAll must not leave servers behind.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGQUIT');
  });
}

export async function startPostgres(options: StartOptions = {}): Promise<PostgresServer> {
  const { uid, gid } = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-pg-'));
  chownSync(dir, uid, gid);
  const dataDir = join(dir, 'data');
  const asPostgres = { uid, gid, env: { ...process.env, LC_ALL: 'C', LANG: 'C', HOME: dir } };

  const initdb = spawnSync(
    join(BIN_DIR, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C'],
    { ...asPostgres, encoding: 'utf8' },
  );
  if (initdb.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${initdb.status}): ${initdb.stderr}${initdb.stdout}`);
  }
  writeFileSync(join(dataDir, 'pg_hba.conf'), options.hba ?? 'host all all 127.0.0.1/32 trust\nlocal all all trust\n');
  chownSync(join(dataDir, 'pg_hba.conf'), uid, gid);

  installExitHook();
  let lastError = '';
  // The free port can be taken between probing and binding; retry with a new one.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const settings: Record<string, string> = {
      listen_addresses: '127.0.0.1',
      port: String(port),
      unix_socket_directories: dir,
      TimeZone: 'UTC',
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      max_connections: '20',
      shared_buffers: '16MB',
      log_min_messages: 'fatal',
      ...(options.logical === true ? { wal_level: 'logical', max_replication_slots: '10', max_wal_senders: '10' } : {}),
      ...options.settings,
    };
    const args = ['-D', dataDir];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const launched = await launch(args, asPostgres, port);
    if (launched.client === undefined) {
      lastError = launched.stderr();
      continue;
    }
    const { client, child } = launched;
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const relaunch = async (): Promise<{ client: pg.Client; child: ChildProcess }> => {
      const again = await launch(args, asPostgres, port);
      if (again.client === undefined) throw new Error(`postgres did not restart: ${again.stderr()}`);
      return { client: again.client, child: again.child };
    };
    return makeServer({ port, url, client, child, dir, relaunch });
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`postgres did not start: ${lastError}`);
}

/** A PostgreSQL 15 with a superuser `oxbow` owning a database `oxbow`, as oxbow has them: the same user and database reach both. */
export async function startPostgresAsOxbow(options: StartOptions = {}): Promise<PostgresServer> {
  const server = await startPostgres(options);
  await server.query('create role oxbow superuser login');
  await server.query('create database oxbow owner oxbow');
  return server;
}

/** Starts `postgres` with `args` and waits until it accepts connections on `port` (client undefined: it did not). */
async function launch(args: string[], asPostgres: { uid: number; gid: number; env: NodeJS.ProcessEnv }, port: number): Promise<{ client: pg.Client | undefined; child: ChildProcess; stderr: () => string }> {
  const child = spawn(join(BIN_DIR, 'postgres'), args, { ...asPostgres, stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 10_000) stderr += chunk.toString();
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
    running.delete(child);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  let client: pg.Client | undefined;
  while (!exited && Date.now() < deadline) {
    const candidate = new pg.Client({ connectionString: url, types: rawTypes });
    candidate.on('error', () => {});
    try {
      await candidate.connect();
      // Another file's PostgreSQL on a port taken in between answers too (trust, user postgres):
      // only this postmaster's counts; this one then exits on the bind and the caller tries another port.
      if (!listensOn(child.pid!, port)) throw new Error(`port ${port} is another process's`);
      client = candidate;
      break;
    } catch {
      await candidate.end().catch(() => {});
      await sleep(50);
    }
  }
  if (client === undefined) {
    if (!exited) child.kill('SIGQUIT');
    await new Promise<void>((resolve) => (exited ? resolve() : child.once('exit', () => resolve())));
  }
  return { client, child, stderr: () => stderr };
}

async function shutdown(child: ChildProcess, mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
  const timer = setTimeout(() => child.kill('SIGQUIT'), 10_000);
  await exited;
  clearTimeout(timer);
}

function makeServer(parts: { port: number; url: string; client: pg.Client; child: ChildProcess; dir: string; relaunch: () => Promise<{ client: pg.Client; child: ChildProcess }> }): PostgresServer {
  const { port, url, dir, relaunch } = parts;
  let { client, child } = parts;
  let stopped = false;
  let halted = false;
  const halt = async (mode: 'fast' | 'immediate'): Promise<void> => {
    if (halted) return;
    halted = true;
    await client.end().catch(() => {});
    await shutdown(child, mode);
  };
  const resume = async (): Promise<void> => {
    if (!halted) return;
    ({ client, child } = await relaunch());
    halted = false;
  };
  const query = async (sql: string, params?: readonly unknown[]): Promise<QueryResult> => {
    const result = await client.query({ text: sql, values: params as unknown[] | undefined, rowMode: 'array' });
    return toResult(Array.isArray(result) ? (result[result.length - 1] as pg.QueryResult) : result);
  };
  return {
    port,
    get pid() {
      return child.pid ?? 0;
    },
    url,
    query,
    async tryQuery(sql, params) {
      try {
        return { ok: true, ...(await query(sql, params)) };
      } catch (error) {
        const failure = error as { code?: string; message?: string; position?: string };
        if (typeof failure.code !== 'string') throw error;
        return {
          ok: false,
          code: failure.code,
          message: failure.message ?? '',
          position: failure.position === undefined ? undefined : Number(failure.position),
        };
      }
    },
    async connect() {
      const own = new pg.Client({ connectionString: url, types: rawTypes });
      await own.connect();
      return own;
    },
    halt,
    resume,
    async restart() {
      await halt('fast');
      await resume();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await client.end().catch(() => {});
      await shutdown(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
