// Starts a real oxbow server process for over-the-wire tests: `node dist/bin/oxbow.js --port 0
// --data-dir <fresh temp dir>` (dist/ exists because `npm test` builds first), waits for the ready
// line `oxbow ready: postgres://oxbow@HOST:PORT/oxbow` and returns where to connect.
//
// Usage (one server per test file is the cheap pattern):
//   let oxbow: OxbowServer;
//   beforeAll(async () => { oxbow = await startOxbow(); });
//   afterAll(async () => { await oxbow?.stop(); });
//   ... new pg.Client({ connectionString: oxbow.url }) ...
//
// Restart/crash tests pass `dataDir` to start a second process on the same state after `kill`;
// a directory the helper created itself is removed by stop(), one passed in is kept;
// `connectToKillable(server)` is their client, which a kill does not turn into an uncaught error.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = join(ROOT, 'dist', 'bin', 'oxbow.js');
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;
const READY_PATTERN = /^oxbow ready: (postgres:\/\/oxbow@(\[[^\]]+\]|[^:/]+):(\d+)\/oxbow)$/m;

export interface StartOxbowOptions {
  /** Reuse a data directory (restart and crash tests); it is not deleted by stop(). */
  readonly dataDir?: string;
  /** --password (SCRAM-SHA-256 for user oxbow). */
  readonly password?: string;
  /** Further command-line arguments, e.g. ['--barrier-interval-ms', '100']. */
  readonly args?: readonly string[];
  /** Extra environment variables (OXBOW_* twins, AWS_*...). */
  readonly env?: Readonly<Record<string, string>>;
  /** true: no `--parallelism 1` added when `args` and `env` give none (the CLI's default, the cores). */
  readonly defaultParallelism?: boolean;
}

export interface OxbowServer {
  readonly port: number;
  readonly host: string;
  /** The URL of the ready line: postgres://oxbow@HOST:PORT/oxbow */
  readonly url: string;
  readonly dataDir: string;
  readonly process: ChildProcess;
  /** Everything the process wrote to stderr so far (for failure messages). */
  stderr(): string;
  /** SIGTERM, wait for a clean exit (SIGKILL after 20 s), remove a data directory we created. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL for crash tests) and waits for the process to exit; keeps the data directory. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

export async function startOxbow(options: StartOxbowOptions = {}): Promise<OxbowServer> {
  const ownDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'oxbow-test-'));
  const args = [ENTRY, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir];
  if (options.password !== undefined) args.push('--password', options.password);
  if (options.args !== undefined) args.push(...options.args);
  // --parallelism defaults to the cores; each test names the parallelism it exercises, so a test
  // that gives none runs at 1, the same on a 2-core machine as on a 64-core one (and as cheap).
  const givesParallelism = (options.args ?? []).some((arg) => arg === '--parallelism' || arg.startsWith('--parallelism=')) || options.env?.['OXBOW_PARALLELISM'] !== undefined;
  if (!givesParallelism && options.defaultParallelism !== true) args.push('--parallelism', '1');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...withoutOxbowVariables(process.env), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));

  const match = await new Promise<RegExpExecArray>((resolveReady, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`oxbow did not print its ready line within ${READY_TIMEOUT_MS} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, READY_TIMEOUT_MS);
    child.stdout!.on('data', (text: string) => {
      stdout += text;
      const found = READY_PATTERN.exec(stdout);
      if (found !== null) {
        clearTimeout(timer);
        resolveReady(found);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`oxbow exited before it was ready (code ${code}, signal ${signal})\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    });
  }).catch((error: unknown) => {
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });

  const host = match[2]!.replace(/^\[|\]$/g, '');
  const waitForExit = async (signal: NodeJS.Signals, timeoutMs: number): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    port: Number(match[3]),
    host,
    url: match[1]!,
    dataDir,
    process: child,
    stderr: () => stderr,
    async stop() {
      await waitForExit('SIGTERM', STOP_TIMEOUT_MS);
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
    async kill(signal) {
      await waitForExit(signal, STOP_TIMEOUT_MS);
    },
  };
}

/** The test process's own OXBOW_* variables must not leak into the server under test. */
function withoutOxbowVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !name.startsWith('OXBOW_')) out[name] = value;
  }
  return out;
}

/** A connected `pg` client of `server` whose connection errors are ignored: the server may be killed under it. */
export async function connectToKillable(server: OxbowServer): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: server.url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}
