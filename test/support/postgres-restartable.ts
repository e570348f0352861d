// A real PostgreSQL 15 that a test can stop and start again on the same port and data directory
// (a target that goes away and comes back): `startRestartablePostgres()` initdb's a fresh cluster
// as postgres.ts does (its OS user and port helpers); `halt(mode)` shuts it down ('fast': SIGINT, open transactions rolled back;
// 'immediate': SIGQUIT, as a crash), `resume()` starts it again and waits until it accepts
// connections; `stop()` shuts it down and removes the directory.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, postgresUser } from './postgres.js';

const BIN_DIR = '/usr/lib/postgresql/15/bin';

export interface RestartablePostgres {
  readonly port: number;
  readonly url: string;
  /** A new connected client (default type parsers); the caller ends it. */
  connect(): Promise<pg.Client>;
  halt(mode: 'fast' | 'immediate'): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const { uid, gid } = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-pg-restart-'));
  chownSync(dir, uid, gid);
  const dataDir = join(dir, 'data');
  const asPostgres = { uid, gid, env: { ...process.env, LC_ALL: 'C', LANG: 'C', HOME: dir } };
  const initdb = spawnSync(join(BIN_DIR, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C'], { ...asPostgres, encoding: 'utf8' });
  if (initdb.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${initdb.status}): ${initdb.stderr}${initdb.stdout}`);
  }
  writeFileSync(join(dataDir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\nlocal all all trust\n');
  chownSync(join(dataDir, 'pg_hba.conf'), uid, gid);
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const settings = { listen_addresses: '127.0.0.1', port: String(port), unix_socket_directories: dir, TimeZone: 'UTC', fsync: 'off', max_connections: '30', shared_buffers: '16MB', log_min_messages: 'fatal' };
  const args = ['-D', dataDir];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  let child: ChildProcess | undefined;
  const kill = () => child?.kill('SIGQUIT');
  process.on('exit', kill);

  const launch = async (): Promise<void> => {
    const started = spawn(join(BIN_DIR, 'postgres'), args, { ...asPostgres, stdio: ['ignore', 'ignore', 'ignore'] });
    child = started;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null) throw new Error('postgres exited while starting');
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    throw new Error('postgres did not start');
  };
  const halt = async (mode: 'fast' | 'immediate'): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    await exited;
    child = undefined;
  };
  await launch();
  return {
    port,
    url,
    async connect() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    },
    halt,
    resume: launch,
    async stop() {
      await halt('fast');
      process.off('exit', kill);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
