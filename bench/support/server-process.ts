// A real oxbow server process for the benchmarks that measure over the wire: the built CLI (`entry`,
// this checkout's or another's dist/bin/oxbow.js) on a free loopback port with a fresh data
// directory, its port read from the ready line (copy.ts, tls.ts and pgwire.ts); and a node given its
// data directory and environment, its URL and stderr kept (`startOxbowNode`: failover.ts, remote-shares.ts).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly dataDir: string;
  /** SIGTERM, wait for the exit, remove the data directory. */
  stop(): Promise<void>;
}

/**
 * `args` with `--parallelism 1` when neither they nor `env` give one: the server's default is the
 * cores (--cores), and each benchmark names the parallelism it measures, so its figures compare
 * with earlier runs' and other machines'.
 */
function withParallelism(args: readonly string[], env: Readonly<Record<string, string>> = {}): readonly string[] {
  if (args.some((arg) => arg === '--parallelism' || arg.startsWith('--parallelism=')) || env['OXBOW_PARALLELISM'] !== undefined) return args;
  return [...args, '--parallelism', '1'];
}

/** Starts `entry` with `args` after the port and data directory; the data directory is `oxbow-bench-<name>-*`. */
export async function startServerProcess(entry: string, name: string, args: readonly string[] = []): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), `oxbow-bench-${name}-`));
  const child = spawn(process.execPath, [entry, '--port', '0', '--data-dir', dataDir, ...withParallelism(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolvePort, reject) => {
    let output = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const ready = /oxbow ready: postgres:\/\/[^@]+@[^:]+:(\d+)/.exec(output);
      if (ready !== null) resolvePort(Number(ready[1]));
    });
    child.once('exit', (code) => reject(new Error(`oxbow exited (${code}) before it was ready: ${output}`)));
  });
  return {
    child,
    port,
    dataDir,
    async stop() {
      const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A server process the caller gave a data directory, environment and host: a cluster node of failover.ts or remote-shares.ts. */
export interface OxbowNode {
  readonly child: ChildProcess;
  /** The connection URL of its ready line. */
  readonly url: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** `signal` (SIGTERM by default), SIGKILL after `killAfterMs` if it has not exited, then wait for the exit. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<void>;
}

/** Starts `entry` on a free port of 127.0.0.1 over `dataDir` with `args` after them and `env` over this process's environment. */
export async function startOxbowNode(entry: string, dataDir: string, args: readonly string[], env: Record<string, string> = {}): Promise<OxbowNode> {
  const child = spawn(process.execPath, [entry, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...withParallelism(args, env)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    let output = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const ready = /oxbow ready: (postgres:\/\/\S+)/.exec(output);
      if (ready !== null) resolveUrl(ready[1]!);
    });
    child.once('exit', (code) => reject(new Error(`oxbow exited (${code}) before it was ready: ${stderr}`)));
  });
  return {
    child,
    url,
    stderr: () => stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
