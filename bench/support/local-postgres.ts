// A throwaway local PostgreSQL 15 for benchmarks that write into one (bench/pg-sink.ts): initdb
// into a temporary directory, `postgres` as the postgres OS user (it refuses root) on 127.0.0.1
// and a free port, trust authentication, fsync on as shipped; stop() shuts it down and removes
// the directory. Needs Debian's postgresql-15 (as the tests do, test/support/postgres.ts).
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const BIN_DIR = process.env['OXBOW_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

export interface LocalPostgres {
  readonly port: number;
  connect(): Promise<pg.Client>;
  stop(): Promise<void>;
}

export async function startLocalPostgres(): Promise<LocalPostgres> {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('no "postgres" OS user: install postgresql-15');
  const [uid, gid] = [Number(line.split(':')[2]), Number(line.split(':')[3])];
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-bench-pg-'));
  chownSync(dir, uid, gid);
  const dataDir = join(dir, 'data');
  const asPostgres = { uid, gid, env: { ...process.env, LC_ALL: 'C', LANG: 'C', HOME: dir } };
  const initdb = spawnSync(join(BIN_DIR, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C'], { ...asPostgres, encoding: 'utf8' });
  if (initdb.status !== 0) throw new Error(`initdb failed: ${initdb.stderr}`);
  writeFileSync(join(dataDir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\nlocal all all trust\n');
  chownSync(join(dataDir, 'pg_hba.conf'), uid, gid);
  const port = await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
  const child = spawn(join(BIN_DIR, 'postgres'), ['-D', dataDir, '-c', 'listen_addresses=127.0.0.1', '-c', `port=${port}`, '-c', `unix_socket_directories=${dir}`, '-c', 'shared_buffers=128MB', '-c', 'log_min_messages=fatal'], { ...asPostgres, stdio: 'ignore' });
  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await client.connect();
    return client;
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await (await connect()).end();
      break;
    } catch (error) {
      if (attempt > 600 || child.exitCode !== null) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    port,
    connect,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
